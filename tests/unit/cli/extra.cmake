# The CLI's "did you mean" (core/cli/suggest.cpp) against CLI11 apps built here: the source is
# compiled in, as it is a part of the sbx executable, not of libsbx.
target_sources(${target} PRIVATE "${PROJECT_SOURCE_DIR}/core/cli/suggest.cpp")
target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/core/cli")
target_link_libraries(${target} PRIVATE CLI11::CLI11)
