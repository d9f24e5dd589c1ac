// One run of a command under a policy, from the policy to the report: the one pipeline that
// `sbx exec`, `sbx explain`, `sbx debug` and the C API (sbx/sbx.h) adapt. It owns
//  - the two questions (should_sandbox, then Manager::available_backend when a sandbox is
//    wanted), asking may_run_unsandboxed (manager.hpp) before anything runs without one;
//  - the plan (Manager::plan_run, which starts sbx's own proxy for network mode proxy and keeps
//    it until the command has exited);
//  - the run: resource limits (run_limits.hpp), the stderr capture for the denial
//    classification (denial.hpp), the protected names the command created (created_names.hpp)
//    and the proxy's refusals, all recorded in one RunReport (run_report.hpp;
//    exec_report_to_json in report_json.hpp writes it for both front ends).
// The front ends keep only their words: how they phrase a stop, and what they print while the
// command runs (the callbacks of RunRequest).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sbx/core/caches.hpp"
#include "sbx/core/context.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/request.hpp"
#include "sbx/core/run_io.hpp"
#include "sbx/core/run_limits.hpp"
#include "sbx/core/run_report.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// Where a run gets its backends. A front end loads plugins its own way (the CLI only when a
// sandbox is wanted, and the preferred backend alone first; the C API once per handle); each
// manager returned stays valid while this object lives.
class RunBackends {
 public:
  virtual ~RunBackends() = default;
  // The manager over every backend the caller allows, in its preference order (question 2).
  virtual Result<const Manager*> all() = 0;
  // A manager over `backend` alone (the start-up fast path of the default order: each further
  // plugin costs about a millisecond of start-up); nullptr when the caller named its own
  // backends or `backend` is not loaded. The run then asks all(), with the same outcome.
  virtual const Manager* only(const std::string& backend) {
    (void)backend;
    return nullptr;
  }
  // Held while the run plans (questions 1 and 2, the transform): the backends' probe() and
  // transform() are called from one thread at a time (sbx/sdk/backend.hpp), exec() is not (ABI
  // 2.1). A front end whose backends serve several runs at once (a C API handle) returns its
  // lock; the default holds nothing.
  virtual std::unique_lock<std::mutex> planning_lock() { return {}; }
};

// What a front end asks to run.
struct RunRequest {
  Policy policy;                         // the full form
  ResolvedPolicy resolved;               // resolved against `cwd`
  std::string cwd;                       // the command's working directory (absolute)
  std::vector<std::string> command;      // argv as given; argv[0] is found like a shell would
  std::vector<std::string> environment;  // the caller's; the policy's /environment applies
  SandboxPreference preference = SandboxPreference::kAuto;
  // When a sandbox is wanted but none is available, run without one; never for a policy that
  // never_unsandboxed names.
  bool allow_unsandboxed = false;
  // Copy the command's stderr through a pipe (it still reaches this process's stderr) and keep
  // the last 64 KiB in RunReport::stderr_tail for the denial classification. Only without
  // `stdio` (which says it per stream: StdioSpec::tail).
  bool capture_stderr = false;
  // The command's stdin, stdout and stderr (run_io.hpp), made by the front end before the run;
  // null: this process's own. The run finishes it (RunStdio::finish) before it returns, whether
  // the command ran or not, so the caller's pipe ends see end of file.
  std::shared_ptr<RunStdio> stdio{};
  // Ends the run early, whole (the caller's cancel, a time-out): RunEnd in the report as
  // error_kind cancelled or timed_out. Null: only the command's own end and the policy's limits.
  std::shared_ptr<RunControl> control{};
  // How the timeout ends the command (kRunOnly in a library: see LimitedRun::Signals).
  LimitedRun::Signals limit_signals = LimitedRun::Signals::kProcessWide;
  // Whether the signals sent to this process (SIGINT, SIGTERM, SIGHUP, ...) are the command's:
  // `sbx exec`, a transparent wrapper, passes them on to it (true). A library run (the C API)
  // leaves them to the embedding process (false, unless its caller asks): no handler, mask or
  // signalfd of the run takes them, and the caller ends the run through `control`.
  bool forward_signals = true;
  // What the settings scopes decided (settings.hpp). Its excluded_commands run without a
  // sandbox when excluded_command() says so; the rest is reported.
  SettingsSummary settings{};
  // The policy's ":caches" (PreparedRequest::caches): a sandboxed command gets each cache's
  // variable pointing at the project's cache (caches::apply_environment), set after the
  // policy's /environment, or, on a backend that mounts them copy-on-write
  // (caches::CopyOnWrite), at the host's own directories; the project's cache is not walked for
  // created names.
  std::optional<caches::CachePlan> caches{};
  // Network mode proxy: called on the proxy's thread for each refusal it keeps.
  std::function<void(const proxy::Refusal&)> on_refusal{};
  // Called once, before anything runs, when the command is about to run (or be planned)
  // without a sandbox because the caller allowed it although one was wanted: `wanted` says why
  // one was wanted, `choice` why none is available.
  std::function<void(const std::string& wanted, const BackendChoice& choice)>
      on_unsandboxed_override{};
};

// Where a run stopped before the command completed; kNone when it ran (or was planned).
enum class RunStop {
  kNone,
  kInvalidRequest,       // no command, or should_sandbox refused the preference
  kCommandNotFound,      // argv[0] was not found (exit 127)
  kBackendsUnavailable,  // the plugins could not be loaded
  kNoBackend,            // a sandbox is wanted, none is available, no accepted override
  kPlanRefused,          // the backend's transform (or sbx's proxy) refused the request
  kLimitsUnavailable,    // the resource limits could not be set up; nothing ran
  kCaptureUnavailable,   // the stderr capture could not be set up; nothing ran
  kRunFailed,            // the backend or the spawner failed; the command may not have completed
  kEndedEarly,  // RunRequest::control ended the run (report.exit: how the command ended, if it ran)
};

struct RunOutcome {
  RunReport report;
  RunStop stop = RunStop::kNone;
  std::string error;                   // the core's words for `stop` (a front end adds what to do)
  ErrorKind kind = kDefaultErrorKind;  // what sort of failure `stop` is (result.hpp)
  BackendChoice choice;                // question 2, when it was asked
  // kNoBackend: why this policy may never run unsandboxed, if that is why it did not.
  std::optional<std::string> never_unsandboxed;
  // plan_command: the plan that would run, the proxy's credential shown as "***".
  std::optional<ExecPlan> plan;

  // The exit status a front end gives: the command's own (ExitStatus::shell_code), 0 for a
  // plan, kExitNotFound when the command was not found, else kExitSbxFailure.
  int exit_code() const;
};

// Why `policy` may never run without a sandbox, even when the caller allows it, in words:
// may_run_unsandboxed's deny entry or network mode proxy. nullopt if neither.
std::optional<std::string> never_unsandboxed(const Policy& policy);

// What every run refuses in the policy itself, whichever backend would run it: a sandbox
// preference the policy cannot have (`forbid` with deny entries or network mode proxy;
// should_sandbox), a network-mode proxy policy that names its own proxy_ports
// (proxy::policy_ports_refusal), and a limit that cannot hold on this host (`cgroups` as
// probe_cgroups() found it; `run_only` for an embedding process's run) and is not best-effort
// (check_limits_hold). `sbx exec` (also --dry-run), the C API and `sbx policy check` (with the
// settings' preference) call this one function, so `policy check` refuses what a run would.
Status check_policy_runnable(const Policy& policy, SandboxPreference preference,
                             const CgroupSupport& cgroups, bool run_only = false);

// The excluded-command pattern each part of `command` matches (command_patterns.hpp), when it
// is to run without a sandbox for that reason: the preference is auto, the settings permit
// unsandboxed runs, the policy has nothing only a sandbox can hold (never_unsandboxed) and
// every part matches. nullopt otherwise: the command runs as question 1 says. This matches
// names only: the run then verifies the programs a match would run (program_trust.hpp) and
// keeps the sandbox, saying why in the reason, when any could have been planted.
std::optional<std::vector<std::string>> excluded_command(const Policy& policy,
                                                         SandboxPreference preference,
                                                         const std::vector<std::string>& command,
                                                         const SettingsSummary& settings);

// Runs the command and waits: question 1 (with the excluded commands), argv[0], question 2,
// the plan, the run.
RunOutcome run_command(RunRequest request, RunBackends& backends);

// Exactly what run_command would run, without running it (`sbx exec --dry-run`,
// sbx_transform): RunOutcome::plan, report.dry_run set. In network mode proxy the proxy is
// started for the plan and stopped before this returns.
RunOutcome plan_command(RunRequest request, RunBackends& backends);

// The plan `backend` would run, whatever its probe says (`sbx debug`): through
// Manager::plan_run like every plan (sbx's proxy in network mode proxy), for showing only
// (PlanUse::kShowOnly: an absolute argv[0] is taken as given, for a plan meant for another OS).
// Stops with kCommandNotFound or kPlanRefused. The question-2 fields stay empty.
RunOutcome plan_for_backend(const Manager& manager, const std::string& backend,
                            const RunRequest& request);

// Both questions for a policy (`sbx explain`, sbx_explain): question 1, what the policy needs,
// question 2 (always probed), how each resource limit holds here, and the environment names
// the policy takes away from `environment`. A refused preference is recorded in
// decision_error, not returned as an error.
// With `command` (optional) and `settings`, question 1 also says whether the command is an
// excluded one (ExplainReport::excluded_by).
ExplainReport explain_run(const Policy& policy, const ResolvedPolicy& resolved,
                          SandboxPreference preference, const Manager& manager,
                          const std::vector<std::string>& environment,
                          const std::vector<std::string>& command = {},
                          const SettingsSummary& settings = {});

// The model-facing description of a run of `input` (`sbx context`, sbx_context,
// sbx_manager_context): question 1 with the request's sandbox preference says whether sbx
// enforces anything at all; with `manager`, question 2 names the backend that will run it on
// this host (its limits only, or why every run is refused); without, each backend's
// differences are labelled. The policy's ":caches" tools are listed.
SandboxContext context_for_run(const PreparedRequest& input, const Manager* manager);

// Sets the report's ":caches" (`plan`, the front end's PreparedRequest::caches) and, when the
// explained backend mounts them copy-on-write (its probe passes kCacheOverlayCheck), which of
// them it mounts (report.copy_on_write; nothing is made).
void explain_caches(ExplainReport& report, std::optional<caches::CachePlan> plan);

}  // namespace sbx
