// Question 1: should_sandbox's auto rules, require, forbid and the deny-entry rule, and the
// sandbox preference parser. Policies are built directly (no parser involved).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "sbx/core/manager.hpp"

namespace sbx {
namespace {

using ::testing::HasSubstr;

Policy make_policy(FilesystemKind kind, NetworkMode mode) {
  Policy policy;
  policy.filesystem.kind = kind;
  policy.filesystem.entries = {{":root", "", Access::kRead}, {":cwd", "", Access::kWrite}};
  policy.network.mode = mode;
  return policy;
}

struct AutoCase {
  FilesystemKind kind;
  NetworkMode mode;
  bool sandbox;
  const char* reason_part;
};

class AutoRuleTest : public ::testing::TestWithParam<AutoCase> {};

TEST_P(AutoRuleTest, FollowsDesignAutoRules) {
  const AutoCase& c = GetParam();
  Result<SandboxDecision> decision =
      should_sandbox(make_policy(c.kind, c.mode), SandboxPreference::kAuto);
  ASSERT_TRUE(decision.ok()) << decision.error();
  EXPECT_EQ(decision->sandbox, c.sandbox);
  EXPECT_THAT(decision->reason, HasSubstr(c.reason_part));
}

INSTANTIATE_TEST_SUITE_P(
    AllCombinations, AutoRuleTest,
    ::testing::Values(
        // proxy => sandbox, whatever the filesystem.
        AutoCase{FilesystemKind::kRestricted, NetworkMode::kProxy, true, "proxy"},
        AutoCase{FilesystemKind::kUnrestricted, NetworkMode::kProxy, true, "proxy"},
        AutoCase{FilesystemKind::kExternal, NetworkMode::kProxy, true, "proxy"},
        // restricted => sandbox unless the filesystem is external.
        AutoCase{FilesystemKind::kRestricted, NetworkMode::kRestricted, true,
                 "network is restricted, so the command is sandboxed"},
        AutoCase{FilesystemKind::kUnrestricted, NetworkMode::kRestricted, true,
                 "network is restricted"},
        AutoCase{FilesystemKind::kExternal, NetworkMode::kRestricted, false, "external"},
        // enabled => sandbox only if writes are restricted.
        AutoCase{FilesystemKind::kRestricted, NetworkMode::kEnabled, true, "writes are restricted"},
        AutoCase{FilesystemKind::kUnrestricted, NetworkMode::kEnabled, false, "unrestricted"},
        AutoCase{FilesystemKind::kExternal, NetworkMode::kEnabled, false, "external"}));

TEST(ShouldSandboxTest, RequireAlwaysSandboxes) {
  Result<SandboxDecision> decision =
      should_sandbox(make_policy(FilesystemKind::kUnrestricted, NetworkMode::kEnabled),
                     SandboxPreference::kRequire);
  ASSERT_TRUE(decision.ok()) << decision.error();
  EXPECT_TRUE(decision->sandbox);
  EXPECT_THAT(decision->reason, HasSubstr("requires"));
}

TEST(ShouldSandboxTest, ForbidNeverSandboxes) {
  Result<SandboxDecision> decision =
      should_sandbox(make_policy(FilesystemKind::kRestricted, NetworkMode::kRestricted),
                     SandboxPreference::kForbid);
  ASSERT_TRUE(decision.ok()) << decision.error();
  EXPECT_FALSE(decision->sandbox);
  EXPECT_THAT(decision->reason, HasSubstr("forbids"));
}

TEST(ShouldSandboxTest, ForbidWithProxyNetworkIsAnError) {
  // Unsandboxed, the command would reach the whole network instead of the allowed domains.
  Result<SandboxDecision> decision = should_sandbox(
      make_policy(FilesystemKind::kRestricted, NetworkMode::kProxy), SandboxPreference::kForbid);
  ASSERT_FALSE(decision.ok());
  EXPECT_THAT(decision.error(), HasSubstr("network mode proxy never runs unsandboxed"));
}

TEST(ShouldSandboxTest, ForbidWithDenyPathIsAnError) {
  Policy policy = make_policy(FilesystemKind::kRestricted, NetworkMode::kRestricted);
  policy.filesystem.entries.push_back({"~/.ssh", "", Access::kDeny});
  Result<SandboxDecision> decision = should_sandbox(policy, SandboxPreference::kForbid);
  ASSERT_FALSE(decision.ok());
  EXPECT_THAT(decision.error(), HasSubstr("'~/.ssh'"));
  EXPECT_THAT(decision.error(), HasSubstr("never runs unsandboxed"));
}

TEST(ShouldSandboxTest, ForbidWithDenyGlobIsAnError) {
  Policy policy = make_policy(FilesystemKind::kRestricted, NetworkMode::kEnabled);
  policy.filesystem.entries.push_back({"", "**/*.pem", Access::kDeny});
  Result<SandboxDecision> decision = should_sandbox(policy, SandboxPreference::kForbid);
  ASSERT_FALSE(decision.ok());
  EXPECT_THAT(decision.error(), HasSubstr("glob '**/*.pem'"));
}

TEST(ShouldSandboxTest, AutoWithDenyEntrySandboxesWhereRulesWouldNot) {
  // enabled network + unrestricted filesystem alone would not be sandboxed.
  Policy policy = make_policy(FilesystemKind::kUnrestricted, NetworkMode::kEnabled);
  policy.filesystem.entries.push_back({"/etc/secret", "", Access::kDeny});
  Result<SandboxDecision> decision = should_sandbox(policy, SandboxPreference::kAuto);
  ASSERT_TRUE(decision.ok()) << decision.error();
  EXPECT_TRUE(decision->sandbox);
  EXPECT_THAT(decision->reason, HasSubstr("'/etc/secret'"));
}

TEST(ShouldSandboxTest, RequireWithDenyEntryIsFine) {
  Policy policy = make_policy(FilesystemKind::kRestricted, NetworkMode::kRestricted);
  policy.filesystem.entries.push_back({"", "**/.env", Access::kDeny});
  Result<SandboxDecision> decision = should_sandbox(policy, SandboxPreference::kRequire);
  ASSERT_TRUE(decision.ok()) << decision.error();
  EXPECT_TRUE(decision->sandbox);
}

TEST(SandboxPreferenceTest, ParsesAndPrintsEveryValue) {
  for (SandboxPreference p :
       {SandboxPreference::kAuto, SandboxPreference::kRequire, SandboxPreference::kForbid}) {
    Result<SandboxPreference> parsed = parse_sandbox_preference(to_string(p));
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(to_string(SandboxPreference::kRequire), "require");
}

TEST(SandboxPreferenceTest, RejectsUnknownWithTheValidValues) {
  for (const char* bad : {"", "Auto", "yes", "required"}) {
    Result<SandboxPreference> parsed = parse_sandbox_preference(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.error(), HasSubstr("auto|require|forbid"));
    EXPECT_THAT(parsed.error(), HasSubstr(std::string("'") + bad + "'"));
  }
}

}  // namespace
}  // namespace sbx
