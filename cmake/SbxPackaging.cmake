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

# --- CPack: a .deb per component, and one .tar.gz of everything ---------------------------------
# Debian's binary packages, one per component (Debian policy 8 for the library's):
#   library  libsbx<soname version>  libsbx.so.MAJOR.MINOR (its SONAME; 0.x: a minor bump may
#            change the ABI, so the name carries both, as policy 8.1 derives it)
#   devel    libsbx-dev   the libsbx.so link, the C and C++ headers, sbx.pc, find_package(sbx)
#   sdk      sbx-sdk      the plugin SDK (headers, find_package(sbx-sdk)); libsbx-dev needs it
#   runtime  sbx          the sbx command, the backend plugins, sbx-stage2, man pages, completions
# A distribution build configures with -DCMAKE_INSTALL_PREFIX=/usr: GNUInstallDirs then picks
# the multiarch libdir (lib/<triplet>), which libsbx, sbx.pc and the CMake packages use.
set(SBX_DEB_MAINTAINER "sbx maintainers <maintainers@users.noreply.a-seed-015a7dae.example>"
    CACHE STRING "The .deb packages' Maintainer field")
set(_sbx_soversion "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
set(SBX_DEB_LIBRARY_PACKAGE "libsbx${_sbx_soversion}")
set(CPACK_PACKAGE_NAME "sbx")
set(CPACK_PACKAGE_VENDOR "sbx")
set(CPACK_PACKAGE_CONTACT "${SBX_DEB_MAINTAINER}")
# Each package's description below starts with its own synopsis. CPack (3.25) would put the
# summary before it unless the summary is CPack's own default, so it is set to that default.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CPACK_PACKAGE_NAME} built using CMake")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_SOURCE_GENERATOR "")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL library devel sdk runtime)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SOURCE "sbx")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SBX_DEB_MAINTAINER}")
# dpkg-shlibdeps declares the shared libraries each package links (libc, libstdc++, Boost.JSON,
# spdlog, fmt...). Landlock and seccomp need no package: the kernel provides them (libseccomp
# is linked statically).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(_sbx_exact "(= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_LIBRARY_PACKAGE_NAME "${SBX_DEB_LIBRARY_PACKAGE}")
set(CPACK_DEBIAN_LIBRARY_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_LIBRARY_DESCRIPTION "${PROJECT_DESCRIPTION} - library
libsbx runs untrusted commands under a policy the kernel enforces
(bubblewrap, Landlock, seccomp), for programs that embed sbx through its
C API. The backend plugins it loads are in the sbx package.")
# libsbx finds its plugins and sbx-stage2 in the sbx package, which it needs to run anything.
set(CPACK_DEBIAN_LIBRARY_PACKAGE_RECOMMENDS "sbx ${_sbx_exact}")
# The shlibs entry and an ldconfig trigger (not a maintainer script calling ldconfig: Debian
# policy 8.1.1), written here rather than by CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS, which adds
# postinst/postrm scripts instead.
set(_sbx_deb_control "${PROJECT_BINARY_DIR}/packaging/deb/library")
file(WRITE "${_sbx_deb_control}/shlibs"
     "libsbx ${_sbx_soversion} ${SBX_DEB_LIBRARY_PACKAGE} (>= ${PROJECT_VERSION})\n")
file(WRITE "${_sbx_deb_control}/triggers" "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIBRARY_PACKAGE_CONTROL_EXTRA
    "${_sbx_deb_control}/shlibs;${_sbx_deb_control}/triggers")
set(CPACK_DEBIAN_DEVEL_PACKAGE_NAME "libsbx-dev")
set(CPACK_DEBIAN_DEVEL_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_DEVEL_PACKAGE_DEPENDS
    "${SBX_DEB_LIBRARY_PACKAGE} ${_sbx_exact}, sbx-sdk ${_sbx_exact}")
set(CPACK_DEBIAN_DEVEL_DESCRIPTION "${PROJECT_DESCRIPTION} - development files
The headers of libsbx (its C API, sbx/sbx.h, and its C++ API), the
pkg-config file sbx.pc and the CMake package sbx (find_package(sbx)).")
set(CPACK_DEBIAN_SDK_PACKAGE_NAME "sbx-sdk")
set(CPACK_DEBIAN_SDK_PACKAGE_SECTION "libdevel")
set(CPACK_DEBIAN_SDK_DESCRIPTION "${PROJECT_DESCRIPTION} - plugin SDK
The headers and the CMake package sbx-sdk (find_package(sbx-sdk)) for
writing an sbx backend plugin.")
# The plugin ABI (sdk/include/sbx/sdk/abi.h) as virtual packages, so that a vendor's plugin
# package can depend on an sbx that loads it (sdk/README.md, "Versions"): an sbx of ABI
# MAJOR.MINOR loads plugins built for MAJOR.0 to MAJOR.MINOR, so it provides
# sbx-plugin-abi-MAJOR at version MAJOR.MINOR (Depends: sbx-plugin-abi-2 (>= 2.1)) and, for
# tools without versioned Provides, sbx-plugin-abi-MAJOR.N for every N up to MINOR. Both
# packages that load plugins provide them: sbx (the command and the plugin directory) and libsbx
# (an embedding program).
file(STRINGS "${PROJECT_SOURCE_DIR}/sdk/include/sbx/sdk/abi.h" _sbx_abi_lines
     REGEX "^#define SBX_ABI_(MAJOR|MINOR) [0-9]+$")
foreach(line IN LISTS _sbx_abi_lines)
  string(REGEX REPLACE "^#define SBX_ABI_(MAJOR|MINOR) ([0-9]+)$" "\\1;\\2" pair "${line}")
  list(GET pair 0 part)
  list(GET pair 1 "_sbx_abi_${part}")
endforeach()
if(NOT DEFINED _sbx_abi_MAJOR OR NOT DEFINED _sbx_abi_MINOR)
  message(FATAL_ERROR "SBX_ABI_MAJOR and SBX_ABI_MINOR not found in sdk/include/sbx/sdk/abi.h")
endif()
set(SBX_DEB_PLUGIN_ABI_PROVIDES
    "sbx-plugin-abi-${_sbx_abi_MAJOR} (= ${_sbx_abi_MAJOR}.${_sbx_abi_MINOR})")
foreach(minor RANGE ${_sbx_abi_MINOR})
  string(APPEND SBX_DEB_PLUGIN_ABI_PROVIDES ", sbx-plugin-abi-${_sbx_abi_MAJOR}.${minor}")
endforeach()
set(CPACK_DEBIAN_LIBRARY_PACKAGE_PROVIDES "${SBX_DEB_PLUGIN_ABI_PROVIDES}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_PROVIDES "${SBX_DEB_PLUGIN_ABI_PROVIDES}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "sbx")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION "admin")
# bubblewrap is run, not linked, so it is named here.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "bubblewrap")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "${PROJECT_DESCRIPTION} - command and plugins
sbx runs untrusted commands under a policy the kernel enforces
(bubblewrap, Landlock, seccomp): the sbx command, its backend plugins,
the sbx-stage2 helper, man pages and shell completions.")
# Debian's files, added to the staged packages only (packaging/deb_files.cmake): compressed man
# pages, each package's copyright and changelog, lintian overrides.
# (Only CPACK_* variables reach the script.)
set(CPACK_SBX_DEB_FILES_DIR "${CMAKE_CURRENT_LIST_DIR}/packaging/deb")
set(CPACK_PRE_BUILD_SCRIPTS "${CMAKE_CURRENT_LIST_DIR}/packaging/deb_files.cmake")
set(CPACK_POST_BUILD_SCRIPTS "${CMAKE_CURRENT_LIST_DIR}/packaging/deb_ldconfig.cmake")
# Every directory 0755: the plugin loader refuses a plugin directory anyone but root can write
# (the archive's owner is root:root, CPack writes it so without fakeroot).
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS ${CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS})
# .tar.gz: the same tree under sbx-<version>-<system>/ (relocatable: libsbx finds its plugins
# relative to itself, sbx.pc its prefix relative to itself).
set(CPACK_PACKAGE_FILE_NAME "${CPACK_PACKAGE_NAME}-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")
include(CPack)
