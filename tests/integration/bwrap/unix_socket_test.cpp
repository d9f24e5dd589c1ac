// Unix sockets under bwrap, end to end through the installed `sbx exec`: the command's own unix
// servers work (pathname and abstract, Python's multiprocessing.Manager), host sockets do not
// unless the policy lists them, in every network mode. Host-side listeners count what reached
// them: a denied one must see nothing.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

using namespace sbx::test;

namespace {

const std::vector<std::string> kModes = {"restricted", "enabled", "proxy"};

class BwrapUnixSockets : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (!exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the programs";
  }
  std::string mode() const { return GetParam(); }
  // Workspace-write with this mode, and `sockets` in network.unix_sockets.
  std::vector<std::string> policy(const std::vector<std::string>& sockets = {}) {
    std::string list;
    for (const std::string& s : sockets) list += (list.empty() ? "\"" : ",\"") + s + "\"";
    std::string network = R"({"mode":")" + mode() + R"(","unix_sockets":[)" + list + "]";
    if (mode() == "proxy") network += R"(,"allowed_domains":["example.com"])";
    network += "}";
    write_file(conf_ / "policy.json",
               R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
               R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
               R"({"path":"/tmp","access":"write"}],"protected_names":[]},"network":)" +
                   network + "}");
    return {"--policy", conf_ / "policy.json"};
  }
  RunResult python(const std::string& script, const std::vector<std::string>& sockets = {}) {
    return sbx_exec(policy(sockets), ws_.path(), {"/usr/bin/python3", "-c", script});
  }
  TempDir ws_;
  TempDir tmp_{"/tmp"};       // a host directory under /tmp, writable inside
  TempDir conf_{"/var/tmp"};  // policy files
};

// Connects to each path and prints "<path> ok" or "<path> <errno name>".
constexpr const char* kTryConnect =
    "import errno, os, socket, sys\n"
    "def attempt(p):\n"
    "    c = socket.socket(socket.AF_UNIX)\n"
    "    try:\n"
    "        c.connect(p); print(p, 'ok')\n"
    "    except OSError as e:\n"
    "        print(p, errno.errorcode[e.errno])\n"
    "    finally:\n"
    "        c.close()\n";

TEST_P(BwrapUnixSockets, HostSocketsInTmpAndTheWorkspaceAreRefused) {
  Listener in_tmp(Listener::kUnix, tmp_ / "host.sock");
  Listener in_ws(Listener::kUnix, ws_ / "host.sock");
  ASSERT_TRUE(in_tmp.ok() && in_ws.ok());
  const RunResult r = python(std::string(kTryConnect) + "attempt('" + tmp_ / "host.sock" +
                             "')\nattempt('" + ws_ / "host.sock" + "')\nattempt('host.sock')\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, tmp_ / "host.sock EACCES\n" + ws_ / "host.sock EACCES\nhost.sock EACCES\n")
      << describe(r);
  EXPECT_EQ(in_tmp.hits_before_now(), 0);
  EXPECT_EQ(in_ws.hits_before_now(), 0);
}

TEST_P(BwrapUnixSockets, ListedHostSocketWorksAndOnlyIt) {
  Listener listed(Listener::kUnix, ws_ / "agent.sock");
  Listener other(Listener::kUnix, ws_ / "other.sock");
  ASSERT_TRUE(listed.ok() && other.ok());
  const RunResult r = python(std::string(kTryConnect) + "attempt('" + ws_ / "agent.sock" +
                                 "')\nattempt('" + ws_ / "other.sock" + "')\n",
                             {ws_ / "agent.sock"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, ws_ / "agent.sock ok\n" + ws_ / "other.sock EACCES\n") << describe(r);
  EXPECT_EQ(listed.hits_before_now(), 1);
  EXPECT_EQ(other.hits_before_now(), 0);
}

TEST_P(BwrapUnixSockets, OwnServersWorkPathnameAbstractAndMultiprocessingManager) {
  const RunResult r = python(
      "import multiprocessing, os, socket, threading\n"
      "def serve(srv):\n"
      "    c, _ = srv.accept(); c.sendall(c.recv(16).upper()); c.close()\n"
      "for name in ('" +
      tmp_ / "srv.sock" + "', 'rel.sock', '\\0sbx-own-" + mode() +
      "'):\n"
      "    srv = socket.socket(socket.AF_UNIX); srv.bind(name); srv.listen()\n"
      "    threading.Thread(target=serve, args=(srv,)).start()\n"
      "    c = socket.socket(socket.AF_UNIX); c.connect(name); c.sendall(b'ping')\n"
      "    print(c.recv(16))\n"
      "m = multiprocessing.Manager(); d = m.dict(); d['k'] = 'v'; print('manager', d['k'])\n"
      "m.shutdown()\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "b'PING'\nb'PING'\nb'PING'\nmanager v\n") << describe(r);
}

// Every way to name the host's socket through another path: symlinks (absolute and relative),
// `..`, magic links of /proc, and a socket file of the sandbox's own swapped for the host's by a
// rename after the bind.
TEST_P(BwrapUnixSockets, BypassesThroughOtherNamesDoNotReachAHostSocket) {
  Listener host(Listener::kUnix, ws_ / "host.sock");
  ASSERT_TRUE(host.ok());
  const std::string h = ws_ / "host.sock";
  const std::string base = ws_.path().substr(ws_.path().rfind('/') + 1);
  const RunResult r =
      python(std::string(kTryConnect) + "os.symlink('" + h +
             "', 'abs-link.sock'); os.symlink('host.sock', 'rel-link.sock')\n"
             "os.mkdir('sub')\n"
             "srv = socket.socket(socket.AF_UNIX); srv.bind('mine.sock'); srv.listen()\n"
             "os.rename('host.sock', 'mine.sock')\n"  // the host's inode now under the bound name
             "names = ['abs-link.sock', 'rel-link.sock', 'sub/../mine.sock', 'mine.sock',\n"
             "         '/proc/self/root" +
             ws_.path() +
             "/mine.sock', '/proc/self/cwd/mine.sock',\n"
             "         '/proc/%d/cwd/mine.sock' % os.getpid(), '/proc/1/root" +
             ws_.path() + "/mine.sock', '../" + base +
             "/mine.sock']\n"
             "for n in names:\n"
             "    c = socket.socket(socket.AF_UNIX)\n"
             "    try:\n"
             "        c.connect(n); print('REACHED', n)\n"
             "    except OSError:\n"
             "        pass\n"
             "print('done')\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "done\n") << describe(r);
  EXPECT_EQ(host.hits_before_now(ws_ / "mine.sock"), 0);  // the command renamed it mine.sock
}

// A unix datagram socket can name any path on each send, which nothing supervises: refused at
// creation (socket and socketpair), so a host datagram socket receives nothing.
TEST_P(BwrapUnixSockets, UnixDatagramSocketsAreRefusedAndTheHostsReceivesNothing) {
  const int host = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const std::string path = ws_ / "dgram.sock";
  std::memcpy(sa.sun_path, path.c_str(), path.size());
  ASSERT_EQ(::bind(host, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  // socket() is refused; a datagram socketpair() is a seqpacket pair made by the supervisor:
  // its addressed sendto is refused where addressed sends are notified (a private network
  // namespace) and otherwise goes to the pair's peer (the kernel ignores the address), never
  // to the host's socket.
  const RunResult r = python(
      "import socket\n"
      "for make in (lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM),\n"
      "             lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)):\n"
      "    try:\n"
      "        p = make(); s = p[0] if isinstance(p, tuple) else p\n"
      "        s.sendto(b'x', '" +
      path +
      "'); print('to the peer')\n"
      "    except PermissionError:\n"
      "        print('refused')\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, mode() == "enabled" ? "refused\nto the peer\n" : "refused\nrefused\n")
      << describe(r);
  char buffer[8];
  EXPECT_LT(::recv(host, buffer, sizeof buffer, MSG_DONTWAIT), 0);
  ::close(host);
}

// bind() is done by the kernel as the command's own call: a read-only mount stays read-only.
TEST_P(BwrapUnixSockets, BindIntoAReadOnlyDirectoryFailsWithErofs) {
  TempDir outside{"/var/tmp"};
  const RunResult r = python(
      "import errno, socket\n"
      "s = socket.socket(socket.AF_UNIX)\n"
      "try:\n"
      "    s.bind('" +
      outside / "x.sock" +
      "'); print('BOUND')\n"
      "except OSError as e:\n"
      "    print(errno.errorcode[e.errno])\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "EROFS\n") << describe(r);
  EXPECT_FALSE(exists(outside / "x.sock"));
}

// Refusals are named in the run's report (issue #16, point 6): a connect to a host socket in
// /tmp is listed in `exec --json`'s network_refusals with its path ("kind":"unix"), a connect
// that finds no route out of the private network namespace with its address ("kind":"ip",
// restricted and proxy modes; with the network enabled the route is the host's), and without
// --json each is one stderr line. The listener saw nothing.
TEST_P(BwrapUnixSockets, RefusalsAreNamedInTheJsonReportAndOnStderr) {
  Listener in_tmp(Listener::kUnix, tmp_ / "docker.sock");
  ASSERT_TRUE(in_tmp.ok());
  const bool private_network = mode() != "enabled";
  const std::string script =
      std::string(kTryConnect) + "attempt('" + tmp_ / "docker.sock" + "')\n" +
      (private_network ? "c = socket.socket()\n"
                         "try:\n"
                         "    c.connect(('192.0.2.7', 8443)); print('REACHED')\n"
                         "except OSError as e:\n"
                         "    print('ip', errno.errorcode[e.errno])\n"
                         "c6 = socket.socket(socket.AF_INET6)\n"
                         "try:\n"
                         "    c6.connect(('2001:db8::7', 443)); print('REACHED')\n"
                         "except OSError as e:\n"
                         "    print('ip6', errno.errorcode[e.errno])\n"
                       : "");
  std::vector<std::string> args = {"--backends", "bwrap", "exec", "--json"};
  const std::vector<std::string> with_policy = policy();
  args.insert(args.end(), with_policy.begin(), with_policy.end());
  args.insert(args.end(), {"--", "/usr/bin/python3", "-c", script});
  const JsonExec json = sbx_exec_json(args, ws_.path());
  EXPECT_EQ(json.run.code, 0) << describe(json.run);
  const std::string expected_out =
      tmp_ / "docker.sock EACCES\n" + (private_network ? "ip ENETUNREACH\nip6 ENETUNREACH\n" : "");
  EXPECT_EQ(json.run.out, expected_out) << describe(json.run);
  const boost::json::array& refusals = json.report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), private_network ? 3u : 1u) << boost::json::serialize(refusals);
  EXPECT_EQ(refusals.at(0).at("kind").as_string(), "unix");
  EXPECT_EQ(refusals.at(0).at("path").as_string(), tmp_ / "docker.sock");
  if (private_network) {
    EXPECT_EQ(refusals.at(1).at("kind").as_string(), "ip");
    EXPECT_EQ(refusals.at(1).at("address").as_string(), "192.0.2.7:8443");
    EXPECT_EQ(refusals.at(2).at("kind").as_string(), "ip");
    EXPECT_EQ(refusals.at(2).at("address").as_string(), "[2001:db8::7]:443");
  }
  EXPECT_EQ(json.report.at("network_refusals_total").to_number<std::uint64_t>(), refusals.size());

  // Without --json: one stderr line each, after the command.
  const RunResult human = python(script);
  EXPECT_EQ(human.code, 0) << describe(human);
  EXPECT_NE(human.err.find("sbx: network: the sandbox refused a connection to the host's unix "
                           "socket " +
                           tmp_ / "docker.sock (not in network.unix_sockets)\n"),
            std::string::npos)
      << describe(human);
  EXPECT_EQ(human.err.find("192.0.2.7:8443 (no route out of the sandbox") != std::string::npos,
            private_network)
      << describe(human);
  EXPECT_EQ(in_tmp.hits_before_now(), 0);
}

// UDP: a sendto() out of the private namespace (restricted, proxy) fails in the kernel (no
// route) and is named in the report like a refused connect; loopback UDP (IPv4 and IPv6)
// works and is not reported. With the network enabled only the loopback part is tried (the
// host's own routes decide there, and nothing is reported).
TEST_P(BwrapUnixSockets, UdpSendtoOutOfTheSandboxIsNamedAndLoopbackUdpIsNot) {
  const bool private_network = mode() != "enabled";
  const std::string script =
      std::string(
          "import errno, socket\n"
          "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0))\n"
          "s.settimeout(10)\n"
          "c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
          "c.sendto(b'hello', s.getsockname()); print('loopback', s.recv(100).decode())\n"
          "s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s6.bind(('::1', 0))\n"
          "s6.settimeout(10)\n"
          "c6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n"
          "c6.sendto(b'hello6', s6.getsockname()[:2]); print('loopback6', "
          "s6.recv(100).decode())\n") +
      (private_network ? "try:\n"
                         "    c.sendto(b'out', ('192.0.2.1', 9)); print('SENT')\n"
                         "except OSError as e:\n"
                         "    print('udp', errno.errorcode[e.errno])\n"
                       : "");
  std::vector<std::string> args = {"--backends", "bwrap", "exec", "--json"};
  const std::vector<std::string> with_policy = policy();
  args.insert(args.end(), with_policy.begin(), with_policy.end());
  args.insert(args.end(), {"--", "/usr/bin/python3", "-c", script});
  const JsonExec json = sbx_exec_json(args, ws_.path());
  EXPECT_EQ(json.run.code, 0) << describe(json.run);
  EXPECT_EQ(json.run.out, std::string("loopback hello\nloopback6 hello6\n") +
                              (private_network ? "udp ENETUNREACH\n" : ""))
      << describe(json.run);
  const boost::json::array& refusals = json.report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), private_network ? 1u : 0u) << boost::json::serialize(refusals);
  if (private_network) {
    EXPECT_EQ(refusals.at(0).at("kind").as_string(), "ip");
    EXPECT_EQ(refusals.at(0).at("address").as_string(), "192.0.2.1:9");
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, BwrapUnixSockets, ::testing::ValuesIn(kModes),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
