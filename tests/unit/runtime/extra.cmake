# Included by sbx_add_test_area() for sbx_unit_runtime (${target} is set): the test captures
# the host log through spdlog and checks trust with libsbx's private trusted_fs header.
target_link_libraries(${target} PRIVATE spdlog::spdlog)
target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}/core/src")
