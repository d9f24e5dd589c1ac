// /environment of a policy: reading (strict, like every policy field), checks and the JSON form.
// What the fields mean is in policy.hpp (EnvironmentPolicy); filtering is
// core/src/run/environment.cpp.
#include <boost/json.hpp>
#include <string>
#include <vector>

#include "policy/internal.hpp"
#include "policy/json_strict.hpp"
#include "policy/path_util.hpp"
#include "report/json_render.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {

std::string_view to_string(EnvInherit inherit) {
  switch (inherit) {
    case EnvInherit::kAll:
      return "all";
    case EnvInherit::kCore:
      return "core";
    case EnvInherit::kNone:
      return "none";
  }
  return "unknown";
}

namespace policy {
namespace {

namespace json = boost::json;
using policy::strict::child;
using policy::strict::error_at;
using report::string_array;

constexpr std::string_view kPointer = "/environment";
constexpr std::string_view kKeys = "inherit|keep|exclude|include_only|set";

Error type_error(const json::value& value, const std::string& pointer, std::string_view wanted) {
  return error_at(pointer, "expected " + std::string(wanted) + ", got " +
                               std::string(policy::strict::kind_name(value)));
}

Result<std::vector<std::string>> read_patterns(const json::value& value,
                                               const std::string& pointer) {
  if (!value.is_array()) return type_error(value, pointer, "an array of name patterns");
  std::vector<std::string> out;
  const json::array& array = value.get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_string())
      return type_error(array[i], child(pointer, i), "a name pattern (a string)");
    out.emplace_back(array[i].get_string().data(), array[i].get_string().size());
  }
  return out;
}

Result<EnvInherit> read_inherit(const json::value& value, const std::string& pointer) {
  const std::string wanted = "expected one of all|core|none";
  if (!value.is_string())
    return error_at(pointer, wanted + ", got " + std::string(policy::strict::kind_name(value)));
  const std::string_view text(value.get_string().data(), value.get_string().size());
  for (EnvInherit inherit : {EnvInherit::kAll, EnvInherit::kCore, EnvInherit::kNone}) {
    if (to_string(inherit) == text) return inherit;
  }
  return error_at(pointer, wanted + ", got " + policy::path::quote(text));
}

Result<std::map<std::string, std::string>> read_set(const json::value& value,
                                                    const std::string& pointer) {
  if (!value.is_object()) return type_error(value, pointer, "an object of name: value strings");
  std::map<std::string, std::string> out;
  for (const auto& member : value.get_object()) {
    const std::string name(member.key().data(), member.key().size());
    if (!member.value().is_string())
      return type_error(member.value(), child(pointer, name), "a string value");
    out[name] = std::string(member.value().get_string().data(), member.value().get_string().size());
  }
  return out;
}

// A variable name or pattern: not empty, no '=' (it would end the name) and no NUL.
Status check_name(const std::string& name, const std::string& pointer, std::string_view what) {
  if (name.empty()) return error_at(pointer, "empty " + std::string(what));
  if (name.find('=') != std::string::npos || name.find('\0') != std::string::npos)
    return error_at(pointer, std::string(what) + " " + policy::path::quote(name) +
                                 " has '=' or a NUL byte, which no variable name can hold");
  return {};
}

Status check_patterns(const std::vector<std::string>& patterns, std::string_view key) {
  const std::string pointer = child(std::string(kPointer), key);
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    Status status = check_name(patterns[i], child(pointer, i), "pattern");
    if (!status) return status;
  }
  return {};
}

}  // namespace

Result<EnvironmentPolicy> read_environment(const boost::json::value& value) {
  const std::string pointer(kPointer);
  if (!value.is_object()) return type_error(value, pointer, "an object");
  EnvironmentPolicy environment;
  for (const auto& member : value.get_object()) {
    const std::string_view key(member.key().data(), member.key().size());
    const std::string key_pointer = child(pointer, key);
    if (key == "inherit") {
      Result<EnvInherit> inherit = read_inherit(member.value(), key_pointer);
      if (!inherit) return inherit.failure();
      environment.inherit = *inherit;
    } else if (key == "keep" || key == "exclude" || key == "include_only") {
      Result<std::vector<std::string>> patterns = read_patterns(member.value(), key_pointer);
      if (!patterns) return patterns.failure();
      (key == "keep"      ? environment.keep
       : key == "exclude" ? environment.exclude
                          : environment.include_only) = std::move(*patterns);
    } else if (key == "set") {
      Result<std::map<std::string, std::string>> set = read_set(member.value(), key_pointer);
      if (!set) return set.failure();
      environment.set = std::move(*set);
    } else {
      return error_at(key_pointer, "unknown key; expected one of " + std::string(kKeys));
    }
  }
  return environment;
}

Status check_environment(const EnvironmentPolicy& environment) {
  Status status = check_patterns(environment.keep, "keep");
  if (status) status = check_patterns(environment.exclude, "exclude");
  if (status) status = check_patterns(environment.include_only, "include_only");
  if (!status) return status;
  const std::string set_pointer = child(std::string(kPointer), "set");
  for (const auto& [name, value] : environment.set) {
    status = check_name(name, child(set_pointer, name), "variable name");
    if (!status) return status;
    if (name.find('*') != std::string::npos)
      return error_at(child(set_pointer, name), "variable name " + policy::path::quote(name) +
                                                    " has '*'; set names one variable");
    if (value.find('\0') != std::string::npos)
      return error_at(child(set_pointer, name), "value has a NUL byte, which no variable can hold");
  }
  return {};
}

boost::json::object environment_json(const EnvironmentPolicy& environment) {
  json::object out;
  out["inherit"] = std::string(to_string(environment.inherit));
  out["keep"] = string_array(environment.keep);
  out["exclude"] = string_array(environment.exclude);
  out["include_only"] = string_array(environment.include_only);
  json::object set;
  for (const auto& [name, value] : environment.set) set[name] = value;
  out["set"] = std::move(set);
  return out;
}

}  // namespace policy
}  // namespace sbx
