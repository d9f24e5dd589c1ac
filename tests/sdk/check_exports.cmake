# sdk.example_exports: the plugin's dynamic symbol table defines exactly sbx_plugin_entry_v2
# (hidden visibility + the SDK's version script); everything else stays inside the plugin.
cmake_minimum_required(VERSION 3.25)
if(NOT MODULE OR NOT EXISTS "${MODULE}")
  message(FATAL_ERROR "check_exports.cmake: -DMODULE=<built plugin> (got '${MODULE}')")
endif()
find_program(NM nm REQUIRED)
execute_process(COMMAND "${NM}" -D --defined-only "${MODULE}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -D --defined-only ${MODULE} failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(symbols)
foreach(line IN LISTS lines)
  # "<address> <type> <name>[@@version]"
  if(line MATCHES "^[0-9a-fA-F]+ +[A-Za-z] +([^ @]+)")
    list(APPEND symbols "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(NOT symbols STREQUAL "sbx_plugin_entry_v2")
  message(FATAL_ERROR "${MODULE} must export only sbx_plugin_entry_v2; nm -D shows:\n${out}")
endif()
message(STATUS "only sbx_plugin_entry_v2 is exported:\n${out}")
