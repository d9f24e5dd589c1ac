# sbx_add_verify_test(): a CTest test that runs sbx's conformance kit against a backend,
# `sbx backends --verify <backend>` (sdk/CAPABILITIES.md): every capability the backend's probe
# declares is attacked through real `sbx exec` runs forced onto it, and the test fails when one
# of them does not hold (the output names the attack, what was expected and what happened).
#
#   find_package(sbx-sdk)   # includes this file
#   enable_testing()
#   sbx_add_verify_test(<backend>
#       [NAME <test name>]        default: sbx.verify.<backend>
#       [SBX <path to sbx>]       default: SBX_EXECUTABLE, else `sbx` found on PATH
#       [PLUGIN_DIR <dir>...]     passed as --plugin-dir (a directory sbx trusts: root's, not
#                                 group- or world-writable; a build tree under /tmp is not)
#       [JSON]                    print the JSON report instead of the text
#       [SKIP_UNAVAILABLE])       report the test Skipped, not Failed, where the backend's probe
#                                 says it is not available (a CI host without its tool)
#
# The kit runs the sbx it is given: verify the plugin as that sbx loads it, usually after
# `cmake --install` into sbx's prefix (SBX_PLUGIN_INSTALL_DIR). The test runs in a few seconds
# and needs no network; it creates and removes a scratch directory under $TMPDIR or /tmp.
include_guard(GLOBAL)

function(sbx_add_verify_test backend)
  cmake_parse_arguments(PARSE_ARGV 1 arg "JSON;SKIP_UNAVAILABLE" "NAME;SBX" "PLUGIN_DIR")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sbx_add_verify_test: unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_NAME)
    set(arg_NAME "sbx.verify.${backend}")
  endif()
  if(NOT arg_SBX)
    if(NOT SBX_EXECUTABLE)
      find_program(SBX_EXECUTABLE sbx DOC "the sbx executable whose conformance kit runs")
    endif()
    if(NOT SBX_EXECUTABLE)
      message(FATAL_ERROR "sbx_add_verify_test(${backend}): sbx not found; pass SBX <path> or "
                          "set SBX_EXECUTABLE")
    endif()
    set(arg_SBX "${SBX_EXECUTABLE}")
  endif()
  set(command "${arg_SBX}")
  foreach(dir IN LISTS arg_PLUGIN_DIR)
    list(APPEND command --plugin-dir "${dir}")
  endforeach()
  list(APPEND command backends --verify "${backend}")
  if(arg_JSON)
    list(APPEND command --json)
  endif()
  add_test(NAME "${arg_NAME}" COMMAND ${command})
  set_tests_properties("${arg_NAME}" PROPERTIES TIMEOUT 300 LABELS "sbx-verify")
  if(arg_SKIP_UNAVAILABLE)
    # The kit's first line (text) or "available": false (JSON) says so.
    set_tests_properties("${arg_NAME}" PROPERTIES
        SKIP_REGULAR_EXPRESSION "^${backend} [^ ]+  NOT AVAILABLE;\"available\": false")
  endif()
endfunction()
