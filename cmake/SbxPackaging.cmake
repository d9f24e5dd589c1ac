# Packages for embedders and users: the pkg-config file sbx.pc, the CMake package `sbx`
# (find_package(sbx) -> sbx::sbx) and CPack's .deb and .tar.gz (`cpack` in a build tree).
# Included from the top-level CMakeLists.txt after every install() rule is declared.

# --- pkg-config: <libdir>/pkgconfig/sbx.pc, written at install time -----------------------------
# Its form depends on the prefix installed to, known only then (`cmake --install --prefix`,
# CPack): packaging/install_pc.cmake chooses absolute or relocatable paths and the rpath.
string(REGEX MATCHALL "[^/]+" _sbx_pc_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
list(TRANSFORM _sbx_pc_parts REPLACE ".+" "..")
list(JOIN _sbx_pc_parts "/" _sbx_pc_up)
install(CODE "
  set(SBX_PC_TEMPLATE [[${CMAKE_CURRENT_LIST_DIR}/packaging/sbx.pc.in]])
  set(SBX_PC_WORK [[${PROJECT_BINARY_DIR}/packaging/pc]])
  set(SBX_PC_UP [[${_sbx_pc_up}]])
  set(SBX_PC_LIBDIR [[${CMAKE_INSTALL_LIBDIR}]])
  set(SBX_PC_INCLUDEDIR [[${CMAKE_INSTALL_INCLUDEDIR}]])
  set(SBX_PC_DESCRIPTION [[${PROJECT_DESCRIPTION}]])
  set(SBX_PC_VERSION [[${PROJECT_VERSION}]])
  include([[${CMAKE_CURRENT_LIST_DIR}/packaging/install_pc.cmake]])"
  COMPONENT devel)

# --- CMake package: <libdir>/cmake/sbx, next to sbx-sdk (whose sbx::sdk it depends on) -------
set(_sbx_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/sbx")
install(EXPORT sbx-targets NAMESPACE sbx:: DESTINATION "${_sbx_cmake_dir}" COMPONENT devel)
configure_package_config_file("${CMAKE_CURRENT_LIST_DIR}/packaging/sbx-config.cmake.in"
    "${PROJECT_BINARY_DIR}/packaging/sbx-config.cmake" INSTALL_DESTINATION "${_sbx_cmake_dir}"
    PATH_VARS CMAKE_INSTALL_LIBDIR)
# 0.x: a minor bump may change the ABI (libsbx's SONAME is MAJOR.MINOR).
write_basic_package_version_file("${PROJECT_BINARY_DIR}/packaging/sbx-config-version.cmake"
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/packaging/sbx-config.cmake"
              "${PROJECT_BINARY_DIR}/packaging/sbx-config-version.cmake"
        DESTINATION "${_sbx_cmake_dir}" COMPONENT devel)

# --- Licence: Apache-2.0 (LICENSE at the top of the tree), installed with the documentation ----
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION "${CMAKE_INSTALL_DOCDIR}"
        COMPONENT runtime)

# --- CPack: one package with every component (runtime, devel, sdk) -----------------------------
set(CPACK_PACKAGE_NAME "sbx")
set(CPACK_PACKAGE_VENDOR "sbx")
set(CPACK_PACKAGE_CONTACT "sbx maintainers <sbx@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "sbx runs untrusted commands under a policy enforced by the kernel (bubblewrap, Landlock, seccomp).\n It ships the sbx command, libsbx with its C API, the backend plugins and the SDK.")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_SOURCE_GENERATOR "")
set(CPACK_STRIP_FILES ON)
# .deb: FHS places under /usr (bin, lib, lib/sbx/backends, libexec/sbx, include, lib/pkgconfig,
# lib/cmake). dpkg-shlibdeps declares the shared libraries (libc, libstdc++, Boost.JSON,
# spdlog, fmt...); bubblewrap is run, not linked, so it is named here. Landlock and seccomp
# need no package: the kernel provides them (libseccomp is linked statically).
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "bubblewrap")
# A shlibs file for libsbx and ldconfig on install, so /usr/lib/libsbx.so.* enters the cache.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Every directory 0755: the plugin loader refuses a plugin directory anyone but root can write
# (the archive's owner is root:root, CPack writes it so without fakeroot).
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS ${CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS})
# .tar.gz: the same tree under sbx-<version>-<system>/ (relocatable: libsbx finds its plugins
# relative to itself, sbx.pc its prefix relative to itself).
set(CPACK_PACKAGE_FILE_NAME "${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")
include(CPack)
