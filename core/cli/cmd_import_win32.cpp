// `sbx policy import` in sbx.exe (core/cross/cli.cmake): the verb exists, so `sbx policy
// --help` lists the same verbs everywhere, but it refuses: the Codex importer reads TOML
// through toml11, which the Windows cross build does not compile (CI time). Import on another
// host and copy the policy file.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli.hpp"
#include "extras.hpp"

namespace sbx::cli {

Command register_policy_import(CLI::App& policy) {
  CLI::App* import = policy.add_subcommand(
      "import", "Convert another tool's sandbox settings to an sbx policy (not in sbx.exe yet)");
  import->allow_extras();
  return Command{import, [] {
                   return fail("policy import is not available in sbx.exe yet",
                               "run `sbx policy import` on Linux or macOS and copy the policy "
                               "file it writes");
                 }};
}

}  // namespace sbx::cli
