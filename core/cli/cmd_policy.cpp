// `sbx policy check [POLICY]` and `sbx policy show [POLICY]`.
// check: exit 0 and "policy OK" when the policy parses and resolves here and nothing in it would
// refuse a run here (check_policy_runnable); exit 2 with the error (naming its JSON pointer)
// when it does not; 2 for bad usage too (README "Exit status and error kinds").
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/run.hpp"
#include "sbx/core/run_limits.hpp"
#include "text_table.hpp"

namespace sbx::cli {
namespace {

int run_check(const PolicyOptions& options) {
  Result<PreparedRequest> input = load_policy(options);
  if (!input.ok()) {
    std::cerr << "sbx: " << input.error() << '\n';
    return kExitInvalidPolicy;
  }
  // What a run refuses in the policy itself (the settings' `sandbox: forbid` with deny entries
  // or proxy mode, its own proxy_ports, a limit that cannot hold here): the same function
  // `sbx exec` calls before it asks any backend.
  if (Status runnable =
          check_policy_runnable(input->policy, input->decided.sandbox.value, probe_cgroups());
      !runnable.ok()) {
    std::cerr << "sbx: the policy cannot run here: " << printable(runnable.error()) << '\n';
    return kExitInvalidPolicy;
  }
  std::cout << "policy OK\n";
  return 0;
}

int run_show(const PolicyOptions& options) {
  Result<std::string> cwd = effective_cwd(options);
  if (!cwd.ok()) return fail(cwd.failure());
  Result<settings::Decided> policy = decide_policy(options, *cwd);
  if (!policy.ok()) return fail(policy.failure());
  std::cout << policy_to_json(policy->policy) << '\n';
  return 0;
}

}  // namespace

std::vector<Command> register_policy(CLI::App& app) {
  CLI::App* policy = app.add_subcommand(
      "policy", "Validate, show, widen, approve or import policies, or print their JSON Schema");
  policy->require_subcommand(1);
  auto check_options = std::make_shared<PolicyOptions>();
  CLI::App* check = policy->add_subcommand(
      "check",
      "Validate the policy (parse and resolve against --cwd): prints \"policy OK\" and "
      "exits 0, or prints the error with its JSON pointer and exits 2");
  add_policy_options(*check, *check_options);
  check->footer(
      "Examples:\n  sbx policy check --policy policy.json\n"
      "  sbx policy check --preset read-only --deny '**/*.key'");
  auto show_options = std::make_shared<PolicyOptions>();
  CLI::App* show = policy->add_subcommand(
      "show", "Print the policy in its full JSON form, with the command-line additions applied");
  add_policy_options(*show, *show_options);
  show->footer(
      "Examples:\n  sbx policy show\n  sbx policy show --preset read-only "
      "--network enabled");
  std::vector<Command> commands = {{check, [check_options] { return run_check(*check_options); }},
                                   {show, [show_options] { return run_show(*show_options); }}};
  for (const Command& command : register_policy_algebra(*policy)) commands.push_back(command);
  return commands;
}

}  // namespace sbx::cli
