// The real plugin file from the build tree: its descriptor, its probe on this host, and that
// its transform is the library's plan. Plus the pure probe decision and proxy parsing.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sbx/sdk/backend.hpp"
#include "sbx/seatbelt/probe.hpp"
#include "sbx/seatbelt/profile.hpp"
#include "sbx/seatbelt/proxy_env.hpp"

namespace {

using namespace sbx;

struct LoadedPlugin {
  void* handle = nullptr;
  const sbx_plugin_v2* descriptor = nullptr;
  Backend* backend = nullptr;
  ~LoadedPlugin() {
    if (backend != nullptr) descriptor->destroy(backend);
    // Never dlclose: the host never unloads a plugin (RTLD_NODELETE), so neither does this test.
  }
};

void load(LoadedPlugin& p) {
  const std::string path = std::string(SBX_PLUGIN_BUILD_DIR) + "/sbx-backend-seatbelt.so";
  p.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(p.handle, nullptr) << dlerror();
  auto entry = reinterpret_cast<sbx_plugin_entry_fn>(dlsym(p.handle, SBX_PLUGIN_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  p.descriptor = entry();
  ASSERT_EQ(std::string(p.descriptor->name), "seatbelt");
  ASSERT_EQ(std::string(p.descriptor->fingerprint), SBX_TOOLCHAIN_FINGERPRINT);
  p.backend = static_cast<Backend*>(p.descriptor->create(nullptr));
  ASSERT_NE(p.backend, nullptr);
}

TEST(SeatbeltModule, ProbeIsHonestOnThisHost) {
  LoadedPlugin plugin;
  ASSERT_NO_FATAL_FAILURE(load(plugin));
  const ProbeReport report = plugin.backend->probe(ProbeContext{});
#if defined(__APPLE__)
  GTEST_SKIP() << "on macOS the probe result depends on the host (nesting); covered by "
                  "EvaluateProbe tests";
#else
  EXPECT_FALSE(report.available);
  EXPECT_EQ(report.summary, "Seatbelt exists only on macOS; /usr/bin/sandbox-exec not found");
  ASSERT_FALSE(report.checks.empty());
  EXPECT_EQ(report.checks[0].status, CheckStatus::kFail);
  EXPECT_FALSE(report.checks[0].remedy.empty());
#endif
}

TEST(SeatbeltModule, TransformWorksOnAnyHostAndEqualsTheLibraryPlan) {
  LoadedPlugin plugin;
  ASSERT_NO_FATAL_FAILURE(load(plugin));
  TransformRequest req;
  req.argv = {"/bin/echo", "hi"};
  req.cwd = "/Users/me/proj";
  req.env = {"PATH=/usr/bin:/bin"};
  req.policy.rules = {{"/", Access::kRead}, {"/Users/me/proj", Access::kWrite}};
  auto plan = plugin.backend->transform(req);
  ASSERT_TRUE(plan.ok()) << plan.error();
  auto expected = seatbelt::build_exec_plan(req);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(plan->argv, expected->argv);
  EXPECT_EQ(plan->env, req.env);
  EXPECT_EQ(plan->cwd, req.cwd);
  EXPECT_EQ(plan->argv.front(), "/usr/bin/sandbox-exec");
}

TEST(SeatbeltModule, TransformErrorsInsteadOfDroppingARule) {
  LoadedPlugin plugin;
  ASSERT_NO_FATAL_FAILURE(load(plugin));
  TransformRequest req;
  req.argv = {"/bin/true"};
  req.cwd = "/w";
  req.policy.rules = {{"/", Access::kRead}};
  req.policy.network.mode = NetworkMode::kProxy;
  auto plan = plugin.backend->transform(req);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().find("no loopback proxy port"), std::string::npos) << plan.error();
}

// --- the probe decision ----------------------------------------------------------------------

TEST(EvaluateProbe, NotMacos) {
  const auto r = seatbelt::evaluate_probe({});
  EXPECT_FALSE(r.available);
  EXPECT_EQ(r.summary, "Seatbelt exists only on macOS; /usr/bin/sandbox-exec not found");
}

TEST(EvaluateProbe, LauncherMissing) {
  seatbelt::ProbeFacts f;
  f.is_macos = true;
  f.launcher_observed = "/usr/bin/sandbox-exec: No such file or directory";
  const auto r = seatbelt::evaluate_probe(f);
  EXPECT_FALSE(r.available);
  ASSERT_EQ(r.checks.size(), 2u);
  EXPECT_EQ(r.checks[1].name, "sandbox_exec");
  EXPECT_EQ(r.checks[1].status, CheckStatus::kFail);
}

TEST(EvaluateProbe, NestedSandboxIsDetected) {
  seatbelt::ProbeFacts f{true, true, "/usr/bin/sandbox-exec", false, "trivial profile: exit 71"};
  const auto r = seatbelt::evaluate_probe(f);
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.summary.find("already inside a sandbox"), std::string::npos);
  EXPECT_NE(r.checks.back().remedy.find("cannot nest"), std::string::npos);
  EXPECT_TRUE(r.capabilities.empty());
}

TEST(EvaluateProbe, AvailableWithEverythingButASyscallFilter) {
  seatbelt::ProbeFacts f{true, true, "/usr/bin/sandbox-exec", true, "trivial profile: exit 0"};
  const auto r = seatbelt::evaluate_probe(f);
  EXPECT_TRUE(r.available);
  EXPECT_TRUE(r.capabilities.has(Capability::kDenyGlobs));
  EXPECT_TRUE(r.capabilities.has(Capability::kProxyNetwork));
  EXPECT_TRUE(r.capabilities.has(Capability::kProtectedNames));
  EXPECT_FALSE(r.capabilities.has(Capability::kSyscallFilter));
  // The profile keeps host unix sockets closed with the network enabled (pinned by
  // SeatbeltParity.EnabledNetworkRefusesHostUnixSocketsUnlessListed), so the manager may pick
  // Seatbelt for such a policy.
  EXPECT_TRUE(r.capabilities.has(Capability::kUnixSocketBlock));
  EXPECT_TRUE(r.capabilities.has(Capability::kUnixSocketAllowlist));
}

// run_quietly is what the macOS probe uses for the nesting check; it is plain POSIX.
TEST(RunQuietly, ReportsExitCodesAndSpawnFailures) {
  EXPECT_EQ(seatbelt::run_quietly({"/bin/true"}).value(), 0);
  EXPECT_EQ(seatbelt::run_quietly({"/bin/sh", "-c", "exit 71"}).value(), 71);
  EXPECT_EQ(seatbelt::run_quietly({"/bin/sh", "-c", "kill -TERM $$"}).value(), 128 + 15);
  EXPECT_FALSE(seatbelt::run_quietly({"/nonexistent/sandbox-exec"}).ok());
  EXPECT_FALSE(seatbelt::run_quietly({"relative"}).ok());
}

// --- proxy variables ---------------------------------------------------------------------------

TEST(ProxyEnv, LoopbackHostsAndDefaultPorts) {
  using seatbelt::loopback_proxy_port;
  EXPECT_EQ(loopback_proxy_port("http://127.0.0.1:8080"), 8080);
  EXPECT_EQ(loopback_proxy_port("127.0.0.1:9000"), 9000);
  EXPECT_EQ(loopback_proxy_port("http://localhost"), 80);
  EXPECT_EQ(loopback_proxy_port("https://LOCALHOST/"), 443);
  EXPECT_EQ(loopback_proxy_port("socks5h://[::1]"), 1080);
  EXPECT_EQ(loopback_proxy_port("http://u:p@127.0.0.2:3128/path"), 3128);
  EXPECT_FALSE(loopback_proxy_port("http://proxy.example:3128"));
  EXPECT_FALSE(loopback_proxy_port("http://127.0.0.1.evil.example:80"));
  EXPECT_FALSE(loopback_proxy_port("http://127.1:80"));
  EXPECT_FALSE(loopback_proxy_port("http://localhost:0"));
  EXPECT_FALSE(loopback_proxy_port("http://localhost:70000"));
  EXPECT_FALSE(loopback_proxy_port("http://localhost:80x"));
  EXPECT_FALSE(loopback_proxy_port("http://[::1"));
  EXPECT_FALSE(loopback_proxy_port(""));
}

TEST(ProxyEnv, ReadsBothCasesOnlyKnownVariables) {
  const auto env = seatbelt::parse_proxy_env(
      {"HTTP_PROXY=http://127.0.0.1:1", "https_proxy=http://localhost:2",
       "ALL_PROXY=", "Http_Proxy=http://127.0.0.1:3", "FTP_PROXY=http://127.0.0.1:4",
       "all_proxy=http://far.example:5", "NOEQUALS"});
  EXPECT_TRUE(env.configured);
  EXPECT_EQ(env.ports, (std::vector<std::uint16_t>{1, 2}));
  ASSERT_EQ(env.ignored.size(), 1u);
  EXPECT_NE(env.ignored[0].find("far.example"), std::string::npos);
  EXPECT_FALSE(seatbelt::parse_proxy_env({"PATH=/bin"}).configured);
}

}  // namespace
