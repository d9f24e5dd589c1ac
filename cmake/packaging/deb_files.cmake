# CPACK_PRE_BUILD_SCRIPTS (cmake/SbxPackaging.cmake): Debian's files, added to each .deb's staged
# tree after CPack installed it and before it is packed. A plain `cmake --install` gets none of
# them (its man pages stay uncompressed, which the CLI's own tests read).
#   man pages    gzip -9n (Debian policy 12.1; -n: no name or time stamp, reproducible)
#   copyright    usr/share/doc/<package>/copyright, machine-readable (policy 12.5), Apache-2.0 as
#                LICENSE at the top of the tree; LICENSE itself is dropped (common-licenses has it)
#   changelog    usr/share/doc/<package>/changelog.gz, Debian's format (a native version)
#   overrides    usr/share/lintian/overrides/<package>, each with its reason (packaging/deb)
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
string(TIMESTAMP _date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # honours SOURCE_DATE_EPOCH
set(SBX_DEB_DATE "${_date}")
set(SBX_DEB_SOURCE "${CPACK_DEBIAN_PACKAGE_SOURCE}")
set(_work "${CPACK_TOPLEVEL_DIRECTORY}/sbx-deb-files")
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER "${component}" _upper)
  set(package "${CPACK_DEBIAN_${_upper}_PACKAGE_NAME}")
  set(usr "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/${component}${CPACK_PACKAGING_INSTALL_PREFIX}")
  if(NOT IS_DIRECTORY "${usr}")
    message(FATAL_ERROR "deb_files.cmake: no staged tree for ${component} at ${usr}")
  endif()
  file(GLOB_RECURSE pages "${usr}/share/man/man*/*")
  foreach(page IN LISTS pages)
    if(NOT page MATCHES "\\.gz$")
      execute_process(COMMAND gzip -9nf "${page}" COMMAND_ERROR_IS_FATAL ANY)
    endif()
  endforeach()
  file(REMOVE_RECURSE "${usr}/share/doc/${CPACK_PACKAGE_NAME}")
  set(doc "${usr}/share/doc/${package}")
  file(COPY "${CPACK_SBX_DEB_FILES_DIR}/copyright" DESTINATION "${doc}"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  configure_file("${CPACK_SBX_DEB_FILES_DIR}/changelog.in" "${_work}/${package}/changelog" @ONLY)
  execute_process(COMMAND gzip -9nf "${_work}/${package}/changelog" COMMAND_ERROR_IS_FATAL ANY)
  file(COPY "${_work}/${package}/changelog.gz" DESTINATION "${doc}"
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  if(EXISTS "${CPACK_SBX_DEB_FILES_DIR}/${package}.lintian-overrides")
    configure_file("${CPACK_SBX_DEB_FILES_DIR}/${package}.lintian-overrides"
                   "${usr}/share/lintian/overrides/${package}" COPYONLY)
    file(CHMOD "${usr}/share/lintian/overrides/${package}"
         PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  endif()
endforeach()
