// The registry of mount points bwrap creates on the host.
//
// Why: a missing protected name (e.g. <workspace>/.codex) is masked with a read-only tmpfs, and
// a mount needs a mount point. The workspace is a writable bind of the host directory, so bwrap
// has to mkdir the mount point on the host. Nothing inside the sandbox can remove it (a mount
// point is busy), but after the run it must go, or the host keeps an empty `.codex`.
//
// Why locks: runs in the same workspace overlap. Removing a mount point on the host detaches
// the mount in every other namespace (Linux >= 3.18), so removing it while another run still
// relies on the mask would let that run create the protected name. Each run holds a shared
// flock per mount point for its whole duration; whoever finds itself last (an exclusive flock
// succeeds) removes the mount point, and only if it is still the empty inode bwrap made
// (recorded in a marker file), never a directory a person created meanwhile.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "sbx/bwrap/host.hpp"

namespace sbx::bwrap {
namespace {

std::string hash_name(const std::string& path) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (char c : path) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, h);
  return buf;
}

Status verify_private_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    return Error{"state directory '" + dir + "': " + std::strerror(errno)};
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return Error{"state directory '" + dir +
                 "' is not a private directory owned by this user (mode 0700); remove it"};
  return {};
}

// The state directory may lie where a sandboxed command of this user can write (the /tmp
// fallback under a Landlock run with /tmp writable), so nothing in it is trusted to be what sbx
// left there: markers are created with O_EXCL|O_NOFOLLOW (a planted symlink cannot make sbx
// write through it) and read only if they are regular files of ours.
void write_marker(const std::string& marker, const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = std::to_string(st.st_dev) + ' ' + std::to_string(st.st_ino) + '\n';
  const ssize_t written = ::write(fd, text.data(), text.size());
  (void)written;  // a short marker is unreadable later: the mount point is then kept, not removed
  ::close(fd);
}

// "dev ino" from a marker that is a regular file owned by this user; false otherwise.
bool read_marker(const std::string& marker, unsigned long long& dev, unsigned long long& ino) {
  const int fd = ::open(marker.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  char buf[64] = {0};
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
    n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  return n > 0 && std::sscanf(buf, "%llu %llu", &dev, &ino) == 2;
}

// Removes `path` if it is still the empty directory or empty file recorded in `marker`.
bool remove_if_marked(const std::string& marker, const std::string& path) {
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  if (!read_marker(marker, dev, ino)) return false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  if (static_cast<unsigned long long>(st.st_dev) != dev ||
      static_cast<unsigned long long>(st.st_ino) != ino)
    return false;
  // rmdir only removes an empty directory; a file must still be empty.
  if (S_ISDIR(st.st_mode)) return ::rmdir(path.c_str()) == 0;
  if (S_ISREG(st.st_mode) && st.st_size == 0) return ::unlink(path.c_str()) == 0;
  return false;
}

// root: /run (root-owned, not writable by others) holds state no sandbox is given write access
// to by any shipped preset, unlike /tmp. Only a root-owned, non-group/world-writable /run is used.
bool run_is_private_to_root() {
  struct stat st {};
  return ::geteuid() == 0 && ::lstat("/run", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
         (st.st_mode & 022) == 0;
}

}  // namespace

Result<std::string> ensure_state_dir() {
  const std::string uid = std::to_string(::geteuid());
  std::string dir;
  struct stat st {};
  const std::string run_user = "/run/user/" + uid;
  // Outside /tmp where there is such a place: /tmp is writable in the workspace-write preset,
  // so a Landlock-sandboxed command of the same user could tamper with state kept there (its use
  // is made robust to that, see write_marker; the probe cache in probe.cpp likewise).
  if (::lstat(run_user.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid())
    dir = run_user + "/sbx-bwrap";
  else if (run_is_private_to_root())
    dir = "/run/sbx-bwrap";
  else
    dir = "/tmp/sbx-bwrap-" + uid;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error{"cannot create state directory '" + dir + "': " + std::strerror(errno)};
  Status ok = verify_private_dir(dir);
  if (!ok.ok()) return Error{ok.error()};
  return dir;
}

MountRegistry::~MountRegistry() {
  for (Entry& e : entries_) {
    if (e.lock_fd >= 0) ::close(e.lock_fd);
  }
}

Status MountRegistry::acquire(const std::string& state_dir,
                              const std::vector<std::string>& synthetic,
                              const std::vector<std::string>& existing) {
  std::vector<std::pair<std::string, bool>> all;
  for (const std::string& path : synthetic) all.emplace_back(path, true);
  for (const std::string& path : existing) all.emplace_back(path, false);
  for (const auto& [path, made_by_us] : all) {
    const std::string base = state_dir + "/" + hash_name(path);
    const std::string lock = base + ".lock";
    const int fd =
        ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) return Error{"mount registry '" + lock + "': " + std::strerror(errno)};
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      // Something else was put there (a fifo, a device): never lock through it.
      ::close(fd);
      return Error{"mount registry '" + lock + "' is not a regular file; remove it"};
    }
    entries_.push_back(Entry{path, base + ".synthetic", fd, made_by_us});
    // Blocks while another run is removing this mount point, so we never start half-way.
    if (::flock(fd, LOCK_SH) != 0)
      return Error{"mount registry lock '" + lock + "': " + std::strerror(errno)};
  }
  return {};
}

std::vector<std::string> MountRegistry::release_and_cleanup() {
  std::vector<std::string> removed;
  for (Entry& e : entries_) {
    if (e.lock_fd < 0) continue;
    // Only a run that planned a mount point there (the path was missing when it started)
    // records the inode bwrap made; a run that found the path existing just keeps it alive.
    if (e.made_by_us && ::access(e.marker.c_str(), F_OK) != 0) write_marker(e.marker, e.path);
    ::flock(e.lock_fd, LOCK_UN);
    if (::flock(e.lock_fd, LOCK_EX | LOCK_NB) == 0) {
      if (remove_if_marked(e.marker, e.path)) removed.push_back(e.path);
      ::unlink(e.marker.c_str());
    }
    ::close(e.lock_fd);
    e.lock_fd = -1;
  }
  return removed;
}

}  // namespace sbx::bwrap
