// Exec-time glue between the plan and bwrap: bind what was checked, and tell sbx-stage2 which
// mounts to expect.
//
// Why: the plan names bind sources by path, and bwrap resolves a path (following symlinks) only
// when it mounts it. Between the plan and that moment another process that can write the
// parent directory can swap the path for a symlink (renameat2 RENAME_EXCHANGE in a loop), and a
// writable bind would then mount whatever the symlink names. So at exec time every bind source
// is opened with O_PATH by a walk that refuses a symlink in any component, checked (type, and
// /proc/self/fd says it is the named path), and handed to bwrap as `--bind-fd FD DEST` /
// `--ro-bind-fd FD DEST`: bwrap mounts exactly the opened object. Destinations are still paths
// that bwrap resolves; sbx-stage2 verifies them from inside (planned_mounts_block,
// plugins/bwrap/checks/bwrap_checks.hpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::bwrap {

// The lowest descriptor number a bind source gets, above those the spawner places itself
// (info 3, env 4, ready 5, mounts 6), so that moving those cannot clobber a bind source.
inline constexpr int kFirstBindFd = 10;

// Opens `path` with O_PATH|O_CLOEXEC, refusing a symlink in any component (openat2 with
// RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, else a component-by-component O_NOFOLLOW walk).
// Then checks what was opened: a directory or regular file (a character device when
// `allow_char_device`), and /proc/self/fd/FD names exactly `path`. The fd is at or above
// kFirstBindFd. Error names the path and the reason.
Result<int> open_bind_source(const std::string& path, bool allow_char_device);

// bwrap's argv with every "--bind SRC DEST" / "--ro-bind SRC DEST" replaced by the fd forms,
// plus the descriptors (close-on-exec; the spawner makes exactly these inheritable by bwrap and
// closes them after the run) and the path each was opened from (the launch's record,
// launch_json). On error, nothing stays open.
struct BoundArgv {
  std::vector<std::string> argv;
  std::vector<int> fds;
  std::vector<std::pair<int, std::string>> sources;  // {fd, SRC} for each of fds
};
Result<BoundArgv> bind_sources_by_fd(const std::vector<std::string>& argv);

// The mounts bwrap's options (argv up to the first "--") ask for, as stage 2's --mounts-fd
// block: "w DEST" or "r DEST", each ended by NUL, one per destination, in order. Writable:
// --bind/--bind-fd, --dev, --proc and a --tmpfs not later remounted read-only. Error on an
// option this does not know (fail closed: an unknown mount would go unverified).
Result<std::string> planned_mounts_block(const std::vector<std::string>& argv);

}  // namespace sbx::bwrap
