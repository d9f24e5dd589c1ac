// The registry of mount points bwrap creates on the host.
//
// Why: a missing protected name (e.g. <workspace>/.codex) is masked with /dev/null bound
// read-only at that name (translate.cpp, emit_missing), and a mount needs a mount point. The
// workspace is a writable bind of the host directory, so the mount point has to be made on the
// host: a socket inode (make_and_mark says why not a directory or a regular file). Nothing
// inside the sandbox can remove it (a mount point is busy), but after the run it must go, or
// the host keeps a `.codex`; in a directory every user may write, such as /tmp, only once no
// run of any user relies on it (writable_by_every_user says how).
//
// Why locks: runs in the same workspace overlap. Removing a mount point on the host detaches
// the mount in every other namespace (Linux >= 3.18), so removing it while another run still
// relies on the mask would let that run create the protected name. Each run holds a shared
// flock per mount point for its whole duration; whoever finds itself last (an exclusive flock
// succeeds) removes the mount point, and only if it is still the empty inode the run made
// (recorded in a marker file by inode, type and birth time: Identity), never a file or
// directory a person created meanwhile. Those locks live in the run's state directory, which
// another run need not share (one with XDG_RUNTIME_DIR beside one without, another HOME, root
// beside a user): so each run also holds a shared flock on the directory that holds its mount
// points, and a mount point is removed only under an exclusive one (writable_by_every_user says
// more).
//
// Why the run makes the mount point itself, before bwrap: the marker must exist while the run
// does, so that a run killed with SIGKILL (no cleanup) still leaves a record the next run can
// act on. Any later run of the same user sweeps the registry first: a lock no live run holds
// and whose marker is gone or stale is deleted, and a marked mount point that is still the
// recorded empty inode is removed.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sbx/bwrap/host.hpp"
#include "sbx/sdk/private_state.hpp"

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

// What a marker records: the mount point's identity. dev+ino alone could match a file a person
// made later on a reused inode number (after the mount point was removed by someone else), so
// the identity also holds what tells two inodes at one number apart: the birth time (statx(2)
// STX_BTIME, nanoseconds; ext4, xfs, btrfs, tmpfs on Linux >= 6.x report it) and the file type.
// Not the change time: a chown or chmod of the mount point (a `chown -R` of the workspace during
// the run) changes it, and a mount point recorded by its change time was then kept on the host
// for good. The birth time never changes for an inode, and a person's file on a reused inode
// number is born later. On a filesystem without birth times the change time is all there is
// (then a chown or chmod of the mount point during the run keeps it on the host; see README).
struct Identity {
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  unsigned type = 0;  // S_IFMT bits; 0 in records of earlier versions (type not checked)
  bool has_btime = false;
  long long btime_sec = 0;
  long long btime_nsec = 0;
  long long ctime_sec = 0;
  long long ctime_nsec = 0;
  unsigned long long size = 0;  // not recorded: a mount point that is a file is empty
};

// The identity of `name` in the directory `dir` (the name not followed). statx(2), Linux 4.11.
std::optional<Identity> identity_at(int dir, const std::string& name) {
  struct statx stx {};
  if (::statx(dir, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT,
              STATX_BASIC_STATS | STATX_BTIME, &stx) != 0)
    return std::nullopt;
  Identity id;
  id.dev = static_cast<unsigned long long>(makedev(stx.stx_dev_major, stx.stx_dev_minor));
  id.ino = stx.stx_ino;
  id.type = stx.stx_mode & S_IFMT;
  id.has_btime = (stx.stx_mask & STATX_BTIME) != 0;
  if (id.has_btime) {
    id.btime_sec = stx.stx_btime.tv_sec;
    id.btime_nsec = stx.stx_btime.tv_nsec;
  }
  id.ctime_sec = stx.stx_ctime.tv_sec;
  id.ctime_nsec = stx.stx_ctime.tv_nsec;
  id.size = stx.stx_size;
  return id;
}

// Same inode, and the same one that was recorded: by birth time when both sides have one,
// else (a filesystem without birth times, a record of an earlier version) by change time.
bool same_identity(const Identity& recorded, const Identity& now) {
  if (recorded.dev != now.dev || recorded.ino != now.ino) return false;
  if (recorded.type != 0 && recorded.type != now.type) return false;
  if (recorded.has_btime && now.has_btime)
    return recorded.btime_sec == now.btime_sec && recorded.btime_nsec == now.btime_nsec;
  return recorded.ctime_sec == now.ctime_sec && recorded.ctime_nsec == now.ctime_nsec;
}

bool in_directory_every_user_writes(const std::string& path);

// The state directory may lie where a sandboxed command of this user can write (a Landlock run
// whose writable roots include it), so nothing in it is trusted to be what sbx left there:
// markers are created with O_EXCL|O_NOFOLLOW (a planted symlink cannot make sbx write through
// it) and read only if they are regular files of ours. Format:
// "dev ino ctime_sec ctime_nsec type has_btime btime_sec btime_nsec\n" then the mount point's
// path. The first four fields and the path are what earlier versions wrote and read, so an
// earlier sbx of this user sweeping the registry (it shares the state directory) still removes
// an unchanged mount point by its change time instead of dropping the record as stale and
// leaving the socket for good. Except in a directory every user may write: an earlier version
// takes no lock there for other users' runs (writable_by_every_user), so such a record starts
// with "b " and is dropped as unreadable by an earlier sweep, which then leaves the socket.
// Earlier versions' own records (four fields) are matched by change time.
bool write_marker(const std::string& marker, const std::string& path, const Identity& id) {
  ::unlink(marker.c_str());  // a stale record of an earlier inode at this path
  const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const std::string prefix = in_directory_every_user_writes(path) ? "b " : "";
  const std::string text = prefix + std::to_string(id.dev) + ' ' + std::to_string(id.ino) + ' ' +
                           std::to_string(id.ctime_sec) + ' ' + std::to_string(id.ctime_nsec) +
                           ' ' + std::to_string(id.type) + ' ' + (id.has_btime ? "1 " : "0 ") +
                           std::to_string(id.btime_sec) + ' ' + std::to_string(id.btime_nsec) +
                           '\n' + path;
  const ssize_t written = ::write(fd, text.data(), text.size());
  ::close(fd);
  // A short marker is unreadable later: the mount point is then kept, not removed.
  return written == static_cast<ssize_t>(text.size());
}

struct Marker {
  Identity id;
  std::string path;
};

// The identity in the first line of a marker: eight fields (optionally after "b "), or the
// four of earlier versions (type 0: not checked; no birth time: matched by change time).
bool parse_identity(const std::string& text, Identity& id) {
  const char* line = text.rfind("b ", 0) == 0 ? text.c_str() + 2 : text.c_str();
  const std::string first = std::string(line).substr(0, std::string(line).find('\n'));
  int has_btime = 0;
  char rest = 0;
  // The marker is sbx's own file in its private state directory (read_private_file); a line
  // that is not this shape fails the field count and the record is dropped.
  // NOLINTNEXTLINE(cert-err34-c)
  const int fields = std::sscanf(first.c_str(), "%llu %llu %lld %lld %u %d %lld %lld %c", &id.dev,
                                 &id.ino, &id.ctime_sec, &id.ctime_nsec, &id.type, &has_btime,
                                 &id.btime_sec, &id.btime_nsec, &rest);
  if (fields == 4) {
    id.type = 0;
    return true;
  }
  if (fields != 8 || id.type == 0) return false;
  id.has_btime = has_btime == 1;
  return true;
}

// The record in `marker` if it is a regular file owned by this user whose path hashes to the
// marker's own name; nullopt otherwise.
std::optional<Marker> read_marker(const std::string& marker) {
  const int fd = ::open(marker.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string text(8192, '\0');
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid())
    n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (n <= 0) return std::nullopt;
  text.resize(static_cast<std::size_t>(n));
  Marker out;
  if (!parse_identity(text, out.id)) return std::nullopt;
  const std::size_t newline = text.find('\n');
  if (newline == std::string::npos) return std::nullopt;
  out.path = text.substr(newline + 1);
  const std::size_t slash = marker.rfind('/');
  const std::string name = marker.substr(slash + 1);
  if (out.path.empty() || out.path.front() != '/' || name != hash_name(out.path) + ".synthetic")
    return std::nullopt;
  return out;
}

// "/proc/self/fd/N": the object behind an O_PATH descriptor, for calls that take no descriptor
// of one (chmod(2) follows the magic link; fchmod(2) refuses O_PATH descriptors, EBADF, and
// fchmodat(AT_EMPTY_PATH) needs Linux 6.6 and glibc 2.39).
std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Adds the owner's `needed` bits to the directory `dir` (an O_PATH descriptor) when it is this
// user's own directory and lacks some of them; returns the mode it had, to restore. Why: a
// sandboxed command of an unprivileged user can `chmod 555 .` the workspace it owns, or `chmod
// 000` a writable root above it (a writable bind of the host directory: chmod changes the
// host's inode), and sbx, the same user outside, then cannot reach or unlink its mount point
// there: unlink needs write and search permission on the parent (unlink(2), EACCES), and every
// directory on the way needs search permission (path_resolution(7)); root passes by
// CAP_DAC_OVERRIDE (capabilities(7)). The user owns the directory and could chmod it back
// themself (chmod(2): the owner may): sbx does only that, for the walk and the unlink, and never
// on a directory someone else owns.
std::optional<mode_t> open_up_own_directory(int dir, mode_t needed = S_IWUSR | S_IXUSR) {
  struct stat st {};
  if (::fstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return std::nullopt;
  const mode_t mode = st.st_mode & 07777;
  if ((mode & needed) == needed) return std::nullopt;
  if (::chmod(fd_path(dir).c_str(), mode | needed) != 0) return std::nullopt;
  return mode;
}

// Gives `dir` back the mode open_up_own_directory found, unless someone changed its permission
// bits meanwhile (their mode wins: a concurrent chmod by the user is not undone). Only the
// permission bits are compared: chmod(2) by an owner outside the directory's group clears its
// set-group-ID bit, which must not keep the directory writable.
void restore_mode(int dir, mode_t before, mode_t added = S_IWUSR | S_IXUSR) {
  struct stat st {};
  const mode_t opened = (before | added) & 0777;
  if (::fstat(dir, &st) == 0 && (st.st_mode & 0777) == opened)
    (void)::chmod(fd_path(dir).c_str(), before);
}

// The directories a walk to a mount point gave the owner's search bit (open_up_own_directory:
// a sandboxed `chmod 000` of a writable root above the workspace, issue #32 B1), each given
// its mode back when the walk's user is done (restore_mode), deepest first.
class OpenedUp {
 public:
  OpenedUp() = default;
  OpenedUp(const OpenedUp&) = delete;
  OpenedUp& operator=(const OpenedUp&) = delete;
  ~OpenedUp() {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
      restore_mode(it->first, it->second, S_IXUSR);
      ::close(it->first);
    }
  }
  // Gives `dir` (an O_PATH descriptor the caller keeps) the owner's search bit if it is this
  // user's own directory without it; true when it did.
  bool search(int dir) {
    const std::optional<mode_t> before = open_up_own_directory(dir, S_IXUSR);
    if (!before) return false;
    const int held = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
    if (held < 0) {
      restore_mode(dir, *before, S_IXUSR);
      return false;
    }
    dirs_.emplace_back(held, *before);
    return true;
  }

 private:
  std::vector<std::pair<int, mode_t>> dirs_;
};

// The parent directory of the absolute `path`, opened without following any symlink on the
// way (O_PATH, one component at a time), and the last component. Why: the parent lies in a
// writable root, where a sandboxed command (of this run or a concurrent one) can swap a
// directory for a symlink; sbx runs outside every sandbox and must not mkdir or rmdir through
// it. -1 when a component is a symlink or missing (errno says why: ELOOP or ENOTDIR for a
// symlink, ENOENT, or EACCES for a directory on the way that may not be searched). With
// `opened`, a directory of this user on the way that lacks the owner's search bit gets it
// until `opened` ends (OpenedUp).
int open_parent_no_symlinks(const std::string& path, std::string& name,
                            OpenedUp* opened = nullptr) {
  const std::size_t slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == std::string::npos || slash + 1 >= path.size())
    return -1;
  name = path.substr(slash + 1);
  if (name == "." || name == "..") return -1;
  int fd = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::size_t begin = 1;
  while (fd >= 0 && begin < slash + 1) {
    std::size_t end = path.find('/', begin);
    const std::string component = path.substr(begin, end - begin);
    begin = end + 1;
    if (component.empty() || component == ".") continue;
    if (component == "..") {
      ::close(fd);
      return -1;
    }
    const int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int next = ::openat(fd, component.c_str(), flags);
    if (next < 0 && errno == EACCES && opened != nullptr && opened->search(fd))
      next = ::openat(fd, component.c_str(), flags);
    const int error = errno;
    ::close(fd);
    fd = next;
    errno = error;
  }
  return fd;
}

// A mount point as sbx makes it: a socket inode (make_and_mark), or an empty regular file (what
// bwrap makes when sbx could not, and sbx's fallback). Empty, so that a file a person wrote to
// is never taken for one (writing also changes the recorded change time).
bool is_empty_file(const Identity& id) { return id.type == S_IFREG && id.size == 0; }
bool is_file_mount_point(const Identity& id) { return id.type == S_IFSOCK || is_empty_file(id); }

// What a mount point can be: a socket inode or an empty regular file, or an empty directory
// (what sbx versions before the file mask made; rmdir never removes content).
bool could_be_mount_point(const Identity& id) {
  return is_file_mount_point(id) || id.type == S_IFDIR;
}

enum class Removal {
  kRemoved,  // it was the recorded mount point, and is gone
  kStale,    // nothing recorded, or what is there is not the recorded mount point: left alone
  kKept,     // it is the recorded mount point, but could not be removed (errno in `err`)
  kInUse,    // not tried: a run (of any user) still relies on it; the record stays
};

// Removes `path` if it is still the object recorded in `marker`, reached without following a
// symlink: a socket inode or an empty regular file (unlink), or an empty directory (rmdir),
// which is what sbx versions before the file mask made; a killed run of such a version leaves
// a record that the sweep must still be able to act on. rmdir never removes content; for a
// file, the identity (inode, type and birth time) and the size say it is the untouched file that
// was recorded. When the parent is this user's own directory without the owner's write bit (a
// sandboxed `chmod 555 .`), the bit is added for the unlink and the mode restored.
//
// Between the check and the unlink the name could be swapped for another file, but only by
// someone who can write the parent directory, who could just as well unlink that file there:
// nothing is lost that they could not remove themselves.
//
// The directories on the way are reached the same way: one of this user's own that lacks the
// owner's search bit (a sandboxed `chmod 000` of a writable root above the workspace) gets it
// for the walk and its mode back after (OpenedUp). One that still cannot be searched (another
// user's) keeps the record: what is behind it cannot be told, so it is kept and warned of,
// never dropped as stale while the mount point may still be there.
Removal remove_if_marked(const std::string& marker, const std::string& path, int& err) {
  err = 0;
  const std::optional<Marker> record = read_marker(marker);
  if (!record || record->path != path) return Removal::kStale;
  std::string name;
  OpenedUp opened;
  const int parent = open_parent_no_symlinks(path, name, &opened);
  if (parent < 0) {
    if (errno != EACCES) return Removal::kStale;
    err = EACCES;
    return Removal::kKept;
  }
  std::optional<mode_t> restore;
  std::optional<Identity> now = identity_at(parent, name);
  if (!now && errno == EACCES && (restore = open_up_own_directory(parent)))
    now = identity_at(parent, name);
  Removal outcome = Removal::kStale;
  if (now && could_be_mount_point(*now) && same_identity(record->id, *now)) {
    const int flags = now->type == S_IFDIR ? AT_REMOVEDIR : 0;
    int removed = ::unlinkat(parent, name.c_str(), flags);
    if (removed != 0 && errno == EACCES && !restore && (restore = open_up_own_directory(parent)))
      removed = ::unlinkat(parent, name.c_str(), flags);
    err = removed == 0 ? 0 : errno;
    outcome = removed == 0 ? Removal::kRemoved : Removal::kKept;
  }
  if (restore) restore_mode(parent, *restore);
  ::close(parent);
  return outcome;
}

// What occupies `path` when sbx found it taken, if the mask cannot go there: a directory (bwrap
// binds a file only onto a non-directory) or a symlink (bwrap would follow it and mount, or
// create its mount point, where it points; inside the sandbox's root, and sbx-stage2 would then
// find no mount at the planned path, but refusing here says why). "" when the mask can go there.
std::string unusable_mount_point(const std::string& path) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent < 0)
    return "";  // a symlink on the way: bwrap's mount lands elsewhere, and
                // sbx-stage2's check of the planned mounts ends the run
  struct stat st {};
  std::string what;
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) what = "a directory";
    if (S_ISLNK(st.st_mode)) what = "a symlink";
  }
  ::close(parent);
  return what;
}

// Binds a unix socket (never listened on, closed at once) at `name` in the directory `parent`,
// which leaves a socket inode there. bind() creates its name like O_CREAT|O_EXCL: any existing
// name, a symlink included, fails with EADDRINUSE, and nothing is followed at the name. The
// address goes through the descriptor of the parent (/proc/self/fd/N/name) so that no path a
// sandboxed command could swap is resolved. 0 or an errno: ENAMETOOLONG when that address does
// not fit a sockaddr_un (the caller then makes an empty file).
int bind_socket_inode(int parent, const std::string& name) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string via_fd = "/proc/self/fd/" + std::to_string(parent) + "/" + name;
  if (via_fd.size() >= sizeof address.sun_path) return ENAMETOOLONG;
  std::memcpy(address.sun_path, via_fd.c_str(), via_fd.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int err = bound == 0 ? 0 : errno;
  ::close(fd);
  return err == EADDRINUSE ? EEXIST : err;
}

// The fallback: an empty 0444 regular file, made with O_CREAT|O_EXCL|O_NOFOLLOW (never an
// existing object, never through a symlink at the name). 0 or an errno.
int create_empty_file(int parent, const std::string& name) {
  const int fd = ::openat(parent, name.c_str(),
                          O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0444);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

// True when nothing is at `path` (its parent reached without symlinks). false when something
// is, and when the parent cannot be reached that way (bwrap then fails or mounts elsewhere,
// which the pause-point check refuses; nothing is made here).
bool missing_no_follow(const std::string& path) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent < 0) return false;
  struct stat st {};
  const bool missing =
      ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
  ::close(parent);
  return missing;
}

// The lock every run can take, whatever its state directory: a shared flock(2) on the directory
// that holds a mount point, held for the whole run; a mount point is removed only under an
// exclusive one (no run of any registry relies on it). Runs that keep their state in different
// directories rely on each other's mount points (a run that finds the name existing masks it),
// but each registry's locks are its own, so a cleanup could not tell from them whether another
// run still has its mask mounted there; removing the mount point would detach that mask, and the
// other run's command could then create the protected name on the host (red team round 5: a run
// with XDG_RUNTIME_DIR beside one without wrote `.git/config` in the workspace).
// A directory every user may write (S_IWOTH: /tmp, /var/tmp, /dev/shm) is stricter: when its
// lock cannot be had nothing is recorded there, so nothing is removed. Left there for good
// instead (before), a socket `.git` in /tmp made another user's `git init /tmp` fail and kept
// them from ever making `/tmp/.codex`: in a sticky directory only its owner can remove it.
// Another directory whose lock cannot be had (not readable) falls back to the registry's lock.
bool writable_by_every_user(int dir_fd) {
  struct stat st {};
  return ::fstat(dir_fd, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH) != 0;
}

// The directory that holds `path`, as the key of its lock.
std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A readable descriptor of the parent of `path` (reached without symlinks), or -1; with
// `every_users` set when that directory is one every user may write (known even when it cannot
// be opened for reading). flock(2) needs an open file, which an O_PATH descriptor is not
// (EBADF); opening the directory read-only needs only its read bit, which /tmp and /var/tmp
// give every user (mode 1777).
// With `opened`, a directory of this user on the way without the owner's search bit gets it
// until `opened` ends (OpenedUp), as for a removal.
int open_directory_to_lock(const std::string& path, bool& every_users, OpenedUp* opened = nullptr) {
  std::string name;
  every_users = false;
  const int parent = open_parent_no_symlinks(path, name, opened);
  if (parent < 0) return -1;
  every_users = writable_by_every_user(parent);
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int dir = ::openat(parent, ".", flags);
  // The lock needs a readable descriptor; the user's own directory without its read bit (a
  // sandboxed chmod 000) gets it just for the open (the lock holds on the descriptor).
  if (dir < 0 && errno == EACCES && opened != nullptr) {
    // Read, and search to look "." up in it.
    if (const std::optional<mode_t> before = open_up_own_directory(parent, S_IRUSR | S_IXUSR)) {
      dir = ::openat(parent, ".", flags);
      restore_mode(parent, *before, S_IRUSR | S_IXUSR);
    }
  }
  ::close(parent);
  return dir;
}

// Takes `how` (LOCK_SH or LOCK_EX) on `dir` without waiting for long: another run's cleanup
// holds it exclusively only to unlink its mount points, so a few tries get it; a lock held
// longer (a local user holding it on purpose) is given up on, and the caller falls back to what
// needs no lock (a mount point left in place, recorded or not).
bool try_lock(int dir, int how) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::flock(dir, how | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK || how == LOCK_EX) return false;
    ::usleep(20 * 1000);
  }
  return false;
}

// True when the directory that would hold `path` is gone (missing, or a symlink or a file in
// its place on the way), not merely unsearchable: a record there is stale.
bool directory_gone(const std::string& path) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent >= 0) {
    ::close(parent);
    return false;
  }
  return errno == ENOENT || errno == ENOTDIR || errno == ELOOP;
}

// True when the parent of `path` (reached without symlinks) is such a directory.
bool in_directory_every_user_writes(const std::string& path) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent < 0) return false;
  const bool shared = writable_by_every_user(parent);
  ::close(parent);
  return shared;
}

// What is at `path` (its parent reached without symlinks, the name not followed), if anything.
std::optional<struct stat> stat_no_follow(const std::string& path) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent < 0) return std::nullopt;
  struct stat st {};
  const bool found = ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  ::close(parent);
  if (!found) return std::nullopt;
  return st;
}

// The identity of what is at `path` (its parent reached without symlinks), if anything.
std::optional<Identity> identity_no_follow(const std::string& path) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent < 0) return std::nullopt;
  std::optional<Identity> id = identity_at(parent, name);
  ::close(parent);
  return id;
}

}  // namespace

// Makes the mount point of a missing name's mask and records it: a socket inode. Why a socket
// and not an empty regular file or directory: the mount point is visible on the host for the
// whole run. A directory costs a synchronous discard when it is removed on a filesystem mounted
// with `discard` (its data block). A regular file has no data block, but the host's git sees
// it: `git status` lists an untracked `.codex`/`.agents` in the repository for every run, and
// git in a subdirectory cwd of a repository stops at an empty `.git` file ("invalid gitfile
// format"). Git ignores a socket (like a directory that is empty, it is not listed, and at
// `.git` discovery goes on upward); a host program opening it fails at once (ENXIO), where a
// FIFO would block it; it has no data block. Where the socket cannot be bound (an address too
// long for sockaddr_un, no /proc) the mount point is an empty regular file, as bwrap itself
// would make it.
//
// The parent is reached without symlinks; neither bind() nor O_CREAT|O_EXCL follows one at the
// name. The identity recorded is read by name right after (fstatat, no symlink followed): a
// socket's descriptor describes the socket, not its inode. Only someone who can write the
// parent could swap the name in between, and what is recorded is then removed only if it is
// still an unchanged socket or empty file. kExisted (another run's mount point, a person's
// file or directory, or a planted symlink appeared meanwhile): nothing recorded, so it is never
// removed (acquire refuses what bwrap cannot mount on). kNotMade (a symlink on the way, or
// another error): bwrap makes it or reports its own error; not made by sbx, it is never removed,
// and the run warns of it when it ends (release_and_cleanup).
MountRegistry::Made MountRegistry::make_and_mark(const std::string& marker, const std::string& path,
                                                 bool unrecorded) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent < 0) return Made::kNotMade;
  int err = bind_socket_inode(parent, name);
  if (err != 0 && err != EEXIST) err = create_empty_file(parent, name);
  Made made = err == 0 ? Made::kMade : err == EEXIST ? Made::kExisted : Made::kNotMade;
  // Unrecorded (no marker), the mount point stays on the host after the run rather than risk
  // removing something that is not known to be it; in a directory every user may write whose
  // lock this run could not take, it stays on purpose (writable_by_every_user).
  if (made == Made::kMade && !unrecorded) {
    const std::optional<Identity> id = identity_at(parent, name);
    if (id && is_file_mount_point(*id)) write_marker(marker, path, *id);
  }
  ::close(parent);
  return made;
}

// Without a state directory nothing can be recorded, so the mount point stays on the host
// after the run (the plan's note says so). sbx still makes it, the same socket inode (or empty
// file) make_and_mark makes: left to bwrap it would be an empty regular file, and an empty
// `.git` file left for good makes git die in that directory ("invalid gitfile format"). An
// existing name is left alone (bwrap binds over it or refuses it); any other failure leaves the
// making to bwrap, as before.
bool make_unrecorded_mount_point(const std::string& path) {
  std::string name;
  const int parent = open_parent_no_symlinks(path, name);
  if (parent < 0) return false;
  int err = bind_socket_inode(parent, name);
  if (err != 0 && err != EEXIST) err = create_empty_file(parent, name);
  ::close(parent);
  return err == 0;
}

namespace {

// True if `fd` (locked) is still the file named `path`: a cleaner deletes a lock file while
// holding it exclusively, and a run that locked the deleted inode must not rely on it.
bool still_named(int fd, const std::string& path) {
  struct stat held {};
  struct stat named {};
  return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

// Opens the lock file `lock` (created if missing) and refuses anything but a regular file of
// ours (a fifo or device planted there must never be locked through).
Result<int> open_lock(const std::string& lock, bool create) {
  const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (create ? O_CREAT : 0);
  const int fd = ::open(lock.c_str(), flags, 0600);
  if (fd < 0) return Error{"mount registry '" + lock + "': " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    ::close(fd);
    return Error{"mount registry '" + lock + "' is not a regular file of this user; remove it"};
  }
  return fd;
}

// Why a recorded mount point could not be removed, and what the user can do: for the warning.
std::string why_kept(const std::string& path, int err) {
  return "could not remove the mount point '" + path + "' sbx made for a run (" +
         std::strerror(err) +
         "); it is kept on record and every later bwrap run tries again; or remove it yourself "
         "(rm, after making its directory writable)";
}

// The registry entry behind `lock` ("<dir>/<hash>.lock"), swept when no live run holds it.
// Returns the mount point it removed, or ""; a mount point it could not remove goes to `kept`
// with the reason, and its entry stays for the next sweep.
std::string sweep_one(const std::string& lock, std::vector<std::string>* kept) {
  Result<int> fd = open_lock(lock, /*create=*/false);
  if (!fd.ok()) return {};
  std::string removed;
  // A live run holds a shared lock for its whole duration: leave its entry alone.
  if (::flock(*fd, LOCK_EX | LOCK_NB) == 0 && still_named(*fd, lock)) {
    const std::string marker = lock.substr(0, lock.size() - 5) + ".synthetic";
    const std::optional<Marker> record = read_marker(marker);
    int err = 0;
    // Only when no run of any registry holds the directory's lock (writable_by_every_user); one
    // that cannot be opened to lock counts as relied on.
    bool every_users = false;
    OpenedUp opened;
    const int dir = record ? open_directory_to_lock(record->path, every_users, &opened) : -1;
    const bool other_runs =
        dir < 0 ? record && !directory_gone(record->path) : !try_lock(dir, LOCK_EX);
    // A record that no longer describes what is there (something else, nothing, or no
    // directory to hold it) is stale whoever holds the directory; one that cannot be told (a
    // directory on the way that may not be searched) is not.
    const std::optional<Identity> now = record ? identity_no_follow(record->path) : std::nullopt;
    const bool still_there =
        now ? could_be_mount_point(*now) && same_identity(record->id, *now)
            : record && !missing_no_follow(record->path) && !directory_gone(record->path);
    const Removal outcome = !record                     ? Removal::kStale
                            : other_runs && still_there ? Removal::kInUse
                            : other_runs                ? Removal::kStale
                                         : remove_if_marked(marker, record->path, err);
    if (dir >= 0) ::close(dir);
    if (outcome == Removal::kRemoved) removed = record->path;
    if (outcome == Removal::kKept && kept) kept->push_back(why_kept(record->path, err));
    if (outcome == Removal::kRemoved || outcome == Removal::kStale) {
      // Either removed now, or the record no longer describes what is there: stale.
      ::unlink(marker.c_str());
      ::unlink(lock.c_str());
    }
  }
  ::close(*fd);
  return removed;
}

}  // namespace

// sbx's one choice of a per-user state directory (private_state::state_dir: a runtime
// directory, else ~/.cache/sbx, never /tmp).
Result<std::string> ensure_state_dir(const StateDirSources& sources) {
  return private_state::state_dir(sources, "bwrap");
}

StateDirSources state_dir_sources() { return private_state::current_sources(); }

Result<std::string> ensure_state_dir() { return ensure_state_dir(state_dir_sources()); }

std::vector<std::string> sweep_stale_entries(const std::string& state_dir,
                                             std::vector<std::string>* kept) {
  std::vector<std::string> locks;
  if (DIR* dir = ::opendir(state_dir.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      // "<16 hex digits>.lock": only names the registry makes.
      if (name.size() == 21 && name.compare(16, 5, ".lock") == 0 &&
          name.find_first_not_of("0123456789abcdef") == 16)
        locks.push_back(state_dir + "/" + name);
    }
    ::closedir(dir);
  }
  std::vector<std::string> removed;
  for (const std::string& lock : locks) {
    std::string path = sweep_one(lock, kept);
    if (!path.empty()) removed.push_back(std::move(path));
  }
  return removed;
}

MountRegistry::~MountRegistry() {
  for (Entry& e : entries_) {
    if (e.lock_fd >= 0) ::close(e.lock_fd);
  }
  for (auto& [dir, lock] : directory_locks_) {
    if (lock.fd >= 0) ::close(lock.fd);
  }
}

// A shared lock on `lock` that is still the file of that name (see still_named); retried when a
// cleaner deleted the file between our open and our lock.
Result<int> MountRegistry::lock_shared(const std::string& lock) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    Result<int> fd = open_lock(lock, /*create=*/true);
    if (!fd.ok()) return fd;
    // Blocks while another run is removing this mount point, so we never start half-way.
    if (::flock(*fd, LOCK_SH) != 0) {
      const int err = errno;
      ::close(*fd);
      return Error{"mount registry lock '" + lock + "': " + std::strerror(err)};
    }
    if (still_named(*fd, lock)) return fd;
    ::close(*fd);
  }
  return Error{"mount registry lock '" + lock + "' keeps being replaced; giving up"};
}

Status MountRegistry::acquire(const std::string& state_dir,
                              const std::vector<std::string>& synthetic,
                              const std::vector<std::string>& existing) {
  std::vector<std::pair<std::string, bool>> all;
  all.reserve(synthetic.size() + existing.size());
  for (const std::string& path : synthetic) all.emplace_back(path, true);
  for (const std::string& path : existing) all.emplace_back(path, false);
  for (const auto& [path, planned] : all) {
    const std::string base = state_dir + "/" + hash_name(path);
    Result<int> fd = lock_shared(base + ".lock");
    if (!fd.ok()) return fd.failure();
    // Made here, under the lock and before bwrap, so the record exists even if sbx is killed.
    // A name the plan found existing is made too if it is gone now: another run's mount point,
    // removed by that run (last out) after this run's plan saw it and before this run took its
    // lock. Left missing, bwrap would make an empty file there that nothing records, so nothing
    // removes it: an empty `.git` file left in /tmp makes git die in every directory below it.
    // Once the lock is held nobody removes it (that takes the lock exclusively). The plan masks
    // such a name (a socket) with /dev/null, which the socket made here takes; a plan that
    // bound a regular file or a directory there fails at exec, its source being gone.
    // The directory's lock, which runs of every registry take, comes first
    // (writable_by_every_user): a run that relies on a mount point holds it before it looks at the
    // name. In a directory every user may write nothing is recorded without it, so nothing is
    // removed there.
    const DirectoryLock& directory = hold_directory_lock(path);
    const bool shared = directory.every_users && directory.fd < 0;
    const bool make = planned || missing_no_follow(path);
    const Made made = make ? make_and_mark(base + ".synthetic", path, shared) : Made::kExisted;
    std::optional<Found> found;
    if (made == Made::kExisted && !shared) {
      if (const std::optional<Identity> id = identity_no_follow(path))
        found = Found{id->dev,       id->ino,        id->type,      id->has_btime,
                      id->btime_sec, id->btime_nsec, id->ctime_sec, id->ctime_nsec};
    }
    // In a directory every user may write whose lock this run could not take nothing is
    // recorded, so nothing is removed: neither the mount point nor an empty file bwrap made
    // there (and nothing is warned of: mark_at_end is false).
    entries_.push_back(Entry{path, base + ".synthetic", base + ".lock", *fd,
                             made == Made::kNotMade && !shared, found});
    // The plan found nothing at a planned mount point, and something appeared since: a
    // directory (a person's, or the mount point of an older sbx's run) cannot take the file
    // mask, and bwrap would follow a symlink. Fail closed here with a precise message rather
    // than leave it to bwrap (which refuses a directory too, with exit 125 from sbx). The
    // caller releases what was taken (release_and_cleanup).
    // What this run relies on may be another registry's mount point, which only the
    // directory's lock keeps that registry's run from removing (the removal would detach this
    // run's mask). Without that lock (a process holds the directory locked: another run's
    // sandboxed command can) the run does not start.
    const std::optional<Identity> existing_id =
        made == Made::kExisted && directory.fd < 0 ? identity_no_follow(path) : std::nullopt;
    if (existing_id && could_be_mount_point(*existing_id))
      return Error{"sbx cannot lock '" + parent_of(path) +
                   "' (flock(2)), which keeps other runs from removing the mount point at '" +
                   path +
                   "' that this run's mask relies on: a process holds that directory locked, "
                   "or it cannot be read; run again once that has ended"};
    if (planned && made == Made::kExisted) {
      const std::string what = unusable_mount_point(path);
      if (!what.empty())
        return Error{"'" + path + "' was missing when the run was planned and is now " + what +
                     " (made meanwhile by another process, or an older sbx's mount point); "
                     "its mask cannot be mounted there: run again"};
    }
  }
  return {};
}

// An empty regular file of this user at `path` (no symlink followed).
static bool own_empty_file(const std::string& path) {
  const std::optional<struct stat> now = stat_no_follow(path);
  return now && S_ISREG(now->st_mode) && now->st_size == 0 && now->st_uid == ::geteuid();
}

// The warning for an empty file at a mount point's name that sbx did not make: bwrap may have
// made it (then it stays, and an empty `.git` file makes git die in every directory below it),
// or the person did. sbx cannot tell which, so it removes nothing and says so.
static std::string empty_file_may_be_bwraps(const std::string& path) {
  return "an empty file bwrap may have made remains at '" + path +
         "' (sbx did not make it, so it cannot tell it from a file of yours and leaves it); "
         "remove it if it is not yours";
}

// The run relied on what was at the path (`found`: another run's mount point, or a person's
// file), and at its end an empty file of this user is there instead. Either what was found was
// removed before this run's bwrap mounted (by a run of another user, whose cleanup this
// registry's locks cannot hold off, since each user has their own) and bwrap made the file to
// mount its mask on; or the person saved their own file empty during the run (`: > f.new && mv
// f.new f`, or rm and touch). Nothing tells the two apart, so it is never removed: the caller
// warns instead (empty_file_may_be_bwraps).
bool MountRegistry::replaced_by_own_empty_file(const Entry& e) {
  if (!e.found || !own_empty_file(e.path)) return false;
  const std::optional<Identity> id = identity_no_follow(e.path);
  const Found& f = *e.found;
  const Identity was{f.dev,       f.ino,        f.type, f.has_btime, f.btime_sec, f.btime_nsec,
                     f.ctime_sec, f.ctime_nsec, 0};
  return id && !same_identity(was, *id);
}

// A shared lock on the directory that holds `path` (writable_by_every_user), taken once per
// directory and held until release_and_cleanup; its fd is -1 when it cannot be had.
const MountRegistry::DirectoryLock& MountRegistry::hold_directory_lock(const std::string& path) {
  const std::string dir = parent_of(path);
  const auto held = directory_locks_.find(dir);
  if (held != directory_locks_.end()) return held->second;
  DirectoryLock lock;
  lock.path = path;
  lock.fd = open_directory_to_lock(path, lock.every_users);
  if (lock.fd >= 0 && !try_lock(lock.fd, LOCK_SH)) {
    ::close(lock.fd);
    lock.fd = -1;
  }
  return directory_locks_[dir] = lock;
}

std::vector<std::string> MountRegistry::release_and_cleanup() {
  std::vector<std::string> removed;
  // Every directory holding a mount point this run made or relied on: exclusively now if no run
  // of any registry holds it any more; else the mount points there stay recorded for a later
  // sweep. A directory whose shared lock this run could not take counts as relied on: a run
  // of another registry may rely on what is there without this run knowing (red team round 6:
  // a sandboxed command held the workspace locked while a run started, then that run's cleanup
  // detached the masks of a run that came later).
  // One that could not be had at the start is taken now, exclusively, if the directory is
  // there (and nothing of this run is, if it is not).
  std::map<std::string, bool> nobody_else;
  for (auto& [dir, lock] : directory_locks_) {
    if (lock.fd >= 0) {
      ::flock(lock.fd, LOCK_UN);
    } else {
      bool every_users = false;
      OpenedUp opened;
      lock.fd = open_directory_to_lock(lock.path, every_users, &opened);
      if (lock.fd < 0) {
        nobody_else[dir] = directory_gone(lock.path);
        continue;
      }
    }
    nobody_else[dir] = try_lock(lock.fd, LOCK_EX);
  }
  for (Entry& e : entries_) {
    if (e.lock_fd < 0) continue;
    // sbx removes only an inode it made and recorded. An empty file it did not make (bwrap made
    // the mount point because sbx could not, see make_and_mark; or what the run relied on was
    // replaced) may as well be the person's own, saved empty during the run: it stays, and the
    // person is told.
    if ((e.mark_at_end && own_empty_file(e.path)) || replaced_by_own_empty_file(e))
      kept_.push_back(empty_file_may_be_bwraps(e.path));
    ::flock(e.lock_fd, LOCK_UN);
    // Last out (no other run holds it): remove the mount point if it is still the recorded
    // empty one, then the entry itself. A run waiting for this lock re-checks the name.
    // One that is still the recorded mount point but cannot be removed keeps its entry: the
    // next run's sweep tries again.
    const auto directory = nobody_else.find(parent_of(e.path));
    const bool in_use = directory != nobody_else.end() && !directory->second;
    if (::flock(e.lock_fd, LOCK_EX | LOCK_NB) == 0 && still_named(e.lock_fd, e.lock)) {
      int err = 0;
      const Removal outcome = in_use ? Removal::kInUse : remove_if_marked(e.marker, e.path, err);
      if (outcome == Removal::kRemoved) removed.push_back(e.path);
      if (outcome == Removal::kKept) kept_.push_back(why_kept(e.path, err));
      if (outcome == Removal::kRemoved || outcome == Removal::kStale) {
        ::unlink(e.marker.c_str());
        ::unlink(e.lock.c_str());
      }
    }
    ::close(e.lock_fd);
    e.lock_fd = -1;
  }
  for (auto& [dir, lock] : directory_locks_) {
    if (lock.fd >= 0) ::close(lock.fd);
    lock.fd = -1;
  }
  return removed;
}

}  // namespace sbx::bwrap
