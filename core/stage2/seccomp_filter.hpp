// The dangerous-syscall filter sbx-stage2 installs before it runs the command (DESIGN.md
// "Linux specifics"). Built with libseccomp; every denial returns EPERM except clone3, which
// returns ENOSYS so that libc falls back to clone(), whose flags the filter can inspect.
//
// Always denied: ptrace, process_vm_readv/writev, io_uring_setup/enter/register, keyctl,
// add_key, request_key, bpf, perf_event_open, userfaultfd, ioctl(TIOCSTI), setns, mount,
// umount2, pivot_root, chroot and the new mount API (open_tree, move_mount, fsopen, fsconfig,
// fsmount, fspick, mount_setattr); unshare and clone with any namespace flag.
// Network kBlocked also denies socket() for every family (AF_UNIX included: that is how host
// unix sockets stay unreachable, see plugins/bwrap/README.md), socketpair() except AF_UNIX,
// connect, bind, listen, accept, accept4, sendmmsg, and sendto with a destination address.
// Network kProxy (network.mode proxy; the command reaches only the proxy's loopback port,
// enforced by bwrap's empty network namespace or by Landlock's TCP connect rule) allows
// socket() only for AF_INET/AF_INET6 stream sockets with protocol 0 or IPPROTO_TCP (no unix,
// netlink, packet, UDP, raw or MPTCP sockets: host unix sockets stay unreachable, and UDP is not
// covered by Landlock), socketpair() only for AF_UNIX, and connect(); it denies bind, listen,
// accept, accept4, sendmmsg, TCP Fast Open (MSG_FASTOPEN on sendto/sendmsg,
// TCP_FASTOPEN_CONNECT): a Fast Open connect is made by a send, not by connect().
// Syscalls of another architecture (e.g. i386 on x86_64) kill the process.
#pragma once

#include <string>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

enum class NetworkFilter { kBlocked, kOpen, kProxy };

// Parses "blocked" / "open" / "proxy".
Result<NetworkFilter> parse_network_filter(const std::string& word);

// Installs the filter on the calling thread (and everything it execs). Requires no_new_privs
// (set by the caller first). Error names the libseccomp step that failed.
Status install_filter(NetworkFilter network);

// The filter in libseccomp's pseudo-filter-code text form (for golden tests and debugging).
Result<std::string> export_filter_text(NetworkFilter network);

}  // namespace sbx::stage2
