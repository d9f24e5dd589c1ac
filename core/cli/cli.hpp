// Shared pieces of the `sbx` front end: global and policy options, plugin loading, error
// reporting, and one registration function per subcommand (core/cli/README.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/exit_codes.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/request.hpp"
#include "sbx/core/run.hpp"
#include "sbx/core/settings.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::cli {

// GLOBAL options: given before the subcommand.
struct GlobalOptions {
  std::vector<std::string> backends;     // --backends a,b: preference order; empty = default
  std::vector<std::string> plugin_dirs;  // --plugin-dir: extra directories, same trust checks
  std::string log_level = "warn";
  std::string log_format = "text";
};

// POLICY options, shared by explain, exec, policy check|show, context and debug.
struct PolicyOptions {
  std::string policy_file;
  int policy_fd = -1;  // --policy-fd N; -1: not given
  std::string preset;
  std::string cwd;
  std::vector<std::string> writable_roots;
  std::vector<std::string> denies;
  std::string network;
  bool caches = false;  // --caches: the policy's ":caches" entry (toolchain caches)
  // The path style of the OS the plan is for (`sbx debug windows` on a POSIX host: kWindows).
  // A --cwd written the Windows way ("C:\\proj") is then taken lexically, never looked up here.
  PathStyle style = kHostPathStyle;
};

// What the command line asks for beyond the policy: --sandbox (nullopt: not given, the
// settings decide) and --allow-unsandboxed. Both are checked against the administrator's locks.
struct RunChoices {
  std::optional<SandboxPreference> sandbox;
  bool allow_unsandboxed = false;
  settings::BackendRequest backends{};  // --backends, --plugin-dir (backend_request)
};

// A registered subcommand and what to run when it was the one given.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// ---- errors ----
// Prints "sbx: <what>; <todo>" on stderr and returns 125 (sbx itself failed).
int fail(std::string_view what, std::string_view todo);
// Prints "sbx: <message>" for a core error that already says what to do; returns 125.
int fail(std::string_view message);
// The same for an Error, with the exit status of its kind (exit_code_for).
int fail(const Error& error);
int fail(const Error& error, std::string_view todo);
// 2 (kExitInvalidInput) for ErrorKind::invalid_input, else 125. Not for `exec`, whose own
// failures are always 125 (exit_codes.hpp).
int exit_code_for(ErrorKind kind);

// ---- global options and plugins ----
void add_global_options(CLI::App& app, GlobalOptions& options);
// The backends sbx ships (kDefaultBackendOrder) as completion values of --backends and of
// `debug BACKEND`: described, never checked (a plugin may bring another name).
CLI::Validator known_backend_names();
// True for a global option (add_global_options) whose value is the next argument: the main
// program's look at the command line before parsing skips it (main.cpp, named_verb).
bool global_option_takes_value(std::string_view argument);
Status configure_logging_from(const GlobalOptions& options);
// Which plugins load_registry opens.
enum class RegistryScope {
  kWanted,  // with --backends: only the named ones (all if a named one is not found that way)
  kAll,     // every candidate (for listings)
};
// The global --backends and --plugin-dir (made absolute: "from here") as the settings' caller
// scope; settings::decide_backends puts them on top of the settings' "backends".
Result<settings::BackendRequest> backend_request(const GlobalOptions& options);
// `options` with the order and plugin directories the settings and the command line decided
// (PreparedRequest::decided.backends): what load_registry and the run's Manager then use.
GlobalOptions with_backends(const GlobalOptions& options,
                            const settings::BackendSelection& selection);
// Loads the plugins from the trusted default directory, then each --plugin-dir.
Result<PluginRegistry> load_registry(const GlobalOptions& options,
                                     RegistryScope scope = RegistryScope::kWanted);

// The backends of one run (sbx/core/run.hpp), loaded only when the run asks for them: the
// preferred one alone (unless --backends names others), or every one --backends allows.
class CliBackends final : public RunBackends {
 public:
  // `policy_file`: see Manager.
  CliBackends(const GlobalOptions& globals, std::string policy_file)
      : globals_(globals), policy_file_(std::move(policy_file)) {}
  Result<const Manager*> all() override;
  const Manager* only(const std::string& backend) override;

 private:
  struct Loaded {
    PluginRegistry registry;
    std::unique_ptr<Manager> manager;
  };
  const GlobalOptions& globals_;
  std::string policy_file_;
  std::unique_ptr<Loaded> only_;
  std::unique_ptr<Loaded> all_;
};

// ---- policy options ----
void add_policy_options(CLI::App& app, PolicyOptions& options);
// Reads the settings scopes for `cwd` (this process's environment gives $XDG_CONFIG_HOME/$HOME,
// and $PWD the logical cwd); `cwd_option` is --cwd as given, the logical cwd when set.
Result<settings::Settings> load_cli_settings(const std::string& cwd,
                                             const std::string& cwd_option = {});
// Builds the policy (--policy, --preset, else the settings' policy, else workspace-write),
// applies the command-line additions, re-validates the result, applies the settings' locks
// (refusing what they forbid, naming the lock) and resolves it against the effective cwd. The
// settings files read are kept read-only in the sandbox like the policy file.
// The core's pipeline (sbx/core/request.hpp, prepare_request) does the steps; this is the
// command line's request and words.
Result<PreparedRequest> load_policy(const PolicyOptions& options, const RunChoices& choices = {});
// Like load_policy, without resolution (for `policy show`). The project settings are looked up
// from `settings_cwd` when given (a foreign cwd cannot be read here), else from `cwd`.
Result<settings::Decided> decide_policy(const PolicyOptions& options, const std::string& cwd,
                                        const RunChoices& choices = {},
                                        const std::string& settings_cwd = {});
Result<std::string> effective_cwd(const PolicyOptions& options);

// ---- the two questions ----
// --sandbox auto|require|forbid; `sandbox` stays empty when it is not given.
void add_sandbox_option(CLI::App& app, std::string& sandbox);
// --sandbox as given: nullopt when it was not (the settings decide).
Result<std::optional<SandboxPreference>> sandbox_choice(const std::string& sandbox);

// ---- runs and plans ----
// The request of a run (sbx/core/run.hpp) for `command` under the policy, with this process's
// environment.
RunRequest run_request(PreparedRequest input, const std::vector<std::string>& command);
// Prints a plan as `sbx debug` and `sbx exec --dry-run` show it (pretty JSON on stdout);
// `backend` nullopt for a plan that runs without a sandbox.
void print_plan(const std::optional<std::string>& backend, const ExecPlan& plan);

// ---- the process environment ----
// The caller's environment for a run: this process's, then the names of the variables removed
// from it at start as bare names (common.cpp).
std::vector<std::string> current_environment();

// ---- subcommands ----
Command register_backends(CLI::App& app, const GlobalOptions& globals);
Command register_explain(CLI::App& app, const GlobalOptions& globals);
Command register_exec(CLI::App& app, const GlobalOptions& globals);
std::vector<Command> register_policy(CLI::App& app);
// `policy widen A B` and `policy approve REQUESTED GRANTED`, under the `policy` subcommand.
std::vector<Command> register_policy_algebra(CLI::App& policy);
Command register_context(CLI::App& app, const GlobalOptions& globals);
// `config show [--json]` and `config trust [DIR]`.
std::vector<Command> register_config(CLI::App& app);
Command register_debug(CLI::App& app, const GlobalOptions& globals);
// `cache list [--project DIR] [--json]` and `cache clear [--project DIR | --all]`.
std::vector<Command> register_cache(CLI::App& app);

}  // namespace sbx::cli
