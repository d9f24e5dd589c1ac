// The private-network-namespace seccomp filter (bwrap's --unshare-net with network restricted
// or proxy): TCP and UDP over IPv4/IPv6 may bind, listen, accept, connect and send on loopback;
// unix, netlink, packet, raw, ping and other sockets stay refused with EPERM; socketpair(AF_UNIX)
// and the always-on rules hold. Each probe runs in a forked child (filtered_child.hpp). The
// child shares the test's network namespace, which is harmless: the probes only use loopback.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "filtered_child.hpp"

namespace {

using sbx::stage2::NetworkFilter;
using sbx_seccomp_test::raw;
using sbx_seccomp_test::run_filtered;

std::string run_private(const std::function<long()>& probe, int expected) {
  return run_filtered(NetworkFilter::kPrivate, probe, expected);
}

// A server bound to `address` on an ephemeral port, a client connected to it, one byte each
// way: every call the filter must let through for a loopback TCP server (socket, bind, listen,
// getsockname, connect, accept4, send, recv).
long tcp_round_trip(int family, const char* address) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    if (::inet_pton(AF_INET, address, &in->sin_addr) != 1) return -1;
    length = sizeof *in;
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    if (::inet_pton(AF_INET6, address, &in6->sin6_addr) != 1) return -1;
    length = sizeof *in6;
  }
  auto* sa = reinterpret_cast<sockaddr*>(&storage);
  const int server = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (server < 0 || ::bind(server, sa, length) != 0 || ::listen(server, 1) != 0) return -1;
  if (::getsockname(server, sa, &length) != 0) return -1;
  const int client = ::socket(family, SOCK_STREAM, IPPROTO_TCP);
  if (client < 0 || ::connect(client, sa, length) != 0) return -1;
  const int accepted = ::accept4(server, nullptr, nullptr, SOCK_CLOEXEC);
  if (accepted < 0) return -1;
  char b = 'x';
  if (::send(client, &b, 1, 0) != 1 || ::recv(accepted, &b, 1, 0) != 1) return -1;
  return 0;
}

// A UDP socket bound to 127.0.0.1 that sends to itself with sendto, sendmsg and sendmmsg (each
// names the destination) and receives all three datagrams.
long udp_self_sends() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  auto* sa = reinterpret_cast<sockaddr*>(&address);
  if (fd < 0 || ::bind(fd, sa, length) != 0 || ::getsockname(fd, sa, &length) != 0) return -1;
  char b = 'u';
  if (::sendto(fd, &b, 1, 0, sa, length) != 1) return -1;
  iovec iov{&b, 1};
  msghdr message{};
  message.msg_name = sa;
  message.msg_namelen = length;
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  if (::sendmsg(fd, &message, 0) != 1) return -1;
  mmsghdr batch{message, 0};
  if (::sendmmsg(fd, &batch, 1, 0) != 1) return -1;
  for (int i = 0; i < 3; ++i) {
    if (::recv(fd, &b, 1, 0) != 1) return -1;
  }
  return 0;
}

TEST(SeccompPrivateNet, LoopbackTcpServerAndClientWorkOnIpv4Ipv6AndMapped) {
  EXPECT_EQ(run_private([] { return tcp_round_trip(AF_INET, "127.0.0.1"); }, 0), "ok");
  EXPECT_EQ(run_private([] { return tcp_round_trip(AF_INET6, "::1"); }, 0), "ok");
  EXPECT_EQ(run_private([] { return tcp_round_trip(AF_INET6, "::ffff:127.0.0.1"); }, 0), "ok");
}

TEST(SeccompPrivateNet, UdpSendsWithADestinationWork) {
  EXPECT_EQ(run_private(udp_self_sends, 0), "ok");
}

TEST(SeccompPrivateNet, EveryOtherSocketIsRefused) {
  struct Case {
    const char* name;
    long family, type, protocol;
  };
  const Case cases[] = {
      {"unix stream", AF_UNIX, SOCK_STREAM, 0},
      {"unix datagram", AF_UNIX, SOCK_DGRAM, 0},
      {"netlink route", AF_NETLINK, SOCK_RAW, 0},
      {"packet", AF_PACKET, SOCK_RAW, 0},
      {"vsock", 40, SOCK_STREAM, 0},
      {"inet raw", AF_INET, SOCK_RAW, IPPROTO_ICMP},
      {"inet ping", AF_INET, SOCK_DGRAM, IPPROTO_ICMP},
      {"inet6 ping", AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6},
      {"sctp", AF_INET, SOCK_STREAM, IPPROTO_SCTP},
      {"mptcp", AF_INET, SOCK_STREAM, 262},
      {"udplite", AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE},
      {"inet seqpacket", AF_INET, SOCK_SEQPACKET, 0},
      {"family with upper bits", (1L << 32) | AF_INET, SOCK_STREAM, 0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(run_private([&c] { return raw(SYS_socket, c.family, c.type, c.protocol); }, EPERM),
              "ok")
        << c.name;
  }
}

// A unix datagram pair could send to any bound path (sendmsg's msg_name), host sockets
// included; refused in every mode without the open network.
TEST(SeccompPrivateNet, NoUnixDatagramSocketpairInAnyClosedMode) {
  for (NetworkFilter net :
       {NetworkFilter::kBlocked, NetworkFilter::kProxy, NetworkFilter::kPrivate}) {
    for (long type : {long{SOCK_DGRAM}, long{SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK}}) {
      EXPECT_EQ(run_filtered(
                    net,
                    [type] {
                      int sv[2];
                      return raw(SYS_socketpair, AF_UNIX, type, 0, reinterpret_cast<long>(sv));
                    },
                    EPERM),
                "ok")
          << static_cast<int>(net) << " type " << type;
    }
    EXPECT_EQ(run_filtered(
                  net,
                  [] {
                    int sv[2];
                    return static_cast<long>(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
                  },
                  0),
              "ok")
        << static_cast<int>(net);
  }
}

TEST(SeccompPrivateNet, SocketpairOnlyForUnix) {
  EXPECT_EQ(run_private(
                [] {
                  int sv[2];
                  return static_cast<long>(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
                },
                0),
            "ok");
  EXPECT_EQ(run_private(
                [] {
                  int sv[2];
                  return raw(SYS_socketpair, AF_INET, SOCK_STREAM, 0, reinterpret_cast<long>(sv));
                },
                EPERM),
            "ok");
}

// Under bwrap's unix-socket supervisor (which decides every connect), the private-namespace
// filter also lets unix sockets be created: the supervisor's own filter refuses unix datagram
// socket()s and hands datagram socketpair()s to it (unix_supervisor.hpp, tested there).
TEST(SeccompPrivateNet, UnixStreamAndSeqpacketOnlyWhenSupervised) {
  struct Case {
    const char* name;
    long family, type, protocol;
    int expected;  // errno under kPrivateUnixSupervised (0: created)
  };
  const Case cases[] = {
      {"unix stream", AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, 0},
      {"unix seqpacket", AF_UNIX, SOCK_SEQPACKET, 0, 0},
      {"unix stream PF_UNIX", AF_UNIX, SOCK_STREAM, 1, 0},
      {"unix datagram (the supervisor's)", AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, 0},
      {"unix raw (the supervisor's)", AF_UNIX, SOCK_RAW, 0, 0},
      {"unix protocol 2", AF_UNIX, SOCK_STREAM, 2, EPERM},
      {"unix datagram upper bits", (1L << 32) | AF_UNIX, SOCK_DGRAM, 0, EPERM},
      {"inet stream", AF_INET, SOCK_STREAM, 0, 0},
      {"inet6 datagram", AF_INET6, SOCK_DGRAM, 0, 0},
      {"inet raw", AF_INET, SOCK_RAW, IPPROTO_ICMP, EPERM},
      {"inet seqpacket", AF_INET, SOCK_SEQPACKET, 0, EPERM},
      {"inet ping", AF_INET, SOCK_DGRAM, IPPROTO_ICMP, EPERM},
      {"mptcp", AF_INET, SOCK_STREAM, 262, EPERM},
      {"unspec", AF_UNSPEC, SOCK_STREAM, 0, EPERM},
      {"netlink route", AF_NETLINK, SOCK_RAW, 0, EPERM},
      {"packet", AF_PACKET, SOCK_RAW, 0, EPERM},
      {"vsock", 40, SOCK_STREAM, 0, EPERM},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(run_filtered(
                  NetworkFilter::kPrivateUnixSupervised,
                  [&c] { return raw(SYS_socket, c.family, c.type, c.protocol); }, c.expected),
              "ok")
        << c.name;
  }
  EXPECT_EQ(run_filtered(
                NetworkFilter::kPrivateUnixSupervised,
                [] {
                  int sv[2];
                  return raw(SYS_socketpair, AF_UNIX, SOCK_DGRAM, 0, reinterpret_cast<long>(sv));
                },
                0),
            "ok");
  EXPECT_EQ(run_filtered(
                NetworkFilter::kPrivateUnixSupervised,
                [] {
                  int sv[2];
                  return raw(SYS_socketpair, AF_INET, SOCK_STREAM, 0, reinterpret_cast<long>(sv));
                },
                EPERM),
            "ok");
  // Without the supervisor, unix stream sockets stay refused.
  EXPECT_EQ(run_private([] { return raw(SYS_socket, AF_UNIX, SOCK_STREAM, 0); }, EPERM), "ok");
}

}  // namespace
