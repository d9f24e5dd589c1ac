// The C API's sbx_exec in network mode proxy, through the installed libsbx (dlopen'ed from
// SBX_TEST_PREFIX, so its plugins and sbx-stage2 are the trusted installed ones) and the real
// bwrap and landlock backends:
//  - the allowed host:port answers through sbx's own proxy, started by the core for the run;
//  - a direct connection (curl --noproxy '*') to a loopback server fails and that server sees
//    nothing; an unlisted one is refused by the proxy and reported in "network_refusals";
//  - a policy that names proxy_ports itself never runs: its port never reaches a backend as if
//    it were sbx's proxy, so the loopback server on that port sees no connection;
//  - a warm handle (probe answers kept) runs again and again, and after sbx_manager_reprobe;
//  - under bwrap, a connect to a host unix socket is refused and named in "network_refusals"
//    ("kind":"unix" with its path) next to the proxy's own ("kind":"proxy").
// Only loopback is used: every server listens on 127.0.0.1, every URL names 127.0.0.1.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "../proxy/loopback.hpp"
#include "sbx/sbx.h"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using sbx::test::installed_libsbx;
namespace json = boost::json;
using sbx::proxy::testing::CountingServer;

// The C API of the installed libsbx, looked up by name.
struct Library {
  void* handle = nullptr;
  decltype(&sbx_manager_new) manager_new = nullptr;
  decltype(&sbx_manager_free) manager_free = nullptr;
  decltype(&sbx_manager_reprobe) manager_reprobe = nullptr;
  decltype(&sbx_exec) exec = nullptr;
  decltype(&sbx_explain) explain = nullptr;
  decltype(&sbx_string_free) string_free = nullptr;
  decltype(&sbx_error_message) error_message = nullptr;
  decltype(&sbx_error_free) error_free = nullptr;
};

template <typename F>
void bind(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
}

Library load_library(std::string& why) {
  Library lib;
  const std::string path = installed_libsbx();
  if (path.empty()) {
    why = "no libsbx.so* under " + std::string(SBX_TEST_PREFIX);
    return lib;
  }
  lib.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle == nullptr) {
    why = std::string("dlopen failed: ") + ::dlerror();
    return lib;
  }
  bind(lib.handle, "sbx_manager_new", lib.manager_new);
  bind(lib.handle, "sbx_manager_free", lib.manager_free);
  bind(lib.handle, "sbx_manager_reprobe", lib.manager_reprobe);
  bind(lib.handle, "sbx_exec", lib.exec);
  bind(lib.handle, "sbx_explain", lib.explain);
  bind(lib.handle, "sbx_string_free", lib.string_free);
  bind(lib.handle, "sbx_error_message", lib.error_message);
  bind(lib.handle, "sbx_error_free", lib.error_free);
  return lib;
}

// A loopback server whose thread blocks every signal. Why: the bwrap backend waits for its child's
// SIGCHLD through a signalfd in the calling thread; a thread of this process that leaves
// SIGCHLD unblocked would take that process-directed signal and discard it (a hang). sbx's own
// proxy thread blocks every signal for the same reason.
std::unique_ptr<CountingServer> quiet_server() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  auto server = std::make_unique<CountingServer>();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return server;
}

struct Call {
  bool ok = false;
  std::string text;
  std::string error;
};

class CApiProxy : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    lib_ = load_library(why);
    ASSERT_NE(lib_.handle, nullptr) << why;
    ASSERT_NE(lib_.exec, nullptr);
    allowed_ = quiet_server();
    unlisted_ = quiet_server();
    sbx_error* error = nullptr;
    manager_ = lib_.manager_new(GetParam().c_str(), &error);
    ASSERT_NE(manager_, nullptr) << lib_.error_message(error);
    const Call explain =
        take(lib_.explain(manager_, policy().c_str(), dir_.c_str(), nullptr, &(error = nullptr)),
             &error);
    ASSERT_TRUE(explain.ok) << explain.error;
    const json::value* available =
        json::parse(explain.text).as_object().if_contains("available_backend");
    if (available == nullptr || !available->is_string() || available->as_string() != GetParam())
      GTEST_SKIP() << GetParam() << " cannot run network mode proxy here: " << explain.text;
  }
  void TearDown() override {
    if (manager_ != nullptr) lib_.manager_free(manager_);
    // The library stays loaded: its proxy threads are joined, but unloading a C++ library with
    // static state mid-process gains nothing for a test.
  }

  Call take(char* result, sbx_error** error) const {
    Call call;
    call.ok = result != nullptr;
    if (result != nullptr) call.text = result;
    if (*error != nullptr) call.error = lib_.error_message(*error);
    lib_.string_free(result);
    lib_.error_free(*error);
    *error = nullptr;
    return call;
  }

  // network mode proxy allowing the `allowed_` server only; protected_names [] so that the
  // landlock backend can express the filesystem part. `extra` is spliced into "network".
  std::string policy(const std::string& extra = "") const {
    return R"({"version": 1,
      "filesystem": {"kind": "restricted", "protected_names": [],
        "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
      "network": {"mode": "proxy", )" +
           extra + R"("allowed_domains": ["127.0.0.1:)" + std::to_string(allowed_->port()) +
           R"("]}})";
  }

  // sbx_exec of `/bin/sh -c script` in dir_; the script writes what it saw to dir_/out.
  Call exec(const std::string& policy_json, const std::string& script) {
    const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
    sbx_error* error = nullptr;
    return take(lib_.exec(manager_, policy_json.c_str(), dir_.c_str(), argv, nullptr, 0, &error),
                &error);
  }

  std::string out() const {
    std::ifstream in(dir_ + "/out");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static std::string url(const CountingServer& server, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(server.port()) + path;
  }

  Library lib_;
  sbx_manager* manager_ = nullptr;
  sbx::test::TempDir work_;
  const std::string dir_ = work_.path();
  std::unique_ptr<CountingServer> allowed_;
  std::unique_ptr<CountingServer> unlisted_;
};

TEST_P(CApiProxy, AllowedHostAnswersThroughSbxProxyAndDirectConnectionsFail) {
  // 1: through the proxy (HTTP_PROXY set by sbx); 2: an unlisted server through the proxy
  // (403); 3 and 4: straight to each server, bypassing the proxy (curl exit 7 = no connection).
  const std::string script = "exec >out 2>&1; curl -sS -m 20 " + url(*allowed_, "/via-proxy") +
                             "; echo; curl -sS -m 20 -o /dev/null -w 'unlisted=%{http_code}\\n' " +
                             url(*unlisted_, "/u") + "; curl -sS -m 10 --noproxy '*' " +
                             url(*allowed_, "/direct") +
                             "; echo \"direct=$?\"; curl -sS -m 10 --noproxy '*' " +
                             url(*unlisted_, "/direct") + "; echo \"direct_unlisted=$?\"";
  const Call call = exec(policy(), script);
  ASSERT_TRUE(call.ok) << call.error;
  const json::object report = json::parse(call.text).as_object();
  ASSERT_TRUE(report.at("exit").is_object()) << call.text;
  EXPECT_EQ(report.at("final").as_string(), GetParam());
  EXPECT_NE(out().find("hello GET /via-proxy"), std::string::npos) << out();
  EXPECT_NE(out().find("unlisted=403"), std::string::npos) << out();
  EXPECT_NE(out().find("direct=7"), std::string::npos) << out();
  EXPECT_NE(out().find("direct_unlisted=7"), std::string::npos) << out();
  EXPECT_EQ(allowed_->accepts(), 1) << "only the proxied request may reach the allowed server";
  EXPECT_EQ(unlisted_->accepts(), 0) << "a connection reached the unlisted server";
  const json::array& refusals = report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), 1u) << call.text;
  EXPECT_EQ(refusals[0].at("port").to_number<int>(), unlisted_->port());
  EXPECT_EQ(refusals[0].at("rule").as_string(), "not in allowed_domains");
}

TEST_P(CApiProxy, PolicyProxyPortsNeverReachABackend) {
  // The policy names the port of a loopback server as its "proxy": sbx must not hand that port
  // to the backend as if it were its own proxy (under Landlock, a connect rule for it).
  const std::unique_ptr<CountingServer> server = quiet_server();
  CountingServer& service = *server;
  const std::string marker = dir_ + "/ran";
  const Call call =
      exec(policy(R"("proxy_ports": [)" + std::to_string(service.port()) + "], "),
           "touch " + marker + "; curl -sS -m 10 --noproxy '*' " + url(service, "/direct"));
  EXPECT_FALSE(call.ok) << "the run was not refused: " << call.text;
  EXPECT_NE(call.error.find("remove proxy_ports"), std::string::npos) << call.error;
  EXPECT_FALSE(fs::exists(marker)) << "the command ran";
  EXPECT_EQ(service.accepts(), 0) << "the command reached the policy's proxy_ports directly";
}

TEST_P(CApiProxy, WarmManagerRunsEachTimeAndAfterReprobe) {
  // SetUp's explain probed the backend and the handle kept the answer: these runs reuse it (a
  // fresh proxy per run all the same), then reprobe asks the backend again.
  ASSERT_NE(lib_.manager_reprobe, nullptr) << "libsbx exports no sbx_manager_reprobe";
  for (int run = 0; run < 3; ++run) {
    if (run == 2) {
      sbx_error* error = nullptr;
      ASSERT_EQ(lib_.manager_reprobe(manager_, &error), 0) << lib_.error_message(error);
    }
    const std::string path = "/warm-" + std::to_string(run);
    const Call call = exec(policy(), "exec >out 2>&1; curl -sS -m 20 " + url(*allowed_, path));
    ASSERT_TRUE(call.ok) << call.error;
    EXPECT_EQ(json::parse(call.text).at("final").as_string(), GetParam()) << call.text;
    EXPECT_NE(out().find("hello GET " + path), std::string::npos) << out();
  }
  EXPECT_EQ(allowed_->accepts(), 3);
}

// The C API's report names what the backend's sandbox refused, as `sbx exec --json` does: a
// connect to a host unix socket (kind "unix", its path) next to the proxy's refusal (kind
// "proxy"); the host socket's backlog stays empty.
TEST_P(CApiProxy, HostUnixSocketRefusalIsNamedInTheReport) {
  if (GetParam() != "bwrap")
    GTEST_SKIP() << GetParam()
                 << " refuses creating unix sockets in proxy mode (seccomp), so "
                    "no connect reaches a supervisor that could name the path";
  const std::string path = dir_ + "/host.sock";
  const int host = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(host, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size());
  ASSERT_EQ(::bind(host, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(host, 8), 0);
  const Call call = exec(policy(),
                         "exec >out 2>&1; /usr/bin/python3 -c \"import socket; "
                         "socket.socket(socket.AF_UNIX).connect('" +
                             path +
                             "')\"; "
                             "curl -sS -m 20 -o /dev/null " +
                             url(*unlisted_, "/u"));
  ASSERT_TRUE(call.ok) << call.error;
  EXPECT_NE(out().find("PermissionError"), std::string::npos) << out();
  const json::object report = json::parse(call.text).as_object();
  const json::array& refusals = report.at("network_refusals").as_array();
  ASSERT_EQ(refusals.size(), 2u) << call.text;
  EXPECT_EQ(refusals[0].at("kind").as_string(), "proxy");
  EXPECT_EQ(refusals[0].at("port").to_number<int>(), unlisted_->port());
  EXPECT_EQ(refusals[1].at("kind").as_string(), "unix");
  EXPECT_EQ(refusals[1].at("path").as_string(), path);
  EXPECT_EQ(report.at("network_refusals_total").to_number<int>(), 2);
  EXPECT_LT(::accept(host, nullptr, nullptr), 0) << "a connection reached the host's socket";
  EXPECT_EQ(errno, EAGAIN);
  ::close(host);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiProxy, ::testing::Values("bwrap", "landlock"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
