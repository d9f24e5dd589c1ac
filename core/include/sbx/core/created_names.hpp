// Protected names created during a run, anywhere under the writable roots.
//
// Backends keep protected names (.git, .codex, .agents) read-only or uncreatable only at the top
// of each writable root: a command can still create vendor/lib/.git with hooks or
// core.fsmonitor, which a later git command there runs on the host, outside any sandbox. No
// backend can forbid a name at every depth by path (bwrap binds paths known at launch, Landlock
// grants whole trees), so sbx reports it instead: after the run it lists every protected name
// below the writable roots whose entry (or anything inside it) was created or changed since the
// run started. find_created_names says which entries those are by walking the trees;
// CreatedNamesScan gives the same list at a lower cost, per case:
// - where this process may watch a root's filesystem with fanotify (root: CAP_SYS_ADMIN in the
//   initial user namespace, CAP_DAC_READ_SEARCH), from the kernel's events: the cost follows
//   what changed during the run, not what the trees hold ("With events" below);
// - elsewhere (an unprivileged user, a filesystem that cannot be marked), and whenever the
//   events cannot answer, by reading the trees: most of the walk while the command runs ("The
//   scan" below), the rest after it, a cost that follows the size of the trees.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sbx/core/policy.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

struct CreatedNames {
  std::vector<std::string> paths;  // absolute, sorted, one per path
  bool truncated = false;          // the walk stopped at its bounds: more may exist
  // Directories the walk could not open or read (a command's chmod 000, say; at most 8 named):
  // each also sets `truncated`, since what they hold is not known.
  std::vector<std::string> unreadable;
};

// Bounds of one walk: a workspace with millions of files must not hold the run's result back.
struct CreatedNamesLimits {
  std::size_t max_entries = 200000;
  std::chrono::milliseconds max_time{2000};
  std::size_t max_depth = 256;
  // false: ignore the directory entries' types and statx every entry, as on a filesystem that
  // reports DT_UNKNOWN (tests check both ways find the same names).
  bool trust_d_type = true;
  // CreatedNamesScan only: how many directory descriptors its scan may hold open at once
  // (nullopt: a quarter of the descriptors the process may still open, at most 4096).
  std::optional<std::size_t> scan_descriptors;
  // CreatedNamesScan only: learn what changed from fanotify where this process may (below);
  // false: the scan alone (tests compare the two).
  bool events = true;
  // CreatedNamesScan with events only: how many changed places at or inside watched names
  // (directories, and files with several links) it keeps for the check after the run; past
  // that it walks those roots instead.
  std::size_t max_changed = 8192;
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
// directories and sockets are left out: they hold no hooks or config (and a socket is what the
// bwrap backend's transient mount points for missing protected names are, this run's and those
// of runs alongside it in the same roots). Never fails: a directory it cannot open or read
// (other than one gone since it was listed, or a mount point) sets `truncated` and is named in
// `unreadable`.
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

// The same answer as find_created_names, from fanotify's events where this process may use
// them, else with most of the walk done while the command runs.
//
// With events (limits.events, where permitted). The constructor, before the command starts,
// marks the filesystem of each root (fanotify(7), FAN_MARK_FILESYSTEM, one mark per distinct
// filesystem; a mount mark reports no directory-entry events) for entries created, removed or
// renamed, files written or closed after writing, and attributes changed, of directories too,
// each event naming its directory by a file handle and the entry by name (FAN_REPORT_DFID_NAME,
// and FAN_REPORT_FID for a file's own handle: Linux 5.9). Those roots are neither scanned nor
// walked. start() starts a thread (every signal blocked) that reads the events while the
// command runs, so that the kernel's queue (16384 events by default, from every process on the
// filesystem) rarely fills, and looks each distinct directory up at once (open_by_handle_at
// through a descriptor of each root's mount, then its /proc/thread-self/fd path; the thread has
// a descriptor table of its own, so that none of these descriptors can take the number of a
// standard descriptor the caller closed while another thread spawns a command: the ones made
// before the command starts are kept above 2): one that lies at or
// inside an entry with a watched name, or where a watched name was created or moved to, is kept;
// any other is dropped, since it can come to lie inside one only by a later rename, or by a
// later watched name made above it, each an event of its own. A written file with several links
// is kept (another of its names may be inside a watched entry). finish(), once every process of
// the run is dead (each change queued its event in the system call that made it, run.cpp calls
// finish() after the run has ended), has the thread read what is left of the queue (the events
// queued by then, FIONREAD: not those other processes keep adding), find every kept place
// again by its handle (where it is now: ESTALE or no links left means gone, with everything
// inside, its removal an event in its parent), and examines the outermost entry with a watched
// name below the deepest root on each of its paths exactly as find_created_names examines it:
// reached from the root as the walk reaches it (no symlink, no other filesystem, the depth
// bound), judged by the same rules (times against since_ns, empty directories and sockets left
// out, the bounds inside it). Handles are also resolved through the bind mounts of the same
// filesystem below a root, which the walk enters: the same paths are listed.
// - The walk answers instead (events_fell_back() says why) when the queue overflowed
//   (FAN_Q_OVERFLOW), more than limits.max_changed places were kept, a kept place cannot be
//   found again yet is not gone, a written file still has several links, the mounts below a
//   root changed during the run, or /proc cannot be read. Never a silent empty answer.
// - What the walk would report and the events do not: a link count changed alone (a hard link
//   to a file inside a watched entry made or removed elsewhere: its content, mode and names
//   there unchanged) and inode flags (chattr: no event). A change made only through a shared
//   writable mapping is reported at the file's last close (FAN_CLOSE_WRITE): for a file whose
//   last reference outlives the run (passed to a process outside it) that is after the check.
//   A change another process makes between since_ns and the marks is not seen (run.cpp reads
//   since_ns just before; the command has not started).
// - A process left running during finish() (not one of the run's: those are dead) can hide a
//   name only as during the walk, by renaming it while it is looked up.
// - Cost: an event per change anywhere on the marked filesystems while the run lasts (other
//   processes' too), a lookup per distinct directory or file they touch, nothing per directory
//   that exists. Each CreatedNamesScan has its own group: parallel runs share nothing. Closing
//   a group waits until the kernel has freed its marks (an SRCU grace period, milliseconds):
//   they are removed as soon as the run's events are read, and the group is closed with this
//   object, so that the wait overlaps the rest of the run's end.
//
// The scan (the other roots, and every root without events). The constructor (or start())
// starts reading the tree in a thread as find_created_names would, recording it
// instead of judging it: for each directory outside entries with a watched name, its change
// time (read with fstat before its entries, and the coarse clock read before that fstat), its
// subdirectories, its entries with a watched name, and (within a descriptor budget) an open
// descriptor. Inside a watched entry nothing is recorded: every file's times count there (a
// hook rewritten in place changes no directory), so those are examined after the run as by
// find_created_names. finish() stops the scan and walks again, top down, using a record only
// where it still holds: a directory whose change time is what the scan read lists the same
// entries (creating, removing or renaming an entry changes its directory's ctime), so its
// recorded subdirectories are checked the same way and its watched entries examined now;
// any other directory is read again in full now, its subdirectories matched to the records by
// device and inode (fstatat for one whose descriptor the scan holds: its inode is held alive).
// A directory read in the same clock tick as its last change ("racy": its ctime >= the clock
// read before the fstat) is always read again: a change in that tick could keep the stamp. A
// rename changes the ctime of both parents, so a moved or replaced directory is always caught
// by a parent read again.
//
// What this keeps of find_created_names's notes, and what it adds:
// - Symlinks and other filesystems: every directory is opened as by find_created_names (openat2
//   RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_BENEATH, or the device check), by the scan
//   and again, by name, for every directory read again after the run.
// - A process left running during the walk can hide a name only as before: by renaming it
//   between directories during the after-run walk. What it does while the scan reads changes
//   ctimes the after-run walk sees.
// - Resetting a directory's mtime (touch -d, utimensat) hides nothing: the ctime is compared,
//   which user space cannot set (any change of an inode, a utimensat included, sets it to now).
// - A clock stepped backwards on the host between the scan and the check could stamp a change
//   with an older time, as it could make find_created_names take a new file for an old one;
//   a change stamped exactly with the recorded ctime would then go unseen.
// - Only where the ctime is known to follow a directory's entries: a root on another
//   filesystem than ext2/3/4, xfs, btrfs, tmpfs, ramfs or f2fs (a network or FUSE one, whose
//   attributes may be cached) is not scanned, only walked after the run.
// - A mount made or removed by the host (in sbx's mount namespace; a sandboxed command has its
//   own) on a directory under an unchanged parent during the run is seen as the scan saw it.
// - Descriptors: the scan holds at most `scan_descriptors` (O_PATH, close-on-exec, moved above
//   1023 when the soft limit leaves room so that select() users keep the low ones); a
//   directory beyond the budget is opened again after the run and its ctime compared (re-read
//   if it changed). Running out of descriptors during the scan only makes it record less.
// - Bounds: the after-run walk counts entries and time as find_created_names does (`truncated`
//   means the same); the scan stops at the same bounds, and at finish(), recording less.
// - The scan's thread blocks every signal (a signal meant for sbx or an embedding process is
//   never taken by it) and runs at SCHED_IDLE (the run's own processes come first; on a busy
//   machine it records less). The descriptor table is grown for its budget before the thread
//   starts (a table shared by threads grows only after an RCU grace period, which every
//   thread opening a file meanwhile waits for).
// Without threads (or off Linux) nothing is scanned and no event is read: finish() is
// find_created_names.
// - Its start may come after `since_ns` was read and after the command started (a run starts
//   it once the sandbox's first process exists, run.cpp): the scan reads while the command
//   runs anyway, and everything it records is judged after the run against `since_ns`, as the
//   after-run walk judges it; a name created before the scan read its directory is in the
//   record and examined after the run like any other.
class CreatedNamesScan {
 public:
  // Places the events' marks and starts the scan of `watch` and the events' thread (nothing for
  // a watch without roots).
  CreatedNamesScan(CreatedNamesWatch watch, std::int64_t since_ns, CreatedNamesLimits limits = {});
  // The events' marks placed, nothing started: start() starts the scan and the events' thread;
  // without start(), finish() walks the other roots whole, as find_created_names, and reads the
  // events' queue whole (overflowed: walks those roots too).
  struct Deferred {};
  CreatedNamesScan(CreatedNamesWatch watch, std::int64_t since_ns, CreatedNamesLimits limits,
                   Deferred);
  // Starts a deferred scan (the first call only; nothing once finish() has run).
  void start();
  ~CreatedNamesScan();  // stops the scan and waits for its thread
  CreatedNamesScan(const CreatedNamesScan&) = delete;
  CreatedNamesScan& operator=(const CreatedNamesScan&) = delete;

  // Waits until the scan has read everything it will, and the events' thread has read the
  // mount table (tests and benchmarks: a run never waits).
  void wait_until_scanned();
  // How many of the roots fanotify watches (tests, benchmarks).
  std::size_t event_roots() const;
  // After finish(): why the events could not answer and their roots were walked instead
  // (empty: they answered, or none was watched).
  const std::string& events_fell_back() const;
  // Stops the scan and returns what find_created_names(watch, since_ns, limits) would return
  // now. Once only.
  CreatedNames finish();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// One line for a person (no newline): the path and why it matters.
std::string created_name_warning(const std::string& path);

}  // namespace sbx
