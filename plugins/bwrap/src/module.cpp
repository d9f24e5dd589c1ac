// sbx-backend-bwrap: the thin module around the translator. probe() reports what this host
// allows; transform() gathers the host facts the pure translator needs and keeps the typed plan
// in the plan's detail (plan.hpp); exec() runs that typed plan with its own spawner (signals go
// to the sandbox's PID 1, not to bwrap; launch_form.hpp) and removes the mount points bwrap had
// to create on the host.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sbx/bwrap/host.hpp"
#include "sbx/bwrap/plan.hpp"
#include "sbx/bwrap/spawn.hpp"
#include "sbx/bwrap/translate.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "sbx/sdk/plugin.hpp"
#include "write_layer.hpp"

namespace sbx::bwrap {
namespace {

// sbx-stage2 scopes abstract unix sockets with a Landlock domain when the kernel has ABI 6+.
// With the network enabled the sandbox shares the host's network namespace, so below ABI 6 the
// host's abstract unix sockets stay reachable: the plan says so.
std::optional<std::string> abstract_unix_scope_note() {
  constexpr unsigned long kLandlockCreateRulesetVersion = 1;
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kLandlockCreateRulesetVersion);
  if (abi >= 6) return std::nullopt;
  return "Landlock ABI " + std::to_string(abi < 0 ? 0 : abi) +
         " (< 6): abstract unix sockets are not scoped; with the network enabled the command can "
         "reach the host's abstract unix sockets";
}

// sbx-stage2's write layer (linux/landlock/write_layer.hpp) needs Landlock ABI 2: below it, FIFOs
// and unix sockets of the host outside the writable roots stay writable, and the plan says so.
std::optional<std::string> write_layer_note(const Translation& translation) {
  if (!translation.plan.write_layer) return std::nullopt;
  constexpr unsigned long kLandlockCreateRulesetVersion = 1;
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kLandlockCreateRulesetVersion);
  if (abi >= stage2::kWriteLayerMinAbi) return std::nullopt;
  return "Landlock ABI " + std::to_string(abi < 0 ? 0 : abi) +
         " (< 2): no write layer; host FIFOs outside the writable roots stay writable (a "
         "read-only mount does not stop writes to a FIFO)";
}

// "/a/b/c" -> appends "/a", "/a/b".
void append_ancestors(const std::string& path, std::vector<std::string>& out) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1))
    out.push_back(path.substr(0, slash));
}

class BwrapBackend final : public Backend {
 public:
  explicit BwrapBackend(HostServices host) : Backend(host) {}

  ProbeReport probe(const ProbeContext& /*context*/) override {
    Result<std::string> state = ensure_state_dir();
    ProbeReport report =
        run_probe(std::string(host().stage2_path()), state.ok() ? *state + "/probe.cache" : "");
    for (const ProbeCheck& c : report.checks) {
      if (c.name == "proc_mount") can_mount_proc_ = c.status == CheckStatus::kPass;
    }
    // Every run is watched by the unix-socket supervisor (unix_supervisor.hpp): without it bwrap
    // cannot keep host unix sockets out, so it is not offered at all.
    if (const std::string missing = unix_supervisor_unavailable(); !missing.empty()) {
      report.available = false;
      report.summary = "bwrap: " + missing + ": host unix sockets could not be kept out";
      report.checks.push_back(
          ProbeCheck{"unix_supervisor", CheckStatus::kFail, missing, "use Linux 5.6 or later"});
    } else if (report.available) {
      // Listed host sockets only, pathname and abstract, in every network mode (enabled too).
      report.capabilities.add(Capability::kUnixSocketAllowlist);
      report.capabilities.add(Capability::kUnixSocketBlock);
    }
    // Proxy-only network rests on what network_block does (an empty network namespace and the
    // seccomp filter) plus sbx-stage2's relay, which needs nothing more from the host.
    if (report.capabilities.has(Capability::kNetworkBlock))
      report.capabilities.add(Capability::kProxyNetwork);
    // Without a private state directory bwrap still runs (the mounts do not depend on it), but
    // nothing may remove a mount point: without the registry a run could not tell whether
    // another one still relies on it. So they stay on the host, and the probe says so.
    if (!state.ok()) {
      report.checks.push_back(ProbeCheck{
          "state_dir", CheckStatus::kWarn,
          state.error() + "; mount points made for missing protected names stay on the host",
          "give this user a private runtime directory ($XDG_RUNTIME_DIR, /run/user/<uid>) or a "
          "home directory for ~/.cache/sbx outside shared directories such as /tmp"});
    } else {
      // Without the state directory the answer carries a warning that a later run may not
      // deserve: only an answer with it is kept.
      mark_keepable(report);
    }
    return report;
  }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    try {
      return transform_unguarded(request);
    } catch (const std::exception& e) {
      return Error{std::string("bwrap: transform failed: ") + e.what()};
    }
  }

  Result<ExitStatus> exec(const ExecPlan& plan, const RunContext& run) override {
    MountRegistry registry;
    // No state directory (the plan says so): no registry, and no mount point is removed; the
    // mount points made anyway are warned of, once, with the reason and what to do.
    std::vector<std::string> unrecorded;
    if (Status held = hold_host_paths(registry, plan.host_paths, &unrecorded); !held.ok()) {
      // What was taken before the failure is given back now: the locks, and the mount points
      // this run made (removed when no other run holds them), not left for a later sweep.
      registry.release_and_cleanup();
      return held.failure().prefixed("bwrap: ");
    }
    if (const std::string warning = unrecorded_mount_points_warning(plan, unrecorded);
        !warning.empty())
      host().log(SBX_LOG_WARN, "bwrap: " + warning);
    // Not host().spawn(): core would forward signals to bwrap, which dies of them (spawn.hpp).
    std::vector<UnixRefusal> refusals;
    std::string launched;
    Result<ExitStatus> status = spawn_bwrap(plan, run, &refusals, &launched);
    // What was started, for `--log-level debug` and for the tests that compare it with the
    // plan's "launch" (launch_form.hpp): the same JSON, plus the bind sources' descriptors.
    if (!launched.empty()) host().log(SBX_LOG_DEBUG, "bwrap: launched " + launched);
    // Before exec() returns: the host files them under this run's report.
    for (const UnixRefusal& refusal : refusals)
      run.report_network_refusal(refusal.kind, refusal.address);
    for (const std::string& removed : registry.release_and_cleanup())
      host().log(SBX_LOG_DEBUG, "bwrap: removed mount point " + removed);
    for (const std::string& why : registry.kept()) host().log(SBX_LOG_WARN, "bwrap: " + why);
    return status;
  }

 private:
  Result<ExecPlan> transform_unguarded(const TransformRequest& request) const {
    const ResolvedPolicy& policy = request.policy;
    HostFacts facts;
    Result<std::string> bwrap = find_trusted_bwrap(writable_roots(policy));
    if (!bwrap.ok()) return bwrap.failure();
    facts.bwrap_path = *bwrap;
    facts.stage2_path = std::string(host().stage2_path());
    Result<std::string> state = ensure_state_dir();
    PlanContext context;
    if (state.ok()) {
      facts.state_dir = *state;
      // Before the host is looked at: what killed runs left behind is removed first, so this
      // run's plan sees the host as it really is (and makes its own, recorded, mount points).
      std::vector<std::string> kept;
      for (const std::string& removed : sweep_stale_entries(facts.state_dir, &kept))
        host().log(SBX_LOG_DEBUG, "bwrap: removed a killed run's mount point " + removed);
      for (const std::string& why : kept) host().log(SBX_LOG_WARN, "bwrap: " + why);
    } else {
      context.no_state_dir_reason = state.error();
    }
    // probe() ran in a child (core isolates probes), so can_mount_proc_ is usually unset here:
    // the probe's cache answers without another throwaway sandbox.
    if (!can_mount_proc_.has_value() && state.ok())
      can_mount_proc_ = cached_proc_mount(facts.bwrap_path, facts.state_dir + "/probe.cache");
    if (!can_mount_proc_.has_value()) can_mount_proc_ = bwrap_can_mount_proc(facts.bwrap_path);
    facts.can_mount_proc = *can_mount_proc_;
    if (policy.filesystem_kind == FilesystemKind::kRestricted && !policy.deny_globs.empty()) {
      Result<std::vector<std::string>> matches = expand_deny_globs(policy.deny_globs);
      if (!matches.ok()) return matches.failure();
      facts.glob_matches = *matches;
    }
    std::vector<std::string> paths =
        paths_of_interest(policy, facts.state_dir, request.cache_overlays);
    // Matches and their ancestors: the ancestors below a writable root get pinned.
    for (const std::string& match : facts.glob_matches) {
      append_ancestors(match, paths);
      paths.push_back(match);
    }
    gather_path_facts(paths, facts);
    // A symlinked deny-glob match masks its target: the target's ancestors are looked up too,
    // so that those below a writable root get pinned like any carve-out's.
    std::vector<std::string> target_ancestors;
    for (const auto& [link, target] : facts.canonical) append_ancestors(target, target_ancestors);
    gather_path_facts(target_ancestors, facts);
    Result<Translation> translation = translate(request, facts);
    if (!translation.ok()) return translation.failure();
    context.state_dir = facts.state_dir;
    if (request.policy.network.mode == NetworkMode::kEnabled)
      context.network_note = abstract_unix_scope_note();
    context.write_layer_note = write_layer_note(*translation);
    // The launch exec() takes is decided here, with the plan, so that the plan shows it.
    context.launch_host = running_launch_host();
    return make_plan(request, std::move(*translation), context);
  }

  mutable std::optional<bool> can_mount_proc_;
};

}  // namespace
}  // namespace sbx::bwrap

SBX_DECLARE_BACKEND(sbx::bwrap::BwrapBackend, "bwrap", "0.1.0",
                    "bubblewrap namespaces + sbx-stage2 seccomp (Linux)")
