// `sbx debug BACKEND [POLICY] -- CMD [ARG...]`: the plan BACKEND would run, as JSON, whatever
// its probe says (transform is pure), so e.g. the seatbelt plan can be inspected on Linux.
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/environment.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/spawn.hpp"

namespace sbx::cli {
namespace {

struct DebugOptions {
  std::string backend;
  PolicyOptions policy;
  std::vector<std::string> command;
};

// argv[0] must be absolute for a plan. Resolved on this host when possible; otherwise an
// absolute path is taken as given (the plan may be meant for another OS).
Result<std::string> plan_argv0(const std::string& command, const std::string& cwd,
                               const std::vector<std::string>& env) {
  if (!command.empty() && command.front() == '/') return command;
  Result<std::string> path = resolve_command(command, cwd, env);
  if (!path.ok()) {
    return Error{"'" + command + "': " + path.error() + "; give an absolute path"};
  }
  return path;
}

// Calls the backend's transform directly rather than through Manager::transform: the manager
// also checks that argv[0] is an absolute path *on this host* before anything may run it, and a
// plan for another OS (C:\... for windows) fails that check although debug only prints it.
// Plugin code is still guarded: an exception becomes an error, never a crash.
Result<ExecPlan> guarded_transform(const LoadedPlugin& plugin, const TransformRequest& request) {
  try {
    Result<ExecPlan> plan = plugin.backend->transform(request);
    if (!plan.ok()) return Error{"backend '" + plugin.name + "' cannot run this: " + plan.error()};
    return plan;
  } catch (const std::exception& e) {
    return Error{"backend '" + plugin.name + "' failed in transform: " + e.what()};
  } catch (...) {
    return Error{"backend '" + plugin.name + "' failed in transform with an unknown exception"};
  }
}

int run_debug(const DebugOptions& options, const GlobalOptions& globals) {
  if (options.command.empty())
    return fail("debug needs a command", "put it after --, e.g. sbx debug bwrap -- /bin/ls");
  Result<PolicyInput> input = load_policy(options.policy);
  if (!input.ok()) return fail(input.error());
  Result<PluginRegistry> registry = load_registry(globals);
  if (!registry.ok()) return fail(registry.error());
  const LoadedPlugin* plugin = registry->find(options.backend);
  if (plugin == nullptr) {
    return fail("no backend named '" + options.backend + "' is loaded",
                "`sbx backends` lists the loaded ones and why others were rejected");
  }
  TransformRequest request{options.command, input->cwd,
                           filter_environment(input->policy.environment, current_environment()).env,
                           input->resolved};
  Result<std::string> argv0 = plan_argv0(options.command[0], input->cwd, request.env);
  if (!argv0.ok()) return fail(argv0.error());
  request.argv[0] = *argv0;
  // Network mode proxy: the plan is made for sbx's own proxy, started here as `sbx exec
  // --dry-run` does (it refuses a policy that names proxy_ports itself), never for a port the
  // policy names. It stops when debug returns; the printed plan shows "***" for the credential.
  std::unique_ptr<proxy::RunProxy> run_proxy;
  if (request.policy.network.mode == NetworkMode::kProxy) {
    Result<std::unique_ptr<proxy::RunProxy>> started = proxy::RunProxy::start(request);
    if (!started.ok()) return fail(started.error());
    run_proxy = std::move(*started);
  }
  Result<ExecPlan> plan = guarded_transform(*plugin, request);
  if (!plan.ok()) {
    const std::string error =
        run_proxy ? proxy::redact(plan.error(), run_proxy->proxy().token()) : plan.error();
    return fail(error, "see `sbx explain` for what the policy needs");
  }
  std::cout << plan_to_json(options.backend, proxy::redact_plan(*plan, run_proxy.get()),
                            JsonStyle::kPretty)
            << '\n';
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
      ->type_name("BACKEND");
  add_policy_options(*sub, options->policy);
  sub->add_option("command", options->command, "The command and its arguments, after --")
      ->type_name("CMD [ARG...]");
  sub->footer(
      "Examples:\n  sbx debug bwrap -- /bin/ls -l\n"
      "  sbx debug seatbelt --preset read-only -- /bin/ls");
  return {sub, [options, &globals] { return run_debug(*options, globals); }};
}

}  // namespace sbx::cli
