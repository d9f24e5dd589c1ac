// The one "never unsandboxed" rule (may_run_unsandboxed, manager.hpp): its whole truth table,
// every intent against a policy with nothing only a sandbox holds, a deny entry (a path, a
// glob), network mode proxy, and both. Policies are built directly (no parser involved).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "sbx/core/manager.hpp"

namespace sbx {
namespace {

enum class Holds { kNothing, kDenyPath, kDenyGlob, kProxy, kDenyAndProxy };

Policy policy_holding(Holds holds) {
  Policy policy;
  policy.filesystem.kind = FilesystemKind::kUnrestricted;
  policy.filesystem.entries = {{":root", "", Access::kWrite}};
  policy.network.mode = NetworkMode::kEnabled;
  if (holds == Holds::kDenyPath || holds == Holds::kDenyAndProxy)
    policy.filesystem.entries.push_back({"~/.ssh", "", Access::kDeny});
  if (holds == Holds::kDenyGlob)
    policy.filesystem.entries.push_back({"", "**/*.pem", Access::kDeny});
  if (holds == Holds::kProxy || holds == Holds::kDenyAndProxy)
    policy.network.mode = NetworkMode::kProxy;
  return policy;
}

struct Row {
  BareIntent intent;
  Holds holds;
  bool allowed;
};

class MayRunUnsandboxedTest : public ::testing::TestWithParam<Row> {};

TEST_P(MayRunUnsandboxedTest, FollowsTheTruthTable) {
  const Row& row = GetParam();
  const BareVerdict verdict = may_run_unsandboxed(policy_holding(row.holds), row.intent);
  EXPECT_EQ(verdict.allowed, row.allowed);
  // What the policy holds is reported whatever the intent, for the refusal's words.
  const std::optional<std::string> deny =
      row.holds == Holds::kDenyPath || row.holds == Holds::kDenyAndProxy
          ? std::optional<std::string>("path '~/.ssh'")
      : row.holds == Holds::kDenyGlob ? std::optional<std::string>("glob '**/*.pem'")
                                      : std::nullopt;
  EXPECT_EQ(verdict.deny, deny);
  EXPECT_EQ(verdict.proxy, row.holds == Holds::kProxy || row.holds == Holds::kDenyAndProxy);
}

// Every intent that runs bare on its own (the caller's explicit choices and nothing to
// enforce) runs bare only when the policy holds nothing only a sandbox can hold; a sandbox
// that is wanted and not available (kNoBackend) never runs bare.
constexpr Row kRows[] = {
    {BareIntent::kNothingToEnforce, Holds::kNothing, true},
    {BareIntent::kNothingToEnforce, Holds::kDenyPath, false},
    {BareIntent::kNothingToEnforce, Holds::kDenyGlob, false},
    {BareIntent::kNothingToEnforce, Holds::kProxy, false},
    {BareIntent::kNothingToEnforce, Holds::kDenyAndProxy, false},
    {BareIntent::kCallerForbids, Holds::kNothing, true},
    {BareIntent::kCallerForbids, Holds::kDenyPath, false},
    {BareIntent::kCallerForbids, Holds::kDenyGlob, false},
    {BareIntent::kCallerForbids, Holds::kProxy, false},
    {BareIntent::kCallerForbids, Holds::kDenyAndProxy, false},
    {BareIntent::kExcludedCommand, Holds::kNothing, true},
    {BareIntent::kExcludedCommand, Holds::kDenyPath, false},
    {BareIntent::kExcludedCommand, Holds::kDenyGlob, false},
    {BareIntent::kExcludedCommand, Holds::kProxy, false},
    {BareIntent::kExcludedCommand, Holds::kDenyAndProxy, false},
    {BareIntent::kOverride, Holds::kNothing, true},
    {BareIntent::kOverride, Holds::kDenyPath, false},
    {BareIntent::kOverride, Holds::kDenyGlob, false},
    {BareIntent::kOverride, Holds::kProxy, false},
    {BareIntent::kOverride, Holds::kDenyAndProxy, false},
    {BareIntent::kNoBackend, Holds::kNothing, false},
    {BareIntent::kNoBackend, Holds::kDenyPath, false},
    {BareIntent::kNoBackend, Holds::kDenyGlob, false},
    {BareIntent::kNoBackend, Holds::kProxy, false},
    {BareIntent::kNoBackend, Holds::kDenyAndProxy, false},
};

INSTANTIATE_TEST_SUITE_P(EveryIntentAndPolicy, MayRunUnsandboxedTest, ::testing::ValuesIn(kRows));

// The callers follow it: question 1 never answers "no sandbox" for a policy the rule keeps
// sandboxed, whether auto found nothing to enforce or the caller forbids one.
TEST(MayRunUnsandboxedCallers, QuestionOneNeverAnswersBareAgainstTheRule) {
  for (const Holds holds :
       {Holds::kNothing, Holds::kDenyPath, Holds::kDenyGlob, Holds::kProxy, Holds::kDenyAndProxy}) {
    const Policy policy = policy_holding(holds);
    for (const SandboxPreference preference :
         {SandboxPreference::kAuto, SandboxPreference::kForbid}) {
      const Result<SandboxDecision> decision = should_sandbox(policy, preference);
      const BareIntent intent = preference == SandboxPreference::kAuto
                                    ? BareIntent::kNothingToEnforce
                                    : BareIntent::kCallerForbids;
      if (decision.ok() && !decision->sandbox) {
        EXPECT_TRUE(may_run_unsandboxed(policy, intent).allowed)
            << "bare for holds " << static_cast<int>(holds);
      } else {
        EXPECT_FALSE(may_run_unsandboxed(policy, intent).allowed)
            << "sandboxed or refused for holds " << static_cast<int>(holds);
      }
    }
  }
}

}  // namespace
}  // namespace sbx
