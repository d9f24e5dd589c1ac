// Helpers shared by the policy translation units (validation, network rules, presets, JSON).
// Private to libsbx.
#pragma once

#include <boost/json/fwd.hpp>
#include <string>
#include <string_view>

#include "sbx/core/policy.hpp"
#include "sbx/sdk/result.hpp"

namespace sbx::policy {

// A filesystem entry path, normalised: special (":cwd/sub" included), absolute, "~" or "~/...".
// Errors start with `pointer`.
Result<std::string> normalize_entry_path(std::string_view raw, const std::string& pointer);

// Validates and normalises /network (ports, domains, sockets and which fields the mode allows).
Status check_network(NetworkPolicy& network);

// /limits: reads the object strictly (null: no limit), checks every value's range (errors name
// "/limits/<key>"), and writes the full form (every key; null where unset).
Result<Limits> read_limits(const boost::json::value& value);
Status check_limits(const Limits& limits);
boost::json::object limits_json(const Limits& limits);

// /environment: reads the object strictly, checks names and patterns (errors name
// "/environment/<key>/..."), and writes the full form (every key).
Result<EnvironmentPolicy> read_environment(const boost::json::value& value);
Status check_environment(const EnvironmentPolicy& environment);
boost::json::object environment_json(const EnvironmentPolicy& environment);

// policy_to_json's object before rendering, for documents that embed a policy (an approval).
boost::json::object policy_json(const Policy& policy);

}  // namespace sbx::policy
