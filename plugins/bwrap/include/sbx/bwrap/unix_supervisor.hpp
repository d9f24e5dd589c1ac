// The unix-socket supervisor: which unix sockets a bwrap-sandboxed command may reach.
//
// Seccomp sees registers, never memory, so it cannot tell which socket a connect() names. The
// spawner therefore installs, in the child that execs bwrap, a notification-only filter
// (unix_notify_program): every connect() and bind() of everything in the sandbox (bwrap, stage
// 2, the command) is handed to this supervisor, in the waiting sbx process (its watcher,
// then a thread of its own from the first connect on), through the filter's listener. For a connect
// the supervisor copies the address, decides, and performs the call itself on a duplicate of the
// caller's socket (pidfd_getfd) with its private copy of the address, then injects the result: it
// never lets the kernel continue a call whose decision rests on memory the command can still
// change. io_uring, whose socket operations seccomp does not see, is refused (EPERM).
//
// Unix datagram sockets: none ever exists in the sandbox. A datagram send may name any path per
// message (sendmsg's msg_name is in memory the filter cannot read), so instead of supervising
// every send the filter notifies socket() and socketpair() of AF_UNIX with any type but
// SOCK_STREAM and SOCK_SEQPACKET (an allow-list: SOCK_RAW is a datagram socket too, unix_create()
// maps it): socket() is refused (EPERM) and reported as kind "unix" with the call
// ("socket(AF_UNIX, SOCK_DGRAM)"; bwrap's own glibc probe for a socket to ioctl on is not);
// socketpair() gets a SOCK_SEQPACKET pair, made by a helper process of sbx's in an empty network
// namespace of its own (a socket's interface ioctls read its maker's namespace: a pair made by
// sbx would show a private-network sandbox the host's interfaces), installed in the caller
// (SECCOMP_IOCTL_NOTIF_ADDFD, Linux 5.9; SOCK_NONBLOCK/SOCK_CLOEXEC kept). A seqpacket pair
// keeps message boundaries and cannot be re-addressed: unix_seqpacket_sendmsg() clears
// msg_namelen (sendto/sendmsg/sendmmsg go to the peer) and a connected socket cannot connect
// again. Visible differences from a datagram pair: SO_TYPE says SOCK_SEQPACKET, a closed peer
// gives EOF and EPIPE (not a blocked read and ECONNREFUSED), SO_PEERCRED names the helper.
// An addressed sendto on such a pair is refused (EACCES) and reported where sends are notified
// (private network namespace); a bind of it is refused (EINVAL: the pair is not a socket of the
// sandbox's network namespace).
//
// Decisions (plugins/bwrap/README.md, "Unix sockets: the supervisor", has the threat model):
// * pathname connect (linux/unix_sockets/unix_socket_gate.hpp, shared with Landlock mode's
//   unix connect guard): the path is resolved as the caller sees it (its root and working
//   directory, openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) to an O_PATH descriptor of a
//   socket; allowed iff that inode is a listed host socket or one a bind of this sandbox
//   created, and then connected through that very descriptor (/proc/self/fd/N), so the checked
//   inode is the connected one. Refused: EACCES.
// * bind: never refused, so the kernel continues it as the caller's own call (the decision
//   does not rest on the address); the file a unix bind created is then recorded from the
//   socket itself (SIOCUNIXFILE, or the socket diagnostics of the host's namespace) and held
//   open so its inode number is never reused.
// * abstract names: in a private network namespace every name is the sandbox's: allowed. In
//   the host's namespace only names bound by this sandbox (checked on the socket currently
//   bound to the name) are allowed.
// * every other family: allowed, but performed by the supervisor like the rest; an inet
//   connect that finds no route out of a private network namespace is recorded as refused.
// * sendto() with a destination, private network namespace only: report-only. The kernel's
//   routing refuses a destination outside the namespace (only its loopback is there); the
//   supervisor lets a send to a loopback address continue unreported and performs any other
//   (the datagram and address copied out first) on its duplicate, recording ENETUNREACH.
//
// Cost: in the spawner no thread runs until a call needs one (attach/serve below): binds, and
// sends on sockets that are not inet ones (bwrap's netlink set-up of the loopback), are
// answered by the thread that already waits for bwrap, so a run that never connects or sends
// to an inet address pays no thread start.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::bwrap {

struct UnixSocketRules {
  // The sandbox has a network namespace of its own: every abstract name in it is its own.
  bool private_network = false;
  // Host pathname sockets the command may connect to (policy network.unix_sockets, plus the
  // proxy's socket in proxy mode). Resolved and identified (device, inode) when the supervisor
  // starts; a listed path that does not exist then is not allowed.
  std::vector<std::string> allowed_paths;
  // The launcher's executable (bwrap, the plan's argv[0]). Its own refused unix datagram
  // socket (glibc's __opensock() tries one before an inet socket, for bwrap's loopback set-up)
  // is not the command's and is not reported.
  std::string launcher;
};

// One connection the supervisor refused: "unix" and the path or "@name" as the caller gave
// it, or "ip" and "ADDRESS:PORT" ("[ADDRESS]:PORT" for IPv6) for a connect that found no route
// out of the sandbox's private network namespace (ENETUNREACH: only its loopback is there).
// The same for a sendto() with a destination address that found no route (ENETUNREACH); a
// sendmsg()/sendmmsg() is not seen (its address is in memory the filter cannot test). Kind
// "unix" with "socket(AF_UNIX, SOCK_DGRAM)" (or SOCK_RAW) for a refused unix datagram socket,
// and with the path for an addressed sendto on a datagram socketpair.
struct UnixRefusal {
  std::string kind;
  std::string address;
};

// Why the supervisor cannot run on this kernel (seccomp user notification, pidfd_getfd and
// openat2 are needed: Linux 5.6), or empty when it can. Every bwrap run needs it.
std::string unix_supervisor_unavailable();

// The notification filter (static, built at compile time: usable after vfork). With
// `report_sends` (a private network namespace) sendto() with a destination is notified too.
const sock_fprog& unix_notify_program(bool report_sends) noexcept;

// Child side, async-signal-safe: sets no_new_privs and installs unix_notify_program() with a
// listener; returns the listener (close-on-exec) or -1 with errno set.
int install_unix_notify_filter(bool report_sends) noexcept;

// Passes `fd` over the unix socket `channel` (SCM_RIGHTS). Async-signal-safe. False on error.
bool send_descriptor(int channel, int fd) noexcept;
// Receives one descriptor sent by send_descriptor, without blocking; -1 if none is there.
int receive_descriptor(int channel) noexcept;

// How the printed plan names the host unix sockets the command may connect to, in sbx-stage2's
// argument section: `--allow-unix-socket PATH` (one per listed socket; stage2_form,
// translate.hpp). exec() takes them from the typed plan (unix_socket_rules, launch_form.hpp):
// stage 2 never sees them.
inline constexpr const char* kAllowUnixSocketOption = "--allow-unix-socket";
// The option the spawner adds for sbx-stage2 once the supervisor runs: stage 2 may then let the
// command create unix stream and seqpacket sockets in a private network namespace.
inline constexpr const char* kUnixSupervisedOption = "--unix-supervised";

class UnixSupervisor {
 public:
  // Takes ownership of `listener` (closed even on failure); a thread of its own serves it from
  // now on (for an owner without a poll loop: tests, tools).
  static Result<std::unique_ptr<UnixSupervisor>> start(int listener, UnixSocketRules rules);
  // Takes ownership of `listener` (closed even on failure), starts no thread: the owner polls
  // poll_fd() for POLLIN among its own descriptors, without ever blocking for long elsewhere,
  // and calls serve() whenever it is readable. The first connect, or send on an inet socket, is
  // handed to a thread started then (once); from that moment poll_fd() is -1 and the thread
  // serves alone.
  static Result<std::unique_ptr<UnixSupervisor>> attach(int listener, UnixSocketRules rules);
  // The listener while the owner is to serve it; -1 once a thread serves it, the sandbox is
  // gone (every process under the filter has ended) or stop() ran.
  int poll_fd() const;
  // Answers what is waiting on the listener, never blocking: a bind, or a send on a socket
  // that is not an inet one, here (continued as the caller's own call, nothing is performed),
  // anything else in the supervisor's thread.
  // Without a thread (none could be started) a connect fails with EAGAIN and a send goes on
  // unreported (sends are only reported, never decided).
  void serve();
  ~UnixSupervisor();
  UnixSupervisor(const UnixSupervisor&) = delete;
  UnixSupervisor& operator=(const UnixSupervisor&) = delete;

  // Stops supervising (pending calls of a sandbox that is gone are dropped) and joins every
  // thread. Idempotent; the destructor calls it.
  void stop();
  // What was refused so far, in order (the first 1000).
  std::vector<UnixRefusal> refusals() const;

  struct State;

 private:
  explicit UnixSupervisor(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace sbx::bwrap
