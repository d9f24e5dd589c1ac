// Set-user-ID and set-group-ID files cannot be planted from a Landlock sandbox (Landlock has no
// right for modes; the stage-2 seccomp filter refuses the set-ID bits with EPERM). Checked from
// the host afterwards: no file in the workspace carries either bit. As root and as an
// unprivileged user (sbx_test/identity.hpp), who owns the workspace and so may set both bits but
// for the sandbox.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/set_id_attempts.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class LandlockSetId : public ::testing::TestWithParam<Identity> {};

TEST_P(LandlockSetId, NoSetIdFileCanBeCreatedInTheWorkspace) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "landlock");
  TempDir ws{"/var/tmp"};
  TempDir conf{"/var/tmp"};
  ASSERT_FALSE(ws.path().empty());
  ASSERT_FALSE(conf.path().empty());
  const std::string policy = conf / "policy.json";
  write_file(policy, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                     R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
                     R"("protected_names":[]},)"
                     R"("network":{"mode":"restricted"}})");
  give_to(who, ws.path());
  give_to(who, conf.path());
  const RunResult r = exec_as(who, "landlock", {"--policy", policy}, ws.path(),
                              {"/bin/sh", "-c", set_id_script(ws.path())}, env_for(who));
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const std::string& attempt : set_id_attempts()) {
    EXPECT_NE(r.out.find(attempt + "="), std::string::npos) << attempt << " did not run\n"
                                                            << describe(r);
    EXPECT_EQ(r.out.find(attempt + "=0"), std::string::npos) << attempt << " succeeded\n"
                                                             << describe(r);
  }
  EXPECT_NE(r.out.find("chmod_x=0"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("Operation not permitted"), std::string::npos) << describe(r);
  EXPECT_EQ(set_id_files(ws.path()), std::vector<std::string>{});
  EXPECT_TRUE(exists(ws / "x")) << "the copy itself is allowed; only the bits are refused";
}

INSTANTIATE_TEST_SUITE_P(Identities, LandlockSetId, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
