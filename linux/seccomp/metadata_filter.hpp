// The metadata guard's seccomp filter (metadata_notify.hpp says what it guards and why), built
// with libseccomp. Only the build-time generator of the precompiled programs
// (seccomp_programs.hpp) and the tests build it; a run loads the precompiled copy.
//
// The filter (default ALLOW; calls of another architecture kill the process):
//   - USER_NOTIF for chmod, fchmod, fchmodat, fchmodat2, chown, fchown, lchown, fchownat,
//     utime, utimes, futimesat, utimensat, setxattr, lsetxattr, fsetxattr, removexattr,
//     lremovexattr, fremovexattr and ioctl(TIOCGPTPEER): the guard's emulator emulates them;
//   - ENOSYS for setxattrat, removexattrat and file_setattr (programs fall back to the above);
//   - EPERM for the inode-changing ioctls FS_IOC_SETFLAGS (and its 32-bit form),
//     FS_IOC_FSSETXATTR, FS_IOC_SETVERSION (both forms), FS_IOC_ENABLE_VERITY and
//     FS_IOC_SET_ENCRYPTION_POLICY;
//   - USER_NOTIF for socket() and socketpair() of AF_UNIX with a type other than SOCK_STREAM
//     and SOCK_SEQPACKET: the emulator refuses a datagram socket() (and names it in the run's
//     report) and answers a datagram socketpair() with a seqpacket pair (metadata_notify.hpp);
//   - EPERM for the pid scope's calls naming another process (pid_scope_filter.hpp), carried
//     here so that a run with the guard attaches no further program.
// With an unrestricted filesystem (no writable roots to keep metadata changes in) the guard is
// the unix datagram guard: the same program without the metadata rules (the first four items),
// so that unix datagram sockets are handled, and the pid scope carried, alike.
// With the network enabled (the host's network namespace) either one has a connect variant:
// USER_NOTIF for every connect() and bind() as well, for the unix connect guard
// (linux/landlock/unix_connect_notify.hpp: host pathname unix sockets stay closed).
// It must be installed with SECCOMP_FILTER_FLAG_NEW_LISTENER: its listener goes to the
// supervisor, which hands it to the emulator (landlock_launch.hpp).
#pragma once

#include <string>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

// Syscall numbers newer than Debian 12's headers and libseccomp 2.5.4. They come from the
// unified table every architecture but alpha, ia64 and mips shares since Linux 5.1.
inline constexpr int kNrFchmodat2 = 452;
inline constexpr int kNrSetxattrat = 463;
inline constexpr int kNrRemovexattrat = 466;
inline constexpr int kNrFileSetattr = 469;
#if defined(__x86_64__) || defined(__aarch64__)
inline constexpr bool kUnifiedSyscallNumbers = true;
#else
inline constexpr bool kUnifiedSyscallNumbers = false;
#endif

// The guard's BPF program as the kernel takes it (struct sock_filter array, native byte order):
// exactly what libseccomp would load for it.
Result<std::string> export_metadata_guard_bpf();

// The same in libseccomp's pseudo-filter-code text (for debugging).
Result<std::string> export_metadata_guard_text();

// The unix datagram guard's BPF program (the guard without its metadata rules).
Result<std::string> export_unix_guard_bpf();

// The connect variant of the metadata guard (`metadata`) or of the unix datagram guard: every
// connect() and bind() notified too.
Result<std::string> export_connect_guard_bpf(bool metadata);

}  // namespace sbx::stage2
