# Included by sbx_add_test_area() for sbx_integration_loader (${target} is set).
# The fixture plugins (tests/fixtures/CMakeLists.txt) and a scratch area under the build tree:
# never /tmp, whose sticky world-writable mode the trust walk rejects.
target_compile_definitions(${target} PRIVATE
    SBX_LOADER_FIXTURE_DIR="${SBX_LOADER_FIXTURE_DIR}"
    SBX_LOADER_TEST_TMP="${CMAKE_BINARY_DIR}/loader-test-tmp")
# White-box tests of the fd-based trust walk and of the check-then-load window use the private
# headers of libsbx (sbx_core_private).
target_link_libraries(${target} PRIVATE sbx_core_private)
add_dependencies(${target} sbx_loader_fixtures)
