// `sbx debug BACKEND [POLICY] -- CMD [ARG...]`: the plan BACKEND would run, as JSON, whatever
// its probe says (transform is pure), so e.g. the seatbelt plan can be inspected on Linux. The
// same core entry point as `sbx exec --dry-run` (sbx/core/run.hpp, plan_for_backend): for the
// backend exec would choose, both print the same plan.
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/run.hpp"
#include "suggest.hpp"

namespace sbx::cli {
namespace {

struct DebugOptions {
  std::string backend;
  PolicyOptions policy;
  std::vector<std::string> command;
};

int run_debug(const DebugOptions& options, const GlobalOptions& globals) {
  if (options.command.empty())
    return fail(Error{"debug needs a command", ErrorKind::invalid_input},
                "put it after --, e.g. sbx debug bwrap -- /bin/ls");
  // A plan for another OS (windows on a POSIX host) takes that OS's paths: --cwd C:\\proj is
  // normalised, never looked up here, and the command is never searched on this host's PATH.
  PolicyOptions policy_options = options.policy;
  policy_options.style = plan_path_style(options.backend);
  Result<settings::BackendRequest> backends = backend_request(globals);
  if (!backends.ok()) return fail(backends.failure());
  Result<PreparedRequest> input =
      load_policy(policy_options, RunChoices{std::nullopt, false, std::move(*backends)});
  if (!input.ok()) return fail(input.failure());
  Result<PluginRegistry> registry = load_registry(with_backends(globals, input->decided.backends));
  if (!registry.ok()) return fail(registry.failure());
  if (registry->find(options.backend) == nullptr) {
    // The loaded names decide here: a plugin may bring a name the parser does not know.
    std::vector<std::string> loaded;
    for (const LoadedPlugin& plugin : registry->plugins()) loaded.push_back(plugin.name);
    const std::optional<std::string> match = closest_match(options.backend, loaded);
    return fail(
        Error{"no backend named '" + options.backend + "' is loaded", ErrorKind::invalid_input},
        match ? "did you mean '" + *match + "'?"
              : "`sbx backends` lists the loaded ones and why others were rejected");
  }
  const Manager manager(*registry, {}, input->policy_file);
  // The core plans as for a run (network mode proxy: sbx's own proxy, started for the plan and
  // stopped before this returns; the printed plan shows "***" for the credential).
  RunOutcome planned =
      plan_for_backend(manager, options.backend, run_request(std::move(*input), options.command));
  const Error stop{planned.error, planned.kind};
  if (planned.stop == RunStop::kCommandNotFound) return fail(stop);
  if (!planned.plan) {
    if (policy_options.style != kHostPathStyle)
      return fail(stop,
                  "a plan for another OS names its command by the full path it has there (e.g. "
                  "C:\\Windows\\System32\\cmd.exe); `sbx explain` shows what the policy needs");
    return fail(stop, "see `sbx explain` for what the policy needs");
  }
  print_plan(options.backend, *planned.plan);
  return 0;
}

}  // namespace

Command register_debug(CLI::App& app, const GlobalOptions& globals) {
  auto options = std::make_shared<DebugOptions>();
  CLI::App* sub = app.add_subcommand(
      "debug",
      "Print, as JSON, the plan BACKEND would run for a command (backend, argv, env, "
      "cwd, notes); works on any host because transform is pure");
  sub->add_option("backend", options->backend, "The backend's name (see `sbx backends`)")
      ->required()
      ->check(known_backend_names())
      ->type_name("BACKEND");
  add_policy_options(*sub, options->policy);
  sub->add_option("command", options->command, "The command and its arguments, after --")
      ->type_name("CMD [ARG...]");
  sub->footer(
      "Examples:\n  sbx debug bwrap -- /bin/ls -l\n"
      "  sbx debug seatbelt --preset read-only -- /bin/ls\n"
      "  sbx debug windows --cwd 'C:\\proj' -- 'C:\\Windows\\System32\\cmd.exe' /c dir");
  return {sub, [options, &globals] { return run_debug(*options, globals); }};
}

}  // namespace sbx::cli
