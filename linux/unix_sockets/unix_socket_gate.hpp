// The decision every supervised pathname connect() of a sandbox gets: which host unix socket
// it may reach. One mechanism for both Linux backends: bwrap's unix-socket supervisor
// (plugins/bwrap/include/sbx/bwrap/unix_supervisor.hpp) and Landlock mode's guard emulator
// (linux/landlock/metadata_notify.hpp), each of which copies the caller's address out of its
// memory, asks the gate, and performs the connect itself on a duplicate of the caller's socket
// (pidfd_getfd) through the descriptor the gate resolved: never by the path again, and never
// letting the kernel continue a call whose decision rests on memory the caller can still change.
//
// The decision (plugins/bwrap/README.md, "Unix sockets: the supervisor", has the threat model):
// the path is resolved as the caller sees it (its root and working directory, openat2
// RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, Linux 5.6) to an O_PATH descriptor of a socket; it
// is allowed iff that inode is a listed socket (identified when the run started) or one a bind
// of this sandbox created (recorded from the bound socket itself, held open so its inode number
// is never reused; or, for a file not recorded yet, found bound now to a socket the sandbox
// bound, by the socket diagnostics). Symlinks resolve as for the caller, so a link to a host socket
// reaches the host socket's inode: refused. A magic link (/proc/self/fd/N, /proc/PID/root/...) is
// refused outright: it would leave the caller's view. A socket file renamed or hard-linked keeps
// its inode: one the sandbox bound stays its own, a host one stays the host's. Another sandbox's
// sockets are host sockets here: each run has a gate of its own.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <compare>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sbx/sdk/unique_fd.hpp"

namespace sbx::unix_sockets {

// A file by (device, inode).
struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  friend auto operator<=>(const Identity&, const Identity&) = default;
};

std::optional<Identity> identity_of(int fd);

// `path` made absolute against the working directory of `pid` as it sees it (its root);
// nullopt (errno set) if impossible (a deleted working directory, say).
std::optional<std::string> absolute_in_caller(pid_t pid, const std::string& path);

// Opens `path` (absolute, as `pid` sees it) inside the root of `pid`: `..` cannot climb above
// that root, absolute symlinks resolve against it, magic links are refused (ELOOP). -1 with
// errno on failure.
int open_in_caller_root(pid_t pid, const std::string& path, int flags);

// One unix socket of this process's network namespace, from the socket diagnostics (what
// `ss -x` reads; unprivileged).
struct DiagEntry {
  ino_t socket_ino = 0;
  std::string name;  // UNIX_DIAG_NAME: "\0abstract" or a path
  std::optional<Identity> file;
};
// Every unix socket of the namespace, or only the one with sockfs inode `socket_ino`.
std::vector<DiagEntry> diag_unix(ino_t socket_ino = 0);

// A pidfd for the thread `tid` that made a notified call (PIDFD_THREAD, Linux 6.9), else for its
// thread group, whose descriptor table the thread shares; -1 with errno. The notification's
// validity, checked by the caller afterwards, says the tid was not reused meanwhile.
int pidfd_of_caller(pid_t tid);

// The address that names `file` (an O_PATH descriptor of this process) to connect(): the
// magic link /proc/self/fd/N, which the kernel follows to that very inode.
sockaddr_storage address_of_descriptor(int file, socklen_t& length);

class UnixSocketGate {
 public:
  // A listed socket, by path: opened now (symlinks followed, as a connect would); a path that
  // does not name a socket now is not listed.
  void list_path(const std::string& path);
  // A listed socket, by a descriptor (O_PATH) opened when the run started; owned from now on.
  void list_file(UniqueFd file);

  // A bind of the sandbox's unix socket `socket` (a duplicate of the caller's), asked by
  // `binder`, is about to go ahead as the caller's own call. Once it is seen done the file it
  // created is recorded; its sockfs inode is noted at once (abstract names, files not recorded).
  void note_bind(UniqueFd socket, pid_t binder);

  enum class Outcome {
    kConnect,  // allowed: connect through `file` (address_of_descriptor)
    kRefuse,   // refused (the sandbox's refusal: EACCES, recorded by the caller)
    kFail,     // the kernel's own answer for this path, `error` (ENOENT, ECONNREFUSED...)
  };
  struct Verdict {
    Outcome outcome = Outcome::kRefuse;
    int error = 0;
    UniqueFd file;  // kConnect: the checked socket (O_PATH), kept until the connect is done
  };
  // The pathname connect of `caller` (a thread id) to `path` (as given, relative or absolute).
  Verdict decide_pathname(pid_t caller, const std::string& path);

  // With the host's network namespace: is the socket bound to abstract `name` (without the
  // leading NUL) right now one this sandbox bound? (sockfs inode numbers come from a counter,
  // so a closed socket's number is not handed to a host socket in any realistic time.)
  bool abstract_name_is_ours(const std::string& name);

 private:
  struct PendingBind {
    UniqueFd socket;  // our duplicate of the socket the sandbox is binding
    pid_t binder;     // who asked (its view resolves the name)
  };
  void settle_locked();
  bool allowed_locked(const Identity& id) const;

  std::mutex mutex_;
  std::map<Identity, UniqueFd> listed_;  // listed sockets (held open)
  std::map<Identity, UniqueFd> bound_;   // socket files a bind of this sandbox created
  std::deque<PendingBind> pending_;      // binds let through, file not yet recorded
  std::set<ino_t> binders_;              // sockfs inodes of unix sockets the sandbox bound
};

}  // namespace sbx::unix_sockets
