// Resolution of a Policy against a cwd, a home directory and an environment into the
// ResolvedPolicy backends enforce. Reads the filesystem (existence, symlinks, .git files) but
// changes nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sbx/core/caches.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// How the paths of a resolution are written: POSIX ("/a/b") or Windows (drive-absolute, in the
// generic form "C:/a/b" the windows backend reads; "\\server\share" and device paths refused).
enum class PathStyle { kPosix, kWindows };

#ifdef _WIN32
inline constexpr PathStyle kHostPathStyle = PathStyle::kWindows;
#else
inline constexpr PathStyle kHostPathStyle = PathStyle::kPosix;
#endif

struct ResolveContext {
  std::string cwd;                         // absolute; ":cwd"
  std::string home;                        // absolute; "~/"
  std::map<std::string, std::string> env;  // TMPDIR for ":tmpdir"
  // Absolute directories holding sbx's own code (runtime.hpp install_directories): kept
  // read-only in every restricted sandbox whatever the policy grants.
  std::vector<std::string> install_dirs{};
  // Absolute prefixes of sbx installs (runtime.hpp install_prefixes): each kept read-only as a
  // whole, like install_dirs, unless it is "/" or holds cwd or home (then install_dirs, which
  // lists its bin/lib/libexec/include/share, keeps those).
  std::vector<std::string> install_prefixes{};
  // sbx's per-user state directories (also in install_dirs, so kept read-only the same way): a
  // writable root at or inside one is refused.
  std::vector<std::string> state_dirs{};
  // Symlinks on the way to them (a symlinked ~/.cache): a writable root holding one is refused.
  std::vector<std::string> state_links{};
  // State directories that do not exist yet but that later runs would trust once made (root's
  // <cache>/sbx/caches, plugins/probe_store.hpp absent_state_directory_names): where a writable
  // root reaches one, resolution makes it (0700, with its missing parents, as a run using it
  // would) and keeps it read-only like state_dirs, unless that root holds the working or home
  // directory (core/src/caches/README.md says what that leaves).
  std::vector<std::string> absent_state_dirs{};
  // The file the policy was read from (`--policy`), absolute; empty when there is none. Its
  // real path is kept read-only in every restricted sandbox whatever the policy grants, so a
  // command cannot rewrite the policy of the next run.
  std::string policy_file{};
  // The settings files the run's settings were read from (settings.hpp), absolute: kept
  // read-only exactly like policy_file, so a command cannot rewrite the settings of the next run.
  std::vector<std::string> settings_files{};
  // Directories kept read-only whole the same way (settings.hpp Settings::guarded_dirs: the .sbx
  // directories of trusted projects), absolute.
  std::vector<std::string> settings_dirs{};
  // Settings files that would be read if they existed (settings.hpp Settings::absent_files),
  // absolute: where a writable root would let a command create one, its directory is made on
  // the host (0700, with missing parents) and kept read-only (a carve-out and protected path);
  // only if it cannot be made is the first missing component masked (a protected path that
  // does not exist).
  std::vector<std::string> absent_settings_files{};
  // Where the projects' toolchain caches go (caches::caches_base), for a policy with
  // ":caches"; empty: asked then, from this process's environment. Tests set their own.
  std::string caches_base{};
  // The style of cwd, home, the policy's paths and the result. kWindows on a POSIX host is for
  // a plan that is only shown (`sbx debug windows --cwd C:\dir`): nothing is looked up on the
  // local filesystem then, every path is taken lexically.
  PathStyle style{kHostPathStyle};
};

// Builds the context of this process (getcwd, $HOME or the passwd entry, environ, and the
// install directories of the libsbx that runs).
Result<ResolveContext> current_resolve_context();

// Resolves special paths and "~", normalises, applies most-specific-wins with deny > write >
// read on ties, finds protected names under every writable root (a .git file adds the gitdir it
// names), and rejects a writable root that crosses a symlink, naming the symlink.
// Every context.install_prefixes entry (but "/" and one holding cwd or home) and every
// context.install_dirs entry that would be writable (it lies inside a writable root, or a
// writable root lies inside it) becomes a read rule, and write rules inside it become read:
// sbx's installs are read-only in every restricted sandbox, whatever the policy says.
// Likewise the real path of context.policy_file (symlinks followed): when a writable root holds
// it, it becomes a read rule and a protected path (backends pin the directories above it).
// A symlink that led to it is not protected (only the real file is).
//
// Details: ":root" is "/", ":cwd" and ":cwd/sub" hang off context.cwd, ":tmpdir" is $TMPDIR from
// context.env when it is set, absolute and an existing directory, ":slash_tmp" is /tmp when it
// is a directory (otherwise those entries are dropped, with a note), ":minimal" sets
// platform_defaults_readable, ":caches" makes the project's cache (Resolution::caches; its data
// directory a write rule, the host's caches read-only where a writable root reaches them, their
// credentials denied). Paths are canonicalised (realpath of the longest existing
// ancestor). Deny globs become absolute: "/..." is kept, "~/..." expanded, anything else is
// anchored at the cwd, and a glob without '/' matches at any depth ("<cwd>/**/<glob>").
// Errors for a policy entry start with its pointer, e.g. "/filesystem/entries/2: writable root
// ...". Never throws.
Result<ResolvedPolicy> resolve_policy(const Policy& policy, const ResolveContext& context);

// resolve_policy plus one line per thing a person may want to know that is not an error: an
// entry that was dropped (":tmpdir" with TMPDIR unset) or a .git file whose gitdir is missing.
struct Resolution {
  ResolvedPolicy policy;
  std::vector<std::string> notes;
  std::vector<std::string> install_carveouts;  // install_dirs made read-only, in context order
  std::string policy_file_carveout;  // the policy file's real path when it was made read-only
  // The policy's ":caches" entry (caches.hpp): the toolchain caches, the project's cache the
  // command is pointed at (its data directory is a write rule), the credentials denied; nullopt
  // when the policy has no such entry (or it was dropped: Windows, a note says so).
  std::optional<caches::CachePlan> caches{};
};
Result<Resolution> resolve_policy_with_notes(const Policy& policy, const ResolveContext& context);

}  // namespace sbx
