// The proxy-mode seccomp filter (network.mode proxy): TCP sockets over IPv4/IPv6 and connect()
// work; every other socket (unix, netlink, packet, UDP, raw, MPTCP), listening and TCP Fast Open
// are refused with EPERM; the always-on rules still hold. Each probe runs in a forked child.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

#include "sbx_test/golden.hpp"
#include "seccomp_filter.hpp"

namespace {

using sbx::stage2::NetworkFilter;

// The child exits 0 when the probe's errno is `expected` (0: success), else a code naming it.
std::string run_proxy_filtered(const std::function<long()>& probe, int expected) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(2);
    if (!sbx::stage2::install_filter(NetworkFilter::kProxy).ok()) ::_exit(2);
    errno = 0;
    const long rc = probe();
    const int err = rc < 0 ? errno : 0;
    ::_exit(err == expected ? 0 : (err == 0 ? 3 : 10 + (err % 100)));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died of signal " + std::to_string(WTERMSIG(status));
  switch (WEXITSTATUS(status)) {
    case 0:
      return "ok";
    case 2:
      return "filter not installed";
    case 3:
      return "syscall succeeded";
    default:
      return "errno " + std::to_string(WEXITSTATUS(status) - 10);
  }
}

long socket_call(long family, long type, long protocol) {
  return ::syscall(SYS_socket, family, type, protocol);
}

// A TCP socket connected nowhere yet, for the send/setsockopt probes (created before nothing is
// filtered: the filter allows it anyway).
long with_tcp_socket(const std::function<long(int)>& use) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  return use(fd);
}

TEST(SeccompProxy, TcpSocketsAreAllowed) {
  EXPECT_EQ(run_proxy_filtered([] { return socket_call(AF_INET, SOCK_STREAM, 0); }, 0), "ok");
  EXPECT_EQ(run_proxy_filtered(
                [] { return socket_call(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP); }, 0),
            "ok");
  EXPECT_EQ(run_proxy_filtered(
                [] { return socket_call(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP); }, 0),
            "ok");
}

TEST(SeccompProxy, ConnectIsAllowed) {
  // A loopback port nobody listens on: the kernel answers, not the filter.
  auto probe = [] {
    return with_tcp_socket([](int fd) {
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(1);
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return static_cast<long>(
          ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address));
    });
  };
  EXPECT_EQ(run_proxy_filtered(probe, ECONNREFUSED), "ok");
}

TEST(SeccompProxy, EveryOtherSocketIsRefused) {
  struct Case {
    const char* name;
    long family, type, protocol;
  };
  const Case cases[] = {
      {"unix stream", AF_UNIX, SOCK_STREAM, 0},
      {"unix datagram", AF_UNIX, SOCK_DGRAM, 0},
      {"unspec", AF_UNSPEC, SOCK_STREAM, 0},
      {"netlink", AF_NETLINK, SOCK_RAW, 0},
      {"packet", AF_PACKET, SOCK_RAW, 0},
      {"udp", AF_INET, SOCK_DGRAM, 0},
      {"udp6", AF_INET6, SOCK_DGRAM, IPPROTO_UDP},
      {"raw", AF_INET, SOCK_RAW, IPPROTO_ICMP},
      {"seqpacket", AF_INET, SOCK_SEQPACKET, 0},
      {"mptcp", AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */},
      {"udp protocol on a stream", AF_INET, SOCK_STREAM, IPPROTO_UDP},
      {"ax25 (between inet and inet6)", 3, SOCK_STREAM, 0},
      {"upper bits on the family", (1L << 32) | AF_INET, SOCK_STREAM, 0},
      {"upper bits on the protocol", AF_INET, SOCK_STREAM, (1L << 32)},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(run_proxy_filtered([&] { return socket_call(c.family, c.type, c.protocol); }, EPERM),
              "ok")
        << c.name;
  }
}

TEST(SeccompProxy, OnlyUnixSocketPairs) {
  int fds[2];
  EXPECT_EQ(run_proxy_filtered(
                [&] { return static_cast<long>(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds)); }, 0),
            "ok");
  EXPECT_EQ(
      run_proxy_filtered(
          [&] { return static_cast<long>(::socketpair(AF_INET, SOCK_STREAM, 0, fds)); }, EPERM),
      "ok");
}

TEST(SeccompProxy, NoListeningAndNoFastOpen) {
  auto bind_any = [] {
    return with_tcp_socket([](int fd) {
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return static_cast<long>(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address));
    });
  };
  EXPECT_EQ(run_proxy_filtered(bind_any, EPERM), "ok") << "bind";
  EXPECT_EQ(
      run_proxy_filtered(
          [] { return with_tcp_socket([](int fd) { return static_cast<long>(::listen(fd, 1)); }); },
          EPERM),
      "ok")
      << "listen";
  EXPECT_EQ(
      run_proxy_filtered([] { return static_cast<long>(::accept(0, nullptr, nullptr)); }, EPERM),
      "ok")
      << "accept";
  EXPECT_EQ(run_proxy_filtered([] { return static_cast<long>(::accept4(0, nullptr, nullptr, 0)); },
                               EPERM),
            "ok")
      << "accept4";
  auto fastopen_sendto = [] {
    return with_tcp_socket([](int fd) {
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(1);
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return static_cast<long>(::sendto(fd, "x", 1, MSG_FASTOPEN,
                                        reinterpret_cast<sockaddr*>(&address), sizeof address));
    });
  };
  EXPECT_EQ(run_proxy_filtered(fastopen_sendto, EPERM), "ok") << "sendto MSG_FASTOPEN";
  auto fastopen_sendmsg = [] {
    return with_tcp_socket([](int fd) {
      msghdr message{};
      return static_cast<long>(::sendmsg(fd, &message, MSG_FASTOPEN));
    });
  };
  EXPECT_EQ(run_proxy_filtered(fastopen_sendmsg, EPERM), "ok") << "sendmsg MSG_FASTOPEN";
  auto fastopen_connect = [] {
    return with_tcp_socket([](int fd) {
      const int one = 1;
      return static_cast<long>(
          ::setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one));
    });
  };
  EXPECT_EQ(run_proxy_filtered(fastopen_connect, EPERM), "ok") << "TCP_FASTOPEN_CONNECT";
  auto nodelay = [] {
    return with_tcp_socket([](int fd) {
      const int one = 1;
      return static_cast<long>(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
    });
  };
  EXPECT_EQ(run_proxy_filtered(nodelay, 0), "ok") << "other TCP options stay allowed";
}

TEST(SeccompProxy, AlwaysRulesStillHold) {
  EXPECT_EQ(run_proxy_filtered([] { return ::syscall(SYS_ptrace, 0 /*PTRACE_TRACEME*/); }, EPERM),
            "ok");
  EXPECT_EQ(run_proxy_filtered([] { return ::syscall(SYS_unshare, CLONE_NEWUSER); }, EPERM), "ok");
}

TEST(SeccompProxy, ParsesTheWord) {
  sbx::Result<NetworkFilter> net = sbx::stage2::parse_network_filter("proxy");
  ASSERT_TRUE(net.ok());
  EXPECT_EQ(*net, NetworkFilter::kProxy);
}

TEST(SeccompProxy, ExportedTextMatchesGolden) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden PFC text is for x86_64 syscall numbers";
#endif
  const std::filesystem::path file =
      std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp" / "proxy.pfc";
  sbx::Result<std::string> text = sbx::stage2::export_filter_text(NetworkFilter::kProxy);
  ASSERT_TRUE(text.ok()) << text.error();
  sbx::test::expect_golden(file, *text);
}

}  // namespace
