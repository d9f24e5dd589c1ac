// The Landlock-mode supervisor stays out of the command's reach: it is the command's parent
// (a fork of sbx, named sbx-supervisor: same uid, outside the Landlock domain, holding a copy
// of sbx's memory and the command's environment),
// and the command tries to read its environment, open its memory for writing, look at or
// reopen its descriptors through /proc, and copy a descriptor with pidfd_getfd. Every attempt
// must fail. As root and as an unprivileged user (sbx_test/identity.hpp): the supervisor runs as
// the same user as the command either way.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/stage2_attempts.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class LandlockStage2Memory : public ::testing::TestWithParam<Identity> {};

TEST_P(LandlockStage2Memory, SupervisorIsNotReachable) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "landlock", {probe_path()});
  TempDir ws;
  TempDir conf{"/var/tmp"};
  ASSERT_FALSE(ws.path().empty());
  const std::string policy = conf / "policy.json";
  write_file(policy,
             R"({"version": 1, "filesystem": {"kind": "restricted",)"
             R"( "protected_names": [], "entries": [{"path": ":root", "access": "read"},)"
             R"( {"path": ":cwd", "access": "write"}]}, "network": {"mode": "restricted"}})");
  give_to(who, ws.path());
  give_to(who, conf.path());
  const RunResult r =
      exec_as(who, "landlock", {"--policy", policy}, ws.path(),
              {"/bin/sh", "-c",
               "echo parent $PPID; " + stage2_attempts_script(probe_path(), "sbx-supervisor")},
              env_for(who));
  expect_stage2_unreachable(r, /*expected_at_least=*/1);
  // The supervisor is the command's parent.
  const std::size_t at = r.out.find("parent ");
  ASSERT_NE(at, std::string::npos) << describe(r);
  const std::string ppid = r.out.substr(at + 7, r.out.find('\n', at) - at - 7);
  EXPECT_NE(r.out.find("stage2 " + ppid + "\n"), std::string::npos)
      << "the command's parent is not the supervisor: " << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Identities, LandlockStage2Memory, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
