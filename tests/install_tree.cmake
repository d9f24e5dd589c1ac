# Installs the build into PREFIX afresh (cmake -P script; used by the install_tree test).
if(NOT PREFIX OR NOT BUILD)
  message(FATAL_ERROR "usage: cmake -DPREFIX=... -DBUILD=... -P install_tree.cmake")
endif()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install into ${PREFIX} failed (${rc})")
endif()
message(STATUS "installed into ${PREFIX}")
