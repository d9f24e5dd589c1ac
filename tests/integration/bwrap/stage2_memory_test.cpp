// sbx-stage2 stays out of the command's reach: run through the installed `sbx exec` (bwrap),
// the command (same uid, no capability) finds the sandbox's PID 1 and, with network mode proxy,
// the relay, and tries to read their environment, open their memory for writing, look at or
// reopen their descriptors through /proc, and copy a descriptor with pidfd_getfd. Every attempt
// must fail; the command itself still runs normally. As root and as an unprivileged user
// (sbx_test/identity.hpp): stage 2 runs as the same user as the command either way.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/stage2_attempts.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class Stage2Memory : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_IDENTITY(GetParam(), "bwrap", {probe_path()});
    ASSERT_FALSE(ws_.path().empty());
  }
  // `script` through `sbx --backends bwrap exec` as the identity, in the workspace it owns.
  RunResult sh(const std::string& script,
               const std::vector<std::string>& policy = {"--preset", "workspace-write"}) {
    give_to(GetParam(), ws_.path());
    return exec_as(GetParam(), "bwrap", policy, ws_.path(), {"/bin/sh", "-c", script},
                   env_for(GetParam()));
  }
  TempDir ws_;
};

// Stage 2 is PID 1 only where it still runs: network mode proxy (plugins/bwrap/README.md, "The
// direct launch").
TEST_P(Stage2Memory, PidOneIsNotReachable) {
  const std::string policy = ws_ / "policy.json";
  write_file(policy,
             R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [)"
             R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},)"
             R"( "network": {"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]}})");
  const RunResult r = sh(stage2_attempts_script(probe_path()), {"--policy", policy});
  expect_stage2_unreachable(r, /*expected_at_least=*/1);
  EXPECT_NE(r.out.find("stage2 1\n"), std::string::npos)
      << "PID 1 is not sbx-stage2: " << describe(r);
}

// Without stage 2 (network restricted or enabled), PID 1 is bwrap's own init: it has the
// command's uid and stays dumpable, so the direct launch hides its /proc/1 under an empty
// read-only tmpfs (kPidOneMask, plugins/bwrap direct.hpp). The command finds nothing there:
// no comm, no environ, no mem to open (for writing or at all), no descriptors, and no bwrap.
TEST_P(Stage2Memory, WithoutStageTwoPidOneIsHidden) {
  const RunResult r =
      sh("ls -A /proc/1 | wc -l; (exec 3<>/proc/1/mem) 2>/dev/null && echo "
         "OPENED; (exec 3</proc/1/mem) 2>/dev/null && echo READABLE; cat "
         "/proc/1/environ 2>/dev/null && echo ENVIRON; ls /proc/1/task "
         "2>/dev/null && echo TASKS; for p in /proc/[0-9]*; do cat $p/comm; "
         "done | grep -c -e bwrap");
  EXPECT_EQ(r.code, 1) << describe(r);  // grep -c found no bwrap
  EXPECT_EQ(r.out, "0\n0\n") << describe(r);
}

// The direct launch's waiter (`sbx-stage2 --waiter`, pid 2, the command's parent) is visible
// where PID 1 is hidden, and as far out of reach as stage 2 as PID 1: undumpable, so its
// environment, memory and descriptors need CAP_SYS_PTRACE, which the command never has.
TEST_P(Stage2Memory, TheDirectLaunchsWaiterIsNotReachable) {
  const RunResult r = sh("cat /proc/$PPID/comm; " + stage2_attempts_script(probe_path()));
  expect_stage2_unreachable(r, /*expected_at_least=*/1);
  EXPECT_EQ(r.out.rfind("sbx-stage2\n", 0), 0u) << "the command's parent: " << describe(r);
}

TEST_P(Stage2Memory, ProxyRelayIsNotReachable) {
  const std::string policy = ws_ / "policy.json";
  write_file(policy,
             R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [)"
             R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},)"
             R"( "network": {"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]}})");
  const RunResult r = sh(stage2_attempts_script(probe_path()), {"--policy", policy});
  // PID 1 and the relay.
  expect_stage2_unreachable(r, /*expected_at_least=*/2);
}

INSTANTIATE_TEST_SUITE_P(Identities, Stage2Memory, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
