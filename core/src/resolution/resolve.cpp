// Resolution of a Policy into the ResolvedPolicy backends enforce (see resolve.hpp).
#include "sbx/core/resolve.hpp"

#ifndef _WIN32
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "platform/windows_host.hpp"
#include "plugins/probe_store.hpp"
#include "policy/json_strict.hpp"
#include "policy/path_util.hpp"
#include "sbx/core/win_path.hpp"
#ifndef _WIN32
#include "sbx/sdk/private_state.hpp"
#endif
#include "resolution/internal.hpp"
#include "sbx/core/runtime.hpp"
#ifndef _WIN32
#include "sbx/sdk/unique_fd.hpp"
#endif

#ifndef _WIN32
extern char** environ;  // NOLINT: POSIX
#endif

namespace sbx {
namespace {

using policy::strict::child;
using policy::strict::error_at;

// One path entry after special paths and "~" were expanded.
struct Candidate {
  std::string lexical;    // absolute, as the policy spelled it (for messages)
  std::string canonical;  // what backends get
  Access access = Access::kDeny;
  std::string pointer;       // /filesystem/entries/N
  bool system_path = false;  // :tmpdir / :slash_tmp: the final symlink may be followed
};

int strength(Access access) {
  // Ties on one path: deny > write > read, the most restrictive wins (core/src/policy/README.md).
  switch (access) {
    case Access::kDeny:
      return 2;
    case Access::kWrite:
      return 1;
    case Access::kRead:
      return 0;
  }
  return 2;
}

// Parents before children: (depth, path).
void sort_rules(std::vector<PathRule>& rules) {
  std::sort(rules.begin(), rules.end(), [](const PathRule& a, const PathRule& b) {
    std::size_t da = policy::path::depth(a.path);
    std::size_t db = policy::path::depth(b.path);
    return da != db ? da < db : a.path < b.path;
  });
}

bool is_directory(const std::string& path) {
#ifdef _WIN32
  std::error_code error;
  return std::filesystem::is_directory(path, error);
#else
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
#endif
}

#ifndef _WIN32
// What policy::path::canonicalize makes of many paths that share their directories, each
// directory looked up once: the toolchains' caches and credential files lie in a few
// directories of the home, and a realpath(3) per path walks every component again (and
// canonicalize() of a missing path one realpath per missing component).
class PathLookup {
 public:
  struct Fact {
    std::string canonical;  // as canonicalize(): the real path of the longest existing
                            // ancestor, the rest as written
    bool exists = false;
    mode_t mode = 0;  // of what the path leads to (symlinks followed), when it exists
  };
  // `path` absolute. One with "." or ".." components or doubled slashes is left to
  // canonicalize() itself.
  Fact of(const std::string& path) {
    if (path.empty() || path.front() != '/' || policy::path::check_components(path) ||
        policy::path::collapse_slashes(path) != path || (path.size() > 1 && path.back() == '/')) {
      Fact fact{policy::path::canonicalize(path), false, 0};
      struct stat st {};
      if (::stat(fact.canonical.c_str(), &st) == 0) {
        fact.exists = true;
        fact.mode = st.st_mode;
      }
      return fact;
    }
    return lookup(path);
  }

 private:
  const Fact& lookup(const std::string& path) {
    if (const auto found = memo_.find(path); found != memo_.end()) return found->second;
    Fact fact;
    if (path == "/") {
      fact = Fact{"/", true, S_IFDIR};
    } else {
      const Fact parent = lookup(policy::path::parent(path));
      fact.canonical = policy::path::join(parent.canonical, path.substr(path.rfind('/') + 1));
      struct stat st {};
      if (parent.exists && S_ISDIR(parent.mode) && ::lstat(fact.canonical.c_str(), &st) == 0) {
        if (!S_ISLNK(st.st_mode)) {
          fact.exists = true;
          fact.mode = st.st_mode;
        } else if (std::optional<std::string> real = policy::path::real_path(fact.canonical);
                   real && ::stat(real->c_str(), &st) == 0) {
          fact = Fact{std::move(*real), true, st.st_mode};
        }
        // A dangling symlink: canonicalize() keeps its name, and nothing below it exists.
      }
    }
    return memo_.emplace(path, std::move(fact)).first->second;
  }
  std::map<std::string, Fact> memo_;
};
#endif

class Resolver {
 public:
  Resolver(const Policy& policy, const ResolveContext& context)
      : policy_(policy), context_(context) {}

  Result<Resolution> run();

 private:
  Result<std::optional<std::string>> expand(const std::string& path, const std::string& pointer);
  std::optional<std::string> expand_tmpdir(const std::string& pointer);
  Result<std::string> expand_home(const std::string& path, const std::string& pointer);
  Status collect_candidates();
  void merge_rules();
  void add_install_carveouts();
  Status refuse_writable_state_dirs() const;
  // Makes each of context_.absent_state_dirs that a writable root reaches (one that holds
  // neither the working nor the home directory), for add_install_carveouts to keep.
  Status make_reached_state_dirs();
  // True for "/" and a prefix at or above the working directory or the home directory.
  bool holds_workspace_or_home(const std::string& prefix) const;
  void protect_install_carveouts();
  void add_policy_file_carveout();
  // Keeps the file at `path` (real path taken) read-only; its real path, or nullopt when no
  // writable rule reached it.
  std::optional<std::string> add_file_carveout(const std::string& path, bool directory_too = false);
  // Makes the settings file `path` uncreatable when a writable rule reaches it: its directory
  // is made on the host if missing and kept read-only.
  void protect_absent_file(const std::string& path);
  // The innermost writable root that holds `path` ("" when none does).
  std::string writable_root_of(const std::string& path) const;
  // `path` pinned read-only (or made uncreatable) below `root`, unless already listed; the
  // list stays sorted by path.
  void add_protected_path(ProtectedPath path);
  // A read rule at `dir` (write rules inside it become read) and a protected path pinning it;
  // `is_dir`: it is a directory.
  void keep_path_read_only(const std::string& dir, bool is_dir);
  // The policy's ":caches" entry (caches.hpp): the host's caches kept read-only (or uncreatable)
  // where a writable root reaches them, their credentials denied, the project's cache made and
  // its data directory writable. Last of the filesystem rules: nothing after it may turn that
  // write rule into a read one.
  Status add_caches();
  // Makes `path`, missing on the host, uncreatable where a writable rule would let the command
  // make it: its first missing component becomes a protected path that does not exist.
  void keep_absent_path_uncreatable(const std::string& path);
  // A deny rule at `path` (an existing one at the same path becomes deny).
  void deny_path(const std::string& path);
  Status check_writable_symlinks(const Candidate& candidate) const;
  Status collect_globs();
  Status resolve_network();

  bool windows() const { return context_.style == PathStyle::kWindows; }
  // An absolute path of the context's style (Windows: generic "X:/..." after normalisation).
  std::optional<std::string> absolute(const std::string& path);
  // Windows style: whether the path exists / is a directory. Only a Windows host looks; on a
  // POSIX host the paths are another machine's and nothing is found.
  static bool windows_exists(const std::string& path);
  static bool windows_is_directory(const std::string& path);
  Result<std::optional<std::string>> expand_windows(const std::string& path,
                                                    const std::string& pointer);
  std::vector<ProtectedPath> windows_protected_paths();

  const Policy& policy_;
  const ResolveContext& context_;
  std::string cwd_;                   // context_.cwd with duplicate and trailing slashes removed
  policy::winpath::Speller speller_;  // Windows style: one spelling per path, case folded
  std::vector<Candidate> candidates_;
  std::string caches_pointer_;  // the pointer of the ":caches" entry, "" when there is none
  // cwd_, the policy's cwd and the home directory, each as given and by its real path:
  // holds_workspace_or_home's, looked up once (it is asked for every install prefix and cache).
  mutable std::optional<std::vector<std::string>> workspace_and_home_;
  std::vector<std::string> made_state_dirs_;  // make_reached_state_dirs', by their real paths
  Resolution out_;
};

Result<std::string> Resolver::expand_home(const std::string& path, const std::string& pointer) {
  if (windows()) {
    Result<std::string> home = policy::winpath::normalize(context_.home);
    if (!home.ok())
      return error_at(pointer, policy::path::quote(path) +
                                   " needs the home directory, but none is known (set "
                                   "USERPROFILE to a drive path): " +
                                   home.error());
    return speller_.spell(
        path.size() > 2 ? *home + (home->back() == '/' ? "" : "/") + path.substr(2) : *home);
  }
  if (context_.home.empty() || context_.home.front() != '/') {
    return error_at(pointer, policy::path::quote(path) +
                                 " needs the home directory, but none is known (set HOME to an "
                                 "absolute path)");
  }
  return policy::path::join(policy::path::collapse_slashes(context_.home), path.substr(1));
}

std::optional<std::string> Resolver::expand_tmpdir(const std::string& pointer) {
  auto it = context_.env.find("TMPDIR");
  std::string why;
  if (it == context_.env.end() || it->second.empty()) {
    why = "TMPDIR is not set";
  } else if (it->second.front() != '/') {
    why = "TMPDIR " + policy::path::quote(it->second) + " is not absolute";
  } else if (policy::path::check_components(it->second)) {
    why = "TMPDIR " + policy::path::quote(it->second) + " has \".\" or \"..\" components";
  } else if (!is_directory(it->second)) {
    why = "TMPDIR " + policy::path::quote(it->second) + " is not an existing directory";
  } else {
    return policy::path::collapse_slashes(it->second);
  }
  out_.notes.push_back(pointer + ": :tmpdir dropped: " + why);
  return std::nullopt;
}

// The absolute lexical path an entry names; nullopt when the entry is dropped.
Result<std::optional<std::string>> Resolver::expand(const std::string& path,
                                                    const std::string& pointer) {
  if (windows()) return expand_windows(path, pointer);
  if (policy::winpath::looks_windows(path))
    return error_at(pointer, policy::path::quote(path) +
                                 " is a Windows path, but this policy is resolved for a POSIX "
                                 "host; write a POSIX path");
  if (path == ":root") return std::optional<std::string>("/");
  if (path == ":cwd") return std::optional<std::string>(cwd_);
  if (path.rfind(":cwd/", 0) == 0) {
    return std::optional<std::string>(policy::path::join(cwd_, path.substr(5)));
  }
  if (path == ":tmpdir") return expand_tmpdir(pointer);
  if (path == ":slash_tmp") {
    if (is_directory("/tmp")) return std::optional<std::string>("/tmp");
    out_.notes.push_back(pointer + ": :slash_tmp dropped: /tmp is not a directory");
    return std::optional<std::string>();
  }
  if (path == "~" || path.rfind("~/", 0) == 0) {
    Result<std::string> home = expand_home(path, pointer);
    if (!home) return home.failure();
    return std::optional<std::string>(*home);
  }
  if (!path.empty() && path.front() == '/') return std::optional<std::string>(path);
  // validate_policy() rejects everything else; a hand-built Policy may not have been validated.
  return error_at(pointer,
                  "cannot resolve " + policy::path::quote(path) + "; validate the policy first");
}

std::optional<std::string> Resolver::absolute(const std::string& path) {
  if (!windows()) {
    if (path.empty() || path.front() != '/') return std::nullopt;
    return path;
  }
  Result<std::string> generic = policy::winpath::normalize(path);
  if (!generic.ok()) return std::nullopt;
  return speller_.spell(*generic);
}

bool Resolver::windows_exists(const std::string& path) {
#ifdef _WIN32
  std::error_code error;
  return std::filesystem::exists(std::filesystem::symlink_status(path, error));
#else
  (void)path;
  return false;
#endif
}

bool Resolver::windows_is_directory(const std::string& path) {
#ifdef _WIN32
  std::error_code error;
  return std::filesystem::is_directory(std::filesystem::symlink_status(path, error));
#else
  (void)path;
  return false;
#endif
}

// The Windows meaning of each entry: ":root" is "/" (every drive, as the windows backend reads
// it), ":tmpdir" is %TEMP% (else %TMP%), ":slash_tmp" names nothing, "~" is the home directory
// (USERPROFILE), "%TEMP%/..." and the like are expanded, drive paths are taken as they are.
// Paths are lexical: the windows backend opens each one when it applies its ACLs.
Result<std::optional<std::string>> Resolver::expand_windows(const std::string& path,
                                                            const std::string& pointer) {
  using Found = std::optional<std::string>;
  if (path == ":root" || path == "/") return Found("/");
  if (path == ":cwd") return Found(cwd_);
  if (path.rfind(":cwd/", 0) == 0) {
    Result<std::string> below = policy::winpath::normalize(cwd_ + "/" + path.substr(5));
    if (!below.ok()) return error_at(pointer, below.error());
    return Found(speller_.spell(*below));
  }
  if (path == ":tmpdir") {
    for (std::string_view name : {"TEMP", "TMP"}) {
      std::optional<std::string> value = policy::winpath::env_lookup(context_.env, name);
      if (!value || value->empty()) continue;
      Result<std::string> dir = policy::winpath::normalize(*value);
      if (!dir.ok()) {
        out_.notes.push_back(pointer + ": :tmpdir dropped: %" + std::string(name) + "% " +
                             dir.error());
        return Found();
      }
      return Found(speller_.spell(*dir));
    }
    out_.notes.push_back(pointer + ": :tmpdir dropped: neither TEMP nor TMP is set");
    return Found();
  }
  if (path == ":slash_tmp") {
    out_.notes.push_back(pointer + ": :slash_tmp dropped: Windows has no /tmp");
    return Found();
  }
  if (path == "~" || path.rfind("~/", 0) == 0) {
    Result<std::string> home = expand_home(path, pointer);
    if (!home) return home.failure();
    return Found(*home);
  }
  if (policy::winpath::looks_windows(path)) {
    Result<std::string> expanded = policy::winpath::expand(path, context_.env);
    if (!expanded.ok()) return error_at(pointer, expanded.error());
    return Found(speller_.spell(*expanded));
  }
  return error_at(pointer, policy::path::quote(path) +
                               " is a POSIX path, but this policy is resolved for Windows; "
                               "write a drive path such as C:\\dir, %TEMP% or %USERPROFILE%");
}

Status Resolver::collect_candidates() {
  const std::vector<PolicyEntry>& entries = policy_.filesystem.entries;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const PolicyEntry& entry = entries[i];
    if (entry.path.empty()) continue;  // a glob
    std::string pointer = child("/filesystem/entries", i);
    if (entry.path == ":minimal") {
      out_.policy.platform_defaults_readable = true;
      continue;
    }
    if (entry.path == ":caches") {
      // Not a path of its own: add_caches() makes its rules once the others are settled.
      if (caches_pointer_.empty()) caches_pointer_ = pointer;
      continue;
    }
    Result<std::optional<std::string>> lexical = expand(entry.path, child(pointer, "path"));
    if (!lexical) return lexical.failure();
    if (!lexical->has_value()) continue;
    bool system_path = entry.path == ":tmpdir" || entry.path == ":slash_tmp";
    std::string canonical = windows() ? **lexical : policy::path::canonicalize(**lexical);
    candidates_.push_back(
        Candidate{**lexical, std::move(canonical), entry.access, pointer, system_path});
  }
  return {};
}

void Resolver::merge_rules() {
  std::vector<PathRule>& rules = out_.policy.rules;
  for (const Candidate& candidate : candidates_) {
    auto same = std::find_if(rules.begin(), rules.end(), [&](const PathRule& rule) {
      return rule.path == candidate.canonical;
    });
    if (same == rules.end()) {
      rules.push_back(PathRule{candidate.canonical, candidate.access});
    } else if (strength(candidate.access) > strength(same->access)) {
      same->access = candidate.access;
    }
  }
  sort_rules(rules);
}

// True if some write rule grants writing `dir` or anything below it.
bool writable_at_or_below(const ResolvedPolicy& policy, const std::string& dir) {
  if (rule_access(policy, dir) == Access::kWrite) return true;
  return std::any_of(policy.rules.begin(), policy.rules.end(), [&](const PathRule& rule) {
    return rule.access == Access::kWrite && path_is_within(rule.path, dir);
  });
}

bool Resolver::holds_workspace_or_home(const std::string& prefix) const {
  if (prefix == "/") return true;
  if (!workspace_and_home_) {
    // Both spellings: the prefix may be a real path and cwd or home a symlinked one, or not.
    workspace_and_home_.emplace();
    for (const std::string& inner : {cwd_, out_.policy.cwd, context_.home}) {
      if (inner.empty()) continue;
      workspace_and_home_->push_back(inner);
      if (windows()) continue;
      if (std::optional<std::string> real = policy::path::real_path(inner))
        workspace_and_home_->push_back(std::move(*real));
    }
  }
  return std::any_of(workspace_and_home_->begin(), workspace_and_home_->end(),
                     [&](const std::string& inner) { return path_is_within(inner, prefix); });
}

// A writable root at or inside one of sbx's state directories (context_.state_dirs) is refused
// for every backend rather than turned read-only like one inside sbx's install: no command has
// a reason to write there, and a policy that asks to is an attempt on the next run's state
// (issue #32 B2). A writable root that holds one is carved out like the install instead; one
// that holds a symlink on the way to one (context_.state_links) is refused.
Status Resolver::refuse_writable_state_dirs() const {
  for (const PathRule& rule : out_.policy.rules) {
    if (rule.access != Access::kWrite) continue;
    for (const std::string& dir : context_.state_dirs) {
      if (!path_is_within(rule.path, dir)) continue;
      return Error{"writable root '" + rule.path + "' lies inside sbx's state directory '" + dir +
                   "', which no sandboxed command may write (it decides how later runs start); "
                   "remove that entry from the policy"};
    }
    // A symlink on the way to one (a symlinked ~/.cache) cannot be kept read-only (a mount
    // follows it): a command could repoint it at a state directory it made, which every run
    // started meanwhile would trust as its own (red team round 6).
    for (const std::string& link : context_.state_links) {
      if (!path_is_within(link, rule.path)) continue;
      return Error{"writable root '" + rule.path + "' holds '" + link +
                       "', a symlink on the way to sbx's state, which a sandboxed command could "
                       "repoint at a state directory it made: make '" +
                       link + "' a directory (move what it points to there), or leave '" +
                       rule.path + "' out of the writable roots",
                   ErrorKind::refused};
    }
  }
  return {};
}

// Root keeps its state in /run, and its <cache>/sbx/caches only once a run with ":caches" made
// it: until then a run whose writable roots reach it (`--writable-root ~/.cache`, with any HOME:
// the passwd home's is a candidate too) could make it and plant a project's cache that later
// runs of that project would take as theirs (issue #40 F5). So it is made here, as caches_base
// would make it, and kept read-only like the other state directories (bwrap carves it out,
// Landlock is passed over). Not where the writable root holds the working or home directory:
// a root run in its home must stay possible on Landlock (core/src/caches/README.md).
Status Resolver::make_reached_state_dirs() {
#ifndef _WIN32
  if (windows()) return {};
  for (const std::string& name : context_.absent_state_dirs) {
    const std::string dir = policy::path::canonicalize(name);
    const std::string root = writable_root_of(dir);
    if (root.empty() || root == dir || holds_workspace_or_home(root)) continue;
    std::vector<std::string> missing;  // from `dir` up to the first that exists
    struct stat st {};
    for (std::string at = dir; at != root && ::lstat(at.c_str(), &st) != 0;
         at = policy::path::parent(at))
      missing.push_back(at);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (Status made = private_state::make_private_dir(*it, ::geteuid()); !made.ok())
        return Error{"cannot keep sbx's state directory '" + dir +
                     "' read-only inside the writable root '" + root + "': " + made.error()};
    }
    if (std::optional<std::string> real = policy::path::real_path(dir))
      made_state_dirs_.push_back(std::move(*real));
  }
#endif
  return {};
}

// sbx's own code must stay read-only in every sandbox: a command that could write libsbx, a
// plugin, sbx-stage2 or the sbx executable would plant code that the next `sbx` runs on the
// host, outside any sandbox. Each install directory the rules would let the command write
// becomes a read rule (a carve-out inside the writable root), and write rules inside it become
// read. A backend that cannot carve out is then passed over (the manager names the install).
//
// A whole prefix is carved out (the schema and shell completions in share/, the headers in
// include/ are sbx's too), except one that holds the working directory or the home directory
// (or is "/"): that would make the workspace or the whole home read-only, so there only the
// prefix's install directories (context_.install_dirs) are.
void Resolver::add_install_carveouts() {
  std::vector<std::string> dirs;
  for (const std::string& prefix : context_.install_prefixes) {
    const std::optional<std::string> absolute_prefix = absolute(prefix);
    if (!absolute_prefix || holds_workspace_or_home(*absolute_prefix)) continue;
    dirs.push_back(*absolute_prefix);
  }
  dirs.insert(dirs.end(), context_.install_dirs.begin(), context_.install_dirs.end());
  dirs.insert(dirs.end(), made_state_dirs_.begin(), made_state_dirs_.end());
  std::vector<PathRule>& rules = out_.policy.rules;
  for (const std::string& given : dirs) {
    const std::optional<std::string> absolute_dir = absolute(given);
    if (!absolute_dir) continue;
    const std::string& dir = *absolute_dir;
    if (!writable_at_or_below(out_.policy, dir)) continue;
    bool has_rule = false;
    for (PathRule& rule : rules) {
      if (!path_is_within(rule.path, dir)) continue;
      has_rule = has_rule || rule.path == dir;
      if (rule.access == Access::kWrite) rule.access = Access::kRead;
    }
    if (!has_rule) rules.push_back(PathRule{dir, Access::kRead});
    out_.install_carveouts.push_back(dir);
  }
  sort_rules(rules);
}

std::string Resolver::writable_root_of(const std::string& path) const {
  std::string root;
  for (const PathRule& rule : out_.policy.rules) {
    if (rule.access == Access::kWrite && path_is_within(path, rule.path) &&
        rule.path.size() > root.size())
      root = rule.path;
  }
  return root;
}

void Resolver::add_protected_path(ProtectedPath path) {
  std::vector<ProtectedPath>& protected_paths = out_.policy.protected_paths;
  if (std::any_of(protected_paths.begin(), protected_paths.end(),
                  [&](const ProtectedPath& p) { return p.path == path.path; }))
    return;
  protected_paths.push_back(std::move(path));
  std::sort(protected_paths.begin(), protected_paths.end(),
            [](const ProtectedPath& a, const ProtectedPath& b) { return a.path < b.path; });
}

// A read-only directory inside a writable root can still be moved away with its parent (and a
// new one put in its place), so each install carve-out is also a protected path: backends that
// enforce protected paths keep it read-only and pin every directory between it and its
// writable root (types.hpp ProtectedPath).
void Resolver::protect_install_carveouts() {
  for (const std::string& dir : out_.install_carveouts) {
    const std::string root = writable_root_of(dir);
    if (root.empty()) continue;  // only a writable root inside it was taken away: nothing to pin
    add_protected_path(
        ProtectedPath{dir, root, true, windows() ? windows_is_directory(dir) : is_directory(dir)});
  }
}

// The policy file must stay read-only like sbx's install: a command that could rewrite it would
// choose the sandbox of the next run started with the same --policy. Its real path is what is
// protected (a symlink in a writable root could be repointed, but the file it named stays
// intact). A read rule keeps it read-only; a protected path makes backends pin the directories
// between it and its writable root, so renaming a parent cannot move it away, and a rename or
// symlink swap over it fails on the bind mount.
void Resolver::add_policy_file_carveout() {
  if (std::optional<std::string> real = add_file_carveout(context_.policy_file))
    out_.policy_file_carveout = *real;
  // The settings files the same way: each of them chooses part of the next run's sandbox.
  for (const std::string& file : context_.settings_files) add_file_carveout(file);
  for (const std::string& dir : context_.settings_dirs) add_file_carveout(dir, true);
  // A settings file that does not exist yet would be read by the next run once created (a user
  // file listing excluded commands, say): it must not be creatable either.
  for (const std::string& file : context_.absent_settings_files) protect_absent_file(file);
}

#ifndef _WIN32
// Makes each of `names` below the directory `base`, one inside the other, where missing; the
// path of the last one (`base` when there are none), or nullopt when one cannot be made.
std::optional<std::string> make_directories_below(const std::string& base,
                                                  const std::vector<std::string>& names) {
  UniqueFd dir(::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return std::nullopt;
  std::string path = base;
  for (const std::string& name : names) {
    // mkdirat never follows a symlink at `name` (it fails with EEXIST), and O_NOFOLLOW refuses
    // one put there meanwhile: the chain is made of real directories only.
    if (::mkdirat(dir.get(), name.c_str(), 0700) != 0 && errno != EEXIST) return std::nullopt;
    UniqueFd next(::openat(dir.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return std::nullopt;
    dir = std::move(next);
    path = policy::path::join(path, name);
  }
  return path;
}
#endif

void Resolver::protect_absent_file(const std::string& path) {
  if (windows()) return;  // see add_file_carveout
#ifdef _WIN32
  (void)path;  // POSIX style on a Windows host is refused in run()
#else
  if (path.empty() || path.front() != '/' || policy::path::check_components(path)) return;
  // The longest existing ancestor, then the components below it.
  std::string existing = policy::path::collapse_slashes(path);
  std::vector<std::string> missing;  // the missing components, nearest the root first
  struct stat st {};
  while (existing != "/" && ::lstat(existing.c_str(), &st) != 0) {
    missing.insert(missing.begin(), existing.substr(existing.rfind('/') + 1));
    existing = policy::path::parent(existing);
  }
  if (missing.empty()) return;  // it exists after all: add_file_carveout's case
  const std::string real_parent = policy::path::real_path(existing).value_or(existing);
  const std::string first = policy::path::join(real_parent, missing.front());
  if (rule_access(out_.policy, first) != Access::kWrite) return;
  if (!is_directory(real_parent)) {
    // Something that is not a directory holds an ancestor's name (a mount point an interrupted
    // run of an older sbx left at ~/.config, a person's file): nothing can be made below it
    // while it is there, so it is kept as it is. Never a mask below it: bwrap would have to
    // make its parents and fails ("Can't mkdir parents ...: Not a directory").
    if (add_file_carveout(existing)) return;
    // A dangling symlink (add_file_carveout takes real paths only): the command could replace
    // it with a directory. Kept read-only by its own name, which a backend that cannot hold a
    // symlink read-only refuses (bwrap: "it is a symlink inside a writable root") — fail closed.
    keep_path_read_only(existing, false);
    return;
  }
  // The file's directory is sbx's own (~/.config/sbx, <project>/.sbx). It is made, with the
  // missing directories above it, as the user's own programs would make them (XDG Base
  // Directory Specification: "created with permission 0700"), and kept read-only: the command
  // cannot create the file, and nothing is left on the host that blocks the user's programs or
  // a later run — no mount point at ~/.config for the run, none left by a killed run.
  missing.pop_back();  // the file itself
  if (std::optional<std::string> dir = make_directories_below(real_parent, missing)) {
    keep_path_read_only(*dir, true);
    return;
  }
  // The directories could not be made (a read-only filesystem, a name taken meanwhile): the
  // first missing component is masked instead (a protected path that does not exist, whose
  // mount point bwrap's registry makes and removes: plugins/bwrap/README.md).
  const std::string root = writable_root_of(first);
  if (root.empty()) return;
  add_protected_path(ProtectedPath{first, root, false, false});
#endif
}

#ifndef _WIN32  // for protect_absent_file only (missing settings files: POSIX only so far)
void Resolver::keep_path_read_only(const std::string& dir, bool is_dir) {
  std::vector<PathRule>& rules = out_.policy.rules;
  bool has_rule = false;
  for (PathRule& rule : rules) {
    if (!path_is_within(rule.path, dir)) continue;
    has_rule = has_rule || rule.path == dir;
    if (rule.access == Access::kWrite) rule.access = Access::kRead;
  }
  if (!has_rule) rules.push_back(PathRule{dir, Access::kRead});
  sort_rules(rules);
  // Pinned like an install carve-out (protect_install_carveouts): renaming a parent must not
  // carry it away.
  const std::string root = writable_root_of(dir);
  if (root.empty()) return;
  add_protected_path(ProtectedPath{dir, root, true, is_dir});
}

void Resolver::keep_absent_path_uncreatable(const std::string& path) {
  std::string first = path;  // the first missing component
  struct stat st {};
  for (std::string up = policy::path::parent(path); up != "/" && ::lstat(up.c_str(), &st) != 0;
       up = policy::path::parent(up))
    first = up;
  if (rule_access(out_.policy, first) != Access::kWrite) return;
  const std::string root = writable_root_of(first);
  if (root.empty() || root == first) return;
  add_protected_path(ProtectedPath{first, root, false, false});
}

void Resolver::deny_path(const std::string& path) {
  std::vector<PathRule>& rules = out_.policy.rules;
  auto same = std::find_if(rules.begin(), rules.end(),
                           [&](const PathRule& rule) { return rule.path == path; });
  if (same == rules.end()) {
    rules.push_back(PathRule{path, Access::kDeny});
    sort_rules(rules);
  } else {
    same->access = Access::kDeny;
  }
}
#endif

// The toolchain caches (core/src/caches/README.md). The command's tools are pointed at the
// project's own cache in sbx's state through their variables (the run sets them), so:
//  - the host's caches are never written: one a writable root reaches is kept read-only and
//    pinned like an install carve-out (renaming a parent must not carry it away), one missing
//    there is made uncreatable. Otherwise a command could plant a package, a crate or a build
//    result that the user's next unsandboxed build takes from the cache and runs;
//  - the credentials kept in the toolchains' homes are denied: a cache entry must not hand the
//    command the tokens stored beside the caches;
//  - the project's cache is <cache>/sbx/caches/<key>/data, inside sbx's state directory, which
//    every sandbox keeps read-only (add_state_dirs): only this project's data directory is
//    writable, no other project's, and the data rule is added after every carve-out so that
//    none turns it read-only. A cache that holds the working or home directory is left alone
//    (a note says so): keeping it read-only would take the workspace with it.
Status Resolver::add_caches() {
  if (caches_pointer_.empty()) return {};
  if (windows()) {
    out_.notes.push_back(caches_pointer_ +
                         ": :caches dropped: toolchain caches are not kept for Windows yet");
    return {};
  }
#ifdef _WIN32
  return {};  // POSIX style on a Windows host is refused in run()
#else
  // The base first: caches_base() makes <cache> (~/.cache) when missing, which the host's
  // caches below are then looked at in (an XDG cache found missing would be masked, and the
  // project's data directory below it with it).
  Result<std::string> base = context_.caches_base.empty()
                                 ? caches::caches_base()
                                 : Result<std::string>(context_.caches_base);
  if (!base.ok())
    return error_at(caches_pointer_, "cannot keep the toolchain caches: " + base.error());
  // The tools' configuration files are read here, outside any sandbox (regular files only,
  // at most 1 MiB: caches::read_config_file): a cache named there is the host's as much as
  // one a variable names (issue #40 F2).
  caches::Found found = caches::find_tool_caches(context_.env, context_.home, caches::kHostPlatform,
                                                 caches::read_config_file);
  PathLookup paths;
  std::vector<caches::ToolCache> kept;
  std::vector<std::string> notes = std::move(found.notes);
  for (caches::ToolCache& cache : found.caches) {
    const PathLookup::Fact fact = paths.of(cache.host_path);
    cache.host_path = fact.canonical;
    cache.exists = fact.exists && S_ISDIR(fact.mode);
    if (holds_workspace_or_home(cache.host_path)) {
      notes.push_back("the " + cache.tool + " cache " + cache.host_path +
                      " holds the working or home directory: neither kept read-only nor moved");
      continue;
    }
    // Only where some write rule could reach it (at, above or below it) is there anything to
    // keep: in workspace-write the home is read-only already.
    const bool reachable =
        std::any_of(out_.policy.rules.begin(), out_.policy.rules.end(), [&](const PathRule& r) {
          return r.access == Access::kWrite && (path_is_within(cache.host_path, r.path) ||
                                                path_is_within(r.path, cache.host_path));
        });
    if (reachable && cache.exists && writable_at_or_below(out_.policy, cache.host_path))
      keep_path_read_only(cache.host_path, true);
    else if (reachable && !cache.exists)
      keep_absent_path_uncreatable(cache.host_path);
    kept.push_back(std::move(cache));
  }
  std::vector<std::string> denied;
  for (const caches::CredentialFile& file : found.credentials) {
    const PathLookup::Fact fact = paths.of(file.path);
    if (!fact.exists || S_ISDIR(fact.mode)) continue;
    if (file.only_with_auth && !caches::file_holds_auth_setting(fact.canonical)) continue;
    if (std::find(denied.begin(), denied.end(), fact.canonical) != denied.end()) continue;
    deny_path(fact.canonical);
    denied.push_back(fact.canonical);
  }
  // Every project's cache read-only where a writable root reaches it (the state directory
  // around it is already, but for root, whose state is in /run), before this project's data
  // directory becomes the one writable part.
  if (writable_at_or_below(out_.policy, *base)) keep_path_read_only(*base, true);
  Result<caches::CachePlan> plan = caches::prepare_project(*base, out_.policy.cwd, std::move(kept));
  if (!plan.ok())
    return error_at(caches_pointer_, "cannot keep the toolchain caches: " + plan.error());
  plan->credentials_denied = std::move(denied);
  plan->notes = std::move(notes);
  plan->home = context_.home;
  std::vector<PathRule>& rules = out_.policy.rules;
  std::erase_if(rules, [&](const PathRule& rule) { return rule.path == plan->data; });
  rules.push_back(PathRule{plan->data, Access::kWrite});
  sort_rules(rules);
  // A protected path is read-only whole, whatever is written below it (types.hpp), so the
  // carve-outs that hold the data directory where a writable root reaches them (sbx's state
  // directory, the caches, an XDG cache of the home) stay plain read rules: bwrap binds each
  // read-only (a mount point cannot be renamed, EBUSY) and pins the directories between it and
  // its writable root (plugins/bwrap/README.md, "Mount order", step 3), which is what the
  // protected path held them with; Landlock is passed over for the carve-outs themselves.
  std::erase_if(out_.policy.protected_paths,
                [&](const ProtectedPath& p) { return path_is_within(plan->data, p.path); });
  out_.caches = std::move(*plan);
  return {};
#endif
}

std::optional<std::string> Resolver::add_file_carveout(const std::string& path,
                                                       bool directory_too) {
  // Windows style: the file as named (drive path, lexical), when it exists on this Windows
  // host. Settings files that do not exist yet are not made uncreatable there (not built yet:
  // core/cross/README.md).
  std::optional<std::string> real = windows() ? absolute(path)
                                    : (path.empty() || path.front() != '/')
                                        ? std::nullopt
                                        : policy::path::real_path(path);
  if (windows() && real && (!windows_exists(*real) || windows_is_directory(*real)))
    return std::nullopt;
  if (!real || (!windows() && !directory_too && is_directory(*real)) ||
      rule_access(out_.policy, *real) != Access::kWrite)
    return std::nullopt;
  const std::string root = writable_root_of(*real);
  std::vector<PathRule>& rules = out_.policy.rules;
  auto same = std::find_if(rules.begin(), rules.end(),
                           [&](const PathRule& rule) { return rule.path == *real; });
  if (same == rules.end()) {
    rules.push_back(PathRule{*real, Access::kRead});
  } else {
    same->access = Access::kRead;
  }
  sort_rules(rules);
  if (root.empty()) return real;
  add_protected_path(
      ProtectedPath{*real, root, true, directory_too && !windows() && is_directory(*real)});
  return real;
}

#ifndef _WIN32
std::string read_link(const std::string& path) {
  std::string target(4096, '\0');
  ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
  if (n < 0) return "(unreadable)";
  target.resize(static_cast<std::size_t>(n));
  return target;
}

// A writable root must name the directory the kernel will let the command write. If the path
// crosses a symlink that the command itself can replace (its directory is writable), the root
// could be redirected after resolution; and a root that is itself a symlink hides where writes
// really go. Both are errors naming the symlink. Symlinks the command cannot touch (system ones
// such as /lib -> usr/lib) are followed.
#endif

Status Resolver::check_writable_symlinks(const Candidate& candidate) const {
  if (candidate.access != Access::kWrite) return {};
#ifdef _WIN32
  return error_at(candidate.pointer, "POSIX paths cannot be checked on a Windows host");
#else
  std::string real = "/";
  std::string lexical = "/";
  std::size_t start = 1;
  while (start < candidate.lexical.size()) {
    std::size_t end = candidate.lexical.find('/', start);
    if (end == std::string::npos) end = candidate.lexical.size();
    std::string name = candidate.lexical.substr(start, end - start);
    bool last = end == candidate.lexical.size();
    start = end + 1;
    lexical = policy::path::join(lexical, name);
    std::string here = policy::path::join(real, name);
    struct stat st {};
    if (::lstat(here.c_str(), &st) != 0) return {};  // the rest does not exist yet
    if (!S_ISLNK(st.st_mode)) {
      real = here;
      continue;
    }
    std::string head = "writable root " + candidate.lexical + ": " + lexical + " is a symlink to " +
                       read_link(here);
    if (last && !candidate.system_path) {
      return error_at(candidate.pointer, head + "; name the real directory instead");
    }
    if (rule_access(out_.policy, real) == Access::kWrite) {
      return error_at(candidate.pointer, head + " inside the writable directory " + real +
                                             ", so the sandboxed command could replace it; "
                                             "name the real directory instead");
    }
    std::optional<std::string> resolved = policy::path::real_path(here);
    if (!resolved) {
      return error_at(candidate.pointer, head +
                                             ", which does not exist; name an existing "
                                             "directory instead");
    }
    real = *resolved;
  }
  // The walk above and the canonical path were computed at different moments. If they differ,
  // the path changed in between (e.g. the root was swapped with a symlink by another process),
  // and the canonical path may name a directory the policy never meant: refuse.
  if (real != candidate.canonical) {
    return error_at(candidate.pointer, "writable root " + candidate.lexical +
                                           " changed while it was being resolved (" +
                                           candidate.canonical + ", then " + real +
                                           "); is another process renaming it?");
  }
  return {};
#endif
}

bool has_glob_magic(std::string_view component) {
  return component.find_first_of("*?[{\\") != std::string_view::npos;
}

// Canonicalises the literal directories in front of the first wildcard, so the pattern names
// the paths the kernel sees (e.g. /tmp -> /private/tmp on macOS).
std::string canonical_glob(const std::string& pattern) {
  std::size_t literal_end = 0;
  std::size_t start = 1;
  while (start < pattern.size()) {
    std::size_t end = pattern.find('/', start);
    if (end == std::string::npos) break;  // the last component is the pattern's own name
    if (has_glob_magic(std::string_view(pattern).substr(start, end - start))) break;
    literal_end = end;
    start = end + 1;
  }
  if (literal_end == 0) return pattern;
  return policy::path::join(policy::path::canonicalize(pattern.substr(0, literal_end)),
                            pattern.substr(literal_end + 1));
}

Status Resolver::collect_globs() {
  const std::vector<PolicyEntry>& entries = policy_.filesystem.entries;
  std::vector<std::string>& globs = out_.policy.deny_globs;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::string glob = entries[i].glob;
    if (glob.empty()) continue;
    if (glob.rfind("~/", 0) == 0) {
      Result<std::string> home = expand_home(glob, child(child("/filesystem/entries", i), "glob"));
      if (!home) return home.failure();
      glob = *home;
    } else if (windows() && policy::winpath::looks_windows(glob)) {
      Result<std::string> expanded = policy::winpath::expand(glob, context_.env);
      if (!expanded.ok())
        return error_at(child(child("/filesystem/entries", i), "glob"), expanded.error());
      glob = *expanded;
    } else if (glob.rfind(":cwd/", 0) == 0) {
      // As an entry's ":cwd/SUB": below the working directory (validate.cpp lets no other
      // special path into a glob).
      glob = policy::path::join(cwd_, glob.substr(5));
    } else if (glob.front() != '/') {
      // gitignore style: a pattern without '/' matches a name at any depth below the cwd.
      if (glob.find('/') == std::string::npos) glob = "**/" + glob;
      glob = policy::path::join(cwd_, glob);
    }
    if (!windows()) {
      // A glob is expanded below its literal directories (bwrap's expand_deny_globs walks from
      // there): one with none ("/**/*.pem", "/*/key") would walk the whole filesystem, and the
      // backend refuses it at the run. Refused here, so `sbx policy check` says so too.
      const std::string first = glob.substr(1, glob.find('/', 1) - 1);
      if (first.find_first_of("*?[{\\") != std::string::npos)
        return error_at(child(child("/filesystem/entries", i), "glob"),
                        "glob " + policy::path::quote(glob) +
                            " has no literal directory before its first wildcard: expanding it "
                            "would walk the whole filesystem; anchor it below a directory "
                            "(e.g. \":cwd/**/*.pem\" or \"~/**/*.pem\")");
      glob = canonical_glob(glob);
    }
    if (std::find(globs.begin(), globs.end(), glob) == globs.end()) globs.push_back(glob);
  }
  return {};
}

Status Resolver::resolve_network() {
  std::vector<std::string>& sockets = out_.policy.network.unix_sockets;
  for (std::size_t i = 0; i < sockets.size(); ++i) {
    if (sockets[i].rfind("~/", 0) == 0) {
      Result<std::string> home = expand_home(sockets[i], child("/network/unix_sockets", i));
      if (!home) return home.failure();
      sockets[i] = *home;
    }
    if (!windows()) sockets[i] = policy::path::canonicalize(sockets[i]);
  }
  return {};
}

// R/N for every writable root R and protected name N, as named; whether each exists is asked
// only on a Windows host. A .git file's gitdir is not followed on Windows (noted).
std::vector<ProtectedPath> Resolver::windows_protected_paths() {
  std::vector<ProtectedPath> out;
  for (const PathRule& rule : out_.policy.rules) {
    if (rule.access != Access::kWrite || rule.path == "/") continue;
    for (const std::string& name : policy_.filesystem.protected_names) {
      const std::string path =
          speller_.spell(rule.path + (rule.path.back() == '/' ? "" : "/") + name);
      const bool exists = windows_exists(path);
      const bool directory = exists && windows_is_directory(path);
      if (name == ".git" && exists && !directory)
        out_.notes.push_back(path +
                             " is a file: its gitdir is not followed on Windows; only "
                             "the file is protected");
      out.push_back(ProtectedPath{path, rule.path, exists, directory});
    }
  }
  std::sort(out.begin(), out.end(), [](const ProtectedPath& a, const ProtectedPath& b) {
    return a.path != b.path ? a.path < b.path : a.writable_root < b.writable_root;
  });
  out.erase(
      std::unique(out.begin(), out.end(),
                  [](const ProtectedPath& a, const ProtectedPath& b) { return a.path == b.path; }),
      out.end());
  return out;
}

Result<Resolution> Resolver::run() {
  if (!windows() && kHostPathStyle == PathStyle::kWindows)
    return Error{"cannot resolve the policy: POSIX paths cannot be resolved on a Windows host"};
  if (windows()) {
    Result<std::string> cwd = policy::winpath::normalize(context_.cwd);
    if (!cwd.ok())
      return cwd.failure().prefixed("cannot resolve the policy: the working directory: ");
    cwd_ = speller_.spell(*cwd);
  } else if (context_.cwd.empty() || context_.cwd.front() != '/' ||
             policy::path::check_components(context_.cwd)) {
    return Error{"cannot resolve the policy: the working directory " +
                 policy::path::quote(context_.cwd) +
                 " is not an absolute path without \".\" or \"..\""};
  }
  if (!windows()) cwd_ = policy::path::collapse_slashes(context_.cwd);
  out_.policy.filesystem_kind = policy_.filesystem.kind;
  out_.policy.network = policy_.network;
  out_.policy.cwd = windows() ? cwd_ : policy::path::canonicalize(cwd_);
  Status status;
  if (policy_.filesystem.kind == FilesystemKind::kRestricted) {
    status = collect_candidates();
    if (!status) return status.failure();
    merge_rules();
    // Windows style: symlinks and junctions are not walked here (not built yet:
    // core/cross/README.md).
    for (const Candidate& candidate : candidates_) {
      if (windows()) break;
      status = check_writable_symlinks(candidate);
      if (!status) return status.failure();
    }
    status = refuse_writable_state_dirs();
    if (!status) return status.failure();
    status = make_reached_state_dirs();
    if (!status) return status.failure();
    add_install_carveouts();
#ifdef _WIN32
    out_.policy.protected_paths = windows_protected_paths();  // run() refused POSIX style
#else
    out_.policy.protected_paths =
        windows() ? windows_protected_paths()
                  : resolution::protected_paths(out_.policy.rules,
                                                policy_.filesystem.protected_names, out_.notes);
#endif
    protect_install_carveouts();
    add_policy_file_carveout();
    status = add_caches();
    if (!status) return status.failure();
    status = collect_globs();
    if (!status) return status.failure();
  }
  status = resolve_network();
  if (!status) return status.failure();
  return std::move(out_);
}

}  // namespace

Result<Resolution> resolve_policy_with_notes(const Policy& policy, const ResolveContext& context) {
  try {
    // Resolution relies on validated, normalised entries; a Policy built in code gets the same
    // checks (and messages) as a parsed one.
    Result<Policy> valid = validate_policy(policy);
    if (!valid) return valid.failure();
    return Resolver(*valid, context).run();
  } catch (const std::exception& e) {
    return Error{std::string("cannot resolve the policy: ") + e.what()};
  }
}

Result<ResolvedPolicy> resolve_policy(const Policy& policy, const ResolveContext& context) {
  Result<Resolution> resolution = resolve_policy_with_notes(policy, context);
  if (!resolution) return resolution.failure();
  return std::move(resolution->policy);
}

#ifndef _WIN32
namespace {

// sbx's per-user state directories (plugins/probe_store.hpp state_directories: the kept probe
// answers, the proxy's sockets, bwrap's registry and probe cache, and <cache>/sbx holding them)
// are kept read-only in every sandbox like sbx's install: a command that could write, chmod or
// rename there could choose what the next run believes the backends can do, remove or replace
// another run's socket, or end every later run's state (issue #32). Made here, before the
// policy is resolved, so that a first run cannot leave it to the command to create them.
void add_state_dirs(ResolveContext& context) {
  context.state_dirs = kept_probe::state_directories();
  context.state_links = kept_probe::state_directory_links();
  context.absent_state_dirs = kept_probe::absent_state_directory_names();
  context.install_dirs.insert(context.install_dirs.end(), context.state_dirs.begin(),
                              context.state_dirs.end());
}

// Every sbx install's prefix (runtime.hpp install_prefixes), with each one's install
// directories for where the whole prefix cannot be kept read-only (add_install_carveouts).
// `running`: the running install's prefix. Needs context.home: called after it is set.
void add_install_prefixes(ResolveContext& context, const std::string& running) {
  const auto path = context.env.find("PATH");
  context.install_prefixes = install_prefixes(
      running, path == context.env.end() ? std::string() : path->second, context.home);
  for (const std::string& prefix : context.install_prefixes) {
    // The running prefix's directories are install_directories() already.
    if (prefix == running) continue;
    for (std::string& dir : prefix_directories(prefix)) {
      if (std::find(context.install_dirs.begin(), context.install_dirs.end(), dir) ==
          context.install_dirs.end())
        context.install_dirs.push_back(std::move(dir));
    }
  }
}

}  // namespace
#endif

Result<ResolveContext> current_resolve_context() {
  ResolveContext context;
#ifdef _WIN32
  std::optional<std::string> cwd = platform::current_directory();
  if (!cwd)
    return Error{
        "cannot determine the current directory; run sbx from an existing directory "
        "or pass --cwd"};
  // In the generic form ("C:/dir") that resolution, the settings walk and the windows
  // backend read; GetCurrentDirectoryW gives "C:\dir".
  Result<std::string> generic_cwd = policy::winpath::normalize(*cwd);
  if (!generic_cwd)
    return Error{"the current directory " + *cwd + " cannot be used: " + generic_cwd.error() +
                 "; run sbx from a directory on a drive (C:\\...) or pass --cwd"};
  context.cwd = *generic_cwd;
  for (const std::string& entry : platform::environment()) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    context.env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  // "~" is the user's profile directory, as %USERPROFILE% names it.
  context.home = policy::winpath::env_lookup(context.env, "USERPROFILE").value_or("");
  Result<InstallLayout> layout = install_layout();
  if (!layout) {
    return Error{"cannot find sbx's install to keep it read-only in the sandbox: " +
                 layout.error()};
  }
  context.install_dirs = install_directories(*layout);
  return context;
#else
  std::vector<char> buffer(4096);
  while (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    if (errno != ERANGE || buffer.size() > (1u << 20)) {
      return Error{std::string("cannot determine the current directory: ") + std::strerror(errno) +
                   "; run sbx from an existing directory or pass --cwd"};
    }
    buffer.resize(buffer.size() * 2);
  }
  context.cwd = buffer.data();
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    // The first definition wins, as with getenv(3).
    context.env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  std::string running_prefix;
  Result<std::vector<std::string>> install_dirs = running_install_directories(&running_prefix);
  if (!install_dirs) {
    // Without it sbx's own install could not be kept read-only in the sandbox: fail closed.
    return Error{"cannot find sbx's install to keep it read-only in the sandbox: " +
                 install_dirs.error()};
  }
  context.install_dirs = std::move(*install_dirs);
  add_state_dirs(context);
  auto home = context.env.find("HOME");
  if (home != context.env.end() && !home->second.empty() && home->second.front() == '/') {
    context.home = home->second;
  } else {
    struct passwd pw {};
    struct passwd* found = nullptr;
    std::vector<char> pw_buffer(16384);
    if (::getpwuid_r(::getuid(), &pw, pw_buffer.data(), pw_buffer.size(), &found) == 0 &&
        found != nullptr && found->pw_dir != nullptr && found->pw_dir[0] == '/') {
      context.home = found->pw_dir;
    }
  }
  add_install_prefixes(context, running_prefix);
  return context;
#endif
}

}  // namespace sbx
