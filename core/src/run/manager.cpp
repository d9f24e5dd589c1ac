// The two questions and dispatch (see manager.hpp and core/src/run/README.md).
#include "sbx/core/manager.hpp"

#include <algorithm>
#include <array>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plugins/call_isolation.hpp"
#include "plugins/probe_store.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx {
namespace {

// ---------------------------------------------------------------------------------------------
// Question 1.

// The auto rules (documented on should_sandbox in manager.hpp), before the deny-entry override.
SandboxDecision auto_decision(const Policy& policy) {
  const FilesystemKind kind = policy.filesystem.kind;
  switch (policy.network.mode) {
    case NetworkMode::kProxy:
      return {true, "network goes through a proxy, so the command is sandboxed"};
    case NetworkMode::kRestricted:
      if (kind == FilesystemKind::kExternal)
        return {false,
                "the filesystem is external (an outer sandbox owns it), so the command is not "
                "sandboxed although the network is restricted"};
      return {true, "network is restricted, so the command is sandboxed"};
    case NetworkMode::kEnabled:
      if (kind == FilesystemKind::kRestricted)
        return {true, "network is enabled but writes are restricted, so the command is sandboxed"};
      return {false, "network is enabled and the filesystem is " + std::string(to_string(kind)) +
                         ", so there is nothing to enforce and the command is not sandboxed"};
  }
  return {true, "unknown network mode; sandboxing to be safe"};
}

// ---------------------------------------------------------------------------------------------
// What a policy needs enforced, with the rule behind each need (for "passed over" messages).

struct Needs {
  CapabilitySet capabilities;
  std::array<std::string, std::size(kAllCapabilities)> why;  // indexed like kAllCapabilities

  void add(Capability capability, std::string reason) {
    if (capabilities.has(capability)) return;  // the first rule that needs it is enough
    capabilities.add(capability);
    for (std::size_t i = 0; i < std::size(kAllCapabilities); ++i) {
      if (kAllCapabilities[i] == capability) {
        why[i] = std::move(reason);
        break;  // each capability is listed once: `reason` is moved at most once
      }
    }
  }
  const std::string& reason(Capability capability) const {
    std::size_t i = 0;
    while (i + 1 < std::size(kAllCapabilities) && kAllCapabilities[i] != capability) ++i;
    return why[i];
  }
};

// The parent directory of a normalised absolute path other than "/". A Windows drive path
// ends at its drive root, and the drive root's parent is "/" (every drive): "C:/a" -> "C:/",
// "C:/" -> "/". Anything without a '/' goes to "/" too, so every walk up ends.
std::string_view parent_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  if (slash == 2 && path[1] == ':')
    return path.size() == 3 ? std::string_view("/") : path.substr(0, 3);
  return path.substr(0, slash);
}

std::string carveout_text(const PathRule& inner, std::string_view outer, Access outer_access) {
  return "'" + inner.path + "' (" + std::string(to_string(inner.access)) + ") inside '" +
         std::string(outer) + "' (" + std::string(to_string(outer_access)) + ")";
}

// Write and read carve-outs: a narrower rule that takes away access a wider rule granted.
// Each rule's ancestors are looked up by path, so this is O(rules x depth), not quadratic.
void add_carveout_needs(const ResolvedPolicy& policy, Needs& needs) {
  std::unordered_map<std::string_view, Access> by_path;
  by_path.reserve(policy.rules.size());
  for (const PathRule& rule : policy.rules) by_path.emplace(rule.path, rule.access);
  for (const PathRule& inner : policy.rules) {
    if (inner.access == Access::kWrite) continue;
    for (std::string_view outer = inner.path; outer != "/" && !outer.empty();) {
      outer = parent_of(outer);
      const auto found = by_path.find(outer);
      if (found == by_path.end()) continue;
      const Access outer_access = found->second;
      // The first rule that needs a capability is the one messages name; skip building text
      // for the rest.
      if (outer_access == Access::kWrite && !needs.capabilities.has(Capability::kWriteCarveouts))
        needs.add(Capability::kWriteCarveouts, carveout_text(inner, outer, outer_access));
      if (inner.access == Access::kDeny && outer_access != Access::kDeny &&
          !needs.capabilities.has(Capability::kReadCarveouts))
        needs.add(Capability::kReadCarveouts, carveout_text(inner, outer, outer_access));
    }
  }
}

// The writable root around sbx's install directory `dir` when resolution carved `dir` out of
// it (a read rule at `dir` under a write rule); empty otherwise.
std::string install_carveout_root(const ResolvedPolicy& policy, const std::string& dir) {
  const bool read_rule =
      std::any_of(policy.rules.begin(), policy.rules.end(),
                  [&](const PathRule& r) { return r.path == dir && r.access == Access::kRead; });
  if (!read_rule || dir == "/") return {};
  const std::string parent(parent_of(dir));
  if (rule_access(policy, parent) != Access::kWrite) return {};
  std::string root;
  for (const PathRule& rule : policy.rules) {
    if (rule.access == Access::kWrite && path_is_within(parent, rule.path) &&
        rule.path.size() > root.size())
      root = rule.path;
  }
  return root;
}

// sbx's install kept read-only inside a writable root (resolve.hpp) needs write carve-outs; it
// is named first, with what to do, so a backend passed over for it (or a refused run) says why
// in words a person can act on.
void add_install_needs(const ResolvedPolicy& policy, Needs& needs) {
  // Without a write rule no install directory can have been carved out of a writable root
  // (install_carveout_root finds none), so the install is not looked up: for a libsbx.so that
  // lookup is a dladdr, a realpath and a stat and realpath of every install directory, on
  // every run of a read-only policy (resolution has already made the same lookup once).
  const bool any_write_rule =
      std::any_of(policy.rules.begin(), policy.rules.end(),
                  [](const PathRule& rule) { return rule.access == Access::kWrite; });
  if (!any_write_rule) return;
  for (const std::string& dir : current_install_directories()) {
    const std::string root = install_carveout_root(policy, dir);
    if (root.empty()) continue;
    needs.add(Capability::kWriteCarveouts,
              "sbx's install '" + dir + "', which lies inside the writable root '" + root +
                  "' and is always kept read-only so that the command cannot replace sbx's "
                  "code; install sbx outside the writable roots, or use a backend that can "
                  "carve out (bwrap)");
    return;
  }
}

// sbx's state directories kept read-only inside a writable root (resolve.cpp add_state_dirs)
// need write carve-outs too. A backend that cannot carve one out (Landlock) would let the
// command rename it away and plant a forged one for the next run, or write bwrap's registry
// and probe cache, so it is passed over; named with what to do, unless the install was named.
void add_state_dir_needs(const ResolvedPolicy& policy, Needs& needs) {
  if (needs.capabilities.has(Capability::kWriteCarveouts)) return;
  // Nothing can have been carved out without a write rule (as in add_install_needs).
  if (std::none_of(policy.rules.begin(), policy.rules.end(),
                   [](const PathRule& rule) { return rule.access == Access::kWrite; }))
    return;
  for (const std::string& dir : kept_probe::state_directories()) {
    // Carved out: a read rule at `dir` below a write rule (resolution refuses a writable root
    // at or inside a state directory, so a read rule there is never a downgraded one). Not
    // install_carveout_root's parent test: <cache>/sbx is carved out too, so the parent of
    // <cache>/sbx/proxy is read-only.
    const bool read_rule =
        std::any_of(policy.rules.begin(), policy.rules.end(),
                    [&](const PathRule& r) { return r.path == dir && r.access == Access::kRead; });
    if (!read_rule) continue;
    std::string root;
    for (const PathRule& rule : policy.rules) {
      if (rule.access == Access::kWrite && rule.path != dir && path_is_within(dir, rule.path) &&
          rule.path.size() > root.size())
        root = rule.path;
    }
    if (root.empty()) continue;
    needs.add(Capability::kWriteCarveouts,
              "sbx's state directory '" + dir + "', which lies inside the writable root '" + root +
                  "' and is always kept read-only so that the command cannot forge or end the "
                  "state later runs trust; every place where a run of this user may keep its "
                  "state must lie outside the writable roots (each runtime directory's sbx-*, "
                  "and ~/.cache/sbx or $XDG_CACHE_HOME/sbx, which a run without a private "
                  "runtime directory uses): choose writable roots that do not hold it, or use a "
                  "backend that can carve out (bwrap)");
    return;
  }
}

// The policy file kept read-only inside a writable root (resolve.hpp) needs write carve-outs
// too; named with what to do, unless sbx's install was already named.
void add_policy_file_needs(const ResolvedPolicy& policy, const std::string& policy_file,
                           Needs& needs) {
  if (policy_file.empty() || needs.capabilities.has(Capability::kWriteCarveouts)) return;
  const std::string root = install_carveout_root(policy, policy_file);
  if (root.empty()) return;
  needs.add(Capability::kWriteCarveouts,
            "the policy file '" + policy_file + "', which lies inside the writable root '" + root +
                "' and is always kept read-only so that the command cannot rewrite its own "
                "policy; keep the policy file outside the writable roots, or use a backend that "
                "can carve out (bwrap)");
}

void add_filesystem_needs(const ResolvedPolicy& policy, const std::string& policy_file,
                          Needs& needs) {
  if (policy.filesystem_kind != FilesystemKind::kRestricted) return;
  const auto root =
      std::find_if(policy.rules.begin(), policy.rules.end(),
                   [](const PathRule& rule) { return rule.access == Access::kWrite; });
  needs.add(Capability::kWriteRestriction,
            root == policy.rules.end()
                ? "the filesystem is restricted and nothing is writable"
                : "the filesystem is restricted: writes only under writable roots such as '" +
                      root->path + "'");
  if (reads_restricted(policy))
    needs.add(Capability::kReadRestriction, "no rule grants reading '/'");
  add_install_needs(policy, needs);
  add_state_dir_needs(policy, needs);
  add_policy_file_needs(policy, policy_file, needs);
  add_carveout_needs(policy, needs);
  if (!policy.protected_paths.empty())
    needs.add(Capability::kProtectedNames,
              "protected path '" + policy.protected_paths.front().path + "'");
  if (!policy.deny_globs.empty())
    needs.add(Capability::kDenyGlobs, "deny glob '" + policy.deny_globs.front() + "'");
}

void add_network_needs(const NetworkPolicy& network, Needs& needs) {
  if (network.mode == NetworkMode::kRestricted)
    needs.add(Capability::kNetworkBlock, "network mode restricted");
  if (network.mode == NetworkMode::kProxy)
    needs.add(Capability::kProxyNetwork, "network mode proxy");
  // Enabled means the internet, not the host's local services: a host unix socket (docker,
  // ssh-agent, D-Bus, tmux; pathname or abstract) is a way out of any sandbox, so it stays
  // closed unless listed. (Restricted and proxy modes close it with network_block and
  // proxy_network.)
  if (network.mode == NetworkMode::kEnabled)
    needs.add(Capability::kUnixSocketBlock,
              "network mode enabled: the host's unix sockets (pathname and abstract) stay closed "
              "unless network.unix_sockets lists them");
  // Listed sockets, in every mode: only a backend that tells them from the others may run it.
  if (!network.unix_sockets.empty())
    needs.add(Capability::kUnixSocketAllowlist,
              "unix socket '" + network.unix_sockets.front() + "' allowed");
  // Likewise listening on local ports: only a closed network needs a backend that offers it.
  if (network.mode != NetworkMode::kEnabled && network.allow_local_binding)
    needs.add(Capability::kLocalBinding, "network.allow_local_binding: listening on local ports");
}

Needs compute_needs(const ResolvedPolicy& policy, const std::string& policy_file = {}) {
  Needs needs;
  add_filesystem_needs(policy, policy_file, needs);
  add_network_needs(policy.network, needs);
  // The dangerous-syscall filter applies in every sandboxed mode: a sandbox without it would
  // leave kernel attack surface (e.g. namespace or keyring calls) that no path rule covers.
  // Read as "syscall_filter (needed for every sandboxed run: ...)".
  needs.add(Capability::kSyscallFilter,
            "every sandboxed run: sbx never runs a command in a sandbox without the "
            "dangerous-syscall filter, whatever the policy");
  return needs;
}

// ---------------------------------------------------------------------------------------------
// Question 2.

std::vector<std::string> default_order(const PluginRegistry& registry) {
  std::vector<std::string> order;
  for (std::string_view name : kDefaultBackendOrder) {
    if (registry.find(name) != nullptr) order.emplace_back(name);
  }
  std::vector<std::string> others;
  for (const LoadedPlugin& plugin : registry.plugins()) {
    if (std::find(order.begin(), order.end(), plugin.name) == order.end())
      others.push_back(plugin.name);
  }
  std::sort(others.begin(), others.end());
  order.insert(order.end(), others.begin(), others.end());
  return order;
}

std::vector<std::string> without_duplicates(std::vector<std::string> names) {
  std::vector<std::string> out;
  for (std::string& name : names) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

std::string file_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// Why `name` is not among the loaded plugins: a rejected file that looks like it, or a hint.
std::string not_loaded_reason(const PluginRegistry& registry, const std::string& name) {
  for (const RejectedPlugin& rejected : registry.rejected()) {
    if (file_name(rejected.path).find(name) != std::string::npos ||
        rejected.message.find("'" + name + "'") != std::string::npos)
      return "not loaded: " + rejected.message;
  }
  std::string loaded;
  for (const LoadedPlugin& plugin : registry.plugins())
    loaded += (loaded.empty() ? "" : ", ") + plugin.name;
  return "not loaded: no plugin named '" + name +
         "' in the trusted plugin directories (loaded: " + (loaded.empty() ? "none" : loaded) +
         "; see `sbx backends`)";
}

std::string missing_reason(CapabilitySet missing, const Needs& needs) {
  std::string text = "cannot enforce what the policy needs here: ";
  bool first = true;
  for (Capability capability : kAllCapabilities) {
    if (!missing.has(capability)) continue;
    text += (first ? "" : "; ") + std::string(to_string(capability)) + " (needed for " +
            needs.reason(capability) + ")";
    first = false;
  }
  return text;
}

std::string none_reason(const std::vector<PassedOver>& passed_over) {
  if (passed_over.empty()) return "no sandbox backend is loaded (see `sbx backends`)";
  std::string text = "no backend can enforce this policy here:";
  for (const PassedOver& entry : passed_over)
    text += " " + entry.backend + ": " + entry.reason + ".";
  return text;
}

// An absolute path on this host: "/..." on POSIX, "X:\..." (or "X:/...") on Windows, where
// UNC and device paths are never run.
bool host_absolute(const std::string& path) {
  if (kHostPathStyle == PathStyle::kWindows) return policy::winpath::is_drive_absolute(path);
  return !path.empty() && path.front() == '/';
}

Status validate_plan(const std::string& backend, const ExecPlan& plan) {
  if (plan.argv.empty() || !host_absolute(plan.argv[0]))
    return Error{"backend '" + backend +
                 "' returned a plan whose argv[0] is not an absolute path; this is a bug in "
                 "the backend"};
  return {};
}

}  // namespace

std::string_view to_string(SandboxPreference preference) {
  switch (preference) {
    case SandboxPreference::kAuto:
      return "auto";
    case SandboxPreference::kRequire:
      return "require";
    case SandboxPreference::kForbid:
      return "forbid";
  }
  return "unknown";
}

Result<SandboxPreference> parse_sandbox_preference(std::string_view text) {
  if (text == "auto") return SandboxPreference::kAuto;
  if (text == "require") return SandboxPreference::kRequire;
  if (text == "forbid") return SandboxPreference::kForbid;
  return Error{
      "invalid sandbox preference '" + std::string(text) + "': expected one of auto|require|forbid",
      ErrorKind::invalid_input};
}

std::optional<std::string> first_deny(const Policy& policy) {
  for (const PolicyEntry& entry : policy.filesystem.entries) {
    if (entry.access != Access::kDeny) continue;
    return entry.glob.empty() ? "path '" + entry.path + "'" : "glob '" + entry.glob + "'";
  }
  return std::nullopt;
}

BareVerdict may_run_unsandboxed(const Policy& policy, BareIntent intent) {
  BareVerdict verdict;
  // Nothing but a sandbox keeps the command away from what a deny entry denies, and without
  // one network mode proxy would mean the whole network, not the allowed domains.
  verdict.deny = first_deny(policy);
  verdict.proxy = policy.network.mode == NetworkMode::kProxy;
  // A sandbox that is wanted and not available never means running without one: the caller
  // has to say so (kOverride).
  verdict.allowed = intent != BareIntent::kNoBackend && !verdict.deny && !verdict.proxy;
  return verdict;
}

Result<SandboxDecision> should_sandbox(const Policy& policy, SandboxPreference preference) {
  if (preference == SandboxPreference::kRequire)
    return SandboxDecision{true, "the caller requires a sandbox (--sandbox require)"};
  if (preference == SandboxPreference::kForbid) {
    const BareVerdict bare = may_run_unsandboxed(policy, BareIntent::kCallerForbids);
    if (bare.proxy)
      return Error{
          "--sandbox forbid is not allowed: the policy allows the network only through "
          "sbx's proxy, and a policy with network mode proxy never runs unsandboxed "
          "(use --sandbox auto|require or another network mode)",
          ErrorKind::refused};
    if (bare.deny)
      return Error{"--sandbox forbid is not allowed: the policy denies " + *bare.deny +
                       ", and a policy with deny entries never runs unsandboxed (remove the deny "
                       "entries or use --sandbox auto|require)",
                   ErrorKind::refused};
    return SandboxDecision{false, "the caller forbids a sandbox (--sandbox forbid)"};
  }
  SandboxDecision decision = auto_decision(policy);
  if (decision.sandbox) return decision;
  const BareVerdict bare = may_run_unsandboxed(policy, BareIntent::kNothingToEnforce);
  if (bare.deny)
    return SandboxDecision{true, "the policy denies " + *bare.deny +
                                     ", and a policy with deny entries never runs unsandboxed, "
                                     "so the command is sandboxed"};
  // auto_decision sandboxes network mode proxy itself; kept here so that the rule is whole.
  if (bare.proxy)
    return SandboxDecision{true,
                           "the policy allows the network only through sbx's proxy, and "
                           "a policy with network mode proxy never runs unsandboxed, so "
                           "the command is sandboxed"};
  return decision;
}

CapabilitySet required_capabilities(const ResolvedPolicy& policy) {
  return compute_needs(policy).capabilities;
}

Manager::Manager(const PluginRegistry& registry, std::vector<std::string> preference,
                 std::string policy_file)
    : registry_(registry),
      order_(preference.empty() ? default_order(registry)
                                : without_duplicates(std::move(preference))),
      policy_file_(std::move(policy_file)) {}

BackendChoice Manager::available_backend(const ResolvedPolicy& policy) const {
  const Needs needs = compute_needs(policy, policy_file_);
  BackendChoice choice;
  for (const std::string& name : order_) {
    const LoadedPlugin* plugin = registry_.find(name);
    if (plugin == nullptr) {
      choice.passed_over.push_back({name, not_loaded_reason(registry_, name)});
      continue;
    }
    ProbeReport report = probe_answer(*plugin);
    choice.probes.emplace_back(name, report);
    if (!report.available) {
      choice.passed_over.push_back(
          {name,
           "unavailable: " + (report.summary.empty() ? "probe gave no reason" : report.summary)});
      continue;
    }
    const CapabilitySet missing = report.capabilities.missing_from(needs.capabilities);
    if (!missing.empty()) {
      choice.passed_over.push_back({name, missing_reason(missing, needs)});
      continue;
    }
    choice.backend = name;
    choice.reason = "'" + name + "' is the first backend in preference order that is available " +
                    "and can enforce everything the policy needs";
    return choice;
  }
  choice.reason = none_reason(choice.passed_over);
  return choice;
}

ProbeReport probe_and_keep(const LoadedPlugin& plugin) {
  ProbeReport report = guarded_probe(*plugin.backend);
  if (const std::optional<std::string> dir = kept_probe::current_store_dir())
    kept_probe::keep(*dir, plugin, report);
  return report;
}

// With keep_between_runs_: the answer an earlier run kept for this process's key, else a probe
// whose answer is kept when the backend says it may be. Without: a probe.
ProbeReport Manager::probe_or_reuse(const LoadedPlugin& plugin) const {
  if (!keep_between_runs_) return guarded_probe(*plugin.backend);
  const std::optional<std::string> dir = kept_probe::current_store_dir();
  if (!dir) return guarded_probe(*plugin.backend);
  if (std::optional<ProbeReport> kept = kept_probe::load(*dir, plugin)) return std::move(*kept);
  ProbeReport report = guarded_probe(*plugin.backend);
  kept_probe::keep(*dir, plugin, report);
  return report;
}

bool passes_cache_overlay(const ProbeReport& report) {
  return report.available &&
         std::any_of(report.checks.begin(), report.checks.end(), [](const ProbeCheck& c) {
           return c.name == kCacheOverlayCheck && c.status == CheckStatus::kPass;
         });
}

bool Manager::copies_caches_on_write(const std::string& backend) const {
  const LoadedPlugin* plugin = registry_.find(backend);
  return plugin != nullptr && plugin->abi_minor >= 3 && passes_cache_overlay(probe_answer(*plugin));
}

ProbeReport Manager::probe_answer(const LoadedPlugin& plugin) const {
  if (!keep_probe_answers_) return probe_or_reuse(plugin);
  const auto kept = kept_probes_.find(plugin.name);
  if (kept != kept_probes_.end()) return kept->second;
  ProbeReport report = probe_or_reuse(plugin);
  kept_probes_.emplace(plugin.name, report);
  return report;
}

void Manager::keep_probe_answers(bool keep) {
  keep_probe_answers_ = keep;
  if (!keep) kept_probes_.clear();
}

void Manager::reprobe() {
  kept_probes_.clear();
  if (!keep_probe_answers_) return;  // nothing is kept: every question probes afresh anyway
  for (const std::string& name : order_) {
    if (const LoadedPlugin* plugin = registry_.find(name)) (void)probe_answer(*plugin);
  }
}

Result<SandboxedRun> Manager::plan_run(const std::string& backend, TransformRequest request,
                                       std::function<void(const proxy::Refusal&)> on_refusal,
                                       PlanUse use) const {
  SandboxedRun run;
  if (request.policy.network.mode == NetworkMode::kProxy) {
    Result<std::unique_ptr<proxy::RunProxy>> started =
        proxy::RunProxy::start(request, std::move(on_refusal));
    if (!started.ok()) return started.failure();
    run.proxy = std::move(*started);
    // Belt and braces: the backend must see this run's proxy and nothing else.
    if (!run.proxy->serves(request))
      return Error{"internal error: the request does not point at the proxy started for it"};
  }
  Result<ExecPlan> plan = transform_unchecked(backend, request, use);
  if (!plan.ok()) {
    // A backend's message may quote the environment, which holds the credential.
    return Error{run.proxy ? proxy::redact(plan.error(), run.proxy->proxy().token()) : plan.error(),
                 plan.kind()};
  }
  run.plan = std::move(*plan);
  return run;
}

Result<ExecPlan> Manager::transform(const std::string& backend,
                                    const TransformRequest& request) const {
  if (request.policy.network.mode == NetworkMode::kProxy)
    return Error{
        "network mode proxy runs only through sbx's own proxy, started for the run "
        "(Manager::plan_run); this request carries none, so no backend is asked to "
        "confine the command to the port it names",
        ErrorKind::refused};
  return transform_unchecked(backend, request);
}

Result<ExecPlan> Manager::transform_unchecked(const std::string& backend,
                                              const TransformRequest& request, PlanUse use) const {
  const LoadedPlugin* plugin = registry_.find(backend);
  if (plugin == nullptr)
    return Error{"unknown backend '" + backend + "' (see `sbx backends`)",
                 ErrorKind::invalid_input};
  // A plugin built before ABI 2.3 never reads the caches to mount: it would point the tools at
  // host directories the sandbox keeps read-only (the run left their variables there).
  if (!request.cache_overlays.empty() && plugin->abi_minor < 3)
    return Error{"backend '" + backend + "' was built for sbx plugin ABI 2." +
                     std::to_string(plugin->abi_minor) +
                     ": it cannot mount the toolchain caches copy-on-write",
                 ErrorKind::backend_failure};
  // Third-party plugins in a child of their own (plugins/call_isolation.hpp); errors come back
  // worded, naming the backend.
  Result<ExecPlan> plan = plugin->isolated
                              ? plugins::transform_isolated(*plugin, request, call_limits_)
                              : plugins::transform_in_process(*plugin, request);
  if (!plan.ok()) return plan;
  // Only a plan that runs must start an absolute path here; one that is shown may be for
  // another OS, and nothing ever executes it.
  if (use == PlanUse::kRun) {
    if (Status valid = validate_plan(backend, *plan); !valid.ok())
      return valid.failure().as(ErrorKind::backend_failure);
  }
  return plan;
}

Result<ExitStatus> Manager::exec(const std::string& backend, const ExecPlan& plan,
                                 const RunServices& run) const {
  const LoadedPlugin* plugin = registry_.find(backend);
  if (plugin == nullptr)
    return Error{"unknown backend '" + backend + "' (see `sbx backends`)",
                 ErrorKind::invalid_input};
  // A plugin built for ABI 2.0 reads neither the run's stdio nor its end (abi.h, 2.1): it would
  // give the command sbx's own stdio and never stop it early, so such a run is refused, not run
  // with less than was asked. Its exec() was promised one call at a time: so it stays.
  std::unique_lock<std::mutex> one_at_a_time;
  if (plugin->abi_minor < 1) {
    if (!run.own_stdio() || run.cancel_fd() >= 0)
      return Error{"backend '" + backend +
                       "' was built for sbx plugin ABI 2.0: it cannot give the command other "
                       "stdio than sbx's own, nor end a run early (time-out, cancel); rebuild it "
                       "against the ABI " +
                       std::to_string(SBX_ABI_MAJOR) + "." + std::to_string(SBX_ABI_MINOR) + " SDK",
                   ErrorKind::unavailable};
    static std::mutex abi_2_0_exec;
    one_at_a_time = std::unique_lock<std::mutex>(abi_2_0_exec);
  }
  if (plugin->isolated) return plugins::exec_isolated(*plugin, plan, run, call_limits_);
  return plugins::exec_in_process(*plugin, plan, run.table());
}

}  // namespace sbx
