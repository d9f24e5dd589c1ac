# sdk.example_build: the vendor's configure + build of sdk/examples/firejail, out of tree,
# finding the SDK only through CMAKE_PREFIX_PATH=PREFIX (find_package(sbx-sdk 0.1)).
cmake_minimum_required(VERSION 3.25)
foreach(var SOURCE BUILD PREFIX LIBDIR GENERATOR CXX)
  if(NOT ${var})
    message(FATAL_ERROR "build_example.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${BUILD}")
# Same compiler as sbx (the toolchain fingerprint must match), warnings as errors.
execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${BUILD}" -G "${GENERATOR}"
            "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DCMAKE_CXX_COMPILER=${CXX}"
            "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" -DFIREJAIL_WERROR=ON
            "-DFIREJAIL_VERIFY_SBX=${VERIFY_SBX}" "-DFIREJAIL_VERIFY_PLUGIN_DIR=${VERIFY_PLUGIN_DIR}"
            # Only the prefix we just installed may provide sbx-sdk.
            -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the example against ${PREFIX} failed (${rc}):\n${out}")
endif()
file(READ "${BUILD}/CMakeCache.txt" cache)
string(REGEX MATCH "sbx-sdk_DIR:PATH=([^\n]*)" _ "${cache}")
if(NOT CMAKE_MATCH_1 STREQUAL "${PREFIX}/${LIBDIR}/cmake/sbx-sdk")
  message(FATAL_ERROR "sbx-sdk was found at '${CMAKE_MATCH_1}', not in ${PREFIX}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" -j 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the example failed (${rc}):\n${out}")
endif()
message(STATUS "example built out of tree in ${BUILD} against ${PREFIX}")
