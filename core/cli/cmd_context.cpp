// `sbx context [POLICY] [--json]`: the model-facing description of the policy (intent, not
// host capability; see sbx/core/context.hpp).
#include <iostream>
#include <memory>

#include "cli.hpp"
#include "sbx/core/context.hpp"

namespace sbx::cli {
namespace {

struct ContextOptions {
  PolicyOptions policy;
  bool json = false;
};

int run_context(const ContextOptions& options) {
  Result<PreparedRequest> input = load_policy(options.policy);
  if (!input.ok()) return fail(input.failure());
  SandboxContext context = describe_sandbox(input->resolved);
  context.unsandboxed_locked = input->decided.escape_hatch_locked;
  if (options.json) {
    std::cout << context_to_json(context, JsonStyle::kPretty) << '\n';
  } else {
    std::cout << context_to_text(context);
  }
  return 0;
}

}  // namespace

Command register_context(CLI::App& app) {
  auto options = std::make_shared<ContextOptions>();
  CLI::App* sub =
      app.add_subcommand("context",
                         "Describe the policy for a model's prompt: mode, writable roots, network, "
                         "denied paths (what is intended, not what this host can enforce)");
  add_policy_options(*sub, options->policy);
  sub->add_flag("--json", options->json, "Print the same facts as JSON");
  sub->footer("Examples:\n  sbx context\n  sbx context --preset read-only --json");
  return {sub, [options] { return run_context(*options); }};
}

}  // namespace sbx::cli
