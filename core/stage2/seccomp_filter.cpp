// See seccomp_filter.hpp for the rule list and why each group is there.
#include "seccomp_filter.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace sbx::stage2 {
namespace {

using FilterPtr = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

// Each: no kernel-attack-surface or sandbox-escape use for an agent's command. ptrace and
// process_vm_* reach other processes' memory; io_uring bypasses syscall filtering (e.g.
// IORING_OP_SOCKET); the keyring, bpf, perf and userfaultfd are classic kernel attack surface;
// setns, mount, the new mount API, pivot_root and chroot would rebuild the filesystem view.
constexpr const char* kAlwaysDenied[] = {
    "ptrace",       "process_vm_readv", "process_vm_writev", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "keyctl",        "add_key",
    "request_key",  "bpf",              "perf_event_open",   "userfaultfd",
    "setns",        "mount",            "umount2",           "pivot_root",
    "chroot",       "open_tree",        "move_mount",        "fsopen",
    "fsconfig",     "fsmount",          "fspick",            "mount_setattr",
};

// New namespaces would give the command a fresh user namespace with full capabilities in it,
// the usual first step of kernel exploits; unshare(CLONE_FILES) and plain fork stay allowed.
constexpr scmp_datum_t kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,
                                            CLONE_NEWNET, CLONE_NEWUTS,  CLONE_NEWIPC,
                                            CLONE_NEWCGROUP};
constexpr scmp_datum_t kCloneNewTime = 0x00000080;  // CLONE_NEWTIME (unshare only)

// Restricted network: no way to create or use a network endpoint.
constexpr const char* kNetworkDenied[] = {"connect", "bind", "listen", "accept", "accept4",
                                          "sendmmsg"};

constexpr scmp_datum_t kTcpFastopenConnect = 30;  // TCP_FASTOPEN_CONNECT (linux/tcp.h)

Status errno_status(int rc, const std::string& step) {
  if (rc == 0) return {};
  return Error{step + ": " + std::strerror(-rc)};
}

Status deny(scmp_filter_ctx ctx, const char* name, unsigned count = 0,
            const scmp_arg_cmp* cmp = nullptr, int err = EPERM) {
  const int nr = seccomp_syscall_resolve_name(name);
  // A syscall this libseccomp does not know cannot be named in the filter; fail closed.
  if (nr == __NR_SCMP_ERROR) return Error{std::string("unknown syscall ") + name};
  return errno_status(seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(static_cast<uint32_t>(err)),
                                             nr, count, cmp),
                      std::string("rule for ") + name);
}

Status add_always_rules(scmp_filter_ctx ctx) {
  for (const char* name : kAlwaysDenied) {
    Status s = deny(ctx, name);
    if (!s.ok()) return s;
  }
  for (scmp_datum_t flag : kNamespaceFlags) {
    const scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    Status s = deny(ctx, "unshare", 1, &cmp);
    if (s.ok()) s = deny(ctx, "clone", 1, &cmp);
    if (!s.ok()) return s;
  }
  const scmp_arg_cmp newtime = SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneNewTime, kCloneNewTime);
  Status s = deny(ctx, "unshare", 1, &newtime);
  // clone3 passes its flags in memory the filter cannot read: ENOSYS makes libc use clone().
  if (s.ok()) s = deny(ctx, "clone3", 0, nullptr, ENOSYS);
  // TIOCSTI pushes characters into the terminal's input queue: typed commands outside.
  const scmp_arg_cmp tiocsti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
  if (s.ok()) s = deny(ctx, "ioctl", 1, &tiocsti);
  return s;
}

Status add_network_rules(scmp_filter_ctx ctx) {
  Status s = deny(ctx, "socket");
  const scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
  if (s.ok()) s = deny(ctx, "socketpair", 1, &not_unix);
  for (const char* name : kNetworkDenied) {
    if (s.ok()) s = deny(ctx, name);
  }
  // send()/write() on an already connected socket pass; naming a destination does not.
  const scmp_arg_cmp has_dest = SCMP_A4(SCMP_CMP_NE, 0);
  if (s.ok()) s = deny(ctx, "sendto", 1, &has_dest);
  return s;
}

// Proxy mode: only TCP over IPv4/IPv6 may be created. Each deny rule below names one way a
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
    if (s.ok()) s = deny(ctx, "socket", 1, &cmp);
  }
  return s;
}

Status add_proxy_rules(scmp_filter_ctx ctx) {
  Status s = add_proxy_socket_rules(ctx);
  const scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
  if (s.ok()) s = deny(ctx, "socketpair", 1, &not_unix);
  // No listening endpoint (allow_local_binding is not offered) and no batch sends.
  for (const char* name : {"bind", "listen", "accept", "accept4", "sendmmsg"}) {
    if (s.ok()) s = deny(ctx, name);
  }
  // TCP Fast Open connects from inside a send, where Landlock's connect check does not look.
  const scmp_arg_cmp sendto_fastopen = SCMP_A3(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN);
  if (s.ok()) s = deny(ctx, "sendto", 1, &sendto_fastopen);
  const scmp_arg_cmp sendmsg_fastopen = SCMP_A2(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN);
  if (s.ok()) s = deny(ctx, "sendmsg", 1, &sendmsg_fastopen);
  const scmp_arg_cmp tcp_level = SCMP_A1(SCMP_CMP_EQ, IPPROTO_TCP);
  const scmp_arg_cmp fastopen_connect[] = {tcp_level,
                                           SCMP_A2(SCMP_CMP_EQ, kTcpFastopenConnect)};
  if (s.ok()) s = deny(ctx, "setsockopt", 2, fastopen_connect);
  return s;
}

Result<FilterPtr> build(NetworkFilter network) {
  FilterPtr ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return Error{"seccomp_init failed"};
  Status s = errno_status(
      seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "badarch");
  if (s.ok()) s = add_always_rules(ctx.get());
  if (s.ok() && network == NetworkFilter::kBlocked) s = add_network_rules(ctx.get());
  if (s.ok() && network == NetworkFilter::kProxy) s = add_proxy_rules(ctx.get());
  if (!s.ok()) return Error{s.error()};
  return ctx;
}

}  // namespace

Result<NetworkFilter> parse_network_filter(const std::string& word) {
  if (word == "blocked") return NetworkFilter::kBlocked;
  if (word == "open") return NetworkFilter::kOpen;
  if (word == "proxy") return NetworkFilter::kProxy;
  return Error{"--net expects 'blocked', 'open' or 'proxy', got '" + word + "'"};
}

Status install_filter(NetworkFilter network) {
  Result<FilterPtr> ctx = build(network);
  if (!ctx.ok()) return Error{ctx.error()};
  return errno_status(seccomp_load(ctx->get()), "seccomp_load");
}

Result<std::string> export_filter_text(NetworkFilter network) {
  Result<FilterPtr> ctx = build(network);
  if (!ctx.ok()) return Error{ctx.error()};
  std::FILE* tmp = std::tmpfile();
  if (tmp == nullptr) return Error{"tmpfile failed"};
  const int rc = seccomp_export_pfc(ctx->get(), fileno(tmp));
  std::string text;
  if (rc == 0) {
    std::rewind(tmp);
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) text.append(buf, n);
  }
  std::fclose(tmp);
  if (rc != 0) return Error{std::string("seccomp_export_pfc: ") + std::strerror(-rc)};
  return text;
}

}  // namespace sbx::stage2
