// Landlock mode's pid scope: seccomp rules, used only by the Landlock launcher
// (landlock_launch.cpp) inside the metadata guard's program or, without the guard, as a program
// of their own, that refuse (EPERM) the calls which change another process although Landlock
// does not scope them. Under bwrap the command has a pid namespace of its own, where no
// process outside the sandbox has a pid to name, so bwrap does not load it.
//
// Why: Landlock scopes what goes through ptrace_may_access() (security_ptrace_access_check:
// landlock's hook_ptrace_access_check) and, from ABI 6, signals (hook_task_kill,
// hook_file_send_sigiotask). The calls below check only uids (or CAP_SYS_NICE /
// CAP_SYS_RESOURCE) and call LSM hooks Landlock does not implement, so without a pid namespace
// the command could change any process of its user (as root: any process), e.g. give the agent
// that started it RLIMIT_CPU (1, 1) (SIGKILL) or RLIMIT_CORE unlimited plus a CPU soft limit
// (a core dump of the agent's memory in its working directory):
//   - prlimit64 with a new limit: kernel/sys.c check_prlimit_permission() (uid/gid, or
//     CAP_SYS_RESOURCE), security_task_prlimit();
//   - setpriority: kernel/sys.c set_one_prio_perm() (uid/euid, or CAP_SYS_NICE),
//     security_task_setnice(); PRIO_PGRP and PRIO_USER name groups of processes even with who 0
//     (the caller's process group, which may hold sbx and its pipeline; the caller's uid);
//   - ioprio_set: block/ioprio.c set_task_ioprio() (uid/euid, or CAP_SYS_NICE),
//     security_task_setioprio(); IOPRIO_WHO_PGRP/IOPRIO_WHO_USER as above;
//   - sched_setaffinity: sched_setaffinity() check_same_owner() (or CAP_SYS_NICE),
//     security_task_setscheduler();
//   - sched_setparam, sched_setscheduler, sched_setattr: __sched_setscheduler()
//     check_same_owner() (or CAP_SYS_NICE), security_task_setscheduler() (both in
//     kernel/sched/syscalls.c since Linux 6.11, kernel/sched/core.c before).
// As root, commoncap's cap_safe_nice() (security/commoncap.c: cap_task_setnice, _setioprio,
// _setscheduler) refuses the last three on a target holding capabilities the command lacks, so
// they reach only root processes without capabilities; prlimit64 has no such check.
//
// The rule: these pass only when they name the caller the way the kernel spells "self" (pid 0;
// for setpriority PRIO_PROCESS with who 0, for ioprio_set IOPRIO_WHO_PROCESS with who 0;
// prlimit64 with any pid when it only reads, new_limit NULL). A filter cannot know the caller's
// pid, so a call naming the caller by its own pid or TID is refused too: glibc's
// pthread_setaffinity_np, pthread_setschedparam, pthread_setschedprio and pthread_create with
// an explicit scheduling or affinity attribute pass a TID and get EPERM; `renice -p`,
// `taskset -p`, `ionice -p`, `chrt -p` and `prlimit --pid` are refused for every pid, their
// forms that start a command (pid 0) work. Calls with pid 0 stay in the kernel (no supervisor
// round trip); the calls these rules do not name stay in the kernel's action cache
// (kernel/seccomp.c, Linux 5.11+) as before, the named ones now run the programs
// (bench/README.md, "the pid scope").
//
// Not refused, on purpose: the readers (getpriority, ioprio_get, sched_getaffinity,
// sched_getparam, sched_getscheduler, sched_getattr, sched_rr_get_interval, prlimit64 without a
// new limit, capget, getpgid, getsid): they change nothing, and the same values are readable in
// /proc/PID/{stat,status,limits,sched} of every process. The calls the kernel already confines
// under Landlock are listed in plugins/landlock/README.md ("Other processes").
#pragma once

#include <seccomp.h>

#include <string>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

// Host IPC, in the same programs: without an IPC namespace the command's System V IPC and POSIX
// message queues are the host's (ipc_namespaces(7)), and their permission checks are the
// objects' mode bits and owner (ipc/util.c ipcperms(), ipc/mqueue.c) with no LSM hook Landlock
// implements, so the command could attach a readable host segment (shmat, its contents),
// receive or send on a host queue, remove or re-own (IPC_RMID, IPC_SET) any object its uid owns
// or created (as root: every one), and create objects (msgget(IPC_PRIVATE)) that outlive the run.
// mq_unlink removes a host queue by name through vfs_unlink(), outside Landlock's path hooks
// (mq_open is refused by Landlock's file_open hook: the mqueue mount is in no rule). No argument
// rule separates the command's own objects from the host's (an id or key names either), so every
// call of the table's IPC group (seccomp_syscalls.hpp kIpc, with the `ipc` multiplexer where the
// architecture has it) answers EPERM. POSIX semaphores and shm_open are files in /dev/shm and
// stay under the filesystem rules. Under bwrap the IPC namespace is the run's own
// (--unshare-ipc), where all of them work on objects only the run sees.
Status add_host_ipc_rules(scmp_filter_ctx ctx);

// Adds the pid scope's refusals (EPERM) to `ctx`. The metadata guard's program
// (metadata_filter.hpp) carries them too, so that a run with the guard attaches no program more
// than before (each attach costs the new process a conversion, JIT and action cache: see
// bench/README.md); the pid scope's own program is loaded only where the guard is not.
Status add_pid_scope_rules(scmp_filter_ctx ctx);

// The pid scope's BPF program (its refusals and the host IPC ones) as the kernel takes it (struct
// sock_filter array, native byte order): exactly what libseccomp builds for it (default ALLOW;
// calls of another architecture kill the process). For the build-time generator
// (seccomp_programs.hpp) and tests.
Result<std::string> export_pid_scope_bpf();

// The same in libseccomp's pseudo-filter-code text (golden test, debugging).
Result<std::string> export_pid_scope_text();

}  // namespace sbx::stage2
