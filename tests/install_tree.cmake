# Installs the build into PREFIX afresh (cmake -P script; used by the install_tree test).
# Into PREFIX.new first, then renamed into place: tests that use the tree (some discovered at
# test time, which ctest may start before this fixture) never see a half-installed prefix, only
# the old tree or the new one (two rename(2)s apart).
if(NOT PREFIX OR NOT BUILD)
  message(FATAL_ERROR "usage: cmake -DPREFIX=... -DBUILD=... -P install_tree.cmake")
endif()
file(REMOVE_RECURSE "${PREFIX}.new" "${PREFIX}.old")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${PREFIX}.new"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install into ${PREFIX}.new failed (${rc})")
endif()
if(EXISTS "${PREFIX}")
  file(RENAME "${PREFIX}" "${PREFIX}.old")
endif()
file(RENAME "${PREFIX}.new" "${PREFIX}")
file(REMOVE_RECURSE "${PREFIX}.old")
message(STATUS "installed into ${PREFIX}")
