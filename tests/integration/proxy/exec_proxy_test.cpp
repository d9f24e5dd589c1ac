// Network mode proxy end to end: the installed `sbx exec` in network mode proxy, through the
// bwrap and the landlock backend, with local HTTP servers on 127.0.0.1 (host side) and curl
// inside the sandbox:
//  - an allowed host:port answers through the proxy (HTTP, HTTP CONNECT and SOCKS5);
//  - an unlisted or denied one is refused by the proxy (403 / SOCKS failure), its server sees no
//    request, and the refusal is on stderr and in `exec --json` "network_refusals";
//  - a direct connection that bypasses the proxy fails and its server sees nothing;
//  - unix sockets (the proxy's own, any host one) cannot be opened from inside;
//  - the proxy lives exactly as long as the command; --dry-run never shows the credential;
//  - many refusals, or a flood from another local user without the credential, cost bounded
//    output, and the command's own requests still succeed during such a flood.
// Only loopback is used: every server listens on 127.0.0.1, every URL names 127.0.0.1.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json/parse.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using sbx::proxy::testing::CountingServer;
using sbx::proxy::testing::SshBannerServer;

using sbx::test::describe;
using sbx::test::RunResult;

// Runs argv with a small fixed environment. The caller's proxy settings must not matter: sbx
// replaces them anyway.
RunResult run(const std::vector<std::string>& argv) {
  return sbx::test::run(argv, {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root",
                               "http_proxy=http://198.51.100.1:9"});
}

// The last line of stderr: the `exec --json` report.
json::object report_of(const RunResult& r) {
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  const std::size_t start = err.rfind('\n');
  return json::parse(start == std::string::npos ? err : err.substr(start + 1)).as_object();
}

class ProxyExec : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // Beside the workspace, not in it: sbx keeps a --policy file inside a writable root
    // read-only, which Landlock cannot do, and would pass Landlock over.
    policy_ = dir_ + ".policy.json";
    // protected_names [] so that the landlock backend can express the filesystem part.
    std::ofstream(policy_) << R"({"version": 1,
      "filesystem": {"kind": "restricted", "protected_names": [],
        "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
      "network": {"mode": "proxy",
        "allowed_domains": ["127.0.0.1:)"
                           << allowed_.port() << R"("],
        "denied_domains": ["127.0.0.1:)"
                           << denied_.port() << R"("]}})";
    const RunResult explain = run(
        {sbx(), "--backends", GetParam(), "explain", "--policy", policy_, "--cwd", dir_, "--json"});
    const json::value report = json::parse(explain.out.empty() ? "{}" : explain.out);
    const json::value* available = report.as_object().if_contains("available_backend");
    if (available == nullptr || !available->is_string() || available->as_string() != GetParam())
      GTEST_SKIP() << GetParam() << " cannot run network mode proxy here: " << explain.out
                   << explain.err;
  }
  void TearDown() override {
    fs::remove(policy_);
    fs::remove(dir_ + ".own-ports.json");
  }

  static std::string sbx() { return std::string(SBX_TEST_PREFIX) + "/bin/sbx"; }

  // `sbx --backends B exec --policy P --cwd D --json -- /bin/sh -c SCRIPT`
  RunResult exec_sh(const std::string& script, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {sbx(),      "--backends", GetParam(), "exec",
                                     "--policy", policy_,      "--cwd",    dir_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--json", "--", "/bin/sh", "-c", script});
    return run(argv);
  }

  std::string url(const CountingServer& server, const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server.port()) + path;
  }

  CountingServer allowed_;
  CountingServer unlisted_;
  CountingServer denied_;
  sbx::test::TempDir work_;
  const std::string dir_ = work_.path();
  std::string policy_;
};

TEST_P(ProxyExec, AllowedHostPortAnswersThroughTheProxy) {
  // Plain HTTP through HTTP_PROXY, then the same through a CONNECT tunnel (-p).
  const RunResult r = exec_sh("curl -sS -m 20 " + url(allowed_, "/plain") + " && echo && " +
                              "curl -sS -m 20 -p " + url(allowed_, "/tunnel"));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("hello GET /plain"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("hello GET /tunnel"), std::string::npos) << describe(r);
  EXPECT_EQ(allowed_.accepts(), 2);
  EXPECT_EQ(report_of(r).at("network_refusals").as_array().size(), 0u) << describe(r);
  EXPECT_EQ(report_of(r).at("network_refusals_total").to_number<int>(), 0) << describe(r);
  EXPECT_EQ(report_of(r).at("final").as_string(), GetParam());
}

TEST_P(ProxyExec, UnlistedAndDeniedAreRefusedAndTheirServersSeeNothing) {
  const RunResult r =
      exec_sh("curl -sS -m 20 -o /dev/null -w '%{http_code}\\n' " + url(unlisted_, "/u") +
              "; curl -sS -m 20 -o /dev/null -w '%{http_code}\\n' " + url(denied_, "/d"));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "403\n403\n") << describe(r);
  EXPECT_EQ(unlisted_.accepts(), 0);
  EXPECT_EQ(denied_.accepts(), 0);
  const std::string unlisted = "127.0.0.1:" + std::to_string(unlisted_.port());
  const std::string denied = "127.0.0.1:" + std::to_string(denied_.port());
  EXPECT_NE(r.err.find("sbx: proxy: " + unlisted + " (http) refused: not in allowed_domains\n"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.err.find("sbx: proxy: " + denied + " (http) refused: denied_domains: " + denied),
            std::string::npos)
      << describe(r);
  const json::object report = report_of(r);
  const json::array& refusals = report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), 2u) << describe(r);
  EXPECT_EQ(refusals[0].at("host").as_string(), "127.0.0.1");
  EXPECT_EQ(refusals[0].at("port").to_number<int>(), unlisted_.port());
  EXPECT_EQ(refusals[0].at("protocol").as_string(), "http");
  EXPECT_EQ(refusals[0].at("rule").as_string(), "not in allowed_domains");
  EXPECT_EQ(refusals[1].at("port").to_number<int>(), denied_.port());
  EXPECT_EQ(refusals[1].at("rule").as_string(), "denied_domains: " + denied);
}

TEST_P(ProxyExec, DirectConnectionBypassingTheProxyFails) {
  // --noproxy '*': curl connects to the server itself. curl exit 7 = could not connect.
  const RunResult r =
      exec_sh("curl -sS -m 10 --noproxy '*' " + url(allowed_, "/direct") + "; echo \"curl=$?\"");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("curl=7"), std::string::npos) << describe(r);
  EXPECT_EQ(allowed_.accepts(), 0) << "the direct connection reached the host's server";
}

// The command's own loopback server, in one run with the proxy: under bwrap (a private network
// namespace) it works, and the command cannot take the relay's port on 127.0.0.1 (the relay
// bound it before the command started), so the proxy still answers and stays the only way out.
// The landlock backend shares the host's network namespace: there binding stays refused.
constexpr const char* kLoopbackInProxyMode = R"(
import os, socket, threading, urllib.parse, urllib.request, http.server
port = urllib.parse.urlsplit(os.environ['HTTP_PROXY']).port
for family, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET, '0.0.0.0'), (socket.AF_INET6, '::')):
    s = socket.socket(family)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if family == socket.AF_INET6: s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        s.bind((host, port)); s.listen(); print('relay port taken on', host)
    except PermissionError:
        print('bind refused')
    except OSError as e:
        print('relay port busy' if e.errno == 98 else 'relay port error %d' % e.errno)
    s.close()
try:
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    print('local server', direct.open('http://127.0.0.1:%d/' % srv.server_address[1], timeout=10).status)
except PermissionError:
    print('local server refused')
)";

TEST_P(ProxyExec, CommandsOwnLoopbackServerWorksUnderBwrapAndTheProxyStaysTheWayOut) {
  std::ofstream(dir_ + "/loopback.py") << kLoopbackInProxyMode;
  const RunResult r = exec_sh("python3 loopback.py; curl -sS -m 20 " + url(allowed_, "/via") +
                              "; echo; curl -sS -m 10 --noproxy '*' " + url(unlisted_, "/direct") +
                              "; echo \"curl=$?\"");
  ASSERT_EQ(r.code, 0) << describe(r);
  if (GetParam() == "bwrap") {
    EXPECT_NE(r.out.find("relay port busy\nrelay port busy\nrelay port busy\nlocal server 200\n"),
              std::string::npos)
        << describe(r);
  } else {
    EXPECT_NE(r.out.find("bind refused\nbind refused\nbind refused\nlocal server refused\n"),
              std::string::npos)
        << describe(r);
  }
  EXPECT_NE(r.out.find("hello GET /via"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("curl=7"), std::string::npos) << describe(r);
  EXPECT_EQ(allowed_.accepts(), 1);
  EXPECT_EQ(unlisted_.accepts(), 0) << "the direct connection reached the host's server";
}

TEST_P(ProxyExec, Socks5AllowsTheAllowedAndRefusesTheRest) {
  // ALL_PROXY is socks5h://USER:TOKEN@127.0.0.1:PORT; -x makes curl use it for http URLs too.
  const RunResult r = exec_sh("curl -sS -m 20 -x \"$ALL_PROXY\" " + url(allowed_, "/socks") +
                              "; echo; curl -sS -m 20 -x \"$ALL_PROXY\" " + url(denied_, "/s") +
                              "; echo \"curl=$?\"");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("hello GET /socks"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("curl=0"), std::string::npos) << "the denied SOCKS5 request succeeded";
  EXPECT_EQ(allowed_.accepts(), 1);
  EXPECT_EQ(denied_.accepts(), 0);
  const json::object report = report_of(r);
  const json::array& refusals = report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), 1u) << describe(r);
  EXPECT_EQ(refusals[0].at("protocol").as_string(), "socks5");
  EXPECT_EQ(refusals[0].at("port").to_number<int>(), denied_.port());
}

TEST_P(ProxyExec, WithoutTheCredentialTheProxyRefuses) {
  // The proxy's address without USER:TOKEN: refused (407), nothing forwarded.
  const RunResult r = exec_sh(
      "p=${HTTP_PROXY##*@}; curl -sS -m 20 -o /dev/null -w '%{http_code}\\n' -x \"http://$p\" " +
      url(allowed_, "/nocred"));
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "407\n") << describe(r);
  EXPECT_EQ(allowed_.accepts(), 0);
  const json::object report = report_of(r);
  const json::array& refusals = report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), 1u) << describe(r);
  EXPECT_EQ(refusals[0].at("rule").as_string(), "missing or wrong proxy credential");
}

// A command that is refused 130 times: the first 100 refusals are printed and listed, the rest
// only counted (stderr and the report stay bounded however many there are).
TEST_P(ProxyExec, ManyRefusalsArePrintedAndListedUpToALimitThenCounted) {
  constexpr int kRefused = 130;
  std::string urls;
  for (int i = 0; i < kRefused; ++i) urls += " " + url(unlisted_, "/" + std::to_string(i));
  const RunResult r = exec_sh("curl -s -m 60 -o /dev/null -w '%{http_code} '" + urls);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(unlisted_.accepts(), 0);
  const std::string unlisted = "127.0.0.1:" + std::to_string(unlisted_.port());
  const std::string line = "sbx: proxy: " + unlisted + " (http) refused: not in allowed_domains\n";
  std::size_t printed = 0;
  for (std::size_t at = r.err.find(line); at != std::string::npos; at = r.err.find(line, at + 1))
    ++printed;
  EXPECT_EQ(printed, 100u) << describe(r);
  EXPECT_NE(r.err.find("sbx: proxy: 30 more refusals not listed: 127.0.0.1 30\n"),
            std::string::npos)
      << describe(r);
  const json::object report = report_of(r);
  EXPECT_EQ(report.at("network_refusals").as_array().size(), 100u) << describe(r);
  EXPECT_EQ(report.at("network_refusals_total").to_number<int>(), kRefused) << describe(r);
}

// A loopback connection whose connect() gives up after a second (SO_SNDTIMEO bounds connect on
// Linux), so a flooding thread notices the end of the test; -1 on failure.
int connect_quickly(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sbx::proxy::testing::set_timeout(fd, 1);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// While the command runs, the test (standing in for another local user, without the
// credential) floods the proxy's TCP port from the host: silent connections held open and
// requests without the credential. The command's own requests, made during the flood, all
// succeed; sbx prints and lists a bounded number of refusals.
TEST_P(ProxyExec, TheCommandsRequestsSucceedWhileAnotherLocalUserFloodsTheProxy) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 4096);
  ::setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < 4096) GTEST_SKIP() << "needs 4096 descriptors (RLIMIT_NOFILE)";
  constexpr int kRequests = 10;
  const std::string script =
      "p=${HTTP_PROXY##*:}; echo \"$p\" > proxy-port; "
      "while [ ! -e flood-started ]; do sleep 0.05; done; i=0; "
      "while [ $i -lt " +
      std::to_string(kRequests) + " ]; do curl -sS -m 30 " + url(allowed_, "/r$i") +
      "; echo; i=$((i+1)); done";
  RunResult r;
  std::thread runner([&] { r = exec_sh(script); });
  std::string port_text;
  for (int i = 0; i < 400 && port_text.empty(); ++i) {
    usleep(50'000);
    std::ifstream(dir_ + "/proxy-port") >> port_text;
  }
  const auto port = static_cast<std::uint16_t>(std::atoi(port_text.c_str()));
  std::atomic<bool> stop{false};
  std::atomic<int> flood{0};
  std::thread holder([&] {
    std::vector<int> held;
    while (!stop) {
      const int fd = connect_quickly(port);
      if (fd >= 0) {
        held.push_back(fd);
        ++flood;
      }
      if (held.size() >= 1500 || (fd < 0 && !held.empty())) {
        for (int h : held) ::close(h);
        held.clear();
      }
    }
    for (int h : held) ::close(h);
  });
  std::thread refuser([&] {
    for (int i = 0; !stop; ++i) {
      const int fd = connect_quickly(port);
      if (fd < 0) continue;
      sbx::proxy::testing::send_all(fd,
                                    "CONNECT h" + std::to_string(i) + ".test:443 HTTP/1.1\r\n\r\n");
      ++flood;
      ::close(fd);
    }
  });
  for (int i = 0; i < 2000 && flood < 1000; ++i) usleep(10'000);
  std::ofstream(dir_ + "/flood-started") << "go\n";
  runner.join();
  stop = true;
  holder.join();
  refuser.join();
  ASSERT_GT(port, 0) << describe(r);
  ASSERT_GE(flood.load(), 1000) << "the flood did not happen; nothing was shown";
  ASSERT_EQ(r.code, 0) << describe(r);
  for (int i = 0; i < kRequests; ++i)
    EXPECT_NE(r.out.find("hello GET /r" + std::to_string(i) + " "), std::string::npos)
        << i << "\n"
        << describe(r);
  EXPECT_EQ(allowed_.accepts(), kRequests);
  std::size_t lines = 0;
  for (std::size_t at = r.err.find("sbx: proxy: "); at != std::string::npos;
       at = r.err.find("sbx: proxy: ", at + 1))
    ++lines;
  EXPECT_LE(lines, 111u) << "flood of " << flood << " connections";  // 110 entries, 1 summary
  const json::object report = report_of(r);
  EXPECT_LE(report.at("network_refusals").as_array().size(), 110u);
  EXPECT_GT(report.at("network_refusals_total").to_number<int>(), 110) << describe(r);
}

// Issue #35 point 5: git over ssh in network mode proxy. GIT_SSH_COMMAND gives ssh
// `sbx-stage2 --proxy-connect %h %p` as its ProxyCommand, which tunnels through sbx's proxy
// with the run's credential: an allowed host:port is reached by the real ssh client (its
// identification line arrives; the test server does no key exchange, so git then fails), an
// unlisted one is refused by the proxy and its server sees nothing.
TEST_P(ProxyExec, GitOverSshReachesAnAllowedHostThroughTheProxyOnly) {
  if (::access("/usr/bin/ssh", X_OK) != 0 || ::access("/usr/bin/git", X_OK) != 0)
    GTEST_SKIP() << "needs /usr/bin/ssh and /usr/bin/git (Debian: openssh-client, git)";
  SshBannerServer allowed;
  SshBannerServer unlisted;
  std::ofstream(policy_, std::ios::trunc) << R"({"version": 1,
      "filesystem": {"kind": "restricted", "protected_names": [],
        "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
      "network": {"mode": "proxy", "allowed_domains": ["127.0.0.1:)"
                                          << allowed.port() << R"("]}})";
  const std::string ssh_options =
      "-o BatchMode=yes -o StrictHostKeyChecking=no "
      "-o UserKnownHostsFile=/dev/null";
  const RunResult r = exec_sh(
      "export GIT_SSH_COMMAND=\"$GIT_SSH_COMMAND " + ssh_options +
      "\"; echo \"$GIT_SSH_COMMAND\"; " +
      "git ls-remote ssh://git@127.0.0.1:" + std::to_string(allowed.port()) + "/r.git; " +
      "git ls-remote ssh://git@127.0.0.1:" + std::to_string(unlisted.port()) + "/r.git; exit 0");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("--proxy-connect %h %p"), std::string::npos) << describe(r);
  EXPECT_EQ(allowed.accepts(), 1) << describe(r);
  EXPECT_EQ(allowed.client_line().rfind("SSH-2.0-OpenSSH", 0), 0u)
      << "the ssh client's identification did not arrive: " << allowed.client_line() << describe(r);
  EXPECT_EQ(unlisted.accepts(), 0) << describe(r);
  const std::string refused = "127.0.0.1:" + std::to_string(unlisted.port());
  EXPECT_NE(
      r.err.find("sbx-stage2 --proxy-connect: sbx's proxy refused " + refused + ": HTTP/1.1 403"),
      std::string::npos)
      << describe(r);
  const json::object report = report_of(r);
  const json::array& refusals = report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), 1u) << describe(r);
  EXPECT_EQ(refusals[0].at("rule").as_string(), "not in allowed_domains");
}

// The caller's own GIT_SSH_COMMAND keeps its options; the ProxyCommand is appended.
TEST_P(ProxyExec, TheCallersGitSshCommandKeepsItsOptions) {
  std::vector<std::string> argv = {
      sbx(),   "--backends", GetParam(), "exec",    "--policy", policy_,
      "--cwd", dir_,         "--",       "/bin/sh", "-c",       "echo \"$GIT_SSH_COMMAND\""};
  const RunResult r = sbx::test::run(
      argv, {"PATH=/usr/bin:/bin", "HOME=/root", "GIT_SSH_COMMAND=ssh -i /root/.ssh/deploy"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.rfind("ssh -i /root/.ssh/deploy -o ProxyCommand=\"'", 0), 0u) << describe(r);
  EXPECT_NE(r.out.find("/sbx-stage2' --proxy-connect %h %p\"\n"), std::string::npos) << describe(r);
}

TEST_P(ProxyExec, UnixSocketsCannotBeOpened) {
  // A host unix socket the test listens on, inside the sandbox's writable cwd.
  const std::string path = dir_ + "/host.sock";
  const int server = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(server, 4), 0);
  // Also the proxy's own socket, wherever the plan put it (its directory is bound under bwrap).
  const RunResult r =
      exec_sh("curl -sS -m 5 --unix-socket " + path +
              " http://x/; echo \"host=$?\"; "
              "for s in /tmp/sbx-proxy-*/proxy.sock; do [ -S \"$s\" ] || continue; "
              "curl -sS -m 5 --unix-socket \"$s\" http://x/; echo \"proxy=$?\"; done");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("host=7"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("proxy=0"), std::string::npos) << describe(r);
  EXPECT_LT(::accept(server, nullptr, nullptr), 0) << "the host unix socket was reached";
  ::close(server);
}

TEST_P(ProxyExec, TheProxyLivesExactlyAsLongAsTheCommand) {
  const RunResult r = exec_sh("p=${HTTP_PROXY##*:}; echo \"$p\"");
  ASSERT_EQ(r.code, 0) << describe(r);
  const int port = std::atoi(r.out.c_str());
  ASSERT_GT(port, 0) << describe(r);
  const int fd = sbx::proxy::testing::connect_loopback(static_cast<std::uint16_t>(port));
  EXPECT_LT(fd, 0) << "the proxy on port " << port << " still accepts after the command ended";
  if (fd >= 0) ::close(fd);
}

TEST_P(ProxyExec, DryRunNeverShowsTheCredential) {
  const RunResult r = run({sbx(), "--backends", GetParam(), "exec", "--policy", policy_, "--cwd",
                           dir_, "--dry-run", "--", "/bin/true"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("HTTP_PROXY=http://sbx:***@127.0.0.1:"), std::string::npos) << r.out;
  // The credential is 32 hex digits; none may appear after "sbx:".
  EXPECT_FALSE(std::regex_search(r.out, std::regex("sbx:[0-9a-f]{32}"))) << r.out;
  EXPECT_EQ(r.out.find("198.51.100.1"), std::string::npos) << "the caller's proxy was kept";
}

TEST_P(ProxyExec, TraceLogsNeverShowTheCredential) {
  // --log-level is a global option: before the subcommand.
  const RunResult traced =
      run({sbx(), "--log-level", "trace", "--backends", GetParam(), "exec", "--policy", policy_,
           "--cwd", dir_, "--", "/bin/sh", "-c", "echo \"$HTTP_PROXY\""});
  ASSERT_EQ(traced.code, 0) << describe(traced);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(traced.out, match, std::regex("sbx:([0-9a-f]{32})@")))
      << describe(traced);
  EXPECT_NE(traced.err.find("proxy: started for this run"), std::string::npos)
      << "no debug log line: the test would prove nothing\n"
      << describe(traced);
  EXPECT_EQ(traced.err.find(match[1].str()), std::string::npos)
      << "the credential is in sbx's log output\n"
      << describe(traced);
}

// A policy that names proxy_ports itself: its port must never reach the backend as if it were
// sbx's proxy (under Landlock a connect rule for it, on every address). `exec` and `debug`
// refuse it; the loopback server on that port sees nothing.
TEST_P(ProxyExec, APolicyThatNamesProxyPortsNeverRuns) {
  CountingServer service;
  const std::string own_ports = dir_ + ".own-ports.json";
  std::ofstream(own_ports) << R"({"version": 1,
      "filesystem": {"kind": "restricted", "protected_names": [],
        "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
      "network": {"mode": "proxy", "proxy_ports": [)"
                           << service.port() << R"(],
        "allowed_domains": ["127.0.0.1:)"
                           << allowed_.port() << R"("]}})";
  const std::string marker = dir_ + "/ran";
  const RunResult r =
      run({sbx(), "--backends", GetParam(), "exec", "--policy", own_ports, "--cwd", dir_, "--",
           "/bin/sh", "-c",
           "touch " + marker + "; curl -sS -m 10 --noproxy '*' " + url(service, "/direct")});
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("remove proxy_ports from the policy"), std::string::npos) << describe(r);
  EXPECT_FALSE(fs::exists(marker)) << "the command ran\n" << describe(r);
  EXPECT_EQ(service.accepts(), 0) << "the command reached the policy's proxy_ports directly";

  const RunResult debug =
      run({sbx(), "debug", GetParam(), "--policy", own_ports, "--cwd", dir_, "--", "/bin/true"});
  EXPECT_EQ(debug.code, 125) << describe(debug);
  EXPECT_NE(debug.err.find("remove proxy_ports from the policy"), std::string::npos)
      << describe(debug);
  EXPECT_EQ(debug.out.find(std::to_string(service.port())), std::string::npos)
      << "debug printed a plan for the policy's port\n"
      << describe(debug);
}

// `sbx debug` plans for sbx's own proxy, like `exec --dry-run`, and never prints its credential.
TEST_P(ProxyExec, DebugPlansForSbxOwnProxyWithoutTheCredential) {
  const RunResult r =
      run({sbx(), "debug", GetParam(), "--policy", policy_, "--cwd", dir_, "--", "/bin/true"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("HTTP_PROXY=http://sbx:***@127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_FALSE(std::regex_search(r.out, std::regex("sbx:[0-9a-f]{32}"))) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Backends, ProxyExec, ::testing::Values("bwrap", "landlock"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
