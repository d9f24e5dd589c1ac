// /limits of a policy: reading (strict, like every policy field), range checks and the JSON
// form. One table lists every limit, so the three stay in step.
#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <string>

#include "policy/internal.hpp"
#include "policy/json_strict.hpp"
#include "policy/path_util.hpp"
#include "sbx/core/policy.hpp"

namespace sbx::policy {
namespace {

namespace json = boost::json;
using policy::strict::child;
using policy::strict::error_at;

constexpr std::uint64_t kMiB = 1024 * 1024;

// One key of /limits. The bounds keep a run startable: bwrap, sbx-stage2 and the dynamic
// loader need a few processes, descriptors and megabytes before the command's first line.
struct LimitField {
  std::string_view key;
  std::optional<std::uint64_t> Limits::*member;
  std::uint64_t min;
  std::uint64_t max;
  std::string_view unit;  // for messages
};

constexpr LimitField kFields[] = {
    {"processes", &Limits::processes, 8, 4194304, "processes"},       // PID_MAX_LIMIT
    {"open_files", &Limits::open_files, 32, 1048576, "descriptors"},  // default fs.nr_open
    {"file_size_bytes", &Limits::file_size_bytes, 1, UINT64_MAX / 2, "bytes"},
    {"address_space_bytes", &Limits::address_space_bytes, 64 * kMiB, UINT64_MAX / 2, "bytes"},
    {"memory_bytes", &Limits::memory_bytes, 16 * kMiB, UINT64_MAX / 2, "bytes"},
    {"cpu_seconds", &Limits::cpu_seconds, 1, 365ULL * 24 * 3600, "seconds"},
    {"timeout_seconds", &Limits::timeout_seconds, 1, 365ULL * 24 * 3600, "seconds"},
};
constexpr std::string_view kGraceKey = "timeout_grace_seconds";
constexpr std::string_view kBestEffortKey = "best_effort";
constexpr std::uint64_t kMaxGraceSeconds = 3600;

std::string known_keys() {
  std::string out;
  for (const LimitField& field : kFields) out += std::string(field.key) + "|";
  return out + std::string(kGraceKey) + "|" + std::string(kBestEffortKey);
}

std::string limit_keys() {
  std::string out;
  for (const LimitField& field : kFields) out += (out.empty() ? "" : "|") + std::string(field.key);
  return out;
}

Result<std::vector<std::string>> read_best_effort(const json::value& value,
                                                  const std::string& pointer) {
  if (!value.is_array())
    return error_at(pointer, "expected an array of limit names, got " +
                                 std::string(policy::strict::kind_name(value)));
  std::vector<std::string> out;
  const json::array& array = value.get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_string())
      return error_at(child(pointer, i), "expected a limit name (a string), got " +
                                             std::string(policy::strict::kind_name(array[i])));
    out.emplace_back(array[i].get_string().data(), array[i].get_string().size());
  }
  return out;
}

Result<std::uint64_t> read_count(const json::value& value, const std::string& pointer,
                                 bool nullable) {
  if (value.is_uint64()) return value.get_uint64();
  if (value.is_int64() && value.get_int64() >= 0)
    return static_cast<std::uint64_t>(value.get_int64());
  if (value.is_int64()) return error_at(pointer, "must not be negative");
  return error_at(pointer, std::string("expected a non-negative integer") +
                               (nullable ? " or null (no limit)" : "") + ", got " +
                               std::string(policy::strict::kind_name(value)));
}

Status check_range(std::uint64_t value, std::uint64_t min, std::uint64_t max, std::string_view unit,
                   const std::string& pointer) {
  if (value >= min && value <= max) return {};
  return error_at(pointer, std::to_string(value) + " is not from " + std::to_string(min) + " to " +
                               std::to_string(max) + " " + std::string(unit));
}

}  // namespace

Result<Limits> read_limits(const json::value& value) {
  const std::string pointer = "/limits";
  if (!value.is_object())
    return error_at(pointer,
                    "expected an object, got " + std::string(policy::strict::kind_name(value)));
  Limits limits;
  bool best_effort_given = false;
  for (const auto& member : value.get_object()) {
    const std::string_view key(member.key().data(), member.key().size());
    const std::string key_pointer = child(pointer, key);
    if (key == kBestEffortKey) {
      Result<std::vector<std::string>> names = read_best_effort(member.value(), key_pointer);
      if (!names) return names.failure();
      limits.best_effort = std::move(*names);
      best_effort_given = true;
      continue;
    }
    if (key == kGraceKey) {
      Result<std::uint64_t> grace = read_count(member.value(), key_pointer, false);
      if (!grace) return grace.failure();
      limits.timeout_grace_seconds = *grace;
      continue;
    }
    const LimitField* field = nullptr;
    for (const LimitField& candidate : kFields) field = candidate.key == key ? &candidate : field;
    if (field == nullptr)
      return error_at(key_pointer, "unknown key; expected one of " + known_keys());
    if (member.value().is_null()) {
      limits.*(field->member) = std::nullopt;  // explicitly no limit (e.g. the default process one)
      continue;
    }
    Result<std::uint64_t> count = read_count(member.value(), key_pointer, true);
    if (!count) return count.failure();
    limits.*(field->member) = *count;
    // A process limit the policy asks for is one it relies on: only sbx's default is
    // best-effort, unless the policy says otherwise in best_effort.
    if (!best_effort_given && key == "processes") std::erase(limits.best_effort, "processes");
  }
  return limits;
}

Status check_limits(const Limits& limits) {
  for (const LimitField& field : kFields) {
    const std::optional<std::uint64_t>& value = limits.*(field.member);
    if (!value) continue;
    Status status =
        check_range(*value, field.min, field.max, field.unit, child("/limits", field.key));
    if (!status) return status;
  }
  const std::string best_effort = child("/limits", kBestEffortKey);
  for (std::size_t i = 0; i < limits.best_effort.size(); ++i) {
    const std::string& name = limits.best_effort[i];
    const bool known = std::any_of(std::begin(kFields), std::end(kFields),
                                   [&](const LimitField& field) { return field.key == name; });
    if (!known)
      return error_at(
          child(best_effort, i),
          policy::path::quote(name) + " is not a limit; expected one of " + limit_keys());
    const auto here = limits.best_effort.begin() + static_cast<std::ptrdiff_t>(i);
    if (std::find(limits.best_effort.begin(), here, name) != here)
      return error_at(child(best_effort, i), "duplicate name " + policy::path::quote(name));
  }
  return check_range(limits.timeout_grace_seconds, 0, kMaxGraceSeconds, "seconds",
                     child("/limits", kGraceKey));
}

json::object limits_json(const Limits& limits) {
  json::object out;
  for (const LimitField& field : kFields) {
    const std::optional<std::uint64_t>& value = limits.*(field.member);
    if (value) {
      out[field.key] = *value;
    } else {
      out[field.key] = nullptr;
    }
  }
  out[kGraceKey] = limits.timeout_grace_seconds;
  json::array best_effort;
  for (const std::string& name : limits.best_effort) best_effort.emplace_back(name);
  out[kBestEffortKey] = std::move(best_effort);
  return out;
}

}  // namespace sbx::policy
