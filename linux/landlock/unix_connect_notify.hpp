// Landlock mode's unix connect guard: host pathname unix sockets stay closed with the network
// enabled (plugins/landlock/README.md, "Unix sockets with the network enabled").
//
// Landlock mode has no network namespace, and no Landlock ABI so far has a right for connecting
// to a pathname unix socket: with the network enabled the host's docker, ssh-agent or D-Bus
// socket would be a connect() away. So the guard's program has a connect variant
// (metadata_filter.hpp) that notifies every connect() and bind() of the command to the guard's
// emulator (sbx-stage2 --metadata-guard), which answers them here, with the mechanism bwrap's
// unix-socket supervisor uses (linux/unix_sockets/unix_socket_gate.hpp):
//
//   - connect(): the emulator takes a duplicate of the caller's socket (pidfd_getfd, Linux
//     5.6) and a private copy of the address (process_vm_readv), checks the notification is
//     still the caller's, decides on the copy and performs the connect itself on the duplicate,
//     injecting its result. SECCOMP_USER_NOTIF_FLAG_CONTINUE is never used for a connect: the
//     kernel would read the address (and the descriptor table) again after the check.
//       * unix pathname: allowed only for a socket a bind of this run created (by inode: the
//         gate resolves the path as the caller sees it, symlinks included, refuses magic links
//         such as /proc/self/fd/N, and connects through the very descriptor it checked);
//         refused with EACCES otherwise, named in the run's network_refusals.
//       * unix abstract: the emulator is outside the command's Landlock domain, so the scope
//         (ABI 6) would not hold for a connect it performs: allowed only when the socket bound
//         to the name now is one this run bound (the socket diagnostics), else EACCES.
//       * every other family (and an address too short to name anything): performed as given.
//   - bind(): the decision does not rest on the address (the kernel checks the bind as the
//     caller's own call: Landlock's make_sock right, the caller's permissions), so it continues;
//     a unix socket's duplicate is kept to record the file its bind created.
//
// A blocking connect is performed in a worker thread of the emulator (a TCP handshake or a full
// backlog must not stall the command's other calls). The connection's peer credentials
// (SO_PEERCRED) are the emulator's: the same user and group as the command, another pid.
// io_uring, whose socket operations seccomp does not see, is refused by the main filter.
#pragma once

#include <linux/seccomp.h>

#include <memory>

namespace sbx::stage2 {

class UnixConnectGuard {
 public:
  UnixConnectGuard();
  ~UnixConnectGuard();
  UnixConnectGuard(const UnixConnectGuard&) = delete;
  UnixConnectGuard& operator=(const UnixConnectGuard&) = delete;

  // Answers one connect() or bind() notification of `listener`. A refused connect is named on
  // `refusal_fd` (one line: the path, or "@name"; -1: nowhere) before it is answered.
  void answer(int listener, const seccomp_notif& request, int refusal_fd);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// sbx-stage2 --unix-connect-trial HOST OWN: the command side of the landlock probe's trial of
// the guard (plugins/landlock/src/probe.cpp), exec'd under the guard's connect variant. Connects
// to the host's listening socket HOST, then binds and listens at OWN and connects to it; writes
// the two errnos (int[2], 0 for connected) to its stdout. Dumpable, as any command after its
// execve (the probe, as the guard's supervisor, takes its sockets with pidfd_getfd); it holds
// nothing of sbx's. Returns its exit code (0, or 125 on a usage error).
int run_unix_connect_trial(int argc, char** argv);

}  // namespace sbx::stage2
