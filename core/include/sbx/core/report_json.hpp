// JSON rendering of what the CLI and embedders report: probe reports, the backend listing, the
// two questions (explain), execution plans, a finished run, and the resolved policy. The shapes
// are a stable, documented contract (core/cli/README.md); keys are never dropped, absent values
// are null. Pure: nothing here touches the OS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/caches.hpp"
#include "sbx/core/caller.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/permissions.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/run_limits.hpp"
#include "sbx/core/run_report.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

enum class JsonStyle {
  kPretty,   // two-space indentation, one key per line: for people
  kCompact,  // one line: for logs and the last line of `exec --json`
};

// One row of `sbx backends`: a loaded plugin and, when it was probed, its report.
struct BackendListing {
  std::string name;
  std::string version;
  std::string description;
  std::string path;
  std::optional<ProbeReport> probe;  // nullopt: not probed (available/checks/... are null)
  std::string abi{};                 // the plugin ABI it was built for, "2.1" (plugin_abi)
};

// {"abi":"2.2","backends":[{"name","version","abi","description","path","available","summary",
//   "checks":[{"name","status","observed","remedy"}],"capabilities":[...]}],
//  "rejected":[{"path","stage","message"}]}, plus "cgroups":{"available","kind","parent",
//  "reason"} when `cgroups` is given (what holds the resource limits of every backend's runs)
//  and "plugin_loading":{"mode","reason"} when `loading` is given (how the plugins were loaded:
//  mode "descriptor" or "path", see LoadingMode), and "container":{"verdict","markers",
//  "seccomp","seccomp_filters","no_new_privs","user_namespaces":{"allowed","observed","fix"},
//  "capabilities":{"effective","bounding","known"}} when `caller` is given (what confines the
//  process running sbx, see CallerConfinement).
std::string backends_to_json(const std::vector<BackendListing>& backends,
                             const std::vector<RejectedPlugin>& rejected, JsonStyle style,
                             const std::optional<CgroupSupport>& cgroups = std::nullopt,
                             const std::optional<PluginLoading>& loading = std::nullopt,
                             const std::optional<CallerConfinement>& caller = std::nullopt);

// {"available","summary","checks":[...],"capabilities":[...]}
std::string probe_report_to_json(const ProbeReport& report, JsonStyle style);

// What the settings scopes (settings.hpp) decided for a run: which scope set the policy and the
// sandbox preference, and what they allow. The built-in values are those of a run without any
// settings file.
struct SettingsSummary {
  std::string policy_scope = "built-in";  // settings::to_string(Scope)
  std::string sandbox_scope = "built-in";
  bool unsandboxed_permitted = true;       // may a run go without a sandbox (excluded commands)
  bool escape_hatch_locked = false;        // the administrator's lock allow_unsandboxed: false
  bool require_backend_available = false;  // the administrator's lock of that name
  std::vector<std::string> excluded_commands{};  // the patterns in effect
  std::vector<std::string> notes{};              // e.g. an untrusted project file was skipped
  // Untrusted .sbx/settings.json files that were not read (settings.hpp), nearest first.
  std::vector<std::string> ignored_project_files{};
  // The backend order a run considers (empty: the default order) and the scope that chose it,
  // and the plugin directories searched after the install's own (settings.hpp, "backends").
  std::vector<std::string> backend_order{};
  std::string backend_order_scope = "built-in";
  std::vector<std::string> plugin_dirs{};
};

// Everything `sbx explain` decides. `decision` is nullopt when should_sandbox refused the
// preference (e.g. forbid on a policy with deny entries); `decision_error` then says why.
struct ExplainReport {
  SandboxPreference preference = SandboxPreference::kAuto;
  std::optional<SandboxDecision> decision;
  std::string decision_error;
  CapabilitySet required;
  BackendChoice choice;
  ResolvedPolicy policy;
  // How each resource limit of the policy holds for a run here (run_limits.hpp).
  CgroupSupport cgroups{};
  std::vector<LimitEnforcement> limits{};
  // The policy's /environment and the names it takes away from this process's environment
  // (environment.hpp; never the values).
  EnvironmentPolicy environment{};
  std::vector<std::string> environment_removed{};
  SettingsSummary settings{};
  // The excluded-command pattern each part of the command matched (command_patterns.hpp), when
  // a command was given and it runs without a sandbox for that reason; else empty.
  std::vector<std::string> excluded_by{};
  // The environment variables such a command would not get, by name (never a value): what its
  // reset drops (program_trust.hpp reset_environment) and what the policy's /environment
  // removed before (environment_removed: secrets, withheld LD_* names, "(empty name)");
  // empty when it is not excluded.
  std::vector<std::string> environment_dropped{};
  // The policy's ":caches" (resolve.hpp Resolution::caches), set by the front end from its
  // PreparedRequest; nullopt when the policy has none.
  std::optional<caches::CachePlan> caches{};
  // Which of them the explained backend mounts copy-on-write (explain_caches, run.hpp);
  // nullopt when it points every tool at the project's cache instead.
  std::optional<caches::CopyOnWrite> copy_on_write{};
};

// `sbx cache list --json`: {"base": path, "projects": [{"project" (null when unknown),
// "project_exists", "key", "directory", "bytes", "files"}]}.
std::string cache_list_to_json(const std::string& base,
                               const std::vector<caches::ProjectCache>& projects);

// `sbx backends --verify NAME` (core/cli/verify.cpp; what each capability means and how it is
// attacked: sdk/CAPABILITIES.md). One attack: a real `sbx exec` forced onto the backend.
enum class AttackResult {
  kPass,          // the sandbox did what the capability promises
  kFail,          // it did not: `observed` is the evidence
  kInconclusive,  // the attack proves nothing here (the call fails outside a sandbox too)
};
std::string_view to_string(AttackResult result);

struct VerifyAttack {
  std::string name;      // short id, e.g. "write_outside_root"
  std::string command;   // the sbx command line that ran it, shell-quoted
  std::string expected;  // what a sandbox enforcing the capability does
  std::string observed;  // what happened: the command's report and what the kit saw on the host
  AttackResult result = AttackResult::kFail;
};

enum class VerifyStatus {
  kVerified,      // declared, every attack passed (none failed, at least one passed)
  kFailed,        // declared, an attack failed
  kInconclusive,  // declared, no attack could prove anything here
  kNotDeclared,   // not declared: not attacked
};
std::string_view to_string(VerifyStatus status);

struct VerifyCapability {
  Capability capability = Capability::kWriteRestriction;
  VerifyStatus status = VerifyStatus::kNotDeclared;
  std::string policy;  // the policy of its attacks (compact JSON); empty when not declared
  std::vector<VerifyAttack> attacks;
};

struct VerifyReport {
  std::string backend;
  std::string version;
  bool available = false;
  std::string summary;  // the probe's
  CapabilitySet declared;
  std::vector<VerifyCapability> capabilities;  // every capability, in kAllCapabilities order
  bool verified = false;                       // every declared capability is verified
};

// {"backend","version","available","summary","declared":[...],"verified",
//  "capabilities":[{"capability","status","policy","attacks":[{"attack","command","expected",
//  "observed","result"}]}]}
std::string verify_report_to_json(const VerifyReport& report);

// The backend that would run the command: the chosen backend when the command should be
// sandboxed and one is available, otherwise "none".
std::string final_backend(const ExplainReport& report);

// The backend whose limits explain describes (network_limits): the available one, whether or
// not question 1 sandboxes; "" when none is available (every backend's, labelled).
std::string explained_backend(const ExplainReport& report);

// network_limits for explain: the available backend's, else those of the backends passed over
// (`--backends landlock` says nothing of bwrap).
std::vector<std::string> explained_network_limits(const ExplainReport& report);

// {"preference","should_sandbox","reason","required_capabilities","available_backend",
//  "available_reason","final","passed_over":[{"backend","reason"}],"policy":{...},
//  "network_limits":[string] (network_limits in context.hpp),
//  "cgroups":{"available","kind","parent","reason"},"limits":[{"name","value","enforced","how"}],
//  "environment":{"inherit","keep","exclude","include_only","set":[names],"removed":[names]},
//  "settings":{"policy_scope","sandbox_scope","unsandboxed_permitted","escape_hatch_locked",
//   "require_backend_available","excluded_commands":[patterns],"notes":[string],
//   "ignored_project_files":[path]},
//  "excluded_by":[pattern per part of the command],"environment_dropped":[names],
//  "caches":null|{"project","directory","writable","how","copy_on_write":[{"path","layers"}],
//   "tools":[{"tool","host_path","exists","source","variable","value"}],
//   "credentials_denied":[path],"notes":[string]}}
// (set lists only the names: a value may be a secret the policy sets on purpose)
// should_sandbox is null when the decision was an error (reason then holds the error).
std::string explain_to_json(const ExplainReport& report, JsonStyle style);

// {"backend","argv","env","cwd","notes","host_paths","windows"}; backend null for a plan run
// without a sandbox. notes are text for people; host_paths is ExecPlan::host_paths as
// {"created":[...],"kept":[...],"state_dir":"..."}; windows is ExecPlan::windows as
// {"token":{"disable_max_privilege","lua_token","write_restricted","restricting_sids":[...],
// "default_dacl":[...]},"create_dirs":[...],"aces":[{"kind","sid","path"}],
// "kill_on_job_close"}, or null for a plan without a Windows part.
std::string plan_to_json(const std::optional<std::string>& backend, const ExecPlan& plan,
                         JsonStyle style);

// {"should_sandbox","reason","backend","final","allow_unsandboxed_used","dry_run",
//  "exit":{"code","signal","shell_code"}|null,"error":string|null,
//  "protected_names_created":[path...],"protected_names_truncated":bool,
//  "protected_names_unreadable":[path...],
//  "limit_hit":string|null,"excluded_by":[pattern...],"environment_dropped":[name...]}
std::string run_to_json(const RunReport& report, JsonStyle style);

// Which keys the exec report has beyond run_to_json's.
enum class ExecReportKeys {
  kCli,             // `sbx exec --json`: denial, network_refusals, network_refusals_total
  kWithStderrTail,  // sbx_exec: the same plus "stderr_tail" (string, or null when not captured)
};

// The one report of a finished (or refused) run, shared by `sbx exec --json` and sbx_exec, as
// one compact line: run_to_json's keys, then "denial" (denial_to_json's object for the
// command's exit status and stderr tail; null when the command did not run), ["stderr_tail"],
// "network_refusals" (the refusals the proxy kept, each refusals_to_json's object plus
// "kind":"proxy", then the backend's: {"kind":"unix","path"} and {"kind":"ip","address"}; []
// when there were none) and "network_refusals_total" (every refusal, kept or not).
std::string exec_report_to_json(const RunReport& report, ExecReportKeys keys);

// {"filesystem_kind","rules":[{"path","access"}],"platform_defaults_readable",
//  "protected_paths":[{"path","writable_root","exists","is_directory"}],"deny_globs":[...],
//  "network":{"mode","proxy_ports","allowed_domains","denied_domains","unix_sockets",
//  "allow_local_binding"},"cwd"}
std::string resolved_policy_to_json(const ResolvedPolicy& policy, JsonStyle style);

// {"recorded":bool,"policy":object|null,"dropped":[string]} (`sbx policy approve`,
// sbx_policy_approve), in policy_to_json's layout (no final newline); "policy" is
// policy_to_json's object.
std::string approval_to_json(const Approval& approval);

}  // namespace sbx
