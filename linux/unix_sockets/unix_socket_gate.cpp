// The pathname-connect decision (unix_socket_gate.hpp says what is decided and why).
#include "unix_socket_gate.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#ifndef SIOCUNIXFILE  // <linux/un.h> clashes with <sys/un.h>
#define SIOCUNIXFILE (SIOCPROTOPRIVATE + 0)
#endif

namespace sbx::unix_sockets {
namespace {

// Recorded bound sockets beyond this many are pruned of those whose file is gone.
constexpr std::size_t kPruneAbove = 256;
// Sockets whose bind is not seen done yet, kept at most (a failed bind never completes).
constexpr std::size_t kMaxPending = 256;

int openat2_raw(int dirfd, const char* path, std::uint64_t flags, std::uint64_t resolve) {
  open_how how{};
  how.flags = flags;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

std::string proc_path(pid_t pid, const char* what) {
  return "/proc/" + std::to_string(pid) + "/" + what;
}

// The caller's working directory as a path inside its own root (procfs prints it relative to
// the root of the caller's mount namespace: bwrap's sandbox root, or the host's / under
// Landlock, which has no mount namespace).
std::optional<std::string> working_directory(pid_t pid) {
  char buffer[PATH_MAX + 1];
  const ssize_t n = readlink(proc_path(pid, "cwd").c_str(), buffer, PATH_MAX);
  if (n <= 0 || buffer[0] != '/') return std::nullopt;
  std::string cwd(buffer, static_cast<std::size_t>(n));
  if (cwd.ends_with(" (deleted)")) return std::nullopt;
  return cwd;
}

constexpr std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

// Parses one SOCK_DIAG_BY_FAMILY answer (its attributes) into `entry`.
void parse_attributes(const char* buffer, std::size_t at, std::size_t end, DiagEntry& entry) {
  while (at + sizeof(nlattr) <= end) {
    nlattr attribute{};
    std::memcpy(&attribute, buffer + at, sizeof attribute);
    if (attribute.nla_len < sizeof attribute || at + attribute.nla_len > end) return;
    const char* data = buffer + at + align4(sizeof(nlattr));
    const std::size_t size = attribute.nla_len - align4(sizeof(nlattr));
    if (attribute.nla_type == UNIX_DIAG_NAME) entry.name.assign(data, size);
    if (attribute.nla_type == UNIX_DIAG_VFS && size >= sizeof(unix_diag_vfs)) {
      unix_diag_vfs vfs{};
      std::memcpy(&vfs, data, sizeof vfs);
      // The kernel's own device encoding (major << 20 | minor), not stat's.
      entry.file = Identity{makedev(vfs.udiag_vfs_dev >> 20, vfs.udiag_vfs_dev & 0xfffff),
                            vfs.udiag_vfs_ino};
    }
    at += align4(attribute.nla_len);
  }
}

// The socket file `socket` is bound to, identified from the socket itself: SIOCUNIXFILE opens
// it (needs CAP_NET_ADMIN over the socket's network namespace, which sbx's user has over the
// private one bwrap made, as owner of the sandbox's user namespace); otherwise (the host's
// namespace: bwrap with the network enabled, Landlock mode) the socket diagnostics give its
// device and inode, and the name the socket reports is opened in the binder's view and
// compared. Never by the name alone: the command could swap another socket file in under that
// name. Empty when the socket is not bound to a file (yet) or the file cannot be identified.
UniqueFd bound_socket_file(int socket, pid_t binder) {
  UniqueFd file(ioctl(socket, SIOCUNIXFILE));
  if (file.valid() || errno != EPERM) return file;
  std::optional<Identity> sock = identity_of(socket);
  if (!sock) return {};
  const std::vector<DiagEntry> entries = diag_unix(sock->ino);
  if (entries.empty() || !entries.front().file) return {};
  sockaddr_un name{};
  socklen_t length = sizeof name;
  if (getsockname(socket, reinterpret_cast<sockaddr*>(&name), &length) != 0 ||
      length <= offsetof(sockaddr_un, sun_path) || name.sun_path[0] == '\0')
    return {};
  const std::string path(name.sun_path,
                         strnlen(name.sun_path, length - offsetof(sockaddr_un, sun_path)));
  std::optional<std::string> absolute = absolute_in_caller(binder, path);
  if (!absolute) return {};
  UniqueFd opened(open_in_caller_root(binder, *absolute, O_PATH | O_NOFOLLOW));
  if (!opened.valid()) return {};
  std::optional<Identity> found = identity_of(opened.get());
  if (!found || *found != *entries.front().file) return {};
  return opened;
}

bool is_bound(int socket) {
  sockaddr_un name{};
  socklen_t length = sizeof name;
  return getsockname(socket, reinterpret_cast<sockaddr*>(&name), &length) == 0 &&
         length > offsetof(sockaddr_un, sun_path);
}

void prune_bound(std::map<Identity, UniqueFd>& bound) {
  if (bound.size() <= kPruneAbove) return;
  for (auto it = bound.begin(); it != bound.end();) {
    struct stat st {};
    if (fstat(it->second.get(), &st) == 0 && st.st_nlink == 0) {
      it = bound.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

std::optional<Identity> identity_of(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return std::nullopt;
  return Identity{st.st_dev, st.st_ino};
}

std::optional<std::string> absolute_in_caller(pid_t pid, const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  std::optional<std::string> cwd = working_directory(pid);
  if (!cwd) {
    errno = ENOENT;
    return std::nullopt;
  }
  return *cwd + "/" + path;
}

int open_in_caller_root(pid_t pid, const std::string& path, int flags) {
  UniqueFd root(open(proc_path(pid, "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return -1;
  return openat2_raw(root.get(), path.c_str(), static_cast<std::uint64_t>(flags) | O_CLOEXEC,
                     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

std::vector<DiagEntry> diag_unix(ino_t socket_ino) {
  std::vector<DiagEntry> out;
  UniqueFd nl(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl.valid()) return out;
  struct {
    nlmsghdr header;
    unix_diag_req request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | (socket_ino == 0 ? NLM_F_DUMP : 0);
  message.request.sdiag_family = AF_UNIX;
  message.request.udiag_states = ~0U;
  message.request.udiag_ino = static_cast<__u32>(socket_ino);
  message.request.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS;
  message.request.udiag_cookie[0] = ~0U;  // INET_DIAG_NOCOOKIE
  message.request.udiag_cookie[1] = ~0U;
  if (send(nl.get(), &message, sizeof message, 0) != static_cast<ssize_t>(sizeof message))
    return out;
  alignas(nlmsghdr) char buffer[32768];
  for (;;) {
    const ssize_t n = recv(nl.get(), buffer, sizeof buffer, 0);
    if (n <= 0) return out;
    std::size_t offset = 0;
    const auto total = static_cast<std::size_t>(n);
    while (offset + sizeof(nlmsghdr) <= total) {
      nlmsghdr header{};
      std::memcpy(&header, buffer + offset, sizeof header);
      if (header.nlmsg_len < sizeof header || offset + header.nlmsg_len > total) return out;
      if (header.nlmsg_type == NLMSG_DONE || header.nlmsg_type == NLMSG_ERROR) return out;
      const std::size_t payload = offset + align4(sizeof(nlmsghdr));
      const std::size_t end_of_message = offset + header.nlmsg_len;
      offset += align4(header.nlmsg_len);
      if (payload + sizeof(unix_diag_msg) > end_of_message) continue;
      unix_diag_msg msg{};
      std::memcpy(&msg, buffer + payload, sizeof msg);
      DiagEntry entry;
      entry.socket_ino = msg.udiag_ino;
      parse_attributes(buffer, payload + align4(sizeof msg), end_of_message, entry);
      out.push_back(std::move(entry));
      if (socket_ino != 0) return out;
    }
  }
}

int pidfd_of_caller(pid_t tid) {
  constexpr unsigned kPidfdThread = O_EXCL;  // PIDFD_THREAD (Linux 6.9)
  int fd = static_cast<int>(syscall(SYS_pidfd_open, tid, kPidfdThread));
  if (fd >= 0 || errno != EINVAL) return fd;
  fd = static_cast<int>(syscall(SYS_pidfd_open, tid, 0));
  if (fd >= 0 || errno != EINVAL) return fd;
  // Before 6.9 only a thread group leader has a pidfd: the group's, from /proc/TID/status.
  UniqueFd status(open(proc_path(tid, "status").c_str(), O_RDONLY | O_CLOEXEC));
  char text[4096];
  const ssize_t n = status.valid() ? read(status.get(), text, sizeof text - 1) : -1;
  if (n <= 0) return -1;
  text[n] = '\0';
  const char* line = std::strstr(text, "\nTgid:");
  if (line == nullptr) return -1;
  const long group = std::strtol(line + 6, nullptr, 10);
  return group > 0 ? static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(group), 0)) : -1;
}

sockaddr_storage address_of_descriptor(int file, socklen_t& length) {
  const std::string path = "/proc/self/fd/" + std::to_string(file);
  sockaddr_storage storage{};
  auto* un = reinterpret_cast<sockaddr_un*>(&storage);
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path, path.data(), std::min(path.size(), sizeof un->sun_path - 1));
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return storage;
}

void UnixSocketGate::list_path(const std::string& path) {
  list_file(UniqueFd(open(path.c_str(), O_PATH | O_CLOEXEC)));
}

void UnixSocketGate::list_file(UniqueFd file) {
  if (!file.valid()) return;  // absent when the run started: not allowed
  struct stat st {};
  if (fstat(file.get(), &st) != 0 || !S_ISSOCK(st.st_mode)) return;
  std::lock_guard lock(mutex_);
  listed_.insert_or_assign(Identity{st.st_dev, st.st_ino}, std::move(file));
}

// Sockets of the sandbox that asked to bind since the last look: each one bound to a file has
// that file recorded (and held open, so its inode number is never reused for a host socket)
// and is let go; one bound to an abstract name is let go; one not bound yet stays (its bind
// may still be on its way) until the list is long, oldest first.
void UnixSocketGate::settle_locked() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!is_bound(it->socket.get())) {
      ++it;
      continue;
    }
    UniqueFd file = bound_socket_file(it->socket.get(), it->binder);
    if (std::optional<Identity> id = file.valid() ? identity_of(file.get()) : std::nullopt) {
      prune_bound(bound_);
      bound_.insert_or_assign(*id, std::move(file));
    }
    it = pending_.erase(it);
  }
  while (pending_.size() > kMaxPending) pending_.pop_front();
}

void UnixSocketGate::note_bind(UniqueFd socket, pid_t binder) {
  std::lock_guard lock(mutex_);
  // First let go of the sockets whose binds are done: a held socket would keep an abstract
  // name taken after the sandbox closed it (a rebind of the name would fail).
  settle_locked();
  if (std::optional<Identity> id = identity_of(socket.get())) binders_.insert(id->ino);
  pending_.push_back({std::move(socket), binder});
}

bool UnixSocketGate::allowed_locked(const Identity& id) const {
  if (listed_.contains(id) || bound_.contains(id)) return true;
  // Not recorded: its bind may not have been settled by name (renamed before, say). Asked of
  // the socket diagnostics instead: is the socket bound to this very file now one the sandbox
  // bound? Only one socket is ever bound to a file, the one a connect through it reaches
  // (unix_find_bsd()); a host socket bound to a file that reuses the inode number is not one
  // of the sandbox's sockets. (The namespace this process shares with the sandbox's binders:
  // bwrap with a private network records every bind by SIOCUNIXFILE instead.)
  for (const DiagEntry& entry : diag_unix()) {
    if (entry.file && *entry.file == id && binders_.contains(entry.socket_ino)) return true;
  }
  return false;
}

UnixSocketGate::Verdict UnixSocketGate::decide_pathname(pid_t caller, const std::string& path) {
  Verdict verdict;
  std::optional<std::string> absolute = absolute_in_caller(caller, path);
  if (!absolute) return {Outcome::kFail, errno, {}};
  UniqueFd file(open_in_caller_root(caller, *absolute, O_PATH));
  if (!file.valid()) {
    const int error = errno;
    // A magic link (/proc/PID/root/..., /proc/self/fd/N) would leave the caller's view; the
    // kernel would have followed it, the gate does not (openat2 says ELOOP): a refusal.
    if (error != ELOOP) return {Outcome::kFail, error, {}};
    return verdict;
  }
  struct stat st {};
  if (fstat(file.get(), &st) != 0) return {Outcome::kFail, errno, {}};
  // What the kernel answers for a path that is not a socket.
  if (!S_ISSOCK(st.st_mode)) return {Outcome::kFail, ECONNREFUSED, {}};
  std::lock_guard lock(mutex_);
  // Binds are let through: their files are recorded here, before anything is decided.
  settle_locked();
  if (!allowed_locked(Identity{st.st_dev, st.st_ino})) return verdict;
  verdict.outcome = Outcome::kConnect;
  verdict.file = std::move(file);
  return verdict;
}

bool UnixSocketGate::abstract_name_is_ours(const std::string& name) {
  const std::string wanted = std::string(1, '\0') + name;
  for (const DiagEntry& entry : diag_unix()) {
    if (entry.name != wanted) continue;
    std::lock_guard lock(mutex_);
    if (binders_.contains(entry.socket_ino)) return true;
  }
  return false;
}

}  // namespace sbx::unix_sockets
