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
