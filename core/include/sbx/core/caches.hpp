// Toolchain caches, the policy entry ":caches" (core/src/caches/README.md): the regenerable
// caches of the toolchains (npm, pip, cargo, go, gradle, maven, the XDG cache), found from the
// environment the tools themselves read, and the project's own cache in sbx's private state that
// the command's tools are pointed at instead, through their own variables. The host's caches are
// never written; their credentials are kept unreadable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#ifndef _WIN32
#include "sbx/sdk/unique_fd.hpp"
#endif

namespace sbx::caches {

// One toolchain cache of the host, and the variable that points the tool elsewhere.
struct ToolCache {
  std::string tool;       // "npm", "pip", "cargo registry", ... (for people)
  std::string host_path;  // the host's cache directory, absolute (canonical after resolution)
  // How host_path was found, e.g. "$npm_config_cache" or "~/.npm ($npm_config_cache unset)".
  std::string source;
  // The variable the command gets ("npm_config_cache", "MAVEN_OPTS"); empty when no variable
  // moves this cache (macOS's ~/Library/Caches): it then stays read-only, nothing more.
  std::string variable;
  std::string subdir;   // the directory below the project's cache it points at ("npm")
  bool exists = false;  // resolution: host_path is an existing directory
  friend bool operator==(const ToolCache&, const ToolCache&) = default;
};

// A file of a toolchain's home that holds credentials: denied whenever caches are requested.
struct CredentialFile {
  std::string path;  // absolute
  std::string tool;
  // Only when the file holds an authentication setting (npm's user config is also where a
  // registry is configured): resolution reads it and denies it only then.
  bool only_with_auth = false;
  friend bool operator==(const CredentialFile&, const CredentialFile&) = default;
};

enum class Platform : std::uint8_t { kLinux, kMacos };

#ifdef __APPLE__
inline constexpr Platform kHostPlatform = Platform::kMacos;
#else
inline constexpr Platform kHostPlatform = Platform::kLinux;
#endif

struct Found {
  std::vector<ToolCache> caches;
  std::vector<CredentialFile> credentials;
  // A configuration file that exists but could not be read: the cache it may name is not kept.
  std::vector<std::string> notes;
};

// Reads a tool's configuration file for find_tool_caches: its text, nullopt when there is none,
// an error when it exists but cannot be read (read_config_file is the host's).
using ConfigReader = std::function<Result<std::optional<std::string>>(const std::string& path)>;

// Every toolchain cache and credential file, as the tools would find them from `env`, the home
// directory `home` (absolute) and their configuration files read with `read` (npm's user
// configuration `cache`, pip's configuration files' `cache-dir`). A tool's cache named in more
// than one place (its variable, a configuration file) is listed once for each; its default only
// when nothing names one. Pure when `read` is (the default reads nothing): nothing is looked up
// (host_path as the tool spells it, `exists` false).
Found find_tool_caches(const std::map<std::string, std::string>& env, const std::string& home,
                       Platform platform = kHostPlatform, const ConfigReader& read = {});

// The name a tool reads an environment variable `name` by, for the tools that fold the names
// they read: npm takes npm_config_<key> in any case (@npmcli/config), yarn YARN_<key> in any
// case, pip PIP_<option> with the option in any case and '-' or '_' (its _normalize_name), so
// "Npm_Config_Cache" is "npm_config_cache" and "PIP_cache-dir" is "PIP_CACHE_DIR". Any other
// name is itself. Pure.
std::string variable_key(std::string_view name);

// True when npm configuration text may set a credential: a line (lines end at '\n' or '\r')
// whose key, unquoted, trimmed and without a trailing "[]", ends in "_auth", "_authToken",
// "_password", "certfile" or "keyfile", or is a client "key", for any registry scope, in any
// case (npm help npmrc, "Auth related configuration"; npm's ini parser). Conservative: every
// section counts. Pure.
bool holds_auth_setting(std::string_view text);

#ifndef _WIN32
// The text of the configuration file `path`: nullopt when it does not exist, an error when it
// is not a regular file (a device or FIFO is never opened for reading: Linux opens it O_PATH
// first), cannot be read, or is larger than 1 MiB.
Result<std::optional<std::string>> read_config_file(const std::string& path);

// holds_auth_setting of the file at `path`; true (fail closed: deny it) when it cannot be read
// whole (read_config_file).
bool file_holds_auth_setting(const std::string& path);
#endif

// The caches of one run, after resolution.
struct CachePlan {
  // The project the cache belongs to: the run's working directory (canonical). Never a
  // directory above it found by a marker such as `.git`: a sandboxed command can make one in
  // any directory it can write (/tmp in workspace-write), and would then share, and poison, the
  // cache of every project below it.
  std::string project;
  std::string directory;  // the project's cache in sbx's state: <cache>/sbx/caches/<key>
  std::string data;       // directory + "/data": the only part a sandboxed command may write
  std::vector<ToolCache> caches;
  std::vector<std::string> credentials_denied;  // real paths
  std::vector<std::string> notes;
  std::string home;  // the home directory the caches were found from (never mounted over)
  friend bool operator==(const CachePlan&, const CachePlan&) = default;
};

// How the caches hold, in one paragraph for `sbx explain`: on a backend that mounts them
// copy-on-write (CopyOnWrite) or, on every other, through the tools' variables.
std::string_view how_text(bool copy_on_write = false);

struct CopyOnWrite;

// What `variable` is set to for `cache`: "<data>/<subdir>", for MAVEN_OPTS the system property
// naming it ("-Dmaven.repo.local=<data>/maven"); with `cow`, the host's directory for each of
// its variables.
std::string value_of(const CachePlan& plan, const ToolCache& cache,
                     const CopyOnWrite* cow = nullptr);

// The directory a cache's variable names on the host, what a copy-on-write run mounts: the
// parent of the listed cache for CARGO_HOME and GRADLE_USER_HOME (cargo takes its lock files
// at $CARGO_HOME's top, gradle keeps its daemon and native files in $GRADLE_USER_HOME: the
// caches alone, written, would not do), the cache itself for every other tool. Pure.
std::string host_directory(const ToolCache& cache);

// The caches of a run whose backend mounts them copy-on-write (its probe passes
// kCacheOverlayCheck, sbx/sdk/backend.hpp: bwrap). Per variable, the first cache listed for it
// (the one its tool takes: its variable, else its configuration file, else its default) is
// served when its host_directory exists and is read-only in the policy (its rule is read: not
// denied, and not writable, where the command's writes are meant for the host) or lies below
// one that is: those are mounted, each at its own path, the host's directory the lower layer
// and the project's layers the upper one. The variable is then set to that host directory (the
// value the host's tool takes anyway; set so that an environment policy that drops it cannot
// send the tool elsewhere); every other variable points at the project's cache as before.
struct CopyOnWrite {
  // Mounted: no one below another, shallowest first; layers are
  // <plan.directory>/overlay/<project_key(path)>, with `upper` and `work` in each.
  std::vector<CacheOverlay> overlays;
  std::vector<std::pair<std::string, std::string>> variables;  // {variable, host directory}
  // sbx's own state (<cache>/sbx) when an overlay holds it (the XDG cache): kept read-only in
  // the sandbox (a read rule the run adds), as it is without the overlay.
  std::vector<std::string> read_only;
  friend bool operator==(const CopyOnWrite&, const CopyOnWrite&) = default;
};

// Takes the overlay at `path` out of `cow`, with each variable no other overlay serves and the
// read-only state no other overlay holds. Pure.
void drop_overlay(CopyOnWrite& cow, const std::string& path);

// The real path of an existing directory, or nullopt (missing, not a directory, unresolvable).
using DirectoryLookup = std::function<std::optional<std::string>(const std::string& path)>;

// The copy-on-write caches of `plan` under `policy` (CopyOnWrite); the plan's home and the
// policy's working directory are never mounted over, nor anything above them, nor a directory whose
// path overlayfs cannot take in its mount options (',', ':', '\', a line break). Pure when `lookup`
// is.
CopyOnWrite plan_copy_on_write(const CachePlan& plan, const ResolvedPolicy& policy,
                               const DirectoryLookup& lookup);

// Sets each cache's variable in `env` (KEY=VALUE entries), replacing a value already there;
// MAVEN_OPTS is appended to. Variables only: the directories exist (prepare_project). With
// `cow`, each of its variables is set to its host directory instead of the project's cache.
void apply_environment(const CachePlan& plan, std::vector<std::string>& env,
                       const CopyOnWrite* cow = nullptr);

// The name of a project's cache: its directory's last name (letters, digits, '.', '_', '-';
// at most 32) and 24 hex digits of SHA-1 of the whole path, e.g. "app-1f0c...".
std::string project_key(const std::string& root);

// One project's cache as `sbx cache list` shows it.
struct ProjectCache {
  std::string key;
  std::string directory;
  std::string project;  // from its `project` file; "" when unreadable
  bool project_exists = false;
  std::uint64_t bytes = 0;  // of regular files below it, each counted once
  std::uint64_t files = 0;
};

#ifndef _WIN32
// <cache>/sbx/caches (private_state::cache_base: $XDG_CACHE_HOME or ~/.cache), each directory
// made 0700 and checked private: the base every project's cache lives in, by its real path.
// Never a runtime directory: a tmpfs emptied at logout is no place for downloads.
Result<std::string> caches_base();

// Makes the project's cache (<base>/<key> and its data directory, private), records the project
// root in <base>/<key>/project, and links the host's cargo configuration into the redirected
// CARGO_HOME when there is one. `caches` become the plan's.
Result<CachePlan> prepare_project(const std::string& base, const std::string& project,
                                  std::vector<ToolCache> caches);

// The real path of `path` when it is an existing directory (a DirectoryLookup).
std::optional<std::string> existing_directory(const std::string& path);

// Makes each overlay's layers (private, 0700: <layers>, <layers>/upper, <layers>/work), below
// the project's cache that prepare_project made, and locks each for the run (an exclusive
// flock(2) on <layers>, returned: held until the run has ended). The upper layer holds what the
// commands wrote; overlayfs makes <layers>/work/work mode 000 (clear_project opens it up to
// remove it). A layer another run of the project holds is not shared: overlayfs empties its
// work directory at every mount (fs/overlayfs/super.c ovl_workdir_create), under the running
// overlay, and two overlays on one upper layer behave in no defined way
// (Documentation/filesystems/overlayfs.rst, "Sharing and copying layers"); that cache is taken
// out of `cow` (drop_overlay) and its tool points at the project's cache for this run.
Result<std::vector<UniqueFd>> make_overlay_layers(CopyOnWrite& cow);

// Every project cache under `base`, sorted by key.
Result<std::vector<ProjectCache>> list_projects(const std::string& base);

// Removes <base>/<key> with everything below it, never following a symlink and never leaving
// `base`; a directory the tools made read-only (Go's module cache) is opened up first.
Status clear_project(const std::string& base, const std::string& key);
#endif

}  // namespace sbx::caches
