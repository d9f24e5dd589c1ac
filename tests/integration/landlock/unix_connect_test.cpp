// Landlock with the network enabled, end to end through the installed `sbx --backends landlock
// exec --json`, as root and as user 65534: the host's pathname and abstract unix sockets stay
// closed (the unix connect guard, linux/landlock/unix_connect_notify.hpp), whichever way the
// command names them (a path outside the writable roots, a host socket inside one, a symlink,
// /proc/self/fd/N), and the host's listeners see nothing; a socket the command binds itself and
// the host's inet loopback stay reachable; each refusal is named in the report. The same
// attempts made without the sandbox, as the same user, reach the host socket: the refusal is
// the sandbox's, not the socket's permissions.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr const char* kPython = "/usr/bin/python3";

// argv: HOST-OUTSIDE HOST-INSIDE ABSTRACT-NAME TCP-PORT. One line per attempt: "LABEL connected"
// or "LABEL ERRNO_NAME". Run in the working directory (the writable root).
constexpr const char* kAttempts =
    "import errno, os, socket, sys\n"
    "def attempt(label, address):\n"
    "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "    try:\n"
    "        s.connect(address)\n"
    "        print(label, 'connected')\n"
    "    except OSError as e:\n"
    "        print(label, errno.errorcode.get(e.errno, e.errno))\n"
    "    s.close()\n"
    "outside, inside, abstract, port = sys.argv[1:5]\n"
    "attempt('outside', outside)\n"
    "attempt('inside', inside)\n"
    "attempt('abstract', '\\0' + abstract)\n"
    "os.symlink(outside, 'link.sock')\n"
    "attempt('symlink', 'link.sock')\n"
    "fd = os.open(outside, os.O_PATH)\n"
    "attempt('procfd', '/proc/self/fd/%d' % fd)\n"
    "own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "own.bind('own.sock')\n"
    "own.listen(1)\n"
    "attempt('own', 'own.sock')\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', int(port)), timeout=10).close()\n"
    "    print('tcp connected')\n"
    "except OSError as e:\n"
    "    print('tcp', errno.errorcode.get(e.errno, e.errno))\n";

// argv: PATH. "outside connected" or the errno's name: the same attempt without the sandbox.
constexpr const char* kOneAttempt =
    "import errno, socket, sys\n"
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "try:\n"
    "    s.connect(sys.argv[1])\n"
    "    print('outside connected')\n"
    "except OSError as e:\n"
    "    print('outside', errno.errorcode.get(e.errno, e.errno))\n";

std::vector<std::string> refusals(const std::string& err) {
  std::vector<std::string> out;
  std::string text = err;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  const std::size_t last = text.rfind('\n');
  boost::json::error_code ec;
  boost::json::value value =
      boost::json::parse(last == std::string::npos ? text : text.substr(last + 1), ec);
  if (ec || !value.is_object()) return out;
  const boost::json::value* list = value.as_object().if_contains("network_refusals");
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
  for (const std::string& s : list) {
    if (s == wanted) return true;
  }
  return false;
}

class LandlockUnixConnect : public ::testing::TestWithParam<std::string> {
 protected:
  bool unprivileged() const { return GetParam() == "65534"; }

  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    const std::string why = backend_unavailable("landlock");
    if (!why.empty()) GTEST_SKIP() << why;
    const std::optional<std::vector<std::string>> caps = backend_capabilities("landlock");
    if (!caps || !std::count(caps->begin(), caps->end(), "unix_socket_block"))
      GTEST_SKIP() << "the landlock backend does not offer unix_socket_block here (its probe "
                      "says why: sbx backends --probe)";
    if (!exists(kPython)) GTEST_SKIP() << kPython << " is not installed";
    for (const TempDir* dir : {&dir_, &ws_}) ::chmod(dir->path().c_str(), 0777);
    ::chmod(conf_.path().c_str(), 0755);
    if (unprivileged()) {
      if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to user 65534";
      if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
      ::chown(ws_.path().c_str(), 65534, 65534);
      ::chown(home_.path().c_str(), 65534, 65534);
    }
    write_file(conf_ / "policy.json",
               R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
               R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
               R"("protected_names":[]},"network":{"mode":"enabled"}})");
    ::chmod((conf_ / "policy.json").c_str(), 0644);
  }

  std::vector<std::string> as_user(std::vector<std::string> argv) const {
    if (!unprivileged()) return argv;
    argv.insert(argv.begin(),
                {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
    return argv;
  }

  std::vector<std::string> env() const {
    std::vector<std::string> e = base_env();
    e[1] = "HOME=" + home_.path();
    e.push_back("PWD=" + ws_.path());
    return e;
  }

  TempDir dir_{"/var/tmp"};  // the host socket's directory, outside every writable root
  TempDir conf_{"/var/tmp"};
  TempDir ws_{"/var/tmp"};
  TempDir home_{private_parent()};
};

TEST_P(LandlockUnixConnect, HostSocketsStayClosedOwnSocketsAndLoopbackTcpWork) {
  const std::string outside = dir_ / "host.sock";
  const std::string inside = ws_ / "host.sock";
  Listener host_outside(Listener::kUnix, outside);
  Listener host_inside(Listener::kUnix, inside);
  Listener tcp(Listener::kTcp4);
  ASSERT_TRUE(host_outside.ok() && host_inside.ok() && tcp.ok());
  for (const std::string& path : {outside, inside}) ::chmod(path.c_str(), 0777);
  const std::string abstract = "sbx-test-host-" + std::to_string(::getpid()) + "-" + GetParam();
  const int abstract_host = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un name{};
  name.sun_family = AF_UNIX;
  std::memcpy(name.sun_path + 1, abstract.data(), abstract.size());
  ASSERT_EQ(::bind(abstract_host, reinterpret_cast<sockaddr*>(&name),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract.size())),
            0);
  ASSERT_EQ(::listen(abstract_host, 4), 0);

  // Without the sandbox, as the same user: the host socket is reachable (its one hit).
  const RunResult bare = run(as_user({kPython, "-c", kOneAttempt, outside}), env());
  ASSERT_EQ(bare.out, "outside connected\n") << describe(bare);

  const RunResult r =
      run(as_user({sbx_path(), "--backends", "landlock", "exec", "--json", "--policy",
                   conf_ / "policy.json", "--cwd", ws_.path(), "--", kPython, "-c", kAttempts,
                   outside, inside, abstract, std::to_string(tcp.port())}),
          env());
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out,
            "outside EACCES\ninside EACCES\nabstract EACCES\nsymlink EACCES\nprocfd EACCES\n"
            "own connected\ntcp connected\n")
      << describe(r);
  EXPECT_EQ(host_outside.hits_before_now(), 1) << "only the bare attempt reached it";
  EXPECT_EQ(host_inside.hits_before_now(), 0);
  EXPECT_EQ(tcp.hits_before_now(), 1);
  EXPECT_LT(::accept4(abstract_host, nullptr, nullptr, SOCK_CLOEXEC), 0);  // nothing waiting
  ::close(abstract_host);
  const std::vector<std::string> named = refusals(r.err);
  for (const std::string& wanted : std::vector<std::string>{"unix " + outside, "unix " + inside,
                                                            "unix @" + abstract, "unix link.sock"})
    EXPECT_TRUE(contains(named, wanted)) << wanted << " not in " << r.err;
}

std::string user_name(const ::testing::TestParamInfo<std::string>& param) {
  return param.param == "root" ? std::string("root") : std::string("user65534");
}

INSTANTIATE_TEST_SUITE_P(Users, LandlockUnixConnect, ::testing::Values("root", "65534"), user_name);

}  // namespace
