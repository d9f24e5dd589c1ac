// Docker's default seccomp profile as data, for sbx_docker_default_exec (docker_default_exec.cpp
// says why a table and not the JSON). Translated rule by rule from moby's
// profiles/seccomp/default.json as published in github.com/moby/profiles (seccomp/default.json,
// commit 02e898b137aed1024e232d59bcb05e6179b72177): every rule of the file is here, in the
// file's order, with its conditions (includes/excludes of capabilities, architectures and the
// minimum kernel) kept as data; the launcher resolves them the way moby's
// profiles/seccomp/seccomp_linux.go does for the container's capability list (the bounding set:
// Docker's default one) and the native architecture. Nothing is pre-resolved here, so a
// reviewer compares this file with the JSON line by line.
//
// Top level: defaultAction SCMP_ACT_ERRNO with defaultErrnoRet 1 (EPERM); archMap x86_64 ->
// {x86, x32}, aarch64 -> {arm} (the others: the launcher builds only there).
#pragma once

#include <seccomp.h>

#include <cstdint>
#include <initializer_list>

namespace sbx::test::docker_profile {

struct Arg {
  unsigned index;
  scmp_compare op;
  std::uint64_t value;
  std::uint64_t value_two;  // moby's valueTwo: the datum of SCMP_CMP_MASKED_EQ
};

struct Rule {
  std::initializer_list<const char*> names;
  bool allow;     // SCMP_ACT_ALLOW, else SCMP_ACT_ERRNO(errno_ret)
  int errno_ret;  // moby's errnoRet (0: the default, EPERM)
  std::initializer_list<Arg> args;
  // includes: the rule applies only if the container has every one of these capabilities, runs
  // on one of these architectures (moby's Go names) and on at least this kernel.
  std::initializer_list<const char*> include_caps;
  std::initializer_list<const char*> include_arches;
  const char* min_kernel;  // "" when none
  // excludes: the rule does not apply if the container has any of these capabilities or runs
  // on one of these architectures.
  std::initializer_list<const char*> exclude_caps;
  std::initializer_list<const char*> exclude_arches;
};

// clang-format off
inline const Rule kRules[] = {
  // 1. The unconditional allow list.
  {{"accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat", "capget",
    "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64",
    "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64", "clock_nanosleep",
    "clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat", "dup",
    "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
    "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
    "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate",
    "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32",
    "fchownat", "fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork",
    "fremovexattr", "fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync",
    "ftruncate", "ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait",
    "futex_waitv", "futex_wake", "futimesat", "getcpu", "getcwd", "getdents", "getdents64",
    "getegid", "getegid32", "geteuid", "geteuid32", "getgid", "getgid32", "getgroups",
    "getgroups32", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid",
    "getpriority", "getrandom", "getresgid", "getresgid32", "getresuid", "getresuid32",
    "getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname", "getsockopt",
    "get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32", "getxattr", "getxattrat",
    "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel", "ioctl",
    "io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64", "ioprio_get",
    "ioprio_set", "io_setup", "io_submit", "ipc", "kill", "landlock_add_rule",
    "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link",
    "linkat", "listen", "listmount", "listxattr", "listxattrat", "llistxattr", "_llseek",
    "lremovexattr", "lseek", "lsetxattr", "lstat", "lstat64", "madvise", "map_shadow_stack",
    "membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod",
    "mknodat", "mlock", "mlock2", "mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr",
    "mq_notify", "mq_open", "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend",
    "mq_timedsend_time64", "mq_unlink", "mremap", "mseal", "msgctl", "msgget", "msgrcv", "msgsnd",
    "msync", "munlock", "munlockall", "munmap", "name_to_handle_at", "nanosleep", "newfstatat",
    "_newselect", "open", "openat", "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe",
    "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl",
    "pread64", "preadv", "preadv2", "prlimit64", "process_mrelease", "pselect6",
    "pselect6_time64", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink",
    "readlinkat", "readv", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg",
    "remap_file_pages", "removexattr", "removexattrat", "rename", "renameat", "renameat2",
    "restart_syscall", "riscv_hwprobe", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
    "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigtimedwait_time64", "rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr",
    "sched_getparam", "sched_get_priority_max", "sched_get_priority_min", "sched_getscheduler",
    "sched_rr_get_interval", "sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr",
    "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", "semget",
    "semop", "semtimedop", "semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg",
    "sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32", "setgid", "setgid32",
    "setgroups", "setgroups32", "setitimer", "setpgid", "setpriority", "setregid", "setregid32",
    "setresgid", "setresgid32", "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit",
    "set_robust_list", "setsid", "setsockopt", "set_thread_area", "set_tid_address", "setuid",
    "setuid32", "setxattr", "setxattrat", "shmat", "shmctl", "shmdt", "shmget", "shutdown",
    "sigaltstack", "signalfd", "signalfd4", "sigprocmask", "sigreturn", "socketcall", "socketpair",
    "splice", "stat", "stat64", "statfs", "statfs64", "statmount", "statx", "symlink", "symlinkat",
    "sync", "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create",
    "timer_delete", "timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime",
    "timer_settime64", "timerfd_create", "timerfd_gettime", "timerfd_gettime64", "timerfd_settime",
    "timerfd_settime64", "times", "tkill", "truncate", "truncate64", "ugetrlimit", "umask",
    "uname", "unlink", "unlinkat", "uretprobe", "utime", "utimensat", "utimensat_time64", "utimes",
    "vfork", "vmsplice", "wait4", "waitid", "waitpid", "write", "writev"},
   true, 0, {}, {}, {}, "", {}, {}},
  // 2. ptrace and process_vm_* from Linux 4.8 (before it ptrace could bypass seccomp).
  {{"process_vm_readv", "process_vm_writev", "ptrace"}, true, 0, {}, {}, {}, "4.8", {}, {}},
  // 3. socket(): the address families below AF_DECnet (12) and a list of the others; not
  //    AF_VSOCK (40) and the rest.
  {{"socket"}, true, 0, {{0, SCMP_CMP_LT, 12, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 13, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 14, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 15, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 16, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 17, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 18, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 21, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 22, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 24, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 26, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 27, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 28, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 29, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 30, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 31, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 32, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 33, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 35, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 36, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 39, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 41, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 42, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 43, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 44, 0}}, {}, {}, "", {}, {}},
  {{"socket"}, true, 0, {{0, SCMP_CMP_EQ, 45, 0}}, {}, {}, "", {}, {}},
  // 4. personality(): PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32 and the query.
  {{"personality"}, true, 0, {{0, SCMP_CMP_EQ, 0, 0}}, {}, {}, "", {}, {}},
  {{"personality"}, true, 0, {{0, SCMP_CMP_EQ, 8, 0}}, {}, {}, "", {}, {}},
  {{"personality"}, true, 0, {{0, SCMP_CMP_EQ, 131072, 0}}, {}, {}, "", {}, {}},
  {{"personality"}, true, 0, {{0, SCMP_CMP_EQ, 131080, 0}}, {}, {}, "", {}, {}},
  {{"personality"}, true, 0, {{0, SCMP_CMP_EQ, 4294967295, 0}}, {}, {}, "", {}, {}},
  // 5. Architecture-specific calls.
  {{"sync_file_range2", "swapcontext"}, true, 0, {}, {}, {"ppc64le"}, "", {}, {}},
  {{"arm_fadvise64_64", "arm_sync_file_range", "sync_file_range2", "breakpoint", "cacheflush",
    "set_tls"}, true, 0, {}, {}, {"arm", "arm64"}, "", {}, {}},
  {{"arch_prctl"}, true, 0, {}, {}, {"amd64", "x32"}, "", {}, {}},
  {{"modify_ldt"}, true, 0, {}, {}, {"amd64", "x32", "x86"}, "", {}, {}},
  {{"s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr"}, true, 0, {}, {},
   {"s390", "s390x"}, "", {}, {}},
  {{"riscv_flush_icache"}, true, 0, {}, {}, {"riscv64"}, "", {}, {}},
  // 6. Calls granted with a capability (none of them with Docker's default set but chroot).
  {{"open_by_handle_at"}, true, 0, {}, {"CAP_DAC_READ_SEARCH"}, {}, "", {}, {}},
  {{"bpf", "clone", "clone3", "fanotify_init", "fsconfig", "fsmount", "fsopen", "fspick",
    "lookup_dcookie", "lsm_get_self_attr", "lsm_list_modules", "lsm_set_self_attr", "mount",
    "mount_setattr", "move_mount", "open_tree", "perf_event_open", "quotactl", "quotactl_fd",
    "setdomainname", "sethostname", "setns", "syslog", "umount", "umount2", "unshare"},
   true, 0, {}, {"CAP_SYS_ADMIN"}, {}, "", {}, {}},
  // 7. Without CAP_SYS_ADMIN: clone() only without a namespace flag (CLONE_NEWNS | NEWCGROUP |
  //    NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET = 0x7E020000; s390 swaps clone's first two
  //    arguments), and clone3() answers ENOSYS (its flags are in memory a filter cannot read;
  //    libc falls back to clone()).
  {{"clone"}, true, 0, {{0, SCMP_CMP_MASKED_EQ, 2114060288, 0}}, {}, {}, "",
   {"CAP_SYS_ADMIN"}, {"s390", "s390x"}},
  {{"clone"}, true, 0, {{1, SCMP_CMP_MASKED_EQ, 2114060288, 0}}, {}, {"s390", "s390x"}, "",
   {"CAP_SYS_ADMIN"}, {}},
  {{"clone3"}, false, 38, {}, {}, {}, "", {"CAP_SYS_ADMIN"}, {}},
  // 8. More calls granted with a capability.
  {{"reboot"}, true, 0, {}, {"CAP_SYS_BOOT"}, {}, "", {}, {}},
  {{"chroot"}, true, 0, {}, {"CAP_SYS_CHROOT"}, {}, "", {}, {}},
  {{"delete_module", "init_module", "finit_module"}, true, 0, {}, {"CAP_SYS_MODULE"}, {}, "", {},
   {}},
  {{"acct"}, true, 0, {}, {"CAP_SYS_PACCT"}, {}, "", {}, {}},
  {{"kcmp", "pidfd_getfd", "process_madvise", "process_vm_readv", "process_vm_writev",
    "ptrace"}, true, 0, {}, {"CAP_SYS_PTRACE"}, {}, "", {}, {}},
  {{"iopl", "ioperm"}, true, 0, {}, {"CAP_SYS_RAWIO"}, {}, "", {}, {}},
  {{"settimeofday", "stime", "clock_settime", "clock_settime64"}, true, 0, {}, {"CAP_SYS_TIME"},
   {}, "", {}, {}},
  {{"vhangup"}, true, 0, {}, {"CAP_SYS_TTY_CONFIG"}, {}, "", {}, {}},
  {{"get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"}, true, 0, {},
   {"CAP_SYS_NICE"}, {}, "", {}, {}},
  {{"syslog"}, true, 0, {}, {"CAP_SYSLOG"}, {}, "", {}, {}},
  {{"bpf"}, true, 0, {}, {"CAP_BPF"}, {}, "", {}, {}},
  {{"perf_event_open"}, true, 0, {}, {"CAP_PERFMON"}, {}, "", {}, {}},
};
// clang-format on

}  // namespace sbx::test::docker_profile
