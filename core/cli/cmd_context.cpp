// `sbx context [POLICY] [--json] [--any-backend]`: the model-facing description of the policy
// for a run on this host (sbx/core/context.hpp): whether it is sandboxed, by which backend and
// that backend's limits; --any-backend labels every backend's differences instead.
#include <iostream>
#include <memory>

#include "cli.hpp"
#include "sbx/core/context.hpp"
#include "sbx/core/run.hpp"

namespace sbx::cli {
namespace {

struct ContextOptions {
  PolicyOptions policy;
  bool json = false;
  bool any_backend = false;
  std::string sandbox;
};

int run_context(const ContextOptions& options, const GlobalOptions& globals) {
  Result<std::optional<SandboxPreference>> preference = sandbox_choice(options.sandbox);
  if (!preference.ok()) return fail(preference.failure(), "use --sandbox auto, require or forbid");
  Result<settings::BackendRequest> backends = backend_request(globals);
  if (!backends.ok()) return fail(backends.failure());
  Result<PreparedRequest> input =
      load_policy(options.policy, RunChoices{*preference, false, std::move(*backends)});
  if (!input.ok()) return fail(input.failure());
  const GlobalOptions chosen = with_backends(globals, input->decided.backends);
  std::optional<PluginRegistry> registry;
  std::optional<Manager> manager;
  if (!options.any_backend) {
    Result<PluginRegistry> loaded = load_registry(chosen);
    if (!loaded.ok()) return fail(loaded.failure());
    registry.emplace(std::move(*loaded));
    manager.emplace(*registry, chosen.backends, input->policy_file);
  }
  const SandboxContext context = context_for_run(*input, manager ? &*manager : nullptr);
  if (options.json) {
    std::cout << context_to_json(context, JsonStyle::kPretty) << '\n';
  } else {
    std::cout << context_to_text(context);
  }
  return 0;
}

}  // namespace

Command register_context(CLI::App& app, const GlobalOptions& globals) {
  auto options = std::make_shared<ContextOptions>();
  CLI::App* sub = app.add_subcommand(
      "context",
      "Describe the policy for a model's prompt: mode, writable roots, network, denied paths, "
      "and the backend that will enforce it on this host (with that backend's limits only)");
  add_policy_options(*sub, options->policy);
  add_sandbox_option(*sub, options->sandbox);
  sub->add_flag("--json", options->json, "Print the same facts as JSON");
  sub->add_flag("--any-backend", options->any_backend,
                "Do not probe this host: describe every backend's differences, each labelled "
                "(the same text on every host)");
  sub->footer(
      "Examples:\n  sbx context\n  sbx context --preset read-only --json\n"
      "  sbx --backends landlock context    # as Landlock would enforce it\n"
      "  sbx context --any-backend --json   # for a prompt used on other hosts too");
  return {sub, [options, &globals] { return run_context(*options, globals); }};
}

}  // namespace sbx::cli
