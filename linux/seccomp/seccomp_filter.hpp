// The seccomp filter sbx-stage2 installs before it runs the command, built with libseccomp for
// the native architecture. It is two BPF programs, both loaded; the kernel runs both on every
// call and the most restrictive answer wins (an error over ALLOW), so each program stays one
// simple shape:
//
// 1. The syscall table (default ENOSYS). An allow-list anchored on Docker's default profile,
//    grouped and commented in seccomp_syscalls.hpp (including where it differs from Docker).
//    Anything not listed fails with ENOSYS so programs fall back as on an older kernel, and a call
//    added by a later kernel (open_tree_attr, file_setattr...) stays closed. Notably not listed:
//    clone3 (its flags are in memory the filter cannot read; libc falls back to clone(), whose
//    flags it can), openat2 (its mode is in a struct the filter cannot read; libc and programs fall
//    back to openat()), personality() other than Docker's values and ADDR_NO_RANDOMIZE. Refused
//    with EPERM: ptrace, process_vm_readv/writev, io_uring_setup/enter/register, keyctl, add_key,
//    request_key, bpf, perf_event_open, userfaultfd, setns, mount, umount2, pivot_root, chroot and
//    the new mount API (open_tree, move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr);
//    with network kBlocked also socket() for every family (AF_UNIX included: that is how host unix
//    sockets stay unreachable, see plugins/bwrap/README.md), connect, bind, listen, accept, accept4
//    and sendmmsg; with kProxy bind, listen, accept, accept4 and sendmmsg. execve/execveat and
//    seccomp(2) (any flags: a filter added later, e.g. a user-notification filter, can only
//    restrict further) are allowed.
// 2. The argument rules (default ALLOW; every rule EPERM, only on calls the table allows):
//    - unshare and clone with any namespace flag;
//    - ioctl TIOCSTI, TIOCLINUX, TIOCCONS, TIOCSETD, KDSKBENT, KDSKBSENT, KDSKBDIACR,
//      KDSKBDIACRUC, KDSETKEYCODE, TIOCSPGRP, TIOCSCTTY: requests that inject input into, or
//      re-route, a terminal the command inherited (TIOCSPGRP: its foreground process group);
//    - set-user-ID/set-group-ID bits: chmod, fchmod, fchmodat, fchmodat2 with S_ISUID or
//      S_ISGID in the mode; open/openat with O_CREAT or O_TMPFILE and such a mode; creat,
//      mknod, mknodat with such a mode; mknod/mknodat of character or block devices. mkdir is
//      not concerned: the kernel drops S_ISUID/S_ISGID from mkdir's mode, a directory gets
//      S_ISGID only by inheriting it from its parent, and neither bit on a directory runs
//      anything with another identity. Limit: the filter reads registers, never memory, so a
//      mode passed in memory cannot be checked; that is why openat2 answers ENOSYS and io_uring
//      is refused;
//    - kBlocked, kProxy, kPrivate: socketpair() except AF_UNIX stream/seqpacket pairs, an
//      allow-list (a unix datagram socket can send to any bound path named in sendmsg, host
//      sockets included; SOCK_RAW is one too: unix_create() maps it to SOCK_DGRAM);
//    - kBlocked: sendto with a destination address;
//    - kProxy (network.mode proxy in Landlock mode; the command reaches only the proxy's
//      loopback port, enforced by Landlock's TCP connect rule; under bwrap proxy mode gets
//      kPrivate, its namespace's only way out being the relay): socket()
//      other than AF_INET/AF_INET6 stream sockets with protocol 0 or IPPROTO_TCP (no unix,
//      netlink, packet, UDP, raw or MPTCP sockets: host unix sockets stay unreachable, and UDP
//      is not covered by Landlock), socketpair() except AF_UNIX, TCP Fast Open (MSG_FASTOPEN on
//      sendto/sendmsg, TCP_FASTOPEN_CONNECT): a Fast Open connect is made by a send, not by
//      connect();
//    - kPrivate (a private network namespace whose only interface is its own loopback: bwrap's
//      --unshare-net, network restricted, or proxy with stage 2's relay): socket() other than
//      AF_INET/AF_INET6 stream or datagram sockets with protocol 0, IPPROTO_TCP or IPPROTO_UDP
//      (no unix, netlink, packet, raw, ping, SCTP or MPTCP sockets), socketpair() except
//      AF_UNIX. bind, listen, accept, connect and sends with a destination are allowed: the
//      namespace's loopback is the sandbox's own, not the host's. Never for the Landlock
//      backend, which shares the host's network namespace;
//    - kPrivateUnixSupervised (kPrivate under bwrap's unix-socket supervisor,
//      plugins/bwrap/include/sbx/bwrap/unix_supervisor.hpp, which decides every connect and
//      bind and takes unix datagram sockets itself): as kPrivate, plus AF_UNIX sockets with
//      protocol 0 or 1 and AF_UNIX socketpairs of any type: the supervisor's filter refuses
//      unix datagram socket()s and turns datagram socketpair()s into seqpacket pairs;
//    - kOpen (bwrap only, under the same supervisor): socket(AF_VSOCK) (the hypervisor host,
//      not the network; Docker refuses it too), and socket()/socketpair() whose family has
//      upper bits set (the kernel reads an int, so they would slip past the EQ comparison).
//    - kBlockedGuarded, kProxyGuarded (Landlock with the metadata guard, metadata_filter.hpp):
//      as kBlocked and kProxy, except that socket() and socketpair() of AF_UNIX with a type
//      other than stream and seqpacket pass here, to be notified by the guard's program (a
//      refusal here would win over the notification, seccomp(2)): its emulator refuses and
//      reports a datagram socket() and answers a datagram socketpair() with a seqpacket pair
//      (metadata_notify.hpp). kBlockedGuarded's table allows socket(), its rules refuse every
//      socket() but AF_UNIX of a non-stream type.
// Calls of another architecture (e.g. i386 or x32 on x86_64) kill the process.
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

enum class NetworkFilter {
  kBlocked,
  kOpen,
  kProxy,
  kPrivate,
  kPrivateUnixSupervised,
  kBlockedGuarded,
  kProxyGuarded
};

// The variant of `network` for a Landlock run with the metadata guard: kBlocked and kProxy
// become kBlockedGuarded and kProxyGuarded; every other mode is returned as it is.
constexpr NetworkFilter guarded_variant(NetworkFilter network) {
  if (network == NetworkFilter::kBlocked) return NetworkFilter::kBlockedGuarded;
  if (network == NetworkFilter::kProxy) return NetworkFilter::kProxyGuarded;
  return network;
}

// Parses "blocked" / "open" / "proxy" / "private".
Result<NetworkFilter> parse_network_filter(const std::string& word);

// Installs both programs on the calling thread (and everything it execs). Requires
// no_new_privs (set by the caller first). Error names the libseccomp step that failed; the
// caller must then not run the command.
Status install_filter(NetworkFilter network);

// Both programs as the kernel takes them (struct sock_filter arrays, native byte order), table
// first: exactly what install_filter loads, in the same order. For the build-time generator of
// the precompiled programs (seccomp_programs.hpp), which writes the table in its compact form
// proven equivalent to this one (bpf_table.hpp), and its tests.
Result<std::vector<std::string>> export_filter_bpf(NetworkFilter network);

// Both programs in libseccomp's pseudo-filter-code text form, table first (for golden tests
// and debugging).
Result<std::string> export_filter_text(NetworkFilter network);

}  // namespace sbx::stage2
