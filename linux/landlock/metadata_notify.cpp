// See metadata_notify.hpp for what is emulated and why the decision is taken on the opened
// object. Every path out of a handler that is not the emulated call's own result is EPERM (or
// the errno the kernel would give for a malformed call): unknown means refused.
#include "metadata_notify.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/fsverity.h>
#include <linux/seccomp.h>
#include <seccomp.h>  // SCMP_SYS: the native numbers, header only (nothing of libseccomp is linked)
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <utility>

#include "metadata_filter.hpp"
#include "sbx/sdk/unique_fd.hpp"
#include "seccomp_programs.hpp"

namespace sbx::stage2 {
namespace {

constexpr unsigned long kTiocgptpeer = TIOCGPTPEER;
constexpr unsigned kPtmxMajor = 5;  // TTYAUX_MAJOR: /dev/ptmx and /dev/pts/ptmx are 5:2
constexpr unsigned kPtmxMinor = 2;
constexpr std::size_t kMaxPath = 4096;         // PATH_MAX, NUL included
constexpr std::size_t kMaxXattrName = 256;     // XATTR_NAME_MAX + NUL
constexpr std::size_t kMaxXattrValue = 65536;  // XATTR_SIZE_MAX

std::string errno_text(int err) { return std::strerror(err); }

// ---- the child side ----

// Async-signal-safe: 0 or errno.
int send_fd(int socket, int fd) noexcept {
  char byte = 'L';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n = 0;
  do n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n == 1) return 0;
  return n < 0 ? errno : EIO;
}

// ---- reading the caller ----

// The caller's /proc/TID directory, pinned to the task that sent notification `id`: opened
// first, then the id is checked to be still valid, so the TID was not reused meanwhile.
bool id_valid(int listener, std::uint64_t id) {
  std::uint64_t copy = id;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &copy) == 0;
}

struct Caller {
  UniqueFd proc;  // /proc/TID
  UniqueFd mem;   // /proc/TID/mem
  pid_t tid = 0;
};

// Copies `size` bytes at `address` of the caller; false if unreadable.
bool read_exact(const Caller& caller, std::uint64_t address, void* out, std::size_t size) {
  if (address == 0) return false;
  auto* dest = static_cast<char*>(out);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(caller.mem.get(), dest + done, size - done, static_cast<off_t>(address + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// A NUL-terminated string of at most `max` bytes (NUL included) at `address`, read page by
// page so that a string ending just before an unmapped page is still read. Errno on failure:
// EFAULT unreadable, `too_long` without a NUL within `max`.
Result<std::string> read_string(const Caller& caller, std::uint64_t address, std::size_t max,
                                int too_long, int* err) {
  std::string out;
  if (address == 0) {
    *err = EFAULT;
    return Error{"null"};
  }
  constexpr std::uint64_t kPage = 4096;
  std::uint64_t at = address;
  while (out.size() < max) {
    const std::size_t chunk =
        static_cast<std::size_t>(std::min<std::uint64_t>(kPage - at % kPage, max - out.size()));
    char buffer[kPage];
    ssize_t n = 0;
    do n = ::pread(caller.mem.get(), buffer, chunk, static_cast<off_t>(at));
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
      *err = EFAULT;
      return Error{"unreadable"};
    }
    const void* nul = std::memchr(buffer, '\0', static_cast<std::size_t>(n));
    if (nul != nullptr) {
      out.append(buffer, static_cast<std::size_t>(static_cast<const char*>(nul) - buffer));
      return out;
    }
    out.append(buffer, static_cast<std::size_t>(n));
    at += static_cast<std::uint64_t>(n);
  }
  *err = too_long;
  return Error{"too long"};
}

// fsuid and fsgid of the caller (the 4th field of the Uid:/Gid: lines of /proc/TID/status).
bool caller_fs_ids(const Caller& caller, uid_t* uid, gid_t* gid) {
  UniqueFd status(::openat(caller.proc.get(), "status", O_RDONLY | O_CLOEXEC));
  if (!status.valid()) return false;
  char text[8192];
  const ssize_t n = ::read(status.get(), text, sizeof text - 1);
  if (n <= 0) return false;
  text[n] = '\0';
  const char* u = std::strstr(text, "\nUid:");
  const char* g = std::strstr(text, "\nGid:");
  unsigned long r = 0, e = 0, s = 0, fu = 0, fg = 0;
  if (u == nullptr || g == nullptr) return false;
  // The kernel writes these decimal ids (proc(5)): sscanf's silent overflow cannot happen.
  // NOLINTBEGIN(cert-err34-c)
  if (std::sscanf(u, "\nUid: %lu %lu %lu %lu", &r, &e, &s, &fu) != 4) return false;
  if (std::sscanf(g, "\nGid: %lu %lu %lu %lu", &r, &e, &s, &fg) != 4) return false;
  // NOLINTEND(cert-err34-c)
  *uid = static_cast<uid_t>(fu);
  *gid = static_cast<gid_t>(fg);
  return true;
}

// ---- one call, decoded ----

enum class Op { kChmod, kChown, kTimes, kSetXattr, kRemoveXattr };
enum class TimeForm { kUtimbuf, kTimeval, kTimespec };

struct Call {
  Op op = Op::kChmod;
  bool fd_only = false;       // the object is the caller's descriptor `base` (fchmod, ...)
  long long base = AT_FDCWD;  // AT_FDCWD or a descriptor number
  std::uint64_t path = 0;     // address of the path (0 with fd_only, or utimensat's NULL)
  bool follow = true;
  bool empty_path = false;  // AT_EMPTY_PATH: an empty path names `base`
  std::uint64_t mode = 0;
  std::uint64_t uid = 0, gid = 0;
  TimeForm time_form = TimeForm::kTimespec;
  std::uint64_t times = 0;  // address, 0 = now
  std::uint64_t name = 0, value = 0, size = 0, xattr_flags = 0;
};

using Args = decltype(seccomp_data::args);
constexpr int kNotMine = -1;  // a decoder's answer for a call of another family
constexpr std::uint64_t kNofollowEmpty = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH;

// The *at flags of `call`; 0, or EINVAL for flags the call does not take.
int at_flags(std::uint64_t flags, Call& call) {
  if ((flags & ~kNofollowEmpty) != 0) return EINVAL;
  call.follow = (flags & AT_SYMLINK_NOFOLLOW) == 0;
  call.empty_path = (flags & AT_EMPTY_PATH) != 0;
  return 0;
}

// dirfd/fd arguments are ints to the kernel, whatever the upper bits hold.
long long fd_arg(std::uint64_t value) { return static_cast<int>(value); }

int decode_mode(int nr, const Args& a, Call& call) {
  call = {Op::kChmod};
  if (nr == SCMP_SYS(chmod)) {
    call.path = a[0], call.mode = a[1];
  } else if (nr == SCMP_SYS(fchmod)) {
    call.fd_only = true, call.base = fd_arg(a[0]), call.mode = a[1];
  } else if (nr == SCMP_SYS(fchmodat) || nr == kNrFchmodat2) {
    call.base = fd_arg(a[0]), call.path = a[1], call.mode = a[2];
    if (nr == kNrFchmodat2) return at_flags(a[3], call);
  } else {
    return kNotMine;
  }
  return 0;
}

int decode_owner(int nr, const Args& a, Call& call) {
  call = {Op::kChown};
  if (nr == SCMP_SYS(chown) || nr == SCMP_SYS(lchown)) {
    call.path = a[0], call.uid = a[1], call.gid = a[2];
    call.follow = nr == SCMP_SYS(chown);
  } else if (nr == SCMP_SYS(fchown)) {
    call.fd_only = true, call.base = fd_arg(a[0]), call.uid = a[1], call.gid = a[2];
  } else if (nr == SCMP_SYS(fchownat)) {
    call.base = fd_arg(a[0]), call.path = a[1], call.uid = a[2], call.gid = a[3];
    return at_flags(a[4], call);
  } else {
    return kNotMine;
  }
  return 0;
}

int decode_times(int nr, const Args& a, Call& call) {
  call = {Op::kTimes};
  if (nr == SCMP_SYS(utime) || nr == SCMP_SYS(utimes)) {
    call.path = a[0], call.times = a[1];
    call.time_form = nr == SCMP_SYS(utime) ? TimeForm::kUtimbuf : TimeForm::kTimeval;
    return 0;
  }
  if (nr != SCMP_SYS(futimesat) && nr != SCMP_SYS(utimensat)) return kNotMine;
  call.base = fd_arg(a[0]), call.path = a[1], call.times = a[2];
  call.time_form = nr == SCMP_SYS(futimesat) ? TimeForm::kTimeval : TimeForm::kTimespec;
  if (nr == SCMP_SYS(utimensat)) {
    const int err = at_flags(a[3], call);
    if (err != 0) return err;
  }
  // A NULL path changes the times of the descriptor itself (futimens); no NOFOLLOW then.
  if (call.path == 0) {
    if (!call.follow) return EINVAL;
    call.fd_only = true;
  }
  return 0;
}

int decode_xattr(int nr, const Args& a, Call& call) {
  const bool set =
      nr == SCMP_SYS(setxattr) || nr == SCMP_SYS(lsetxattr) || nr == SCMP_SYS(fsetxattr);
  const bool remove =
      nr == SCMP_SYS(removexattr) || nr == SCMP_SYS(lremovexattr) || nr == SCMP_SYS(fremovexattr);
  if (!set && !remove) return kNotMine;
  call = {set ? Op::kSetXattr : Op::kRemoveXattr};
  if (nr == SCMP_SYS(fsetxattr) || nr == SCMP_SYS(fremovexattr)) {
    call.fd_only = true, call.base = fd_arg(a[0]);
  } else {
    call.path = a[0];
    call.follow = nr == SCMP_SYS(setxattr) || nr == SCMP_SYS(removexattr);
  }
  call.name = a[1];
  if (set) call.value = a[2], call.size = a[3], call.xattr_flags = a[4];
  return 0;
}

// Decodes notification `d` into `call`; 0, or the errno for a malformed call (EPERM for a call
// this emulator does not know: refused).
int decode(const seccomp_data& d, Call& call) {
  for (int (*decoder)(int, const Args&, Call&) :
       {decode_mode, decode_owner, decode_times, decode_xattr}) {
    const int err = decoder(d.nr, d.args, call);
    if (err != kNotMine) return err;
  }
  return EPERM;
}

// ---- resolving the object ----

bool is_o_path_descriptor(const Caller& caller, long long fd) {
  UniqueFd info(
      ::openat(caller.proc.get(), ("fdinfo/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC));
  if (!info.valid()) return true;  // unknown: treated as unusable
  char text[512];
  const ssize_t n = ::read(info.get(), text, sizeof text - 1);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* flags = std::strstr(text, "flags:");
  unsigned long value = 0;
  // The kernel writes the octal flags (proc(5), fdinfo): sscanf's silent overflow cannot happen.
  // NOLINTNEXTLINE(cert-err34-c)
  if (flags == nullptr || std::sscanf(flags, "flags: %lo", &value) != 1) return true;
  return (value & O_PATH) != 0;
}

// The caller's descriptor `fd` (the object it names), or the caller's cwd for AT_FDCWD.
Result<UniqueFd> open_base(const Caller& caller, long long fd, int* err) {
  if (fd == AT_FDCWD) {
    UniqueFd cwd(::openat(caller.proc.get(), "cwd", O_PATH | O_CLOEXEC));
    if (!cwd.valid()) {
      *err = EPERM;
      return Error{"cwd"};
    }
    return cwd;
  }
  if (fd < 0) {
    *err = EBADF;
    return Error{"bad fd"};
  }
  UniqueFd base(
      ::openat(caller.proc.get(), ("fd/" + std::to_string(fd)).c_str(), O_PATH | O_CLOEXEC));
  if (!base.valid()) {
    *err = errno == ENOENT ? EBADF : EPERM;
    return Error{"fd"};
  }
  return base;
}

// The caller's own /proc/self and /proc/thread-self, which would otherwise name the
// supervisor (glibc's fchmodat(AT_SYMLINK_NOFOLLOW) goes through /proc/self/fd/N).
std::string caller_view(const std::string& path, pid_t tid) {
  const std::string self = "/proc/" + std::to_string(tid);
  for (const auto& [prefix, replacement] :
       {std::pair<std::string, std::string>{"/proc/thread-self",
                                            self + "/task/" + std::to_string(tid)},
        std::pair<std::string, std::string>{"/proc/self", self}}) {
    if (path.compare(0, prefix.size(), prefix) == 0 &&
        (path.size() == prefix.size() || path[prefix.size()] == '/'))
      return replacement + path.substr(prefix.size());
  }
  return path;
}

// Opens the object the call names, O_PATH, as the caller would reach it.
Result<UniqueFd> open_object(const Caller& caller, const Call& call, int* err) {
  if (call.fd_only) {
    // The *at-less descriptor calls need a real descriptor, as in the kernel.
    if (call.base < 0 || is_o_path_descriptor(caller, call.base)) {
      *err = EBADF;
      return Error{"fd"};
    }
    return open_base(caller, call.base, err);
  }
  Result<std::string> path = read_string(caller, call.path, kMaxPath, ENAMETOOLONG, err);
  if (!path.ok()) return path.failure();
  if (path->empty()) {
    if (!call.empty_path) {
      *err = ENOENT;
      return Error{"empty path"};
    }
    return open_base(caller, call.base, err);
  }
  const int flags = O_PATH | O_CLOEXEC | (call.follow ? 0 : O_NOFOLLOW);
  if ((*path)[0] == '/') {
    UniqueFd object(::openat(AT_FDCWD, caller_view(*path, caller.tid).c_str(), flags));
    if (!object.valid()) *err = errno;
    if (!object.valid()) return Error{"open"};
    return object;
  }
  Result<UniqueFd> base = open_base(caller, call.base, err);
  if (!base.ok()) return base.failure();
  UniqueFd object(::openat(base->get(), path->c_str(), flags));
  if (!object.valid()) {
    *err = errno;
    return Error{"open"};
  }
  return object;
}

std::string fd_path(int fd) {
  char buffer[kMaxPath + 64];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer);
  if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buffer) return {};
  return std::string(buffer, static_cast<std::size_t>(n));
}

// ---- performing the call on the opened object ----

int result_of(int rc) { return rc == 0 ? 0 : errno; }

int do_chmod(const Call& call, int object, const struct stat& st) {
  // Defence in depth: the main filter refuses these too. A set-user-ID or set-group-ID file
  // made here would run with its owner's rights outside the sandbox.
  if ((call.mode & (S_ISUID | S_ISGID)) != 0) return EPERM;
  if (S_ISLNK(st.st_mode)) return EOPNOTSUPP;  // as fchmodat2(AT_SYMLINK_NOFOLLOW)
  const std::string self = "/proc/self/fd/" + std::to_string(object);
  return result_of(::fchmodat(AT_FDCWD, self.c_str(), static_cast<mode_t>(call.mode & 07777), 0));
}

int do_chown(const Call& call, int object) {
  return result_of(::fchownat(object, "", static_cast<uid_t>(call.uid),
                              static_cast<gid_t>(call.gid), AT_EMPTY_PATH));
}

// The caller's times in utimensat's form; nullopt with *err set when unreadable or invalid.
std::optional<std::array<timespec, 2>> read_times(const Caller& caller, const Call& call,
                                                  int* err) {
  std::array<timespec, 2> ts{};
  bool ok = false;
  if (call.time_form == TimeForm::kUtimbuf) {
    utimbuf b{};
    ok = read_exact(caller, call.times, &b, sizeof b);
    ts = {timespec{b.actime, 0}, timespec{b.modtime, 0}};
  } else if (call.time_form == TimeForm::kTimeval) {
    timeval tv[2] = {};
    ok = read_exact(caller, call.times, tv, sizeof tv);
    for (int i = 0; ok && i < 2; ++i) {
      if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000) {
        *err = EINVAL;
        return std::nullopt;
      }
      ts[static_cast<std::size_t>(i)] = timespec{tv[i].tv_sec, tv[i].tv_usec * 1000};
    }
  } else {
    ok = read_exact(caller, call.times, ts.data(), sizeof ts);  // the kernel validates tv_nsec
  }
  if (!ok) *err = EFAULT;
  if (!ok) return std::nullopt;
  return ts;
}

// The call's other inputs (times, attribute name and value), read before the final check
// that the caller is still the task that asked.
struct Inputs {
  bool now = true;  // NULL times: the current time
  std::array<timespec, 2> times{};
  std::string name;
  std::string value;
};

int read_inputs(const Caller& caller, const Call& call, Inputs& in) {
  int err = 0;
  if (call.op == Op::kTimes && call.times != 0) {
    const auto ts = read_times(caller, call, &err);
    if (!ts) return err;
    in.now = false;
    in.times = *ts;
  }
  if (call.op == Op::kSetXattr || call.op == Op::kRemoveXattr) {
    Result<std::string> name = read_string(caller, call.name, kMaxXattrName, ERANGE, &err);
    if (!name.ok()) return err;
    if (name->empty()) return ERANGE;
    in.name = std::move(*name);
  }
  if (call.op == Op::kSetXattr) {
    if (call.size > kMaxXattrValue) return E2BIG;
    in.value.assign(static_cast<std::size_t>(call.size), '\0');
    if (call.size > 0 && !read_exact(caller, call.value, in.value.data(), in.value.size()))
      return EFAULT;
  }
  return 0;
}

int do_times(const Inputs& in, int object) {
  return result_of(::utimensat(object, "", in.now ? nullptr : in.times.data(), AT_EMPTY_PATH));
}

int do_xattr(const Call& call, const Inputs& in, int object, const struct stat& st) {
  // Attributes on a symlink itself: user.* are not allowed there and the rest need
  // capabilities the command does not hold; an O_PATH symlink cannot be reached otherwise.
  if (S_ISLNK(st.st_mode)) return EPERM;
  const std::string self = "/proc/self/fd/" + std::to_string(object);
  if (call.op == Op::kRemoveXattr) return result_of(::removexattr(self.c_str(), in.name.c_str()));
  return result_of(::setxattr(self.c_str(), in.name.c_str(), in.value.data(), in.value.size(),
                              static_cast<int>(call.xattr_flags)));
}

void respond(int listener, std::uint64_t id, int err) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.error = err == 0 ? 0 : -err;
  resp.val = 0;
  // ENOENT: the caller died or was interrupted meanwhile; nothing is waiting for the answer.
  ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

// ---- the pseudo-terminal peer ----

void serve_pty_peer(int listener, const seccomp_notif& req) {
  const std::uint64_t flags = req.data.args[2];
  const int fd = static_cast<int>(req.data.args[0]);
  constexpr std::uint64_t kAllowed = O_ACCMODE | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
  if ((flags & ~kAllowed) != 0) return respond(listener, req.id, EINVAL);
  // PIDFD_THREAD (Linux 6.9) lets the notifying thread be any thread of the caller.
  constexpr unsigned kPidfdThread = O_EXCL;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, req.pid, kPidfdThread));
  if (pidfd < 0 && errno == EINVAL) pidfd = static_cast<int>(::syscall(SYS_pidfd_open, req.pid, 0));
  UniqueFd task(pidfd);
  if (!task.valid() || !id_valid(listener, req.id)) return respond(listener, req.id, EPERM);
  UniqueFd master(static_cast<int>(::syscall(SYS_pidfd_getfd, task.get(), fd, 0)));
  if (!master.valid()) return respond(listener, req.id, errno == EBADF ? EBADF : EPERM);
  struct stat st {};
  // Only /dev/ptmx's masters: the same ioctl number may mean something else to another driver.
  if (::fstat(master.get(), &st) != 0 || !S_ISCHR(st.st_mode) || major(st.st_rdev) != kPtmxMajor ||
      minor(st.st_rdev) != kPtmxMinor)
    return respond(listener, req.id, ENOTTY);
  // O_NOCTTY always: the terminal must never become the supervisor's controlling terminal.
  const int open_flags = static_cast<int>(flags & (O_ACCMODE | O_NONBLOCK)) | O_NOCTTY | O_CLOEXEC;
  UniqueFd peer(::ioctl(master.get(), kTiocgptpeer, open_flags));
  if (!peer.valid()) return respond(listener, req.id, errno);
  seccomp_notif_addfd add{};
  add.id = req.id;
  add.flags = SECCOMP_ADDFD_FLAG_SEND;  // installs the descriptor and returns it as the result
  add.srcfd = static_cast<std::uint32_t>(peer.get());
  add.newfd_flags = static_cast<std::uint32_t>(flags & O_CLOEXEC);
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) >= 0) return;
  // ENOENT: the caller is gone. Anything else (no ADDFD_FLAG_SEND before Linux 5.14, no free
  // descriptor in the caller): answer, so the caller never waits for ever.
  if (errno != ENOENT) respond(listener, req.id, errno == EINVAL ? ENOSYS : errno);
}

// ---- unix datagram sockets ----

// The kernel's own answer to a unix socket()/socketpair() the guard notified (a type outside
// stream and seqpacket) when it would refuse it anyway (net/socket.c __sys_socket(),
// net/unix/af_unix.c unix_create()); 0 for a datagram socket it would make. The kernel reads
// type and protocol as ints.
int unix_kernel_refusal(int type, int protocol) {
  if ((type & ~0xf & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) != 0) return EINVAL;
  if (protocol != 0 && protocol != PF_UNIX) return EPROTONOSUPPORT;
  if ((type & 0xf) != SOCK_DGRAM && (type & 0xf) != SOCK_RAW) return ESOCKTNOSUPPORT;
  return 0;
}

// One refusal line for the run's report, written whole (a pipe write of at most PIPE_BUF
// bytes is atomic, pipe(7)); a full pipe loses it.
void report_refusal(int fd, int type) {
  if (fd < 0) return;
  const char* line =
      (type & 0xf) == SOCK_RAW ? "socket(AF_UNIX, SOCK_RAW)\n" : "socket(AF_UNIX, SOCK_DGRAM)\n";
  ssize_t n = 0;
  do n = ::write(fd, line, std::strlen(line));
  while (n < 0 && errno == EINTR);
}

// socket(AF_UNIX, SOCK_DGRAM or SOCK_RAW): refused and named. Its only use beyond a pair is to
// name paths, host sockets included. The refusal is written before the answer, so the caller
// finds it once the command has ended.
void refuse_unix_datagram_socket(int listener, const seccomp_notif& req, int refusal_fd) {
  const int type = static_cast<int>(req.data.args[1]);
  if (const int err = unix_kernel_refusal(type, static_cast<int>(req.data.args[2])); err != 0)
    return respond(listener, req.id, err);
  report_refusal(refusal_fd, type);
  respond(listener, req.id, EPERM);
}

// Installs `fd` in the caller (SECCOMP_IOCTL_NOTIF_ADDFD, Linux 5.9): its number there, or
// -errno.
int install_in_caller(int listener, std::uint64_t id, int fd, bool cloexec) {
  seccomp_notif_addfd add{};
  add.id = id;
  add.srcfd = static_cast<std::uint32_t>(fd);
  add.newfd_flags = cloexec ? O_CLOEXEC : 0;
  const int number = ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
  return number < 0 ? -errno : number;
}

// socketpair(AF_UNIX, SOCK_DGRAM or SOCK_RAW): a SOCK_SEQPACKET pair (metadata_notify.hpp says
// why it cannot be re-addressed), installed in the caller and its two numbers written to the
// caller's sv[2] through /proc/TID/mem, opened and then checked against the notification (the
// TID was not reused). Nothing is read from the caller's memory. A write that fails (sv not
// writable) answers EFAULT and leaves the two descriptors in the caller, as a partial ADDFD
// failure leaves the first: the kernel would have closed them, the command's own loss only.
// /proc/TID/mem, not process_vm_writev(pid): the descriptor stays the caller's memory even if
// the caller dies and its TID is reused after the check. Its writes are forced (FOLL_FORCE,
// proc(5)): a read-only private page of the caller gets the numbers where the kernel would
// answer EFAULT, which gives the command nothing mprotect() would not; a read-only shared file
// mapping is never written through (no VM_MAYWRITE).
void substitute_unix_datagram_pair(int listener, const seccomp_notif& req) {
  const int type = static_cast<int>(req.data.args[1]);
  if (const int err = unix_kernel_refusal(type, static_cast<int>(req.data.args[2])); err != 0)
    return respond(listener, req.id, err);
  UniqueFd mem(::open(("/proc/" + std::to_string(req.pid) + "/mem").c_str(), O_RDWR | O_CLOEXEC));
  if (!mem.valid() || !id_valid(listener, req.id)) return respond(listener, req.id, EPERM);
  // SOCK_NONBLOCK is a file status flag: set here, it is the caller's too.
  int pair[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | (type & SOCK_NONBLOCK), 0, pair) != 0)
    return respond(listener, req.id, errno == EMFILE || errno == ENFILE ? errno : EPERM);
  const UniqueFd first(pair[0]);
  const UniqueFd second(pair[1]);
  const bool cloexec = (type & SOCK_CLOEXEC) != 0;
  int numbers[2] = {-1, -1};
  for (int i = 0; i < 2; ++i) {
    numbers[i] = install_in_caller(listener, req.id, i == 0 ? first.get() : second.get(), cloexec);
    if (numbers[i] == -ENOENT) return;  // the caller is gone or was interrupted
    // Out of descriptors keeps its errno; anything else (a kernel before 5.9) refuses the pair.
    if (numbers[i] < 0) return respond(listener, req.id, numbers[i] == -EMFILE ? EMFILE : EPERM);
  }
  ssize_t n = 0;
  do n = ::pwrite(mem.get(), numbers, sizeof numbers, static_cast<off_t>(req.data.args[3]));
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof numbers)) return respond(listener, req.id, EFAULT);
  respond(listener, req.id, 0);
}

}  // namespace

bool within_writable_roots(std::string_view object, const std::vector<std::string>& roots) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (object.empty() || object.front() != '/') return false;
  if (object.size() >= kDeleted.size() &&
      object.substr(object.size() - kDeleted.size()) == kDeleted)
    return false;
  if (object.size() > 1 && object.back() == '/') return false;
  // Every component must be a plain name: no '', '.' or '..'.
  for (std::size_t start = 1; start < object.size();) {
    std::size_t end = object.find('/', start);
    if (end == std::string_view::npos) end = object.size();
    const std::string_view part = object.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  for (const std::string& root : roots) {
    if (root.empty() || root.front() != '/') continue;
    if (root == "/") return true;
    if (root.back() == '/' || root.find("/./") != std::string::npos ||
        root.find("/../") != std::string::npos || root.find("//") != std::string::npos)
      continue;
    if (object == root) return true;
    if (object.size() > root.size() && object.compare(0, root.size(), root) == 0 &&
        object[root.size()] == '/')
      return true;
  }
  return false;
}

int install_metadata_guard(int socket, bool metadata, bool connects) noexcept {
  const int listener = load_metadata_guard_program(metadata, connects);
  if (listener < 0) return -listener;
  const int sent = send_fd(socket, listener);
  ::close(listener);
  ::close(socket);
  return sent;
}

Result<int> receive_metadata_listener(int socket) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  do n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n != 1) return Error{n == 0 ? "the child closed the socket" : errno_text(errno)};
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int)))
    return Error{"no descriptor received"};
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

Result<MetadataEmulator> MetadataEmulator::open(const std::vector<std::string>& writable_roots) {
  MetadataEmulator e;
  for (const std::string& root : writable_roots) {
    // As the ruleset: a missing root is skipped (nothing beneath it can exist to change).
    const int fd = ::open(root.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) continue;
    if (fd < 0) return Error{"open '" + root + "': " + errno_text(errno)};
    e.root_fds_.push_back(fd);
  }
  e.fsuid_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1)));
  e.fsgid_ = static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1)));
  return e;
}

MetadataEmulator MetadataEmulator::adopt(std::vector<int> root_fds) {
  MetadataEmulator e;
  e.root_fds_ = std::move(root_fds);
  e.fsuid_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1)));
  e.fsgid_ = static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1)));
  return e;
}

MetadataEmulator::MetadataEmulator(MetadataEmulator&& other) noexcept
    : root_fds_(std::move(other.root_fds_)),
      connects_(std::move(other.connects_)),
      fsuid_(other.fsuid_),
      fsgid_(other.fsgid_),
      refusal_fd_(other.refusal_fd_) {
  other.root_fds_.clear();
}

MetadataEmulator::~MetadataEmulator() {
  for (int fd : root_fds_) ::close(fd);
}

std::vector<std::string> MetadataEmulator::current_roots() const {
  std::vector<std::string> roots;
  for (int fd : root_fds_) {
    std::string path = fd_path(fd);
    if (!path.empty() && path.front() == '/') roots.push_back(std::move(path));
  }
  return roots;
}

void MetadataEmulator::serve_one(int listener) const {
  seccomp_notif req{};
  if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return;  // caller gone: ENOENT
  // The guard notifies these only for AF_UNIX with a non-stream type (metadata_filter.hpp).
  if (req.data.nr == SCMP_SYS(socket))
    return refuse_unix_datagram_socket(listener, req, refusal_fd_);
  if (req.data.nr == SCMP_SYS(socketpair)) return substitute_unix_datagram_pair(listener, req);
  // Notified only by the connect variant (the network enabled).
  if (req.data.nr == SCMP_SYS(connect) || req.data.nr == SCMP_SYS(bind))
    return connects_->answer(listener, req, refusal_fd_);
  if (req.data.nr == SCMP_SYS(ioctl)) {
    if ((req.data.args[1] & 0xffffffffu) == kTiocgptpeer) return serve_pty_peer(listener, req);
    return respond(listener, req.id, EPERM);
  }
  Call call;
  int err = decode(req.data, call);
  if (err != 0) return respond(listener, req.id, err);
  Caller caller;
  caller.tid = static_cast<pid_t>(req.pid);
  caller.proc = UniqueFd(
      ::open(("/proc/" + std::to_string(req.pid)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (caller.proc.valid())
    caller.mem = UniqueFd(::openat(caller.proc.get(), "mem", O_RDONLY | O_CLOEXEC));
  // The TID names the caller only while its notification is pending: check after opening.
  if (!caller.mem.valid() || !id_valid(listener, req.id)) return respond(listener, req.id, EPERM);
  // The supervisor acts with its own credentials; they must be the caller's.
  uid_t uid = 0;
  gid_t gid = 0;
  if (!caller_fs_ids(caller, &uid, &gid) || uid != fsuid_ || gid != fsgid_)
    return respond(listener, req.id, EPERM);
  Inputs inputs;
  err = read_inputs(caller, call, inputs);
  if (err != 0) return respond(listener, req.id, err);
  Result<UniqueFd> object = open_object(caller, call, &err);
  if (!object.ok()) return respond(listener, req.id, err != 0 ? err : EPERM);
  // Everything the decision needs has been read: the caller must still be the same task.
  if (!id_valid(listener, req.id)) return;
  const std::string path = fd_path(object->get());
  if (!within_writable_roots(path, current_roots())) return respond(listener, req.id, EPERM);
  struct stat st {};
  if (::fstat(object->get(), &st) != 0) return respond(listener, req.id, EPERM);
  switch (call.op) {
    case Op::kChmod:
      err = do_chmod(call, object->get(), st);
      break;
    case Op::kChown:
      err = do_chown(call, object->get());
      break;
    case Op::kTimes:
      err = do_times(inputs, object->get());
      break;
    case Op::kSetXattr:
    case Op::kRemoveXattr:
      err = do_xattr(call, inputs, object->get(), st);
      break;
  }
  respond(listener, req.id, err);
}

}  // namespace sbx::stage2
