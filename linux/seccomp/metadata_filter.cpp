// See metadata_filter.hpp.
#include "metadata_filter.hpp"

#include <linux/fs.h>
#include <linux/fsverity.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "pid_scope_filter.hpp"
#include "seccomp_export.hpp"

namespace sbx::stage2 {
namespace {

using FilterPtr = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

// Emulated by the supervisor: every call that changes a file's mode, owner, times or extended
// attributes by path or descriptor.
constexpr const char* kEmulated[] = {
    "chmod",     "fchmod",    "fchmodat",    "chown",        "fchown",      "lchown",
    "fchownat",  "utime",     "utimes",      "futimesat",    "utimensat",   "setxattr",
    "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr"};

int rule(scmp_filter_ctx ctx, std::uint32_t action, int nr, unsigned count = 0,
         const scmp_arg_cmp* cmp = nullptr) {
  return seccomp_rule_add_array(ctx, action, nr, count, cmp);
}

// socket() and socketpair() of AF_UNIX with a type other than stream and seqpacket (an
// allow-list: net/unix/af_unix.c unix_create() maps SOCK_RAW to SOCK_DGRAM, and a type the
// kernel adds later is the emulator's to refuse): notified, so the emulator refuses and names a
// datagram socket() and answers a datagram socketpair() with a seqpacket pair. Only these are
// notified: a run that makes no unix datagram socket never wakes the emulator for them. The
// main filter's guarded variants (seccomp_filter.hpp) let them reach this program.
Status add_unix_datagram_rules(scmp_filter_ctx ctx) {
  for (const int nr :
       {static_cast<int>(SCMP_SYS(socket)), static_cast<int>(SCMP_SYS(socketpair))}) {
    for (scmp_datum_t type = 0; type <= 0xf; ++type) {
      if (type == SOCK_STREAM || type == SOCK_SEQPACKET) continue;
      const scmp_arg_cmp cmp[] = {SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type)};
      if (rule(ctx, SCMP_ACT_NOTIFY, nr, 2, cmp) != 0)
        return Error{"rule for unix socket type " + std::to_string(type)};
    }
  }
  return {};
}

// Landlock mode with the network enabled (the host's network namespace): every connect() and
// bind() is notified, so the emulator decides each connect on the socket the caller names and
// the address copied out of its memory, and performs it (unix_connect_notify.hpp); a bind is
// noted and continued. Seccomp sees registers only, so no argument test could tell a unix
// socket's connect from an inet one's: all of them are notified.
Status add_connect_rules(scmp_filter_ctx ctx) {
  for (const int nr : {static_cast<int>(SCMP_SYS(connect)), static_cast<int>(SCMP_SYS(bind))}) {
    if (rule(ctx, SCMP_ACT_NOTIFY, nr) != 0) return Error{"rule for connect/bind"};
  }
  return {};
}

// The metadata changes the emulator emulates or refuses (with a restricted filesystem).
Status add_metadata_rules(scmp_filter_ctx ctx) {
  if (!kUnifiedSyscallNumbers)
    return Error{
        "the numbers of fchmodat2/setxattrat/removexattrat/file_setattr on this "
        "architecture are not known to sbx"};
  for (const char* name : kEmulated) {
    const int nr = seccomp_syscall_resolve_name(name);
    // A call this libseccomp cannot name would pass unseen: fail closed.
    if (nr == __NR_SCMP_ERROR) return Error{std::string("unknown syscall ") + name};
    if (rule(ctx, SCMP_ACT_NOTIFY, nr) != 0) return Error{std::string("rule for ") + name};
  }
  if (rule(ctx, SCMP_ACT_NOTIFY, kNrFchmodat2) != 0) return Error{"rule for fchmodat2"};
  // Newer *at variants: ENOSYS makes a program fall back to the calls emulated above.
  for (int nr : {kNrSetxattrat, kNrRemovexattrat, kNrFileSetattr}) {
    if (rule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr) != 0)
      return Error{"rule for syscall " + std::to_string(nr)};
  }
  const scmp_arg_cmp peer = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCGPTPEER);
  if (rule(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1, &peer) != 0)
    return Error{"rule for ioctl(TIOCGPTPEER)"};
  // Inode changes through ioctls that need only ownership (or DAC write access), not an open
  // for writing: chattr flags, fsxattr, the generation number, fs-verity and encryption
  // policies (both make a file or directory unchangeable). Not emulated: refused on every file.
  for (unsigned long cmd :
       {static_cast<unsigned long>(FS_IOC_SETFLAGS), static_cast<unsigned long>(FS_IOC32_SETFLAGS),
        static_cast<unsigned long>(FS_IOC_FSSETXATTR),
        static_cast<unsigned long>(FS_IOC_SETVERSION),
        static_cast<unsigned long>(FS_IOC32_SETVERSION),
        static_cast<unsigned long>(FS_IOC_ENABLE_VERITY),
        static_cast<unsigned long>(FS_IOC_SET_ENCRYPTION_POLICY)}) {
    const scmp_arg_cmp cmp = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, cmd);
    if (rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1, &cmp) != 0)
      return Error{"rule for ioctl " + std::to_string(cmd)};
  }
  return {};
}

// `metadata`: the full guard (restricted filesystem); else the unix datagram guard, which has
// every rule but the metadata ones. `connects`: with every connect() and bind() notified too.
Status build_rules(scmp_filter_ctx ctx, bool metadata, bool connects) {
  if (metadata) {
    if (Status rules = add_metadata_rules(ctx); !rules.ok()) return rules;
  }
  if (connects) {
    if (Status rules = add_connect_rules(ctx); !rules.ok()) return rules;
  }
  if (Status unix = add_unix_datagram_rules(ctx); !unix.ok()) return unix;
  // The pid scope's and the host IPC refusals ride along (pid_scope_filter.hpp says why here).
  if (Status scope = add_pid_scope_rules(ctx); !scope.ok()) return scope;
  return add_host_ipc_rules(ctx);
}

Result<FilterPtr> build_guard(bool metadata, bool connects = false) {
  FilterPtr ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return Error{"seccomp_init failed"};
  // Another architecture's calls would bypass the rules: the main filter kills them too.
  if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)
    return Error{"badarch"};
  Status built = build_rules(ctx.get(), metadata, connects);
  if (!built.ok()) return built.failure();
  return ctx;
}

}  // namespace

Result<std::string> export_metadata_guard_bpf() {
  Result<FilterPtr> ctx = build_guard(true);
  if (!ctx.ok()) return ctx.failure();
  return export_program(ctx->get(), seccomp_export_bpf);
}

Result<std::string> export_metadata_guard_text() {
  Result<FilterPtr> ctx = build_guard(true);
  if (!ctx.ok()) return ctx.failure();
  return export_program(ctx->get(), seccomp_export_pfc);
}

Result<std::string> export_unix_guard_bpf() {
  Result<FilterPtr> ctx = build_guard(false);
  if (!ctx.ok()) return ctx.failure();
  return export_program(ctx->get(), seccomp_export_bpf);
}

Result<std::string> export_connect_guard_bpf(bool metadata) {
  Result<FilterPtr> ctx = build_guard(metadata, true);
  if (!ctx.ok()) return ctx.failure();
  return export_program(ctx->get(), seccomp_export_bpf);
}

}  // namespace sbx::stage2
