# Included by sbx_add_test_area() for sbx_integration_loader (${target} is set).
# The fixture plugins (tests/fixtures/CMakeLists.txt) and a scratch area under the build tree:
# never /tmp, whose sticky world-writable mode the trust walk rejects.
target_compile_definitions(${target} PRIVATE
    SBX_LOADER_FIXTURE_DIR="${SBX_LOADER_FIXTURE_DIR}"
    SBX_FIXTURE_WORLD_WRITABLE_LIBDIR="${SBX_FIXTURE_WORLD_WRITABLE_LIBDIR}"
    SBX_LOADER_TEST_TMP="${CMAKE_BINARY_DIR}/loader-test-tmp")
# White-box tests of the fd-based trust walk and of the check-then-load window use the private
# headers of libsbx (sbx_core_private).
target_link_libraries(${target} PRIVATE sbx_core_private)
add_dependencies(${target} sbx_loader_fixtures)
# The whole loader suite again with /proc hidden (an empty tmpfs over it in a private mount
# namespace), where the loader must load by path: every fixture must still be refused at its
# own stage with its own reason, and the good plugin must load. Needs root (unshare -m, mount);
# the script exits 77 (skipped, with the reason printed) where it cannot hide /proc. Not under
# sanitizers: their runtimes read /proc/self/maps and abort without it.
if(NOT SBX_SANITIZE)
  add_test(NAME sbx_integration_loader_without_procfs
           COMMAND sh "${CMAKE_CURRENT_LIST_DIR}/without_procfs.sh" $<TARGET_FILE:${target}>)
  set_tests_properties(sbx_integration_loader_without_procfs PROPERTIES
                       SKIP_RETURN_CODE 77 LABELS integration)
endif()
