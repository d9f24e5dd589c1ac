// Loopback networking inside the bwrap sandbox with the network restricted: the command has its
// own network namespace, whose loopback (IPv4, IPv6, IPv4-mapped IPv6) it may use for TCP and
// UDP servers and clients, while the host's loopback services and every other address stay out
// of reach. Real programs:
// Python's http.server and urllib, run by the installed `sbx exec`.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

using namespace sbx::test;

namespace {

class BwrapLoopback : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (!exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the servers";
    ASSERT_FALSE(ws_.path().empty());
  }
  RunResult python(const std::string& script,
                   const std::vector<std::string>& policy = {"--preset", "workspace-write"}) {
    return sbx_exec(policy, ws_.path(), {"/usr/bin/python3", "-c", script});
  }
  TempDir ws_;
};

// An HTTP server on `host` in a thread of the same process, fetched with urllib from `url_host`.
std::string http_round_trip(const std::string& family, const std::string& host,
                            const std::string& url_host, const std::string& label) {
  return "class S(http.server.ThreadingHTTPServer): address_family = socket." + family +
         "\n"
         "s = S(('" +
         host +
         "', 0), http.server.SimpleHTTPRequestHandler)\n"
         "threading.Thread(target=s.serve_forever, daemon=True).start()\n"
         "r = urllib.request.urlopen('http://" +
         url_host +
         ":%d/' % s.server_address[1], "
         "timeout=10)\n"
         "print('" +
         label +
         "', r.status)\n"
         "s.shutdown()\n";
}

constexpr const char* kImports =
    "import http.server, os, socket, threading, urllib.request\n"
    "os.environ.pop('http_proxy', None); os.environ.pop('HTTP_PROXY', None)\n";

TEST_F(BwrapLoopback, HttpServerAndClientWorkOnIpv4Ipv6AndMappedAddresses) {
  const RunResult r =
      python(std::string(kImports) + http_round_trip("AF_INET", "127.0.0.1", "127.0.0.1", "v4") +
             http_round_trip("AF_INET6", "::1", "[::1]", "v6") +
             http_round_trip("AF_INET6", "::", "[::ffff:127.0.0.1]", "mapped"));
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("v4 200\nv6 200\nmapped 200\n"), std::string::npos) << describe(r);
}

// The same port number on 127.0.0.1: the host's server is not reachable from inside (connect is
// refused: nothing listens there in the sandbox's namespace), and a server the command starts
// on that port answers the command, not the host's.
TEST_F(BwrapLoopback, HostLoopbackServerIsNotTheSandboxsLoopback) {
  Listener host(Listener::kTcp4);
  ASSERT_TRUE(host.ok());
  const std::string port = std::to_string(host.port());
  const RunResult r = python(
      "import socket, threading\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', " +
      port +
      "), timeout=5)\n"
      "    print('host reached')\n"
      "except ConnectionRefusedError:\n"
      "    print('host refused')\n"
      "srv = socket.socket(); srv.bind(('127.0.0.1', " +
      port +
      ")); srv.listen()\n"
      "def serve():\n"
      "    c, _ = srv.accept(); c.sendall(b'inside'); c.close()\n"
      "threading.Thread(target=serve).start()\n"
      "print(socket.create_connection(('127.0.0.1', " +
      port + "), timeout=5).recv(16))\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("host refused\nb'inside'\n"), std::string::npos) << describe(r);
  EXPECT_EQ(host.hits_before_now(), 0) << "the command reached the host's loopback server";
}

TEST_F(BwrapLoopback, UdpEchoOnIpv4AndIpv6Loopback) {
  const RunResult r = python(
      "import socket\n"
      "for fam, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n"
      "    srv = socket.socket(fam, socket.SOCK_DGRAM); srv.bind((host, 0))\n"
      "    cli = socket.socket(fam, socket.SOCK_DGRAM); cli.settimeout(5)\n"
      "    cli.sendto(b'ping', srv.getsockname()[:2])\n"
      "    data, peer = srv.recvfrom(16); srv.sendto(data.upper(), peer)\n"
      "    print(cli.recvfrom(16)[0])\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("b'PING'\nb'PING'\n"), std::string::npos) << describe(r);
}

// A TCP listener on every host address (dual-stack `::`), counting the connections that
// reached it: the host's interface addresses are what a command might try instead of loopback.
class AnyAddressListener {
 public:
  AnyAddressListener() {
    fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const int no = 0;
    ::setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_any;
    socklen_t length = sizeof sa;
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
        ::listen(fd_, 16) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &length) == 0)
      port_ = ntohs(sa.sin6_port);
  }
  ~AnyAddressListener() { ::close(fd_); }
  AnyAddressListener(const AnyAddressListener&) = delete;
  AnyAddressListener& operator=(const AnyAddressListener&) = delete;
  int port() const { return port_; }
  // The connections that reached it before this call, counted for certain: the host connects
  // once itself (127.0.0.1) and accepts until its own connection comes out of the backlog, which
  // is taken in arrival order (a command that has ended made its connect(2) before). -1 if the
  // host's own never arrived within 10 s (the listener is broken: no proof).
  int accepted_before_now() const {
    const int knock = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(static_cast<std::uint16_t>(port_));
    sockaddr_in from{};
    socklen_t from_length = sizeof from;
    const bool knocked =
        knock >= 0 && ::connect(knock, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
        ::getsockname(knock, reinterpret_cast<sockaddr*>(&from), &from_length) == 0;
    int n = 0;
    for (int waited = 0; knocked && waited < 10000;) {
      sockaddr_in6 peer{};
      socklen_t length = sizeof peer;
      const int c = ::accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &length, SOCK_CLOEXEC);
      if (c < 0) {
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, 50);
        waited += 50;
        continue;
      }
      ::close(c);
      // The knock, as the dual-stack socket sees it: ::ffff:127.0.0.1 and its port.
      if (peer.sin6_port == from.sin_port && IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr)) {
        ::close(knock);
        return n;
      }
      ++n;
    }
    if (knock >= 0) ::close(knock);
    return -1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// The host's own addresses, loopback and link-local (which need a scope) left out.
std::vector<std::string> host_interface_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    } else {
      continue;
    }
    out.emplace_back(text);
  }
  ::freeifaddrs(list);
  return out;
}

// The namespace has `lo` and nothing else, so no route leads anywhere else: TCP connect and UDP
// sendto to a documentation address or to the host's own interface addresses fail with
// ENETUNREACH, and the host listener on every address sees no connection.
TEST_F(BwrapLoopback, NonLoopbackAddressesAreUnreachable) {
  AnyAddressListener host;
  ASSERT_GT(host.port(), 0);
  std::vector<std::string> targets = {"192.0.2.1", "198.51.100.7", "2001:db8::1"};
  const std::vector<std::string> own = host_interface_addresses();
  targets.insert(targets.end(), own.begin(), own.end());
  std::string list;
  for (const std::string& t : targets) list += "'" + t + "', ";
  const RunResult r = python(
      "import errno, socket\n"
      "for host in (" +
      list +
      "):\n"
      "    fam = socket.AF_INET6 if ':' in host else socket.AF_INET\n"
      "    for kind, send in (('tcp', lambda s: s.connect((host, " +
      std::to_string(host.port()) +
      "))),\n"
      "                       ('udp', lambda s: s.sendto(b'x', (host, " +
      std::to_string(host.port()) +
      ")))):\n"
      "        s = socket.socket(fam, socket.SOCK_STREAM if kind == 'tcp' else socket.SOCK_DGRAM)\n"
      "        s.settimeout(5)\n"
      "        try:\n"
      "            send(s); print(kind, host, 'REACHED')\n"
      "        except OSError as e:\n"
      "            print(kind, host, errno.errorcode.get(e.errno, e))\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const std::string& t : targets) {
    for (const std::string kind : {"tcp", "udp"}) {
      EXPECT_NE(r.out.find(kind + " " + t + " ENETUNREACH\n"), std::string::npos)
          << kind << " " << t << ": " << describe(r);
    }
  }
  EXPECT_EQ(r.out.find("REACHED"), std::string::npos) << describe(r);
  EXPECT_EQ(host.accepted_before_now(), 0) << "the command reached a host address";
}

// Unix datagram sockets (a send may name any path, unsupervised) and netlink stay refused; unix
// stream sockets are the unix-socket supervisor's (unix_socket_test.cpp).
TEST_F(BwrapLoopback, UnixDatagramSocketsAndNetlinkStayRefused) {
  const RunResult r = python(
      "import socket\n"
      "for name in ('AF_UNIX', 'AF_NETLINK'):\n"
      "    try:\n"
      "        socket.socket(getattr(socket, name), socket.SOCK_DGRAM); print('created', name)\n"
      "    except PermissionError:\n"
      "        print('refused', name)\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("refused AF_UNIX\nrefused AF_NETLINK\n"), std::string::npos) << describe(r);
}

// A host-side listener on an abstract unix socket name (no file: no mount can hide it), with the
// number of connections it accepted.
class AbstractListener {
 public:
  explicit AbstractListener(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path + 1, name.data(), name.size());
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ok_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), length) == 0 &&
          ::listen(fd_, 4) == 0;
  }
  ~AbstractListener() { ::close(fd_); }
  AbstractListener(const AbstractListener&) = delete;
  AbstractListener& operator=(const AbstractListener&) = delete;
  bool ok() const { return ok_; }
  int accepted() const {
    int n = 0;
    while (::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC) >= 0) ++n;  // non-blocking listener
    return n;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

// With the network enabled the command shares the host's network namespace, and with it the
// host's abstract unix sockets: a Landlock scope (ABI 6+) keeps a socket bound outside the
// sandbox unreachable, while an abstract socket the command binds itself still works.
TEST_F(BwrapLoopback, HostAbstractUnixSocketIsUnreachableWithTheNetworkEnabled) {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1UL /* VERSION */);
  if (abi < 6) GTEST_SKIP() << "Landlock ABI " << abi << " < 6: abstract sockets are not scoped";
  const std::string name = "sbx-it-abstract-" + std::to_string(::getpid());
  AbstractListener host(name);
  ASSERT_TRUE(host.ok());
  const RunResult r = python(
      "import socket, threading\n"
      "c = socket.socket(socket.AF_UNIX)\n"
      "try:\n"
      "    c.connect('\\0" +
          name +
          "'); print('host reached')\n"
          "except PermissionError:\n"
          "    print('host refused')\n"
          "srv = socket.socket(socket.AF_UNIX); srv.bind('\\0" +
          name +
          "-inside'); srv.listen()\n"
          "def serve():\n"
          "    a, _ = srv.accept(); a.sendall(b'inside'); a.close()\n"
          "threading.Thread(target=serve).start()\n"
          "c = socket.socket(socket.AF_UNIX); c.connect('\\0" +
          name +
          "-inside')\n"
          "print(c.recv(16))\n",
      {"--preset", "workspace-write", "--network", "enabled"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("host refused\nb'inside'\n"), std::string::npos) << describe(r);
  EXPECT_EQ(host.accepted(), 0) << "the command reached the host's abstract socket";
}

// A unix datagram socket can name a destination path on every send, and the kernel delivers to
// whatever is bound there: a socketpair would reach a host datagram socket visible through the
// filesystem. A datagram pair is a seqpacket pair made by the unix-socket supervisor: its
// addressed sendto is refused (and named), its sendmsg goes to the pair's peer (the kernel
// ignores the address); stream pairs refuse the path. Nothing reaches the host's socket.
TEST_F(BwrapLoopback, HostUnixDatagramSocketIsUnreachableThroughASocketpair) {
  const std::string path = ws_ / "host-dgram.sock";
  const int host = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(host, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const RunResult r = python(
      "import socket\n"
      "for kind in ('SOCK_DGRAM', 'SOCK_SEQPACKET', 'SOCK_STREAM'):\n"
      "    try:\n"
      "        a, b = socket.socketpair(socket.AF_UNIX, getattr(socket, kind))\n"
      "    except PermissionError:\n"
      "        print(kind, 'pair refused'); continue\n"
      "    for send in (lambda: a.sendto(b'x', '" +
      path +
      "'),\n"
      "                 lambda: a.sendmsg([b'y'], [], 0, '" +
      path +
      "')):\n"
      "        try:\n"
      "            send(); print(kind, 'sent')\n"
      "        except OSError as e:\n"
      "            print(kind, 'not sent')\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("SOCK_DGRAM not sent\nSOCK_DGRAM sent\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find(path), std::string::npos) << describe(r);
  char buffer[8];
  EXPECT_LT(::recv(host, buffer, sizeof buffer, 0), 0) << "a datagram reached the host's socket";
  ::close(host);
}

}  // namespace
