// One run end to end (sbx/core/run.hpp) over in-process fake backends:
//  - a policy with a deny entry or network mode proxy never runs unsandboxed, even when the
//    caller allows it; another policy does, and the caller hears of it before it runs;
//  - `sbx debug` (plan_for_backend) and `sbx exec --dry-run` (plan_command) make the same plan
//    through Manager::plan_run, also in network mode proxy (sbx's own proxy, credential "***");
//    only a plan that is shown may start a path that is not absolute here;
//  - the default order's preferred backend alone decides when it can run the policy (the
//    start-up fast path), and every backend is asked otherwise;
//  - the report of a run is one JSON document with the keys each front end promises.
#include "sbx/core/run.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sbx/core/exit_codes.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/runtime.hpp"

namespace sbx {
namespace {

using ::testing::HasSubstr;

CapabilitySet every_capability() {
  CapabilitySet all;
  for (Capability capability : kAllCapabilities) all.add(capability);
  return all;
}

// Wraps the command in "/usr/bin/fake-wrapper" (or a relative "fake-wrapper", as a plan for
// another OS would start); never runs anything.
class RunFakeBackend final : public Backend {
 public:
  RunFakeBackend(bool available, bool relative_argv)
      : Backend(HostServices(nullptr)), available_(available), relative_argv_(relative_argv) {}

  ProbeReport probe(const ProbeContext&) override {
    ProbeReport report;
    report.available = available_;
    report.summary = available_ ? "fake ready" : "fake is switched off";
    report.capabilities = every_capability();
    return report;
  }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    ExecPlan plan;
    plan.argv = {relative_argv_ ? "fake-wrapper" : "/usr/bin/fake-wrapper"};
    plan.argv.insert(plan.argv.end(), request.argv.begin(), request.argv.end());
    plan.env = request.env;
    plan.cwd = request.cwd;
    plan.notes = {"proxy_ports: " + std::to_string(request.policy.network.proxy_ports.size())};
    return plan;
  }

  Result<ExitStatus> exec(const ExecPlan&, const RunContext&) override { return ExitStatus{7, 0}; }

 private:
  bool available_;
  bool relative_argv_;
};

PluginRegistry registry_of(const std::vector<std::pair<std::string, bool>>& backends,
                           bool relative_argv = false) {
  std::vector<LoadedPlugin> plugins;
  for (const auto& [name, available] : backends) {
    plugins.push_back({name, "1.0", "fake", "/fake/" + name + ".so",
                       std::make_shared<RunFakeBackend>(available, relative_argv)});
  }
  return PluginRegistry::from_plugins(std::move(plugins), {});
}

// The run's backends: every call counted, so a test sees which ones the run asked for.
class CountingBackends final : public RunBackends {
 public:
  CountingBackends(const Manager& all, const Manager* only) : all_(all), only_(only) {}
  Result<const Manager*> all() override {
    ++all_calls;
    return &all_;
  }
  const Manager* only(const std::string& backend) override {
    only_asked.push_back(backend);
    return only_;
  }
  int all_calls = 0;
  std::vector<std::string> only_asked;

 private:
  const Manager& all_;
  const Manager* only_;
};

constexpr const char* kWorkspace =
    R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]}})";
constexpr const char* kDenySsh =
    R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},
        {"path": "~/.ssh", "access": "deny"}]}})";
constexpr const char* kProxy =
    R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [
        {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
        "network": {"mode": "proxy", "allowed_domains": ["example.com"]}})";

RunRequest request_for(const char* policy_json, std::vector<std::string> command) {
  Result<Policy> policy = parse_policy(policy_json);
  EXPECT_TRUE(policy.ok()) << policy.error();
  RunRequest request;
  request.policy = *policy;
  request.resolved.rules = {{"/", Access::kRead}, {"/tmp", Access::kWrite}};
  request.resolved.network = policy->network;
  request.resolved.cwd = "/tmp";
  request.cwd = "/tmp";
  request.command = std::move(command);
  request.environment = {"PATH=/usr/bin:/bin", "HOME=/root"};
  request.limit_signals = LimitedRun::Signals::kRunOnly;
  return request;
}

bool has_entry_with(const std::vector<std::string>& env, const std::string& prefix,
                    const std::string& part) {
  for (const std::string& entry : env) {
    if (entry.rfind(prefix, 0) == 0 && entry.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(RunTest, DenyPolicyNeverRunsUnsandboxedEvenWhenAllowed) {
  const PluginRegistry registry = registry_of({{"off", false}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  RunRequest request = request_for(kDenySsh, {"/bin/true"});
  request.allow_unsandboxed = true;
  int warned = 0;
  request.on_unsandboxed_override = [&](const std::string&, const BackendChoice&) { ++warned; };
  const RunOutcome run = run_command(std::move(request), backends);
  EXPECT_EQ(run.stop, RunStop::kNoBackend) << run.error;
  ASSERT_TRUE(run.never_unsandboxed.has_value());
  EXPECT_THAT(*run.never_unsandboxed, HasSubstr("path '~/.ssh'"));
  EXPECT_FALSE(run.report.exit.has_value()) << "the command ran";
  EXPECT_FALSE(run.report.allow_unsandboxed_used);
  EXPECT_EQ(run.exit_code(), kExitSbxFailure);
  EXPECT_EQ(warned, 0);
  // The override was given and the policy's rule refused it.
  EXPECT_EQ(run.kind, ErrorKind::refused) << run.error;
}

TEST(RunTest, ProxyPolicyNeverRunsUnsandboxedEvenWhenAllowed) {
  const PluginRegistry registry = registry_of({{"off", false}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  RunRequest request = request_for(kProxy, {"/bin/true"});
  request.allow_unsandboxed = true;
  const RunOutcome run = run_command(std::move(request), backends);
  EXPECT_EQ(run.stop, RunStop::kNoBackend) << run.error;
  ASSERT_TRUE(run.never_unsandboxed.has_value());
  EXPECT_THAT(*run.never_unsandboxed, HasSubstr("network mode proxy never runs unsandboxed"));
  EXPECT_FALSE(run.report.exit.has_value()) << "the command ran";
}

TEST(RunTest, OtherPolicyRunsUnsandboxedOnlyWhenAllowedAndSaysSoFirst) {
  const PluginRegistry registry = registry_of({{"off", false}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  const RunOutcome refused =
      run_command(request_for(kWorkspace, {"/bin/sh", "-c", "exit 3"}), backends);
  EXPECT_EQ(refused.stop, RunStop::kNoBackend);
  EXPECT_EQ(refused.kind, ErrorKind::unavailable) << refused.error;
  EXPECT_FALSE(refused.never_unsandboxed.has_value());
  EXPECT_FALSE(refused.report.exit.has_value());

  RunRequest request = request_for(kWorkspace, {"/bin/sh", "-c", "exit 3"});
  request.allow_unsandboxed = true;
  std::string wanted;
  request.on_unsandboxed_override = [&](const std::string& why, const BackendChoice& choice) {
    wanted = why;
    EXPECT_FALSE(choice.backend.has_value());
  };
  const RunOutcome run = run_command(std::move(request), backends);
  EXPECT_EQ(run.stop, RunStop::kNone) << run.error;
  EXPECT_THAT(wanted, HasSubstr("sandboxed"));
  EXPECT_TRUE(run.report.allow_unsandboxed_used);
  EXPECT_EQ(run.report.final, std::nullopt);
  ASSERT_TRUE(run.report.exit.has_value());
  EXPECT_EQ(run.report.exit->exit_code, 3);
  EXPECT_EQ(run.exit_code(), 3);
}

TEST(RunTest, CommandNotFoundExits127AndRunsNothing) {
  const PluginRegistry registry = registry_of({{"fake", true}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  const RunOutcome run =
      run_command(request_for(kWorkspace, {"sbx-no-such-command-anywhere"}), backends);
  EXPECT_EQ(run.stop, RunStop::kCommandNotFound);
  EXPECT_EQ(run.kind, ErrorKind::invalid_input) << run.error;
  EXPECT_EQ(run.exit_code(), kExitNotFound);
  EXPECT_EQ(backends.all_calls, 0) << "no backend is needed for a command that does not exist";
}

// A plugin whose transform or exec fails, with a kind of its own choosing.
class FailingBackend final : public Backend {
 public:
  explicit FailingBackend(bool transform_fails)
      : Backend(HostServices(nullptr)), transform_fails_(transform_fails) {}
  ProbeReport probe(const ProbeContext&) override {
    ProbeReport report;
    report.available = true;
    report.summary = "failing fake";
    report.capabilities = every_capability();
    return report;
  }
  Result<ExecPlan> transform(const TransformRequest& request) const override {
    if (transform_fails_) return Error{"cannot plan this", ErrorKind::invalid_input};
    return ExecPlan{{"/usr/bin/fake-wrapper"}, request.env, request.cwd, {}};
  }
  Result<ExitStatus> exec(const ExecPlan&, const RunContext&) override {
    return Error{"cannot run this", ErrorKind::refused};
  }

 private:
  bool transform_fails_;
};

// What a plugin returns is the backend's failure, whatever kind it said (an older plugin says
// none): core labels it where it receives it. The other stops carry their own kinds.
TEST(RunTest, StopsCarryTheirErrorKinds) {
  for (const bool transform_fails : {true, false}) {
    std::vector<LoadedPlugin> plugins;
    plugins.push_back({"failing", "1.0", "fake", "/fake/failing.so",
                       std::make_shared<FailingBackend>(transform_fails)});
    const PluginRegistry registry = PluginRegistry::from_plugins(std::move(plugins), {});
    const Manager manager(registry, {});
    CountingBackends backends(manager, nullptr);
    const RunOutcome run = run_command(request_for(kWorkspace, {"/bin/true"}), backends);
    EXPECT_EQ(run.stop, transform_fails ? RunStop::kPlanRefused : RunStop::kRunFailed);
    EXPECT_EQ(run.kind, ErrorKind::backend_failure) << run.error;
    EXPECT_THAT(run.error, HasSubstr(transform_fails ? "cannot plan this" : "cannot run this"));
  }
  const PluginRegistry registry = registry_of({{"fake", true}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  RunRequest forbid = request_for(kDenySsh, {"/bin/true"});
  forbid.preference = SandboxPreference::kForbid;
  const RunOutcome refused = run_command(std::move(forbid), backends);
  EXPECT_EQ(refused.stop, RunStop::kInvalidRequest);
  EXPECT_EQ(refused.kind, ErrorKind::refused) << refused.error;
  const RunOutcome empty = run_command(request_for(kWorkspace, {}), backends);
  EXPECT_EQ(empty.kind, ErrorKind::invalid_input) << empty.error;
}

TEST(RunTest, DebugAndDryRunMakeTheSamePlan) {
  const PluginRegistry registry = registry_of({{"fake", true}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  const RunOutcome dry = plan_command(request_for(kWorkspace, {"ls", "-l"}), backends);
  ASSERT_TRUE(dry.plan.has_value()) << dry.error;
  EXPECT_EQ(dry.report.final, "fake");
  EXPECT_TRUE(dry.report.dry_run);
  const RunOutcome debug = plan_for_backend(manager, "fake", request_for(kWorkspace, {"ls", "-l"}));
  ASSERT_TRUE(debug.plan.has_value()) << debug.error;
  EXPECT_EQ(plan_to_json("fake", *debug.plan, JsonStyle::kPretty),
            plan_to_json("fake", *dry.plan, JsonStyle::kPretty));
  EXPECT_EQ(debug.plan->argv[1].front(), '/') << "argv[0] of the command is resolved";
}

TEST(RunTest, ProxyModeIsPlannedForSbxOwnProxyInDebugAndDryRun) {
  const PluginRegistry registry = registry_of({{"fake", true}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  for (const bool debug : {false, true}) {
    SCOPED_TRACE(debug ? "plan_for_backend" : "plan_command");
    RunOutcome planned = debug
                             ? plan_for_backend(manager, "fake", request_for(kProxy, {"/bin/true"}))
                             : plan_command(request_for(kProxy, {"/bin/true"}), backends);
    ASSERT_TRUE(planned.plan.has_value()) << planned.error;
    EXPECT_TRUE(has_entry_with(planned.plan->env, "HTTP_PROXY=", "***"))
        << "the plan does not point at sbx's proxy with the credential hidden";
    EXPECT_EQ(planned.plan->notes.back(), "proxy_ports: 1") << "the backend saw no proxy port";
  }
}

TEST(RunTest, OnlyAShownPlanMayStartARelativePath) {
  const PluginRegistry registry = registry_of({{"fake", true}}, /*relative_argv=*/true);
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  const RunOutcome shown =
      plan_for_backend(manager, "fake", request_for(kWorkspace, {"/bin/true"}));
  ASSERT_TRUE(shown.plan.has_value()) << shown.error;
  EXPECT_EQ(shown.plan->argv[0], "fake-wrapper");
  const RunOutcome dry = plan_command(request_for(kWorkspace, {"/bin/true"}), backends);
  EXPECT_EQ(dry.stop, RunStop::kPlanRefused);
  EXPECT_THAT(dry.error, HasSubstr("not an absolute path"));
  const RunOutcome run = run_command(request_for(kWorkspace, {"/bin/true"}), backends);
  EXPECT_EQ(run.stop, RunStop::kPlanRefused);
  EXPECT_FALSE(run.report.exit.has_value());
}

TEST(RunTest, PreferredBackendAloneDecidesWhenItCanRunThePolicy) {
#ifndef __linux__
  GTEST_SKIP() << "the start-up fast path of the default order is Linux only";
#else
  const std::string preferred(kDefaultBackendOrder[0]);
  const PluginRegistry all_registry = registry_of({{preferred, true}, {"other", true}});
  const Manager all(all_registry, {"other", preferred});
  const PluginRegistry only_registry = registry_of({{preferred, true}});
  const Manager only(only_registry, {});
  CountingBackends fast(all, &only);
  const RunOutcome run = run_command(request_for(kWorkspace, {"/bin/true"}), fast);
  EXPECT_EQ(run.report.final, preferred) << run.error;
  EXPECT_EQ(run.report.exit->exit_code, 7) << "the fake backend's exec did not run it";
  EXPECT_EQ(fast.only_asked, std::vector<std::string>{preferred});
  EXPECT_EQ(fast.all_calls, 0);

  // Unavailable alone: every backend is asked, in the caller's order.
  const PluginRegistry off_registry = registry_of({{preferred, false}});
  const Manager off(off_registry, {});
  CountingBackends slow(all, &off);
  const RunOutcome fallback = run_command(request_for(kWorkspace, {"/bin/true"}), slow);
  EXPECT_EQ(slow.all_calls, 1);
  EXPECT_EQ(fallback.report.final, "other") << fallback.error;
#endif
}

TEST(RunTest, OneReportWriterForBothFrontEnds) {
  const PluginRegistry registry = registry_of({{"fake", true}});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  RunOutcome run = run_command(request_for(kWorkspace, {"/bin/true"}), backends);
  ASSERT_EQ(run.stop, RunStop::kNone) << run.error;
  run.report.stderr_tail = "cat: /etc/shadow: Permission denied\n";
  run.report.network_refusals.proxy.entries = {
      {"evil.example", 443, "http-connect", "not in allowed_domains"}};
  run.report.network_refusals.proxy.total = 3;
  run.report.network_refusals.backend.entries = {{"unix", "/run/docker.sock"},
                                                 {"ip", "10.1.2.3:443"}};
  run.report.network_refusals.backend.total = 4;
  const boost::json::object cli =
      boost::json::parse(exec_report_to_json(run.report, ExecReportKeys::kCli)).as_object();
  const boost::json::object capi =
      boost::json::parse(exec_report_to_json(run.report, ExecReportKeys::kWithStderrTail))
          .as_object();
  EXPECT_FALSE(cli.contains("stderr_tail"));
  EXPECT_EQ(capi.at("stderr_tail").as_string(), "cat: /etc/shadow: Permission denied\n");
  for (const boost::json::object* report : {&cli, &capi}) {
    EXPECT_EQ(report->at("final").as_string(), "fake");
    EXPECT_EQ(report->at("exit").at("code").to_number<int>(), 7);
    EXPECT_TRUE(report->at("denial").is_object());
    const boost::json::array& refusals = report->at("network_refusals").as_array();
    ASSERT_EQ(refusals.size(), 3u);
    EXPECT_EQ(refusals.at(0).at("kind").as_string(), "proxy");
    EXPECT_EQ(refusals.at(0).at("host").as_string(), "evil.example");
    EXPECT_EQ(refusals.at(1).at("kind").as_string(), "unix");
    EXPECT_EQ(refusals.at(1).at("path").as_string(), "/run/docker.sock");
    EXPECT_EQ(refusals.at(2).at("kind").as_string(), "ip");
    EXPECT_EQ(refusals.at(2).at("address").as_string(), "10.1.2.3:443");
    EXPECT_EQ(report->at("network_refusals_total").to_number<int>(), 3 + 4);
  }
}

// A backend that reports, through the real host table, the connections its sandbox refused.
class RunRefusingBackend final : public Backend {
 public:
  explicit RunRefusingBackend(const sbx_host_v2* host) : Backend(HostServices(host)) {}
  ProbeReport probe(const ProbeContext&) override {
    ProbeReport report;
    report.available = true;
    report.summary = "refusing fake";
    report.capabilities = every_capability();
    return report;
  }
  Result<ExecPlan> transform(const TransformRequest& request) const override {
    ExecPlan plan;
    plan.argv = {"/usr/bin/fake-wrapper"};
    plan.env = request.env;
    plan.cwd = request.cwd;
    return plan;
  }
  Result<ExitStatus> exec(const ExecPlan&, const RunContext& run) override {
    run.report_network_refusal("unix", "/tmp/host.sock");
    // From a thread of the backend's own (a supervisor): the context is explicit, not the
    // calling thread's.
    std::thread([&run] { run.report_network_refusal("ip", "[2001:db8::1]:80"); }).join();
    run.report_network_refusal("bogus", "never reported");
    for (std::size_t i = 0; i < BackendRefusalLog::kMaxEntries; ++i)
      run.report_network_refusal("unix", "@flood");
    return ExitStatus{0, 0};
  }
};

// The run table's report_network_refusal files what the backend's exec() reports under that
// run, from whichever thread: bounded entries, every one counted, unknown kinds dropped; a run
// without a log keeps nothing.
TEST(RunTest, BackendRefusalsReachTheRunReportBounded) {
  Result<InstallLayout> layout = install_layout();
  ASSERT_TRUE(layout.ok()) << layout.error();
  const sbx_host_v2* table = host_services(*layout);
  std::vector<LoadedPlugin> plugins;
  plugins.push_back({"refusing", "1.0", "fake", "/fake/refusing.so",
                     std::make_shared<RunRefusingBackend>(table)});
  const PluginRegistry registry = PluginRegistry::from_plugins(std::move(plugins), {});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  const RunOutcome run = run_command(request_for(kWorkspace, {"/bin/true"}), backends);
  ASSERT_EQ(run.stop, RunStop::kNone) << run.error;
  const BackendRefusalLog& log = run.report.network_refusals.backend;
  EXPECT_EQ(log.total, 2u + BackendRefusalLog::kMaxEntries);
  ASSERT_EQ(log.entries.size(), BackendRefusalLog::kMaxEntries);
  EXPECT_EQ(log.entries.at(0), (BackendRefusal{"unix", "/tmp/host.sock"}));
  EXPECT_EQ(log.entries.at(1), (BackendRefusal{"ip", "[2001:db8::1]:80"}));
  EXPECT_EQ(log.entries.back(), (BackendRefusal{"unix", "@flood"}));

  // A run without a log: reported, but filed nowhere (and nothing crashes); each run files
  // under its own log only.
  RunServices unlogged(nullptr, {}, nullptr);
  RunContext(unlogged.table()).report_network_refusal("unix", "/tmp/elsewhere.sock");
  BackendRefusalLog outside;
  RunServices logged(&outside, {}, nullptr);
  RunContext(logged.table()).report_network_refusal("unix", "/tmp/inside.sock");
  ASSERT_EQ(outside.entries.size(), 1u);
  EXPECT_EQ(outside.entries.front().address, "/tmp/inside.sock");
}

// A backend's own plan detail (ABI 2.0): what its transform() made reaches its exec() as the
// same object, untouched by core, and its report_json() members join the plan's JSON.
class DetailPart final : public PlanDetail {
 public:
  explicit DetailPart(std::string value) : token(std::move(value)) {}
  std::string report_json() const override {
    return R"({"detail_token":")" + token + R"(","argv":["never"]})";
  }
  std::string token;
};

class DetailBackend final : public Backend {
 public:
  DetailBackend() : Backend(HostServices(nullptr)) {}
  ProbeReport probe(const ProbeContext&) override {
    ProbeReport report;
    report.available = true;
    report.capabilities = every_capability();
    return report;
  }
  Result<ExecPlan> transform(const TransformRequest& request) const override {
    ExecPlan plan;
    plan.argv = {"/usr/bin/fake-wrapper"};
    plan.env = request.env;
    plan.cwd = request.cwd;
    made = std::make_shared<const DetailPart>("t-" + std::to_string(++transforms));
    plan.detail = made;
    return plan;
  }
  Result<ExitStatus> exec(const ExecPlan& plan, const RunContext&) override {
    received = plan.detail;
    const auto* part = dynamic_cast<const DetailPart*>(plan.detail.get());
    return ExitStatus{part != nullptr && part->token == "t-1" ? 0 : 9, 0};
  }
  mutable int transforms = 0;
  mutable std::shared_ptr<const PlanDetail> made;
  std::shared_ptr<const PlanDetail> received;
};

TEST(RunTest, PlanDetailTravelsFromTransformToExecUnchanged) {
  auto backend = std::make_shared<DetailBackend>();
  std::vector<LoadedPlugin> plugins;
  plugins.push_back({"detail", "1.0", "fake", "/fake/detail.so", backend});
  const PluginRegistry registry = PluginRegistry::from_plugins(std::move(plugins), {});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  const RunOutcome run = run_command(request_for(kWorkspace, {"/bin/true"}), backends);
  ASSERT_EQ(run.stop, RunStop::kNone) << run.error;
  ASSERT_TRUE(run.report.exit.has_value());
  EXPECT_EQ(run.report.exit->exit_code, 0);
  EXPECT_EQ(backend->transforms, 1);
  EXPECT_EQ(backend->received.get(), backend->made.get());

  // The plan JSON shows the detail's members, never over core's own.
  const boost::json::value json = boost::json::parse(
      plan_to_json("detail", ExecPlan{{"/usr/bin/fake-wrapper"}, {}, "/", {}, {}, backend->made},
                   JsonStyle::kCompact));
  EXPECT_EQ(json.at("detail_token").as_string(), "t-1");
  EXPECT_EQ(json.at("argv").as_array().size(), 1u);
  EXPECT_EQ(json.at("argv").at(0).as_string(), "/usr/bin/fake-wrapper");
  EXPECT_TRUE(json.at("windows").is_null());
}

// A path is arbitrary bytes: a detail written with sdk/plan_json.hpp that carries invalid UTF-8
// joins the plan's JSON repaired (U+FFFD), not replaced by detail_error.
TEST(RunTest, APlanDetailWithInvalidUtf8JoinsThePlanRepaired) {
  const auto detail = std::make_shared<const DetailPart>("bad\xff-byte");
  const std::string text = plan_to_json(
      "detail", ExecPlan{{"/usr/bin/fake-wrapper"}, {}, "/", {}, {}, detail}, JsonStyle::kCompact);
  const boost::json::value json = boost::json::parse(text);
  EXPECT_FALSE(json.as_object().contains("detail_error")) << text;
  EXPECT_EQ(json.at("detail_token").as_string(), "bad\xEF\xBF\xBD-byte");
}

}  // namespace
}  // namespace sbx

namespace sbx {
namespace {
// A warm manager (Manager::keep_probe_answers, the C API's handles).

// Appends one byte to `counter` on every probe. The probe runs in a forked child
// (guarded_probe), so only a file sees how many probes ran.
class ProbeCountingBackend final : public Backend {
 public:
  explicit ProbeCountingBackend(std::string counter)
      : Backend(HostServices(nullptr)), counter_(std::move(counter)) {}

  ProbeReport probe(const ProbeContext&) override {
    std::ofstream(counter_, std::ios::app) << 'p';
    ProbeReport report;
    report.available = true;
    report.summary = "counting";
    report.capabilities = every_capability();
    return report;
  }
  Result<ExecPlan> transform(const TransformRequest& request) const override {
    return ExecPlan{request.argv, request.env, request.cwd, {}};
  }
  Result<ExitStatus> exec(const ExecPlan&, const RunContext&) override { return ExitStatus{0, 0}; }

 private:
  std::string counter_;
};

std::size_t probes_so_far(const std::string& counter) {
  std::ifstream in(counter);
  return std::string(std::istreambuf_iterator<char>(in), {}).size();
}

class WarmManagerTest : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(counter_); }
  const std::string counter_ =
      (std::filesystem::temp_directory_path() / ("sbx-warm-probes-" + std::to_string(::getpid())))
          .string();
};

TEST_F(WarmManagerTest, KeptAnswersAreReusedUntilReprobe) {
  const PluginRegistry registry =
      PluginRegistry::from_plugins({{"counting", "1.0", "fake", "/fake/counting.so",
                                     std::make_shared<ProbeCountingBackend>(counter_)}},
                                   {});
  Manager manager(registry, {});
  manager.keep_probe_answers(true);
  CountingBackends backends(manager, nullptr);
  for (int run = 0; run < 3; ++run) {
    const RunOutcome out = run_command(request_for(kWorkspace, {"/bin/true"}), backends);
    EXPECT_EQ(out.stop, RunStop::kNone) << out.error;
    EXPECT_EQ(out.report.final, "counting");
  }
  EXPECT_EQ(probes_so_far(counter_), 1U) << "a warm manager probes each backend once";
  EXPECT_EQ(plan_command(request_for(kWorkspace, {"/bin/true"}), backends).report.final,
            "counting");
  EXPECT_EQ(probes_so_far(counter_), 1U) << "a plan reuses the kept answer too";

  manager.reprobe();
  EXPECT_EQ(probes_so_far(counter_), 2U) << "reprobe probes again at once";
  EXPECT_EQ(run_command(request_for(kWorkspace, {"/bin/true"}), backends).stop, RunStop::kNone);
  EXPECT_EQ(probes_so_far(counter_), 2U) << "and the run after it uses the new answer";
}

TEST_F(WarmManagerTest, WithoutKeepingEveryQuestionProbes) {
  const PluginRegistry registry =
      PluginRegistry::from_plugins({{"counting", "1.0", "fake", "/fake/counting.so",
                                     std::make_shared<ProbeCountingBackend>(counter_)}},
                                   {});
  const Manager manager(registry, {});
  CountingBackends backends(manager, nullptr);
  EXPECT_EQ(run_command(request_for(kWorkspace, {"/bin/true"}), backends).stop, RunStop::kNone);
  EXPECT_EQ(run_command(request_for(kWorkspace, {"/bin/true"}), backends).stop, RunStop::kNone);
  EXPECT_EQ(probes_so_far(counter_), 2U);
}

}  // namespace
}  // namespace sbx
