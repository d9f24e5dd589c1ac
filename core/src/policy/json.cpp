// Policy v1 <-> JSON. Reading is strict: every key is known, every value has the expected type,
// and every error names the JSON pointer of the offending value. Semantic rules live in
// validate_policy() and the presets, which the reader ends with.
#include <algorithm>
#include <boost/json.hpp>
#include <exception>
#include <initializer_list>
#include <string>
#include <vector>

#include "policy/internal.hpp"
#include "policy/json_strict.hpp"
#include "policy/path_util.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

namespace json = boost::json;
using policy::strict::child;
using policy::strict::error_at;
using Keys = std::initializer_list<std::string_view>;

std::string join_keys(Keys keys) {
  std::string out;
  for (std::string_view key : keys) out += (out.empty() ? "" : "|") + std::string(key);
  return out;
}

Error type_error(const json::value& value, const std::string& pointer, std::string_view wanted) {
  return error_at(pointer, "expected " + std::string(wanted) + ", got " +
                               std::string(policy::strict::kind_name(value)));
}

// The first key (in document order) that is not in `allowed`.
Status check_keys(const json::object& object, const std::string& pointer, Keys allowed) {
  for (const auto& member : object) {
    std::string_view key(member.key().data(), member.key().size());
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return error_at(child(pointer, key), "unknown key; expected one of " + join_keys(allowed));
    }
  }
  return {};
}

const json::value* find(const json::object& object, std::string_view key) {
  return object.if_contains(json::string_view(key.data(), key.size()));
}

Result<const json::object*> as_object(const json::value& value, const std::string& pointer) {
  if (!value.is_object()) return type_error(value, pointer, "an object");
  return &value.get_object();
}

Result<std::string> read_string(const json::value& value, const std::string& pointer) {
  if (!value.is_string()) return type_error(value, pointer, "a string");
  const json::string& s = value.get_string();
  return std::string(s.data(), s.size());
}

Result<bool> read_bool(const json::value& value, const std::string& pointer) {
  if (!value.is_bool()) return type_error(value, pointer, "true or false");
  return value.get_bool();
}

Result<std::vector<std::string>> read_strings(const json::value& value,
                                              const std::string& pointer) {
  if (!value.is_array()) return type_error(value, pointer, "an array of strings");
  std::vector<std::string> out;
  const json::array& array = value.get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    Result<std::string> item = read_string(array[i], child(pointer, i));
    if (!item) return item.failure();
    out.push_back(std::move(*item));
  }
  return out;
}

Result<std::vector<std::uint16_t>> read_ports(const json::value& value,
                                              const std::string& pointer) {
  if (!value.is_array()) return type_error(value, pointer, "an array of port numbers");
  std::vector<std::uint16_t> out;
  const json::array& array = value.get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    const json::value& item = array[i];
    std::string item_pointer = child(pointer, i);
    if (!item.is_int64() && !item.is_uint64()) {
      return type_error(item, item_pointer, "an integer port from 1 to 65535");
    }
    bool in_range = item.is_int64() ? (item.get_int64() >= 1 && item.get_int64() <= 65535)
                                    : item.get_uint64() <= 65535;
    if (!in_range)
      return error_at(item_pointer, "port " + json::serialize(item) + " is not from 1 to 65535");
    out.push_back(static_cast<std::uint16_t>(
        item.is_int64() ? item.get_int64() : static_cast<std::int64_t>(item.get_uint64())));
  }
  return out;
}

template <typename Enum>
Result<Enum> read_enum(const json::value& value, const std::string& pointer,
                       std::initializer_list<Enum> values) {
  std::string names;
  for (Enum e : values) names += (names.empty() ? "" : "|") + std::string(to_string(e));
  if (!value.is_string()) {
    return error_at(pointer, "expected one of " + names + ", got " +
                                 std::string(policy::strict::kind_name(value)));
  }
  std::string_view text(value.get_string().data(), value.get_string().size());
  for (Enum e : values) {
    if (to_string(e) == text) return e;
  }
  return error_at(pointer, "expected one of " + names + ", got " + policy::path::quote(text));
}

Result<PolicyEntry> read_entry(const json::value& value, const std::string& pointer) {
  Result<const json::object*> object = as_object(value, pointer);
  if (!object) return object.failure();
  Status keys = check_keys(**object, pointer, {"path", "glob", "access"});
  if (!keys) return keys.failure();
  const json::value* path = find(**object, "path");
  const json::value* glob = find(**object, "glob");
  if ((path == nullptr) == (glob == nullptr)) {
    return error_at(pointer, "an entry needs exactly one of \"path\" or \"glob\"");
  }
  PolicyEntry entry;
  std::string key = path != nullptr ? "path" : "glob";
  Result<std::string> text = read_string(path != nullptr ? *path : *glob, child(pointer, key));
  if (!text) return text.failure();
  if (text->empty()) {
    return error_at(
        child(pointer, key),
        "empty " + key + "; " +
            (path != nullptr ? "write an absolute path, \"~/...\" or a special path such as :cwd"
                             : "write a pattern such as \"**/*.pem\""));
  }
  (path != nullptr ? entry.path : entry.glob) = std::move(*text);
  const json::value* access = find(**object, "access");
  if (access == nullptr) {
    return error_at(child(pointer, "access"), "required; expected one of read|write|deny");
  }
  Result<Access> parsed =
      read_enum(*access, child(pointer, "access"), {Access::kRead, Access::kWrite, Access::kDeny});
  if (!parsed) return parsed.failure();
  entry.access = *parsed;
  return entry;
}

Result<FilesystemSpec> read_filesystem(const json::value& value) {
  const std::string pointer = "/filesystem";
  Result<const json::object*> object = as_object(value, pointer);
  if (!object) return object.failure();
  Status keys = check_keys(**object, pointer, {"kind", "entries", "protected_names"});
  if (!keys) return keys.failure();
  FilesystemSpec fs;
  fs.protected_names = default_protected_names();
  if (const json::value* kind = find(**object, "kind")) {
    Result<FilesystemKind> parsed = read_enum(
        *kind, child(pointer, "kind"),
        {FilesystemKind::kRestricted, FilesystemKind::kUnrestricted, FilesystemKind::kExternal});
    if (!parsed) return parsed.failure();
    fs.kind = *parsed;
  }
  if (const json::value* entries = find(**object, "entries")) {
    std::string entries_pointer = child(pointer, "entries");
    if (!entries->is_array()) return type_error(*entries, entries_pointer, "an array of entries");
    const json::array& array = entries->get_array();
    for (std::size_t i = 0; i < array.size(); ++i) {
      Result<PolicyEntry> entry = read_entry(array[i], child(entries_pointer, i));
      if (!entry) return entry.failure();
      fs.entries.push_back(std::move(*entry));
    }
  }
  if (const json::value* names = find(**object, "protected_names")) {
    Result<std::vector<std::string>> parsed =
        read_strings(*names, child(pointer, "protected_names"));
    if (!parsed) return parsed.failure();
    fs.protected_names = std::move(*parsed);
  }
  return fs;
}

// Reads the string-list member `key` of /network into `out` when present.
Status read_list_member(const json::object& object, std::string_view key,
                        std::vector<std::string>& out) {
  const json::value* value = find(object, key);
  if (value == nullptr) return {};
  Result<std::vector<std::string>> parsed = read_strings(*value, child("/network", key));
  if (!parsed) return parsed.failure();
  out = std::move(*parsed);
  return {};
}

Result<NetworkPolicy> read_network(const json::value& value) {
  const std::string pointer = "/network";
  Result<const json::object*> object = as_object(value, pointer);
  if (!object) return object.failure();
  Status status = check_keys(**object, pointer,
                             {"mode", "proxy_ports", "allowed_domains", "denied_domains",
                              "unix_sockets", "allow_local_binding"});
  if (!status) return status.failure();
  NetworkPolicy network;
  if (const json::value* mode = find(**object, "mode")) {
    Result<NetworkMode> parsed =
        read_enum(*mode, child(pointer, "mode"),
                  {NetworkMode::kRestricted, NetworkMode::kEnabled, NetworkMode::kProxy});
    if (!parsed) return parsed.failure();
    network.mode = *parsed;
  }
  if (const json::value* ports = find(**object, "proxy_ports")) {
    Result<std::vector<std::uint16_t>> parsed = read_ports(*ports, child(pointer, "proxy_ports"));
    if (!parsed) return parsed.failure();
    network.proxy_ports = std::move(*parsed);
  }
  status = read_list_member(**object, "allowed_domains", network.allowed_domains);
  if (status) status = read_list_member(**object, "denied_domains", network.denied_domains);
  if (status) status = read_list_member(**object, "unix_sockets", network.unix_sockets);
  if (!status) return status.failure();
  if (const json::value* binding = find(**object, "allow_local_binding")) {
    Result<bool> parsed = read_bool(*binding, child(pointer, "allow_local_binding"));
    if (!parsed) return parsed.failure();
    network.allow_local_binding = *parsed;
  }
  return network;
}

constexpr std::string_view kShortOnlyKeys[] = {"writable_roots", "network_access",
                                               "exclude_tmpdir_env_var", "exclude_slash_tmp"};

Status read_optional_bool(const json::object& root, std::string_view key,
                          std::optional<bool>& out) {
  if (const json::value* value = find(root, key)) {
    Result<bool> parsed = read_bool(*value, child("", key));
    if (!parsed) return parsed.failure();
    out = *parsed;
  }
  return {};
}

Result<Policy> read_short_form(const json::object& root) {
  for (std::string_view key : {"filesystem", "network"}) {
    if (find(root, key) != nullptr) {
      return error_at(child("", key),
                      "cannot be combined with \"preset\"; write either the short "
                      "form (preset + options) or the full form");
    }
  }
  Result<std::string> preset = read_string(*find(root, "preset"), "/preset");
  if (!preset) return preset.failure();
  PresetOptions options;
  if (const json::value* roots = find(root, "writable_roots")) {
    Result<std::vector<std::string>> parsed = read_strings(*roots, "/writable_roots");
    if (!parsed) return parsed.failure();
    options.writable_roots = std::move(*parsed);
  }
  Status status = read_optional_bool(root, "network_access", options.network_access);
  if (status)
    status = read_optional_bool(root, "exclude_tmpdir_env_var", options.exclude_tmpdir_env_var);
  if (status) status = read_optional_bool(root, "exclude_slash_tmp", options.exclude_slash_tmp);
  if (!status) return status.failure();
  Result<Policy> policy = preset_policy(*preset, options);
  if (!policy) return policy;
  // Limits and the environment are the same in both forms: next to "preset" they replace the
  // preset's defaults.
  const json::value* limits = find(root, "limits");
  if (limits != nullptr) {
    Result<Limits> parsed = policy::read_limits(*limits);
    if (!parsed) return parsed.failure();
    policy->limits = *parsed;
  }
  const json::value* environment = find(root, "environment");
  if (environment != nullptr) {
    Result<EnvironmentPolicy> parsed = policy::read_environment(*environment);
    if (!parsed) return parsed.failure();
    policy->environment = std::move(*parsed);
  }
  if (limits != nullptr || environment != nullptr) return validate_policy(std::move(*policy));
  return policy;
}

Result<Policy> read_full_form(const json::object& root) {
  for (std::string_view key : kShortOnlyKeys) {
    if (find(root, key) != nullptr) {
      return error_at(child("", key),
                      "a short-form option needs \"preset\"; in the full form "
                      "use /filesystem and /network instead");
    }
  }
  Policy policy;
  policy.filesystem.protected_names = default_protected_names();
  if (const json::value* fs = find(root, "filesystem")) {
    Result<FilesystemSpec> parsed = read_filesystem(*fs);
    if (!parsed) return parsed.failure();
    policy.filesystem = std::move(*parsed);
  }
  if (const json::value* network = find(root, "network")) {
    Result<NetworkPolicy> parsed = read_network(*network);
    if (!parsed) return parsed.failure();
    policy.network = std::move(*parsed);
  }
  if (const json::value* limits = find(root, "limits")) {
    Result<Limits> parsed = policy::read_limits(*limits);
    if (!parsed) return parsed.failure();
    policy.limits = *parsed;
  }
  if (const json::value* environment = find(root, "environment")) {
    Result<EnvironmentPolicy> parsed = policy::read_environment(*environment);
    if (!parsed) return parsed.failure();
    policy.environment = std::move(*parsed);
  }
  return validate_policy(std::move(policy));
}

Status read_version(const json::object& root) {
  const json::value* version = find(root, "version");
  if (version == nullptr) return error_at("/version", "required; add \"version\": 1");
  if (!version->is_int64() && !version->is_uint64()) {
    return type_error(*version, "/version", "the integer 1");
  }
  if (version->is_int64() && version->get_int64() == 1) return {};
  return error_at("/version", "unsupported version " + json::serialize(*version) +
                                  "; this sbx understands version 1");
}

Result<Policy> read_policy(const json::value& document) {
  Result<const json::object*> root = as_object(document, "");
  if (!root) return root.failure();
  Status status =
      check_keys(**root, "",
                 {"version", "preset", "writable_roots", "network_access", "exclude_tmpdir_env_var",
                  "exclude_slash_tmp", "filesystem", "network", "limits", "environment"});
  if (status) status = read_version(**root);
  if (!status) return status.failure();
  if (find(**root, "preset") != nullptr) return read_short_form(**root);
  return read_full_form(**root);
}

}  // namespace

Result<Policy> parse_policy(std::string_view json_text) {
  // The cap is checked before any parsing so an oversized document costs nothing.
  if (json_text.size() > kMaxPolicyBytes) {
    return error_at("", "policy is " + std::to_string(json_text.size()) + " bytes; the limit is " +
                            std::to_string(kMaxPolicyBytes));
  }
  try {
    Result<json::value> document = policy::strict::parse_strict(json_text, kMaxPolicyDepth);
    if (!document) return document.failure();
    return read_policy(*document);
  } catch (const std::exception& e) {
    // Only allocation failure can get here; keep it inside the module.
    return error_at("", std::string("cannot read the policy: ") + e.what());
  }
}

}  // namespace sbx
