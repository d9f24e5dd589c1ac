// Question 2 and dispatch: Manager::available_backend over in-process fake backends registered
// with PluginRegistry::from_plugins, and the guarded transform/exec calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sbx/core/manager.hpp"

namespace sbx {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr CapabilitySet kEverything = {
    Capability::kWriteRestriction, Capability::kReadRestriction, Capability::kWriteCarveouts,
    Capability::kReadCarveouts,    Capability::kProtectedNames,  Capability::kDenyGlobs,
    Capability::kNetworkBlock,     Capability::kProxyNetwork,    Capability::kUnixSocketAllowlist,
    Capability::kSyscallFilter,    Capability::kLocalBinding,    Capability::kUnixSocketBlock};

// A scripted backend: what probe() reports, and whether probe/transform/exec throw.
struct FakeConfig {
  bool available = true;
  CapabilitySet capabilities = kEverything;
  std::string summary = "fake backend ready";
  bool probe_throws = false;
  bool probe_throws_non_std = false;
  bool transform_throws = false;
  bool transform_fails = false;
  bool transform_relative_argv = false;
  bool exec_throws = false;
};

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(FakeConfig config) : Backend(HostServices(nullptr)), config_(config) {}

  ProbeReport probe(const ProbeContext&) override {
    ++probe_calls;
    if (config_.probe_throws) throw std::runtime_error("probe exploded");
    if (config_.probe_throws_non_std) throw 42;
    ProbeReport report;
    report.available = config_.available;
    report.summary = config_.summary;
    report.capabilities = config_.capabilities;
    report.checks.push_back({"fake_check",
                             config_.available ? CheckStatus::kPass : CheckStatus::kFail,
                             "observed", config_.available ? "" : "install the fake"});
    return report;
  }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    ++transform_calls;
    last_request = request;
    if (config_.transform_throws) throw std::logic_error("transform exploded");
    if (config_.transform_fails) return Error{"cannot enforce deny glob '**/*.pem'"};
    ExecPlan plan;
    plan.argv = {"/usr/bin/fake-wrapper"};
    if (config_.transform_relative_argv) plan.argv = {"fake-wrapper"};
    plan.argv.insert(plan.argv.end(), request.argv.begin(), request.argv.end());
    plan.env = request.env;
    plan.cwd = request.cwd;
    return plan;
  }

  Result<ExitStatus> exec(const ExecPlan&, const RunContext&) override {
    if (config_.exec_throws) throw std::runtime_error("exec exploded");
    return ExitStatus{7, 0};
  }

  int probe_calls = 0;
  mutable int transform_calls = 0;
  mutable TransformRequest last_request;

 private:
  FakeConfig config_;
};

struct Fakes {
  PluginRegistry registry;
  std::vector<std::shared_ptr<FakeBackend>> backends;
};

Fakes make_registry(const std::vector<std::pair<std::string, FakeConfig>>& specs,
                    std::vector<RejectedPlugin> rejected = {}) {
  Fakes fakes;
  std::vector<LoadedPlugin> plugins;
  for (const auto& [name, config] : specs) {
    auto backend = std::make_shared<FakeBackend>(config);
    fakes.backends.push_back(backend);
    plugins.push_back({name, "1.0", "fake", "/fake/" + name + ".so", backend});
  }
  fakes.registry = PluginRegistry::from_plugins(std::move(plugins), std::move(rejected));
  return fakes;
}

ResolvedPolicy workspace_policy() {
  ResolvedPolicy policy;
  policy.rules = {{"/", Access::kRead}, {"/w", Access::kWrite}};
  policy.cwd = "/w";
  return policy;
}

TEST(SelectionTest, PicksFirstInGivenOrderAndStopsProbing) {
  Fakes fakes = make_registry({{"a", {}}, {"b", {}}});
  Manager manager(fakes.registry, {"b", "a"});
  BackendChoice choice = manager.available_backend(workspace_policy());
  ASSERT_TRUE(choice.backend.has_value()) << choice.reason;
  EXPECT_EQ(*choice.backend, "b");
  EXPECT_THAT(choice.reason, HasSubstr("'b'"));
  EXPECT_THAT(choice.passed_over, IsEmpty());
  ASSERT_EQ(choice.probes.size(), 1u);
  EXPECT_EQ(choice.probes[0].first, "b");
  EXPECT_EQ(fakes.backends[0]->probe_calls, 0);  // "a" was never needed
}

TEST(SelectionTest, DefaultOrderIsWellKnownThenByName) {
  Fakes fakes = make_registry(
      {{"zeta", {}}, {"windows", {}}, {"landlock", {}}, {"alpha", {}}, {"bwrap", {}}});
  Manager manager(fakes.registry, {});
  EXPECT_THAT(manager.order(), ElementsAre("bwrap", "landlock", "windows", "alpha", "zeta"));
}

TEST(SelectionTest, DuplicateNamesInPreferenceAreConsideredOnce) {
  Fakes fakes = make_registry({{"a", {}}});
  Manager manager(fakes.registry, {"a", "a"});
  EXPECT_THAT(manager.order(), ElementsAre("a"));
}

TEST(SelectionTest, UnavailableIsPassedOverWithItsSummary) {
  FakeConfig down;
  down.available = false;
  down.summary = "user namespaces are disabled";
  Fakes fakes = make_registry({{"a", down}, {"b", {}}});
  Manager manager(fakes.registry, {"a", "b"});
  BackendChoice choice = manager.available_backend(workspace_policy());
  ASSERT_TRUE(choice.backend.has_value()) << choice.reason;
  EXPECT_EQ(*choice.backend, "b");
  ASSERT_EQ(choice.passed_over.size(), 1u);
  EXPECT_EQ(choice.passed_over[0].backend, "a");
  EXPECT_THAT(choice.passed_over[0].reason, HasSubstr("unavailable: user namespaces are disabled"));
  ASSERT_EQ(choice.probes.size(), 2u);  // every probe report is kept
  EXPECT_FALSE(choice.probes[0].second.available);
  EXPECT_EQ(choice.probes[0].second.checks.size(), 1u);
}

TEST(SelectionTest, MissingCapabilityIsNamedWithTheRuleThatNeedsIt) {
  FakeConfig weak;
  weak.capabilities = kEverything;
  weak.capabilities.remove(Capability::kWriteCarveouts);
  weak.capabilities.remove(Capability::kDenyGlobs);
  Fakes fakes = make_registry({{"weak", weak}, {"strong", {}}});
  ResolvedPolicy policy = workspace_policy();
  policy.rules.push_back({"/w/vendor", Access::kRead});
  policy.deny_globs = {"/w/**/*.pem"};
  Manager manager(fakes.registry, {"weak", "strong"});
  BackendChoice choice = manager.available_backend(policy);
  ASSERT_TRUE(choice.backend.has_value()) << choice.reason;
  EXPECT_EQ(*choice.backend, "strong");
  ASSERT_EQ(choice.passed_over.size(), 1u);
  const std::string& reason = choice.passed_over[0].reason;
  EXPECT_THAT(reason,
              HasSubstr("write_carveouts (needed for '/w/vendor' (read) inside '/w' (write))"));
  EXPECT_THAT(reason, HasSubstr("deny_globs (needed for deny glob '/w/**/*.pem')"));
  EXPECT_THAT(reason, ::testing::Not(HasSubstr("network_block")));
}

// Local binding with a closed network is a capability of its own: a backend that cannot offer
// it (Landlock: no network namespace, bind and listen filtered) is passed over naming it, and
// automatic selection falls to one that can (bwrap: its namespace's own loopback).
TEST(SelectionTest, LocalBindingFallsToABackendThatOffersIt) {
  FakeConfig no_binding;  // what the landlock backend declares
  no_binding.capabilities = {Capability::kWriteRestriction, Capability::kReadRestriction,
                             Capability::kNetworkBlock, Capability::kProxyNetwork,
                             Capability::kSyscallFilter};
  Fakes fakes = make_registry({{"landlock", no_binding}, {"bwrap", {}}});
  ResolvedPolicy policy = workspace_policy();
  policy.network.allow_local_binding = true;
  Manager manager(fakes.registry, {"landlock", "bwrap"});
  for (NetworkMode mode : {NetworkMode::kRestricted, NetworkMode::kProxy}) {
    policy.network.mode = mode;
    BackendChoice choice = manager.available_backend(policy);
    ASSERT_TRUE(choice.backend.has_value()) << choice.reason;
    EXPECT_EQ(*choice.backend, "bwrap");
    ASSERT_EQ(choice.passed_over.size(), 1u);
    EXPECT_EQ(choice.passed_over[0].backend, "landlock");
    EXPECT_THAT(choice.passed_over[0].reason,
                HasSubstr("local_binding (needed for network.allow_local_binding"));
  }
  // With the network enabled local binding needs nothing more, but the host's unix sockets
  // must stay closed, which Landlock cannot do: bwrap again, and the reason names that.
  policy.network.mode = NetworkMode::kEnabled;
  BackendChoice enabled = manager.available_backend(policy);
  ASSERT_TRUE(enabled.backend.has_value()) << enabled.reason;
  EXPECT_EQ(*enabled.backend, "bwrap");
  ASSERT_EQ(enabled.passed_over.size(), 1u);
  EXPECT_THAT(enabled.passed_over[0].reason,
              HasSubstr("unix_socket_block (needed for network mode enabled"));
  EXPECT_THAT(enabled.passed_over[0].reason, ::testing::Not(HasSubstr("local_binding")));
}

// Enabled means the internet, not the host's local services: every policy with the network
// enabled needs unix_socket_block, and a listed socket needs unix_socket_allowlist in every
// mode (enabled included). A backend without them (Landlock) is passed over, or the run
// refused.
TEST(SelectionTest, NetworkEnabledNeedsUnixSocketBlockAndListedSocketsTheAllowlist) {
  FakeConfig landlock;  // what the landlock backend declares (ABI 6+)
  landlock.capabilities = {Capability::kWriteRestriction, Capability::kReadRestriction,
                           Capability::kNetworkBlock, Capability::kProxyNetwork,
                           Capability::kSyscallFilter};
  Fakes fakes = make_registry({{"landlock", landlock}});
  Manager only_landlock(fakes.registry, {"landlock"});
  ResolvedPolicy policy = workspace_policy();
  policy.network.mode = NetworkMode::kEnabled;
  EXPECT_TRUE(required_capabilities(policy).has(Capability::kUnixSocketBlock));
  EXPECT_FALSE(required_capabilities(policy).has(Capability::kUnixSocketAllowlist));
  BackendChoice refused = only_landlock.available_backend(policy);
  EXPECT_FALSE(refused.backend.has_value());
  EXPECT_THAT(refused.reason, HasSubstr("unix_socket_block (needed for network mode enabled: "
                                        "the host's unix sockets (pathname and abstract) stay "
                                        "closed unless network.unix_sockets lists them)"));
  policy.network.unix_sockets = {"/run/agent.sock"};
  EXPECT_TRUE(required_capabilities(policy).has(Capability::kUnixSocketAllowlist));
  EXPECT_THAT(only_landlock.available_backend(policy).reason,
              HasSubstr("unix_socket_allowlist (needed for unix socket '/run/agent.sock' "
                        "allowed)"));
  // Restricted: network_block closes them; no unix_socket_block needed.
  policy.network.mode = NetworkMode::kRestricted;
  policy.network.unix_sockets.clear();
  EXPECT_FALSE(required_capabilities(policy).has(Capability::kUnixSocketBlock));
  BackendChoice restricted = only_landlock.available_backend(policy);
  ASSERT_TRUE(restricted.backend.has_value()) << restricted.reason;
}

TEST(SelectionTest, LocalBindingWithNoBackendOfferingItIsRefused) {
  FakeConfig no_binding;
  no_binding.capabilities = kEverything;
  no_binding.capabilities.remove(Capability::kLocalBinding);
  Fakes fakes = make_registry({{"landlock", no_binding}});
  ResolvedPolicy policy = workspace_policy();
  policy.network.allow_local_binding = true;
  Manager manager(fakes.registry, {"landlock"});
  BackendChoice choice = manager.available_backend(policy);
  EXPECT_FALSE(choice.backend.has_value());
  EXPECT_THAT(choice.reason, HasSubstr("local_binding"));
}

TEST(SelectionTest, ThrowingProbeCountsAsUnavailable) {
  FakeConfig throws;
  throws.probe_throws = true;
  FakeConfig throws_int;
  throws_int.probe_throws_non_std = true;
  Fakes fakes = make_registry({{"t1", throws}, {"t2", throws_int}, {"ok", {}}});
  Manager manager(fakes.registry, {"t1", "t2", "ok"});
  BackendChoice choice = manager.available_backend(workspace_policy());
  ASSERT_TRUE(choice.backend.has_value()) << choice.reason;
  EXPECT_EQ(*choice.backend, "ok");
  ASSERT_EQ(choice.passed_over.size(), 2u);
  EXPECT_THAT(choice.passed_over[0].reason, HasSubstr("probe exploded"));
  EXPECT_THAT(choice.passed_over[1].reason, HasSubstr("unknown exception"));
  ASSERT_EQ(choice.probes.size(), 3u);
  EXPECT_FALSE(choice.probes[0].second.available);
}

TEST(SelectionTest, UnknownNameReportsTheRejectionOrWhatIsLoaded) {
  Fakes fakes = make_registry(
      {{"ok", {}}},
      {{"/lib/sbx/backends/libsbx_backend_landlock.so", LoadStage::kAbi,
        "/lib/sbx/backends/libsbx_backend_landlock.so: abi: expected major 1, found 2"}});
  Manager manager(fakes.registry, {"landlock", "nosuch", "ok"});
  BackendChoice choice = manager.available_backend(workspace_policy());
  ASSERT_TRUE(choice.backend.has_value()) << choice.reason;
  ASSERT_EQ(choice.passed_over.size(), 2u);
  EXPECT_THAT(choice.passed_over[0].reason, HasSubstr("not loaded: "));
  EXPECT_THAT(choice.passed_over[0].reason, HasSubstr("expected major 1, found 2"));
  EXPECT_THAT(choice.passed_over[1].reason, HasSubstr("no plugin named 'nosuch'"));
  EXPECT_THAT(choice.passed_over[1].reason, HasSubstr("loaded: ok"));
}

TEST(SelectionTest, WantedButNoneAvailableGivesNulloptWithReason) {
  FakeConfig down;
  down.available = false;
  down.summary = "bwrap not found";
  FakeConfig weak;
  weak.capabilities = {Capability::kSyscallFilter};
  Fakes fakes = make_registry({{"down", down}, {"weak", weak}});
  Manager manager(fakes.registry, {});
  BackendChoice choice = manager.available_backend(workspace_policy());
  EXPECT_FALSE(choice.backend.has_value());
  EXPECT_THAT(choice.reason, HasSubstr("no backend can enforce this policy here"));
  EXPECT_THAT(choice.reason, HasSubstr("down: unavailable: bwrap not found"));
  EXPECT_THAT(choice.reason, HasSubstr("weak: cannot enforce"));
  EXPECT_THAT(choice.reason, HasSubstr("write_restriction"));
  EXPECT_EQ(choice.passed_over.size(), 2u);
  EXPECT_EQ(choice.probes.size(), 2u);
}

TEST(SelectionTest, NoPluginsAtAll) {
  PluginRegistry empty = PluginRegistry::from_plugins({});
  Manager manager(empty, {});
  BackendChoice choice = manager.available_backend(workspace_policy());
  EXPECT_FALSE(choice.backend.has_value());
  EXPECT_THAT(choice.reason, HasSubstr("no sandbox backend is loaded"));
}

TEST(DispatchTest, TransformReturnsThePlan) {
  Fakes fakes = make_registry({{"a", {}}});
  Manager manager(fakes.registry, {});
  TransformRequest request{{"/bin/true"}, "/w", {"A=1"}, workspace_policy()};
  Result<ExecPlan> plan = manager.transform("a", request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_THAT(plan->argv, ElementsAre("/usr/bin/fake-wrapper", "/bin/true"));
}

TEST(DispatchTest, TransformFailuresBecomeErrors) {
  FakeConfig throws;
  throws.transform_throws = true;
  FakeConfig fails;
  fails.transform_fails = true;
  FakeConfig relative;
  relative.transform_relative_argv = true;
  Fakes fakes = make_registry({{"throws", throws}, {"fails", fails}, {"relative", relative}});
  Manager manager(fakes.registry, {});
  TransformRequest request{{"/bin/true"}, "/w", {}, workspace_policy()};

  Result<ExecPlan> thrown = manager.transform("throws", request);
  ASSERT_FALSE(thrown.ok());
  EXPECT_THAT(thrown.error(),
              HasSubstr("backend 'throws' failed in transform: transform exploded"));
  Result<ExecPlan> failed = manager.transform("fails", request);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.error(),
              HasSubstr("backend 'fails' cannot run this: cannot enforce deny glob"));
  Result<ExecPlan> bad_plan = manager.transform("relative", request);
  ASSERT_FALSE(bad_plan.ok());
  EXPECT_THAT(bad_plan.error(), HasSubstr("not an absolute path"));
  Result<ExecPlan> unknown = manager.transform("nosuch", request);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error(), HasSubstr("unknown backend 'nosuch'"));
}

ResolvedPolicy proxy_policy() {
  ResolvedPolicy policy = workspace_policy();
  policy.network.mode = NetworkMode::kProxy;
  policy.network.allowed_domains = {"example.com"};
  return policy;
}

// A proxy-mode request that did not come through plan_run carries no running proxy of sbx's:
// no backend may be asked to confine the command to the port it names.
TEST(DispatchTest, TransformRefusesProxyModeWithoutSbxOwnProxy) {
  Fakes fakes = make_registry({{"a", {}}});
  Manager manager(fakes.registry, {});
  ResolvedPolicy policy = proxy_policy();
  policy.network.proxy_ports = {18080};
  TransformRequest request{{"/bin/true"}, "/w", {}, policy};
  request.proxy_socket = "/tmp/somewhere/proxy.sock";
  Result<ExecPlan> plan = manager.transform("a", request);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error(), HasSubstr("only through sbx's own proxy"));
  EXPECT_EQ(fakes.backends[0]->transform_calls, 0);
}

TEST(DispatchTest, PlanRunStartsSbxProxyAndTheBackendSeesOnlyIt) {
  Fakes fakes = make_registry({{"a", {}}});
  Manager manager(fakes.registry, {});
  TransformRequest request{{"/bin/true"}, "/w", {"HTTP_PROXY=http://elsewhere:1"}, proxy_policy()};
  Result<SandboxedRun> run = manager.plan_run("a", request);
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_NE(run->proxy, nullptr);
  const TransformRequest& seen = fakes.backends[0]->last_request;
  EXPECT_TRUE(run->proxy->serves(seen));
  EXPECT_EQ(seen.policy.network.proxy_ports,
            std::vector<std::uint16_t>{run->proxy->proxy().port()});
  EXPECT_EQ(seen.proxy_socket, run->proxy->proxy().unix_socket_path());
  EXPECT_THAT(run->plan.env, ::testing::Not(::testing::Contains("HTTP_PROXY=http://elsewhere:1")));
  const ExecPlan shown = proxy::redact_plan(run->plan, run->proxy.get());
  for (const std::string& entry : shown.env)
    EXPECT_EQ(entry.find(run->proxy->proxy().token()), std::string::npos) << entry;
}

TEST(DispatchTest, PlanRunRefusesAPolicyThatNamesProxyPorts) {
  Fakes fakes = make_registry({{"a", {}}});
  Manager manager(fakes.registry, {});
  ResolvedPolicy policy = proxy_policy();
  policy.network.proxy_ports = {18080};
  Result<SandboxedRun> run = manager.plan_run("a", {{"/bin/true"}, "/w", {}, policy});
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(run.error(), HasSubstr("remove proxy_ports from the policy"));
  EXPECT_EQ(fakes.backends[0]->transform_calls, 0);
}

TEST(DispatchTest, PlanRunWithoutProxyModeStartsNoProxy) {
  Fakes fakes = make_registry({{"a", {}}});
  Manager manager(fakes.registry, {});
  Result<SandboxedRun> run = manager.plan_run("a", {{"/bin/true"}, "/w", {}, workspace_policy()});
  ASSERT_TRUE(run.ok()) << run.error();
  EXPECT_EQ(run->proxy, nullptr);
  EXPECT_TRUE(fakes.backends[0]->last_request.proxy_socket.empty());
}

TEST(DispatchTest, ExecIsGuarded) {
  FakeConfig throws;
  throws.exec_throws = true;
  Fakes fakes = make_registry({{"ok", {}}, {"throws", throws}});
  Manager manager(fakes.registry, {});
  ExecPlan plan{{"/bin/true"}, {}, "/", {}};
  const RunServices run(nullptr, {}, nullptr);
  Result<ExitStatus> ok = manager.exec("ok", plan, run);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->exit_code, 7);
  Result<ExitStatus> thrown = manager.exec("throws", plan, run);
  ASSERT_FALSE(thrown.ok());
  EXPECT_THAT(thrown.error(), HasSubstr("backend 'throws' failed in exec: exec exploded"));
  EXPECT_FALSE(manager.exec("nosuch", plan, run).ok());
}

TEST(RegistryTest, FromPluginsRejectsDuplicateEmptyAndNullBackends) {
  std::vector<LoadedPlugin> plugins;
  auto backend = std::make_shared<FakeBackend>(FakeConfig{});
  plugins.push_back({"a", "1", "", "/p/a1.so", backend});
  plugins.push_back({"a", "2", "", "/p/a2.so", backend});
  plugins.push_back({"", "1", "", "/p/empty.so", backend});
  plugins.push_back({"null", "1", "", "/p/null.so", nullptr});
  PluginRegistry registry = PluginRegistry::from_plugins(std::move(plugins));
  ASSERT_EQ(registry.plugins().size(), 1u);
  ASSERT_NE(registry.find("a"), nullptr);
  EXPECT_EQ(registry.find("a")->version, "1");  // the first one is kept
  EXPECT_EQ(registry.find("null"), nullptr);
  EXPECT_EQ(registry.find(""), nullptr);
  ASSERT_EQ(registry.rejected().size(), 3u);
  EXPECT_EQ(registry.rejected()[0].stage, LoadStage::kName);
  EXPECT_THAT(registry.rejected()[0].message, HasSubstr("duplicate plugin name 'a'"));
  EXPECT_EQ(registry.rejected()[1].stage, LoadStage::kName);
  EXPECT_EQ(registry.rejected()[2].stage, LoadStage::kCreate);
}

}  // namespace
}  // namespace sbx
