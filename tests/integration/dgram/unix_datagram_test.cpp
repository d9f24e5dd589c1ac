// Unix datagrams (issue #32, point 2), end to end through the installed `sbx exec --json`: a
// datagram socket bound by the test on the host (in a /var/tmp directory) receives nothing from
// inside, whichever way the command tries (sbx_unix_datagram_probe attack: socket() and
// socketpair(), SOCK_DGRAM and SOCK_RAW with and without SOCK_NONBLOCK/SOCK_CLOEXEC, sendto,
// sendmsg, sendmmsg, connect + send), in every network mode, under bwrap and Landlock, as root
// and as user 65534; the refusals bwrap's supervisor sees are named in `network_refusals`. And
// Codex's allow_unix_socketpair_recvfrom body (a datagram socketpair used inside) works under
// bwrap.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

using namespace sbx::test;

namespace {

constexpr const char* kProbe = SBX_DGRAM_PROBE;

// A unix datagram socket bound at DIR/host.sock, writable by everyone (user 65534 included),
// counting what reached it.
class HostDatagramSocket {
 public:
  explicit HostDatagramSocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path.c_str(), path.size());
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
             ::chmod(path.c_str(), 0777) == 0;
  }
  ~HostDatagramSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  HostDatagramSocket(const HostDatagramSocket&) = delete;
  HostDatagramSocket& operator=(const HostDatagramSocket&) = delete;
  bool ok() const { return bound_; }
  // Datagrams waiting (each read and dropped).
  int received() const {
    int count = 0;
    char buffer[64];
    while (::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT) >= 0) ++count;
    return count;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

struct JsonRun {
  RunResult run;
  boost::json::object report;
};

JsonRun parse_report(RunResult run) {
  JsonRun out{std::move(run), {}};
  std::string err = out.run.err;
  if (!err.empty() && err.back() == '\n') err.pop_back();
  const std::size_t last = err.rfind('\n');
  const std::string line = last == std::string::npos ? err : err.substr(last + 1);
  boost::json::error_code ec;
  boost::json::value value = boost::json::parse(line, ec);
  if (!ec && value.is_object()) out.report = value.as_object();
  return out;
}

// "kind path" of every network refusal of the report.
std::vector<std::string> refusals(const boost::json::object& report) {
  std::vector<std::string> out;
  const boost::json::value* list = report.if_contains("network_refusals");
  if (list == nullptr || !list->is_array()) return out;
  for (const boost::json::value& item : list->as_array()) {
    const boost::json::object& o = item.as_object();
    const boost::json::value* where = o.if_contains("path");
    if (where == nullptr) where = o.if_contains("address");
    out.push_back(std::string(o.at("kind").as_string()) + " " +
                  (where != nullptr && where->is_string() ? std::string(where->as_string()) : ""));
  }
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& wanted) {
  for (const std::string& s : list)
    if (s == wanted) return true;
  return false;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += "  " + s + "\n";
  return out;
}

// backend, network mode, user ("root" or "65534").
using Case = std::tuple<std::string, std::string, std::string>;

class UnixDatagrams : public ::testing::TestWithParam<Case> {
 protected:
  const std::string& backend() const { return std::get<0>(GetParam()); }
  const std::string& mode() const { return std::get<1>(GetParam()); }
  bool unprivileged() const { return std::get<2>(GetParam()) == "65534"; }

  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    const std::string why = backend_unavailable(backend());
    if (!why.empty()) GTEST_SKIP() << why;
    ::chmod(dir_.path().c_str(), 0777);
    ::chmod(conf_.path().c_str(), 0755);
    if (unprivileged()) {
      if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to user 65534";
      if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
      const RunResult reachable = run(as_user({"/usr/bin/test", "-x", kProbe}), base_env());
      if (reachable.code != 0)
        GTEST_SKIP() << "user 65534 cannot execute " << kProbe
                     << " (a parent directory of the build tree is private to its owner)";
      if (backend() == "bwrap") {
        const RunResult userns =
            run(as_user({"/usr/bin/bwrap", "--unshare-user", "--ro-bind", "/", "/", "/bin/true"}),
                base_env());
        if (userns.code != 0)
          GTEST_SKIP() << "user 65534 cannot create user namespaces here: " << userns.err;
      }
      ::chown(ws_.path().c_str(), 65534, 65534);
      ::chown(home_.path().c_str(), 65534, 65534);
    }
  }

  std::vector<std::string> as_user(std::vector<std::string> argv) const {
    if (!unprivileged()) return argv;
    argv.insert(argv.begin(),
                {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
    return argv;
  }

  std::string policy_file() {
    std::string network = R"({"mode":")" + mode() + "\"";
    if (mode() == "proxy") network += R"(,"allowed_domains":["example.com"])";
    network += "}";
    write_file(conf_ / "policy.json",
               R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
               R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
               R"("protected_names":[]},"network":)" +
                   network + "}");
    ::chmod((conf_ / "policy.json").c_str(), 0644);
    return conf_ / "policy.json";
  }

  JsonRun exec_json(const std::vector<std::string>& command) {
    std::vector<std::string> argv = {sbx_path(), "--backends",  backend(), "exec",     "--json",
                                     "--policy", policy_file(), "--cwd",   ws_.path(), "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    std::vector<std::string> env = base_env();
    env[1] = "HOME=" + home_.path();
    env.push_back("PWD=" + ws_.path());
    return parse_report(run(as_user(argv), env));
  }

  TempDir dir_{"/var/tmp"};   // the host socket's directory
  TempDir conf_{"/var/tmp"};  // the policy
  TempDir ws_{"/var/tmp"};
  TempDir home_{private_parent()};  // not /var/tmp: no state there
};

TEST_P(UnixDatagrams, NoDatagramReachesAHostSocketAndTheRefusalsAreNamed) {
  const std::string host_path = dir_ / "host.sock";
  HostDatagramSocket host(host_path);
  ASSERT_TRUE(host.ok()) << std::strerror(errno);
  const JsonRun r = exec_json({kProbe, "attack", host_path});
  EXPECT_EQ(host.received(), 0) << describe(r.run);
  ASSERT_EQ(r.run.code, 0) << describe(r.run);
  const std::vector<std::string> out = lines_of(r.run.out);
  // 2 types x 4 flag sets: socket() refused at creation (one line each), socketpair() either
  // refused at creation or tried with all four calls.
  ASSERT_GE(out.size(), 16u) << r.run.out;
  for (const std::string& line : out) {
    if (line.rfind("socket ", 0) == 0) {
      EXPECT_NE(line.find("create: EPERM"), std::string::npos) << line;
    }
    // A substituted pair ignores the address (its peer gets the byte); the host got nothing
    // (checked above), and the supervisor refuses connect and, in a private namespace, sendto.
    if (line.rfind("socketpair ", 0) == 0 && line.find(" connect: ") != std::string::npos) {
      EXPECT_EQ(line.find("sent"), std::string::npos) << line;
    }
  }
  const std::vector<std::string> named = refusals(r.report);
  // Both backends name the refused datagram socket()s: bwrap's unix supervisor, Landlock's
  // metadata guard (plugins/landlock/README.md).
  EXPECT_TRUE(contains(named, "unix socket(AF_UNIX, SOCK_DGRAM)")) << joined(named);
  EXPECT_TRUE(contains(named, "unix socket(AF_UNIX, SOCK_RAW)")) << joined(named);
  // bwrap's supervisor also names the connects of a substituted pair, and so does Landlock's
  // unix connect guard with the network enabled; Landlock's blocked and proxy filters refuse
  // connect on every socket of a pair (the table, and no route under Landlock's TCP rules for
  // a unix one: it is a seqpacket pair, connected already).
  if (backend() == "bwrap" || mode() == "enabled") {
    EXPECT_TRUE(contains(named, "unix " + host_path)) << joined(named);  // the connects
  }
  for (const std::string& line : out) {
    if (line.rfind("socketpair ", 0) == 0) {
      EXPECT_EQ(line.find("create:"), std::string::npos) << "a datagram socketpair refused";
    }
  }
}

TEST_P(UnixDatagrams, CodexSocketpairRecvfromWorksInside) {
  const JsonRun r = exec_json({kProbe, "socketpair"});
  EXPECT_EQ(r.run.code, 0) << describe(r.run);
  EXPECT_EQ(r.run.out, "ok\n") << describe(r.run);
  EXPECT_TRUE(refusals(r.report).empty()) << joined(refusals(r.report));
}

// The pair bwrap's supervisor gives is made in an empty network namespace of its own: interface
// ioctls on it (which read the namespace the socket belongs to, and need no privilege) list
// nothing, so they cannot show a sandbox in a private namespace the host's interfaces.
// (bwrap only: Landlock refuses datagram socketpairs, and shares the host's namespace anyway.)
class BwrapDatagramPairs : public UnixDatagrams {};

TEST_P(BwrapDatagramPairs, ADatagramSocketpairShowsNoHostInterface) {
  const JsonRun r = exec_json({kProbe, "ifconf"});
  EXPECT_EQ(r.run.code, 0) << describe(r.run);
  EXPECT_EQ(r.run.out, "interfaces:\n") << describe(r.run);
}

// Without --json each refusal is one stderr line after the command (core/cli/README.md).
// Checked once (bwrap, root, network restricted): only bwrap's supervisor names these
// refusals, the same way in every mode.
class UnixDatagramStderr : public UnixDatagrams {};

TEST_P(UnixDatagramStderr, RefusedDatagramSocketIsOneStderrLineWithoutJson) {
  std::vector<std::string> env = base_env();
  env.push_back("PWD=" + ws_.path());
  const RunResult r = run({sbx_path(), "--backends", "bwrap", "exec", "--policy", policy_file(),
                           "--cwd", ws_.path(), "--", kProbe, "attack", dir_ / "none.sock"},
                          env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.err.find("sbx: network: the sandbox refused a unix datagram socket (socket(AF_UNIX, "
                       "SOCK_RAW)): its sends could name any host socket\n"),
            std::string::npos)
      << describe(r);
}

// A unix datagram socket the caller passes as a standard descriptor (SOCK_RAW makes one too)
// would let the command send to any host socket by a path per message: the run is refused
// (125, naming the descriptor) before the command starts, under both backends.
// Checked once per backend (root, network restricted): the check does not depend on the mode
// or the user.
class InheritedDescriptors : public UnixDatagrams {};

// Runs `sbx exec -- /bin/echo RAN` with `fd0` as its descriptor 0; exit status and output.
std::pair<int, std::string> run_with_stdin(const std::string& backend, const std::string& policy,
                                           const std::string& cwd, int fd0) {
  int out[2];
  if (::pipe(out) != 0) return {-1, "pipe failed"};
  const std::vector<std::string> argv = {sbx_path(), "--backends", backend, "exec",
                                         "--policy", policy,       "--cwd", cwd,
                                         "--",       "/bin/echo",  "RAN"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd0, 0);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

TEST_P(InheritedDescriptors, InheritedDatagramSocketRefusesTheRun) {
  for (const int type : {SOCK_DGRAM, SOCK_RAW}) {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, type, 0, pair), 0);
    const auto [code, text] = run_with_stdin(backend(), policy_file(), ws_.path(), pair[1]);
    ::close(pair[0]);
    ::close(pair[1]);
    EXPECT_EQ(code, 125) << text;
    EXPECT_NE(text.find("descriptor 0 is a unix datagram socket"), std::string::npos) << text;
    EXPECT_EQ(text.find("RAN"), std::string::npos) << text;
  }
}

// A socket the caller leaves unconnected (or listening, or an inet datagram one) on descriptor
// 0 belongs to the caller's network namespace: connected from inside it reached a host loopback
// listener, host abstract and pathname unix sockets (issue #32, third review). Refused; a
// connected stream socket, which cannot be pointed anywhere new, still runs the command.
TEST_P(InheritedDescriptors, AnUnconnectedOrListeningSocketRefusesTheRunAConnectedOneRuns) {
  struct Attempt {
    int domain;
    int type;
    bool listen;
    const char* said;
  };
  for (const Attempt& a : {Attempt{AF_INET, SOCK_STREAM, false, "unconnected IPv4 socket"},
                           Attempt{AF_INET, SOCK_DGRAM, false, "IPv4 datagram socket"},
                           Attempt{AF_INET6, SOCK_DGRAM, false, "IPv6 datagram socket"},
                           Attempt{AF_UNIX, SOCK_STREAM, false, "unconnected unix socket"},
                           Attempt{AF_UNIX, SOCK_SEQPACKET, false, "unconnected unix socket"},
                           Attempt{AF_INET, SOCK_STREAM, true, "listening IPv4 socket"}}) {
    const int fd = ::socket(a.domain, a.type, 0);
    if (fd < 0 && a.domain == AF_INET6) continue;  // no IPv6 on this host: the IPv4 rows stand
    ASSERT_GE(fd, 0) << a.said << ": " << std::strerror(errno);
    if (a.listen) {
      sockaddr_in any{};
      any.sin_family = AF_INET;
      any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any), 0);
      ASSERT_EQ(::listen(fd, 1), 0);
    }
    const auto [code, text] = run_with_stdin(backend(), policy_file(), ws_.path(), fd);
    ::close(fd);
    EXPECT_EQ(code, 125) << a.said << ": " << text;
    EXPECT_NE(text.find("descriptor 0 is "), std::string::npos) << text;
    EXPECT_NE(text.find(a.said), std::string::npos) << text;
    EXPECT_EQ(text.find("RAN"), std::string::npos) << a.said << ": " << text;
  }
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  const auto [code, text] = run_with_stdin(backend(), policy_file(), ws_.path(), pair[1]);
  ::close(pair[0]);
  ::close(pair[1]);
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("RAN"), std::string::npos) << text;
}

// A directory, or any O_PATH descriptor, on descriptor 0 names a place on the host's mounts:
// openat() relative to it or a path through /proc/self/fd/0 resolves past the sandbox's masks
// (outside review, session 20: with the workspace on stdin a bwrap-sandboxed command wrote
// .git/hooks/pre-commit on the host and read a --deny path). Refused (125) before anything runs;
// a regular file opened for reading still runs the command.
TEST_P(InheritedDescriptors, ADirectoryOrAPathDescriptorRefusesTheRun) {
  const std::string hooks = ws_.path() + "/.git/hooks";
  std::filesystem::create_directories(hooks);
  std::ofstream(ws_.path() + "/data.txt") << "data\n";
  struct Attempt {
    std::string path;
    int flags;
    const char* said;
  };
  for (const Attempt& a :
       {Attempt{ws_.path(), O_RDONLY | O_DIRECTORY, "descriptor 0 is a directory"},
        Attempt{ws_.path(), O_PATH | O_DIRECTORY, "descriptor 0 is an O_PATH descriptor"},
        Attempt{ws_.path() + "/data.txt", O_PATH, "descriptor 0 is an O_PATH descriptor"}}) {
    const int fd = ::open(a.path.c_str(), a.flags | O_CLOEXEC);
    ASSERT_GE(fd, 0) << a.path << ": " << std::strerror(errno);
    const auto [code, text] = run_with_stdin(backend(), policy_file(), ws_.path(), fd);
    ::close(fd);
    EXPECT_EQ(code, 125) << a.said << ": " << text;
    EXPECT_NE(text.find(a.said), std::string::npos) << text;
    EXPECT_EQ(text.find("RAN"), std::string::npos) << a.said << ": " << text;
  }
  EXPECT_TRUE(std::filesystem::is_empty(hooks));
  const int file = ::open((ws_.path() + "/data.txt").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  const auto [code, text] = run_with_stdin(backend(), policy_file(), ws_.path(), file);
  ::close(file);
  EXPECT_EQ(code, 0) << text;
  EXPECT_NE(text.find("RAN"), std::string::npos) << text;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" +
         (std::get<2>(info.param) == "root" ? "root" : "user65534");
}

INSTANTIATE_TEST_SUITE_P(LinuxBackends, UnixDatagrams,
                         ::testing::Combine(::testing::Values("bwrap", "landlock"),
                                            ::testing::Values("restricted", "proxy", "enabled"),
                                            ::testing::Values("root", "65534")),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Bwrap, BwrapDatagramPairs,
                         ::testing::Combine(::testing::Values("bwrap"),
                                            ::testing::Values("restricted", "proxy", "enabled"),
                                            ::testing::Values("root", "65534")),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Bwrap, UnixDatagramStderr,
                         ::testing::Values(Case{"bwrap", "restricted", "root"}), case_name);
INSTANTIATE_TEST_SUITE_P(LinuxBackends, InheritedDescriptors,
                         ::testing::Values(Case{"bwrap", "restricted", "root"},
                                           Case{"landlock", "restricted", "root"}),
                         case_name);

}  // namespace
