// The proxy of one `sbx exec` run (RunProxy): its private socket directory, what it sets in the
// request, that it removes everything when it ends, and the helpers that keep the credential
// out of printed output and describe refusals.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "sbx/core/proxy.hpp"
#include "sbx/core/runtime.hpp"

namespace sbx::proxy {
namespace {

TransformRequest proxy_request() {
  TransformRequest request;
  request.argv = {"/bin/true"};
  request.env = {"PATH=/bin", "HTTPS_PROXY=http://elsewhere.test:1"};
  request.policy.network.mode = NetworkMode::kProxy;
  request.policy.network.allowed_domains = {"example.com"};
  return request;
}

TEST(RunProxy, PrivateDirectoryIsNeverUnderTmp) {
  // /tmp is writable in the workspace-write preset; another run's sandboxed command (Landlock
  // does not hide /tmp) must not reach this run's socket directory. Without a runtime
  // directory the parent is ~/.cache/sbx/proxy (tests/unit/runtime/private_state_test.cpp).
  Result<std::string> parent = private_runtime_parent();
  ASSERT_TRUE(parent.ok()) << parent.error();
  EXPECT_NE(parent->rfind("/tmp", 0), 0u) << *parent;
  struct stat st {};
  ASSERT_EQ(::lstat(parent->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(RunProxy, SocketAloneInAPrivateDirectoryAndRequestPointsAtIt) {
  TransformRequest request = proxy_request();
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request);
  ASSERT_TRUE(run.ok()) << run.error();
  const std::string dir = (*run)->directory();
  EXPECT_EQ(dir.rfind(private_runtime_parent().value() + "/sbx-proxy-", 0), 0u) << dir;
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0700u) << "only the owner may reach the socket";
  EXPECT_EQ(request.proxy_socket, dir + "/proxy.sock");
  ASSERT_EQ(::lstat(request.proxy_socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  const std::uint16_t port = (*run)->proxy().port();
  ASSERT_NE(port, 0);
  EXPECT_EQ(request.policy.network.proxy_ports, std::vector<std::uint16_t>{port});
  std::vector<std::string> expected = {"PATH=/bin"};
  for (const std::string& e : proxy_environment((*run)->proxy(), port)) expected.push_back(e);
  // git over ssh: sbx-stage2 as ssh's ProxyCommand (stage2/proxy_connect.hpp).
  const Result<InstallLayout> layout = install_layout();
  ASSERT_TRUE(layout.ok()) << layout.error();
  expected.push_back("GIT_SSH_COMMAND=ssh -o ProxyCommand=\"'" + layout->stage2_path +
                     "' --proxy-connect %h %p\"");
  EXPECT_EQ(request.env, expected);
}

TEST(RunProxy, EndingRemovesSocketAndDirectory) {
  TransformRequest request = proxy_request();
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request);
  ASSERT_TRUE(run.ok()) << run.error();
  const std::string dir = (*run)->directory();
  const std::string socket_path = request.proxy_socket;
  run->reset();
  struct stat st {};
  EXPECT_NE(::lstat(socket_path.c_str(), &st), 0);
  EXPECT_NE(::lstat(dir.c_str(), &st), 0) << dir << " left behind";
  // Nothing listens any more.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  EXPECT_NE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
}

TEST(RunProxy, OtherNetworkModeIsAnErrorAndLeavesNoDirectory) {
  TransformRequest request = proxy_request();
  request.policy.network.mode = NetworkMode::kRestricted;
  const std::string parent = ::testing::TempDir() + "runproxy-parent-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(parent.c_str(), 0700), 0);
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request, {}, parent);
  EXPECT_FALSE(run.ok());
  EXPECT_TRUE(request.proxy_socket.empty());
  EXPECT_EQ(::rmdir(parent.c_str()), 0) << "the failed start left something in " << parent;
}

TEST(RunProxy, MissingParentIsAPreciseError) {
  TransformRequest request = proxy_request();
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request, {}, "/nonexistent-sbx-dir");
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().find("cannot create a private directory under /nonexistent-sbx-dir"),
            std::string::npos)
      << run.error();
}

// A port the policy names is never handed on as if it were sbx's proxy: nothing would filter
// it, and under Landlock the connect rule for it would hold on every address.
TEST(RunProxy, PolicyThatNamesProxyPortsIsRefusedAndTheRequestUnchanged) {
  TransformRequest request = proxy_request();
  request.policy.network.proxy_ports = {18080};
  const TransformRequest before = request;
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().find("network.proxy_ports [18080] is set by the policy"), std::string::npos)
      << run.error();
  EXPECT_NE(run.error().find("remove proxy_ports from the policy"), std::string::npos)
      << run.error();
  EXPECT_EQ(request.policy.network.proxy_ports, before.policy.network.proxy_ports);
  EXPECT_EQ(request.env, before.env);
  EXPECT_TRUE(request.proxy_socket.empty());
}

TEST(RunProxy, ServesOnlyARequestPointingAtItself) {
  TransformRequest request = proxy_request();
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request);
  ASSERT_TRUE(run.ok()) << run.error();
  EXPECT_TRUE((*run)->serves(request));
  TransformRequest other_port = request;
  other_port.policy.network.proxy_ports = {18080};
  EXPECT_FALSE((*run)->serves(other_port));
  TransformRequest two_ports = request;
  two_ports.policy.network.proxy_ports.push_back(18080);
  EXPECT_FALSE((*run)->serves(two_ports));
  TransformRequest other_socket = request;
  other_socket.proxy_socket = "/tmp/elsewhere/proxy.sock";
  EXPECT_FALSE((*run)->serves(other_socket));
}

// A run whose sbx is killed with SIGKILL: its proxy starts in a child that then dies without
// any cleanup (the kernel drops its lock). Returns the directory it left.
std::string killed_run_directory(const std::string& parent) {
  int report[2];
  if (::pipe(report) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    TransformRequest request = proxy_request();
    auto* run = new Result<std::unique_ptr<RunProxy>>(RunProxy::start(request, {}, parent));
    const std::string dir = run->ok() ? (**run)->directory() : "";
    (void)!::write(report[1], dir.data(), dir.size());
    ::kill(::getpid(), SIGKILL);
    ::_exit(1);
  }
  ::close(report[1]);
  char buffer[4096];
  const ssize_t n = ::read(report[0], buffer, sizeof buffer);
  ::close(report[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
}

TEST(RunProxy, AKilledRunsDirectoryIsRemovedByTheNextRunAndNothingElse) {
  const std::string parent = ::testing::TempDir() + "runproxy-sweep-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(parent.c_str(), 0700), 0);
  const std::string left = killed_run_directory(parent);
  ASSERT_FALSE(left.empty());
  struct stat st {};
  ASSERT_EQ(::lstat((left + "/proxy.sock").c_str(), &st), 0) << "the killed run left no socket";
  // Not ours to remove: another name, other content, another mode, a live run.
  const std::string other_name = parent + "/sbx-proxy-not-mine";
  const std::string with_content = parent + "/sbx-proxy-abc123";
  const std::string open_mode = parent + "/sbx-proxy-def456";
  ASSERT_EQ(::mkdir(other_name.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(with_content.c_str(), 0700), 0);
  std::ofstream(with_content + "/notes") << "a person's file";
  ASSERT_EQ(::mkdir(open_mode.c_str(), 0755), 0);
  ::chmod(open_mode.c_str(), 0755);
  TransformRequest live_request = proxy_request();
  Result<std::unique_ptr<RunProxy>> live = RunProxy::start(live_request, {}, parent);
  ASSERT_TRUE(live.ok()) << live.error();
  EXPECT_NE(::lstat(left.c_str(), &st), 0) << left << " was not removed by the next run";
  TransformRequest next_request = proxy_request();
  Result<std::unique_ptr<RunProxy>> next = RunProxy::start(next_request, {}, parent);
  ASSERT_TRUE(next.ok()) << next.error();
  EXPECT_EQ(::lstat((*live)->directory().c_str(), &st), 0) << "a live run's directory was removed";
  EXPECT_EQ(::lstat(live_request.proxy_socket.c_str(), &st), 0);
  EXPECT_EQ(::lstat(other_name.c_str(), &st), 0);
  EXPECT_EQ(::lstat((with_content + "/notes").c_str(), &st), 0);
  EXPECT_EQ(::lstat(open_mode.c_str(), &st), 0);
  live->reset();
  next->reset();
  std::filesystem::remove_all(parent);
}

std::set<std::string> thread_ids() {
  std::set<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    out.insert(entry.path().filename().string());
  return out;
}

// Why: a backend waits for its child's SIGCHLD (bwrap: through a signalfd); a proxy thread
// with SIGCHLD unblocked could take that process-directed signal and discard it (a hang).
TEST(RunProxy, ItsThreadBlocksEverySignal) {
  const std::set<std::string> before = thread_ids();
  TransformRequest request = proxy_request();
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request);
  ASSERT_TRUE(run.ok()) << run.error();
  std::vector<std::string> added;
  for (const std::string& tid : thread_ids()) {
    if (before.count(tid) == 0) added.push_back(tid);
  }
  ASSERT_EQ(added.size(), 1u) << "expected exactly the proxy's thread";
  std::ifstream status("/proc/self/task/" + added.front() + "/status");
  std::string line;
  unsigned long long blocked = 0;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) blocked = std::stoull(line.substr(7), nullptr, 16);
  }
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGUSR1})
    EXPECT_NE(blocked & (1ull << (sig - 1)), 0u) << "signal " << sig << " not blocked";
  // The caller's own mask is unchanged.
  sigset_t mine;
  pthread_sigmask(SIG_SETMASK, nullptr, &mine);
  EXPECT_EQ(sigismember(&mine, SIGCHLD), 0);
}

TEST(ProxyRedact, ReplacesEveryOccurrence) {
  EXPECT_EQ(redact("http://u:abc@h:1 and abc", "abc"), "http://u:***@h:1 and ***");
  EXPECT_EQ(redact("abcabc", "abc"), "******");
  EXPECT_EQ(redact("nothing here", "abc"), "nothing here");
  EXPECT_EQ(redact("text", ""), "text");
}

TEST(ProxyRedact, TokenNeverSurvivesInTheEnvironment) {
  TransformRequest request = proxy_request();
  Result<std::unique_ptr<RunProxy>> run = RunProxy::start(request);
  ASSERT_TRUE(run.ok()) << run.error();
  const std::string& token = (*run)->proxy().token();
  ASSERT_FALSE(token.empty());
  for (const std::string& entry : request.env)
    EXPECT_EQ(redact(entry, token).find(token), std::string::npos);
}

TEST(ProxyRefusals, DescribeAndJson) {
  const std::vector<Refusal> refusals = {
      {"evil.test", 443, "http-connect", "denied_domains: evil.test"},
      {"", 0, "socks5", "missing or wrong proxy credential"},
      {"x\ny.test", 80, "http", "not in allowed_domains"}};
  EXPECT_EQ(describe(refusals[0]),
            "evil.test:443 (http-connect) refused: denied_domains: evil.test");
  EXPECT_EQ(describe(refusals[1]), "?:0 (socks5) refused: missing or wrong proxy credential");
  const std::string json = refusals_to_json(refusals);
  EXPECT_EQ(json.find('\n'), std::string::npos) << "one line: " << json;
  const boost::json::value parsed = boost::json::parse(json);
  const boost::json::array& array = parsed.as_array();
  ASSERT_EQ(array.size(), 3u);
  for (const boost::json::value& item : array) EXPECT_EQ(item.at("kind").as_string(), "proxy");
  EXPECT_EQ(array[0].at("host").as_string(), "evil.test");
  EXPECT_EQ(array[0].at("port").to_number<int>(), 443);
  EXPECT_EQ(array[0].at("protocol").as_string(), "http-connect");
  EXPECT_EQ(array[0].at("rule").as_string(), "denied_domains: evil.test");
  EXPECT_TRUE(array[1].at("host").is_null());
  EXPECT_EQ(array[2].at("host").as_string(), "x\ny.test");
  EXPECT_EQ(refusals_to_json({}), "[]");
}

}  // namespace
}  // namespace sbx::proxy
