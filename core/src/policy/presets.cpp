// The four presets (core/src/policy/README.md) and the short form, each defined
// as the full form it converts to.
#include <iterator>
#include <string>
#include <vector>

#include "policy/internal.hpp"
#include "policy/json_strict.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

using policy::strict::child;
using policy::strict::error_at;

PolicyEntry path_entry(std::string path, Access access) {
  return PolicyEntry{std::move(path), {}, access};
}

// An option given for a preset that ignores it is an error: silently dropping it would leave the
// author believing, say, /tmp is excluded when the preset never granted it.
Status reject_option(bool present, std::string_view key, std::string_view preset) {
  if (!present) return {};
  return error_at(child("", key), "not meaningful with preset " + std::string(preset) +
                                      "; remove it or use the full form");
}

Status reject_options(const PresetOptions& options, std::string_view preset, bool roots,
                      bool network, bool excludes) {
  Status s = reject_option(roots && options.writable_roots.has_value(), "writable_roots", preset);
  if (s) s = reject_option(network && options.network_access.has_value(), "network_access", preset);
  if (s) {
    s = reject_option(excludes && options.exclude_tmpdir_env_var.has_value(),
                      "exclude_tmpdir_env_var", preset);
  }
  if (s) {
    s = reject_option(excludes && options.exclude_slash_tmp.has_value(), "exclude_slash_tmp",
                      preset);
  }
  return s;
}

NetworkPolicy network_for(bool enabled) {
  NetworkPolicy network;
  network.mode = enabled ? NetworkMode::kEnabled : NetworkMode::kRestricted;
  return network;
}

Status add_writable_roots(const std::vector<std::string>& roots, FilesystemSpec& fs) {
  for (std::size_t i = 0; i < roots.size(); ++i) {
    std::string pointer = child("/writable_roots", i);
    Result<std::string> path = policy::normalize_entry_path(roots[i], pointer);
    if (!path) return path.failure();
    if (*path == ":minimal") return error_at(pointer, ":minimal can only be granted read");
    fs.entries.push_back(path_entry(std::move(*path), Access::kWrite));
  }
  return {};
}

Result<Policy> workspace_write(const PresetOptions& options) {
  Policy policy;
  FilesystemSpec& fs = policy.filesystem;
  fs.entries.push_back(path_entry(":root", Access::kRead));
  fs.entries.push_back(path_entry(":cwd", Access::kWrite));
  if (!options.exclude_slash_tmp.value_or(false)) {
    fs.entries.push_back(path_entry(":slash_tmp", Access::kWrite));
  }
  if (!options.exclude_tmpdir_env_var.value_or(false)) {
    fs.entries.push_back(path_entry(":tmpdir", Access::kWrite));
  }
  Status roots =
      add_writable_roots(options.writable_roots.value_or(std::vector<std::string>{}), fs);
  if (!roots) return roots.failure();
  policy.network = network_for(options.network_access.value_or(false));
  return policy;
}

Result<Policy> build_preset(std::string_view name, const PresetOptions& options) {
  Policy policy;
  if (name == "read-only") {
    Status s = reject_options(options, name, true, false, true);
    if (!s) return s.failure();
    policy.filesystem.entries.push_back(path_entry(":root", Access::kRead));
    policy.network = network_for(options.network_access.value_or(false));
  } else if (name == "workspace-write") {
    Result<Policy> built = workspace_write(options);
    if (!built) return built;
    policy = std::move(*built);
  } else if (name == "danger-full-access") {
    Status s = reject_options(options, name, true, true, true);
    if (!s) return s.failure();
    policy.filesystem.kind = FilesystemKind::kUnrestricted;
    policy.network = network_for(true);
  } else if (name == "external-sandbox") {
    Status s = reject_options(options, name, true, false, true);
    if (!s) return s.failure();
    policy.filesystem.kind = FilesystemKind::kExternal;
    policy.network = network_for(options.network_access.value_or(false));
  } else {
    std::string names;
    for (std::string_view known : kPresetNames)
      names += (names.empty() ? "" : "|") + std::string(known);
    return error_at("/preset",
                    "unknown preset \"" + std::string(name) + "\"; expected one of " + names);
  }
  policy.filesystem.protected_names = default_protected_names();
  return policy;
}

}  // namespace

std::vector<std::string> default_protected_names() {
  return {std::begin(kDefaultProtectedNames), std::end(kDefaultProtectedNames)};
}

Result<Policy> preset_policy(std::string_view name) { return preset_policy(name, {}); }

Result<Policy> preset_policy(std::string_view name, const PresetOptions& options) {
  Result<Policy> policy = build_preset(name, options);
  if (!policy) return policy;
  return validate_policy(std::move(*policy));
}

std::string_view to_string(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
    case Access::kDeny:
      return "deny";
  }
  return "unknown";
}

std::string_view to_string(FilesystemKind kind) {
  switch (kind) {
    case FilesystemKind::kRestricted:
      return "restricted";
    case FilesystemKind::kUnrestricted:
      return "unrestricted";
    case FilesystemKind::kExternal:
      return "external";
  }
  return "unknown";
}

std::string_view to_string(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kRestricted:
      return "restricted";
    case NetworkMode::kEnabled:
      return "enabled";
    case NetworkMode::kProxy:
      return "proxy";
  }
  return "unknown";
}

}  // namespace sbx
