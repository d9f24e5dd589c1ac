// Policy v1: the user-facing model, its strict JSON form (core/src/policy/README.md)
// and the four presets. Pure: nothing here touches the OS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// One filesystem entry. Exactly one of path/glob is set. Paths are special (":root", ":cwd",
// ":cwd/sub", ":tmpdir", ":slash_tmp", ":minimal", ":caches" (write only: the toolchain caches,
// caches.hpp)), absolute, or "~/..."; globs are deny-only.
struct PolicyEntry {
  std::string path;
  std::string glob;
  Access access = Access::kRead;
  friend bool operator==(const PolicyEntry&, const PolicyEntry&) = default;
};

struct FilesystemSpec {
  FilesystemKind kind = FilesystemKind::kRestricted;
  std::vector<PolicyEntry> entries;
  std::vector<std::string> protected_names;  // plain names, no '/'
  friend bool operator==(const FilesystemSpec&, const FilesystemSpec&) = default;
};

// The default process limit of a run: generous for a parallel build (make -j, test runners),
// small enough that a fork bomb cannot take the host's PIDs (pid_max is often 32768).
inline constexpr std::uint64_t kDefaultProcessLimit = 4096;
inline constexpr std::uint64_t kDefaultTimeoutGraceSeconds = 5;

// Resource limits of one run. nullopt: sbx sets no limit and the caller's own is inherited.
// How each one is enforced (rlimit of every process, cgroup of the whole run, or not at all on
// this host) is decided at run time and shown by `sbx explain`.
struct Limits {
  std::optional<std::uint64_t> processes = kDefaultProcessLimit;  // tasks of the whole run
  std::optional<std::uint64_t> open_files;                        // per process (RLIMIT_NOFILE)
  std::optional<std::uint64_t> file_size_bytes;      // largest file written (RLIMIT_FSIZE)
  std::optional<std::uint64_t> address_space_bytes;  // per process (RLIMIT_AS)
  std::optional<std::uint64_t> memory_bytes;         // the whole run (cgroup memory.max)
  std::optional<std::uint64_t> cpu_seconds;          // per process (RLIMIT_CPU)
  std::optional<std::uint64_t> timeout_seconds;      // wall clock: SIGTERM, then SIGKILL
  std::uint64_t timeout_grace_seconds = kDefaultTimeoutGraceSeconds;  // SIGTERM -> SIGKILL
  // The /limits keys a run may go without where this host cannot enforce them (`sbx explain`
  // says which hold here). Any other limit that does not hold refuses the run (exit 125),
  // naming it. The default process limit is best-effort (root in a container without a cgroup
  // cannot hold it, and it is sbx's default, not the policy's request); a /limits object that
  // sets `processes` without a `best_effort` key makes it required.
  std::vector<std::string> best_effort = {"processes"};
  friend bool operator==(const Limits&, const Limits&) = default;
};

// Which variables of the caller's environment the command starts from: every one, the small
// core set (kCoreEnvironmentPatterns) or none.
enum class EnvInherit : std::uint8_t { kAll, kCore, kNone };

// Names kept by "inherit": "core" (patterns as in EnvironmentPolicy). The constant lists of
// this header are constexpr arrays of string_view, not vectors of strings: a header constant
// that needs a constructor runs one static initialiser per translation unit that includes it
// (every sbx start paid for them, core/cli/README.md, "The executable").
inline constexpr std::string_view kCoreEnvironmentPatterns[] = {
    "HOME", "LANG",  "LANGUAGE", "LC_*",   "LOGNAME", "PATH",
    "PWD",  "SHELL", "TERM",     "TMPDIR", "TZ",      "USER"};

// Name parts that mark a variable as a secret, dropped by default (case-insensitive, anywhere
// in the name): the words real secrets are named with (OPENAI_API_KEY, GITHUB_TOKEN,
// MYSQL_PWD, PGPASSWORD, NPM_CONFIG__AUTH, HTTP_COOKIE, AWS_SESSION_TOKEN, SSH_PRIVATE_KEY).
// A substring match errs on the side of removing (KEYBOARD, PASSTHROUGH); `keep` keeps one.
inline constexpr std::string_view kSecretNameParts[] = {
    "KEY", "SECRET", "TOKEN", "PASS", "PWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE"};
// Name endings that mark a secret where the part alone would match far too much ("_PAT", a
// personal access token as in GH_PAT, would match every *_PATH anywhere in a name).
inline constexpr std::string_view kSecretNameSuffixes[] = {"_PAT"};
// Names that hold a secret word but no secret, which commands need: the working directories
// (PWD, OLDPWD), the ssh agent's socket path (whether the command may reach the agent is the
// policy's network.unix_sockets question, not the variable's: git over ssh needs it when the
// socket is allowed), git's author identity, and the desktop session's identifiers and bus
// address (a bus socket is again network.unix_sockets' question). Compared exactly (case
// included: these are the names the programs read).
inline constexpr std::string_view kNotSecretNames[] = {"PWD",
                                                       "OLDPWD",
                                                       "SSH_AUTH_SOCK",
                                                       "GIT_AUTHOR_NAME",
                                                       "GIT_AUTHOR_EMAIL",
                                                       "GIT_AUTHOR_DATE",
                                                       "XDG_SESSION_ID",
                                                       "XDG_SESSION_TYPE",
                                                       "XDG_SESSION_CLASS",
                                                       "XDG_SESSION_DESKTOP",
                                                       "DESKTOP_SESSION",
                                                       "DBUS_SESSION_BUS_ADDRESS"};

// /environment: what the command's environment holds, on every backend and unsandboxed. Applied
// in this order (environment.hpp filter_environment): start from `inherit`; drop every name
// that looks like a secret's (looks_like_secret) and every variable whose value carries URL
// credentials (carries_url_credentials) unless its name matches a `keep` pattern; drop names
// matching an
// `exclude` pattern; when `include_only` is not empty, drop names matching none of its
// patterns; finally add `set` (which wins over everything above). Patterns are
// case-insensitive; '*' matches any run of characters (also none), everything else itself.
struct EnvironmentPolicy {
  EnvInherit inherit = EnvInherit::kAll;
  std::vector<std::string> keep;
  std::vector<std::string> exclude;
  std::vector<std::string> include_only;
  std::map<std::string, std::string> set;
  friend bool operator==(const EnvironmentPolicy&, const EnvironmentPolicy&) = default;
};

// The full form. Every short form and preset converts to this.
struct Policy {
  int version = 1;
  FilesystemSpec filesystem;
  NetworkPolicy network;
  Limits limits;
  EnvironmentPolicy environment;
  friend bool operator==(const Policy&, const Policy&) = default;
};

inline constexpr std::size_t kMaxPolicyBytes = 1 << 20;  // 1 MiB
inline constexpr std::size_t kMaxPolicyDepth = 16;
inline constexpr std::string_view kPresetNames[] = {"read-only", "workspace-write",
                                                    "danger-full-access", "external-sandbox"};
// Protected names of the workspace-write preset and of a full form that omits them.
inline constexpr std::string_view kDefaultProtectedNames[] = {".git", ".codex", ".agents"};
// kDefaultProtectedNames as the list a FilesystemSpec holds.
std::vector<std::string> default_protected_names();

// The full-form policy a preset stands for. Error for an unknown name (listing the valid ones).
Result<Policy> preset_policy(std::string_view name);

// The short-form options next to "preset". An option that is set (even to its default) but has
// no meaning for the preset is an error naming it, e.g. "/exclude_slash_tmp: ..." for
// danger-full-access: a policy should not say things that are silently ignored.
struct PresetOptions {
  std::optional<std::vector<std::string>> writable_roots;  // workspace-write only
  std::optional<bool> network_access;          // read-only, workspace-write, external-sandbox
  std::optional<bool> exclude_tmpdir_env_var;  // workspace-write only
  std::optional<bool> exclude_slash_tmp;       // workspace-write only
};

// The short form: preset_policy(name) adjusted by `options`. Errors name the short-form pointer
// ("/preset", "/writable_roots/2", "/network_access", ...). The result passed validate_policy().
Result<Policy> preset_policy(std::string_view name, const PresetOptions& options);

// Checks a full-form policy built in code (e.g. by the CLI from flags) exactly as parse_policy
// checks a document, and returns it normalised (duplicate and trailing slashes removed, domains
// lower-cased). Errors name the pointer the value would have in policy_to_json(policy).
Result<Policy> validate_policy(Policy policy);

// Parses either form. Strict: UTF-8, at most kMaxPolicyBytes, no duplicate or unknown keys,
// nesting at most kMaxPolicyDepth. Every error starts with the JSON pointer of the offending
// value, e.g. "/filesystem/entries/3/access: expected one of read|write|deny"; the document as a
// whole is written "/". Syntax errors also give line, column and byte offset. The result is
// normalised as by validate_policy(). Never throws.
Result<Policy> parse_policy(std::string_view json_text);

// Serializes the full form (stable key order, pretty-printed); parse_policy(to_json(p)) == p.
std::string policy_to_json(const Policy& policy);

std::string_view to_string(Access access);
std::string_view to_string(FilesystemKind kind);
std::string_view to_string(NetworkMode mode);
std::string_view to_string(EnvInherit inherit);

}  // namespace sbx
