// required_capabilities: what a resolved policy needs a backend to enforce.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sbx/core/manager.hpp"

namespace sbx {
namespace {

using ::testing::ElementsAreArray;

ResolvedPolicy restricted(std::vector<PathRule> rules,
                          NetworkMode mode = NetworkMode::kRestricted) {
  ResolvedPolicy policy;
  policy.filesystem_kind = FilesystemKind::kRestricted;
  policy.rules = std::move(rules);
  policy.network.mode = mode;
  policy.cwd = "/w";
  return policy;
}

// Names make failures readable ("expected write_carveouts").
std::vector<std::string> needs(const ResolvedPolicy& policy) {
  return capability_names(required_capabilities(policy));
}

TEST(RequiredCapabilitiesTest, WorkspaceWriteBasics) {
  ResolvedPolicy policy =
      restricted({{"/", Access::kRead}, {"/w", Access::kWrite}, {"/tmp", Access::kWrite}});
  EXPECT_THAT(needs(policy),
              ElementsAreArray({"write_restriction", "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, ReadRestrictionWhenRootIsNotReadable) {
  ResolvedPolicy policy = restricted({{"/usr", Access::kRead}, {"/w", Access::kWrite}});
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "read_restriction",
                                               "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, ReadOnlyInsideWritableIsAWriteCarveout) {
  ResolvedPolicy policy =
      restricted({{"/", Access::kRead}, {"/w", Access::kWrite}, {"/w/vendor", Access::kRead}});
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "write_carveouts",
                                               "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, WindowsDrivePathsWalkUpToTheDriveRootAndEnd) {
  // A read rule inside a write rule, both Windows drive paths: the walk up from the inner rule
  // goes "C:/w/vendor" -> "C:/w" -> "C:/" -> "/" and ends (it used to stop at "C:" forever).
  ResolvedPolicy policy = restricted({{"/", Access::kRead},
                                      {"C:/", Access::kRead},
                                      {"C:/w", Access::kWrite},
                                      {"C:/w/vendor", Access::kRead},
                                      {"D:/x", Access::kDeny}});
  EXPECT_THAT(needs(policy),
              ElementsAreArray({"write_restriction", "write_carveouts", "read_carveouts",
                                "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, DenyInsideWritableIsBothCarveouts) {
  ResolvedPolicy policy =
      restricted({{"/", Access::kRead}, {"/w", Access::kWrite}, {"/w/.env", Access::kDeny}});
  EXPECT_THAT(needs(policy),
              ElementsAreArray({"write_restriction", "write_carveouts", "read_carveouts",
                                "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, DenyInsideReadableIsAReadCarveout) {
  ResolvedPolicy policy =
      restricted({{"/", Access::kRead}, {"/home/u/.ssh", Access::kDeny}, {"/w", Access::kWrite}});
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "read_carveouts",
                                               "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, GrantInsideDenyIsNoCarveout) {
  // A narrower grant under a denied directory adds access; it takes nothing away.
  ResolvedPolicy policy = restricted({{"/opt", Access::kDeny}, {"/opt/tool", Access::kRead}});
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "read_restriction",
                                               "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, SiblingPathIsNotInside) {
  // "/w2" is not inside "/w": a prefix match without a '/' boundary must not count.
  ResolvedPolicy policy =
      restricted({{"/", Access::kRead}, {"/w", Access::kWrite}, {"/w2", Access::kDeny}});
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "read_carveouts",
                                               "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, ProtectedNamesAndDenyGlobs) {
  ResolvedPolicy policy = restricted({{"/", Access::kRead}, {"/w", Access::kWrite}});
  policy.protected_paths = {{"/w/.git", "/w", true, true}};
  policy.deny_globs = {"/w/**/*.pem"};
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "protected_names", "deny_globs",
                                               "network_block", "syscall_filter"}));
}

TEST(RequiredCapabilitiesTest, NetworkModes) {
  const std::vector<PathRule> rules = {{"/", Access::kRead}};
  // Enabled means the internet, not the host's local services: unix_socket_block.
  EXPECT_THAT(needs(restricted(rules, NetworkMode::kEnabled)),
              ElementsAreArray({"write_restriction", "syscall_filter", "unix_socket_block"}));
  EXPECT_THAT(needs(restricted(rules, NetworkMode::kProxy)),
              ElementsAreArray({"write_restriction", "proxy_network", "syscall_filter"}));
}

// Listed sockets need the allow-list in every mode: with the network enabled the other host
// sockets stay closed too.
TEST(RequiredCapabilitiesTest, ListedUnixSocketsNeedTheAllowlistInEveryMode) {
  ResolvedPolicy policy = restricted({{"/", Access::kRead}}, NetworkMode::kProxy);
  policy.network.unix_sockets = {"/run/agent.sock"};
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "proxy_network",
                                               "unix_socket_allowlist", "syscall_filter"}));
  policy.network.mode = NetworkMode::kEnabled;
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "unix_socket_allowlist",
                                               "syscall_filter", "unix_socket_block"}));
}

TEST(RequiredCapabilitiesTest, LocalBindingOnlyMattersWhenNetworkIsLimited) {
  ResolvedPolicy policy = restricted({{"/", Access::kRead}}, NetworkMode::kRestricted);
  policy.network.allow_local_binding = true;
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "network_block",
                                               "syscall_filter", "local_binding"}));
  policy.network.mode = NetworkMode::kProxy;
  EXPECT_THAT(needs(policy), ElementsAreArray({"write_restriction", "proxy_network",
                                               "syscall_filter", "local_binding"}));
  policy.network.mode = NetworkMode::kEnabled;
  EXPECT_THAT(needs(policy),
              ElementsAreArray({"write_restriction", "syscall_filter", "unix_socket_block"}));
}

TEST(RequiredCapabilitiesTest, UnrestrictedAndExternalNeedOnlyNetworkAndSyscallFilter) {
  // The network part holds for every filesystem kind: enabled still keeps host unix sockets out.
  for (FilesystemKind kind : {FilesystemKind::kUnrestricted, FilesystemKind::kExternal}) {
    ResolvedPolicy policy = restricted({{"/w", Access::kWrite}, {"/w/x", Access::kDeny}});
    policy.filesystem_kind = kind;
    policy.protected_paths = {{"/w/.git", "/w", false, false}};
    EXPECT_THAT(needs(policy), ElementsAreArray({"network_block", "syscall_filter"}));
    policy.network.mode = NetworkMode::kEnabled;
    EXPECT_THAT(needs(policy), ElementsAreArray({"syscall_filter", "unix_socket_block"}));
  }
}

}  // namespace
}  // namespace sbx
