// Automatic fallback from bwrap to landlock: the installed sbx runs inside a bwrap sandbox
// that denies user namespaces (--unshare-user --disable-userns), with the default backend
// order. The bwrap probe must really fail to create a user namespace there, so explain and
// exec choose landlock and say why bwrap was passed over; the command runs confined.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr const char* kBwrap = "/usr/bin/bwrap";

std::vector<std::string> inside_no_userns(std::vector<std::string> sbx_args) {
  std::vector<std::string> argv = {kBwrap,           "--dev-bind",       "/",  "/",
                                   "--unshare-user", "--disable-userns", "--", sbx_path()};
  argv.insert(argv.end(), sbx_args.begin(), sbx_args.end());
  return argv;
}

class LandlockFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (!exists(kBwrap)) GTEST_SKIP() << "no " << kBwrap << " to deny user namespaces with";
    const RunResult probe = run(
        {kBwrap, "--dev-bind", "/", "/", "--unshare-user", "--disable-userns", "--", "/bin/true"},
        base_env());
    if (probe.code != 0)
      GTEST_SKIP() << "this host cannot run bwrap --disable-userns: " << describe(probe);
    write_file(conf_ / "policy.json",
               R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
               R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
               R"("protected_names":[]},"network":{"mode":"restricted"}})");
  }
  TempDir ws_{"/var/tmp"};
  TempDir conf_{"/var/tmp"};
};

TEST_F(LandlockFallback, ExplainChoosesLandlockAndSaysWhyBwrapWasPassedOver) {
  const RunResult r =
      run(inside_no_userns({"explain", "--policy", conf_ / "policy.json", "--cwd", ws_.path()}),
          base_env());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("final:              landlock"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("bwrap  unavailable: user_namespaces: "), std::string::npos) << describe(r);
  // The real cause: the kernel's refusal (max_user_namespaces 0 in that sandbox), no filter's.
  EXPECT_NE(r.out.find("user_namespaces: ENOSPC: user.max_user_namespaces is 0 here"),
            std::string::npos)
      << describe(r);
  // Outside, with user namespaces, the same policy still goes to bwrap (the preferred one).
  const RunResult host = run(
      {sbx_path(), "explain", "--policy", conf_ / "policy.json", "--cwd", ws_.path()}, base_env());
  EXPECT_NE(host.out.find("final:              bwrap"), std::string::npos) << describe(host);
}

TEST_F(LandlockFallback, ExecRunsUnderLandlockAndStaysConfined) {
  const RunResult r =
      run(inside_no_userns({"--log-level", "info", "exec", "--policy", conf_ / "policy.json",
                            "--cwd", ws_.path(), "--", "/bin/sh", "-c",
                            "echo in > in.txt; echo out > " + conf_ / "out.txt" + "; echo done"}),
          base_env());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("done"), std::string::npos) << describe(r);
  EXPECT_EQ(read_file(ws_ / "in.txt"), "in\n");
  EXPECT_FALSE(exists(conf_ / "out.txt")) << "a write outside the workspace got through";
}

TEST_F(LandlockFallback, WorkspaceWritePresetIsRefusedWhenOnlyLandlockIsLeft) {
  const std::string marker = conf_ / "ran";
  const RunResult r = run(inside_no_userns({"exec", "--preset", "workspace-write", "--cwd",
                                            ws_.path(), "--", "/usr/bin/touch", marker}),
                          base_env());
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("passed over bwrap: unavailable: user_namespaces"), std::string::npos)
      << describe(r);
  EXPECT_NE(r.err.find("passed over landlock: cannot enforce what the policy needs here: "
                       "protected_names"),
            std::string::npos)
      << describe(r);
  EXPECT_FALSE(exists(marker));
}

}  // namespace
