// The command's environment under a policy's /environment (policy.hpp EnvironmentPolicy): one
// function builds it for `sbx exec`, `sbx explain` and the C API, sandboxed or not. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/policy.hpp"

namespace sbx {

struct FilteredEnvironment {
  std::vector<std::string> env;      // "NAME=value": the kept ones in input order, then `set`
  std::vector<std::string> removed;  // names taken away, sorted, each once (never values)
};

// Applies `policy` to `env` ("NAME=value" entries; an entry without '=' is dropped and counts
// as removed). Order: inherit, the default secret filter (unless `keep`), exclude,
// include_only, then set. A name `set` gives is not listed as removed.
FilteredEnvironment filter_environment(const EnvironmentPolicy& policy,
                                       const std::vector<std::string>& env);

// Case-insensitive; '*' matches any run of characters (also none).
bool env_pattern_matches(std::string_view pattern, std::string_view name);

// True if `name` contains one of kSecretNameParts, ignoring case.
bool looks_like_secret(std::string_view name);

// This process's environment (environ), "NAME=value" in order.
std::vector<std::string> process_environment();

}  // namespace sbx
