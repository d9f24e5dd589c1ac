# libsbx as a static library for Windows, in the mingw-w64 cross build (included by
# core/cross/host.cmake, after sbx_core_windows_host):
#   sbx_core_windows   static: the sources of core/CMakeLists.txt that are portable, plus the
#                      Windows counterparts of the POSIX-only ones (*_win32.cpp)
# Left out, each for a reason (core/cross/README.md):
#   plugins/loader.cpp, trusted_fs.cpp, loaded_image.cpp, elf_dynamic.cpp  the POSIX loader
#       (descriptors, uids, modes, ELF images and their RUNPATH): plugins/loader_win32.cpp
#       loads through win32_trust instead
#   (probe_isolation.cpp and call_isolation.cpp are compiled: on Windows a probe, a transform
#   and an exec run in process, guarded against exceptions only; isolated_child.cpp, their
#   POSIX child, is not)
#   plugins/runtime.cpp      dladdr, /proc/self/exe, uids: plugins/runtime_win32.cpp
#   run/spawn.cpp            fork/execve: run/spawn_win32.cpp (PATHEXT lookup; no unsandboxed
#                            runner yet, so it refuses)
#   proxy/server.cpp, session.cpp, rules.cpp, http.cpp   Boost.Asio and a unix socket:
#                            proxy/server_win32.cpp refuses network mode proxy with the reason
#   resolution/protected.cpp  POSIX reads (.git files, lstat): Windows resolution lists its
#                            protected paths itself (lexically) and never calls it
#   capi/capi.cpp            built on its own as sbx.dll (core/cross/capi.cmake)
# Dependencies, all header-only from Debian's /usr/include: Boost (Boost.JSON compiled in one
# translation unit, boost/json/src.hpp), spdlog and fmt. Only their own directories are put on
# the include path (a directory of links in the build tree): glibc's headers in /usr/include
# must never reach a mingw compile.
set(_sbx_deps_include "${CMAKE_BINARY_DIR}/deps-include")
file(MAKE_DIRECTORY "${_sbx_deps_include}")
foreach(dep boost spdlog fmt CLI)
  if(NOT EXISTS "/usr/include/${dep}")
    message(FATAL_ERROR "/usr/include/${dep} is missing: install the Debian packages of "
                        "cmake/scripts/bootstrap-debian.sh")
  endif()
  file(CREATE_LINK "/usr/include/${dep}" "${_sbx_deps_include}/${dep}" SYMBOLIC)
endforeach()
add_library(sbx_windows_deps INTERFACE)
target_include_directories(sbx_windows_deps SYSTEM INTERFACE "${_sbx_deps_include}")
# spdlog and fmt without their libraries (Debian's spdlog is configured for an external fmt).
target_compile_definitions(sbx_windows_deps INTERFACE
    SPDLOG_HEADER_ONLY FMT_HEADER_ONLY SPDLOG_FMT_EXTERNAL BOOST_JSON_NO_LIB
    BOOST_CONTAINER_NO_LIB BOOST_ALL_NO_LIB)

set(_sbx_core "${SBX_ROOT}/core/src")
# Compiled in unity groups (CI time, measured: bench/README.md is not involved, the figures are
# in the commit messages): every translation unit that includes spdlog header-only compiles
# spdlog's and fmt's implementation again (about 10 s of CPU each at -O1), so those share one
# group; the rest form groups of related code. Names in anonymous namespaces must therefore be
# unique within a group, as in the CLI's unity batches.
set(_sbx_windows_logging_sources
    "${_sbx_core}/logging.cpp" "${_sbx_core}/plugins/host_table.cpp"
    "${_sbx_core}/plugins/loader_win32.cpp" "${_sbx_core}/proxy/request.cpp"
    "${_sbx_core}/run/state_guard.cpp")
set(_sbx_windows_policy_sources
    "${_sbx_core}/policy/json_strict.cpp" "${_sbx_core}/policy/json.cpp"
    "${_sbx_core}/policy/validate.cpp" "${_sbx_core}/policy/network.cpp"
    "${_sbx_core}/policy/limits.cpp" "${_sbx_core}/policy/environment.cpp"
    "${_sbx_core}/policy/presets.cpp" "${_sbx_core}/policy/serialize.cpp"
    "${_sbx_core}/policy/permissions.cpp" "${_sbx_core}/policy/path_util.cpp"
    "${_sbx_core}/settings/parse.cpp" "${_sbx_core}/settings/load.cpp"
    "${_sbx_core}/settings/merge.cpp" "${_sbx_core}/settings/show.cpp"
    "${_sbx_core}/settings/command_patterns.cpp" "${_sbx_core}/settings/program_grammar.cpp"
    "${_sbx_core}/settings/program_trust.cpp")
set(_sbx_windows_run_sources
    "${_sbx_core}/resolution/resolve.cpp" "${_sbx_core}/request/prepare.cpp"
    "${_sbx_core}/caches/caches.cpp"
    "${_sbx_core}/caches/config_files.cpp"
    "${_sbx_core}/plugins/registry.cpp"
    "${_sbx_core}/plugins/plugin_checks.cpp" "${_sbx_core}/plugins/probe_isolation.cpp"
    "${_sbx_core}/plugins/probe_store.cpp" "${_sbx_core}/plugins/probe_caller.cpp"
    "${_sbx_core}/plugins/call_isolation.cpp"
    "${_sbx_core}/plugins/runtime_win32.cpp"
    "${_sbx_core}/run/manager.cpp" "${_sbx_core}/run/limits.cpp"
    "${_sbx_core}/run/environment.cpp" "${_sbx_core}/run/created_names.cpp"
    "${_sbx_core}/run/created_names_events.cpp"
    "${_sbx_core}/run/run.cpp" "${_sbx_core}/run/limits_os.cpp"
    "${_sbx_core}/run/program_lookup.cpp" "${_sbx_core}/run/run_io.cpp"
    "${_sbx_core}/run/git_config.cpp" "${_sbx_core}/run/standard_fds.cpp"
    "${_sbx_core}/run/spawn_win32.cpp" "${_sbx_core}/proxy/server_win32.cpp")
set(_sbx_windows_report_sources
    "${_sbx_core}/report/json_render.cpp" "${_sbx_core}/report/text_escape.cpp"
    "${_sbx_core}/report/report_json.cpp" "${_sbx_core}/report/proxy_refusals.cpp"
    "${_sbx_core}/report/context.cpp" "${_sbx_core}/report/denial.cpp")
foreach(group logging policy run)
  set_source_files_properties(${_sbx_windows_${group}_sources} PROPERTIES UNITY_GROUP ${group})
endforeach()
set_source_files_properties(${_sbx_windows_report_sources} PROPERTIES UNITY_GROUP run)
add_library(sbx_core_windows STATIC
    ${_sbx_windows_logging_sources} ${_sbx_windows_policy_sources}
    ${_sbx_windows_run_sources} ${_sbx_windows_report_sources}
    # Boost.JSON's implementation, compiled once, alone
    "${SBX_ROOT}/core/cross/boost_json.cpp")
set_target_properties(sbx_core_windows PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
# windows.h's min/max macros would break std::min/std::max in the files grouped with it.
target_compile_definitions(sbx_core_windows PRIVATE NOMINMAX)
set(SBX_WINDOWS_CONFIG_DIR "${CMAKE_BINARY_DIR}/generated")
file(STRINGS "${SBX_ROOT}/CMakeLists.txt" _sbx_project_line REGEX "^project\\(sbx VERSION")
string(REGEX MATCH "VERSION ([0-9.]+)" _sbx_version_match "${_sbx_project_line}")
set(PROJECT_VERSION "${CMAKE_MATCH_1}")
set(CMAKE_INSTALL_LIBEXECDIR libexec)
set(CMAKE_INSTALL_BINDIR bin)
set(CMAKE_INSTALL_LIBDIR lib)
set(SBX_LIBDIR_DEPTH 1)
set(SBX_BINDIR_DEPTH 1)
configure_file("${SBX_ROOT}/core/src/config.hpp.in" "${SBX_WINDOWS_CONFIG_DIR}/sbx_config.hpp"
               @ONLY)
target_include_directories(sbx_core_windows
    PUBLIC "${SBX_ROOT}/core/include"
    PRIVATE "${_sbx_core}" "${SBX_WINDOWS_CONFIG_DIR}")
target_link_libraries(sbx_core_windows
    PUBLIC sbx_sdk sbx_core_windows_host sbx_windows_deps advapi32
    PRIVATE sbx_warnings)
