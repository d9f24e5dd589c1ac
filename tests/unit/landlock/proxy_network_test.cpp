// Landlock proxy-only network: the translator's exact stage-2 argv and notes, and the TCP
// connect port rule applied for real in forked children (connect to the proxy's port passes
// the ruleset, any other port is refused with EACCES, bind is refused). Loopback only.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "landlock_ruleset.hpp"
#include "sbx/landlock/translate.hpp"

namespace {

using namespace sbx;

TransformRequest proxy_request(std::vector<std::uint16_t> ports) {
  TransformRequest r;
  r.argv = {"/usr/bin/curl", "https://example.com/"};
  r.cwd = "/ws";
  r.env = {"PATH=/bin", "HTTPS_PROXY=http://sbx:TOKEN@127.0.0.1:41234"};
  r.policy.rules = {{"/", Access::kRead}, {"/ws", Access::kWrite}};
  r.policy.network.mode = NetworkMode::kProxy;
  r.policy.network.proxy_ports = std::move(ports);
  r.policy.cwd = "/ws";
  return r;
}

// A host whose / holds only /usr (the policy reads /, which is granted entry by entry).
landlock::HostFacts proxy_host_facts() {
  landlock::HostFacts facts;
  facts.stage2_path = "/s2";
  facts.mounts_known = true;
  facts.listings["/"] = {{"usr", false}};
  return facts;
}

TEST(LandlockProxy, ExactStage2ArgvWithTheProxyPort) {
  auto t = landlock::translate(proxy_request({41234}), proxy_host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  const std::vector<std::string> expected = {"/s2",
                                             "--landlock",
                                             "4",
                                             "--ll-fs",
                                             "restricted",
                                             "--ll-list",
                                             "/",
                                             "--ll-read",
                                             "/usr",
                                             "--ll-write",
                                             "/ws",
                                             "--ll-dev",
                                             "/dev/null",
                                             "--ll-dev",
                                             "/dev/zero",
                                             "--ll-dev",
                                             "/dev/full",
                                             "--ll-dev",
                                             "/dev/random",
                                             "--ll-dev",
                                             "/dev/urandom",
                                             "--ll-dev",
                                             "/dev/tty",
                                             "--ll-dev",
                                             "/dev/ptmx",
                                             "--ll-scope-abstract-unix",
                                             "on",
                                             "--net",
                                             "proxy",
                                             "--proxy-port",
                                             "41234",
                                             "--env-environ",
                                             "--",
                                             "/usr/bin/curl",
                                             "https://example.com/"};
  EXPECT_EQ(t->argv, expected);
  // The credential is in the environment stage 2 gets, not in its world-readable arguments.
  EXPECT_EQ(t->env, (std::vector<std::string>{"PATH=/bin",
                                              "HTTPS_PROXY=http://sbx:TOKEN@127.0.0.1:41234"}));
  EXPECT_EQ(t->plan.min_abi, 4) << "TCP rules need ABI 4; stage 2 refuses to run below it";
  const bool gap_noted = std::any_of(t->notes.begin(), t->notes.end(), [](const std::string& n) {
    return n.find("port 41234 only, but on ANY address") != std::string::npos;
  });
  EXPECT_TRUE(gap_noted) << "the per-address gap must be stated in the plan's notes";
}

TEST(LandlockProxy, RefusedWithoutExactlyOnePortOrWithUnixSocketsOrLocalBinding) {
  for (const std::vector<std::uint16_t>& ports :
       {std::vector<std::uint16_t>{}, std::vector<std::uint16_t>{0},
        std::vector<std::uint16_t>{1, 2}}) {
    auto t = landlock::translate(proxy_request(ports), proxy_host_facts());
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().find("proxy_network: it needs exactly one proxy port"), std::string::npos)
        << t.error();
  }
  auto sockets = proxy_request({41234});
  sockets.policy.network.unix_sockets = {"/run/agent.sock"};
  auto t = landlock::translate(sockets, proxy_host_facts());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("unix_socket_allowlist"), std::string::npos) << t.error();
  // No bind or listen in proxy mode either: local binding is refused by name.
  auto binding = proxy_request({41234});
  binding.policy.network.allow_local_binding = true;
  t = landlock::translate(binding, proxy_host_facts());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("local_binding: network.allow_local_binding"), std::string::npos)
      << t.error();
}

// ---- the ruleset, for real ----

int tcp_call(bool bind_instead, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return errno;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = bind_instead
                     ? ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address)
                     : ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

// In a child: a ruleset with only TCP handled and `allowed` as the one connect port, then the
// call. Returns the errno it saw (0 = success), or -1 if the ruleset could not be applied.
int errno_under_ruleset(std::uint16_t allowed, bool bind_instead, std::uint16_t port) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(255);
    stage2::LandlockSpec spec;
    spec.enabled = true;
    spec.min_abi = 4;
    spec.restrict_filesystem = false;
    spec.block_tcp = true;
    spec.connect_tcp_ports = {allowed};
    if (!stage2::apply_landlock(spec).ok()) ::_exit(255);
    ::_exit(tcp_call(bind_instead, port) & 0x7f);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 255) return -1;
  return WEXITSTATUS(status);
}

// A loopback listener whose port the rules allow, so an allowed connect really succeeds.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(fd_, 8);
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() { ::close(fd_); }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

TEST(LandlockProxy, OnlyTheProxyPortCanBeConnected) {
  if (stage2::landlock_abi() < 4)
    GTEST_SKIP() << "the kernel's Landlock ABI is " << stage2::landlock_abi()
                 << "; TCP rules need ABI 4";
  Listener proxy;
  Listener other;
  EXPECT_EQ(errno_under_ruleset(proxy.port(), false, proxy.port()), 0) << "the proxy's port";
  EXPECT_EQ(errno_under_ruleset(proxy.port(), false, other.port()), EACCES)
      << "a listening port that is not the proxy's";
  EXPECT_EQ(errno_under_ruleset(proxy.port(), true, 0), EACCES) << "bind (even port 0)";
}

TEST(LandlockProxy, PortRulesWithoutTcpHandlingFailClosed) {
  stage2::LandlockSpec spec;
  spec.enabled = true;
  spec.restrict_filesystem = false;
  spec.block_tcp = false;
  spec.connect_tcp_ports = {1234};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    ::_exit(stage2::apply_landlock(spec).ok() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << "a port allow-list without TCP handled must be an error";
}

}  // namespace
