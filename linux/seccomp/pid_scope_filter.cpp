// See pid_scope_filter.hpp.
#include "pid_scope_filter.hpp"

#include <seccomp.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>

#include "seccomp_export.hpp"
#include "seccomp_syscalls.hpp"

namespace sbx::stage2 {
namespace {

using FilterPtr = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

constexpr scmp_datum_t kIoprioWhoProcess = 1;  // IOPRIO_WHO_PROCESS (linux/ioprio.h)

// One refusal: EPERM when every comparison matches. A name this libseccomp does not know
// would pass unseen: fail closed. A name of another architecture (negative pseudo number) is
// not callable here.
Status refuse(scmp_filter_ctx ctx, const char* name, std::span<const scmp_arg_cmp> cmp) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return Error{std::string("unknown syscall ") + name};
  if (nr < 0) return {};
  if (seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, static_cast<unsigned>(cmp.size()),
                             cmp.data()) != 0)
    return Error{std::string("rule for ") + name};
  return {};
}

}  // namespace

// The comparisons are on all 64 bits: the kernel reads these arguments as int, so a value whose
// low half is 0 but not its high half is refused although the kernel would take it for "self"
// (stricter, never looser).
Status add_pid_scope_rules(scmp_filter_ctx ctx) {
  const scmp_arg_cmp a0_not_self[] = {SCMP_A0(SCMP_CMP_NE, 0)};
  const scmp_arg_cmp a1_not_self[] = {SCMP_A1(SCMP_CMP_NE, 0)};
  Status s;
  // pid is the first argument; 0 is the caller.
  for (const char* name :
       {"sched_setaffinity", "sched_setparam", "sched_setscheduler", "sched_setattr"}) {
    if (s.ok()) s = refuse(ctx, name, a0_not_self);
  }
  // prlimit64(pid, resource, new_limit, old_limit): only a change is refused.
  const scmp_arg_cmp prlimit_change[] = {SCMP_A0(SCMP_CMP_NE, 0), SCMP_A2(SCMP_CMP_NE, 0)};
  if (s.ok()) s = refuse(ctx, "prlimit64", prlimit_change);
  // setpriority(which, who, prio): PRIO_PROCESS with who 0 only.
  const scmp_arg_cmp not_prio_process[] = {SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS)};
  if (s.ok()) s = refuse(ctx, "setpriority", not_prio_process);
  if (s.ok()) s = refuse(ctx, "setpriority", a1_not_self);
  // ioprio_set(which, who, ioprio): IOPRIO_WHO_PROCESS with who 0 only.
  const scmp_arg_cmp not_who_process[] = {SCMP_A0(SCMP_CMP_NE, kIoprioWhoProcess)};
  if (s.ok()) s = refuse(ctx, "ioprio_set", not_who_process);
  if (s.ok()) s = refuse(ctx, "ioprio_set", a1_not_self);
  return s;
}

// A name this libseccomp does not know is skipped: the table skips it as well, so the call
// answers ENOSYS there.
Status add_host_ipc_rules(scmp_filter_ctx ctx) {
  const std::span<const scmp_arg_cmp> always;
  Status s;
  for (const char* name : syscalls::kIpc) {
    if (s.ok() && seccomp_syscall_resolve_name(name) != __NR_SCMP_ERROR)
      s = refuse(ctx, name, always);
  }
  return s;
}

namespace {

Result<FilterPtr> build_scope() {
  FilterPtr ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return Error{"seccomp_init failed"};
  // Another architecture's calls would bypass the rules: the main filter kills them too.
  if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0)
    return Error{"badarch"};
  Status built = add_pid_scope_rules(ctx.get());
  if (built.ok()) built = add_host_ipc_rules(ctx.get());
  if (!built.ok()) return built.failure();
  return ctx;
}

}  // namespace

Result<std::string> export_pid_scope_bpf() {
  Result<FilterPtr> ctx = build_scope();
  if (!ctx.ok()) return ctx.failure();
  return export_program(ctx->get(), seccomp_export_bpf);
}

Result<std::string> export_pid_scope_text() {
  Result<FilterPtr> ctx = build_scope();
  if (!ctx.ok()) return ctx.failure();
  return export_program(ctx->get(), seccomp_export_pfc);
}

}  // namespace sbx::stage2
