// The CLI's extras (core/cli/extras.cmake): `policy schema`, `policy import`, and the hidden
// `__describe-cli` that the man pages and shell completions are generated from.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli.hpp"

namespace sbx::cli {

// Adds `policy schema` and `policy import` under the already registered `policy` subcommand,
// and the hidden `__describe-cli` at the top. Call after every other register_* function, so
// that `__describe-cli` describes them all.
std::vector<Command> register_extras(CLI::App& app);

// `schema NAME`: prints the JSON Schema of a policy or of a report (core/schema/NAME.schema.json,
// embedded at build time).
Command register_schema_command(CLI::App& app);

// The JSON Schema of a policy (core/schema/policy.schema.json, embedded at build time).
std::string_view policy_schema_text();

// `policy import --from codex|srt FILE [--json]` under `policy`.
Command register_policy_import(CLI::App& policy);

// Exit status of `policy import` when some settings have no sbx equivalent (they are listed).
inline constexpr int kExitImportUnmapped = 3;

}  // namespace sbx::cli
