// The command's environment under a policy's /environment (see environment.hpp).
#include "sbx/core/environment.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>

extern char** environ;  // NOLINT: POSIX

namespace sbx {
namespace {

char upper(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }

template <typename Patterns>
bool matches_any(const Patterns& patterns, std::string_view name) {
  return std::any_of(std::begin(patterns), std::end(patterns), [&](std::string_view pattern) {
    return env_pattern_matches(pattern, name);
  });
}

bool inherited(EnvInherit inherit, std::string_view name) {
  switch (inherit) {
    case EnvInherit::kAll:
      return true;
    case EnvInherit::kCore:
      return matches_any(kCoreEnvironmentPatterns, name);
    case EnvInherit::kNone:
      return false;
  }
  return false;  // unknown: keep nothing (fail closed)
}

// Whether `name` survives every filtering step of `policy` (everything but `set`).
bool kept(const EnvironmentPolicy& policy, std::string_view name) {
  if (!inherited(policy.inherit, name)) return false;
  // Secrets (API keys, tokens, passwords) are taken away unless the policy names them in
  // `keep`: a command, or whatever it downloads and runs, must not get them by default.
  if (looks_like_secret(name) && !matches_any(policy.keep, name)) return false;
  if (matches_any(policy.exclude, name)) return false;
  if (!policy.include_only.empty() && !matches_any(policy.include_only, name)) return false;
  return true;
}

}  // namespace

bool env_pattern_matches(std::string_view pattern, std::string_view name) {
  // Iterative wildcard match with one backtrack point (the last '*'): linear-ish, no recursion.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && upper(pattern[p]) == upper(name[n])) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool looks_like_secret(std::string_view name) {
  std::string upper_name(name);
  std::transform(upper_name.begin(), upper_name.end(), upper_name.begin(), upper);
  return std::any_of(
      std::begin(kSecretNameParts), std::end(kSecretNameParts),
      [&](std::string_view part) { return upper_name.find(part) != std::string::npos; });
}

FilteredEnvironment filter_environment(const EnvironmentPolicy& policy,
                                       const std::vector<std::string>& env) {
  FilteredEnvironment out;
  for (const std::string& entry : env) {
    const std::size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    if (eq == std::string::npos || policy.set.count(name) != 0) {
      // Replaced by `set` (added below): not removed, and never twice in the result.
      if (eq == std::string::npos) out.removed.push_back(name);
      continue;
    }
    if (kept(policy, name)) {
      out.env.push_back(entry);
    } else {
      out.removed.push_back(name);
    }
  }
  for (const auto& [name, value] : policy.set) out.env.push_back(name + "=" + value);
  std::sort(out.removed.begin(), out.removed.end());
  out.removed.erase(std::unique(out.removed.begin(), out.removed.end()), out.removed.end());
  return out;
}

void point_pwd_at_working_directory(std::vector<std::string>& env, const EnvironmentPolicy& policy,
                                    const std::string& cwd) {
  if (cwd.empty() || policy.set.count("PWD") != 0) return;
  for (std::string& entry : env) {
    if (entry.rfind("PWD=", 0) == 0) entry = "PWD=" + cwd;
  }
}

std::vector<std::string> process_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    env.emplace_back(*entry);
  return env;
}

}  // namespace sbx
