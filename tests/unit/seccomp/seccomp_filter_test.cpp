// The sbx-stage2 seccomp filter: its exported text form against a golden file, and every rule
// exercised for real in a forked child (the filter cannot be removed once installed).
#include "seccomp_filter.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "filtered_child.hpp"
#include "sbx_test/golden.hpp"

namespace {

using sbx::stage2::NetworkFilter;

using sbx_seccomp_test::raw;
using sbx_seccomp_test::run_filtered;

struct Rule {
  const char* name;
  std::function<long()> call;
};

std::vector<Rule> always_denied() {
  return {
      {"ptrace", [] { return raw(SYS_ptrace, 0 /*PTRACE_TRACEME*/); }},
      {"process_vm_readv", [] { return raw(SYS_process_vm_readv, ::getppid()); }},
      {"process_vm_writev", [] { return raw(SYS_process_vm_writev, ::getppid()); }},
      {"io_uring_setup", [] { return raw(SYS_io_uring_setup, 1, 0); }},
      {"io_uring_enter", [] { return raw(SYS_io_uring_enter, -1); }},
      {"io_uring_register", [] { return raw(SYS_io_uring_register, -1); }},
      {"keyctl", [] { return raw(SYS_keyctl, 0); }},
      {"add_key", [] { return raw(SYS_add_key, 0); }},
      {"request_key", [] { return raw(SYS_request_key, 0); }},
      {"bpf", [] { return raw(SYS_bpf, 0); }},
      {"perf_event_open", [] { return raw(SYS_perf_event_open, 0); }},
      {"userfaultfd", [] { return raw(SYS_userfaultfd, 0); }},
      {"ioctl_TIOCSTI",
       [] {
         char c = 'x';
         return raw(SYS_ioctl, 0, TIOCSTI, reinterpret_cast<long>(&c));
       }},
      {"setns", [] { return raw(SYS_setns, -1, 0); }},
      {"mount", [] { return raw(SYS_mount, 0); }},
      {"umount2", [] { return raw(SYS_umount2, reinterpret_cast<long>("/"), 0); }},
      {"pivot_root", [] { return raw(SYS_pivot_root, 0, 0); }},
      {"chroot", [] { return raw(SYS_chroot, reinterpret_cast<long>("/")); }},
      {"open_tree", [] { return raw(SYS_open_tree, -1); }},
      {"move_mount", [] { return raw(SYS_move_mount, -1); }},
      {"fsopen", [] { return raw(SYS_fsopen, 0); }},
      {"fsconfig", [] { return raw(SYS_fsconfig, -1); }},
      {"fsmount", [] { return raw(SYS_fsmount, -1); }},
      {"fspick", [] { return raw(SYS_fspick, -1); }},
      {"mount_setattr", [] { return raw(SYS_mount_setattr, -1); }},
      {"unshare_user", [] { return raw(SYS_unshare, CLONE_NEWUSER); }},
      {"unshare_mount", [] { return raw(SYS_unshare, CLONE_NEWNS); }},
      {"unshare_net", [] { return raw(SYS_unshare, CLONE_NEWNET); }},
      {"unshare_time", [] { return raw(SYS_unshare, 0x80); }},
      {"unshare_user_and_files", [] { return raw(SYS_unshare, CLONE_NEWUSER | CLONE_FILES); }},
      // Never reaches the kernel's clone: the filter answers first, so no child is made.
      {"clone_newuser", [] { return raw(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0); }},
      {"clone_newpid", [] { return raw(SYS_clone, CLONE_NEWPID | SIGCHLD, 0); }},
  };
}

std::vector<Rule> network_denied() {
  return {
      {"socket_inet", [] { return raw(SYS_socket, AF_INET, SOCK_STREAM, 0); }},
      {"socket_inet6", [] { return raw(SYS_socket, AF_INET6, SOCK_DGRAM, 0); }},
      {"socket_netlink", [] { return raw(SYS_socket, AF_NETLINK, SOCK_RAW, 0); }},
      {"socket_packet", [] { return raw(SYS_socket, AF_PACKET, SOCK_RAW, 0); }},
      {"socket_unix", [] { return raw(SYS_socket, AF_UNIX, SOCK_STREAM, 0); }},
      {"socketpair_inet",
       [] {
         int sv[2];
         return raw(SYS_socketpair, AF_INET, SOCK_STREAM, 0, reinterpret_cast<long>(sv));
       }},
      {"connect", [] { return raw(SYS_connect, 0, 0, 0); }},
      {"bind", [] { return raw(SYS_bind, 0, 0, 0); }},
      {"listen", [] { return raw(SYS_listen, 0, 0); }},
      {"accept", [] { return raw(SYS_accept, 0, 0, 0); }},
      {"accept4", [] { return raw(SYS_accept4, 0, 0, 0, 0); }},
      {"sendmmsg", [] { return raw(SYS_sendmmsg, 0, 0, 0, 0); }},
      {"sendto_with_address",
       [] {
         char b = 0;
         return raw(SYS_sendto, 1, reinterpret_cast<long>(&b), 1, 0, 1);
       }},
  };
}

TEST(SeccompFilter, AlwaysDeniedInEveryMode) {
  for (NetworkFilter net : {NetworkFilter::kBlocked, NetworkFilter::kOpen, NetworkFilter::kProxy,
                            NetworkFilter::kPrivate}) {
    for (const Rule& rule : always_denied())
      EXPECT_EQ(run_filtered(net, rule.call, EPERM), "ok") << rule.name;
  }
}

TEST(SeccompFilter, Clone3AnswersEnosysSoLibcFallsBackToClone) {
  EXPECT_EQ(run_filtered(
                NetworkFilter::kBlocked, [] { return raw(SYS_clone3, 0, 0); }, ENOSYS),
            "ok");
}

TEST(SeccompFilter, RestrictedNetworkDeniesEverySocketEndpoint) {
  for (const Rule& rule : network_denied())
    EXPECT_EQ(run_filtered(NetworkFilter::kBlocked, rule.call, EPERM), "ok") << rule.name;
}

TEST(SeccompFilter, RestrictedNetworkKeepsUnixSocketpairAndConnectedSends) {
  EXPECT_EQ(run_filtered(
                NetworkFilter::kBlocked,
                [] {
                  int sv[2];
                  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1L;
                  char b = 'x';
                  if (::send(sv[0], &b, 1, 0) != 1) return -1L;  // sendto without an address
                  return static_cast<long>(::recv(sv[1], &b, 1, 0)) == 1 ? 0L : -1L;
                },
                0),
            "ok");
}

TEST(SeccompFilter, OpenNetworkAllowsSockets) {
  for (int family : {AF_INET, AF_INET6, AF_UNIX}) {
    EXPECT_EQ(run_filtered(
                  NetworkFilter::kOpen,
                  [family] {
                    const int fd = ::socket(family, SOCK_STREAM, 0);
                    return fd < 0 ? -1L : static_cast<long>(::close(fd));
                  },
                  0),
              "ok")
        << "family " << family;
  }
}

TEST(SeccompFilter, OrdinaryWorkStillRuns) {
  EXPECT_EQ(run_filtered(
                NetworkFilter::kBlocked,
                [] {
                  if (raw(SYS_unshare, CLONE_FILES) != 0) return -1L;  // no namespace flag
                  const pid_t child = ::fork();                        // clone without flags
                  if (child == 0) ::_exit(0);
                  int st = 0;
                  return ::waitpid(child, &st, 0) == child && WIFEXITED(st) ? 0L : -1L;
                },
                0),
            "ok");
}

TEST(SeccompFilter, ParsesNetworkWords) {
  EXPECT_TRUE(sbx::stage2::parse_network_filter("blocked").ok());
  EXPECT_TRUE(sbx::stage2::parse_network_filter("open").ok());
  const auto private_net = sbx::stage2::parse_network_filter("private");
  ASSERT_TRUE(private_net.ok());
  EXPECT_EQ(*private_net, NetworkFilter::kPrivate);
  const auto bad = sbx::stage2::parse_network_filter("restricted");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("'restricted'"), std::string::npos);
}

class SeccompGolden : public ::testing::TestWithParam<std::pair<const char*, NetworkFilter>> {};

TEST_P(SeccompGolden, ExportedTextMatches) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden PFC text is for x86_64 syscall numbers";
#endif
  const auto& [name, net] = GetParam();
  const std::filesystem::path file =
      std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp" / (std::string(name) + ".pfc");
  sbx::Result<std::string> text = sbx::stage2::export_filter_text(net);
  ASSERT_TRUE(text.ok()) << text.error();
  sbx::test::expect_golden(file, *text);
}

INSTANTIATE_TEST_SUITE_P(Modes, SeccompGolden,
                         ::testing::Values(std::make_pair("blocked", NetworkFilter::kBlocked),
                                           std::make_pair("open", NetworkFilter::kOpen),
                                           std::make_pair("proxy", NetworkFilter::kProxy),
                                           std::make_pair("private", NetworkFilter::kPrivate)),
                         [](const ::testing::TestParamInfo<SeccompGolden::ParamType>& p) {
                           return std::string(p.param.first);
                         });

}  // namespace
