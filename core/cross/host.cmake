# The Windows host parts of libsbx in the mingw-w64 cross build (included by
# plugins/windows/cross/CMakeLists.txt, which sets SBX_ROOT, the SDK, the windows backend and
# googletest up):
#   sbx_core_windows_host         static: Windows paths, the DACL trust model, the Win32 plugin
#                                 loader (GetNamedSecurityInfoW, LoadLibraryExW), UTF-16 host facts
#   sbx_core_windows              static: libsbx as a whole (core/cross/libsbx.cmake)
#   sbx_host_windows_tests.exe    their tests, run under wine64 by core/cross/run_host_tests.sh
# core/cross/README.md lists what is still missing.
add_library(sbx_core_windows_host STATIC
    "${SBX_ROOT}/core/src/policy/win_path.cpp"
    "${SBX_ROOT}/core/src/plugins/trusted_acl.cpp"
    "${SBX_ROOT}/core/src/plugins/win32_trust.cpp"
    "${SBX_ROOT}/core/src/platform/windows_host.cpp")
target_include_directories(sbx_core_windows_host PUBLIC
    "${SBX_ROOT}/core/include" "${SBX_ROOT}/core/src")
target_link_libraries(sbx_core_windows_host PUBLIC sbx_sdk advapi32 PRIVATE sbx_warnings)

# libsbx as a whole, static: sbx_core_windows (core/cross/libsbx.cmake).
include("${SBX_ROOT}/core/cross/libsbx.cmake")

set(_sbx_host_tests "${SBX_ROOT}/tests/unit")
add_executable(sbx_host_windows_tests
    "${_sbx_host_tests}/policy/win_path_test.cpp"
    "${_sbx_host_tests}/runtime/trusted_acl_test.cpp"
    "${_sbx_host_tests}/windows_host/win32_trust_test.cpp"
    "${_sbx_host_tests}/windows_host/libsbx_windows_test.cpp")
target_link_libraries(sbx_host_windows_tests PRIVATE
    sbx_core_windows gtest gtest_main sbx_warnings)
target_link_options(sbx_host_windows_tests PRIVATE -static -static-libgcc -static-libstdc++)
# One translation unit: each test file's own compile is mostly gtest's and libsbx's headers.
set_target_properties(sbx_host_windows_tests PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
add_dependencies(sbx_host_windows_tests sbx-backend-windows)
target_compile_definitions(sbx_host_windows_tests PRIVATE
    SBX_WINDOWS_MODULE_DLL="$<TARGET_FILE:sbx-backend-windows>")
include("${SBX_ROOT}/core/cross/cli.cmake")
include("${SBX_ROOT}/core/cross/capi.cmake")
