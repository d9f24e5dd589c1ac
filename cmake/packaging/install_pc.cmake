# Runs at install time (install(CODE) in cmake/SbxPackaging.cmake, which sets the SBX_PC_*
# variables): writes <libdir>/pkgconfig/sbx.pc for CMAKE_INSTALL_PREFIX, the prefix being
# installed to (`cmake --install --prefix`, CPack's /usr for the .deb; DESTDIR is not part of it).
#   /usr, /usr/local  absolute paths: pkg-config drops -I/usr/include and -L/usr/lib[/<multiarch>]
#                     (its system directories, `pkg-config --variable pc_system_libdirs
#                     pkg-config`) only when written so, never as /usr/lib/pkgconfig/../../lib.
#   any other prefix  relative to ${pcfiledir}, so a moved tree (the tarball) still works.
# Libs carries -Wl,-rpath,${libdir} for every prefix but /usr: the dynamic linker searches
# /usr/lib[/<multiarch>] by itself, /usr/local/lib only through ld.so.cache (which
# `cmake --install` does not refresh) and /opt/... never, and a program built as the README
# says, `cc agent.c $(pkg-config --cflags --libs sbx)`, must run as built (ld.so(8)).
foreach(var SBX_PC_TEMPLATE SBX_PC_WORK SBX_PC_UP SBX_PC_LIBDIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_pc.cmake: ${var} is not set")
  endif()
endforeach()
string(REGEX REPLACE "(.)/+$" "\\1" _sbx_pc_install_prefix "${CMAKE_INSTALL_PREFIX}")
if(_sbx_pc_install_prefix STREQUAL "/usr" OR _sbx_pc_install_prefix STREQUAL "/usr/local")
  set(SBX_PC_PREFIX "${_sbx_pc_install_prefix}")
else()
  set(SBX_PC_PREFIX "\${pcfiledir}/${SBX_PC_UP}")
endif()
if(_sbx_pc_install_prefix STREQUAL "/usr")
  set(SBX_PC_RPATH "")
else()
  set(SBX_PC_RPATH " -Wl,-rpath,\${libdir}")
endif()
# One file per destination: installs to several prefixes from one build tree may run at once.
string(MD5 _sbx_pc_key "$ENV{DESTDIR}|${_sbx_pc_install_prefix}")
set(_sbx_pc_file "${SBX_PC_WORK}/${_sbx_pc_key}/sbx.pc")
configure_file("${SBX_PC_TEMPLATE}" "${_sbx_pc_file}" @ONLY)
file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${SBX_PC_LIBDIR}/pkgconfig" TYPE FILE
     FILES "${_sbx_pc_file}")
