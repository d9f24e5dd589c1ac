# sdk.verify_module: the SDK's CTest module (sdk/cmake/SbxVerify.cmake) in a vendor's project:
# find_package(sbx-sdk) from the installed SDK, sbx_add_verify_test() for sbx's own Linux
# backends and for seatbelt (never available on Linux) with SKIP_UNAVAILABLE, then ctest: the
# available ones pass the installed sbx's kit, seatbelt is reported Skipped, not Failed.
cmake_minimum_required(VERSION 3.25)
foreach(var SBX PREFIX WORK GENERATOR)
  if(NOT ${var})
    message(FATAL_ERROR "check_verify_module.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/src")
file(WRITE "${WORK}/src/CMakeLists.txt" [=[
cmake_minimum_required(VERSION 3.25)
project(verify_module_check LANGUAGES CXX)  # CXX: the SDK package lies in lib/<arch>
find_package(sbx-sdk CONFIG REQUIRED)
enable_testing()
foreach(backend bwrap landlock seatbelt)
  sbx_add_verify_test(${backend} SBX "${SBX}" SKIP_UNAVAILABLE)
endforeach()
sbx_add_verify_test(bwrap NAME json.bwrap SBX "${SBX}" JSON SKIP_UNAVAILABLE)
]=])
execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${WORK}/src" -B "${WORK}/build" -G "${GENERATOR}"
            "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DSBX=${SBX}"
            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring a project using sbx_add_verify_test failed (${rc}):\n${out}")
endif()
execute_process(COMMAND "${CMAKE_CTEST_COMMAND}" --test-dir "${WORK}/build" --output-on-failure
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ctest of sbx_add_verify_test's tests failed (${rc})")
endif()
if(NOT out MATCHES "sbx\\.verify\\.seatbelt [.]*[*]+Skipped")
  message(FATAL_ERROR "seatbelt, not available on Linux, was not reported Skipped")
endif()
if(NOT out MATCHES "sbx\\.verify\\.(bwrap|landlock) [.]* +Passed")
  message("SKIPPED: neither bwrap nor landlock is available here, nothing was verified")
endif()
