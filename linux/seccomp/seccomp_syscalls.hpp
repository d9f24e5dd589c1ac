// The system calls the stage-2 filter lets through at all (seccomp_filter.hpp says how they are
// used). Anchor: Docker's default seccomp profile (moby profiles/seccomp/default.json), the
// calls it allows unconditionally to a container without extra capabilities. Everything not
// named here answers ENOSYS, so a program falls back as it does on an older kernel (clone3 ->
// clone, openat2 -> openat, statx -> stat) and a system call added to a later kernel is closed
// until someone reads it and lists it.
//
// Differences from Docker, each on purpose:
//  * not allowed here although Docker allows them: ptrace, process_vm_readv/writev and the
//    io_uring calls (refused with EPERM, see kAlwaysDenied in seccomp_filter.cpp); openat2 (its
//    mode travels in a struct the filter cannot read: ENOSYS, libc falls back to openat, whose
//    mode it can); modify_ldt (16-bit segments: kernel attack surface nothing an agent runs
//    needs);
//  * allowed here although Docker needs CAP_SYS_ADMIN: unshare, but only without namespace
//    flags (the argument rules refuse those), because unshare(CLONE_FILES/CLONE_FS) is ordinary;
//  * personality() takes Docker's values plus ADDR_NO_RANDOMIZE (seccomp_filter.cpp says why);
//  * the calls Docker grants only with a capability (mount, chroot, syslog, kexec, modules,
//    quotactl, open_by_handle_at, kcmp, pidfd_getfd, NUMA policy...) are absent: the command
//    holds no capability anyway, so the kernel would refuse most of them, and the rest (the NUMA
//    calls, kcmp) are not needed;
//  * newer calls Docker lists (cachestat, fchmodat2, futex_wake/wait/requeue, map_shadow_stack,
//    mseal, the *xattrat family) are named here too; they take effect only with a libseccomp
//    that knows them (an unknown name is skipped, i.e. stays ENOSYS: fail closed).
//
// The names span architectures (x86_64's arch_prctl, the 32-bit *64 variants, ARM's
// set_tls...): the filter is built for the native architecture only and skips a name that does
// not exist there, so one list serves every architecture sbx builds for.
#pragma once

#include <span>

namespace sbx::stage2::syscalls {

// The tables read best packed, in their groups.
// clang-format off

// Process lifetime, identity, limits and randomness (getrandom). clone and unshare are checked
// further by the argument rules (no namespace flags); setuid() and friends can only move between
// the ids the process already has (no capability).
constexpr const char* kProcess[] = {
    "exit", "exit_group", "fork", "vfork", "clone", "unshare", "execve", "execveat", "wait4",
    "waitid", "waitpid", "kill", "tkill", "tgkill", "pidfd_open", "pidfd_send_signal",
    "process_mrelease", "getpid", "getppid", "gettid", "getpgid", "getpgrp", "setpgid", "getsid",
    "setsid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
    "setgroups", "getuid32", "geteuid32", "getgid32", "getegid32", "getresuid32", "getresgid32",
    "getgroups32", "setuid32", "setgid32", "setreuid32", "setregid32", "setresuid32", "setresgid32",
    "setfsuid32", "setfsgid32", "setgroups32", "capget", "capset", "prctl", "set_tid_address",
    "set_robust_list", "get_robust_list", "rseq", "restart_syscall", "getrlimit", "setrlimit",
    "ugetrlimit", "prlimit64", "getrandom", "getrusage", "getpriority", "setpriority", "times",
    "umask", "get_thread_area", "set_thread_area",
};

// Self-confinement: a program may restrict itself further (a filter or ruleset added later
// can only take rights away). seccomp(2) with any flag: SECCOMP_FILTER_FLAG_NEW_LISTENER is
// how a second, user-notification filter is installed.
constexpr const char* kSelfConfinement[] = {
    "seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
};

constexpr const char* kSignals[] = {
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend",
    "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    "sigaltstack", "signalfd", "signalfd4", "sigprocmask", "sigreturn", "pause", "alarm",
    "getitimer", "setitimer",
};

constexpr const char* kMemory[] = {
    "brk", "mmap", "mmap2", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync", "mlock",
    "mlock2", "mlockall", "munlock", "munlockall", "membarrier", "memfd_create", "memfd_secret",
    "pkey_alloc", "pkey_free", "pkey_mprotect", "remap_file_pages", "map_shadow_stack", "mseal",
};

// Clocks, timers and the scheduler. adjtimex/clock_adjtime only read without CAP_SYS_TIME.
constexpr const char* kTimeAndScheduling[] = {
    "clock_gettime", "clock_gettime64", "clock_getres", "clock_getres_time64", "clock_nanosleep",
    "clock_nanosleep_time64", "clock_adjtime", "clock_adjtime64", "adjtimex", "gettimeofday",
    "time", "nanosleep", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
    "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create", "timerfd_gettime",
    "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "sched_yield", "sched_getaffinity",
    "sched_setaffinity", "sched_getattr", "sched_setattr", "sched_getparam", "sched_setparam",
    "sched_getscheduler", "sched_setscheduler", "sched_get_priority_max", "sched_get_priority_min",
    "sched_rr_get_interval", "sched_rr_get_interval_time64", "getcpu", "sysinfo", "uname",
    "ioprio_get", "ioprio_set",
};

// Descriptors and I/O on them. ioctl is checked further by the argument rules (terminal
// injection requests).
constexpr const char* kDescriptors[] = {
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "preadv2", "pwritev",
    "pwritev2", "lseek", "_llseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl",
    "fcntl64", "flock", "fsync", "fdatasync", "syncfs", "sync", "sync_file_range", "fallocate",
    "fadvise64", "fadvise64_64", "readahead", "ftruncate", "ftruncate64", "sendfile", "sendfile64",
    "splice", "tee", "vmsplice", "copy_file_range", "ioctl", "pipe", "pipe2", "eventfd", "eventfd2",
    "cachestat",
};

// Paths. The creating and mode-changing calls (open/openat/creat, mknod/mknodat, the chmod
// family) are checked further by the argument rules (no set-user-ID/set-group-ID bits, no
// device nodes). The chown, utime and xattr families stay allowed here: a second filter may
// supervise them, and the kernel's own permission checks apply.
constexpr const char* kPaths[] = {
    "open", "openat", "creat", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "stat",
    "fstat", "lstat", "newfstatat", "stat64", "fstat64", "lstat64", "fstatat64", "statx", "statfs",
    "fstatfs", "statfs64", "fstatfs64", "access", "faccessat", "faccessat2", "readlink",
    "readlinkat", "mkdir", "mkdirat", "mknod", "mknodat", "rmdir", "unlink", "unlinkat", "link",
    "linkat", "symlink", "symlinkat", "rename", "renameat", "renameat2", "truncate", "truncate64",
    "name_to_handle_at", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    "fanotify_mark",
};

constexpr const char* kModesAndOwners[] = {
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "chown32",
    "fchown32", "lchown32", "utime", "utimes", "futimesat", "utimensat", "utimensat_time64",
};

constexpr const char* kXattrs[] = {
    "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr", "setxattr",
    "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "getxattrat",
    "listxattrat", "setxattrat", "removexattrat",
};

// Waiting: poll/select/epoll, futexes and POSIX AIO (io_uring is refused, not listed).
constexpr const char* kWaiting[] = {
    "poll", "ppoll", "ppoll_time64", "select", "_newselect", "pselect6", "pselect6_time64",
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_wait", "epoll_wait_old",
    "epoll_pwait", "epoll_pwait2", "futex", "futex_time64", "futex_waitv", "futex_wake",
    "futex_wait", "futex_requeue", "io_setup", "io_destroy", "io_submit", "io_cancel",
    "io_getevents", "io_pgetevents", "io_pgetevents_time64",
};

// System V and POSIX IPC (Docker allows them; under bwrap the IPC namespace is the run's own;
// in Landlock mode it is the host's, and pid_scope_filter.hpp refuses every one of them).
constexpr const char* kIpc[] = {
    "ipc", "msgget", "msgctl", "msgsnd", "msgrcv", "semget", "semctl", "semop", "semtimedop",
    "semtimedop_time64", "shmget", "shmctl", "shmat", "shmdt", "mq_open", "mq_unlink",
    "mq_getsetattr", "mq_notify", "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive",
    "mq_timedreceive_time64",
};

// Sockets. Which of these a network mode refuses (EPERM) or checks further is decided in
// seccomp_filter.cpp; the rest is allowed.
constexpr const char* kSockets[] = {
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "getsockname",
    "getpeername", "getsockopt", "setsockopt", "shutdown", "sendto", "sendmsg", "sendmmsg",
    "recvfrom", "recvmsg", "recvmmsg", "recvmmsg_time64", "send", "recv", "socketcall",
};

// Architecture-specific calls Docker allows on that architecture.
constexpr const char* kArchSpecific[] = {
    "arch_prctl",                                                               // x86_64
    "arm_fadvise64_64", "arm_sync_file_range", "breakpoint", "cacheflush", "set_tls",  // arm
    "sync_file_range2",                                                         // arm, ppc64le
    "swapcontext",                                                              // ppc64le
    "riscv_flush_icache",                                                       // riscv64
    "s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr",          // s390x
};

// clang-format on

// Every group above, in order: the table allows each name the native architecture has.
inline constexpr std::span<const char* const> kAllGroups[] = {
    kProcess,        kSelfConfinement, kSignals, kMemory, kTimeAndScheduling, kDescriptors,  kPaths,
    kModesAndOwners, kXattrs,          kWaiting, kIpc,    kSockets,           kArchSpecific,
};

}  // namespace sbx::stage2::syscalls
