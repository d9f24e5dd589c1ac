# sdk.example_verify: the firejail example registers `sbx backends --verify firejail` with the
# SDK's sbx_add_verify_test (sdk/cmake/SbxVerify.cmake). Run in the example's build tree once the
# plugin is installed, it must be there and run the installed sbx's kit, which must verify every
# capability the example declares except KNOWN_FAILED, and fail exactly those (the example's
# README, "The conformance kit", says why each fails); skipped where firejail cannot run (the
# kit's first line says NOT AVAILABLE).
cmake_minimum_required(VERSION 3.25)
foreach(var BUILD KNOWN_FAILED)
  if(NOT ${var})
    message(FATAL_ERROR "check_verify.cmake: -D${var}=... is required")
  endif()
endforeach()
execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${BUILD}" -L sbx-verify -V
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT out MATCHES "sbx\\.verify\\.firejail")
  message(FATAL_ERROR "the example registered no sbx.verify.firejail test")
endif()
if(out MATCHES "firejail [^ ]+  NOT AVAILABLE - ([^\n]*)")
  message("SKIPPED: firejail cannot run on this host: ${CMAKE_MATCH_1}")
  return()
endif()
if(NOT out MATCHES "verified: [0-9]+ of [0-9]+ declared capabilities held")
  message(FATAL_ERROR "the kit wrote no verdict (ctest exit ${rc})")
endif()
string(REGEX MATCHALL "  FAILED +[a-z_]+" failed_lines "${out}")
set(failed "")
foreach(line IN LISTS failed_lines)
  string(REGEX REPLACE "^  FAILED +" "" capability "${line}")
  list(APPEND failed "${capability}")
endforeach()
list(SORT failed)
list(SORT KNOWN_FAILED)
if(NOT failed STREQUAL KNOWN_FAILED)
  message(FATAL_ERROR "the kit failed [${failed}], expected exactly [${KNOWN_FAILED}]: update "
                      "sdk/examples/firejail/README.md (\"The conformance kit\") and "
                      "tests/sdk/CMakeLists.txt with what changed")
endif()
if(failed AND rc EQUAL 0)
  message(FATAL_ERROR "the verify test passed although the kit failed [${failed}]")
endif()
message(STATUS "the kit verified the rest and failed exactly [${failed}], as documented")
