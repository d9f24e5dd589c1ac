// Protected names created during a run, anywhere under the writable roots.
//
// Backends keep protected names (.git, .codex, .agents) read-only or uncreatable only at the top
// of each writable root: a command can still create vendor/lib/.git with hooks or
// core.fsmonitor, which a later git command there runs on the host, outside any sandbox. No
// backend can forbid a name at every depth by path (bwrap binds paths known at launch, Landlock
// grants whole trees), so sbx reports it instead: after the run it walks the writable roots and
// lists every protected name whose entry (or anything inside it) was created or changed since
// the run started.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sbx/core/policy.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

struct CreatedNames {
  std::vector<std::string> paths;  // absolute, sorted, one per path
  bool truncated = false;          // the walk stopped at its bounds: more may exist
};

// Bounds of one walk: a workspace with millions of files must not hold the run's result back.
struct CreatedNamesLimits {
  std::size_t max_entries = 200000;
  std::chrono::milliseconds max_time{2000};
  std::size_t max_depth = 256;
  // false: ignore the directory entries' types and statx every entry, as on a filesystem that
  // reports DT_UNKNOWN (tests check both ways find the same names).
  bool trust_d_type = true;
};

// The time file timestamps are compared with, in nanoseconds since the epoch: the coarse
// wall clock the kernel stamps files with, read before the command starts (a file created in
// the same tick is counted as created during the run).
std::int64_t created_names_clock();

// What to look for after a run of `policy` (resolved as `resolved`): the policy's protected
// names plus the default ones (the git hook risk exists whatever the policy lists), and the
// writable roots of a restricted filesystem (none otherwise: an unrestricted run is not
// watched).
struct CreatedNamesWatch {
  std::vector<std::string> roots;
  std::vector<std::string> names;
};
CreatedNamesWatch created_names_watch(const Policy& policy, const ResolvedPolicy& resolved);

// Walks every root (symlinks are never followed; other filesystems mounted below a root are
// not entered; a root nested in another is walked once) and returns each entry named like one
// of `names` whose birth time (statx; the change time where there is none) or change time is
// >= `since_ns`, or that is a directory with such an entry anywhere inside it. Empty
// directories are left out: they hold no hooks or config (and bwrap's transient mount points
// for missing protected names are such directories). Never fails: unreadable directories are
// skipped.
//
// Cost: one open and a few getdents64 per directory; only entries with a watched name and
// everything inside them are stat'ed (elsewhere an entry's type comes from its directory entry).
// What a process still running during the walk (one the command left behind) can do to it:
// make it slow (a huge or deep tree: the bounds stop it and set `truncated`, as does running
// out of descriptors, one held per level); hide a name by renaming it, while the walk runs,
// into a directory the walk has already read or out of one it has not read yet (a directory
// is read once: such a race is not caught). It cannot make the walk follow a symlink or cross
// into another filesystem: openat2 with RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV refuses a
// symlink and a mount point at the open itself; a mount point is then entered only when the
// directory actually opened is on the root's device (a bind mount of the same filesystem, as
// before); without openat2, O_NOFOLLOW and the same device check.
CreatedNames find_created_names(const CreatedNamesWatch& watch, std::int64_t since_ns,
                                const CreatedNamesLimits& limits = {});

// One line for a person (no newline): the path and why it matters.
std::string created_name_warning(const std::string& path);

}  // namespace sbx
