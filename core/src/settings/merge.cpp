// Merging the scopes and applying the administrator's locks (sbx/core/settings.hpp). Every lock
// refuses what asks for more, naming itself: narrowing a request in silence would leave the user
// believing they got what they asked for.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sbx/core/permissions.hpp"
#include "sbx/core/settings.hpp"

namespace sbx::settings {
namespace {

std::string who(Scope scope) {
  if (scope == Scope::kCommandLine) return "the command line";
  if (scope == Scope::kBuiltin) return "the built-in default";
  return "the " + std::string(to_string(scope)) + " settings";
}

// "the user settings' policy", "the command line's policy".
std::string policy_of(Scope scope) {
  if (scope == Scope::kCommandLine) return "the command line's policy";
  if (scope == Scope::kBuiltin) return "the built-in default policy (workspace-write)";
  return who(scope) + "' policy";
}

std::string lock_error(std::string_view lock, const std::string& what) {
  return "refused by the administrator's lock /locks/" + std::string(lock) +
         " (managed settings): " + what;
}

template <typename T>
std::string names(const std::vector<T>& items) {
  std::string out;
  for (const T& item : items) out += (out.empty() ? "" : ", ") + std::string(to_string(item));
  return out.empty() ? "nothing" : out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "nothing" : out;
}

template <typename T>
bool contains(const std::vector<T>& items, const T& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// "host[:port]" split; a ceiling entry without a port covers every port of its host.
std::pair<std::string, std::string> host_port(const std::string& domain) {
  const std::size_t colon = domain.rfind(':');
  if (colon == std::string::npos) return {domain, ""};
  return {domain.substr(0, colon), domain.substr(colon + 1)};
}

// True if the ceiling entry `ceiling` allows the policy's allowed domain `domain`: the same
// host, or `ceiling` is "*.x" and the domain's host (or "*.y" pattern) lies under x.
bool domain_covered(const std::string& domain, const std::string& ceiling) {
  auto [host, port] = host_port(domain);
  auto [ceiling_host, ceiling_port] = host_port(ceiling);
  if (!ceiling_port.empty() && ceiling_port != port) return false;
  if (host == ceiling_host) return true;
  if (ceiling_host.rfind("*.", 0) != 0) return false;
  const std::string suffix = ceiling_host.substr(1);  // ".x"
  const std::string bare = host.rfind("*.", 0) == 0 ? host.substr(1) : "." + host;
  return bare.size() > suffix.size() &&
         bare.compare(bare.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status check_writable_ceiling(const std::vector<std::string>& ceiling, const Policy& policy,
                              const std::string& from) {
  auto inside = [&](std::string_view path) {
    return std::any_of(ceiling.begin(), ceiling.end(),
                       [&](const std::string& root) { return lexically_within(path, root); });
  };
  if (policy.filesystem.kind != FilesystemKind::kRestricted && !inside(":root"))
    return Error{lock_error("writable_roots",
                            from + " asks for a " + std::string(to_string(policy.filesystem.kind)) +
                                " filesystem (write everywhere); writable roots allowed: " +
                                joined(ceiling)),
                 ErrorKind::refused};
  for (const PolicyEntry& entry : policy.filesystem.entries) {
    if (entry.access != Access::kWrite || inside(entry.path)) continue;
    return Error{lock_error("writable_roots", from + " asks to write \"" + entry.path +
                                                  "\"; writable roots allowed: " + joined(ceiling)),
                 ErrorKind::refused};
  }
  return {};
}

Status check_domain_ceiling(const std::vector<std::string>& ceiling, const Policy& policy,
                            const std::string& from) {
  if (policy.network.mode == NetworkMode::kEnabled)
    return Error{lock_error("allowed_domains", from +
                                                   " asks for network mode enabled (every "
                                                   "domain); domains allowed: " +
                                                   joined(ceiling)),
                 ErrorKind::refused};
  if (policy.network.mode != NetworkMode::kProxy) return {};
  for (const std::string& domain : policy.network.allowed_domains) {
    if (std::any_of(ceiling.begin(), ceiling.end(),
                    [&](const std::string& c) { return domain_covered(domain, c); }))
      continue;
    return Error{lock_error("allowed_domains", from + " allows the domain \"" + domain +
                                                   "\"; domains allowed: " + joined(ceiling)),
                 ErrorKind::refused};
  }
  return {};
}

// Every policy lock against one policy. `presets`: the preset names it was built from.
Status check_policy_locks(const Locks& locks, const Policy& policy,
                          const std::vector<std::string>& presets, const std::string& from) {
  if (locks.presets) {
    for (const std::string& preset : presets) {
      if (!contains(*locks.presets, preset))
        return Error{lock_error("presets", from + " asks for the preset " + preset +
                                               "; presets allowed: " + joined(*locks.presets)),
                     ErrorKind::refused};
    }
  }
  if (locks.filesystem_kinds && !contains(*locks.filesystem_kinds, policy.filesystem.kind))
    return Error{lock_error("filesystem_kinds",
                            from + " asks for a " + std::string(to_string(policy.filesystem.kind)) +
                                " filesystem; kinds allowed: " + names(*locks.filesystem_kinds)),
                 ErrorKind::refused};
  if (locks.network_modes && !contains(*locks.network_modes, policy.network.mode))
    return Error{lock_error("network_modes", from + " asks for network mode " +
                                                 std::string(to_string(policy.network.mode)) +
                                                 "; modes allowed: " + names(*locks.network_modes)),
                 ErrorKind::refused};
  if (locks.writable_roots) {
    Status status = check_writable_ceiling(*locks.writable_roots, policy, from);
    if (!status) return status;
  }
  if (locks.allowed_domains) {
    Status status = check_domain_ceiling(*locks.allowed_domains, policy, from);
    if (!status) return status;
  }
  return {};
}

// What asks for a run without a sandbox, against locks.allow_unsandboxed.
Status check_escape_hatch(const Locks& locks, Scope scope, const ScopeSettings& settings) {
  if (locks.allow_unsandboxed.value_or(true)) return {};
  if (settings.allow_unsandboxed.value_or(false))
    return Error{lock_error("allow_unsandboxed", who(scope) + " set allow_unsandboxed: true"),
                 ErrorKind::refused};
  if (settings.sandbox == SandboxPreference::kForbid)
    return Error{lock_error("allow_unsandboxed", who(scope) + " set sandbox: forbid"),
                 ErrorKind::refused};
  if (!settings.excluded_commands.empty())
    return Error{lock_error("allow_unsandboxed", who(scope) + " lists excluded_commands (\"" +
                                                     settings.excluded_commands.front() +
                                                     "\"), which would run without a sandbox"),
                 ErrorKind::refused};
  return {};
}

// What a scope other than managed asks of the backends, against locks.backend_order and
// locks.plugin_dirs: refused, never ignored (the user would believe their order holds).
Status check_backend_locks(const Locks& locks, Scope scope, const ScopeSettings& settings) {
  if (scope == Scope::kManaged) return {};
  if (locks.backend_order.value_or(false) && settings.backend_order)
    return Error{lock_error("backend_order", who(scope) + " set backends.order (" +
                                                 joined(*settings.backend_order) +
                                                 "); only the managed settings choose the order"),
                 ErrorKind::refused};
  if (locks.plugin_dirs.value_or(false) && !settings.plugin_dirs.empty())
    return Error{
        lock_error("plugin_dirs", who(scope) + " set backends.plugin_dirs (" +
                                      joined(settings.plugin_dirs) +
                                      "); only the managed settings add plugin directories"),
        ErrorKind::refused};
  return {};
}

void merge_backends(Scope scope, const ScopeSettings& file, Settings& out) {
  if (file.backend_order)
    out.backend_order = Sourced<std::vector<std::string>>{*file.backend_order, scope};
  for (const std::string& dir : file.plugin_dirs) {
    const bool seen = std::any_of(out.plugin_dirs.begin(), out.plugin_dirs.end(),
                                  [&](const auto& d) { return d.value == dir; });
    if (!seen) out.plugin_dirs.push_back({dir, scope});
  }
}

// widen() merges filesystems and networks; limits and the environment are not permissions, so
// the later scope's are taken as they are.
Result<Policy> widen_scopes(const Policy& lower, const Policy& higher) {
  Result<Policy> wide = widen(lower, higher);
  if (!wide) return wide;
  wide->limits = higher.limits;
  wide->environment = higher.environment;
  return wide;
}

bool has_glob_metacharacter(std::string_view value) {
  return value.find_first_of("*?[{") != std::string_view::npos;
}

// The managed deny entries added to `policy`. Through widen(), which keeps every deny of both
// sides and turns an unrestricted filesystem into {":root": write} so that the denies hold.
Result<Policy> with_mandatory_denies(const Locks& locks, Policy policy) {
  if (locks.deny.empty()) return policy;
  Policy denies;
  denies.filesystem.kind = FilesystemKind::kRestricted;
  denies.filesystem.protected_names.clear();
  for (const std::string& item : locks.deny) {
    denies.filesystem.entries.push_back(has_glob_metacharacter(item)
                                            ? PolicyEntry{"", item, Access::kDeny}
                                            : PolicyEntry{item, "", Access::kDeny});
  }
  Result<Policy> valid = validate_policy(denies);
  if (!valid) return valid.failure().prefixed("the administrator's lock /locks/deny is invalid: ");
  Result<Policy> out = widen(policy, *valid);
  if (!out) return out.failure().prefixed("cannot add the administrator's deny entries: ");
  out->limits = policy.limits;
  out->environment = policy.environment;
  return out;
}

// Inside a trusted project, .sbx below each writable root is protected like .git
// (resolution/protected.cpp): a sandboxed command can neither change nor create one, so it
// cannot plant project settings (or a decoy in a subdirectory that is a writable root) for the
// next run. A backend that cannot keep protected names (Landlock) refuses the policy, as it
// does for .git.
void protect_project_settings(Policy& policy) {
  std::vector<std::string>& names = policy.filesystem.protected_names;
  if (std::find(names.begin(), names.end(), kProjectSettingsDir) == names.end())
    names.emplace_back(kProjectSettingsDir);
}

}  // namespace

Result<Settings> merge_settings(const std::vector<std::pair<Scope, ScopeSettings>>& input) {
  std::vector<std::pair<Scope, ScopeSettings>> scopes = input;
  std::stable_sort(scopes.begin(), scopes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Settings out;
  for (const auto& [scope, file] : scopes) {
    if (scope == Scope::kManaged && file.locks) out.locks = *file.locks;
  }
  for (const auto& [scope, file] : scopes) {
    Status hatch = check_escape_hatch(out.locks, scope, file);
    if (!hatch) return hatch.failure();
    Status backends = check_backend_locks(out.locks, scope, file);
    if (!backends) return backends.failure();
    merge_backends(scope, file, out);
    if (file.policy) {
      std::vector<std::string> presets;
      if (file.preset) presets.push_back(*file.preset);
      Status locked = check_policy_locks(out.locks, *file.policy, presets, policy_of(scope));
      if (!locked) return locked.failure();
      if (!out.policy) {
        out.policy = Sourced<Policy>{*file.policy, scope};
      } else {
        Result<Policy> wide = widen_scopes(out.policy->value, *file.policy);
        if (!wide)
          return wide.failure().prefixed("cannot merge " + who(scope) +
                                         "' policy into the lower scopes': ");
        out.policy = Sourced<Policy>{std::move(*wide), scope};
      }
      out.policy_scopes.push_back(scope);
      if (file.preset) out.presets.push_back({*file.preset, scope});
    }
    if (file.sandbox) out.sandbox = {*file.sandbox, scope};
    if (file.allow_unsandboxed) out.allow_unsandboxed = {*file.allow_unsandboxed, scope};
    for (const std::string& pattern : file.excluded_commands) {
      const bool seen = std::any_of(out.excluded_commands.begin(), out.excluded_commands.end(),
                                    [&](const auto& p) { return p.value == pattern; });
      if (!seen) out.excluded_commands.push_back({pattern, scope});
    }
    if (scope == Scope::kUser) out.trusted_projects = file.trusted_projects;
  }
  if (!out.locks.allow_unsandboxed.value_or(true)) out.allow_unsandboxed = {false, Scope::kManaged};
  return out;
}

Sourced<Policy> base_policy(const Settings& settings, const Overrides& overrides) {
  if (overrides.policy) return {*overrides.policy, Scope::kCommandLine};
  if (settings.policy) return *settings.policy;
  // The built-in default when nothing says otherwise; a valid preset, so this cannot fail.
  return {preset_policy("workspace-write").value(), Scope::kBuiltin};
}

Result<BackendSelection> decide_backends(const Settings& settings, const BackendRequest& request) {
  const Locks& locks = settings.locks;
  BackendSelection out;
  if (settings.backend_order) out.order = *settings.backend_order;
  out.plugin_dirs = settings.plugin_dirs;
  if (!request.order.empty()) {
    // The same order as the locked one asks for nothing more: a script that passes
    // --backends explicitly keeps working under a lock that agrees with it.
    if (locks.backend_order.value_or(false) && request.order != out.order.value)
      return Error{
          lock_error("backend_order",
                     request.order_from + " asks for the order " + joined(request.order) +
                         "; the order is " +
                         (out.order.value.empty() ? "the default one" : joined(out.order.value)) +
                         " (" + who(out.order.scope) + ")"),
          ErrorKind::refused};
    out.order = {request.order, Scope::kCommandLine};
  }
  for (const std::string& dir : request.plugin_dirs) {
    const bool seen = std::any_of(out.plugin_dirs.begin(), out.plugin_dirs.end(),
                                  [&](const auto& d) { return d.value == dir; });
    if (seen) continue;
    if (locks.plugin_dirs.value_or(false)) {
      std::vector<std::string> allowed{"the install's own"};
      for (const auto& kept : out.plugin_dirs) allowed.push_back(kept.value);
      return Error{
          lock_error("plugin_dirs", request.plugin_dirs_from + " adds the plugin directory " + dir +
                                        "; plugin directories allowed: " + joined(allowed)),
          ErrorKind::refused};
    }
    out.plugin_dirs.push_back({dir, Scope::kCommandLine});
  }
  return out;
}

Result<Decided> decide(const Settings& settings, const Overrides& overrides, Policy policy) {
  Decided out;
  Result<BackendSelection> backends = decide_backends(settings, overrides.backends);
  if (!backends) return backends.failure();
  out.backends = std::move(*backends);
  const Locks& locks = settings.locks;
  out.policy_scope = overrides.policy || overrides.policy_changed ? Scope::kCommandLine
                     : settings.policy                            ? settings.policy->scope
                                                                  : Scope::kBuiltin;
  std::vector<std::string> presets;
  if (overrides.policy) {
    if (overrides.preset) presets.push_back(*overrides.preset);
  } else if (settings.policy) {
    for (const auto& preset : settings.presets) presets.push_back(preset.value);
  } else {
    presets.push_back("workspace-write");
  }
  Status locked = check_policy_locks(locks, policy, presets, policy_of(out.policy_scope));
  if (!locked) return locked.failure();
  out.sandbox = overrides.sandbox
                    ? Sourced<SandboxPreference>{*overrides.sandbox, Scope::kCommandLine}
                    : settings.sandbox;
  out.escape_hatch_locked = !locks.allow_unsandboxed.value_or(true);
  out.require_backend_available = locks.require_backend_available.value_or(false);
  if (out.escape_hatch_locked && out.sandbox.value == SandboxPreference::kForbid)
    return Error{
        lock_error("allow_unsandboxed", who(out.sandbox.scope) + " asks for --sandbox forbid"),
        ErrorKind::refused};
  if (overrides.allow_unsandboxed && out.escape_hatch_locked)
    return Error{lock_error("allow_unsandboxed",
                            "the caller asks to run without a sandbox when none is available "
                            "(--allow-unsandboxed)"),
                 ErrorKind::refused};
  if (overrides.allow_unsandboxed && out.require_backend_available)
    return Error{lock_error("require_backend_available",
                            "the caller asks to run without a sandbox when none is available "
                            "(--allow-unsandboxed)"),
                 ErrorKind::refused};
  out.allow_unsandboxed = overrides.allow_unsandboxed;
  out.unsandboxed_permitted = settings.allow_unsandboxed.value && !out.escape_hatch_locked;
  for (const auto& pattern : settings.excluded_commands)
    out.excluded_commands.push_back(pattern.value);
  Result<Policy> final_policy = with_mandatory_denies(locks, std::move(policy));
  if (!final_policy) return final_policy.failure();
  out.policy = std::move(*final_policy);
  if (settings.inside_trusted_project) protect_project_settings(out.policy);
  return out;
}

SettingsSummary summarize(const Settings& settings, const Decided& decided) {
  SettingsSummary out;
  out.policy_scope = std::string(to_string(decided.policy_scope));
  out.sandbox_scope = std::string(to_string(decided.sandbox.scope));
  out.unsandboxed_permitted = decided.unsandboxed_permitted;
  out.escape_hatch_locked = decided.escape_hatch_locked;
  out.require_backend_available = decided.require_backend_available;
  out.excluded_commands = decided.excluded_commands;
  out.notes = settings.notes;
  out.ignored_project_files = settings.ignored_project_files;
  out.backend_order = decided.backends.order.value;
  out.backend_order_scope = std::string(to_string(decided.backends.order.scope));
  for (const auto& dir : decided.backends.plugin_dirs) out.plugin_dirs.push_back(dir.value);
  return out;
}

}  // namespace sbx::settings
