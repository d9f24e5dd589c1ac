# The pure protocol helpers (core/src/proxy/http.hpp) are private to libsbx; their table tests
# include the private header directly.
target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/core/src")
