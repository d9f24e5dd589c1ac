// Denial classification on REAL failures: each case runs the installed
// sbx (SBX_TEST_PREFIX) so that a real backend produces a real failure, captures its exit status
// and stderr, reads which backend ran it from the `exec --json` report (last stderr line), and
// classifies that. Backends that run here: bwrap and landlock (each skipped, with the reason,
// when its probe says it is unavailable) and no sandbox at all.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sbx/core/denial.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using namespace sbx::test;  // NOLINT: test helpers

DenialAssessment classify(const JsonExec& result) {
  const std::string backend =
      result.report.contains("final") && result.report.at("final").is_string()
          ? std::string(result.report.at("final").as_string())
          : "";
  return classify_failure(FailedCommand{ExitStatus{result.run.exit_code, result.run.signal},
                                        result.command_stderr, backend});
}

class RealFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  }
  void TearDown() override {
    if (!workdir_.empty()) fs::remove(workdir_ + ".policy.json");
  }

  // Runs `script` through `backend` only (require: never unsandboxed) under a policy every
  // Linux backend can enforce: read everywhere, write the working directory (no protected
  // names, which Landlock cannot enforce).
  JsonExec under(const std::string& backend, const std::string& script) {
    const std::string policy = workdir_ + ".policy.json";  // beside the workspace: a --policy
    // file inside a writable root is kept read-only, which Landlock cannot do
    std::ofstream(policy) << R"({"version":1,"filesystem":{"kind":"restricted","entries":[
        {"path":":root","access":"read"},{"path":":cwd","access":"write"}],
        "protected_names":[]}})";
    return sbx_exec_json({"--backends", backend, "exec", "--policy", policy, "--sandbox", "require",
                          "--json", "--", "/bin/sh", "-c", script},
                         workdir_);
  }

  TempDir work_;
  const std::string workdir_ = work_.path();
};

// The same real failures through every Linux backend that can run here.
class RealBackendFailures : public RealFailures,
                            public ::testing::WithParamInterface<std::string> {};

TEST_P(RealBackendFailures, WriteOutsideTheWorkspaceIsAFilesystemDenial) {
  SBX_REQUIRE_BACKEND(GetParam());
  const std::string target = "/usr/sbx-denial-test-" + GetParam();
  const JsonExec result = under(GetParam(), "echo x > " + target);
  ASSERT_EQ(std::string(result.report.at("final").as_string()), GetParam()) << result.run.err;
  ASSERT_NE(result.run.exit_code, 0);
  const DenialAssessment verdict = classify(result);
  EXPECT_TRUE(verdict.likely_sandbox_denial) << verdict.reason << "\n" << result.run.err;
  EXPECT_EQ(verdict.kind, DenialKind::kFilesystem) << verdict.evidence;
  // bwrap mounts / read-only (EROFS); Landlock refuses the open (EACCES).
  EXPECT_TRUE(verdict.evidence.find("Read-only file system") != std::string::npos ||
              verdict.evidence.find("Permission denied") != std::string::npos)
      << verdict.evidence;
  EXPECT_NE(verdict.evidence.find(target), std::string::npos) << verdict.evidence;
  EXPECT_FALSE(fs::exists(target));
}

TEST_P(RealBackendFailures, SeccompDeniedSyscallIsClassified) {
  SBX_REQUIRE_BACKEND(GetParam());
  // unshare(CLONE_NEWUSER) is refused by sbx-stage2's seccomp filter (EPERM).
  const JsonExec result = under(GetParam(), "exec unshare --user /bin/true");
  ASSERT_EQ(std::string(result.report.at("final").as_string()), GetParam()) << result.run.err;
  ASSERT_NE(result.run.exit_code, 0) << "unshare --user succeeded inside the sandbox";
  const DenialAssessment verdict = classify(result);
  EXPECT_TRUE(verdict.likely_sandbox_denial) << verdict.reason << "\n" << result.run.err;
  EXPECT_EQ(verdict.kind, DenialKind::kSyscallFilter) << verdict.evidence;
}

TEST_P(RealBackendFailures, OrdinaryFailureIsNotADenial) {
  SBX_REQUIRE_BACKEND(GetParam());
  const JsonExec result = under(GetParam(), "ls /no-such-dir-sbx; exit 3");
  ASSERT_EQ(std::string(result.report.at("final").as_string()), GetParam()) << result.run.err;
  EXPECT_EQ(result.run.exit_code, 3);
  const DenialAssessment verdict = classify(result);
  EXPECT_FALSE(verdict.likely_sandbox_denial) << verdict.reason << ": " << verdict.evidence;
}

INSTANTIATE_TEST_SUITE_P(Linux, RealBackendFailures, ::testing::Values("bwrap", "landlock"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

TEST_F(RealFailures, Stage2FailureIsASetupFailure) {
  // sbx-stage2 refuses to run while it still holds capabilities (here: run directly as root,
  // outside bwrap), or rejects its arguments: either way it names the step and exits 125.
  const std::string stage2 = installed_prefix() + "/libexec/sbx/sbx-stage2";
  if (!fs::exists(stage2)) GTEST_SKIP() << "no installed sbx-stage2 at " << stage2;
  const std::vector<std::string> argv =
      ::geteuid() == 0 ? std::vector<std::string>{stage2, "--net", "blocked", "--", "/bin/true"}
                       : std::vector<std::string>{stage2, "--net", "blocked", "--", "true"};
  const RunResult result = run(argv);
  ASSERT_EQ(result.exit_code, 125) << result.err;
  const DenialAssessment verdict = classify_failure(
      FailedCommand{ExitStatus{result.exit_code, result.signal}, result.err, "bwrap"});
  EXPECT_TRUE(verdict.likely_sandbox_denial) << verdict.reason;
  EXPECT_EQ(verdict.kind, DenialKind::kSandboxSetup);
  EXPECT_EQ(verdict.evidence.rfind("sbx-stage2: ", 0), 0u) << verdict.evidence;
}

TEST_F(RealFailures, UnsandboxedOrdinaryFailureIsNotADenial) {
  const JsonExec result = sbx_exec_json({"exec", "--preset", "danger-full-access", "--json", "--",
                                         "/bin/sh", "-c", "cat /no-such-file-sbx; exit 2"},
                                        workdir_);
  ASSERT_EQ(result.report.at("final"), "none") << result.run.err;
  EXPECT_EQ(result.run.exit_code, 2);
  const DenialAssessment verdict = classify(result);
  EXPECT_FALSE(verdict.likely_sandbox_denial) << verdict.reason;
}

TEST_F(RealFailures, UnsandboxedPermissionErrorIsTheHostsNotTheSandboxs) {
  // The same words as a sandbox denial, from a command that ran without a sandbox.
  const JsonExec result =
      sbx_exec_json({"exec", "--preset", "danger-full-access", "--json", "--", "/bin/sh", "-c",
                     "echo 'x: Permission denied' >&2; exit 1"},
                    workdir_);
  ASSERT_EQ(result.report.at("final"), "none") << result.run.err;
  const DenialAssessment verdict = classify(result);
  EXPECT_FALSE(verdict.likely_sandbox_denial) << verdict.reason;
}

}  // namespace
}  // namespace sbx
