// The walk behind find_created_names (see created_names.hpp).
#include "sbx/core/created_names.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#if !defined(_WIN32)
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#if defined(__linux__)
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
  DirResult walk_dir(int dir_fd, const std::string& path, dev_t device, std::size_t depth);
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

Walker::DirResult Walker::walk_dir(int dir_fd, const std::string& path, dev_t device,
                                   std::size_t depth) {
  DirResult result;
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    return result;
  }
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    result.empty = false;
    if (out_of_budget()) break;
    const EntryFacts facts = facts_at(::dirfd(dir), entry->d_name);
    if (!facts.ok) continue;
    const std::string child = path == "/" ? "/" + name : path + "/" + name;
    bool changed = facts.changed >= since_;
    bool empty_dir = false;
    // Never into a symlink (facts_at does not follow), another filesystem (a mount below the
    // root is not what the command wrote through this root) or another root (walked itself).
    if (facts.is_directory && facts.device == device && !is_other_root(child)) {
      if (depth >= limits_.max_depth) {
        truncated_ = true;
      } else {
        const int fd =
            ::openat(::dirfd(dir), entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
          const DirResult inner = walk_dir(fd, child, device, depth + 1);
          changed = changed || inner.changed;
          empty_dir = inner.empty;
        }
      }
    }
    result.changed = result.changed || changed;
    if (changed && !empty_dir && is_watched_name(entry->d_name)) found_.insert(child);
  }
  ::closedir(dir);
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
  walk_dir(fd, root, st.st_dev, 0);
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
