// Errors, global options, logging and plugin loading for the `sbx` front end.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "sbx/core/environment.hpp"
#include "sbx/core/logging.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/spawn.hpp"
#include "suggest.hpp"

namespace sbx::cli {

int fail(std::string_view what, std::string_view todo) {
  std::cerr << "sbx: " << what << "; " << todo << '\n';
  return kExitSbxFailure;
}

int fail(std::string_view message) {
  std::cerr << "sbx: " << message << '\n';
  return kExitSbxFailure;
}

int exit_code_for(ErrorKind kind) {
  return kind == ErrorKind::invalid_input ? kExitInvalidInput : kExitSbxFailure;
}

int fail(const Error& error) {
  fail(std::string_view(error.message));
  return exit_code_for(error.kind);
}

int fail(const Error& error, std::string_view todo) {
  fail(std::string_view(error.message), todo);
  return exit_code_for(error.kind);
}

CLI::Validator known_backend_names() {
  return completion_values({std::begin(kDefaultBackendOrder), std::end(kDefaultBackendOrder)});
}

void add_global_options(CLI::App& app, GlobalOptions& options) {
  app.add_option("--backends", options.backends,
                 "Backends to consider, in preference order (comma-separated names, e.g. "
                 "bwrap,landlock). Default: the settings' backends.order, else every loaded "
                 "backend")
      ->delimiter(',')
      ->check(known_backend_names())
      ->type_name("NAME[,NAME...]");
  app.add_option("--plugin-dir", options.plugin_dirs,
                 "Extra directory to load backend plugins from, after the trusted default and the "
                 "settings' backends.plugin_dirs. The same ownership and permission checks apply "
                 "(repeatable)")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("--log-level", options.log_level, "Log level on stderr")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->type_name("LEVEL")
      ->capture_default_str();
  app.add_option("--log-format", options.log_format, "Log line format on stderr")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
}

bool global_option_takes_value(std::string_view argument) {
  // Those of add_global_options that take a value, given as the next argument (with "=" the
  // value is in the same argument).
  return argument == "--backends" || argument == "--plugin-dir" || argument == "--log-level" ||
         argument == "--log-format";
}

Status configure_logging_from(const GlobalOptions& options) {
  return configure_logging(options.log_level,
                           options.log_format == "json" ? LogFormat::kJson : LogFormat::kText);
}

namespace {

bool has_every(const PluginRegistry& registry, const std::vector<std::string>& names) {
  return std::all_of(names.begin(), names.end(),
                     [&](const std::string& name) { return registry.find(name) != nullptr; });
}

// Warns of each rejection once per process: a run may scan the same file more than once (the
// wanted plugins, then all of them when one was missing; the preferred backend alone, then all).
void warn_once(const PluginRegistry& registry) {
  static std::set<std::string> warned;
  for (const RejectedPlugin& rejection : registry.rejected()) {
    if (warned.insert(rejection.message).second) warn_rejected(rejection);
  }
}

}  // namespace

Result<settings::BackendRequest> backend_request(const GlobalOptions& options) {
  settings::BackendRequest request;
  request.order = options.backends;
  for (const std::string& dir : options.plugin_dirs) {
    // The loader wants absolute paths; a relative --plugin-dir means "from here".
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(dir, error);
    if (error || dir.empty()) {
      return Error{"--plugin-dir '" + dir + "' is not a usable directory path; give an " +
                   "existing directory"};
    }
    request.plugin_dirs.push_back(absolute.lexically_normal().string());
  }
  return request;
}

GlobalOptions with_backends(const GlobalOptions& options,
                            const settings::BackendSelection& selection) {
  GlobalOptions out = options;
  out.backends = selection.order.value;
  out.plugin_dirs.clear();
  for (const auto& dir : selection.plugin_dirs) out.plugin_dirs.push_back(dir.value);
  return out;
}

Result<PluginRegistry> load_registry(const GlobalOptions& options, RegistryScope scope) {
  Result<InstallLayout> layout = install_layout();
  if (!layout.ok()) {
    return Error{"cannot locate the sbx installation (" + layout.error() +
                 "); reinstall sbx or run the sbx that belongs to this libsbx"};
  }
  LoaderOptions loader = install_loader_options(*layout);
  Result<settings::BackendRequest> request = backend_request(options);
  if (!request.ok()) return request.failure();
  for (const std::string& dir : request->plugin_dirs) loader.directories.push_back(dir);
  loader.warn_rejections = false;  // warn_once
  if (scope == RegistryScope::kWanted && !options.backends.empty()) {
    // Only the plugins the preference names are opened (each costs about a millisecond of
    // start-up). If one of them is not found that way (a file named unlike its backend, or a
    // rejected plugin) the full scan runs, so that the reasons given are the complete ones.
    loader.only_names = options.backends;
    PluginRegistry wanted = PluginRegistry::load(loader);
    if (has_every(wanted, options.backends)) {
      warn_once(wanted);
      return wanted;
    }
    loader.only_names.clear();
  }
  PluginRegistry all = PluginRegistry::load(loader);
  warn_once(all);
  return all;
}

// The LD_* variables main() took out of sbx's own environment (harden_current_process) were
// the caller's: they follow as bare names, which every run drops and lists
// (filter_environment), so that a report of what the command did not get names them too.
std::vector<std::string> current_environment() {
  std::vector<std::string> env = process_environment();
  const std::vector<std::string>& withheld = environment_removed_at_start();
  env.insert(env.end(), withheld.begin(), withheld.end());
  return env;
}

Result<std::optional<SandboxPreference>> sandbox_choice(const std::string& sandbox) {
  if (sandbox.empty()) return std::optional<SandboxPreference>{};
  Result<SandboxPreference> preference = parse_sandbox_preference(sandbox);
  if (!preference.ok()) return preference.failure();
  return std::optional<SandboxPreference>(*preference);
}

Result<const Manager*> CliBackends::all() {
  if (!all_) {
    Result<PluginRegistry> registry = load_registry(globals_);
    if (!registry.ok()) return registry.failure();
    all_ = std::make_unique<Loaded>(Loaded{std::move(*registry), nullptr});
    all_->manager = std::make_unique<Manager>(all_->registry, globals_.backends, policy_file_);
    // A CLI run reuses the answers an earlier run kept (core/src/plugins/README.md):
    // a backend that says its answer may be kept costs no probe.
    all_->manager->keep_probe_answers_between_runs(true);
  }
  return all_->manager.get();
}

const Manager* CliBackends::only(const std::string& backend) {
  if (!globals_.backends.empty()) return nullptr;  // the caller's own order decides
  if (!only_) {
    GlobalOptions preferred = globals_;
    preferred.backends = {backend};
    Result<PluginRegistry> registry = load_registry(preferred);
    if (!registry.ok() || registry->find(backend) == nullptr) return nullptr;
    only_ = std::make_unique<Loaded>(Loaded{std::move(*registry), nullptr});
    only_->manager =
        std::make_unique<Manager>(only_->registry, std::vector<std::string>{}, policy_file_);
    only_->manager->keep_probe_answers_between_runs(true);
  }
  return only_->manager.get();
}

RunRequest run_request(PreparedRequest input, const std::vector<std::string>& command) {
  RunRequest request;
  request.settings = std::move(input.settings);
  request.preference = input.decided.sandbox.value;
  request.allow_unsandboxed = input.decided.allow_unsandboxed;
  request.policy = std::move(input.policy);
  request.resolved = std::move(input.resolved);
  request.cwd = std::move(input.cwd);
  request.caches = std::move(input.caches);
  request.command = command;
  request.environment = current_environment();
  return request;
}

void print_plan(const std::optional<std::string>& backend, const ExecPlan& plan) {
  std::cout << plan_to_json(backend, plan, JsonStyle::kPretty) << '\n';
}

}  // namespace sbx::cli
