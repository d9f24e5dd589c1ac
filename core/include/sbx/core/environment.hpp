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

// How an entry with an empty name ("=x") is listed among names: exec(3) accepts one in an
// environment (a C program, another runtime, `env '=x'` can pass it), but it names no
// variable, no program can look it up, and bwrap cannot set it (--setenv needs a name).
inline constexpr std::string_view kEmptyVariableName = "(empty name)";

// Applies `policy` to `env` ("NAME=value" entries). Dropped on every path, whatever the policy,
// and counted as removed: an entry without '=' (a bare NAME: a variable the caller withheld,
// such as the LD_* variables the CLI takes out of its own environment at start,
// spawn.hpp harden_current_process; its name is listed) and an entry with an empty name
// (listed as kEmptyVariableName; the caller's environment is not the user's input, so it is
// dropped rather than refused). Order: inherit, the default secret filter by name and by value
// (unless `keep`), exclude, include_only, then set. A name `set` gives is not listed as removed.
FilteredEnvironment filter_environment(const EnvironmentPolicy& policy,
                                       const std::vector<std::string>& env);

// PWD in a POSIX command's environment names the directory it runs in. One inherited from the
// caller names the caller's (an agent passing another working directory, `sbx exec --cwd`): it
// is set to `cwd`, as a shell there would have it and as bwrap sets it anyway (which lets the
// bwrap backend start the command directly, without stage 2). A PWD the policy `set`s is left
// as it is, and none is added where the environment has none (`inherit: none`).
void point_pwd_at_working_directory(std::vector<std::string>& env, const EnvironmentPolicy& policy,
                                    const std::string& cwd);

// Case-insensitive; '*' matches any run of characters (also none).
bool env_pattern_matches(std::string_view pattern, std::string_view name);

// True if `name` contains one of kSecretNameParts or ends with one of kSecretNameSuffixes,
// ignoring case, and is not one of kNotSecretNames (PWD, OLDPWD, SSH_AUTH_SOCK, ...).
bool looks_like_secret(std::string_view name);

// True if `value` holds, anywhere, a URL whose userinfo has a password part
// ("scheme://user:password@host", also with an empty user): a database or proxy URL with its
// credentials ("postgres://u:pw@h/db", "a,https://u:p@h"). A user name alone
// ("ssh://git@host") is not a credential and does not count.
bool carries_url_credentials(std::string_view value);

// This process's environment (environ), "NAME=value" in order.
std::vector<std::string> process_environment();

}  // namespace sbx
