// `sbx explain [POLICY] [--sandbox auto|require|forbid] [--json]`: the two questions answered
// for a policy, why other backends were passed over, and the resolved rules in plain words.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/context.hpp"
#include "sbx/core/environment.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/run.hpp"
#include "sbx/core/runtime.hpp"
#include "text_table.hpp"

namespace sbx::cli {
namespace {

struct ExplainOptions {
  PolicyOptions policy;
  std::string sandbox;  // empty: not given (the settings decide)
  bool json = false;
  std::vector<std::string> command;  // optional: is it an excluded command?
};

std::string parent_path(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

std::string access_words(Access access) {
  switch (access) {
    case Access::kRead:
      return "read only";
    case Access::kWrite:
      return "read and write";
    case Access::kDeny:
      return "denied";
  }
  return "unknown";
}

std::string network_words(const NetworkPolicy& network) {
  switch (network.mode) {
    case NetworkMode::kRestricted:
      return "blocked (restricted)";
    case NetworkMode::kEnabled:
      return "enabled (the internet and other machines)";
    case NetworkMode::kProxy: {
      // The domains come from the policy file: printable() keeps them from forging lines.
      auto list = [](const std::vector<std::string>& items) {
        std::string out;
        for (const std::string& item : items) out += (out.empty() ? "" : ", ") + printable(item);
        return out.empty() ? std::string("(none)") : out;
      };
      return "only through sbx's filtering proxy (started by sbx for each run, with a "
             "per-run credential); allowed: " +
             list(network.allowed_domains) + "; denied: " + list(network.denied_domains);
    }
  }
  return "unknown";
}

// `policy_file`: the real path of --policy, which resolution keeps read-only (or empty);
// `cache_data`: the project's cache of ":caches" (or empty).
void print_filesystem(const ResolvedPolicy& policy, const std::string& policy_file,
                      const std::string& cache_data) {
  if (policy.filesystem_kind == FilesystemKind::kUnrestricted) {
    std::cout << "  filesystem: unrestricted\n";
    return;
  }
  if (policy.filesystem_kind == FilesystemKind::kExternal) {
    std::cout << "  filesystem: owned by an outer sandbox (external)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  // sbx's own install, carved out of a writable root by resolution whatever the policy says.
  const std::vector<std::string> install = current_install_directories();
  auto is_install = [&install](const std::string& path) {
    return std::find(install.begin(), install.end(), path) != install.end();
  };
  for (const PathRule& rule : policy.rules) {
    const bool carved = rule.access == Access::kRead &&
                        rule_access(policy, parent_path(rule.path)) == Access::kWrite;
    std::string words = access_words(rule.access);
    if (carved && is_install(rule.path)) words = "sbx's install: read only (always)";
    if (carved && rule.path == policy_file) words = "policy file: read only (always)";
    if (!cache_data.empty() && rule.path == cache_data)
      words = "read and write (the project's toolchain caches)";
    rows.push_back({rule.path, words});
  }
  // No rule for "/" means everything not listed is denied; say so rather than leave it implied.
  if (rule_access(policy, "/") == Access::kDeny) rows.push_back({"(anything else)", "denied"});
  for (const ProtectedPath& path : policy.protected_paths) {
    if (is_install(path.path) || path.path == policy_file) continue;  // shown above
    rows.push_back(
        {path.path, path.exists ? "protected: read only" : "protected: cannot be created"});
  }
  for (const std::string& glob : policy.deny_globs) rows.push_back({glob, "denied (glob)"});
  std::cout << render_table(rows, "  ");
  if (policy.platform_defaults_readable)
    std::cout << "  (plus the platform files programs need to start, read only)\n";
  if (!policy.deny_globs.empty())
    std::cout << "  note: deny globs are expanded when the command starts; files created "
                 "later are not covered\n";
}

// Every /limits key: its value and how it holds here, or why it does not.
void print_limits(const ExplainReport& report) {
  std::cout << "limits (cgroups: " << printable(report.cgroups.reason) << "):\n";
  std::vector<std::vector<std::string>> rows;
  for (const LimitEnforcement& limit : report.limits) {
    rows.push_back(
        {limit.name, limit.value ? std::to_string(*limit.value) : "-", printable(limit.how)});
  }
  std::cout << render_table(rows, "  ");
}

// The policy's /environment and the names it removes here; never a value (they may be secrets).
void print_environment(const ExplainReport& report) {
  const EnvironmentPolicy& env = report.environment;
  auto list = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : ", ") + printable(item);
    return out.empty() ? std::string("(none)") : out;
  };
  std::vector<std::string> set_names;
  for (const auto& [name, value] : env.set) set_names.push_back(name);
  std::cout << "environment:\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"inherit:", std::string(to_string(env.inherit))});
  rows.push_back({"secrets kept (keep):", list(env.keep)});
  rows.push_back({"exclude:", list(env.exclude)});
  rows.push_back({"include only:", env.include_only.empty() ? "(any)" : list(env.include_only)});
  rows.push_back({"set:", list(set_names)});
  rows.push_back({"removed here:", list(report.environment_removed)});
  std::cout << render_table(rows, "  ");
}

// The policy's ":caches": each toolchain cache of the host, where it was found and what the
// command's tool is pointed at (<cache> standing for the project's writable cache), and the
// caches the backend mounts copy-on-write.
void print_caches(const ExplainReport& report) {
  if (!report.caches) return;
  const caches::CachePlan& plan = *report.caches;
  const caches::CopyOnWrite* cow = report.copy_on_write ? &*report.copy_on_write : nullptr;
  std::cout << "caches (project " << printable(plan.project)
            << ", <cache> = " << printable(plan.data) << "):\n";
  std::vector<std::vector<std::string>> rows;
  for (const caches::ToolCache& cache : plan.caches) {
    std::string to = "(no variable moves it: read only)";
    if (!cache.variable.empty()) {
      std::string value = caches::value_of(plan, cache, cow);
      if (const std::size_t at = value.find(plan.data); at != std::string::npos)
        value.replace(at, plan.data.size(), "<cache>");
      to = cache.variable + "=" + value;
    }
    rows.push_back(
        {cache.tool, cache.host_path + (cache.exists ? "" : " (none yet)"), cache.source, to});
  }
  std::cout << render_table(rows, "  ");
  if (cow != nullptr) {
    for (const CacheOverlay& overlay : cow->overlays)
      std::cout << "  copy-on-write: " << printable(overlay.path) << " (the project's layer "
                << printable(overlay.layers) << ")\n";
  }
  for (const std::string& path : plan.credentials_denied)
    std::cout << "  credentials denied: " << printable(path) << '\n';
  for (const std::string& note : plan.notes) std::cout << "  note: " << printable(note) << '\n';
  std::cout << "  how: " << caches::how_text(cow != nullptr) << '\n';
}

// Which scope decided what (settings.hpp), the excluded commands and the locks that apply.
void print_settings(const ExplainReport& report) {
  const SettingsSummary& settings = report.settings;
  auto list = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& item : items) out += (out.empty() ? "" : ", ") + printable(item);
    return out.empty() ? std::string("(none)") : out;
  };
  std::cout << "settings:\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"policy decided by:", settings.policy_scope});
  rows.push_back({"sandbox decided by:", settings.sandbox_scope});
  rows.push_back({"unsandboxed runs:", settings.escape_hatch_locked ? "locked by the administrator"
                                       : settings.unsandboxed_permitted ? "permitted"
                                                                        : "not permitted"});
  if (settings.require_backend_available)
    rows.push_back({"backend:", "required by the administrator (no fallback without a sandbox)"});
  rows.push_back({"excluded commands:", list(settings.excluded_commands)});
  if (!report.excluded_by.empty()) {
    rows.push_back({"command matched:", list(report.excluded_by)});
    rows.push_back({"environment dropped:", list(report.environment_dropped)});
  }
  std::cout << render_table(rows, "  ");
  for (const std::string& note : settings.notes) std::cout << "  note: " << printable(note) << '\n';
}

void print_text(const ExplainReport& report, const std::string& policy_file) {
  std::vector<std::vector<std::string>> rows;
  if (report.decision) {
    rows.push_back({"should sandbox:",
                    (report.decision->sandbox ? "yes - " : "no - ") + report.decision->reason});
  } else {
    rows.push_back({"should sandbox:", "refused - " + report.decision_error});
  }
  rows.push_back({"preference:", std::string(to_string(report.preference))});
  std::string needs;
  for (const std::string& name : capability_names(report.required))
    needs += (needs.empty() ? "" : ", ") + name;
  rows.push_back({"needs:", needs.empty() ? "nothing" : needs});
  rows.push_back({"available backend:", report.choice.backend
                                            ? *report.choice.backend + " - " + report.choice.reason
                                            : "none - " + report.choice.reason});
  rows.push_back({"final:", final_backend(report)});
  std::cout << render_table(rows);
  if (!report.choice.passed_over.empty()) {
    std::cout << "passed over:\n";
    std::vector<std::vector<std::string>> passed;
    for (const PassedOver& item : report.choice.passed_over)
      passed.push_back({item.backend, item.reason});
    std::cout << render_table(passed, "  ");
  }
  std::cout << "policy (cwd " << printable(report.policy.cwd) << "):\n";
  print_filesystem(report.policy, policy_file, report.caches ? report.caches->data : "");
  std::cout << "  network: " << network_words(report.policy.network) << '\n';
  for (const std::string& limit : explained_network_limits(report))
    std::cout << "  network limit: " << limit << '\n';
  print_caches(report);
  print_limits(report);
  print_environment(report);
  print_settings(report);
}

int run_explain(const ExplainOptions& options, const GlobalOptions& globals) {
  Result<std::optional<SandboxPreference>> preference = sandbox_choice(options.sandbox);
  if (!preference.ok()) return fail(preference.failure(), "use --sandbox auto, require or forbid");
  Result<settings::BackendRequest> backends = backend_request(globals);
  if (!backends.ok()) return fail(backends.failure());
  Result<PreparedRequest> input =
      load_policy(options.policy, RunChoices{*preference, false, std::move(*backends)});
  if (!input.ok()) return fail(input.failure());
  const GlobalOptions chosen = with_backends(globals, input->decided.backends);
  Result<PluginRegistry> registry = load_registry(chosen);
  if (!registry.ok()) return fail(registry.failure());
  const Manager manager(*registry, chosen.backends, input->policy_file);
  ExplainReport report =
      explain_run(input->policy, input->resolved, input->decided.sandbox.value, manager,
                  current_environment(), options.command, input->settings);
  explain_caches(report, std::move(input->caches));
  if (options.json) {
    std::cout << explain_to_json(report, JsonStyle::kPretty) << '\n';
  } else {
    print_text(report, input->policy_file);
  }
  return 0;
}

}  // namespace

void add_sandbox_option(CLI::App& app, std::string& sandbox) {
  app.add_option("--sandbox", sandbox,
                 "auto: sandbox when the policy needs it; require: always; forbid: never "
                 "(refused for a policy with deny entries, and when the administrator locks "
                 "unsandboxed runs). Default: the settings' \"sandbox\", else auto")
      ->check(CLI::IsMember({"auto", "require", "forbid"}))
      ->type_name("MODE");
}

Command register_explain(CLI::App& app, const GlobalOptions& globals) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* sub = app.add_subcommand(
      "explain",
      "Answer the two questions for a policy: should the command be sandboxed, and "
      "which backend is available here (with why others were passed over)");
  add_policy_options(*sub, options->policy);
  add_sandbox_option(*sub, options->sandbox);
  sub->add_flag("--json", options->json,
                "Print JSON with should_sandbox, reason, required_capabilities, "
                "available_backend, final, passed_over, policy, settings, excluded_by and "
                "environment_dropped");
  sub->add_option("command", options->command,
                  "Optional, after --: a command, to tell whether it is an excluded command")
      ->type_name("CMD [ARG...]");
  sub->footer(
      "Examples:\n  sbx explain\n  sbx explain --preset read-only --network enabled\n"
      "  sbx --backends landlock explain --sandbox require --json\n"
      "  sbx explain -- docker ps");
  return {sub, [options, &globals] { return run_explain(*options, globals); }};
}

}  // namespace sbx::cli
