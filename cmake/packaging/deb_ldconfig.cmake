# CPACK_POST_BUILD_SCRIPTS (cmake/SbxPackaging.cmake): CPack (3.25) adds postinst and postrm
# scripts calling ldconfig to any .deb with a shared library under /usr/lib, and has no switch
# to leave them out. Debian policy 8.1.1 wants the ldconfig trigger instead, which the library
# package carries already (its control file `triggers`), so the scripts are taken out again:
# the package is unpacked with dpkg-deb -R and rebuilt, owner root:root, without them.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
foreach(deb IN LISTS CPACK_PACKAGE_FILES)
  get_filename_component(name "${deb}" NAME)
  if(NOT name MATCHES "^${CPACK_DEBIAN_LIBRARY_PACKAGE_NAME}_")
    continue()
  endif()
  set(tree "${CPACK_TOPLEVEL_DIRECTORY}/sbx-deb-rebuild/${name}")
  file(REMOVE_RECURSE "${tree}")
  file(MAKE_DIRECTORY "${tree}")
  execute_process(COMMAND dpkg-deb -R "${deb}" "${tree}" COMMAND_ERROR_IS_FATAL ANY)
  foreach(script postinst postrm)
    if(EXISTS "${tree}/DEBIAN/${script}")
      file(STRINGS "${tree}/DEBIAN/${script}" lines REGEX "[^ \t]")
      list(FILTER lines EXCLUDE REGEX "^#|^set -e$|ldconfig|^fi$|^if |^then$")
      if(lines)
        message(FATAL_ERROR
                "deb_ldconfig.cmake: ${script} of ${name} does more than ldconfig: ${lines}")
      endif()
      file(REMOVE "${tree}/DEBIAN/${script}")
    endif()
  endforeach()
  execute_process(COMMAND dpkg-deb --root-owner-group -b "${tree}" "${deb}"
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE "${tree}")
endforeach()
