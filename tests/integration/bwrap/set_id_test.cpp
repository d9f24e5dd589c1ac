// Set-user-ID and set-group-ID files cannot be planted from a bwrap sandbox: as root a
// set-user-ID copy of a program in the workspace would run as root for every user of the host.
// Each attempt must fail (the stage-2 seccomp filter answers EPERM) and, checked from the host
// afterwards, no file in the workspace carries either bit. As root and as an unprivileged user
// (sbx_test/identity.hpp), who owns the workspace and so may set both bits but for the sandbox.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/set_id_attempts.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class BwrapSetId : public ::testing::TestWithParam<Identity> {};

TEST_P(BwrapSetId, NoSetIdFileCanBeCreatedInTheWorkspace) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  TempDir ws;
  ASSERT_FALSE(ws.path().empty());
  give_to(who, ws.path());
  const RunResult r = exec_as(who, "bwrap", {"--preset", "workspace-write"}, ws.path(),
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

INSTANTIATE_TEST_SUITE_P(Identities, BwrapSetId, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
