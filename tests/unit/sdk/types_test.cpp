// The SDK's pure helpers over ResolvedPolicy and capabilities: every backend relies on them.
#include "sbx/sdk/types.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "sbx/sdk/result.hpp"

namespace {

using sbx::Access;
using sbx::Capability;

TEST(SdkTypes, PathIsWithinRespectsComponentBoundaries) {
  EXPECT_TRUE(sbx::path_is_within("/a/b", "/a"));
  EXPECT_TRUE(sbx::path_is_within("/a", "/a"));
  EXPECT_TRUE(sbx::path_is_within("/a", "/"));
  EXPECT_FALSE(sbx::path_is_within("/ab", "/a"));
  EXPECT_FALSE(sbx::path_is_within("/a", "/a/b"));
  EXPECT_FALSE(sbx::path_is_within("", "/"));
}

TEST(SdkTypes, MostSpecificRuleWinsAndNoMatchDenies) {
  sbx::ResolvedPolicy policy;
  policy.rules = {{"/", Access::kRead}, {"/w", Access::kWrite}, {"/w/ro", Access::kRead}};
  EXPECT_EQ(sbx::rule_access(policy, "/etc"), Access::kRead);
  EXPECT_EQ(sbx::rule_access(policy, "/w/x"), Access::kWrite);
  EXPECT_EQ(sbx::rule_access(policy, "/w/ro/x"), Access::kRead);
  EXPECT_EQ(sbx::rule_access(policy, "/wx"), Access::kRead);
  EXPECT_FALSE(sbx::reads_restricted(policy));
  EXPECT_EQ(sbx::writable_roots(policy), std::vector<std::string>{"/w"});
  policy.rules = {{"/usr", Access::kRead}};
  EXPECT_EQ(sbx::rule_access(policy, "/etc"), Access::kDeny);
  EXPECT_TRUE(sbx::reads_restricted(policy));
  policy.filesystem_kind = sbx::FilesystemKind::kUnrestricted;
  EXPECT_FALSE(sbx::reads_restricted(policy));
}

TEST(SdkTypes, CapabilitySetAlgebra) {
  const sbx::CapabilitySet have{Capability::kWriteRestriction, Capability::kNetworkBlock};
  const sbx::CapabilitySet need{Capability::kWriteRestriction, Capability::kDenyGlobs};
  EXPECT_FALSE(have.covers(need));
  EXPECT_EQ(have.missing_from(need), sbx::CapabilitySet{Capability::kDenyGlobs});
  EXPECT_TRUE(have.covers(sbx::CapabilitySet{Capability::kNetworkBlock}));
  EXPECT_EQ(sbx::capability_names(have),
            (std::vector<std::string>{"write_restriction", "network_block"}));
}

TEST(SdkTypes, EveryCapabilityHasAStableDistinctName) {
  std::set<std::string_view> names;
  for (Capability c : sbx::kAllCapabilities) {
    EXPECT_NE(sbx::to_string(c), "unknown");
    names.insert(sbx::to_string(c));
  }
  EXPECT_EQ(names.size(), std::size(sbx::kAllCapabilities));
}

TEST(SdkTypes, ExitStatusShellCode) {
  EXPECT_EQ((sbx::ExitStatus{3, 0}).shell_code(), 3);
  EXPECT_EQ((sbx::ExitStatus{0, 9}).shell_code(), 137);
}

TEST(SdkResult, ValueOrError) {
  sbx::Result<int> good = 4;
  sbx::Result<int> bad = sbx::Error{"nope"};
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 4);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "nope");
  EXPECT_FALSE(bad.status().ok());
  EXPECT_TRUE(sbx::Status().ok());
}

}  // namespace
