# Included by sbx_add_test_area() for sbx_unit_runtime (${target} is set): the test captures
# the host log through spdlog and checks trust with libsbx's private trusted_fs header
# (sbx_core_private).
target_link_libraries(${target} PRIVATE spdlog::spdlog sbx_core_private)
