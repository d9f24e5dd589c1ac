// `sbx`: the command-line front end over libsbx. Parses arguments with CLI11, then runs exactly
// one subcommand. Usage errors and sbx's own failures exit 125, as env(1) and timeout(1) do when
// they fail themselves (core/cli/README.md, "Exit status").
#include <CLI/CLI.hpp>
#include <cerrno>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#if !defined(_WIN32)
#include <unistd.h>
#endif

#include "cli.hpp"
#include "extras.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/spawn.hpp"

namespace {

constexpr const char* kFooter = R"(Examples:
  sbx backends --probe                      what can sandbox commands on this host
  sbx explain --preset read-only            the two questions, answered for a policy
  sbx exec -- make test                     run a command in the workspace-write sandbox
  sbx exec --network enabled -- npm ci      the same, with network access
  sbx policy check --policy p.json          validate a policy file
  sbx context --json                        what a model should know about the sandbox
  sbx config show                           the settings, each value with its scope
  sbx debug seatbelt -- /bin/ls             the plan the seatbelt backend would run

Exit status of exec: the command's own; 128+N when it died of signal N; 125 when sbx failed
or refused to run it; 126 not executable; 127 not found.
Run 'sbx SUBCOMMAND --help' for the options of a subcommand.)";

// CLI11 errors become the house format and 125; --help and --version stay successes.
int usage_error(const CLI::App& app, const CLI::ParseError& error) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(error);
  }
  std::string where = "sbx";
  if (const CLI::App* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands()[0]) {
    where += " " + sub->get_name();
  }
  return sbx::cli::fail(std::string("bad usage: ") + error.what(),
                        "run '" + where + " --help' for the options");
}

std::string version_text() { return std::string("sbx ") + sbx::sbx_version(); }

// `sbx --version` and nothing else: the same line CLI11's version flag prints, written before
// the parser and its ~20 subcommands are built (most of a start's work otherwise). Any other
// command line, `--version` among other arguments included, goes through the parser.
bool is_bare_version(int argc, char** argv) {
  return argc == 2 && argv[1] != nullptr && std::string_view(argv[1]) == "--version";
}

int print_bare_version() {
  const std::string line = version_text() + "\n";
#if defined(_WIN32)
  std::cout << line << std::flush;
  return std::cout ? 0 : sbx::kExitSbxFailure;
#else
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sbx::cli::fail("cannot write the version to stdout");
    done += static_cast<std::size_t>(n);
  }
  // Nothing is buffered and nothing was set up that needs undoing: skip the static destructors
  // and exit handlers (their code is a few more pages to fault in).
  ::_exit(0);
#endif
}

int run(int argc, char** argv) {
  CLI::App app{"sbx: run untrusted commands under the kernel's own sandbox", "sbx"};
  app.footer(kFooter);
  app.set_version_flag("--version", version_text(), "Print the version and exit");
  app.require_subcommand(1);
  sbx::cli::GlobalOptions globals;
  sbx::cli::add_global_options(app, globals);

  std::vector<sbx::cli::Command> commands = {
      sbx::cli::register_backends(app, globals), sbx::cli::register_explain(app, globals),
      sbx::cli::register_exec(app, globals), sbx::cli::register_context(app),
      sbx::cli::register_debug(app, globals)};
  for (sbx::cli::Command& command : sbx::cli::register_policy(app)) commands.push_back(command);
  for (sbx::cli::Command& command : sbx::cli::register_config(app)) commands.push_back(command);
  // Last: `__describe-cli` describes every subcommand registered before it.
  for (sbx::cli::Command& command : sbx::cli::register_extras(app)) commands.push_back(command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return usage_error(app, error);
  }
  if (sbx::Status logging = sbx::cli::configure_logging_from(globals); !logging.ok()) {
    return sbx::cli::fail(logging.error(), "see sbx --help for the accepted values");
  }
  for (const sbx::cli::Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return sbx::cli::fail("no subcommand was given", "run 'sbx --help' for the list");
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: not dumpable, no core files, no LD_* in our own environment.
  sbx::harden_current_process();
  if (is_bare_version(argc, argv)) return print_bare_version();
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // Core returns errors as values; this is a last guard so a bug never looks like the
    // command's own exit status.
    return sbx::cli::fail(std::string("internal error: ") + e.what(),
                          "please report this as a bug");
  }
}
