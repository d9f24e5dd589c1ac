// /limits of a policy: the defaults (a process limit on, everything else inherited), strict
// reading with a JSON pointer in every error, null as "no limit", the same object next to a
// preset, and the round trip through the full form.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

std::string with_limits(const std::string& members) {
  return R"({"version": 1, "limits": {)" + members + "}}";
}

struct LimitsErrorCase {
  const char* name;
  std::string json;
  std::string pointer;
  std::string detail;
};

TEST(PolicyLimits, RejectionsNameTheirPointer) {
  const std::vector<LimitsErrorCase> cases = {
      {"not_object", R"({"version": 1, "limits": 5})", "/limits",
       "expected an object, got a number"},
      {"unknown_key", with_limits(R"("procs": 5)"), "/limits/procs",
       "unknown key; expected one of processes|open_files|"},
      {"duplicate_key", with_limits(R"("processes": 100, "processes": 200)"), "/limits/processes",
       "duplicate key"},
      {"string_value", with_limits(R"("processes": "100")"), "/limits/processes",
       "expected a non-negative integer or null (no limit), got a string"},
      {"fraction", with_limits(R"("cpu_seconds": 1.5)"), "/limits/cpu_seconds",
       "expected a non-negative integer"},
      {"negative", with_limits(R"("open_files": -1)"), "/limits/open_files",
       "must not be negative"},
      {"processes_too_few", with_limits(R"("processes": 2)"), "/limits/processes",
       "2 is not from 8 to 4194304 processes"},
      {"processes_too_many", with_limits(R"("processes": 5000000)"), "/limits/processes",
       "is not from 8 to 4194304"},
      {"open_files_too_few", with_limits(R"("open_files": 3)"), "/limits/open_files",
       "3 is not from 32 to 1048576 descriptors"},
      {"file_size_zero", with_limits(R"("file_size_bytes": 0)"), "/limits/file_size_bytes",
       "0 is not from 1 to"},
      {"address_space_tiny", with_limits(R"("address_space_bytes": 4096)"),
       "/limits/address_space_bytes", "4096 is not from 67108864"},
      {"memory_tiny", with_limits(R"("memory_bytes": 1024)"), "/limits/memory_bytes",
       "1024 is not from 16777216"},
      {"timeout_zero", with_limits(R"("timeout_seconds": 0)"), "/limits/timeout_seconds",
       "0 is not from 1 to"},
      {"grace_null", with_limits(R"("timeout_grace_seconds": null)"),
       "/limits/timeout_grace_seconds", "expected a non-negative integer, got null"},
      {"grace_too_long", with_limits(R"("timeout_grace_seconds": 7200)"),
       "/limits/timeout_grace_seconds", "7200 is not from 0 to 3600 seconds"},
      {"short_form_bad_limit",
       R"({"version": 1, "preset": "read-only", "limits": {"processes": 1}})", "/limits/processes",
       "1 is not from 8"},
  };
  for (const LimitsErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Policy> parsed = parse_policy(c.json);
    ASSERT_FALSE(parsed.ok()) << "accepted: " << c.json;
    EXPECT_EQ(parsed.error().substr(0, c.pointer.size() + 2), c.pointer + ": ") << parsed.error();
    EXPECT_NE(parsed.error().find(c.detail), std::string::npos) << parsed.error();
  }
}

TEST(PolicyLimits, DefaultsLimitProcessesAndInheritTheRest) {
  const Limits limits = parse_policy(R"({"version": 1})")->limits;
  EXPECT_EQ(limits.processes, kDefaultProcessLimit);
  EXPECT_FALSE(limits.open_files || limits.file_size_bytes || limits.address_space_bytes ||
               limits.memory_bytes || limits.cpu_seconds || limits.timeout_seconds);
  EXPECT_EQ(limits.timeout_grace_seconds, kDefaultTimeoutGraceSeconds);
  for (std::string_view preset : kPresetNames) {
    SCOPED_TRACE(std::string(preset));
    EXPECT_EQ(preset_policy(preset)->limits, Limits{});
  }
}

TEST(PolicyLimits, EveryKeyIsReadAndNullRemovesALimit) {
  Result<Policy> parsed = parse_policy(with_limits(
      R"("processes": null, "open_files": 256, "file_size_bytes": 1048576,
         "address_space_bytes": 1073741824, "memory_bytes": 536870912, "cpu_seconds": 60,
         "timeout_seconds": 30, "timeout_grace_seconds": 0)"));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Limits& limits = parsed->limits;
  EXPECT_FALSE(limits.processes.has_value());
  EXPECT_EQ(limits.open_files, 256u);
  EXPECT_EQ(limits.file_size_bytes, 1048576u);
  EXPECT_EQ(limits.address_space_bytes, 1073741824u);
  EXPECT_EQ(limits.memory_bytes, 536870912u);
  EXPECT_EQ(limits.cpu_seconds, 60u);
  EXPECT_EQ(limits.timeout_seconds, 30u);
  EXPECT_EQ(limits.timeout_grace_seconds, 0u);
}

TEST(PolicyLimits, ShortFormTakesLimitsNextToThePreset) {
  Result<Policy> parsed = parse_policy(
      R"({"version": 1, "preset": "workspace-write", "limits": {"processes": 200, "timeout_seconds": 5}})");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  Policy expected = *preset_policy("workspace-write");
  expected.limits.processes = 200;
  expected.limits.timeout_seconds = 5;
  expected.limits.best_effort = {};  // a process limit the policy sets is one it relies on
  EXPECT_EQ(*parsed, expected);
}

// /limits/best_effort: the limits a run may go without where they cannot hold. sbx's own
// default process limit is best-effort; one the policy sets is not, unless it says so.
TEST(PolicyLimits, BestEffortDefaultsToTheDefaultProcessLimitOnly) {
  EXPECT_EQ(Limits{}.best_effort, std::vector<std::string>{"processes"});
  Result<Policy> parsed = parse_policy(with_limits(R"("timeout_seconds": 9)"));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->limits.best_effort, std::vector<std::string>{"processes"});
  parsed = parse_policy(with_limits(R"("processes": 30)"));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->limits.best_effort.empty());
  parsed = parse_policy(with_limits(
      R"("best_effort": ["memory_bytes", "processes"], "processes": 30, "memory_bytes": 67108864)"));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->limits.best_effort, (std::vector<std::string>{"memory_bytes", "processes"}));
  // Printed and read back unchanged (policy show, and the command-line additions that go
  // through the parser again).
  Result<Policy> again = parse_policy(policy_to_json(*parsed));
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *parsed);
  parsed = parse_policy(with_limits(R"("best_effort": [])"));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->limits.best_effort.empty());
}

TEST(PolicyLimits, BestEffortNamesLimitsOnce) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("best_effort": ["timeout_grace_seconds"])", "/limits/best_effort/0: "},
      {R"("best_effort": ["memory"])", "/limits/best_effort/0: "},
      {R"("best_effort": ["processes", "processes"])", "/limits/best_effort/1: duplicate"},
      {R"("best_effort": "processes")", "/limits/best_effort: expected an array"},
      {R"("best_effort": [1])", "/limits/best_effort/0: expected a limit name"},
  };
  for (const auto& [limits, error] : cases) {
    Result<Policy> parsed = parse_policy(with_limits(limits));
    ASSERT_FALSE(parsed.ok()) << limits;
    EXPECT_EQ(parsed.error().rfind(error, 0), 0u) << parsed.error();
  }
}

TEST(PolicyLimits, FullFormRoundTripsAndShowsEveryKey) {
  Result<Policy> parsed = parse_policy(with_limits(R"("open_files": 512, "timeout_seconds": 9)"));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const std::string text = policy_to_json(*parsed);
  EXPECT_NE(text.find(R"("processes": 4096)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("memory_bytes": null)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("timeout_grace_seconds": 5)"), std::string::npos) << text;
  Result<Policy> again = parse_policy(text);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *parsed);
}

TEST(PolicyLimits, ValidatePolicyChecksLimitsBuiltInCode) {
  Policy policy;
  policy.limits.open_files = 1;
  Result<Policy> checked = validate_policy(policy);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().rfind("/limits/open_files: ", 0), 0u) << checked.error();
}

}  // namespace
}  // namespace sbx
