// Settings scopes (core/src/settings/README.md): what a run
// uses when the caller does not say, from four places merged in a fixed order, and the locks an
// administrator puts on all of them.
//
//   managed      /etc/sbx/managed.json: root-owned, checked like the plugin directories (owner,
//                no group/other write on it and every directory above it, no symlink); an
//                unsafe file is an error, never skipped. The only scope that may hold "locks".
//   user         $XDG_CONFIG_HOME/sbx/settings.json (default ~/.config/sbx/settings.json). The
//                only scope that may hold "trusted_projects".
//                The managed and user scopes may choose the backends: "backends": {"order":
//                [names], "plugin_dirs": [absolute directories]}.
//   project      .sbx/settings.json of the nearest trusted project: the working directory or
//                the nearest directory above it that holds one and is one of the user's
//                trusted_projects (an untrusted repository must not widen its own sandbox).
//                Untrusted files on the way are never read, each reported with a note: a
//                sandboxed command can write sub/.sbx/settings.json, and that decoy must not
//                take the trusted project's place. Inside a trusted project, ".sbx" is a
//                protected name of the final policy (like ".git"), so a sandboxed command
//                cannot create or change .sbx under its writable roots.
//   command line the flags (or the C API caller's arguments).
//
// Merge: "policy" is the widen() (permissions.hpp) of every scope's policy, in the order above,
// so a later scope adds grants and never lifts a deny; a policy given on the command line
// (--policy/--preset) replaces it. "sandbox" and "allow_unsandboxed": the last scope that sets
// one wins. "excluded_commands": the union, in scope order. "backends.order": the last scope
// that sets one (the command line's --backends above all); "backends.plugin_dirs": the union, in
// scope order, after the install's own plugin directory (every one through the same trusted
// loader, core/src/plugins/README.md). Then the locks: a value of any scope
// (or flag) that asks for more than a lock allows is refused with the lock named, never
// narrowed; the lock's mandatory deny entries are added to the final policy.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/manager.hpp"
#include "sbx/core/platform_types.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/sdk/result.hpp"

namespace sbx::settings {

// The directory of a project's settings (".sbx/settings.json").
inline constexpr std::string_view kProjectSettingsDir = ".sbx";

enum class Scope { kBuiltin, kManaged, kUser, kProject, kCommandLine };
// "built-in", "managed", "user", "project", "command line".
std::string_view to_string(Scope scope);

// The managed scope's "locks". nullopt / empty: no lock of that kind.
struct Locks {
  std::optional<std::vector<std::string>> presets;              // preset names a policy may use
  std::optional<std::vector<FilesystemKind>> filesystem_kinds;  // kinds the final policy may have
  std::optional<std::vector<NetworkMode>> network_modes;        // modes it may have
  // Ceiling: every writable path of the final policy lies inside one of these (lexically, as
  // permissions.hpp compares paths: ":cwd/x" inside ":cwd"; fail-closed on other spellings).
  std::optional<std::vector<std::string>> writable_roots;
  // Ceiling: every allowed domain of network mode proxy is one of these, or under a "*.x" one;
  // network mode enabled (every domain) is then refused.
  std::optional<std::vector<std::string>> allowed_domains;
  std::vector<std::string> deny;  // added to every final policy: paths, or globs (* ? [ {)
  // false: no run without a sandbox that the caller asks for (--allow-unsandboxed, --sandbox
  // forbid, excluded commands, SBX_EXEC_ALLOW_UNSANDBOXED, allow_unsandboxed: true).
  std::optional<bool> allow_unsandboxed;
  // true: a run whose sandbox is wanted but unavailable never falls back to running without
  // one (--allow-unsandboxed and SBX_EXEC_ALLOW_UNSANDBOXED are refused).
  std::optional<bool> require_backend_available;
  // true: the backend order is the managed settings' "backends.order" (the default order when
  // they set none); another scope's order, --backends and a C API caller's order are refused.
  std::optional<bool> backend_order;
  // true: the only plugin directories are the install's and the managed settings'
  // "backends.plugin_dirs"; the user's, --plugin-dir and a C API caller's are refused.
  std::optional<bool> plugin_dirs;
  friend bool operator==(const Locks&, const Locks&) = default;
};

// One scope's file, as read. Keys: "policy" (either form), "sandbox" (auto|require|forbid),
// "allow_unsandboxed" (bool: may a caller ask for a run without a sandbox; default true),
// "excluded_commands" (command patterns, see command_patterns.hpp), "trusted_projects" (user
// scope: absolute directories), "backends" (managed and user scopes: "order", backend names in
// preference order; "plugin_dirs", absolute directories), "locks" (managed scope).
struct ScopeSettings {
  std::optional<Policy> policy;
  std::optional<std::string> preset;  // the preset "policy" names (short form), if any
  std::optional<SandboxPreference> sandbox;
  std::optional<bool> allow_unsandboxed;
  std::vector<std::string> excluded_commands;
  std::vector<std::string> trusted_projects;
  std::optional<std::vector<std::string>> backend_order;  // "backends": {"order": [...]}
  std::vector<std::string> plugin_dirs;                   // "backends": {"plugin_dirs": [...]}
  std::optional<Locks> locks;
};

inline constexpr std::size_t kMaxSettingsBytes = kMaxPolicyBytes;

// Strict like a policy: UTF-8, no duplicate or unknown keys, at most kMaxSettingsBytes; every
// error starts with the JSON pointer of the offending value ("/locks/network_modes/1: ...").
// A key the scope may not hold ("locks" outside managed, "trusted_projects" outside user,
// "backends" outside managed and user) is an error naming the scope that may.
Result<ScopeSettings> parse_settings(std::string_view text, Scope scope);

// The preset a policy document names ("preset" of the short form); nullopt for the full form
// or a document that does not parse.
std::optional<std::string> preset_name(std::string_view policy_json);

// A value and the scope that set it.
template <typename T>
struct Sourced {
  T value;
  Scope scope = Scope::kBuiltin;
};

// Where the files are. current_sources() gives the production places; the fields exist so that
// tests can point the managed scope elsewhere. No front end lets a user set them: the managed
// file binds the user, so only the administrator's file at its fixed path may be read.
struct Sources {
  std::string managed_file = "/etc/sbx/managed.json";
  std::string managed_trust_root = "/";  // every directory from here down is checked
  std::optional<uid_t> managed_owner;    // trusted besides root (tests; nullopt in production)
  std::string user_file;                 // empty: no user scope
  std::string cwd;                       // absolute: where the project search starts
  // The working directory as the caller named it, symlinks kept (PWD, or --cwd as given); empty
  // when unknown. A trusted project holding it must hold `cwd` too (load_settings refuses else).
  std::string logical_cwd;
};

// The production sources for `cwd` and `env` (XDG_CONFIG_HOME, HOME; PWD is the logical cwd
// when it names the directory `cwd`, as getcwd(3) and the shells check it).
Sources current_sources(const std::string& cwd, const std::map<std::string, std::string>& env);

// Every scope read and merged.
struct Settings {
  std::optional<Sourced<Policy>> policy;      // nullopt: no scope sets one (built-in default)
  std::vector<Scope> policy_scopes;           // the scopes whose policies were widened together
  std::vector<Sourced<std::string>> presets;  // preset names those policies used
  Sourced<SandboxPreference> sandbox{SandboxPreference::kAuto, Scope::kBuiltin};
  Sourced<bool> allow_unsandboxed{true, Scope::kBuiltin};
  std::vector<Sourced<std::string>> excluded_commands;
  std::vector<std::string> trusted_projects;  // user scope
  // "backends.order" of the last scope that sets one; nullopt: the default order.
  std::optional<Sourced<std::vector<std::string>>> backend_order;
  // "backends.plugin_dirs" of every scope, in scope order, without repeats.
  std::vector<Sourced<std::string>> plugin_dirs;
  Locks locks;  // managed scope
  // Files read, scope by scope (real paths; resolution keeps them read-only in the sandbox).
  std::vector<Sourced<std::string>> files;
  // Files that would be read if they existed: the user file when missing, and
  // .sbx/settings.json of each trusted project that has none (wherever it is: a run in one
  // trusted project must not create another's). Resolution keeps them uncreatable, so a
  // command cannot plant settings for the next run.
  std::vector<std::string> absent_files;
  // The existing settings files of trusted projects that this run does not read (real paths):
  // kept read-only like `files`, so a run cannot rewrite the settings of another trusted
  // project (one below its writable roots) for the next run there.
  std::vector<std::string> guarded_files;
  // The existing .sbx directories of every trusted project (real paths): kept read-only whole,
  // so that a run can neither chmod one (hiding the settings from the next run) nor plant files
  // in it.
  std::vector<std::string> guarded_dirs;
  // The trusted project whose file was read, else the nearest directory holding an untrusted
  // .sbx/settings.json (not read).
  std::optional<std::string> project_root;
  bool project_trusted = false;
  // Untrusted .sbx/settings.json files at or above the cwd, below the project (or all of them
  // without a trusted one), nearest first: ignored, each with a note.
  std::vector<std::string> ignored_project_files;
  // A trusted project holds the cwd (whether or not it has a settings file): decide() adds
  // ".sbx" to the protected names.
  bool inside_trusted_project = false;
  std::vector<std::string> notes;  // e.g. an untrusted project file that was skipped
};

// Reads and merges every scope. Errors: an unsafe managed file (naming the check that failed),
// a file that does not parse (its path, then the pointer), a scope's value a lock forbids
// (naming the lock), and settings whose policies cannot be widened together.
// `caller`: an embedder's own scope (the C API's settings argument), merged last like the
// command line; it may not hold locks or trusted_projects (parse it with Scope::kCommandLine).
Result<Settings> load_settings(const Sources& sources, const ScopeSettings* caller = nullptr);

// Merges scopes already read (load_settings after reading; tests). `scopes` in any order.
Result<Settings> merge_settings(const std::vector<std::pair<Scope, ScopeSettings>>& scopes);

// The backends a caller asks for (--backends/--plugin-dir, a C API manager's arguments), and the
// words that name them in a refusal.
struct BackendRequest {
  std::vector<std::string> order;  // empty: the settings' order (else the default)
  std::vector<std::string> plugin_dirs;
  std::string order_from = "--backends";
  std::string plugin_dirs_from = "--plugin-dir";
};

// Which backends a run considers: the order (empty: every loaded plugin, kDefaultBackendOrder
// first) and the plugin directories searched after the install's own, each with its scope.
struct BackendSelection {
  Sourced<std::vector<std::string>> order{{}, Scope::kBuiltin};
  std::vector<Sourced<std::string>> plugin_dirs;
};

// The caller's backends on top of the settings'; a locked order or locked plugin directories
// that the caller asks to change are an Error naming the lock ("refused by the administrator's
// lock /locks/backend_order (managed settings): --backends asks for ...").
Result<BackendSelection> decide_backends(const Settings& settings, const BackendRequest& request);

// What the caller (flags, C API arguments) asks for, the highest scope.
struct Overrides {
  std::optional<Policy> policy;       // replaces the settings' policy
  std::optional<std::string> preset;  // the preset it came from, if one
  bool policy_changed = false;        // --writable-root/--deny/--network were applied
  std::optional<SandboxPreference> sandbox;
  bool allow_unsandboxed = false;  // run without a sandbox when none is available
  BackendRequest backends;         // --backends, --plugin-dir (decide_backends)
};

// The request after the locks: what a run uses, and which scope decided each part.
struct Decided {
  Policy policy;                         // with the managed deny entries added
  Scope policy_scope = Scope::kBuiltin;  // the highest scope that set it (command line: flags)
  Sourced<SandboxPreference> sandbox{SandboxPreference::kAuto, Scope::kBuiltin};
  bool allow_unsandboxed = false;     // the override flag, accepted
  bool unsandboxed_permitted = true;  // may any run go without a sandbox (excluded commands)
  std::vector<std::string> excluded_commands;
  bool escape_hatch_locked = false;  // locks.allow_unsandboxed is false
  bool require_backend_available = false;
  BackendSelection backends;  // decide_backends of the settings and the caller's request
};

// The base policy before command-line additions: the caller's, else the settings', else the
// workspace-write preset (built-in).
Sourced<Policy> base_policy(const Settings& settings, const Overrides& overrides);

// Applies the locks to what the caller asks for on top of `settings`: a value that asks for
// more than a lock allows is an Error naming the lock ("locked by the administrator
// (/etc/sbx/managed.json /locks/network_modes): ..."). `policy` is the final policy before the
// managed deny entries (base_policy plus the caller's additions).
Result<Decided> decide(const Settings& settings, const Overrides& overrides, Policy policy);

// What a run and `sbx explain` report of the settings (run.hpp RunRequest::settings).
SettingsSummary summarize(const Settings& settings, const Decided& decided);

// The settings as JSON for `sbx config show --json`: every value with the scope that set it,
// the locks, the files read and the notes.
std::string settings_to_json(const Settings& settings);

// Adds `directory` (absolute, canonical) to "trusted_projects" of the user file at `user_file`
// (created with its directory when missing), keeping the rest of the file; the file is
// rewritten atomically. Error if the existing file does not parse.
Status trust_project(const std::string& user_file, const std::string& directory);

}  // namespace sbx::settings
