// Protected names created below the top of a writable root (where no backend keeps them) are
// reported after the run: `exec --json` lists them in "protected_names_created" and text mode
// prints one warning line each. Driven through the installed sbx with bwrap and with Landlock.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

// The workspace writable, without protected names, so Landlock (which cannot keep them) runs it
// too; the nested names are reported whatever the policy lists. /tmp stays read-only: other
// programs creating repositories there at the same time must not show up in the lists.
std::string write_policy(const std::string& dir) {
  const std::string path = dir + "/policy.json";
  write_file(path, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                   R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
                   R"("protected_names":[]},"network":{"mode":"restricted"}})");
  return path;
}

// The last stderr line: the --json report.
std::string report_of(const RunResult& r) {
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  const std::size_t newline = err.rfind('\n');
  return newline == std::string::npos ? err : err.substr(newline + 1);
}

class CreatedNames : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (!exists("/usr/bin/git")) GTEST_SKIP() << "git is not installed (/usr/bin/git)";
    ASSERT_FALSE(ws_.path().empty());
    policy_ = write_policy(conf_.path());
  }
  RunResult exec(const std::string& script, bool json) {
    std::vector<std::string> argv = {sbx_path(), "--backends", GetParam(), "exec",
                                     "--policy", policy_,      "--cwd",    ws_.path()};
    if (json) argv.push_back("--json");
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    std::vector<std::string> env = base_env();
    env.push_back("GIT_CONFIG_NOSYSTEM=1");
    env.push_back("HOME=" + ws_.path());  // git must not need the real home
    return run(argv, env);
  }
  TempDir ws_;
  TempDir conf_{"/var/tmp"};
  std::string policy_;
};

TEST_P(CreatedNames, NestedGitInitIsListedAndWarned) {
  const RunResult r = exec(
      "mkdir -p vendor/lib && cd vendor/lib && git init -q && "
      "git config core.fsmonitor 'touch /tmp/never'",
      true);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(report_of(r).find("\"protected_names_created\":[\"" + ws_.path() +
                              "/vendor/lib/.git\"],\"protected_names_truncated\":false"),
            std::string::npos)
      << describe(r);

  ::usleep(30 * 1000);  // past the coarse clock tick of the first run's last write
  const RunResult text = exec("mkdir -p deep/er && cd deep/er && git init -q", false);
  ASSERT_EQ(text.code, 0) << describe(text);
  EXPECT_NE(text.err.find("sbx: warning: the command created or changed " + ws_.path() +
                          "/deep/er/.git; a later git command there runs its hooks/config "
                          "outside the sandbox\n"),
            std::string::npos)
      << describe(text);
  // Only what this run created: vendor/lib/.git was the earlier run's.
  EXPECT_EQ(text.err.find("vendor/lib/.git"), std::string::npos) << describe(text);
}

TEST_P(CreatedNames, RunCreatingNothingListsNothing) {
  const RunResult r = exec("echo hi > note.txt", true);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(report_of(r).find("\"protected_names_created\":[],"), std::string::npos) << describe(r);
  EXPECT_EQ(r.err.find("sbx: warning"), std::string::npos) << describe(r);
}

TEST_P(CreatedNames, ExistingNestedGitNotTouchedIsNotListed) {
  const RunResult init = run({"/usr/bin/git", "init", "-q", ws_ / "old/repo"},
                             {"PATH=/usr/bin:/bin", "HOME=" + ws_.path(), "GIT_CONFIG_NOSYSTEM=1"});
  ASSERT_EQ(init.code, 0) << describe(init);
  // Past the coarse clock tick of its creation, so "created during the run" cannot match it.
  ::usleep(100 * 1000);
  const RunResult r =
      exec("echo hi > old/note.txt && mkdir -p new/a && cd new/a && git init -q", true);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(report_of(r).find("\"protected_names_created\":[\"" + ws_.path() + "/new/a/.git\"]"),
            std::string::npos)
      << describe(r);
}

TEST_P(CreatedNames, ChangedConfigOfAnExistingNestedRepoIsListed) {
  const RunResult init = run({"/usr/bin/git", "init", "-q", ws_ / "old/repo"},
                             {"PATH=/usr/bin:/bin", "HOME=" + ws_.path(), "GIT_CONFIG_NOSYSTEM=1"});
  ASSERT_EQ(init.code, 0) << describe(init);
  ::usleep(100 * 1000);
  const RunResult r = exec("cd old/repo && git config core.fsmonitor 'touch /tmp/never'", true);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(report_of(r).find("\"protected_names_created\":[\"" + ws_.path() + "/old/repo/.git\"]"),
            std::string::npos)
      << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Backends, CreatedNames, ::testing::Values("bwrap", "landlock"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
