# sdk.install: cmake --install BUILD --component sdk into a fresh PREFIX; the prefix must then
# hold the headers, the CMake package, the reference and the template (share/sbx/sdk), and
# nothing else (no sbx, no libsbx).
cmake_minimum_required(VERSION 3.25)
# LIBDIR: the build's CMAKE_INSTALL_LIBDIR ("lib" or "lib/<multiarch triplet>").
foreach(var BUILD PREFIX LIBDIR)
  if(NOT ${var})
    message(FATAL_ERROR "usage: cmake -DBUILD=<sbx build> -DPREFIX=<dir> -DLIBDIR=<libdir> "
                        "-P install_sdk.cmake")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${PREFIX}" --component sdk
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install --component sdk failed (${rc}):\n${out}")
endif()
set(expected
    include/sbx/sdk/abi.h include/sbx/sdk/backend.hpp include/sbx/sdk/plugin.hpp
    include/sbx/sdk/result.hpp include/sbx/sdk/types.hpp
    ${LIBDIR}/cmake/sbx-sdk/sbx-sdk-config.cmake
    ${LIBDIR}/cmake/sbx-sdk/sbx-sdk-config-version.cmake
    ${LIBDIR}/cmake/sbx-sdk/sbx-sdk-targets.cmake ${LIBDIR}/cmake/sbx-sdk/SbxPlugin.cmake
    ${LIBDIR}/cmake/sbx-sdk/SbxVerify.cmake
    ${LIBDIR}/cmake/sbx-sdk/sbx-plugin.map
    share/sbx/sdk/REFERENCE.md share/sbx/sdk/README.md share/sbx/sdk/template/CMakeLists.txt)
foreach(file IN LISTS expected)
  if(NOT EXISTS "${PREFIX}/${file}")
    message(FATAL_ERROR "the sdk component did not install ${file}; installed:\n${out}")
  endif()
endforeach()
file(GLOB_RECURSE installed RELATIVE "${PREFIX}" "${PREFIX}/*")
foreach(file IN LISTS installed)
  string(FIND "${file}" "${LIBDIR}/cmake/sbx-sdk/" in_package)
  if(NOT file MATCHES "^(include/sbx/sdk|share/sbx/sdk)/" AND NOT in_package EQUAL 0)
    message(FATAL_ERROR "the sdk component installed '${file}', which is not part of the SDK")
  endif()
endforeach()
list(LENGTH installed count)
message(STATUS "SDK installed into ${PREFIX} (${count} files: headers, CMake package, reference, template)")
