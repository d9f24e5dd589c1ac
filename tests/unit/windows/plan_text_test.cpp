// The plan travels to exec() in the backend's own plan detail (WindowsPlanDetail): it must come
// back exactly, the notes only describe it (nothing in them is read back), and a plan without a
// Windows part or without the tree-killing job must be refused.
#include "sbx/windows/plan_text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sbx/windows/plan.hpp"
#include "windows_test_support.hpp"

namespace sbx::windows {
namespace {

using testing::request_for;
using testing::rule;

WindowsPlan sample_plan() {
  TransformRequest request =
      request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite),
                   rule("C:/w/ro", Access::kRead), rule("C:/Program Files/x y", Access::kWrite)},
                  {ProtectedPath{"C:/w/.codex", "C:/w", false, false}});
  request.argv = {"C:/Program Files/app.exe", "a b", "", "q\"uote\\"};
  Result<WindowsPlan> plan = build_plan(request);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return plan.ok() ? *plan : WindowsPlan{};
}

WindowsPlan without_info(WindowsPlan plan) {
  plan.info.clear();
  return plan;
}

TEST(PlanText, RoundTripsEverythingButTheExplanations) {
  const WindowsPlan plan = sample_plan();
  Result<WindowsPlan> decoded = from_exec_plan(to_exec_plan(plan));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, without_info(plan));
}

TEST(PlanText, RoundTripsAnUnrestrictedPlan) {
  TransformRequest request = request_for({});
  request.policy.filesystem_kind = FilesystemKind::kUnrestricted;
  Result<WindowsPlan> plan = build_plan(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  const ExecPlan exec_plan = to_exec_plan(*plan);
  const PlanWindows* windows = windows_part(exec_plan);
  ASSERT_NE(windows, nullptr);
  EXPECT_TRUE(windows->token.disable_max_privilege);
  EXPECT_TRUE(windows->token.lua_token);
  EXPECT_FALSE(windows->token.write_restricted);
  EXPECT_EQ(exec_plan.notes[0], "token: flags DISABLE_MAX_PRIVILEGE|LUA_TOKEN");
  EXPECT_EQ(exec_plan.notes[1], "token: restricting_sids none");
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, without_info(*plan));
}

TEST(PlanText, ExecPlanCarriesTheTokenAndAclsTyped) {
  const WindowsPlan plan = sample_plan();
  const ExecPlan exec_plan = to_exec_plan(plan);
  EXPECT_EQ(exec_plan.argv[0], "C:\\Program Files\\app.exe");
  EXPECT_EQ(exec_plan.cwd, "C:\\work\\proj");
  EXPECT_EQ(exec_plan.env.size(), 2u);
  const PlanWindows* windows = windows_part(exec_plan);
  ASSERT_NE(windows, nullptr);
  EXPECT_EQ(windows->token, write_restricted_token());
  EXPECT_EQ(windows->create_dirs, plan.create_dirs);
  EXPECT_EQ(windows->aces, plan.aces);
  EXPECT_TRUE(windows->kill_on_job_close);
  const Ace allow{AceKind::kAllowWrite, SidRef::kWriteCapability, "C:\\Program Files\\x y"};
  EXPECT_NE(std::find(windows->aces.begin(), windows->aces.end(), allow), windows->aces.end());
  // The notes describe the same step for a person.
  EXPECT_NE(std::find(exec_plan.notes.begin(), exec_plan.notes.end(),
                      "ace: allow-write cap:write C:\\Program Files\\x y"),
            exec_plan.notes.end());
}

TEST(PlanText, NotesAreNeverRead) {
  const WindowsPlan plan = sample_plan();
  ExecPlan exec_plan = to_exec_plan(plan);
  exec_plan.notes = {"ace: allow-write cap:write C:\\Windows", "token: flags none",
                     "not a line this backend writes"};
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, without_info(plan));
  exec_plan.notes.clear();
  decoded = from_exec_plan(exec_plan);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, without_info(plan));
}

TEST(PlanText, TheTypedFieldsDecideWhatRuns) {
  ExecPlan exec_plan = to_exec_plan(sample_plan());
  const Ace extra{AceKind::kDenyWrite, SidRef::kWriteCapability, "C:\\w\\extra"};
  PlanWindows windows = *windows_part(exec_plan);
  windows.aces.push_back(extra);
  windows.create_dirs.push_back("C:\\w\\extra");
  exec_plan.detail = std::make_shared<const WindowsPlanDetail>(std::move(windows));
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded->aces.back(), extra);
  EXPECT_EQ(decoded->create_dirs.back(), "C:\\w\\extra");
}

TEST(PlanText, RefusesAPlanWithoutAWindowsPart) {
  ExecPlan exec_plan = to_exec_plan(sample_plan());
  exec_plan.detail = std::make_shared<const WindowsPlanDetail>(PlanWindows{});
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("the plan has no Windows part"), std::string::npos)
      << decoded.error();
  // Nor a plan whose detail is not this backend's (another backend's, or none).
  exec_plan.detail = std::make_shared<const PlanDetail>();
  decoded = from_exec_plan(exec_plan);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("the plan has no Windows part"), std::string::npos)
      << decoded.error();
  exec_plan.detail = nullptr;
  EXPECT_FALSE(from_exec_plan(exec_plan).ok());
}

TEST(PlanText, RefusesAJobThatWouldNotKillTheProcessTree) {
  ExecPlan exec_plan = to_exec_plan(sample_plan());
  PlanWindows windows = *windows_part(exec_plan);
  windows.kill_on_job_close = false;
  exec_plan.detail = std::make_shared<const WindowsPlanDetail>(std::move(windows));
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("does not kill the process tree"), std::string::npos)
      << decoded.error();
}

TEST(PlanText, TheCommandLineIsRebuiltFromArgv) {
  ExecPlan exec_plan = to_exec_plan(sample_plan());
  exec_plan.argv.push_back("added later");
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_TRUE(decoded->command_line.ends_with(" \"added later\"")) << decoded->command_line;
}

TEST(PlanText, RefusesArgvThatCannotBeACommandLine) {
  ExecPlan exec_plan = to_exec_plan(sample_plan());
  exec_plan.argv.push_back(std::string("nul\0byte", 8));
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("windows backend: "), std::string::npos) << decoded.error();
}

}  // namespace
}  // namespace sbx::windows
