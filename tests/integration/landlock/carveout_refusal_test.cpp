// A user's read or deny rule inside a writable root is a carve-out Landlock cannot enforce: its
// rules only add access beneath a path, so a subtree of a writable tree cannot be made read-only
// or unreadable (landlock(7), "Filesystem flags": access granted on a directory applies to
// everything beneath it). The installed `sbx --backends landlock exec` refuses the whole policy
// (exit 125) and names the rule, as root and as the unprivileged identity, and the command does
// not run: nothing is written, neither in the carve-out, nor elsewhere in the workspace, nor
// outside it.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

// The rule's access ("read" or "deny"); who starts sbx.
using Param = std::tuple<std::string, Identity>;

class LandlockCarveOut : public ::testing::TestWithParam<Param> {
 protected:
  const std::string& access() const { return std::get<0>(GetParam()); }
  Identity who() const { return std::get<1>(GetParam()); }

  // /var/tmp: a directory of user 65534 in /tmp would look like its sbx state to the escape
  // suites running meanwhile.
  TempDir ws_{"/var/tmp"};       // the workspace: the writable root
  TempDir outside_{"/var/tmp"};  // outside every writable root
  TempDir conf_{"/var/tmp"};     // the policy file
};

TEST_P(LandlockCarveOut, UserRuleInsideAWritableRootIsRefusedNamingTheRuleAndNothingRuns) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const std::string why = backend_unavailable("landlock");
  if (!why.empty()) GTEST_SKIP() << "landlock is not available here: " << why;
  SBX_REQUIRE_IDENTITY(who(), "landlock");
  const std::string inner = ws_ / "kept";
  fs::create_directories(inner);
  write_file(inner + "/file.txt", "original\n");
  const std::string policy = conf_.write(
      "policy.json", R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                     R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
                     R"({"path":")" +
                         inner + R"(","access":")" + access() +
                         R"("}],)"
                         R"("protected_names":[]},"network":{"mode":"restricted"}})");
  give_to(who(), conf_.path());
  give_to(who(), ws_.path());
  give_to(who(), outside_.path());
  const std::vector<std::string> before = listing(ws_.path());

  const RunResult r = exec_as(who(), "landlock", {"--policy", policy}, ws_.path(),
                              {"/bin/sh", "-c",
                               "echo x > kept/file.txt; echo x > kept/new.txt; echo x > ran; "
                               "echo x > " +
                                   outside_ / "ran"},
                              env_for(who()));
  EXPECT_EQ(r.code, 125) << describe(r);
  const std::string rule = "write_carveouts (needed for '" + inner + "' (" + access() +
                           ") inside '" + ws_.path() + "' (write)";
  EXPECT_NE(r.err.find(rule), std::string::npos) << "expected '" << rule << "': " << describe(r);
  EXPECT_EQ(read_file(inner + "/file.txt"), "original\n");
  EXPECT_EQ(listing(inner), std::vector<std::string>{"file.txt"});
  EXPECT_EQ(listing(ws_.path()), before) << "the command ran although the policy was refused";
  EXPECT_TRUE(listing(outside_.path()).empty())
      << "the command ran although the policy was refused";
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + name_of(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(RulesAndIdentities, LandlockCarveOut,
                         ::testing::Combine(::testing::Values(std::string("read"),
                                                              std::string("deny")),
                                            ::testing::ValuesIn(kIdentities)),
                         param_name);

}  // namespace
