// The proxy relay of sbx-stage2 (bwrap backend, network.mode proxy).
//
// Inside bwrap's network namespace only loopback exists, so the command cannot reach the host's
// filtering proxy on the host's 127.0.0.1. The host proxy also listens on a unix socket, which
// bwrap binds into the sandbox (its private directory, read-only). Before the command runs,
// sbx-stage2 starts this relay: a process that listens on 127.0.0.1:PORT inside the namespace
// and forwards the bytes of each connection, unchanged, to that one unix socket. It parses
// nothing; the proxy does every check (credential, domains, addresses).
//
// Why it cannot become a way out for the command:
//  - it connects to exactly one socket, through a directory descriptor opened before the command
//    existed (fchdir + a relative name); the directory is a read-only bind mount, so its entry
//    cannot be replaced, and renaming an ancestor does not change what the descriptor names;
//  - it is not dumpable (PR_SET_DUMPABLE 0): the command, with no capability, can neither
//    ptrace it nor open its /proc/PID/mem, so it cannot make the relay connect elsewhere;
//  - it runs under the always-on seccomp rules (no ptrace, mount, namespaces, ...);
//  - it is a child of the sandbox's PID 1 and dies with it, i.e. when the command has exited.
// The command itself gets the proxy-mode seccomp filter, which refuses every AF_UNIX socket, so
// it cannot connect to the bound socket or any other host socket directly.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

struct RelaySpec {
  std::uint16_t port = 0;   // listen on 127.0.0.1:port
  std::string socket_path;  // absolute path of the proxy's unix socket
};

// Parses a TCP port 1..65535.
Result<std::uint16_t> parse_port(const std::string& text);

// Checks `spec` (the socket exists and is a socket, reached without following a symlink in its
// last component), listens on 127.0.0.1:port, then forks the relay. Returns the relay's pid once
// it is listening, so a connection made right after this returns is served. Error names the
// step that failed; nothing is left running then.
Result<pid_t> start_relay(const RelaySpec& spec);

// Copies bytes both ways between two connected stream sockets until both directions have ended
// (end of stream is passed on as a shutdown(SHUT_WR)) or either fails. Blocks; used by each
// connection's process and by tests.
void pump(int a, int b);

}  // namespace sbx::stage2
