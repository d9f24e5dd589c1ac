// See seccomp_filter.hpp for the rule list and why each group is there.
#include "seccomp_filter.hpp"

#include <fcntl.h>
#include <linux/kd.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "seccomp_export.hpp"
#include "seccomp_syscalls.hpp"

namespace sbx::stage2 {
namespace {

using FilterPtr = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

// Each: no kernel-attack-surface or sandbox-escape use for an agent's command. ptrace and
// process_vm_* reach other processes' memory; io_uring bypasses syscall filtering (e.g.
// IORING_OP_SOCKET, or IORING_OP_OPENAT with a set-user-ID mode); the keyring, bpf, perf and
// userfaultfd are classic kernel attack surface; setns, mount, the new mount API, pivot_root
// and chroot would rebuild the filesystem view. EPERM (not the table's ENOSYS): these exist,
// they are refused, and a program should not go looking for a fallback.
// clang-format off
constexpr const char* kAlwaysDenied[] = {
    "ptrace",       "process_vm_readv", "process_vm_writev", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "keyctl",        "add_key",
    "request_key",  "bpf",              "perf_event_open",   "userfaultfd",
    "setns",        "mount",            "umount2",           "pivot_root",
    "chroot",       "open_tree",        "move_mount",        "fsopen",
    "fsconfig",     "fsmount",          "fspick",            "mount_setattr",
};
// clang-format on

// Restricted network: no way to create or use a network endpoint.
constexpr const char* kBlockedNetworkDenied[] = {"socket", "connect", "bind",    "listen",
                                                 "accept", "accept4", "sendmmsg"};
// Proxy: no listening endpoint (allow_local_binding is not offered) and no batch sends.
constexpr const char* kProxyNetworkDenied[] = {"bind", "listen", "accept", "accept4", "sendmmsg"};

// personality() values allowed: Docker's (PER_LINUX, PER_LINUX32, UNAME26 alone and with
// PER_LINUX32, and the 0xffffffff query) plus ADDR_NO_RANDOMIZE alone and with PER_LINUX32,
// which ThreadSanitizer and `setarch -R` re-exec with: under no_new_privs nothing the command
// runs gains privileges, so a layout without ASLR weakens only the command's own processes.
// Not READ_IMPLIES_EXEC, MMAP_PAGE_ZERO and the rest (ENOSYS, the table's default).
constexpr scmp_datum_t kPersonalities[] = {0x0,     0x8,     0x20000,   0x20008,
                                           0x40000, 0x40008, 0xffffffff};

// New namespaces would give the command a fresh user namespace with full capabilities in it,
// the usual first step of kernel exploits; unshare(CLONE_FILES) and plain fork stay allowed.
constexpr scmp_datum_t kNamespaceFlags[] = {CLONE_NEWNS,    CLONE_NEWUSER, CLONE_NEWPID,
                                            CLONE_NEWNET,   CLONE_NEWUTS,  CLONE_NEWIPC,
                                            CLONE_NEWCGROUP};
constexpr scmp_datum_t kCloneNewTime = 0x00000080;  // CLONE_NEWTIME (unshare only)

// Terminal requests that put input into a terminal or re-route it, usable on a terminal the
// command inherited from the user's session: TIOCSTI pushes characters into the input queue
// (typed commands outside); TIOCLINUX pastes the console selection (and more); TIOCCONS
// redirects the system console to this terminal; TIOCSETD swaps the line discipline (which
// decides where input goes, and is old kernel attack surface); the KDSKB*/KDSETKEYCODE
// requests rewrite a virtual console's keymap and function-key strings, so the user's next
// keystrokes type the command's text. TIOCSPGRP (tcsetpgrp) makes another process group the
// terminal's foreground: where the command shares the caller's session (Landlock), it took the
// terminal from the agent and left it to its own dead group after the run, so the agent's next
// read stopped it with SIGTTIN (outside review, session 18); TIOCSCTTY makes a terminal the
// controlling terminal of a new session the command made. None is needed to drive a terminal
// normally (an interactive shell inside runs without job control, as under bwrap, whose
// sandbox has no controlling terminal at all).
constexpr scmp_datum_t kTerminalInjection[] = {TIOCSTI,      TIOCLINUX, TIOCCONS,   TIOCSETD,
                                               KDSKBENT,     KDSKBSENT, KDSKBDIACR, KDSKBDIACRUC,
                                               KDSETKEYCODE, TIOCSPGRP, TIOCSCTTY};

// The mode bits that make an executable run with its owner's or group's identity.
constexpr scmp_datum_t kSetIdBits[] = {S_ISUID, S_ISGID};
// Flags with which open() creates a file and therefore uses its mode argument (the kernel's
// WILL_CREATE: O_CREAT, or __O_TMPFILE, which is O_TMPFILE without O_DIRECTORY).
constexpr scmp_datum_t kCreatingOpenFlags[] = {O_CREAT, O_TMPFILE & ~O_DIRECTORY};
// Device node types: the command holds no CAP_MKNOD, so the kernel refuses them already; the
// rule keeps a device node out even if a capability leaked.
constexpr scmp_datum_t kDeviceTypes[] = {S_IFCHR, S_IFBLK};

constexpr scmp_datum_t kTcpFastopenConnect = 30;  // TCP_FASTOPEN_CONNECT (linux/tcp.h)
constexpr scmp_datum_t kAfVsock = 40;             // AF_VSOCK (linux/socket.h)

Status errno_status(int rc, const std::string& step) {
  if (rc == 0) return {};
  return Error{step + ": " + std::strerror(-rc)};
}

// The number of `name` on the native architecture, or -1 when there is none: a call of
// another architecture (libseccomp answers a negative pseudo number) or one this libseccomp
// does not know. Such a name cannot be called here by that name, so it is skipped; in the
// table that means ENOSYS (fail closed), and the argument rules skip it consistently.
int resolve(const char* name) {
  const int nr = seccomp_syscall_resolve_name(name);
  return nr < 0 ? -1 : nr;
}

Status add_rule(scmp_filter_ctx ctx, uint32_t action, const char* name, int nr,
                std::span<const scmp_arg_cmp> cmp = {}) {
  return errno_status(
      seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(cmp.size()), cmp.data()),
      std::string("rule for ") + name);
}

// A call of the argument rules: EPERM when `cmp` all match; skipped where the call does not
// exist (resolve()), exactly as the table skips it.
Status refuse_if(scmp_filter_ctx ctx, const char* name, std::span<const scmp_arg_cmp> cmp) {
  const int nr = resolve(name);
  if (nr < 0) return {};
  return add_rule(ctx, SCMP_ACT_ERRNO(EPERM), name, nr, cmp);
}

// ---- Filter 1, the syscall table: ALLOW what is listed, EPERM what is refused, ENOSYS else.

// Every call a network mode refuses outright, plus the always-denied ones.
std::vector<const char*> refused_calls(NetworkFilter network) {
  std::vector<const char*> names(std::begin(kAlwaysDenied), std::end(kAlwaysDenied));
  if (network == NetworkFilter::kBlocked)
    names.insert(names.end(), std::begin(kBlockedNetworkDenied), std::end(kBlockedNetworkDenied));
  // With the metadata guard socket() passes the table: the argument rules refuse every socket
  // but a unix datagram one, which the guard's program notifies (a table EPERM would win over
  // the notification: seccomp(2), the most restrictive action of all programs is taken).
  if (network == NetworkFilter::kBlockedGuarded) {
    for (const char* name : kBlockedNetworkDenied) {
      if (std::strcmp(name, "socket") != 0) names.push_back(name);
    }
  }
  if (network == NetworkFilter::kProxy || network == NetworkFilter::kProxyGuarded)
    names.insert(names.end(), std::begin(kProxyNetworkDenied), std::end(kProxyNetworkDenied));
  return names;
}

bool contains(const std::vector<const char*>& names, const char* name) {
  for (const char* n : names) {
    if (std::strcmp(n, name) == 0) return true;
  }
  return false;
}

Status add_refusals(scmp_filter_ctx ctx, const std::vector<const char*>& refused) {
  for (const char* name : refused) {
    const int nr = seccomp_syscall_resolve_name(name);
    // Each of these must keep its EPERM: a libseccomp that does not know one is refused.
    if (nr == __NR_SCMP_ERROR) return Error{std::string("unknown syscall ") + name};
    if (nr < 0) continue;  // not a call of this architecture
    Status s = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), name, nr);
    if (!s.ok()) return s;
  }
  return {};
}

Status allow_group(scmp_filter_ctx ctx, std::span<const char* const> group,
                   const std::vector<const char*>& refused) {
  for (const char* name : group) {
    const int nr = resolve(name);
    if (nr < 0 || contains(refused, name)) continue;
    Status s = add_rule(ctx, SCMP_ACT_ALLOW, name, nr);
    if (!s.ok()) return s;
  }
  return {};
}

Status add_table_rules(scmp_filter_ctx ctx, NetworkFilter network) {
  const std::vector<const char*> refused = refused_calls(network);
  Status s = add_refusals(ctx, refused);
  for (std::span<const char* const> group : syscalls::kAllGroups) {
    if (s.ok()) s = allow_group(ctx, group, refused);
  }
  const int personality = resolve("personality");
  for (scmp_datum_t value : kPersonalities) {
    const scmp_arg_cmp cmp[] = {SCMP_A0(SCMP_CMP_EQ, value)};
    if (s.ok()) s = add_rule(ctx, SCMP_ACT_ALLOW, "personality", personality, cmp);
  }
  return s;
}

// ---- Filter 2, the argument rules: EPERM for some argument values of allowed calls.

Status add_namespace_rules(scmp_filter_ctx ctx) {
  Status s;
  for (scmp_datum_t flag : kNamespaceFlags) {
    const scmp_arg_cmp cmp[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)};
    if (s.ok()) s = refuse_if(ctx, "unshare", cmp);
    if (s.ok()) s = refuse_if(ctx, "clone", cmp);
  }
  const scmp_arg_cmp newtime[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneNewTime, kCloneNewTime)};
  if (s.ok()) s = refuse_if(ctx, "unshare", newtime);
  return s;
}

Status add_terminal_rules(scmp_filter_ctx ctx) {
  Status s;
  for (scmp_datum_t request : kTerminalInjection) {
    // The kernel reads the request as 32 bits; compare only those.
    const scmp_arg_cmp cmp[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request)};
    if (s.ok()) s = refuse_if(ctx, "ioctl", cmp);
  }
  return s;
}

// File leases: fcntl(F_SETLEASE) needs only a descriptor of a file the caller owns, a read-only
// one for a read lease (fs/locks.c generic_setlease(): the file's owner, or CAP_LEASE), and then
// every open() of that file for writing elsewhere on the host waits until the holder lets go or
// /proc/sys/fs/lease-break-time passes (fs/locks.c __break_lease()), after which the command may
// take it again: as root, on any root-owned file it can read (/etc/passwd). Leases serve file
// servers (Samba); nothing an agent runs needs one, so F_SETLEASE is refused in every mode and
// on every file. The kernel reads the command as unsigned int (fs/fcntl.c, SYSCALL_DEFINE3(fcntl)),
// so only its low 32 bits are compared. Kept: F_GETLEASE (reads); F_NOTIFY (dnotify, needs a
// directory the command can open, tells only what inotify would); F_SETOWN/F_SETSIG (the signal
// goes only where kill() could, fs/fcntl.c sigio_perm(), under Landlock's signal scope
// hook_file_send_sigiotask or bwrap's pid namespace); the advisory locks (F_SETLK*, F_OFD_*,
// flock): sqlite, git, npm and pip take them, and a lock on a readable host file holds other
// lockers of that file only until the run ends (plugins/*/README.md, "not covered").
Status add_lease_rules(scmp_filter_ctx ctx) {
  const scmp_arg_cmp set_lease[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, F_SETLEASE)};
  Status s = refuse_if(ctx, "fcntl", set_lease);
  if (s.ok()) s = refuse_if(ctx, "fcntl64", set_lease);
  return s;
}

// A set-user-ID or set-group-ID file written by the command would run with its owner's
// identity for whoever executes it on the host later (as root: any user becomes root).
Status add_set_id_rules(scmp_filter_ctx ctx) {
  struct ModeArg {
    const char* name;
    unsigned index;
  };
  // Calls whose mode argument is the file's new mode, whatever the other arguments are.
  constexpr ModeArg kModeCalls[] = {{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
                                    {"creat", 1}, {"mknod", 1},  {"mknodat", 2}};
  // open/openat: the mode counts only when the flags create a file.
  struct OpenArgs {
    const char* name;
    unsigned flags;
    unsigned mode;
  };
  constexpr OpenArgs kOpenCalls[] = {{"open", 1, 2}, {"openat", 2, 3}};
  Status s;
  for (scmp_datum_t bit : kSetIdBits) {
    for (const ModeArg& call : kModeCalls) {
      const scmp_arg_cmp cmp[] = {{call.index, SCMP_CMP_MASKED_EQ, bit, bit}};
      if (s.ok()) s = refuse_if(ctx, call.name, cmp);
    }
    for (const OpenArgs& call : kOpenCalls) {
      for (scmp_datum_t create : kCreatingOpenFlags) {
        const scmp_arg_cmp cmp[] = {{call.flags, SCMP_CMP_MASKED_EQ, create, create},
                                    {call.mode, SCMP_CMP_MASKED_EQ, bit, bit}};
        if (s.ok()) s = refuse_if(ctx, call.name, cmp);
      }
    }
  }
  return s;
}

Status add_device_node_rules(scmp_filter_ctx ctx) {
  Status s;
  for (scmp_datum_t type : kDeviceTypes) {
    const scmp_arg_cmp mknod[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, S_IFMT, type)};
    const scmp_arg_cmp mknodat[] = {SCMP_A2(SCMP_CMP_MASKED_EQ, S_IFMT, type)};
    if (s.ok()) s = refuse_if(ctx, "mknod", mknod);
    if (s.ok()) s = refuse_if(ctx, "mknodat", mknodat);
  }
  return s;
}

// The unix socket types the command may hold: stream and seqpacket, an allow-list (a type the
// kernel adds later stays refused). A unix datagram socket may name a destination path on every
// send (sendmsg's msg_name, which the filter cannot read, sendmmsg's, or sendto's) or connect to
// one, and the kernel then delivers to whatever datagram socket is bound at that path, connected
// pair or not: a host datagram socket visible through the filesystem (the journal's, a notify
// socket) would be reachable. SOCK_RAW is a datagram socket too: net/unix/af_unix.c
// unix_create() maps SOCK_RAW to SOCK_DGRAM, so comparing with SOCK_DGRAM alone let it through.
// Stream and seqpacket sockets refuse (stream: EOPNOTSUPP/EISCONN) or ignore (seqpacket:
// unix_seqpacket_sendmsg() clears msg_namelen) a destination on a send, and a connected one
// cannot be connected again (unix_stream_connect(): EISCONN).
constexpr bool allowed_unix_type(scmp_datum_t type) {
  return type == SOCK_STREAM || type == SOCK_SEQPACKET;
}

// socketpair(): only AF_UNIX (the NE comparison covers all 64 bits, so a family with upper bits
// set, which the kernel would read as its low 32, is refused too), of an allowed unix type.
Status add_socketpair_family_rule(scmp_filter_ctx ctx) {
  const scmp_arg_cmp not_unix[] = {SCMP_A0(SCMP_CMP_NE, AF_UNIX)};
  return refuse_if(ctx, "socketpair", not_unix);
}

Status add_socketpair_rules(scmp_filter_ctx ctx) {
  Status s = add_socketpair_family_rule(ctx);
  for (scmp_datum_t type = 0; type <= 0xf; ++type) {
    if (allowed_unix_type(type)) continue;
    const scmp_arg_cmp cmp[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type)};
    if (s.ok()) s = refuse_if(ctx, "socketpair", cmp);
  }
  return s;
}

// Restricted network (socket() itself is refused by the table).
Status add_blocked_network_rules(scmp_filter_ctx ctx) {
  Status s = add_socketpair_rules(ctx);
  // send()/write() on an already connected socket pass; naming a destination does not.
  const scmp_arg_cmp has_dest[] = {SCMP_A4(SCMP_CMP_NE, 0)};
  if (s.ok()) s = refuse_if(ctx, "sendto", has_dest);
  return s;
}

// Landlock with the metadata guard (metadata_filter.hpp), whose program notifies socket() and
// socketpair() of AF_UNIX with any type but stream and seqpacket: its emulator refuses a
// datagram socket() and names it in the run's report, and answers a datagram socketpair() with
// a seqpacket pair (metadata_notify.hpp). Here only what the guard does not take is refused:
// every other family, and (socket() only) unix stream and seqpacket sockets, which blocked
// mode refuses with the rest of socket(). The guard refuses any unix type it does not know.
Status add_guarded_unix_rules(scmp_filter_ctx ctx, bool refuse_unix_stream_sockets) {
  Status s = add_socketpair_family_rule(ctx);
  if (!refuse_unix_stream_sockets) return s;
  for (scmp_datum_t type : {scmp_datum_t{SOCK_STREAM}, scmp_datum_t{SOCK_SEQPACKET}}) {
    const scmp_arg_cmp cmp[] = {SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
                                SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type)};
    if (s.ok()) s = refuse_if(ctx, "socket", cmp);
  }
  return s;
}

// kBlockedGuarded: kBlocked, but socket(AF_UNIX, datagram type) is left to the guard.
Status add_blocked_guarded_rules(scmp_filter_ctx ctx) {
  // The NE comparison covers all 64 bits: a family with upper bits set is refused here.
  const scmp_arg_cmp not_unix[] = {SCMP_A0(SCMP_CMP_NE, AF_UNIX)};
  Status s = refuse_if(ctx, "socket", not_unix);
  if (s.ok()) s = add_guarded_unix_rules(ctx, true);
  const scmp_arg_cmp has_dest[] = {SCMP_A4(SCMP_CMP_NE, 0)};
  if (s.ok()) s = refuse_if(ctx, "sendto", has_dest);
  return s;
}

// Proxy mode: only TCP over IPv4/IPv6 may be created. Each rule below names one way a
// socket() call falls outside that (libseccomp compares one argument once per rule, so the
// complement is spelled out); any upper 32 bits set in an argument also lands in a ">=" rule.
Status add_proxy_socket_rules(scmp_filter_ctx ctx) {
  std::vector<scmp_arg_cmp> denied = {SCMP_A0(SCMP_CMP_LE, AF_INET - 1),
                                      SCMP_A0(SCMP_CMP_GE, AF_INET6 + 1)};
  for (scmp_datum_t family = AF_INET + 1; family < AF_INET6; ++family)
    denied.push_back(SCMP_A0(SCMP_CMP_EQ, family));
  // The type without SOCK_NONBLOCK/SOCK_CLOEXEC (low 4 bits) must be SOCK_STREAM.
  for (scmp_datum_t type = 0; type <= 0xf; ++type) {
    if (type != SOCK_STREAM) denied.push_back(SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
  }
  // Protocol 0 (default TCP) or IPPROTO_TCP; not e.g. IPPROTO_MPTCP (262).
  for (scmp_datum_t protocol = 1; protocol < IPPROTO_TCP; ++protocol)
    denied.push_back(SCMP_A2(SCMP_CMP_EQ, protocol));
  denied.push_back(SCMP_A2(SCMP_CMP_GE, IPPROTO_TCP + 1));
  Status s;
  for (const scmp_arg_cmp& cmp : denied) {
    if (s.ok()) s = refuse_if(ctx, "socket", {&cmp, 1});
  }
  return s;
}

// kProxyGuarded's socket() rules: kProxy's, each paired with an inet family, and every other
// family but AF_UNIX (whose datagram types the guard takes) refused whole.
Status add_proxy_guarded_socket_rules(scmp_filter_ctx ctx) {
  std::vector<scmp_arg_cmp> families = {SCMP_A0(SCMP_CMP_EQ, AF_UNSPEC),
                                        SCMP_A0(SCMP_CMP_GE, AF_INET6 + 1)};
  for (scmp_datum_t family = AF_INET + 1; family < AF_INET6; ++family)
    families.push_back(SCMP_A0(SCMP_CMP_EQ, family));
  Status s;
  for (const scmp_arg_cmp& cmp : families) {
    if (s.ok()) s = refuse_if(ctx, "socket", {&cmp, 1});
  }
  std::vector<scmp_arg_cmp> denied;
  for (scmp_datum_t type = 0; type <= 0xf; ++type) {
    if (type != SOCK_STREAM) denied.push_back(SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
  }
  for (scmp_datum_t protocol = 1; protocol < IPPROTO_TCP; ++protocol)
    denied.push_back(SCMP_A2(SCMP_CMP_EQ, protocol));
  denied.push_back(SCMP_A2(SCMP_CMP_GE, IPPROTO_TCP + 1));
  for (scmp_datum_t family : {scmp_datum_t{AF_INET}, scmp_datum_t{AF_INET6}}) {
    for (const scmp_arg_cmp& cmp : denied) {
      const scmp_arg_cmp pair[] = {SCMP_A0(SCMP_CMP_EQ, family), cmp};
      if (s.ok()) s = refuse_if(ctx, "socket", pair);
    }
  }
  if (s.ok()) s = add_guarded_unix_rules(ctx, true);
  return s;
}

Status add_proxy_rules(scmp_filter_ctx ctx, bool guarded) {
  Status s = guarded ? add_proxy_guarded_socket_rules(ctx) : add_proxy_socket_rules(ctx);
  if (s.ok() && !guarded) s = add_socketpair_rules(ctx);
  // TCP Fast Open connects from inside a send, where Landlock's connect check does not look.
  const scmp_arg_cmp sendto_fastopen[] = {SCMP_A3(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN)};
  if (s.ok()) s = refuse_if(ctx, "sendto", sendto_fastopen);
  const scmp_arg_cmp sendmsg_fastopen[] = {SCMP_A2(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN)};
  if (s.ok()) s = refuse_if(ctx, "sendmsg", sendmsg_fastopen);
  const scmp_arg_cmp fastopen_connect[] = {SCMP_A1(SCMP_CMP_EQ, IPPROTO_TCP),
                                           SCMP_A2(SCMP_CMP_EQ, kTcpFastopenConnect)};
  if (s.ok()) s = refuse_if(ctx, "setsockopt", fastopen_connect);
  return s;
}

// Private network namespace (bwrap's --unshare-net: restricted, or proxy with the relay): the
// namespace's only interface is its own loopback, which is not the host's, so TCP and UDP over
// IPv4/IPv6 may bind, listen, accept, connect and send anywhere: nothing beyond the namespace
// exists to reach. Every other socket stays refused: AF_UNIX because a host pathname socket is
// reachable through the bind-mounted filesystem whatever the network namespace; netlink (even
// route netlink of this namespace: nothing the command needs, and kernel attack surface),
// packet, raw, vsock and the rest because they are not the loopback TCP/UDP this mode offers.
// The inet socket types and protocols kPrivate refuses (each one comparison).
std::vector<scmp_arg_cmp> inet_type_and_protocol_refusals() {
  std::vector<scmp_arg_cmp> denied;
  // The type without SOCK_NONBLOCK/SOCK_CLOEXEC (low 4 bits): SOCK_STREAM or SOCK_DGRAM.
  for (scmp_datum_t type = 0; type <= 0xf; ++type) {
    if (type != SOCK_STREAM && type != SOCK_DGRAM)
      denied.push_back(SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
  }
  // Protocol 0 (the type's default), IPPROTO_TCP or IPPROTO_UDP; not ICMP ping sockets,
  // UDP-Lite, SCTP or MPTCP: less kernel code for the same loopback service.
  for (scmp_datum_t protocol = 1; protocol < IPPROTO_UDP; ++protocol) {
    if (protocol != IPPROTO_TCP) denied.push_back(SCMP_A2(SCMP_CMP_EQ, protocol));
  }
  denied.push_back(SCMP_A2(SCMP_CMP_GE, IPPROTO_UDP + 1));
  return denied;
}

Status add_private_socket_rules(scmp_filter_ctx ctx) {
  std::vector<scmp_arg_cmp> denied = {SCMP_A0(SCMP_CMP_LE, AF_INET - 1),
                                      SCMP_A0(SCMP_CMP_GE, AF_INET6 + 1)};
  for (scmp_datum_t family = AF_INET + 1; family < AF_INET6; ++family)
    denied.push_back(SCMP_A0(SCMP_CMP_EQ, family));
  for (const scmp_arg_cmp& cmp : inet_type_and_protocol_refusals()) denied.push_back(cmp);
  Status s;
  for (const scmp_arg_cmp& cmp : denied) {
    if (s.ok()) s = refuse_if(ctx, "socket", {&cmp, 1});
  }
  if (s.ok()) s = add_socketpair_rules(ctx);
  return s;
}

// kPrivate with bwrap's unix-socket supervisor: the supervisor decides which unix socket a
// connect() reaches (host pathname sockets only when listed) and performs every bind, so unix
// sockets may be created here. Unix datagram sockets are the supervisor's filter's: it refuses
// socket() of every unix type but stream and seqpacket (and reports it) and hands datagram
// socketpair() to the supervisor, which gives the command a pair that cannot be re-addressed
// (plugins/bwrap/include/sbx/bwrap/unix_supervisor.hpp). Each rule pairs the family with one
// refused property, so the inet rules of kPrivate do not touch AF_UNIX and the other way round.
Status add_private_supervised_socket_rules(scmp_filter_ctx ctx) {
  std::vector<scmp_arg_cmp> families = {SCMP_A0(SCMP_CMP_EQ, AF_UNSPEC),
                                        SCMP_A0(SCMP_CMP_GE, AF_INET6 + 1)};
  for (scmp_datum_t family = AF_INET + 1; family < AF_INET6; ++family)
    families.push_back(SCMP_A0(SCMP_CMP_EQ, family));
  Status s;
  for (const scmp_arg_cmp& cmp : families) {
    if (s.ok()) s = refuse_if(ctx, "socket", {&cmp, 1});
  }
  for (scmp_datum_t family : {scmp_datum_t{AF_INET}, scmp_datum_t{AF_INET6}}) {
    for (const scmp_arg_cmp& cmp : inet_type_and_protocol_refusals()) {
      const scmp_arg_cmp pair[] = {SCMP_A0(SCMP_CMP_EQ, family), cmp};
      if (s.ok()) s = refuse_if(ctx, "socket", pair);
    }
  }
  // Protocol 0 or PF_UNIX (1), the only ones the kernel takes for AF_UNIX.
  const scmp_arg_cmp unix_protocol[] = {SCMP_A0(SCMP_CMP_EQ, AF_UNIX), SCMP_A2(SCMP_CMP_GE, 2)};
  if (s.ok()) s = refuse_if(ctx, "socket", unix_protocol);
  // Datagram socketpairs are the supervisor's (its filter hands them to it, which gives the
  // command a pair that cannot be re-addressed): only the family is refused here.
  if (s.ok()) s = add_socketpair_family_rule(ctx);
  return s;
}

// Open network: every socket but AF_VSOCK, which reaches the hypervisor host (a virtual
// machine's host services) rather than the network; Docker refuses it too. The kernel reads
// the family as an int (its low 32 bits), so a family with upper bits set, which the EQ
// comparison would not match, is refused whole. Unix datagram sockets are the unix-socket
// supervisor's (bwrap, the only backend that runs this mode: Landlock refuses an enabled
// network): its filter refuses socket() and reports it, and hands socketpair() to it.
Status add_open_network_rules(scmp_filter_ctx ctx) {
  const scmp_arg_cmp vsock[] = {SCMP_A0(SCMP_CMP_EQ, kAfVsock)};
  Status s = refuse_if(ctx, "socket", vsock);
  const scmp_arg_cmp wide_family[] = {SCMP_A0(SCMP_CMP_GT, 0xffffffffu)};
  if (s.ok()) s = refuse_if(ctx, "socket", wide_family);
  if (s.ok()) s = refuse_if(ctx, "socketpair", wide_family);
  return s;
}

Status add_argument_rules(scmp_filter_ctx ctx, NetworkFilter network) {
  Status s = add_namespace_rules(ctx);
  if (s.ok()) s = add_terminal_rules(ctx);
  if (s.ok()) s = add_lease_rules(ctx);
  if (s.ok()) s = add_set_id_rules(ctx);
  if (s.ok()) s = add_device_node_rules(ctx);
  if (s.ok() && network == NetworkFilter::kBlocked) s = add_blocked_network_rules(ctx);
  if (s.ok() && network == NetworkFilter::kBlockedGuarded) s = add_blocked_guarded_rules(ctx);
  if (s.ok() && network == NetworkFilter::kProxy) s = add_proxy_rules(ctx, false);
  if (s.ok() && network == NetworkFilter::kProxyGuarded) s = add_proxy_rules(ctx, true);
  if (s.ok() && network == NetworkFilter::kOpen) s = add_open_network_rules(ctx);
  if (s.ok() && network == NetworkFilter::kPrivate) s = add_private_socket_rules(ctx);
  if (s.ok() && network == NetworkFilter::kPrivateUnixSupervised)
    s = add_private_supervised_socket_rules(ctx);
  return s;
}

// Both filters kill a process that makes a call of another architecture (e.g. i386 on x86_64):
// its numbers would mean other calls.
Result<FilterPtr> new_filter(uint32_t default_action) {
  FilterPtr ctx(seccomp_init(default_action), seccomp_release);
  if (!ctx) return Error{"seccomp_init failed"};
  Status s = errno_status(
      seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "badarch");
  if (!s.ok()) return s.failure();
  return ctx;
}

Result<FilterPtr> build_table(NetworkFilter network) {
  Result<FilterPtr> ctx = new_filter(SCMP_ACT_ERRNO(ENOSYS));
  if (!ctx.ok()) return ctx;
  // A binary search over ~350 numbers instead of a linear scan on every call.
  Status s = errno_status(seccomp_attr_set(ctx->get(), SCMP_FLTATR_CTL_OPTIMIZE, 2), "optimize");
  if (s.ok()) s = add_table_rules(ctx->get(), network);
  if (!s.ok()) return s.failure();
  return ctx;
}

Result<FilterPtr> build_argument_rules(NetworkFilter network) {
  Result<FilterPtr> ctx = new_filter(SCMP_ACT_ALLOW);
  if (!ctx.ok()) return ctx;
  Status s = add_argument_rules(ctx->get(), network);
  if (!s.ok()) return s.failure();
  return ctx;
}

}  // namespace

// seccomp.h's signature for seccomp_export_bpf/_pfc (see seccomp_export.hpp).
// NOLINTBEGIN(misc-misplaced-const)
Result<std::string> export_program(scmp_filter_ctx ctx,
                                   int (*exporter)(const scmp_filter_ctx, int)) {
  // NOLINTEND(misc-misplaced-const)
  std::FILE* tmp = std::tmpfile();
  if (tmp == nullptr) return Error{"tmpfile failed"};
  const int rc = exporter(ctx, fileno(tmp));
  std::string bytes;
  if (rc == 0) {
    std::rewind(tmp);
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) bytes.append(buf, n);
  }
  std::fclose(tmp);
  if (rc != 0) return Error{std::string("seccomp export: ") + std::strerror(-rc)};
  return bytes;
}

Result<NetworkFilter> parse_network_filter(const std::string& word) {
  if (word == "blocked") return NetworkFilter::kBlocked;
  if (word == "open") return NetworkFilter::kOpen;
  if (word == "proxy") return NetworkFilter::kProxy;
  if (word == "private") return NetworkFilter::kPrivate;
  return Error{"--net expects 'blocked', 'open', 'proxy' or 'private', got '" + word + "'"};
}

Status install_filter(NetworkFilter network) {
  // Both are built before either is loaded, so a build failure leaves the process unfiltered
  // and the caller refuses to run the command, rather than running it half-filtered.
  Result<FilterPtr> table = build_table(network);
  if (!table.ok()) return table.failure();
  Result<FilterPtr> rules = build_argument_rules(network);
  if (!rules.ok()) return rules.failure();
  Status s = errno_status(seccomp_load(table->get()), "seccomp_load (syscall table)");
  if (s.ok()) s = errno_status(seccomp_load(rules->get()), "seccomp_load (argument rules)");
  return s;
}

Result<std::string> export_filter_text(NetworkFilter network) {
  Result<FilterPtr> table = build_table(network);
  if (!table.ok()) return table.failure();
  Result<FilterPtr> rules = build_argument_rules(network);
  if (!rules.ok()) return rules.failure();
  Result<std::string> table_text = export_program(table->get(), seccomp_export_pfc);
  if (!table_text.ok()) return table_text;
  Result<std::string> rules_text = export_program(rules->get(), seccomp_export_pfc);
  if (!rules_text.ok()) return rules_text;
  return "# sbx-stage2 filter 1 of 2: the syscall table (default ENOSYS)\n" + *table_text +
         "# sbx-stage2 filter 2 of 2: the argument rules (default ALLOW)\n" + *rules_text;
}

Result<std::vector<std::string>> export_filter_bpf(NetworkFilter network) {
  Result<FilterPtr> table = build_table(network);
  if (!table.ok()) return table.failure();
  Result<FilterPtr> rules = build_argument_rules(network);
  if (!rules.ok()) return rules.failure();
  Result<std::string> table_bytes = export_program(table->get(), seccomp_export_bpf);
  if (!table_bytes.ok()) return table_bytes.failure();
  Result<std::string> rules_bytes = export_program(rules->get(), seccomp_export_bpf);
  if (!rules_bytes.ok()) return rules_bytes.failure();
  return std::vector<std::string>{std::move(*table_bytes), std::move(*rules_bytes)};
}

}  // namespace sbx::stage2
