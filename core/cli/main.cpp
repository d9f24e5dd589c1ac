// `sbx`: the command-line front end over libsbx. Parses arguments with CLI11, then runs exactly
// one subcommand. Invalid input (usage errors included) exits 2 and sbx's other failures 125;
// under `exec` all of sbx's own failures are 125, as env(1) and timeout(1) do when they fail
// themselves (README.md, "Exit status and error kinds").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <exception>
#include <iostream>
#include <iterator>
#include <optional>
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
#include "suggest.hpp"

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
or refused to run it; 126 not executable; 127 not found. Other subcommands: 2 for invalid
input (bad usage, a malformed policy), 125 for other failures.
Run 'sbx SUBCOMMAND --help' for the options of a subcommand.)";

// CLI11 errors become the house format and 2 (invalid input); --help and --version stay
// successes. Under `exec` they are 125, like every failure of sbx's own there (exit_codes.hpp).
// An unknown subcommand, option or value of a fixed set is named, with the closest known one and
// the usage line of its verb (suggest.hpp); anything else keeps the parser's own words.
int usage_error(CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
  if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(error);
  }
  std::string where = "sbx";
  const CLI::App* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands()[0];
  if (sub != nullptr) where += " " + sub->get_name();
  const int code =
      sub != nullptr && sub->get_name() == "exec" ? sbx::kExitSbxFailure : sbx::kExitInvalidInput;
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (std::optional<sbx::cli::Misspelling> wrong = sbx::cli::find_misspelling(app, args)) {
    sbx::cli::fail(wrong->message);
    std::cerr << sbx::cli::usage_line(*wrong->usage_app, wrong->usage_path) << '\n';
    return code;
  }
  sbx::cli::fail(std::string("bad usage: ") + error.what(),
                 "run '" + where + " --help' for the options");
  return code;
}

// " (plugin ABI 2.2)": the ABI of the plugins this sbx loads (MAJOR.0 to MAJOR.MINOR, abi.h).
constexpr const char kAbiText[] =
    " (plugin ABI " SBX_FP_STR(SBX_ABI_MAJOR) "." SBX_FP_STR(SBX_ABI_MINOR) ")";

std::string version_text() { return std::string("sbx ") + sbx::sbx_version() + kAbiText; }

// `sbx --version` and nothing else: the same line CLI11's version flag prints, written before
// the parser and its ~20 subcommands are built (most of a start's work otherwise). Any other
// command line, `--version` among other arguments included, goes through the parser.
bool is_bare_version(int argc, char** argv) {
  return argc == 2 && argv[1] != nullptr && std::string_view(argv[1]) == "--version";
}

#if defined(_WIN32)
int print_bare_version() {
  std::cout << version_text() << '\n' << std::flush;
  return std::cout ? 0 : sbx::kExitSbxFailure;
}
#else
// Writes "sbx <version> (plugin ABI <major>.<minor>)" and a line break to stdout and ends the
// process. It may run before the program's static initialisers (below), so it allocates nothing and
// uses no stream: write(2) from a buffer on the stack, and on failure a fixed message on stderr.
[[noreturn]] int print_bare_version() {
  char line[128];
  std::size_t length = 0;
  for (const char* part : {"sbx ", sbx::sbx_version(), kAbiText, "\n"}) {
    for (; *part != '\0' && length < sizeof line; ++part) line[length++] = *part;
  }
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n = ::write(STDOUT_FILENO, line + done, length - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      constexpr char kFailed[] = "sbx: cannot write the version to stdout\n";
      (void)!::write(STDERR_FILENO, kFailed, sizeof kFailed - 1);
      ::_exit(sbx::kExitSbxFailure);
    }
    done += static_cast<std::size_t>(n);
  }
  // Nothing is buffered and nothing was set up that needs undoing: skip the static destructors
  // and exit handlers (their code is a few more pages to fault in).
  ::_exit(0);
}
#endif

// The subcommand a command line names, read before the parser exists: the first argument that
// is neither an option nor the value of a global option that takes one. "" when there is none,
// after "--", or when help is asked for before it (then every subcommand must be listed).
std::string_view named_verb(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i] == nullptr ? std::string_view() : argv[i];
    if (arg == "--" || arg == "-h" || arg == "--help") return {};
    if (arg.empty() || arg[0] != '-') return arg;
    if (sbx::cli::global_option_takes_value(arg)) ++i;  // its value is the next argument
  }
  return {};
}

// Registers the subcommands: only the one the command line names when it names a known one (every
// run would otherwise build the other subcommands' options for nothing; CHANGELOG.md, 2026-12-06),
// else all of them, in the order `sbx --help` lists them. What the parser then sees for that verb
// is the same either way: its options belong to it alone, and the global options are always there.
std::vector<sbx::cli::Command> register_subcommands(CLI::App& app,
                                                    const sbx::cli::GlobalOptions& globals,
                                                    std::string_view verb) {
  constexpr std::string_view kKnown[] = {"backends", "explain", "exec",  "context", "debug",
                                         "policy",   "config",  "cache", "schema"};
  const bool all = std::find(std::begin(kKnown), std::end(kKnown), verb) == std::end(kKnown);
  const auto wanted = [&](std::string_view name) { return all || verb == name; };
  std::vector<sbx::cli::Command> commands;
  const auto add = [&](std::vector<sbx::cli::Command> more) {
    commands.insert(commands.end(), more.begin(), more.end());
  };
  if (wanted("backends")) commands.push_back(sbx::cli::register_backends(app, globals));
  if (wanted("explain")) commands.push_back(sbx::cli::register_explain(app, globals));
  if (wanted("exec")) commands.push_back(sbx::cli::register_exec(app, globals));
  if (wanted("context")) commands.push_back(sbx::cli::register_context(app, globals));
  if (wanted("debug")) commands.push_back(sbx::cli::register_debug(app, globals));
  if (wanted("policy")) add(sbx::cli::register_policy(app));
  if (wanted("config")) add(sbx::cli::register_config(app));
  if (wanted("cache")) add(sbx::cli::register_cache(app));
  if (wanted("schema")) commands.push_back(sbx::cli::register_schema_command(app));
  // Last: `__describe-cli` describes every subcommand registered before it (it is not a known
  // verb, so it always sees them all); the extras also hang `schema` and `import` on `policy`.
  if (wanted("policy")) add(sbx::cli::register_extras(app));
  return commands;
}

int run(int argc, char** argv) {
  CLI::App app{"sbx: run untrusted commands under the kernel's own sandbox", "sbx"};
  app.footer(kFooter);
  app.set_version_flag("--version", version_text(), "Print the version and exit");
  app.require_subcommand(1);
  sbx::cli::GlobalOptions globals;
  sbx::cli::add_global_options(app, globals);
  const std::vector<sbx::cli::Command> commands =
      register_subcommands(app, globals, named_verb(argc, argv));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return usage_error(app, error, argc, argv);
  }
  if (sbx::Status logging = sbx::cli::configure_logging_from(globals); !logging.ok()) {
    return sbx::cli::fail(logging.failure().as(sbx::ErrorKind::invalid_input),
                          "see sbx --help for the accepted values");
  }
  for (const sbx::cli::Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  sbx::cli::fail("no subcommand was given", "run 'sbx --help' for the list");
  return sbx::kExitInvalidInput;
}

#if defined(__GLIBC__)
// `sbx --version` alone, answered before the static initialisers of the program run (the C++
// runtime's iostreams and locale, the parser's validator tables, every library's globals: most
// of what a start touches beyond loading): glibc passes main's arguments to the executable's
// constructors (other C libraries need not: main answers there), and priority 101 runs this
// one before every constructor without a priority. It uses nothing that a constructor sets up
// (the version is a string literal; the hardening and the write are plain calls), allocates
// nothing, and ends the process itself.
[[gnu::constructor(101)]] void answer_bare_version_before_initialisers(int argc, char** argv,
                                                                       char** /*envp*/) {
  if (!is_bare_version(argc, argv)) return;
  sbx::harden_current_process();
  (void)print_bare_version();
}
#endif

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
