// Reading one settings file (sbx/core/settings.hpp): strict JSON like the policy, JSON-pointer
// errors, unknown keys refused, and keys a scope may not hold refused with the scope that may.
#include <boost/json.hpp>
#include <string>
#include <vector>

#include "policy/json_strict.hpp"
#include "policy/path_util.hpp"
#include "sbx/core/settings.hpp"

namespace sbx::settings {
namespace {

namespace json = boost::json;
using policy::strict::child;
using policy::strict::error_at;
using policy::strict::kind_name;

constexpr std::string_view kKeys =
    "policy|sandbox|allow_unsandboxed|excluded_commands|trusted_projects|backends|locks";
constexpr std::string_view kBackendKeys = "order|plugin_dirs";
constexpr std::string_view kLockKeys =
    "presets|filesystem_kinds|network_modes|writable_roots|allowed_domains|deny|"
    "allow_unsandboxed|require_backend_available|backend_order|plugin_dirs";

Error type_error(const json::value& value, const std::string& pointer, std::string_view wanted) {
  return error_at(pointer,
                  "expected " + std::string(wanted) + ", got " + std::string(kind_name(value)));
}

std::string text_of(const json::string& value) { return {value.data(), value.size()}; }

Result<bool> read_bool(const json::value& value, const std::string& pointer) {
  if (!value.is_bool()) return type_error(value, pointer, "true or false");
  return value.get_bool();
}

Result<std::vector<std::string>> read_strings(const json::value& value, const std::string& pointer,
                                              std::string_view what) {
  if (!value.is_array()) return type_error(value, pointer, "an array of " + std::string(what));
  std::vector<std::string> out;
  const json::array& array = value.get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_string()) return type_error(array[i], child(pointer, i), "a string");
    std::string item = text_of(array[i].get_string());
    if (item.empty() || item.find('\0') != std::string::npos)
      return error_at(child(pointer, i), "empty, or holds a NUL byte");
    out.push_back(std::move(item));
  }
  return out;
}

// A string naming one of `names` (to_string of each value).
template <typename T, std::size_t N>
Result<std::vector<T>> read_names(const json::value& value, const std::string& pointer,
                                  const T (&values)[N]) {
  Result<std::vector<std::string>> names = read_strings(value, pointer, "names");
  if (!names) return names.failure();
  std::vector<T> out;
  std::string expected;
  for (const T& item : values)
    expected += (expected.empty() ? "" : "|") + std::string(to_string(item));
  for (std::size_t i = 0; i < names->size(); ++i) {
    bool found = false;
    for (const T& item : values) {
      if (to_string(item) == (*names)[i]) {
        out.push_back(item);
        found = true;
      }
    }
    if (!found)
      return error_at(child(pointer, i),
                      "expected one of " + expected + ", got " + policy::path::quote((*names)[i]));
  }
  return out;
}

// "/filesystem/x: msg" from parse_policy becomes "/policy/filesystem/x: msg".
Error policy_error(const std::string& message) {
  if (message.rfind("/: ", 0) == 0)
    return Error{"/policy" + message.substr(1), ErrorKind::invalid_input};
  if (!message.empty() && message.front() == '/')
    return Error{"/policy" + message, ErrorKind::invalid_input};
  return Error{"/policy: " + message, ErrorKind::invalid_input};
}

Status read_policy(const json::value& value, ScopeSettings& out) {
  if (!value.is_object()) return type_error(value, "/policy", "a policy object (either form)");
  Result<Policy> policy = parse_policy(json::serialize(value));
  if (!policy) return policy_error(policy.error());
  out.policy = std::move(*policy);
  if (const json::value* preset = value.get_object().if_contains("preset");
      preset != nullptr && preset->is_string())
    out.preset = text_of(preset->get_string());
  return {};
}

Status read_sandbox(const json::value& value, ScopeSettings& out) {
  if (!value.is_string()) return type_error(value, "/sandbox", "one of auto|require|forbid");
  Result<SandboxPreference> preference = parse_sandbox_preference(text_of(value.get_string()));
  if (!preference)
    return error_at("/sandbox", "expected one of auto|require|forbid, got " +
                                    policy::path::quote(text_of(value.get_string())));
  out.sandbox = *preference;
  return {};
}

// Trusted projects are directories by their absolute path (compared with the project's real
// path): a relative one would mean a different project from every directory.
Status read_trusted(const json::value& value, ScopeSettings& out) {
  Result<std::vector<std::string>> dirs = read_strings(value, "/trusted_projects", "directories");
  if (!dirs) return dirs.failure();
  for (std::size_t i = 0; i < dirs->size(); ++i) {
    if ((*dirs)[i].front() != '/')
      return error_at(child("/trusted_projects", i),
                      policy::path::quote((*dirs)[i]) + " is not an absolute path");
  }
  out.trusted_projects = std::move(*dirs);
  return {};
}

// "backends": {"order": [names], "plugin_dirs": [absolute directories]}. A name is a backend's
// (sbx backends lists them; a plugin may bring a name sbx does not know, so any name is taken).
// A plugin directory is absolute: a relative one would name another directory from every cwd.
// Whatever it names still goes through the trusted loader: the directory and every directory
// above it owned by root (or the owner of libsbx) and not writable by others.
Status read_backends(const json::value& value, ScopeSettings& out) {
  if (!value.is_object()) return type_error(value, "/backends", "an object");
  for (const auto& member : value.get_object()) {
    const std::string_view key(member.key().data(), member.key().size());
    const std::string pointer = child("/backends", key);
    if (key == "order") {
      Result<std::vector<std::string>> names = read_strings(member.value(), pointer, "names");
      if (!names) return names.failure();
      out.backend_order = std::move(*names);
    } else if (key == "plugin_dirs") {
      Result<std::vector<std::string>> dirs = read_strings(member.value(), pointer, "directories");
      if (!dirs) return dirs.failure();
      for (std::size_t i = 0; i < dirs->size(); ++i) {
        if ((*dirs)[i].front() != '/')
          return error_at(child(pointer, i),
                          policy::path::quote((*dirs)[i]) + " is not an absolute path");
      }
      out.plugin_dirs = std::move(*dirs);
    } else {
      return error_at(pointer, "unknown key; expected one of " + std::string(kBackendKeys));
    }
  }
  return {};
}

Status read_lock(std::string_view key, const json::value& value, Locks& locks) {
  const std::string pointer = child("/locks", key);
  if (key == "presets") {
    Result<std::vector<std::string>> names = read_strings(value, pointer, "preset names");
    if (!names) return names.failure();
    for (std::size_t i = 0; i < names->size(); ++i) {
      if (!preset_policy((*names)[i]))
        return error_at(child(pointer, i), "unknown preset " + policy::path::quote((*names)[i]));
    }
    locks.presets = std::move(*names);
  } else if (key == "filesystem_kinds") {
    static constexpr FilesystemKind kKinds[] = {
        FilesystemKind::kRestricted, FilesystemKind::kUnrestricted, FilesystemKind::kExternal};
    Result<std::vector<FilesystemKind>> kinds = read_names(value, pointer, kKinds);
    if (!kinds) return kinds.failure();
    locks.filesystem_kinds = std::move(*kinds);
  } else if (key == "network_modes") {
    static constexpr NetworkMode kModes[] = {NetworkMode::kRestricted, NetworkMode::kProxy,
                                             NetworkMode::kEnabled};
    Result<std::vector<NetworkMode>> modes = read_names(value, pointer, kModes);
    if (!modes) return modes.failure();
    locks.network_modes = std::move(*modes);
  } else if (key == "writable_roots" || key == "allowed_domains" || key == "deny") {
    Result<std::vector<std::string>> items = read_strings(value, pointer, "strings");
    if (!items) return items.failure();
    if (key == "writable_roots") locks.writable_roots = std::move(*items);
    if (key == "allowed_domains") locks.allowed_domains = std::move(*items);
    if (key == "deny") locks.deny = std::move(*items);
  } else if (key == "allow_unsandboxed" || key == "require_backend_available" ||
             key == "backend_order" || key == "plugin_dirs") {
    Result<bool> flag = read_bool(value, pointer);
    if (!flag) return flag.failure();
    if (key == "allow_unsandboxed") locks.allow_unsandboxed = *flag;
    if (key == "require_backend_available") locks.require_backend_available = *flag;
    if (key == "backend_order") locks.backend_order = *flag;
    if (key == "plugin_dirs") locks.plugin_dirs = *flag;
  } else {
    return error_at(pointer, "unknown key; expected one of " + std::string(kLockKeys));
  }
  return {};
}

Status read_locks(const json::value& value, ScopeSettings& out) {
  if (!value.is_object()) return type_error(value, "/locks", "an object");
  Locks locks;
  for (const auto& member : value.get_object()) {
    Status status = read_lock(std::string_view(member.key().data(), member.key().size()),
                              member.value(), locks);
    if (!status) return status;
  }
  out.locks = std::move(locks);
  return {};
}

// "locks" binds every user of the host, so only the administrator's file may hold it; the list
// of trusted projects is the user's own decision, so a project (or the administrator) cannot
// declare itself trusted.
Status check_scope_may_hold(std::string_view key, Scope scope) {
  const std::string pointer = child("", key);
  if (key == "locks" && scope != Scope::kManaged)
    return error_at(pointer, "only the managed settings (/etc/sbx/managed.json) may hold locks");
  if (key == "trusted_projects" && scope != Scope::kUser)
    return error_at(pointer, "only the user settings may list trusted projects");
  // Which plugin code runs is the host's and the user's choice, never a repository's (the
  // project scope) nor a C API document's (a manager takes its own arguments for that).
  if (key == "backends" && scope != Scope::kManaged && scope != Scope::kUser)
    return error_at(pointer,
                    "only the managed or the user settings may choose backends; a run chooses "
                    "its own with --backends and --plugin-dir (a C API manager with its "
                    "backends and plugin_dirs arguments)");
  return {};
}

Status read_member(std::string_view key, const json::value& value, Scope scope,
                   ScopeSettings& out) {
  Status allowed = check_scope_may_hold(key, scope);
  if (!allowed) return allowed;
  if (key == "policy") return read_policy(value, out);
  if (key == "sandbox") return read_sandbox(value, out);
  if (key == "allow_unsandboxed") {
    Result<bool> flag = read_bool(value, "/allow_unsandboxed");
    if (!flag) return flag.failure();
    out.allow_unsandboxed = *flag;
    return {};
  }
  if (key == "excluded_commands") {
    Result<std::vector<std::string>> patterns =
        read_strings(value, "/excluded_commands", "command patterns");
    if (!patterns) return patterns.failure();
    out.excluded_commands = std::move(*patterns);
    return {};
  }
  if (key == "trusted_projects") return read_trusted(value, out);
  if (key == "backends") return read_backends(value, out);
  if (key == "locks") return read_locks(value, out);
  return error_at(child("", key), "unknown key; expected one of " + std::string(kKeys));
}

}  // namespace

std::string_view to_string(Scope scope) {
  switch (scope) {
    case Scope::kBuiltin:
      return "built-in";
    case Scope::kManaged:
      return "managed";
    case Scope::kUser:
      return "user";
    case Scope::kProject:
      return "project";
    case Scope::kCommandLine:
      return "command line";
  }
  return "unknown";
}

std::optional<std::string> preset_name(std::string_view policy_json) {
  try {
    Result<json::value> document = policy::strict::parse_strict(policy_json, kMaxPolicyDepth);
    if (!document || !document->is_object()) return std::nullopt;
    const json::value* preset = document->get_object().if_contains("preset");
    if (preset == nullptr || !preset->is_string()) return std::nullopt;
    return text_of(preset->get_string());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Result<ScopeSettings> parse_settings(std::string_view text, Scope scope) {
  if (text.size() > kMaxSettingsBytes)
    return error_at("", "settings are " + std::to_string(text.size()) + " bytes; the limit is " +
                            std::to_string(kMaxSettingsBytes));
  try {
    // One level more than a policy: the policy sits under "/policy".
    Result<json::value> document = policy::strict::parse_strict(text, kMaxPolicyDepth + 1);
    if (!document) return document.failure();
    if (!document->is_object()) return type_error(*document, "", "an object");
    ScopeSettings out;
    for (const auto& member : document->get_object()) {
      Status status = read_member(std::string_view(member.key().data(), member.key().size()),
                                  member.value(), scope, out);
      if (!status) return status.failure();
    }
    return out;
  } catch (const std::exception& e) {
    return error_at("", std::string("cannot read the settings: ") + e.what());
  }
}

}  // namespace sbx::settings
