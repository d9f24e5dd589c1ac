// The walk behind find_created_names (see created_names.hpp).
#include "sbx/core/created_names.hpp"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#if !defined(_WIN32)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#if defined(__linux__)
#include <linux/openat2.h>
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
  facts.device = makedev(stx.stx_dev_major, stx.stx_dev_minor);
  facts.changed = to_nanos(stx.stx_ctime.tv_sec, stx.stx_ctime.tv_nsec);
  if ((stx.stx_mask & STATX_BTIME) != 0)
    facts.changed = std::max(facts.changed, to_nanos(stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec));
#else
  struct stat st {};
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return facts;
  facts.is_directory = S_ISDIR(st.st_mode);
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
  if (!facts.ok || !facts.is_directory || facts.device != device) return -1;
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

class Walker {
 public:
  Walker(const CreatedNamesWatch& watch, std::int64_t since, const CreatedNamesLimits& limits)
      : watch_(watch),
        since_(since),
        limits_(limits),
        deadline_(std::chrono::steady_clock::now() + limits.max_time) {}

  void walk_root(const std::string& root);
  CreatedNames result() && {
    return CreatedNames{std::vector<std::string>(found_.begin(), found_.end()), truncated_};
  }

 private:
  struct DirResult {
    bool changed = false;  // some entry inside was created or changed during the run
    bool empty = true;
  };
  DirResult walk_dir(int dir_fd, const std::string& path, dev_t device, std::size_t depth,
                     bool timed);
  template <class Visit>
  void for_each_entry(int dir_fd, std::size_t depth, Visit visit);
  bool out_of_budget();
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

// Calls visit(name, d_type) for every entry of dir_fd but "." and "..", until visit returns
// false. An unreadable directory (or one that fails half way) yields what was read.
template <class Visit>
void Walker::for_each_entry(int dir_fd, std::size_t depth, Visit visit) {
#if defined(__linux__)
  // getdents64 into a reused buffer: no DIR to allocate, no fcntl per directory as fdopendir
  // does. Records are laid out as struct dirent64 and 8-byte aligned by the kernel.
  // (Held by pointer: the recursion grows buffers_ while an outer level reads its buffer.)
  while (buffers_.size() <= depth) buffers_.push_back(std::make_unique<Buffer>());
  Buffer& buffer = *buffers_[depth];
  for (;;) {
    const ssize_t length = ::getdents64(dir_fd, buffer.bytes, sizeof buffer.bytes);
    if (length <= 0) return;
    for (ssize_t offset = 0; offset < length;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(buffer.bytes + offset);
      offset += entry->d_reclen;
      if (is_dot_or_dot_dot(entry->d_name)) continue;
      if (!visit(entry->d_name, entry->d_type)) return;
    }
  }
#else
  (void)depth;
  const int owned = ::dup(dir_fd);  // closedir closes the descriptor it was given
  if (owned < 0) return;
  DIR* dir = ::fdopendir(owned);
  if (dir == nullptr) {
    ::close(owned);
    return;
  }
  while (const dirent* entry = ::readdir(dir)) {
    if (is_dot_or_dot_dot(entry->d_name)) continue;
    if (!visit(entry->d_name, entry->d_type)) break;
  }
  ::closedir(dir);
#endif
}

// Walks the directory open as dir_fd (and closes it). `timed`: inside an entry with a watched
// name, where every entry's times count (a hook rewritten deep in .git marks the .git); outside
// one, an entry's times matter to nobody (only a watched name is ever reported, and the
// `changed` a directory returns is read only by a watched ancestor), so only what is a
// directory must be known, and the entry's d_type says it without a statx.
Walker::DirResult Walker::walk_dir(int dir_fd, const std::string& path, dev_t device,
                                   std::size_t depth, bool timed) {
  DirResult result;
  for_each_entry(dir_fd, depth, [&](const char* name, unsigned char type) {
    result.empty = false;
    if (out_of_budget()) return false;
    const bool watched = is_watched_name(name);
    const bool entry_timed = timed || watched;
    // d_type is DT_UNKNOWN where the filesystem does not fill it in: then statx tells.
    if (!limits_.trust_d_type) type = DT_UNKNOWN;
    bool changed = false;
    if (entry_timed || type == DT_UNKNOWN) {
      const EntryFacts facts = facts_at(dir_fd, name);
      if (!facts.ok) return true;  // gone since it was listed
      changed = facts.changed >= since_;
      type = facts.is_directory ? DT_DIR : DT_REG;  // any non-directory is a leaf here
    }
    // A symlink (DT_LNK) is a leaf: never followed.
    if (type != DT_DIR && !watched) {
      result.changed = result.changed || changed;
      return true;
    }
    const std::string child = path == "/" ? "/" + std::string(name) : path + "/" + name;
    bool empty_dir = false;
    // Never into a symlink, another filesystem (a mount below the root is not what the command
    // wrote through this root: open_subdirectory refuses both) or another root (walked itself).
    if (type == DT_DIR && !is_other_root(child)) {
      if (depth >= limits_.max_depth) {
        truncated_ = true;
      } else {
        const int fd = open_subdirectory(dir_fd, name, device);
        // Out of descriptors or memory (a deep tree in a process with many files open) is a
        // bound reached, not a directory that does not count: say the list may be incomplete.
        if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOMEM)) truncated_ = true;
        if (fd >= 0) {
          const DirResult inner = walk_dir(fd, child, device, depth + 1, entry_timed);
          changed = changed || inner.changed;
          empty_dir = inner.empty;
        }
      }
    }
    result.changed = result.changed || changed;
    if (changed && !empty_dir && watched) found_.insert(child);
    return true;
  });
  ::close(dir_fd);
  return result;
}

void Walker::walk_root(const std::string& root) {
  if (truncated_) return;
  const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return;
  }
  walk_dir(fd, root, st.st_dev, 0, false);
}

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
