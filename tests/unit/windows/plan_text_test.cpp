// The plan travels to exec() inside ExecPlan notes: it must decode exactly, and anything
// unknown, missing, duplicated or tampered with must be refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sbx/windows/plan.hpp"
#include "sbx/windows/plan_text.hpp"
#include "windows_test_support.hpp"

namespace sbx::windows {
namespace {

using testing::request_for;
using testing::rule;

ExecPlan sample_exec_plan() {
  TransformRequest request = request_for(
      {rule("/", Access::kRead), rule("C:/w", Access::kWrite), rule("C:/w/ro", Access::kRead),
       rule("C:/Program Files/x y", Access::kWrite)},
      {ProtectedPath{"C:/w/.codex", "C:/w", false, false}});
  request.argv = {"C:/Program Files/app.exe", "a b", "", "q\"uote\\"};
  Result<WindowsPlan> plan = build_plan(request);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return to_exec_plan(*plan);
}

Result<WindowsPlan> decode_with(std::vector<std::string> notes) {
  ExecPlan exec_plan = sample_exec_plan();
  exec_plan.notes = std::move(notes);
  return from_exec_plan(exec_plan);
}

TEST(PlanText, RoundTripsEverythingButTheExplanations) {
  TransformRequest request = request_for(
      {rule("/", Access::kRead), rule("C:/w", Access::kWrite), rule("C:/w/ro", Access::kRead),
       rule("C:/Program Files/x y", Access::kWrite)},
      {ProtectedPath{"C:/w/.codex", "C:/w", false, false}});
  request.argv = {"C:/Program Files/app.exe", "a b", "", "q\"uote\\"};
  Result<WindowsPlan> plan = build_plan(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  Result<WindowsPlan> decoded = from_exec_plan(to_exec_plan(*plan));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  WindowsPlan expected = *plan;
  expected.info.clear();
  EXPECT_EQ(*decoded, expected);
}

TEST(PlanText, RoundTripsAnUnrestrictedPlan) {
  TransformRequest request = request_for({});
  request.policy.filesystem_kind = FilesystemKind::kUnrestricted;
  Result<WindowsPlan> plan = build_plan(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  const ExecPlan exec_plan = to_exec_plan(*plan);
  EXPECT_EQ(exec_plan.notes[0], "token: flags DISABLE_MAX_PRIVILEGE|LUA_TOKEN");
  EXPECT_EQ(exec_plan.notes[1], "token: restricting_sids none");
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_FALSE(decoded->token.write_restricted);
  EXPECT_TRUE(decoded->token.restricting_sids.empty());
}

TEST(PlanText, ExecPlanCarriesArgvEnvAndCwdThemselves) {
  const ExecPlan exec_plan = sample_exec_plan();
  EXPECT_EQ(exec_plan.argv[0], "C:\\Program Files\\app.exe");
  EXPECT_EQ(exec_plan.cwd, "C:\\work\\proj");
  EXPECT_EQ(exec_plan.env.size(), 2u);
  EXPECT_NE(std::find(exec_plan.notes.begin(), exec_plan.notes.end(),
                      "ace: allow-write cap:write C:\\Program Files\\x y"),
            exec_plan.notes.end());
}

TEST(PlanText, RefusesUnknownLines) {
  std::vector<std::string> notes = sample_exec_plan().notes;
  notes.push_back("ace-ish: something");
  Result<WindowsPlan> decoded = decode_with(notes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("'ace-ish: something': not a line this backend writes"),
            std::string::npos);
}

TEST(PlanText, RefusesMalformedAceSidAndFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ace: allow-write cap:write", "expected '<kind> <sid> <path>'"},
      {"ace: allow-all cap:write C:\\x", "unknown ACE kind"},
      {"ace: deny-write admins C:\\x", "unknown SID 'admins'"},
      {"token: flags DISABLE_MAX_PRIVILEGE|SANDBOX_INERT", "unknown token flag 'SANDBOX_INERT'"},
  };
  for (const auto& [line, reason] : cases) {
    std::vector<std::string> notes = sample_exec_plan().notes;
    notes.push_back(line);
    Result<WindowsPlan> decoded = decode_with(notes);
    ASSERT_FALSE(decoded.ok()) << line;
    EXPECT_NE(decoded.error().find(reason), std::string::npos) << decoded.error();
  }
}

TEST(PlanText, RefusesMissingOrDuplicatedTokenLines) {
  std::vector<std::string> notes = sample_exec_plan().notes;
  notes.erase(notes.begin());  // "token: flags ..."
  Result<WindowsPlan> decoded = decode_with(notes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("exactly one 'token: flags' note, found 0"), std::string::npos);
  notes = sample_exec_plan().notes;
  notes.push_back("job: kill_on_job_close");
  decoded = decode_with(notes);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("exactly one 'job:' note, found 2"), std::string::npos);
}

TEST(PlanText, RefusesACommandLineThatDoesNotMatchArgv) {
  ExecPlan exec_plan = sample_exec_plan();
  exec_plan.argv.push_back("added-later");
  Result<WindowsPlan> decoded = from_exec_plan(exec_plan);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("does not match the command line built from argv"),
            std::string::npos);
}

TEST(PlanText, InfoLinesAreNotInstructions) {
  std::vector<std::string> notes = sample_exec_plan().notes;
  notes.push_back("info: ace: allow-write cap:write C:\\Windows");
  Result<WindowsPlan> decoded = decode_with(notes);
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  for (const Ace& ace : decoded->aces) EXPECT_NE(ace.path, "C:\\Windows");
}

}  // namespace
}  // namespace sbx::windows
