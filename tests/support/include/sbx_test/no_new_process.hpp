// A seccomp filter that kills the calling process the moment it tries to create another process
// or thread (clone, clone3, fork, vfork). A test installs it in a child it forked, then runs the
// code under test there (or execs the program under test): exiting normally proves that code
// started no process at all, by the kernel's account, whatever it would do with the result.
// Linux only; execve stays allowed (the test's own exec of the program under test).
#pragma once

#if defined(__linux__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <iterator>

namespace sbx::test {

#if defined(__x86_64__)
inline constexpr unsigned kNoNewProcessArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
inline constexpr unsigned kNoNewProcessArch = AUDIT_ARCH_AARCH64;
#endif

// 0 on success, else the errno of the failed step. Not available on other architectures (ENOSYS).
inline int forbid_new_processes() {
#if defined(__x86_64__) || defined(__aarch64__)
  constexpr unsigned kill = SECCOMP_RET_KILL_PROCESS;
  constexpr unsigned allow = SECCOMP_RET_ALLOW;
  // Another architecture's calls (x32, i386 on x86_64) are killed too: they could clone.
  sock_filter program[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNoNewProcessArch, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, kill),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
#if defined(__x86_64__)
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 4, 0),  // x32 calls
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fork, 3, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_vfork, 2, 0),
#endif
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, kill),
    BPF_STMT(BPF_RET | BPF_K, allow),
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(program)), program};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return errno;
  return 0;
#else
  return ENOSYS;
#endif
}

}  // namespace sbx::test
#endif
