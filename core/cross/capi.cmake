# The C API as sbx.dll in the mingw-w64 cross build (included by core/cross/host.cmake, after
# core/cross/cli.cmake): core/src/capi/capi.cpp over sbx_core_windows, a self-contained DLL (the
# C and C++ runtimes linked in, as the windows backend's DLL) exporting the functions of
# sbx/sbx.h (SBX_BUILDING_LIBSBX: dllexport here, dllimport for its users), with its import
# library. Installed beside sbx.exe (<prefix>\bin), it finds the install from its own file,
# not from the program that loaded it (plugins/runtime_win32.cpp).
add_library(sbx_capi_windows SHARED "${SBX_ROOT}/core/src/capi/capi.cpp")
set_target_properties(sbx_capi_windows PROPERTIES
    OUTPUT_NAME sbx PREFIX "" RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin"
    ARCHIVE_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/lib")
target_compile_definitions(sbx_capi_windows PRIVATE SBX_BUILDING_LIBSBX NOMINMAX)
target_include_directories(sbx_capi_windows PRIVATE "${SBX_ROOT}/core/src"
                           "${SBX_WINDOWS_CONFIG_DIR}")
target_link_libraries(sbx_capi_windows PRIVATE sbx_core_windows sbx_warnings)
target_link_options(sbx_capi_windows PRIVATE -static -static-libgcc -static-libstdc++)

# A C program that uses the DLL through its import library, run under Wine by
# core/cross/run_cli_tests.sh from a directory of its own (so the install can only be found
# from the DLL's location).
add_executable(sbx_capi_smoke "${SBX_ROOT}/tests/integration/windows/capi_smoke.c")
set_target_properties(sbx_capi_smoke PROPERTIES OUTPUT_NAME capi_smoke
                      RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/testbin")
target_include_directories(sbx_capi_smoke PRIVATE "${SBX_ROOT}/core/include")
target_link_libraries(sbx_capi_smoke PRIVATE sbx_capi_windows)
target_link_options(sbx_capi_smoke PRIVATE -static)
