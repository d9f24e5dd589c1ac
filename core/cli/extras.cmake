# The CLI's extras (included by core/cli/CMakeLists.txt; README "Policy schema", "Man pages and
# completions", "policy import"):
#  - the JSON Schemas of a policy and of the reports (core/schema/*.schema.json), embedded in
#    `sbx schema NAME` (`sbx policy schema`: the policy's) and installed to share/sbx/;
#  - `sbx policy import` (Codex config.toml through toml11, sandbox-runtime JSON);
#  - man pages and bash/zsh/fish completions, generated at build time from the CLI's own
#    definitions (`sbx __describe-cli --json` | cmake/scripts/gen_cli_docs.py).
find_package(toml11 CONFIG REQUIRED)  # libtoml11-dev (header-only)

# The JSON Schemas of a policy and of the reports (core/schema/README.md): each embedded for
# `sbx schema NAME` (and `sbx policy schema`), and installed to share/sbx/NAME.schema.json.
set(SBX_SCHEMA_NAMES policy exec explain backends plan context denial decision cache verify)
set(_sbx_extras_gen "${CMAKE_CURRENT_BINARY_DIR}/extras-generated")
set(_sbx_schema_files "")
set(_sbx_schema_incs "")
foreach(_name IN LISTS SBX_SCHEMA_NAMES)
  set(_file "${PROJECT_SOURCE_DIR}/core/schema/${_name}.schema.json")
  add_custom_command(
      OUTPUT "${_sbx_extras_gen}/${_name}_schema.inc"
      COMMAND ${CMAKE_COMMAND} -DINPUT=${_file} -DOUTPUT=${_sbx_extras_gen}/${_name}_schema.inc
              -P "${PROJECT_SOURCE_DIR}/cmake/scripts/embed_text.cmake"
      DEPENDS "${_file}" "${PROJECT_SOURCE_DIR}/cmake/scripts/embed_text.cmake"
      COMMENT "Embedding the ${_name} JSON Schema"
      VERBATIM)
  list(APPEND _sbx_schema_files "${_file}")
  list(APPEND _sbx_schema_incs "${_sbx_extras_gen}/${_name}_schema.inc")
endforeach()
target_sources(sbx PRIVATE cmd_extras.cpp cmd_import.cpp ${_sbx_schema_incs})
target_include_directories(sbx PRIVATE "${_sbx_extras_gen}")
target_link_libraries(sbx PRIVATE Boost::headers toml11::toml11)
# On Linux Boost.JSON is already linked in statically with libsbx's objects
# (sbx_boost_json_static, core/CMakeLists.txt); the shared one too would be mapped at every start.
if(NOT SBX_LINUX)
  target_link_libraries(sbx PRIVATE Boost::json)
endif()
# toml11 is a large header library; keep it out of the CLI11 unity batches.
set_source_files_properties(cmd_import.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
install(FILES ${_sbx_schema_files} DESTINATION "${CMAKE_INSTALL_DATADIR}/sbx"
        COMPONENT runtime)

# Man pages and completions: run the built sbx (so not when cross-compiling, e.g. the Windows
# host) and generate them from its description of itself.
if(NOT CMAKE_CROSSCOMPILING)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(SBX_CLI_DOCS_DIR "${PROJECT_BINARY_DIR}/cli-docs")
  set(_sbx_gen "${PROJECT_SOURCE_DIR}/cmake/scripts/gen_cli_docs.py")
  add_custom_command(
      OUTPUT "${SBX_CLI_DOCS_DIR}/stamp"
      COMMAND ${CMAKE_COMMAND} -E rm -rf "${SBX_CLI_DOCS_DIR}"
      COMMAND ${Python3_EXECUTABLE} "${_sbx_gen}" --sbx "$<TARGET_FILE:sbx>"
              --version "${PROJECT_VERSION}" --out "${SBX_CLI_DOCS_DIR}"
      COMMAND ${CMAKE_COMMAND} -E touch "${SBX_CLI_DOCS_DIR}/stamp"
      DEPENDS sbx "${_sbx_gen}"
      COMMENT "Generating the sbx man pages and shell completions"
      VERBATIM)
  add_custom_target(sbx_cli_docs ALL DEPENDS "${SBX_CLI_DOCS_DIR}/stamp")
  install(DIRECTORY "${SBX_CLI_DOCS_DIR}/man1/" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1"
          COMPONENT runtime)
  install(FILES "${SBX_CLI_DOCS_DIR}/bash/sbx"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions" COMPONENT runtime)
  install(FILES "${SBX_CLI_DOCS_DIR}/zsh/_sbx"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions" COMPONENT runtime)
  install(FILES "${SBX_CLI_DOCS_DIR}/fish/sbx.fish"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d" COMPONENT runtime)
endif()
