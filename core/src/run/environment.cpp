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
  return std::any_of(std::begin(patterns), std::end(patterns),
                     [&](std::string_view pattern) { return env_pattern_matches(pattern, name); });
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

// Whether the variable `name`=`value` survives every filtering step of `policy` (everything
// but `set`).
bool kept(const EnvironmentPolicy& policy, std::string_view name, std::string_view value) {
  if (!inherited(policy.inherit, name)) return false;
  // Secrets (API keys, tokens, passwords, and URLs with a password in them) are taken away
  // unless the policy names them in `keep`: a command, or whatever it downloads and runs, must
  // not get them by default.
  if ((looks_like_secret(name) || carries_url_credentials(value)) &&
      !matches_any(policy.keep, name))
    return false;
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
  if (std::find(std::begin(kNotSecretNames), std::end(kNotSecretNames), name) !=
      std::end(kNotSecretNames))
    return false;
  std::string upper_name(name);
  std::transform(upper_name.begin(), upper_name.end(), upper_name.begin(), upper);
  const std::string_view upper_view(upper_name);
  return std::any_of(std::begin(kSecretNameParts), std::end(kSecretNameParts),
                     [&](std::string_view part) {
                       return upper_view.find(part) != std::string_view::npos;
                     }) ||
         std::any_of(std::begin(kSecretNameSuffixes), std::end(kSecretNameSuffixes),
                     [&](std::string_view suffix) {
                       return upper_view.size() >= suffix.size() &&
                              upper_view.substr(upper_view.size() - suffix.size()) == suffix;
                     });
}

bool carries_url_credentials(std::string_view value) {
  // RFC 3986 section 3: URI = scheme ":" "//" authority ...; scheme = ALPHA *( ALPHA / DIGIT /
  // "+" / "-" / "." ); authority = [ userinfo "@" ] host [ ":" port ], ending at the first "/",
  // "?" or "#"; userinfo = user [ ":" password ]. Every "://" in the value is looked at, so a
  // URL inside a list ("a,https://u:p@h", "x https://u:p@h") counts too.
  const auto scheme_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
  };
  for (std::size_t at = value.find("://"); at != std::string_view::npos;
       at = value.find("://", at + 1)) {
    if (at == 0 || !scheme_char(value[at - 1])) continue;  // no scheme before it
    const std::string_view rest = value.substr(at + 3);
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    // The last '@' ends the userinfo: a password written with an unescaped '@' in it
    // ("u:p@ss@host") still counts as one.
    const std::size_t end = authority.rfind('@');
    if (end != std::string_view::npos &&
        authority.substr(0, end).find(':') != std::string_view::npos)
      return true;
  }
  return false;
}

FilteredEnvironment filter_environment(const EnvironmentPolicy& policy,
                                       const std::vector<std::string>& env) {
  FilteredEnvironment out;
  for (const std::string& entry : env) {
    const std::size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq);
    if (name.empty()) {
      // "=x" (or ""): no name to pass on; bwrap refused the whole run over it before.
      out.removed.emplace_back(kEmptyVariableName);
      continue;
    }
    if (eq == std::string::npos || policy.set.count(name) != 0) {
      // Replaced by `set` (added below): not removed, and never twice in the result.
      if (eq == std::string::npos) out.removed.push_back(name);
      continue;
    }
    if (kept(policy, name, std::string_view(entry).substr(eq + 1))) {
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
