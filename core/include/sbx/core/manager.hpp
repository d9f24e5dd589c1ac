// The two questions (core/src/run/README.md): should this be sandboxed
// (intent, pure) and which backend is available here (capability, by probing), then transform
// and exec through the chosen backend.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

enum class SandboxPreference { kAuto, kRequire, kForbid };
std::string_view to_string(SandboxPreference preference);
Result<SandboxPreference> parse_sandbox_preference(std::string_view text);

struct SandboxDecision {
  bool sandbox = true;
  std::string reason;
};

// Question 1, pure. auto: proxy network => sandbox; restricted network => sandbox unless the
// filesystem is external; enabled network => sandbox only if writes are restricted.
// forbid on a policy with a deny entry is an Error (such a policy never runs unsandboxed).
Result<SandboxDecision> should_sandbox(const Policy& policy, SandboxPreference preference);

// The first deny entry, described for a person ("path '~/.ssh'", "glob '**/*.pem'"); nullopt if
// there is none.
std::optional<std::string> first_deny(const Policy& policy);

// Why a command would run without a sandbox.
enum class BareIntent {
  kNothingToEnforce,  // question 1 with auto: the policy leaves nothing to enforce
                      // (danger-full-access; network enabled, filesystem not restricted)
  kCallerForbids,     // --sandbox forbid
  kExcludedCommand,   // an excluded command of the settings (run.hpp, excluded_command)
  kOverride,          // a sandbox is wanted, none is available, and the caller allowed running
                      // without one (--allow-unsandboxed, SBX_EXEC_ALLOW_UNSANDBOXED)
  kNoBackend,         // a sandbox is wanted, none is available, and no override
};

// may_run_unsandboxed's answer, with what in the policy only a sandbox can hold.
struct BareVerdict {
  bool allowed = false;
  std::optional<std::string> deny;  // the first deny entry (first_deny): the denied paths
                                    // would be readable without a sandbox
  bool proxy = false;  // network mode proxy: the domain rules would not apply, the command
                       // would have the whole network
};

// The one "never unsandboxed" rule. A command runs without a sandbox only when the caller
// allowed it explicitly (kOverride, kCallerForbids, kExcludedCommand) or question 1 found nothing
// to enforce (kNothingToEnforce), and never when the policy has a deny entry or network mode
// proxy; a sandbox that is wanted and not available (kNoBackend) never means running without
// one. should_sandbox (question 1), the run's "none available" step and excluded_command all
// ask this function.
BareVerdict may_run_unsandboxed(const Policy& policy, BareIntent intent);

// What a backend must be able to enforce for this policy.
CapabilitySet required_capabilities(const ResolvedPolicy& policy);

// How long a backend's probe may take before the backend counts as unavailable.
inline constexpr std::chrono::milliseconds kProbeDeadline{10'000};

// Calls backend.probe(); plugin code is not trusted to behave. It runs in a forked child
// (core/src/plugins/probe_isolation.cpp; in process on Windows): an exception, a crash ("probe
// crashed with SIGSEGV") or no answer by the deadline ("probe did not answer within 10 s") becomes
// an unavailable report naming it, never a crash or a hang of sbx. A probe that answers gives
// exactly its own report.
ProbeReport guarded_probe(Backend& backend, std::chrono::milliseconds deadline = kProbeDeadline);

// guarded_probe, always probing; the answer (when the backend says it may be kept) replaces
// the one kept for later runs (`sbx backends --probe`: diagnostics never show a kept answer,
// and they refresh it).
ProbeReport probe_and_keep(const LoadedPlugin& plugin);

// How long the isolated calls of a third-party plugin may take (plugins/README.md, "Third-party
// plugins run isolated"): its transform() (also when its exec's process makes the plan again),
// and its exec() once the run is to end (cancel, time-out): after that the process is killed
// and the run fails (exit 125) naming the backend.
struct PluginCallLimits {
  std::chrono::milliseconds transform{10'000};
  std::chrono::milliseconds exec_end{3'000};
};

// True when `report` passes kCacheOverlayCheck (sbx/sdk/backend.hpp): its backend mounts the
// toolchain caches it is given copy-on-write (TransformRequest::cache_overlays).
bool passes_cache_overlay(const ProbeReport& report);

struct PassedOver {
  std::string backend;
  std::string reason;
};

struct BackendChoice {
  std::optional<std::string> backend;  // nullopt: none available
  std::string reason;                  // why this one, or why none
  std::vector<PassedOver> passed_over;
  std::vector<std::pair<std::string, ProbeReport>> probes;  // every backend probed, in order
};

// One sandboxed command, ready to run: the backend's plan and, in network mode proxy, sbx's own
// filtering proxy started for this run. The proxy serves the command only while this object
// lives: keep it until the command has exited.
struct SandboxedRun {
  ExecPlan plan;
  std::unique_ptr<proxy::RunProxy> proxy;  // network mode proxy only, else null
};

// The default backend order: these first, in this order (those that are loaded), then every
// other loaded plugin by name. The first one is the run's start-up fast path on Linux
// (sbx/core/run.hpp).
inline constexpr std::string_view kDefaultBackendOrder[] = {"bwrap", "landlock", "seatbelt",
                                                            "windows"};

// How the plans of `backend` write paths: kWindows for the windows backend, kPosix for the
// others. A plan of another style than this host's (kHostPathStyle) is another OS's: sbx shows
// it (`sbx debug`) but never looks its command up on this host.
inline PathStyle plan_path_style(std::string_view backend) {
  return backend == "windows" ? PathStyle::kWindows : PathStyle::kPosix;
}

// What a plan is for. A plan that will run must start an absolute path on this host; a plan
// that is only shown (`sbx debug`) may be meant for another OS (C:\... for windows).
enum class PlanUse { kRun, kShowOnly };

class Manager {
 public:
  // `preference`: backend names in the caller's order; empty = every loaded plugin, in
  // kDefaultBackendOrder.
  // `policy_file`: the real path of the file the policy was read from (resolve.hpp keeps it
  // read-only), so that a backend passed over for it is passed over with the file named.
  Manager(const PluginRegistry& registry, std::vector<std::string> preference,
          std::string policy_file = {});

  // Question 2: the first backend, in preference order, that is available and covers what the
  // policy needs; with the reason each other one was passed over.
  BackendChoice available_backend(const ResolvedPolicy& policy) const;

  // The plan of `backend` for the request, with the proxy's lifecycle: in network mode proxy it
  // first starts sbx's own proxy for this run (proxy::RunProxy: it refuses a policy that names
  // proxy_ports itself) and points the request at it. The one way to plan a sandboxed command
  // (sbx/core/run.hpp: `sbx exec`, `sbx debug`, the C API). `on_refusal` is called on the
  // proxy's thread for each refused connection. Errors never contain the proxy's credential.
  Result<SandboxedRun> plan_run(const std::string& backend, TransformRequest request,
                                std::function<void(const proxy::Refusal&)> on_refusal = {},
                                PlanUse use = PlanUse::kRun) const;

  // The backend's plan for a request as it is. Refuses network mode proxy: a proxy-mode request
  // built outside plan_run carries no proxy of sbx's running for it, and the backend would
  // confine the command to whatever port the request names.
  Result<ExecPlan> transform(const std::string& backend, const TransformRequest& request) const;
  // Runs a plan this backend's transform() made (its detail included) under `run`.
  Result<ExitStatus> exec(const std::string& backend, const ExecPlan& plan,
                          const RunServices& run) const;

  // Whether `backend` mounts the toolchain caches copy-on-write (its probe answer passes
  // kCacheOverlayCheck, sbx/sdk/backend.hpp): `sbx debug`'s plan of a named backend.
  bool copies_caches_on_write(const std::string& backend) const;

  // The backends considered, in order (unknown names are reported by available_backend).
  const std::vector<std::string>& order() const { return order_; }

  // A warm manager (the C API's handle) keeps each backend's probe answer after the first
  // available_backend that needs it, so a later run costs only the transform and the spawn.
  // Off by default: a CLI run asks once per process anyway. Every answer is kept, an
  // unavailable one too (it stays refused until reprobe: a kept answer never makes a run less
  // confined, since a plan the backend can no longer run fails, it does not run unsandboxed).
  // Not thread-safe: the caller serialises calls, as it must for the backends anyway.
  void keep_probe_answers(bool keep);
  // Forgets every kept answer and probes each backend of order() again now.
  void reprobe();

  // The CLI's runs: the answer of a backend whose probe says it may be kept
  // (kKeepableProbeCheck) is read from the per-user store of kept answers when one is there
  // under this process's key (no probe then: no fork, no trial sandbox), and written there after
  // a fresh probe (core/src/plugins/probe_store.hpp; core/src/plugins/README.md).
  // Off by default. A store that is missing, foreign, writable by others, a symlink,
  // malformed or for another key is as if there were none.
  void keep_probe_answers_between_runs(bool keep) { keep_between_runs_ = keep; }

  // The limits of third-party plugins' isolated calls (tests shorten them).
  void set_plugin_call_limits(PluginCallLimits limits) { call_limits_ = limits; }

 private:
  Result<ExecPlan> transform_unchecked(const std::string& backend, const TransformRequest& request,
                                       PlanUse use = PlanUse::kRun) const;

  // The answer of `plugin`'s probe: the kept one when answers are kept, else a fresh one.
  ProbeReport probe_answer(const LoadedPlugin& plugin) const;
  // A probe (guarded_probe), or with keep_probe_answers_between_runs the answer an earlier run
  // kept (a probe, kept, when there is none).
  ProbeReport probe_or_reuse(const LoadedPlugin& plugin) const;

  const PluginRegistry& registry_;
  std::vector<std::string> order_;
  std::string policy_file_;
  bool keep_probe_answers_ = false;
  bool keep_between_runs_ = false;
  PluginCallLimits call_limits_;
  // Kept probe answers by backend name (keep_probe_answers); filled by const available_backend.
  mutable std::unordered_map<std::string, ProbeReport> kept_probes_;
};

}  // namespace sbx
