// The precompiled seccomp programs (seccomp_programs.hpp), which the bwrap backend hands to
// bwrap: they are what libseccomp builds from seccomp_filter.cpp at run time (the argument
// rules byte for byte, the table in a compact form proven to answer alike, so the rest of this
// suite, which installs libseccomp's, speaks for them too), their bytes are pinned by
// golden files, and loaded on their own in a forked child (SECCOMP_SET_MODE_FILTER after
// no_new_privs, as bwrap does) they refuse what the filter must refuse.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "bpf_table.hpp"
#include "filtered_child.hpp"
#include "metadata_filter.hpp"
#include "pid_scope_filter.hpp"
#include "sbx_test/golden.hpp"
#include "seccomp_programs.hpp"

namespace {

using sbx::stage2::NetworkFilter;
using sbx_seccomp_test::raw;

constexpr NetworkFilter kEveryMode[] = {NetworkFilter::kBlocked,
                                        NetworkFilter::kOpen,
                                        NetworkFilter::kProxy,
                                        NetworkFilter::kPrivate,
                                        NetworkFilter::kPrivateUnixSupervised,
                                        NetworkFilter::kBlockedGuarded,
                                        NetworkFilter::kProxyGuarded};
constexpr int kAfVsock = 40;

const char* mode_name(NetworkFilter net) {
  switch (net) {
    case NetworkFilter::kBlocked:
      return "blocked";
    case NetworkFilter::kOpen:
      return "open";
    case NetworkFilter::kProxy:
      return "proxy";
    case NetworkFilter::kPrivate:
      return "private";
    case NetworkFilter::kPrivateUnixSupervised:
      return "private-unix-supervised";
    case NetworkFilter::kBlockedGuarded:
      return "blocked-guarded";
    case NetworkFilter::kProxyGuarded:
      return "proxy-guarded";
  }
  return "?";
}

// The probe under the precompiled programs only (no libseccomp involved in the child).
std::string run_precompiled(NetworkFilter net, const std::function<long()>& probe,
                            int expected_errno) {
  return sbx_seccomp_test::run_in_filtered_child(
      [net] { return sbx::stage2::load_precompiled_filter(net).ok(); }, probe, expected_errno);
}

// One instruction a line: code jt jf k, in hex, so a change reads as a diff of instructions.
std::string dump(std::span<const sock_filter> program) {
  std::string out;
  char line[48];
  for (const sock_filter& insn : program) {
    std::snprintf(line, sizeof line, "%04x %02x %02x %08x\n", insn.code, insn.jt, insn.jf, insn.k);
    out += line;
  }
  return out;
}

long socket_and_close(int family, int type) {
  const long fd = raw(SYS_socket, family, type, 0);
  if (fd >= 0) ::close(static_cast<int>(fd));
  return fd < 0 ? -1 : 0;
}

// The argument rules byte for byte; the table in its compact form, proven equivalent
// (seccomp_bpf_table_test.cpp checks that form against libseccomp's in depth).
TEST(SeccompPrecompiled, ProgramsAreWhatLibseccompBuildsAtRunTime) {
  for (NetworkFilter net : kEveryMode) {
    sbx::Result<std::vector<std::string>> built = sbx::stage2::export_filter_bpf(net);
    ASSERT_TRUE(built.ok()) << built.error();
    ASSERT_EQ(built->size(), 2u);
    const sbx::stage2::PrecompiledFilter pre = sbx::stage2::precompiled_filter(net);
    std::vector<sock_filter> table((*built)[0].size() / sizeof(sock_filter));
    std::memcpy(table.data(), (*built)[0].data(), (*built)[0].size());
    const sbx::Status proof = sbx::stage2::bpf::prove_equivalent(table, pre.table);
    EXPECT_TRUE(proof.ok()) << mode_name(net) << ": " << proof.error();
    EXPECT_LT(pre.table.size(), table.size()) << mode_name(net);
    EXPECT_EQ(sbx::stage2::program_bytes(pre.rules), (*built)[1]) << mode_name(net);
  }
}

TEST(SeccompPrecompiled, ProgramBytesMatchTheGoldenFiles) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden programs are for x86_64 (syscall numbers and audit arch)";
#endif
  EXPECT_EQ(sbx::stage2::precompiled_architecture(), "x86_64");
  for (NetworkFilter net : kEveryMode) {
    const sbx::stage2::PrecompiledFilter pre = sbx::stage2::precompiled_filter(net);
    const std::filesystem::path dir = std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp";
    const std::string name = mode_name(net);
    sbx::test::expect_golden(dir / ("bpf-" + name + "-table.txt"), dump(pre.table));
    sbx::test::expect_golden(dir / ("bpf-" + name + "-rules.txt"), dump(pre.rules));
  }
}

// Landlock mode's metadata guard (metadata_filter.hpp), precompiled the same way.
TEST(SeccompPrecompiled, MetadataGuardIsWhatLibseccompBuildsAtRunTime) {
  sbx::Result<std::string> built = sbx::stage2::export_metadata_guard_bpf();
  ASSERT_TRUE(built.ok()) << built.error();
  EXPECT_EQ(sbx::stage2::program_bytes(sbx::stage2::metadata_guard_program()), *built);
}

TEST(SeccompPrecompiled, MetadataGuardBytesMatchTheGoldenFile) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden program is for x86_64 (syscall numbers and audit arch)";
#endif
  const std::filesystem::path dir = std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp";
  sbx::test::expect_golden(dir / "bpf-metadata-guard.txt",
                           dump(sbx::stage2::metadata_guard_program()));
}

// Loaded on its own with its listener closed at once: a call it reports to the (absent)
// supervisor fails with ENOSYS, the calls it refuses fail as they must, everything else runs.
std::string run_under_guard(const std::function<long()>& probe, int expected_errno) {
  return sbx_seccomp_test::run_in_filtered_child(
      [] {
        const int listener = sbx::stage2::load_metadata_guard_program();
        if (listener < 0) return false;
        // Close-on-exec from the kernel: only the supervisor that receives it keeps it.
        const bool cloexec = (::fcntl(listener, F_GETFD) & FD_CLOEXEC) != 0;
        ::close(listener);
        return cloexec;
      },
      probe, expected_errno);
}

TEST(SeccompPrecompiled, MetadataGuardReportsRefusesAndAllows) {
  EXPECT_EQ(
      run_under_guard([] { return raw(SYS_chmod, reinterpret_cast<long>("/nonexistent"), 0644); },
                      ENOSYS),
      "ok");
  EXPECT_EQ(run_under_guard(
                [] { return raw(SYS_fchownat, AT_FDCWD, reinterpret_cast<long>("/x"), 0, 0, 0); },
                ENOSYS),
            "ok");
  EXPECT_EQ(
      run_under_guard([] { return raw(sbx::stage2::kNrSetxattrat, AT_FDCWD, 0, 0, 0, 0); }, ENOSYS),
      "ok");
  EXPECT_EQ(run_under_guard([] { return raw(SYS_ioctl, 0, FS_IOC_SETFLAGS, 0); }, EPERM), "ok");
  EXPECT_EQ(run_under_guard([] { return raw(SYS_getpid) > 0 ? 0L : -1L; }, 0), "ok");
  // The pid scope rides along (pid_scope_filter.hpp): another process refused, pid 0 allowed.
  EXPECT_EQ(
      run_under_guard([] { return raw(SYS_setpriority, PRIO_PROCESS, ::getppid(), 0); }, EPERM),
      "ok");
  EXPECT_EQ(run_under_guard([] { return raw(SYS_sched_setaffinity, ::getppid(), 0, 0); }, EPERM),
            "ok");
  EXPECT_EQ(
      run_under_guard([] { return raw(SYS_getpriority, PRIO_PROCESS, 0) >= 0 ? 0L : -1L; }, 0),
      "ok");
}

// Landlock mode's pid scope (pid_scope_filter.hpp), precompiled the same way.
TEST(SeccompPrecompiled, PidScopeIsWhatLibseccompBuildsAtRunTime) {
  sbx::Result<std::string> built = sbx::stage2::export_pid_scope_bpf();
  ASSERT_TRUE(built.ok()) << built.error();
  EXPECT_EQ(sbx::stage2::program_bytes(sbx::stage2::pid_scope_program()), *built);
}

TEST(SeccompPrecompiled, PidScopeBytesMatchTheGoldenFile) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden program is for x86_64 (syscall numbers and audit arch)";
#endif
  const std::filesystem::path dir = std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp";
  sbx::test::expect_golden(dir / "bpf-pid-scope.txt", dump(sbx::stage2::pid_scope_program()));
}

std::string run_under_pid_scope(const std::function<long()>& probe, int expected_errno) {
  return sbx_seccomp_test::run_in_filtered_child(
      [] { return sbx::stage2::load_pid_scope_program_raw() == 0; }, probe, expected_errno);
}

// Every call that changes another process is refused when it names one; naming the caller the
// kernel's way (0) passes, reading passes. The other process is a sleeper of the test's own, and
// the group forms name a process group and a user that have no process (the kernel would answer
// ESRCH, not EPERM): a filter that let them through harms nothing here.
TEST(SeccompPrecompiled, PidScopeRefusesCallsNamingAnotherProcess) {
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(sleeper, 0);
  const long other = sleeper;
  constexpr long kNoSuchGroup = 0x3ffffff0;
  constexpr long kNoSuchUser = 0x3ffffff0;
  const rlimit cpu{1, 1};
  const rlimit core{0, 0};
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  const sched_param param{};
  const auto addr = [](const void* p) { return reinterpret_cast<long>(p); };
  const std::vector<std::pair<const char*, std::function<long()>>> refused = {
      {"prlimit64 (set)", [&] { return raw(SYS_prlimit64, other, RLIMIT_CPU, addr(&cpu), 0); }},
      {"setpriority pid", [&] { return raw(SYS_setpriority, PRIO_PROCESS, other, 19); }},
      {"setpriority pgrp", [] { return raw(SYS_setpriority, PRIO_PGRP, kNoSuchGroup, 19); }},
      {"setpriority user", [] { return raw(SYS_setpriority, PRIO_USER, kNoSuchUser, 19); }},
      {"ioprio_set pid", [&] { return raw(SYS_ioprio_set, 1, other, (2 << 13) | 7); }},
      {"ioprio_set pgrp", [] { return raw(SYS_ioprio_set, 2, kNoSuchGroup, (2 << 13) | 7); }},
      {"ioprio_set user", [] { return raw(SYS_ioprio_set, 3, kNoSuchUser, (2 << 13) | 7); }},
      {"sched_setaffinity",
       [&] { return raw(SYS_sched_setaffinity, other, sizeof set, addr(&set)); }},
      {"sched_setparam", [&] { return raw(SYS_sched_setparam, other, addr(&param)); }},
      {"sched_setscheduler",
       [&] { return raw(SYS_sched_setscheduler, other, SCHED_BATCH, addr(&param)); }},
      {"sched_setattr", [&] { return raw(SYS_sched_setattr, other, 0, 0); }},
      {"own tid", [] { return raw(SYS_setpriority, PRIO_PROCESS, raw(SYS_gettid), 1); }},
  };
  for (const auto& [name, call] : refused)
    EXPECT_EQ(run_under_pid_scope(call, EPERM), "ok") << name;
  const std::vector<std::pair<const char*, std::function<long()>>> allowed = {
      {"prlimit64 self", [&] { return raw(SYS_prlimit64, 0, RLIMIT_CORE, addr(&core), 0); }},
      {"prlimit64 read other",
       [&] {
         rlimit old{};
         return raw(SYS_prlimit64, other, RLIMIT_CPU, 0, addr(&old));
       }},
      {"setpriority self", [] { return raw(SYS_setpriority, PRIO_PROCESS, 0, 1); }},
      {"getpriority other",
       [&] { return raw(SYS_getpriority, PRIO_PROCESS, other) >= 0 ? 0L : -1L; }},
      {"ioprio_set self", [] { return raw(SYS_ioprio_set, 1, 0, (2 << 13) | 7); }},
      {"sched_setaffinity self",
       [&] { return raw(SYS_sched_setaffinity, 0, sizeof set, addr(&set)); }},
      {"sched_getaffinity other",
       [&] {
         cpu_set_t mine;
         return raw(SYS_sched_getaffinity, other, sizeof mine, addr(&mine)) > 0 ? 0L : -1L;
       }},
      {"sched_setscheduler self",
       [&] { return raw(SYS_sched_setscheduler, 0, SCHED_BATCH, addr(&param)); }},
  };
  for (const auto& [name, call] : allowed) EXPECT_EQ(run_under_pid_scope(call, 0), "ok") << name;
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
}

TEST(SeccompPrecompiled, AlwaysDeniedCallsAreRefusedInEveryMode) {
  const std::vector<std::pair<const char*, std::function<long()>>> denied = {
      {"ptrace", [] { return raw(SYS_ptrace, 0); }},
      {"process_vm_readv", [] { return raw(SYS_process_vm_readv, ::getppid()); }},
      {"io_uring_setup", [] { return raw(SYS_io_uring_setup, 1, 0); }},
      {"keyctl", [] { return raw(SYS_keyctl, 0); }},
      {"bpf", [] { return raw(SYS_bpf, 0); }},
      {"perf_event_open", [] { return raw(SYS_perf_event_open, 0); }},
      {"userfaultfd", [] { return raw(SYS_userfaultfd, 0); }},
      {"setns", [] { return raw(SYS_setns, -1, 0); }},
      {"mount", [] { return raw(SYS_mount, 0); }},
      {"umount2", [] { return raw(SYS_umount2, reinterpret_cast<long>("/"), 0); }},
      {"chroot", [] { return raw(SYS_chroot, reinterpret_cast<long>("/")); }},
      {"open_tree", [] { return raw(SYS_open_tree, -1); }},
      {"fsopen", [] { return raw(SYS_fsopen, 0); }},
      {"unshare_user", [] { return raw(SYS_unshare, CLONE_NEWUSER); }},
      {"clone_newns", [] { return raw(SYS_clone, CLONE_NEWNS | SIGCHLD, 0); }},
      {"ioctl_TIOCSTI",
       [] {
         char c = 'x';
         return raw(SYS_ioctl, 0, TIOCSTI, reinterpret_cast<long>(&c));
       }},
      {"fchmodat_setuid",
       [] {
         return raw(SYS_fchmodat, AT_FDCWD, reinterpret_cast<long>("/nonexistent"), S_ISUID | 0755);
       }},
      {"mknodat_chardev",
       [] {
         return raw(SYS_mknodat, AT_FDCWD, reinterpret_cast<long>("/nonexistent"), S_IFCHR | 0600,
                    0);
       }},
  };
  for (NetworkFilter net : kEveryMode) {
    for (const auto& [name, call] : denied)
      EXPECT_EQ(run_precompiled(net, call, EPERM), "ok") << mode_name(net) << ": " << name;
  }
}

TEST(SeccompPrecompiled, UnlistedCallsAnswerEnosys) {
  for (NetworkFilter net : kEveryMode) {
    EXPECT_EQ(run_precompiled(
                  net, [] { return raw(SYS_clone3, 0, 0); }, ENOSYS),
              "ok")
        << mode_name(net);
    EXPECT_EQ(run_precompiled(
                  net, [] { return raw(SYS_openat2, AT_FDCWD, 0, 0, 0); }, ENOSYS),
              "ok")
        << mode_name(net);
  }
}

TEST(SeccompPrecompiled, EachNetworkModeRefusesItsSockets) {
  // Restricted without a namespace of its own: no socket at all.
  for (int family : {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK})
    EXPECT_EQ(run_precompiled(
                  NetworkFilter::kBlocked,
                  [family] { return socket_and_close(family, SOCK_STREAM); }, EPERM),
              "ok")
        << "blocked, family " << family;
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kBlocked, [] { return raw(SYS_connect, 0, 0, 0); }, EPERM),
            "ok");
  // Private namespace: loopback TCP/UDP yes, unix/netlink/raw no.
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kPrivate, [] { return socket_and_close(AF_INET, SOCK_STREAM); }, 0),
            "ok");
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kPrivate, [] { return socket_and_close(AF_INET6, SOCK_DGRAM); }, 0),
            "ok");
  for (int family : {AF_UNIX, AF_NETLINK, AF_PACKET})
    EXPECT_EQ(run_precompiled(
                  NetworkFilter::kPrivate,
                  [family] { return socket_and_close(family, SOCK_DGRAM); }, EPERM),
              "ok")
        << "private, family " << family;
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kPrivate,
                [] {
                  int sv[2];
                  return raw(SYS_socketpair, AF_UNIX, SOCK_DGRAM, 0, reinterpret_cast<long>(sv));
                },
                EPERM),
            "ok");
  // Proxy (Landlock mode): TCP only, no listening.
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kProxy, [] { return socket_and_close(AF_INET, SOCK_STREAM); }, 0),
            "ok");
  EXPECT_EQ(
      run_precompiled(
          NetworkFilter::kProxy, [] { return socket_and_close(AF_UNIX, SOCK_STREAM); }, EPERM),
      "ok");
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kProxy, [] { return raw(SYS_listen, 0, 0); }, EPERM),
            "ok");
  // Enabled: every socket but vsock.
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kOpen, [] { return socket_and_close(AF_UNIX, SOCK_STREAM); }, 0),
            "ok");
  EXPECT_EQ(
      run_precompiled(
          NetworkFilter::kOpen, [] { return socket_and_close(kAfVsock, SOCK_STREAM); }, EPERM),
      "ok");
}

long socketpair_and_close(int type) {
  int sv[2] = {-1, -1};
  const long rc = raw(SYS_socketpair, AF_UNIX, type, 0, reinterpret_cast<long>(sv));
  if (rc == 0) {
    ::close(sv[0]);
    ::close(sv[1]);
  }
  return rc;
}

// Landlock with the metadata guard: the main filter refuses what blocked and proxy refuse,
// except unix datagram socket()/socketpair(), which it leaves to the guard's program (a refusal
// here would win over the guard's notification).
TEST(SeccompPrecompiled, GuardedModesLeaveUnixDatagramsToTheGuard) {
  for (NetworkFilter net : {NetworkFilter::kBlockedGuarded, NetworkFilter::kProxyGuarded}) {
    for (int type : std::initializer_list<int>{SOCK_DGRAM, SOCK_RAW,
                                               SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK}) {
      EXPECT_EQ(run_precompiled(
                    net, [type] { return socket_and_close(AF_UNIX, type); }, 0),
                "ok")
          << mode_name(net) << " socket type " << type;
      EXPECT_EQ(run_precompiled(
                    net, [type] { return socketpair_and_close(type); }, 0),
                "ok")
          << mode_name(net) << " socketpair type " << type;
    }
    for (int type : {SOCK_STREAM, SOCK_SEQPACKET})
      EXPECT_EQ(run_precompiled(
                    net, [type] { return socket_and_close(AF_UNIX, type); }, EPERM),
                "ok")
          << mode_name(net) << " unix socket type " << type;
    for (int family : {AF_NETLINK, AF_PACKET, kAfVsock})
      EXPECT_EQ(run_precompiled(
                    net, [family] { return socket_and_close(family, SOCK_DGRAM); }, EPERM),
                "ok")
          << mode_name(net) << " family " << family;
    // A family with upper bits set (the kernel reads its low 32 bits: AF_UNIX) is refused.
    EXPECT_EQ(run_precompiled(
                  net, [] { return raw(SYS_socket, (1L << 32) | AF_UNIX, SOCK_DGRAM, 0); }, EPERM),
              "ok")
        << mode_name(net);
    EXPECT_EQ(run_precompiled(
                  net,
                  [] {
                    int sv[2];
                    return raw(SYS_socketpair, AF_INET, SOCK_DGRAM, 0, reinterpret_cast<long>(sv));
                  },
                  EPERM),
              "ok")
        << mode_name(net);
    EXPECT_EQ(run_precompiled(
                  net, [] { return raw(SYS_bind, 0, 0, 0); }, EPERM),
              "ok")
        << mode_name(net);
  }
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kBlockedGuarded,
                [] { return socket_and_close(AF_INET, SOCK_STREAM); }, EPERM),
            "ok");
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kBlockedGuarded, [] { return raw(SYS_connect, 0, 0, 0); }, EPERM),
            "ok");
  EXPECT_EQ(
      run_precompiled(
          NetworkFilter::kProxyGuarded, [] { return socket_and_close(AF_INET6, SOCK_STREAM); }, 0),
      "ok");
  for (int type : {SOCK_DGRAM, SOCK_RAW})
    EXPECT_EQ(run_precompiled(
                  NetworkFilter::kProxyGuarded, [type] { return socket_and_close(AF_INET, type); },
                  EPERM),
              "ok")
        << "proxy-guarded inet type " << type;
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kProxyGuarded,
                [] { return raw(SYS_socket, AF_INET, SOCK_STREAM, 262); }, EPERM),
            "ok");  // IPPROTO_MPTCP
}

// The guard's program notifies unix datagram socket()/socketpair() (with its listener closed
// here, a notified call fails with ENOSYS) and lets stream and seqpacket ones pass.
TEST(SeccompPrecompiled, MetadataGuardReportsUnixDatagramSockets) {
  for (int type : std::initializer_list<int>{SOCK_DGRAM, SOCK_RAW, SOCK_DGRAM | SOCK_CLOEXEC,
                                             SOCK_RDM, 0, 0xf}) {
    EXPECT_EQ(run_under_guard([type] { return socket_and_close(AF_UNIX, type); }, ENOSYS), "ok")
        << "socket type " << type;
    EXPECT_EQ(run_under_guard([type] { return socketpair_and_close(type); }, ENOSYS), "ok")
        << "socketpair type " << type;
  }
  for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    EXPECT_EQ(run_under_guard([type] { return socket_and_close(AF_UNIX, type); }, 0), "ok")
        << "socket type " << type;
    EXPECT_EQ(run_under_guard([type] { return socketpair_and_close(type); }, 0), "ok")
        << "socketpair type " << type;
  }
  EXPECT_EQ(run_under_guard([] { return socket_and_close(AF_INET, SOCK_DGRAM); }, 0), "ok");
}

// The unix datagram guard (an unrestricted filesystem's guard): the metadata guard without its
// metadata rules, precompiled the same way.
TEST(SeccompPrecompiled, UnixGuardIsWhatLibseccompBuildsAtRunTime) {
  sbx::Result<std::string> built = sbx::stage2::export_unix_guard_bpf();
  ASSERT_TRUE(built.ok()) << built.error();
  EXPECT_EQ(sbx::stage2::program_bytes(sbx::stage2::unix_guard_program()), *built);
}

TEST(SeccompPrecompiled, UnixGuardBytesMatchTheGoldenFile) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden program is for x86_64 (syscall numbers and audit arch)";
#endif
  const std::filesystem::path dir = std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp";
  sbx::test::expect_golden(dir / "bpf-unix-guard.txt", dump(sbx::stage2::unix_guard_program()));
}

// Loaded on its own with its listener closed: unix datagram socket calls are reported (ENOSYS),
// metadata changes are not (the filesystem is unrestricted), the pid scope rides along.
TEST(SeccompPrecompiled, UnixGuardReportsOnlyUnixDatagramsAndCarriesThePidScope) {
  const auto run_under_unix_guard = [](const std::function<long()>& probe, int expected_errno) {
    return sbx_seccomp_test::run_in_filtered_child(
        [] {
          const int listener = sbx::stage2::load_metadata_guard_program(false);
          if (listener < 0) return false;
          ::close(listener);
          return true;
        },
        probe, expected_errno);
  };
  EXPECT_EQ(run_under_unix_guard([] { return socket_and_close(AF_UNIX, SOCK_DGRAM); }, ENOSYS),
            "ok");
  EXPECT_EQ(run_under_unix_guard([] { return socketpair_and_close(SOCK_RAW); }, ENOSYS), "ok");
  EXPECT_EQ(run_under_unix_guard([] { return socketpair_and_close(SOCK_STREAM); }, 0), "ok");
  EXPECT_EQ(
      run_under_unix_guard(
          [] { return raw(SYS_chmod, reinterpret_cast<long>("/nonexistent"), 0644); }, ENOENT),
      "ok");
  EXPECT_EQ(run_under_unix_guard([] { return raw(SYS_setpriority, PRIO_PROCESS, ::getppid(), 0); },
                                 EPERM),
            "ok");
}

// The connect variants (Landlock with the network enabled): each guard with every connect() and
// bind() notified too, precompiled the same way.
TEST(SeccompPrecompiled, ConnectGuardsAreWhatLibseccompBuildsAtRunTime) {
  for (const bool metadata : {true, false}) {
    sbx::Result<std::string> built = sbx::stage2::export_connect_guard_bpf(metadata);
    ASSERT_TRUE(built.ok()) << built.error();
    EXPECT_EQ(sbx::stage2::program_bytes(sbx::stage2::connect_guard_program(metadata)), *built)
        << (metadata ? "metadata" : "unix");
  }
}

TEST(SeccompPrecompiled, ConnectGuardBytesMatchTheGoldenFile) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden program is for x86_64 (syscall numbers and audit arch)";
#endif
  const std::filesystem::path dir = std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp";
  sbx::test::expect_golden(dir / "bpf-unix-connect-guard.txt",
                           dump(sbx::stage2::connect_guard_program(false)));
}

// Loaded on its own with its listener closed: connect() and bind() of any family are reported
// (ENOSYS from the absent supervisor), and the unix datagram rules and pid scope ride along.
TEST(SeccompPrecompiled, ConnectGuardReportsEveryConnectAndBind) {
  for (const bool metadata : {true, false}) {
    const auto run_under = [metadata](const std::function<long()>& probe, int expected_errno) {
      return sbx_seccomp_test::run_in_filtered_child(
          [metadata] {
            const int listener = sbx::stage2::load_metadata_guard_program(metadata, true);
            if (listener < 0) return false;
            ::close(listener);
            return true;
          },
          probe, expected_errno);
    };
    const auto call_on_socket = [](int family, long nr) {
      const int fd = ::socket(family, SOCK_STREAM, 0);
      if (fd < 0) return -2L;
      sockaddr_storage address{};
      address.ss_family = static_cast<sa_family_t>(family);
      const long length =
          static_cast<long>(family == AF_UNIX ? sizeof(sa_family_t) + 2 : sizeof(sockaddr_in));
      const long rc = raw(nr, fd, reinterpret_cast<long>(&address), length);
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return rc;
    };
    for (const int family : {AF_UNIX, AF_INET}) {
      EXPECT_EQ(run_under([&] { return call_on_socket(family, SYS_connect); }, ENOSYS), "ok");
      EXPECT_EQ(run_under([&] { return call_on_socket(family, SYS_bind); }, ENOSYS), "ok");
    }
    EXPECT_EQ(run_under([] { return socket_and_close(AF_UNIX, SOCK_DGRAM); }, ENOSYS), "ok");
    EXPECT_EQ(run_under([] { return socketpair_and_close(SOCK_STREAM); }, 0), "ok");
    EXPECT_EQ(run_under([] { return raw(SYS_setpriority, PRIO_PROCESS, ::getppid(), 0); }, EPERM),
              "ok");
  }
}

TEST(SeccompPrecompiled, OrdinaryWorkStillRuns) {
  for (NetworkFilter net : kEveryMode) {
    EXPECT_EQ(run_precompiled(
                  net,
                  [] {
                    if (raw(SYS_unshare, CLONE_FILES) != 0) return -1L;
                    const pid_t child = ::fork();
                    if (child == 0) ::_exit(0);
                    int st = 0;
                    return ::waitpid(child, &st, 0) == child && WIFEXITED(st) ? 0L : -1L;
                  },
                  0),
              "ok")
        << mode_name(net);
  }
}

#if defined(__x86_64__)
// getpid through the i386 entry point (number 20 there): a call of another architecture.
long i386_getpid() {
  long rc = 20;
  asm volatile("int $0x80" : "+a"(rc) : : "memory");
  return rc;
}

TEST(SeccompPrecompiled, CallsOfAnotherArchitectureKillTheProcess) {
  // Without a filter first: a kernel without IA-32 emulation faults instead, and there is
  // nothing to check.
  const pid_t control = ::fork();
  if (control == 0) ::_exit(i386_getpid() == ::getpid() ? 0 : 1);
  int status = 0;
  ::waitpid(control, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    GTEST_SKIP() << "this kernel does not run i386 system calls (no IA-32 emulation)";
  EXPECT_EQ(run_precompiled(
                NetworkFilter::kOpen, [] { return i386_getpid(); }, 0),
            "child died of signal " + std::to_string(SIGSYS));
}
#endif

// File leases (seccomp_filter.cpp add_lease_rules): F_SETLEASE refused in every mode, also
// with bits above the 32 the kernel reads; reading the lease and advisory locks work. The file
// is the test's own, so without the filter the lease would be granted.
TEST(SeccompPrecompiled, FileLeasesAreRefusedLocksWork) {
  char path[] = "/tmp/sbx-lease-XXXXXX";
  const int made = ::mkstemp(path);
  ASSERT_GE(made, 0);
  ::close(made);
  const std::string file = path;
  const auto with_read_only = [file](const std::function<long(int)>& call) {
    return [file, call]() -> long {
      const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return -1;
      const long rc = call(fd);
      const int error = errno;
      ::close(fd);
      errno = error;
      return rc;
    };
  };
  const long high_bits = (1L << 32) | F_SETLEASE;
  for (NetworkFilter net : kEveryMode) {
    const std::string mode = mode_name(net);
    EXPECT_EQ(run_precompiled(net, with_read_only([](int fd) {
                                return raw(SYS_fcntl, fd, F_SETLEASE, F_RDLCK);
                              }),
                              EPERM),
              "ok")
        << mode;
    EXPECT_EQ(run_precompiled(net, with_read_only([high_bits](int fd) {
                                return raw(SYS_fcntl, fd, high_bits, F_RDLCK);
                              }),
                              EPERM),
              "ok")
        << mode << ": bits above 32";
    EXPECT_EQ(run_precompiled(
                  net, with_read_only([](int fd) { return raw(SYS_fcntl, fd, F_GETLEASE); }), 0),
              "ok")
        << mode;
    EXPECT_EQ(run_precompiled(net, with_read_only([](int fd) {
                                struct flock lock {};
                                lock.l_type = F_RDLCK;
                                return raw(SYS_fcntl, fd, F_SETLK, reinterpret_cast<long>(&lock));
                              }),
                              0),
              "ok")
        << mode;
    EXPECT_EQ(
        run_precompiled(net, with_read_only([](int fd) { return raw(SYS_flock, fd, LOCK_EX); }), 0),
        "ok")
        << mode;
  }
  // Without the filter the same lease is granted: the refusal above is the filter's.
  EXPECT_EQ(sbx_seccomp_test::run_in_filtered_child(
                [] { return true; },
                with_read_only([](int fd) { return raw(SYS_fcntl, fd, F_SETLEASE, F_RDLCK); }), 0),
            "ok");
  ::unlink(path);
}

// Landlock mode's host IPC refusals (pid_scope_filter.hpp add_host_ipc_rules), in the pid
// scope's own program and in the metadata guard's: every SysV IPC and POSIX mq call is EPERM,
// whatever it names (the arguments here name nothing that exists).
TEST(SeccompPrecompiled, HostIpcCallsAreRefusedInLandlocksPrograms) {
  const std::vector<std::pair<const char*, std::function<long()>>> refused = {
      {"shmget", [] { return raw(SYS_shmget, IPC_PRIVATE, 4096, IPC_CREAT | 0600); }},
      {"shmat", [] { return raw(SYS_shmat, 0x7ffffff0, 0, SHM_RDONLY); }},
      {"shmctl", [] { return raw(SYS_shmctl, 0x7ffffff0, IPC_RMID, 0); }},
      {"shmdt", [] { return raw(SYS_shmdt, 0); }},
      {"msgget", [] { return raw(SYS_msgget, IPC_PRIVATE, IPC_CREAT | 0600); }},
      {"msgsnd", [] { return raw(SYS_msgsnd, 0x7ffffff0, 0, 0, IPC_NOWAIT); }},
      {"msgrcv", [] { return raw(SYS_msgrcv, 0x7ffffff0, 0, 0, 0, IPC_NOWAIT); }},
      {"msgctl", [] { return raw(SYS_msgctl, 0x7ffffff0, IPC_RMID, 0); }},
      {"semget", [] { return raw(SYS_semget, IPC_PRIVATE, 1, IPC_CREAT | 0600); }},
      {"semop", [] { return raw(SYS_semop, 0x7ffffff0, 0, 0); }},
      {"semtimedop", [] { return raw(SYS_semtimedop, 0x7ffffff0, 0, 0, 0); }},
      {"semctl", [] { return raw(SYS_semctl, 0x7ffffff0, 0, IPC_RMID); }},
      {"mq_open",
       [] { return raw(SYS_mq_open, reinterpret_cast<long>("sbx-none"), O_RDONLY, 0, 0); }},
      {"mq_unlink", [] { return raw(SYS_mq_unlink, reinterpret_cast<long>("sbx-none")); }},
      {"mq_timedsend", [] { return raw(SYS_mq_timedsend, -1, 0, 0, 0, 0); }},
      {"mq_timedreceive", [] { return raw(SYS_mq_timedreceive, -1, 0, 0, 0, 0); }},
      {"mq_notify", [] { return raw(SYS_mq_notify, -1, 0); }},
      {"mq_getsetattr", [] { return raw(SYS_mq_getsetattr, -1, 0, 0); }},
  };
  for (const auto& [name, call] : refused) {
    EXPECT_EQ(run_under_pid_scope(call, EPERM), "ok") << name << " (pid scope)";
    EXPECT_EQ(run_under_guard(call, EPERM), "ok") << name << " (metadata guard)";
  }
  // Without them the kernel answers: the refusal is the programs'.
  EXPECT_EQ(
      sbx_seccomp_test::run_in_filtered_child(
          [] { return true; }, [] { return raw(SYS_msgctl, 0x7ffffff0, IPC_RMID, 0); }, EINVAL),
      "ok");
}

}  // namespace
