# sbx_add_backend_plugin(<name> SOURCES <src>... [LINK_LIBRARIES <lib>...] [ABI_MINOR <n>])
#
# Builds sbx-backend-<name> as a MODULE the sbx loader accepts: hidden visibility, a version
# script that exports only sbx_plugin_entry_v2, and -z defs/now/relro/noexecstack so a missing
# symbol fails at link time rather than at load time. ABI_MINOR builds it for an older minor of
# the SDK's ABI (SBX_PLUGIN_ABI_MINOR_TARGET, sbx/sdk/backend.hpp), so that an sbx of that minor
# loads it too; by default it is built for the SDK's own minor.
function(sbx_add_backend_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "ABI_MINOR" "SOURCES;LINK_LIBRARIES")
  if(NOT name MATCHES "^[a-z0-9-]+$")
    message(FATAL_ERROR "sbx_add_backend_plugin: name '${name}' must match [a-z0-9-]+")
  endif()
  if(DEFINED arg_ABI_MINOR AND NOT arg_ABI_MINOR MATCHES "^[0-9]+$")
    message(FATAL_ERROR "sbx_add_backend_plugin: ABI_MINOR '${arg_ABI_MINOR}' is not a number")
  endif()
  set(target "sbx-backend-${name}")
  add_library(${target} MODULE ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE sbx::sdk ${arg_LINK_LIBRARIES})
  if(DEFINED arg_ABI_MINOR)
    # Checked against the SDK's own minor by backend.hpp (#error beyond it).
    target_compile_definitions(${target} PRIVATE SBX_PLUGIN_ABI_MINOR_TARGET=${arg_ABI_MINOR})
  endif()
  set_target_properties(${target} PROPERTIES
      PREFIX ""
      OUTPUT_NAME "sbx-backend-${name}"
      CXX_VISIBILITY_PRESET hidden
      C_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
  if(APPLE)
    target_link_options(${target} PRIVATE
        "LINKER:-exported_symbols_list,${CMAKE_CURRENT_FUNCTION_LIST_DIR}/sbx-plugin.exports")
  elseif(NOT WIN32)
    target_link_options(${target} PRIVATE
        "LINKER:--version-script=${CMAKE_CURRENT_FUNCTION_LIST_DIR}/sbx-plugin.map"
        LINKER:-z,defs LINKER:-z,now LINKER:-z,relro LINKER:-z,noexecstack)
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS
        "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/sbx-plugin.map")
  endif()
endfunction()

# sbx_install_backend_plugin(<name> [COMPONENT <component>])
#
# Installs sbx-backend-<name> into <prefix>/${SBX_PLUGIN_INSTALL_DIR} with mode 0644 (the sbx
# loader refuses a plugin file others can write), and says at install time whether an sbx is
# installed in that prefix to load it. sbx loads plugins from its own <prefix>/<plugin dir> and
# from the directories named with --plugin-dir or in the settings' "backends": {"plugin_dirs"};
# a plugin installed anywhere else is never loaded, and without this message nothing would say
# so (sdk/REFERENCE.md, "Installing").
function(sbx_install_backend_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "COMPONENT" "")
  if(NOT DEFINED SBX_PLUGIN_INSTALL_DIR)
    message(FATAL_ERROR "sbx_install_backend_plugin: SBX_PLUGIN_INSTALL_DIR is not set; "
                        "call find_package(sbx-sdk) first")
  endif()
  set(component "")
  if(arg_COMPONENT)
    set(component COMPONENT "${arg_COMPONENT}")
  endif()
  install(TARGETS "sbx-backend-${name}"
          LIBRARY DESTINATION "${SBX_PLUGIN_INSTALL_DIR}"
          RUNTIME DESTINATION "${SBX_PLUGIN_INSTALL_DIR}"
          PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
          ${component})
  # sbx's own backends are in every sbx's plugin directory (bwrap and landlock on Linux,
  # seatbelt on macOS, windows on Windows): one of them there means an sbx is installed there.
  set(suffix "${CMAKE_SHARED_MODULE_SUFFIX}")
  install(CODE "
    set(_sbx_dir \"\${CMAKE_INSTALL_PREFIX}/${SBX_PLUGIN_INSTALL_DIR}\")
    set(_sbx_here FALSE)
    foreach(_sbx_own bwrap landlock seatbelt windows)
      if(EXISTS \"\$ENV{DESTDIR}\${_sbx_dir}/sbx-backend-\${_sbx_own}${suffix}\")
        set(_sbx_here TRUE)
      endif()
    endforeach()
    if(NOT \"\$ENV{DESTDIR}\" STREQUAL \"\" OR CMAKE_INSTALL_PREFIX MATCHES \"/_CPack_Packages/\")
      # Staged for a package (DESTDIR, cpack): the package's own prefix decides.
    elseif(_sbx_here)
      message(STATUS \"sbx-backend-${name}: installed in the plugin directory of the sbx in \"
                     \"\${CMAKE_INSTALL_PREFIX}; it loads it from there\")
    else()
      message(NOTICE \"sbx-backend-${name}: installed in \${_sbx_dir}, where no sbx is installed: \"
                     \"sbx never looks there by itself. Name the directory with \"
                     \"`sbx --plugin-dir \${_sbx_dir}` or in the settings' \"
                     \"\\\"backends\\\": {\\\"plugin_dirs\\\": [\\\"\${_sbx_dir}\\\"]}, or install \"
                     \"with --prefix <the prefix sbx is installed in>\")
    endif()"
    ${component})
endfunction()
