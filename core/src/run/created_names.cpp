// The walk behind find_created_names and CreatedNamesScan (see created_names.hpp); the events
// CreatedNamesScan uses where it may are created_names_events.cpp's.
#include "sbx/core/created_names.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "created_names_events.hpp"

#if !defined(_WIN32)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#if defined(__linux__)
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#endif
#include <unistd.h>
#endif

namespace sbx {
namespace {

#if !defined(_WIN32)

constexpr std::int64_t kNanos = 1000000000;

std::int64_t to_nanos(std::int64_t seconds, std::int64_t nanoseconds) {
  return seconds * kNanos + nanoseconds;
}

// One entry's type and the times that matter, without following a symlink.
struct EntryFacts {
  bool ok = false;
  bool is_directory = false;
  bool is_socket = false;
  dev_t device = 0;
  std::int64_t changed = 0;  // the later of birth (when known) and change time
};

EntryFacts facts_at(int dir_fd, const char* name) {
  EntryFacts facts;
#if defined(__linux__) && defined(STATX_BTIME)
  struct statx stx {};
  // AT_NO_AUTOMOUNT: looking at an automount point must not mount something there.
  if (::statx(dir_fd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
              STATX_TYPE | STATX_CTIME | STATX_BTIME, &stx) != 0)
    return facts;
  facts.is_directory = S_ISDIR(stx.stx_mode);
  facts.is_socket = S_ISSOCK(stx.stx_mode);
  facts.device = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  facts.changed = to_nanos(stx.stx_ctime.tv_sec, stx.stx_ctime.tv_nsec);
  if ((stx.stx_mask & STATX_BTIME) != 0)
    facts.changed = std::max(facts.changed, to_nanos(stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec));
#else
  struct stat st {};
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return facts;
  facts.is_directory = S_ISDIR(st.st_mode);
  facts.is_socket = S_ISSOCK(st.st_mode);
  facts.device = st.st_dev;
#if defined(__APPLE__)
  facts.changed = to_nanos(st.st_ctimespec.tv_sec, st.st_ctimespec.tv_nsec);
#else
  facts.changed = to_nanos(st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
#endif
#endif
  facts.ok = true;
  return facts;
}

bool is_dot_or_dot_dot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

// Opens the directory `name` of `dir_fd` for reading if it is a directory on `device` reached
// without a symlink; -1 otherwise.
int open_subdirectory(int dir_fd, const char* name, dev_t device) {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#if defined(__linux__) && defined(SYS_openat2) && defined(RESOLVE_NO_XDEV)
  // One system call does the three checks the kernel can make atomically: not a symlink, not a
  // mount point (another filesystem, or a bind mount), and nothing outside dir_fd (the name is
  // one component, so this is belt and braces). A rename racing the walk cannot slip a symlink
  // or a mount in between a check and the open.
  open_how how{};
  how.flags = kFlags;
  how.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
  const long opened = ::syscall(SYS_openat2, dir_fd, name, &how, sizeof how);
  if (opened >= 0) return static_cast<int>(opened);
  // EXDEV: a mount point. The old contract enters a bind mount of the same filesystem, so it
  // is decided below by device; ENOSYS (kernel < 5.6) or EPERM (a seccomp filter refusing
  // openat2) take the same path. Anything else (ENOTDIR, ELOOP, ENOENT...) is not entered.
  if (errno != EXDEV && errno != ENOSYS && errno != EPERM) return -1;
#endif
  // The device is compared before opening (statx does not trigger an automount, an open
  // would) and again on what was opened (a rename between the two cannot swap in another
  // filesystem).
  const EntryFacts facts = facts_at(dir_fd, name);
  if (!facts.ok) return -1;  // errno from the statx
  if (!facts.is_directory || facts.device != device) {
    errno = facts.is_directory ? EXDEV : ENOTDIR;
    return -1;
  }
  const int fd = ::openat(dir_fd, name, kFlags);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_dev != device) {
    ::close(fd);
    errno = EXDEV;
    return -1;
  }
  return fd;
}

std::int64_t ctime_of(const struct stat& st) {
#if defined(__APPLE__)
  return to_nanos(st.st_ctimespec.tv_sec, st.st_ctimespec.tv_nsec);
#else
  return to_nanos(st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
#endif
}

// What CreatedNamesScan read of one directory outside the watched entries, to be checked after
// the run (created_names.hpp).
struct ScannedDir {
  struct Entry {
    std::size_t ordinal = 0;  // its place in the listing: the entries before it count too
    std::string name;
    bool watched = false;               // else a subdirectory
    std::unique_ptr<ScannedDir> child;  // null: not scanned (walked afresh after the run)
  };
  int fd = -1;  // held open since the scan; -1: beyond the budget (opened again after the run)
  dev_t device = 0;
  ino_t inode = 0;
  std::int64_t ctime = 0;  // fstat before the entries were read
  std::int64_t clock = 0;  // the coarse clock read before that fstat
  bool complete = false;   // every entry read and classified
  std::size_t entry_count = 0;
  std::vector<Entry> entries;  // the subdirectories and watched names, in listing order
  // The scanned subdirectories by identity, to find a renamed one in a directory read again.
  std::vector<std::pair<std::pair<dev_t, ino_t>, const ScannedDir*>> by_identity;

  ScannedDir() = default;
  ScannedDir(const ScannedDir&) = delete;
  ScannedDir& operator=(const ScannedDir&) = delete;
  ~ScannedDir() {
    if (fd >= 0) ::close(fd);
  }

  bool is(const struct stat& now) const { return now.st_dev == device && now.st_ino == inode; }
  // Its entries are still the ones read: creating, removing or renaming an entry sets the
  // directory's ctime to the current time, which user space cannot choose. Unless the ctime
  // was already in the tick the scan read it in ("racy"): a change later in that same tick
  // could leave the stamp as it was, so such a directory is never trusted.
  bool still_holds(const struct stat& now) const {
    return complete && is(now) && ctime_of(now) == ctime && ctime < clock;
  }
  const ScannedDir* child_that_is(const struct stat& now) const {
    const auto key = std::make_pair(now.st_dev, now.st_ino);
    const auto found =
        std::lower_bound(by_identity.begin(), by_identity.end(), key,
                         [](const auto& item, const auto& wanted) { return item.first < wanted; });
    return found != by_identity.end() && found->first == key ? found->second : nullptr;
  }
};

// `path` is `root` or lies below it (both absolute, without a trailing slash but "/").
bool is_under(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

// How many directories the walk could not read a report names (the rest only set truncated).
constexpr std::size_t kMaxUnreadableNamed = 8;

class Walker {
 public:
  Walker(const CreatedNamesWatch& watch, std::int64_t since, const CreatedNamesLimits& limits)
      : watch_(watch),
        since_(since),
        limits_(limits),
        deadline_(std::chrono::steady_clock::now() + limits.max_time) {}

  // `record`: what CreatedNamesScan read of the root (null: none, the walk of
  // find_created_names).
  void walk_root(const std::string& root, const ScannedDir* record = nullptr);
  // Examines only the entry `entry` (a watched name below `root`, both absolute), reached from
  // the root as walk_root would reach it: what walk_root would report of that entry.
  void examine(const std::string& root, const std::string& entry);
  CreatedNames result() && {
    return CreatedNames{std::vector<std::string>(found_.begin(), found_.end()), truncated_,
                        std::move(unreadable_)};
  }

 private:
  struct DirResult {
    bool changed = false;  // some entry inside was created or changed during the run
    bool empty = true;
  };
  DirResult walk_dir(int dir_fd, const std::string& path, dev_t device, std::size_t depth,
                     bool timed, const ScannedDir* record = nullptr);
  void visit(int dir_fd, const std::string& path, const char* name, unsigned char type,
             dev_t device, std::size_t depth, bool timed, const ScannedDir* listing,
             const ScannedDir* known, DirResult& result);
  void enter_untimed(int dir_fd, const char* name, const std::string& path, dev_t device,
                     std::size_t depth, const ScannedDir* listing, const ScannedDir* known);
  void replay(const ScannedDir& record, int dir_fd, const std::string& path, dev_t device,
              std::size_t depth);
  template <class Visit>
  bool for_each_entry(int dir_fd, std::size_t depth, Visit visit);
  bool out_of_budget();
  void cannot_walk(const std::string& path);
  bool is_other_root(const std::string& path) const {
    return std::find(watch_.roots.begin(), watch_.roots.end(), path) != watch_.roots.end();
  }
  bool is_watched_name(const char* name) const {
    return std::find(watch_.names.begin(), watch_.names.end(), name) != watch_.names.end();
  }

  const CreatedNamesWatch& watch_;
  std::int64_t since_;
  const CreatedNamesLimits& limits_;
  std::chrono::steady_clock::time_point deadline_;
  std::size_t entries_ = 0;
  bool truncated_ = false;
  std::set<std::string> found_;
  std::vector<std::string> unreadable_;
#if defined(__linux__)
  // One getdents64 buffer per depth, reused by every directory at that depth: the walk
  // recurses in the middle of a directory, so a buffer is only free again once its directory
  // is done. 8 KiB (~200 entries a call) keeps even the deepest allowed walk at 2 MiB.
  struct Buffer {
    alignas(struct dirent64) char bytes[8192];
  };
  std::vector<std::unique_ptr<Buffer>> buffers_;
#endif
};

bool Walker::out_of_budget() {
  if (truncated_) return true;
  ++entries_;
  // The clock is read every 1024 entries: cheap enough, and at most that many past the time.
  if (entries_ > limits_.max_entries ||
      ((entries_ & 1023u) == 0 && std::chrono::steady_clock::now() > deadline_))
    truncated_ = true;
  return truncated_;
}

// A directory the walk could not open or read to the end: whatever is inside it is not known
// (a command can chmod 000 a directory above the .git it planted), so the list may be
// incomplete. Only a directory gone since it was listed (ENOENT: nothing inside it remains) or
// a mount point (EXDEV: another filesystem, not entered on purpose) leaves the list complete.
// A directory this process may not open (EACCES) that the command could neither have written
// into nor made unreadable (chmod(2) is the owner's): another user's, without a group or other
// write bit (a private directory of another run in a shared /tmp), hides nothing the command made.
bool closed_to_the_command(const struct stat& st) {
  return st.st_uid != ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

void Walker::cannot_walk(const std::string& path) {
  if (errno == ENOENT || errno == EXDEV) return;
  if (errno == EACCES || errno == EPERM) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && closed_to_the_command(st)) return;
  }
  truncated_ = true;
  if (unreadable_.size() < kMaxUnreadableNamed) unreadable_.push_back(path);
}

// Calls visit(name, d_type) for every entry of dir_fd but "." and "..", until visit returns
// false. An unreadable directory (or one that fails half way) yields what was read.
template <class Visit>
bool Walker::for_each_entry(int dir_fd, std::size_t depth, Visit visit) {
#if defined(__linux__)
  // getdents64 into a reused buffer: no DIR to allocate, no fcntl per directory as fdopendir
  // does. Records are laid out as struct dirent64 and 8-byte aligned by the kernel.
  // (Held by pointer: the recursion grows buffers_ while an outer level reads its buffer.)
  while (buffers_.size() <= depth) buffers_.push_back(std::make_unique<Buffer>());
  Buffer& buffer = *buffers_[depth];
  for (;;) {
    const ssize_t length = ::getdents64(dir_fd, buffer.bytes, sizeof buffer.bytes);
    if (length == 0) return true;
    if (length < 0) return false;
    for (ssize_t offset = 0; offset < length;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buffer.bytes + offset);
      offset += entry->d_reclen;
      if (is_dot_or_dot_dot(entry->d_name)) continue;
      if (!visit(entry->d_name, entry->d_type)) return true;
    }
  }
#else
  (void)depth;
  const int owned = ::dup(dir_fd);  // closedir closes the descriptor it was given
  if (owned < 0) return false;
  DIR* dir = ::fdopendir(owned);
  if (dir == nullptr) {
    ::close(owned);
    return false;
  }
  errno = 0;
  bool read_all = true;
  while (const dirent* entry = ::readdir(dir)) {
    if (is_dot_or_dot_dot(entry->d_name)) continue;
    if (!visit(entry->d_name, entry->d_type)) break;
    errno = 0;
  }
  if (errno != 0) read_all = false;
  ::closedir(dir);
  return read_all;
#endif
}

// Walks the directory open as dir_fd (and closes it). `timed`: inside an entry with a watched
// name, where every entry's times count (a hook rewritten deep in .git marks the .git); outside
// one, an entry's times matter to nobody (only a watched name is ever reported, and the
// `changed` a directory returns is read only by a watched ancestor), so only what is a
// directory must be known, and the entry's d_type says it without a statx. `record`: the
// scan's record of this same directory, whose entries changed since (its subdirectories are
// matched to the scanned ones by identity).
Walker::DirResult Walker::walk_dir(int dir_fd, const std::string& path, dev_t device,
                                   std::size_t depth, bool timed, const ScannedDir* record) {
  DirResult result;
  const bool read_all = for_each_entry(dir_fd, depth, [&](const char* name, unsigned char type) {
    result.empty = false;
    if (out_of_budget()) return false;
    visit(dir_fd, path, name, type, device, depth, timed, record, nullptr, result);
    return true;
  });
  if (!read_all) cannot_walk(path);
  ::close(dir_fd);
  return result;
}

// One entry of the directory dir_fd at `path`. For an untimed subdirectory: `listing` is the
// scan's record of dir_fd when dir_fd was read again, `known` the scan's record of this very
// entry when dir_fd was not (replay); both null: no record, find_created_names's walk.
void Walker::visit(int dir_fd, const std::string& path, const char* name, unsigned char type,
                   dev_t device, std::size_t depth, bool timed, const ScannedDir* listing,
                   const ScannedDir* known, DirResult& result) {
  const bool watched = is_watched_name(name);
  const bool entry_timed = timed || watched;
  // d_type is DT_UNKNOWN where the filesystem does not fill it in: then statx tells.
  if (!limits_.trust_d_type) type = DT_UNKNOWN;
  bool changed = false;
  bool socket = false;
  if (entry_timed || type == DT_UNKNOWN) {
    const EntryFacts facts = facts_at(dir_fd, name);
    if (!facts.ok) return;  // gone since it was listed
    changed = facts.changed >= since_;
    socket = facts.is_socket;
    type = facts.is_directory ? DT_DIR : DT_REG;  // any non-directory is a leaf here
  }
  // A symlink (DT_LNK) is a leaf: never followed.
  if (type != DT_DIR && !watched) {
    result.changed = result.changed || changed;
    return;
  }
  const std::string child = path == "/" ? "/" + std::string(name) : path + "/" + name;
  bool empty_dir = false;
  // Never into a symlink, another filesystem (a mount below the root is not what the command
  // wrote through this root: open_subdirectory refuses both) or another root (walked itself).
  if (type == DT_DIR && !is_other_root(child)) {
    if (depth >= limits_.max_depth) {
      truncated_ = true;
    } else if (!entry_timed) {
      // Outside watched names a directory's own times are read by nobody: nothing to return.
      enter_untimed(dir_fd, name, child, device, depth + 1, listing, known);
    } else {
      const int fd = open_subdirectory(dir_fd, name, device);
      // Out of descriptors or memory (a deep tree in a process with many files open), or a
      // directory the walk may not read: the list may be incomplete.
      if (fd < 0) cannot_walk(child);
      if (fd >= 0) {
        const DirResult inner = walk_dir(fd, child, device, depth + 1, entry_timed);
        changed = changed || inner.changed;
        empty_dir = inner.empty;
      }
    }
  }
  result.changed = result.changed || changed;
  // A socket at a protected name is what the bwrap backend's mask of a missing name stands on
  // (its mount point on the host, made and removed by each run): a run alongside this one in
  // the same writable root makes and removes its own while this one runs. It holds no hooks
  // or config that a tool would act on (git goes past a `.git` socket, opening it fails), so,
  // like an empty directory, it is not reported.
  if (changed && !empty_dir && !socket && watched) found_.insert(child);
}

// The untimed subdirectory `name` of dir_fd, at `path` and `depth`: replayed from the scan's
// record where that record still holds, read (again) otherwise.
void Walker::enter_untimed(int dir_fd, const char* name, const std::string& path, dev_t device,
                           std::size_t depth, const ScannedDir* listing, const ScannedDir* known) {
  // dir_fd lists what the scan read (replay): `name` is still the directory the scan opened,
  // and the descriptor the scan kept says whether its entries changed, without a new open.
  if (known != nullptr && known->fd >= 0) {
    struct stat now {};
    if (::fstat(known->fd, &now) == 0 && known->still_holds(now)) {
      replay(*known, known->fd, path, device, depth);
      return;
    }
  }
  // dir_fd was read again: the scanned subdirectory now at `name` is found by identity, and
  // one whose descriptor the scan kept needs no new open either. Its inode is held alive, so
  // no other directory on its device has its number; a mount point or a symlink now at `name`
  // shows another identity (stat crosses a mount, not a symlink) and is opened below as
  // find_created_names opens it.
  if (listing != nullptr && !listing->by_identity.empty()) {
    struct stat now {};
    if (::fstatat(dir_fd, name, &now, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) == 0 &&
        S_ISDIR(now.st_mode)) {
      const ScannedDir* held = listing->child_that_is(now);
      if (held != nullptr && held->fd >= 0 && held->still_holds(now)) {
        replay(*held, held->fd, path, device, depth);
        return;
      }
    }
  }
  // Opened as find_created_names opens it (what it refuses is refused here too).
  const int fd = open_subdirectory(dir_fd, name, device);
  if (fd < 0) {
    cannot_walk(path);
    return;
  }
  const ScannedDir* record = nullptr;
  if (known != nullptr || (listing != nullptr && !listing->by_identity.empty())) {
    struct stat now {};
    if (::fstat(fd, &now) == 0) {
      record = known != nullptr ? known : listing->child_that_is(now);
      // A record is only ever about the directory it was read from (a directory opened again
      // by name may be another one).
      if (record != nullptr && !record->is(now)) record = nullptr;
      if (record != nullptr && record->still_holds(now)) {
        replay(*record, fd, path, device, depth);
        ::close(fd);
        return;
      }
    }
  }
  walk_dir(fd, path, device, depth, false, record);
}

// Walks the directory dir_fd (not closed) at `path` from the scan's record of it, whose
// entries are unchanged: the recorded subdirectories and watched names are visited in their
// listing order, and every entry counts against the bounds as in walk_dir, so that the walk
// stops where walk_dir would.
void Walker::replay(const ScannedDir& record, int dir_fd, const std::string& path, dev_t device,
                    std::size_t depth) {
  DirResult unused;
  std::size_t counted = 0;
  for (const ScannedDir::Entry& entry : record.entries) {
    for (; counted <= entry.ordinal; ++counted) {
      if (out_of_budget()) return;
    }
    visit(dir_fd, path, entry.name.c_str(), entry.watched ? DT_UNKNOWN : DT_DIR, device, depth,
          false, nullptr, entry.child.get(), unused);
  }
  for (; counted < record.entry_count; ++counted) {
    if (out_of_budget()) return;
  }
}

void Walker::walk_root(const std::string& root, const ScannedDir* record) {
  if (truncated_) return;
  const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOTDIR) cannot_walk(root);  // a writable file holds no names
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    cannot_walk(root);
    ::close(fd);
    return;
  }
  if (record != nullptr && !record->is(st)) record = nullptr;  // another directory there now
  if (record != nullptr && record->still_holds(st)) {
    replay(*record, fd, root, st.st_dev, 0);
    ::close(fd);
    return;
  }
  walk_dir(fd, root, st.st_dev, 0, false, record);
}

// Down from the root one component at a time, each opened as walk_dir's visit opens it (a
// symlink, another filesystem or a directory the walk may not read stops the way there as it
// stops the walk), then the entry itself judged by visit() as the walk judges it. The entries
// on the way count against the bounds, and the depth bound holds, as in the walk.
void Walker::examine(const std::string& root, const std::string& entry) {
  if (truncated_ || !is_under(entry, root) || entry == root) return;
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOTDIR) cannot_walk(root);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    cannot_walk(root);
    ::close(fd);
    return;
  }
  std::string path = root;
  for (std::size_t at = root == "/" ? 1 : root.size() + 1, depth = 0;; ++depth) {
    const std::size_t slash = entry.find('/', at);
    const std::string name = entry.substr(at, slash == std::string::npos ? slash : slash - at);
    if (out_of_budget()) break;
    if (slash == std::string::npos) {
      DirResult unused;
      visit(fd, path, name.c_str(), DT_UNKNOWN, st.st_dev, depth, false, nullptr, nullptr, unused);
      break;
    }
    const std::string child = path == "/" ? "/" + name : path + "/" + name;
    if (depth >= limits_.max_depth) {
      truncated_ = true;
      break;
    }
    const int next = open_subdirectory(fd, name.c_str(), st.st_dev);
    if (next < 0) {
      // Not a directory the walk enters (a symlink, a file, another filesystem) or gone: the
      // walk would not find the entry there either. Anything else it could not read.
      if (errno != ELOOP && errno != ENOTDIR && errno != EXDEV) cannot_walk(child);
      break;
    }
    ::close(fd);
    fd = next;
    path = child;
    at = slash + 1;
  }
  ::close(fd);
}

#if defined(__linux__)
#define SBX_CREATED_NAMES_SCAN 1

// Descriptors above this one are out of the way of select() (FD_SETSIZE) in an embedding
// process: the scan moves the ones it keeps there when the soft limit leaves room.
constexpr std::size_t kHighDescriptors = 1024;
// Descriptors the scan keeps aside for the directories it is reading (one per level) when it
// holds the rest of its budget.
constexpr std::size_t kStackReserve = 64;

// How many descriptors the scan may hold open at once: a quarter of what the process may still
// open (the command's launch and an embedding process need the rest), at most 4096 (a /tmp
// holds thousands of directories; a held one costs a close after the run, one beyond the
// budget an open, an fstat and a close); and where the held ones go.
struct DescriptorBudget {
  std::size_t count = 0;
  int high_floor = 0;  // > 0: held descriptors are moved to this number or above
  int top = 0;         // the highest number the scan's descriptors should reach
};

DescriptorBudget descriptor_budget(const CreatedNamesLimits& limits) {
  DescriptorBudget budget;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return budget;
  const std::size_t soft = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (1u << 20)
                               ? std::size_t{1} << 20
                               : static_cast<std::size_t>(limit.rlim_cur);
  // Open now: the entries of /proc/self/fd (this listing's own descriptor included: one too
  // many, on the safe side); without /proc, half the limit is taken as used.
  std::size_t open_now = soft / 2;
  const int fd = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    open_now = 0;
    alignas(struct dirent64) char bytes[4096];
    for (ssize_t length; (length = ::getdents64(fd, bytes, sizeof bytes)) > 0;) {
      for (ssize_t offset = 0; offset < length;) {
        const auto* entry = reinterpret_cast<const struct dirent64*>(bytes + offset);
        offset += entry->d_reclen;
        if (!is_dot_or_dot_dot(entry->d_name)) ++open_now;
      }
    }
    ::close(fd);
  }
  budget.count = limits.scan_descriptors
                     ? *limits.scan_descriptors
                     : std::min<std::size_t>(4096, soft > open_now ? (soft - open_now) / 4 : 0);
  const std::size_t top = soft >= kHighDescriptors + 2 * budget.count
                              ? kHighDescriptors + budget.count
                              : std::min(soft - 1, open_now + budget.count);
  if (soft >= kHighDescriptors + 2 * budget.count)
    budget.high_floor = static_cast<int>(kHighDescriptors);
  budget.top = static_cast<int>(top);
  return budget;
}

// Grows this process's descriptor table to hold `top` now, before the scan's thread exists:
// the kernel grows a table shared by several threads only after an RCU grace period (and
// every thread that opens a file meanwhile waits for it), which here took milliseconds each
// time, several times a run, while the run's own thread was opening its pipes. A table never
// shrinks: in a process with other threads, the first run alone pays that wait.
void reserve_descriptor_table(int top) {
  if (top <= 0) return;
  const int any = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (any < 0) return;
  const int placed = ::fcntl(any, F_DUPFD_CLOEXEC, top);
  if (placed >= 0) ::close(placed);
  ::close(any);
}

// Filesystems known to set a directory's ctime whenever an entry is created, removed or renamed
// in it, from the kernel's own clock (local filesystems; not network or FUSE ones, whose
// attributes may be cached or come from elsewhere). A root on any other is only walked after
// the run, as by find_created_names.
bool ctime_follows_entries(const struct statfs& fs) {
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0xEF53UL:      // ext2, ext3, ext4
    case 0x58465342UL:  // xfs
    case 0x9123683EUL:  // btrfs
    case 0x01021994UL:  // tmpfs
    case 0x858458F6UL:  // ramfs
    case 0xF2F52010UL:  // f2fs
      return true;
    default:
      return false;
  }
}

// The scan of CreatedNamesScan: reads the tree as Walker does, recording it (ScannedDir)
// instead of judging it. Runs in its own thread while the command runs.
class Scanner {
 public:
  Scanner(const CreatedNamesWatch& watch, const CreatedNamesLimits& limits,
          const std::atomic<bool>& stop, const DescriptorBudget& budget)
      : watch_(watch),
        limits_(limits),
        stop_(stop),
        deadline_(std::chrono::steady_clock::now() + limits.max_time),
        budget_(budget.count),
        hold_limit_(budget.count - std::min(kStackReserve, budget.count / 4)),
        high_floor_(budget.high_floor) {}

  std::unique_ptr<ScannedDir> scan_root(const std::string& root) {
    if (halted() || budget_ == 0) return nullptr;
    const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return nullptr;
    ++open_;
    struct stat st {};
    struct statfs fs {};
    if (::fstat(fd, &st) != 0 || ::fstatfs(fd, &fs) != 0 || !ctime_follows_entries(fs)) {
      release(fd);
      return nullptr;
    }
    return scan_dir(fd, root, st.st_dev, 0);
  }

 private:
  // Reads the directory open as fd (counted in open_), then its subdirectories; keeps fd in
  // the record within the budget, closes it otherwise.
  std::unique_ptr<ScannedDir> scan_dir(int fd, const std::string& path, dev_t device,
                                       std::size_t depth) {
    auto dir = std::make_unique<ScannedDir>();
    // The clock before the fstat, the fstat before the entries: a change after the fstat gets
    // a ctime of at least this clock, so a ctime below it that is still there after the run
    // means no change (ScannedDir::still_holds).
    dir->clock = created_names_clock();
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      dir->device = st.st_dev;
      dir->inode = st.st_ino;
      dir->ctime = ctime_of(st);
      dir->complete = read_entries(fd, *dir);
    }
    for (ScannedDir::Entry& entry : dir->entries) {
      if (entry.watched) continue;
      if (halted()) break;
      const std::string child = path == "/" ? "/" + entry.name : path + "/" + entry.name;
      // Where the walk after the run does not go either (another root, past the depth bound),
      // or beyond the budget: no record, the walk after the run reads it afresh.
      if (is_other_root(child) || depth >= limits_.max_depth || open_ >= budget_) continue;
      const int child_fd = open_subdirectory(fd, entry.name.c_str(), device);
      if (child_fd < 0) continue;
      ++open_;
      entry.child = scan_dir(child_fd, child, device, depth + 1);
      if (entry.child->inode != 0)  // 0: its fstat failed, it has no identity
        dir->by_identity.push_back({{entry.child->device, entry.child->inode}, entry.child.get()});
    }
    std::sort(dir->by_identity.begin(), dir->by_identity.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    keep_or_close(*dir, fd);
    return dir;
  }

  // Every entry but "." and ".." in listing order: the watched names and the subdirectories
  // are recorded, the rest only counted. false when the listing is not known whole.
  bool read_entries(int fd, ScannedDir& dir) {
    std::size_t ordinal = 0;
    bool whole = true;
    for (;;) {
      const ssize_t length = ::getdents64(fd, buffer_.bytes, sizeof buffer_.bytes);
      if (length == 0) break;
      if (length < 0) {
        whole = false;
        break;
      }
      for (ssize_t offset = 0; offset < length;) {
        const auto* entry = reinterpret_cast<const struct dirent64*>(buffer_.bytes + offset);
        offset += entry->d_reclen;
        if (is_dot_or_dot_dot(entry->d_name)) continue;
        if (count_entry()) {
          dir.entry_count = ordinal;
          return false;
        }
        const bool watched = is_watched_name(entry->d_name);
        unsigned char type = entry->d_type;
        if (!limits_.trust_d_type) type = DT_UNKNOWN;
        if (!watched && type == DT_UNKNOWN) {
          const EntryFacts facts = facts_at(fd, entry->d_name);
          if (facts.ok) {
            type = facts.is_directory ? DT_DIR : DT_REG;
          } else {
            whole = false;  // gone already: the directory changed, it is read again anyway
          }
        }
        if (watched || type == DT_DIR)
          dir.entries.push_back(ScannedDir::Entry{ordinal, entry->d_name, watched, nullptr});
        ++ordinal;
      }
    }
    dir.entry_count = ordinal;
    return whole;
  }

  void keep_or_close(ScannedDir& dir, int fd) {
    if (held_ >= hold_limit_) {
      release(fd);
      return;
    }
    // Held as O_PATH: enough for what the check after the run does with it (fstat, statx and
    // openat2 relative to it), and closed in a third of the time of a descriptor open for
    // reading, on the run's critical path. "." of the same descriptor: the same directory on
    // the same mount, nothing resolved again.
    const int path_fd = ::openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (path_fd >= 0) {
      ::close(fd);
      fd = path_fd;
    }
    if (high_floor_ > 0 && fd < high_floor_) {
      const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, high_floor_);
      if (high >= 0) {
        ::close(fd);
        fd = high;
      }
    }
    dir.fd = fd;
    ++held_;
  }

  void release(int fd) {
    ::close(fd);
    --open_;
  }

  // The scan stops at finish() and at the walk's own bounds (it must not hold the run's result
  // back either): what it has not recorded is walked after the run.
  bool halted() {
    if (!halted_ && stop_.load(std::memory_order_relaxed)) halted_ = true;
    return halted_;
  }
  bool count_entry() {
    if (halted()) return true;
    ++entries_;
    if (entries_ > limits_.max_entries ||
        ((entries_ & 1023u) == 0 && std::chrono::steady_clock::now() > deadline_))
      halted_ = true;
    return halted_;
  }
  bool is_other_root(const std::string& path) const {
    return std::find(watch_.roots.begin(), watch_.roots.end(), path) != watch_.roots.end();
  }
  bool is_watched_name(const char* name) const {
    return std::find(watch_.names.begin(), watch_.names.end(), name) != watch_.names.end();
  }

  const CreatedNamesWatch& watch_;
  const CreatedNamesLimits& limits_;
  const std::atomic<bool>& stop_;
  std::chrono::steady_clock::time_point deadline_;
  std::size_t budget_;
  std::size_t hold_limit_;
  int high_floor_;
  std::size_t open_ = 0;  // open now: on the stack of directories being read, and held
  std::size_t held_ = 0;
  std::size_t entries_ = 0;
  bool halted_ = false;
  // One buffer: a directory is read whole before its subdirectories.
  struct {
    alignas(struct dirent64) char bytes[8192];
  } buffer_;
};
#endif  // __linux__

#endif  // !_WIN32

}  // namespace

std::int64_t created_names_clock() {
#if defined(_WIN32)
  return 0;
#else
#if defined(CLOCK_REALTIME_COARSE)
  // Files are stamped from the coarse clock; the fine one may read a tick ahead of it.
  const clockid_t clock = CLOCK_REALTIME_COARSE;
#else
  const clockid_t clock = CLOCK_REALTIME;
#endif
  timespec now{};
  ::clock_gettime(clock, &now);
  return to_nanos(now.tv_sec, now.tv_nsec);
#endif
}

CreatedNamesWatch created_names_watch(const Policy& policy, const ResolvedPolicy& resolved) {
  CreatedNamesWatch watch;
  if (resolved.filesystem_kind != FilesystemKind::kRestricted) return watch;
  watch.roots = writable_roots(resolved);
  watch.names = default_protected_names();
  for (const std::string& name : policy.filesystem.protected_names) {
    if (std::find(watch.names.begin(), watch.names.end(), name) == watch.names.end())
      watch.names.push_back(name);
  }
  return watch;
}

CreatedNames find_created_names(const CreatedNamesWatch& watch, std::int64_t since_ns,
                                const CreatedNamesLimits& limits) {
#if defined(_WIN32)
  (void)watch;
  (void)since_ns;
  (void)limits;
  return {};
#else
  Walker walker(watch, since_ns, limits);
  for (const std::string& root : watch.roots) walker.walk_root(root);
  return std::move(walker).result();
#endif
}

struct CreatedNamesScan::State {
  CreatedNamesWatch watch;
  std::int64_t since = 0;
  CreatedNamesLimits limits;
  // The roots' filesystems watched for events (null: none is): those roots are neither scanned
  // nor walked unless the events cannot answer.
  std::unique_ptr<created_names_events::ChangeWatch> events;
  std::string events_fell_back;
  bool watched(std::size_t root) const { return events && events->watches(root); }
#if defined(SBX_CREATED_NAMES_SCAN)
  std::atomic<bool> stop{false};
  DescriptorBudget budget;
  std::vector<std::unique_ptr<ScannedDir>> roots;  // the thread's until it is joined
  std::thread thread;
  std::mutex mutex;
  std::condition_variable scanned_changed;
  bool scanned = true;
  bool start_asked = false;  // start() or finish() has run: the scan starts at most once

  void scan() {
    // Only CPU time nobody else wants: the run's own processes (bwrap's set-up, the command) always
    // come first. SCHED_IDLE (sched(7): runs only when nothing else is runnable) keeps the scan
    // from delaying the set-up it overlaps, which at normal priority cost a short run about what
    // the scan saved after it (bench/README.md, sbx_bench_created_names; CHANGELOG.md, 2026-12-06).
    // On a machine with no idle CPU the scan records little and finish() walks the rest, as
    // find_created_names would.
    const sched_param idle{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    try {
      Scanner scanner(watch, limits, stop, budget);
      for (std::size_t i = 0; i < watch.roots.size(); ++i)
        roots.push_back(watched(i) ? nullptr : scanner.scan_root(watch.roots[i]));
    } catch (...) {
      // Out of memory: what was recorded stays usable (a record is complete or says it is
      // not), the rest is walked after the run; an exception must not leave the thread.
    }
    const std::lock_guard<std::mutex> lock(mutex);
    scanned = true;
    scanned_changed.notify_all();
  }
  void stop_and_join() {
    stop.store(true, std::memory_order_relaxed);
    if (thread.joinable()) thread.join();
  }
#endif
};

CreatedNamesScan::CreatedNamesScan(CreatedNamesWatch watch, std::int64_t since_ns,
                                   CreatedNamesLimits limits)
    : CreatedNamesScan(std::move(watch), since_ns, limits, Deferred{}) {
  start();
}

CreatedNamesScan::CreatedNamesScan(CreatedNamesWatch watch, std::int64_t since_ns,
                                   CreatedNamesLimits limits, Deferred)
    : state_(std::make_unique<State>()) {
  state_->watch = std::move(watch);
  state_->since = since_ns;
  state_->limits = limits;
  // The marks go on now, before the command starts: every change it makes is then queued.
  if (limits.events && !state_->watch.roots.empty())
    state_->events = created_names_events::ChangeWatch::open(
        state_->watch.roots, state_->watch.names, limits.max_changed);
}

std::size_t CreatedNamesScan::event_roots() const {
  std::size_t count = 0;
  for (std::size_t i = 0; i < state_->watch.roots.size(); ++i) {
    if (state_->watched(i)) ++count;
  }
  return count;
}

const std::string& CreatedNamesScan::events_fell_back() const { return state_->events_fell_back; }

void CreatedNamesScan::start() {
  if (state_->events) state_->events->start();
#if defined(SBX_CREATED_NAMES_SCAN)
  if (state_->start_asked) return;
  state_->start_asked = true;
  if (event_roots() == state_->watch.roots.size()) return;  // nothing left to scan
  state_->budget = descriptor_budget(state_->limits);
  if (state_->budget.count == 0) return;  // finish() walks everything, as find_created_names
  reserve_descriptor_table(state_->budget.top);
  state_->scanned = false;
  // The thread blocks every signal, as the limits' watchdog does: a signal meant for sbx (or
  // for an embedding process) is never taken by it.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    state_->thread = std::thread([state = state_.get()] { state->scan(); });
  } catch (...) {
    // No thread (no resources, or out of memory): finish() walks everything, as
    // find_created_names. Caught here, so the signal mask below is always restored: start()
    // runs inside a backend's exec, whose caller must get its mask back.
    state_->scanned = true;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
#endif
}

CreatedNamesScan::~CreatedNamesScan() {
#if defined(SBX_CREATED_NAMES_SCAN)
  state_->stop_and_join();
#endif
}

void CreatedNamesScan::wait_until_scanned() {
  if (state_->events) state_->events->wait_until_ready();
#if defined(SBX_CREATED_NAMES_SCAN)
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->scanned_changed.wait(lock, [this] { return state_->scanned; });
#endif
}

CreatedNames CreatedNamesScan::finish() {
#if defined(SBX_CREATED_NAMES_SCAN)
  state_->start_asked = true;  // a start() after this finds nothing to start
  state_->stop_and_join();
  // What the events say changed below the watched roots (run.cpp calls this once every process
  // of the run is dead); when they cannot say, those roots are walked whole.
  std::vector<created_names_events::Candidate> candidates;
  const bool events_answer =
      state_->events && state_->events->finish(candidates, state_->events_fell_back);
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return std::tie(a.root, a.path) < std::tie(b.root, b.path);
  });
  Walker walker(state_->watch, state_->since, state_->limits);
  for (std::size_t i = 0; i < state_->watch.roots.size(); ++i) {
    if (!state_->watched(i) || !events_answer) {
      walker.walk_root(state_->watch.roots[i],
                       i < state_->roots.size() ? state_->roots[i].get() : nullptr);
      continue;
    }
    // Each entry once; one inside another is examined with it (an entry's examination lists
    // every watched entry inside it that changed). Sorted, an entry comes after its ancestors.
    std::set<std::string> examined;
    const auto inside_examined = [&examined](const std::string& path) {
      for (std::size_t slash = path.find('/', 1); slash != std::string::npos;
           slash = path.find('/', slash + 1)) {
        if (examined.count(path.substr(0, slash)) != 0) return true;
      }
      return examined.count(path) != 0;
    };
    for (const created_names_events::Candidate& candidate : candidates) {
      if (candidate.root != i || inside_examined(candidate.path)) continue;
      examined.insert(candidate.path);
      walker.examine(state_->watch.roots[i], candidate.path);
    }
  }
  state_->roots.clear();  // closes the descriptors the scan held
  // The events' group is closed with this object, as late as may be: the kernel frees its
  // marks (removed once the events were read) an SRCU grace period later, which a close
  // before that waits for.
  return std::move(walker).result();
#else
  return find_created_names(state_->watch, state_->since, state_->limits);
#endif
}

std::string created_name_warning(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string why = name == ".git"
                              ? "a later git command there runs its hooks/config outside the "
                                "sandbox"
                              : "a tool that reads it there later acts on it outside the sandbox";
  return "the command created or changed " + path + "; " + why;
}

}  // namespace sbx
