# The pure protocol helpers (core/src/proxy/http.hpp) are private to libsbx; their table tests
# include the private header through sbx_core_private.
target_link_libraries(${target} PRIVATE sbx_core_private)
