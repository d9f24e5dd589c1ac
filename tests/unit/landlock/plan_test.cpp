// The landlock plan's way to exec() (plugins/landlock/include/sbx/landlock/plan.hpp): the typed
// plan travels in the plan's detail, and the launch exec() makes of it is, field for field, the
// one sbx-stage2 parses out of the printed argv (parse_landlock_argv): the plan printed is the
// plan run. Refusals where the parser refuses; the debug record without environment values.
#include "sbx/landlock/plan.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "landlock_launch.hpp"
#include "sbx/landlock/translate.hpp"

namespace landlock_plan_test {

using namespace sbx;
using sbx::landlock::LandlockPlan;
using sbx::landlock::Network;
using sbx::landlock::RuleLine;
using sbx::stage2::LandlockLaunch;

landlock::HostFacts host_facts() {
  landlock::HostFacts facts;
  facts.stage2_path = "/s2";
  facts.mounts_known = true;
  facts.listings["/"] = {{"bin", true}, {"dev", false}, {"etc", false}, {"usr", false}};
  return facts;
}

TransformRequest request(FilesystemKind kind, NetworkMode mode) {
  TransformRequest r;
  r.argv = {"/bin/echo", "--net", "x"};
  r.cwd = "/ws";
  r.env = {"PATH=/bin", "TOKEN=s3cret"};
  r.policy.filesystem_kind = kind;
  r.policy.rules = {{"/", Access::kRead}, {"/ws", Access::kWrite}};
  r.policy.platform_defaults_readable = true;
  r.policy.network.mode = mode;
  if (mode == NetworkMode::kProxy) r.policy.network.proxy_ports = {41234};
  r.policy.cwd = "/ws";
  return r;
}

void expect_same_launch(const LandlockLaunch& made, const LandlockLaunch& parsed) {
  EXPECT_EQ(made.landlock.enabled, parsed.landlock.enabled);
  EXPECT_EQ(made.landlock.min_abi, parsed.landlock.min_abi);
  EXPECT_EQ(made.landlock.restrict_filesystem, parsed.landlock.restrict_filesystem);
  EXPECT_EQ(made.landlock.writes_only, parsed.landlock.writes_only);
  EXPECT_EQ(made.landlock.block_tcp, parsed.landlock.block_tcp);
  EXPECT_EQ(made.landlock.connect_tcp_ports, parsed.landlock.connect_tcp_ports);
  EXPECT_EQ(made.landlock.scope_abstract_unix, parsed.landlock.scope_abstract_unix);
  EXPECT_EQ(made.landlock.read, parsed.landlock.read);
  EXPECT_EQ(made.landlock.write, parsed.landlock.write);
  EXPECT_EQ(made.landlock.dev, parsed.landlock.dev);
  EXPECT_EQ(made.landlock.list, parsed.landlock.list);
  EXPECT_EQ(made.landlock.keep_dev_closed, parsed.landlock.keep_dev_closed);
  EXPECT_EQ(made.network, parsed.network);
  EXPECT_EQ(made.proxy_port, parsed.proxy_port);
  EXPECT_EQ(made.env_environ, parsed.env_environ);
  EXPECT_EQ(made.parent, parsed.parent);
  EXPECT_EQ(made.command, parsed.command);
}

// Every network mode, restricted and unrestricted filesystems: what exec() runs is what the
// printed argv says.
TEST(LandlockPlan, TheLaunchIsWhatStageTwoParsesOutOfThePrintedArgv) {
  for (const FilesystemKind kind : {FilesystemKind::kRestricted, FilesystemKind::kUnrestricted}) {
    for (const NetworkMode mode :
         {NetworkMode::kRestricted, NetworkMode::kProxy, NetworkMode::kEnabled}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(kind)) + "/" +
                   std::to_string(static_cast<int>(mode)));
      Result<landlock::Translation> t = landlock::translate(request(kind, mode), host_facts());
      ASSERT_TRUE(t.ok()) << t.error();
      EXPECT_EQ(t->argv, landlock::plan_argv("/s2", t->plan));
      Result<LandlockLaunch> made = landlock::launch_of(t->plan);
      ASSERT_TRUE(made.ok()) << made.error();
      Result<LandlockLaunch> parsed = stage2::parse_landlock_argv(t->argv);
      ASSERT_TRUE(parsed.ok()) << parsed.error();
      expect_same_launch(*made, *parsed);
    }
  }
  // The open network as a hand-written plan (no scope, the lowest ABI) the same way.
  LandlockPlan open;
  open.network = Network::kOpen;
  open.restrict_filesystem = false;
  open.command = {"/bin/true"};
  Result<LandlockLaunch> made = landlock::launch_of(open);
  ASSERT_TRUE(made.ok()) << made.error();
  Result<LandlockLaunch> parsed = stage2::parse_landlock_argv(landlock::plan_argv("/s2", open));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  expect_same_launch(*made, *parsed);
}

TEST(LandlockPlan, TheTypedPlanTravelsInTheDetail) {
  LandlockPlan typed;
  typed.command = {"/bin/true"};
  ExecPlan plan;
  plan.detail = std::make_shared<const landlock::LandlockPlanDetail>(typed);
  ASSERT_NE(landlock::landlock_plan_of(plan), nullptr);
  EXPECT_EQ(*landlock::landlock_plan_of(plan), typed);
  EXPECT_EQ(plan.detail->report_json(), "") << "the argv shows the whole launch";
  plan.detail = std::make_shared<const PlanDetail>();
  EXPECT_EQ(landlock::landlock_plan_of(plan), nullptr) << "another backend's detail";
  plan.detail = nullptr;
  EXPECT_EQ(landlock::landlock_plan_of(plan), nullptr);
}

// Where sbx-stage2 would refuse the printed argv, exec() refuses the typed plan.
TEST(LandlockPlan, WhatTheParserRefusesTheLaunchRefusesToo) {
  LandlockPlan relative;
  relative.command = {"echo"};
  LandlockPlan none;
  LandlockPlan unknown;
  unknown.rules = {{"exec", "/usr"}};
  unknown.command = {"/bin/true"};
  LandlockPlan proxy_without_port;
  proxy_without_port.network = Network::kProxy;
  proxy_without_port.command = {"/bin/true"};
  LandlockPlan relative_rule;
  relative_rule.rules = {{"read", "usr"}};
  relative_rule.command = {"/bin/true"};
  for (const LandlockPlan& bad : {relative, none, unknown, proxy_without_port, relative_rule}) {
    EXPECT_FALSE(landlock::launch_of(bad).ok());
    EXPECT_FALSE(stage2::parse_landlock_argv(landlock::plan_argv("/s2", bad)).ok());
  }
}

// The debug record names the environment, never its values.
TEST(LandlockPlan, TheRecordLeavesTheEnvironmentsValuesOut) {
  Result<landlock::Translation> t =
      landlock::translate(request(FilesystemKind::kRestricted, NetworkMode::kProxy), host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  Result<LandlockLaunch> made = landlock::launch_of(t->plan);
  ASSERT_TRUE(made.ok()) << made.error();
  const std::string json = landlock::launch_record_json("/s2", t->plan, *made, t->env);
  EXPECT_EQ(json.find("s3cret"), std::string::npos) << json;
  EXPECT_NE(json.find("\"environment\":[\"PATH\",\"TOKEN\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"connect_tcp_ports\":[41234]"), std::string::npos) << json;
  EXPECT_EQ(json.rfind("{\"argv\":[\"/s2\",\"--landlock\",\"4\",", 0), 0u) << json;
}

}  // namespace landlock_plan_test
