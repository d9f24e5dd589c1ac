// The policy file given with --policy stays read-only in every sandbox, whatever the policy
// grants: a command must not choose the sandbox of the next run started with the same file.
// Through bwrap every attempt to rewrite, replace or move the file away fails and the host file
// is unchanged afterwards; through Landlock (which cannot carve out) the run is refused with
// the file named; a policy file outside the writable roots changes nothing. As root and as an
// unprivileged user (sbx_test/identity.hpp), who owns the policy file and its directory, so that
// only the sandbox stops the rewrite.
#include <gtest/gtest.h>

#include <cerrno>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

// The workspace-write shape without protected names, so only the policy file's carve-out could
// stop Landlock from running it.
constexpr const char* kPolicy =
    R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
    R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
    R"({"path":":slash_tmp","access":"write"}],"protected_names":[]},)"
    R"("network":{"mode":"restricted"}})";

class PolicyProtect : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    // Both backends: the identity must be able to run each.
    SBX_REQUIRE_IDENTITY(who(), "bwrap");
    SBX_REQUIRE_IDENTITY(who(), "landlock");
    ASSERT_FALSE(ws_.path().empty());
    ASSERT_EQ(::mkdir((ws_ / "conf").c_str(), 0755), 0) << std::strerror(errno);
    policy_ = ws_ / "conf/pol.json";
    write_file(policy_, kPolicy);
    give_to(who(), ws_.path());
    before_ = state_of(policy_);
  }
  Identity who() const { return GetParam(); }
  RunResult exec(const std::string& backend, const std::string& policy, const std::string& script) {
    give_to(who(), ws_.path());
    // No PWD in the environment, as before: bwrap keeps sbx-stage2 (installed_sbx.hpp).
    return run_as(who(),
                  exec_argv(backend, {"--policy", policy}, ws_.path(), {"/bin/sh", "-c", script}),
                  env_for(who()));
  }
  // Every attempt prints "WROTE <what>" when it succeeds; none may.
  std::string attack_script() const {
    const std::string p = policy_;
    const std::string conf = ws_ / "conf";
    std::string s;
    s += "echo '{}' > '" + p + "' 2>/dev/null && echo 'WROTE write'; ";
    s += "echo '{}' >> '" + p + "' 2>/dev/null && echo 'WROTE append'; ";
    s += "echo '{}' > /tmp/sbx-pol-$$; mv /tmp/sbx-pol-$$ '" + p +
         "' 2>/dev/null && echo 'WROTE mv-over'; rm -f /tmp/sbx-pol-$$; ";
    s += "echo '{}' > '" + conf + "/new.json'; mv '" + conf + "/new.json' '" + p +
         "' 2>/dev/null && echo 'WROTE rename-over'; ";
    s += "ln -s /tmp/sbx-evil '" + conf + "/swap' && mv -T '" + conf + "/swap' '" + p +
         "' 2>/dev/null && echo 'WROTE symlink-swap'; ";
    s += "mv '" + p + "' '" + p + ".old' 2>/dev/null && echo 'WROTE mv-away'; ";
    s += "rm -f '" + p + "' 2>/dev/null; [ -e '" + p + "' ] || echo 'WROTE rm'; ";
    s += "mv '" + conf + "' '" + conf + ".old' 2>/dev/null && echo 'WROTE mv-parent'; ";
    s += "echo ok > '" + ws_.path() + "/workspace-ok' && echo 'workspace writable'";
    return s;
  }
  void expect_unchanged() {
    const FileState after = state_of(policy_);
    EXPECT_EQ(after.inode, before_.inode) << policy_ << " was replaced";
    EXPECT_EQ(after.content, before_.content) << policy_ << " was changed";
  }
  TempDir ws_{"/var/tmp"};
  std::string policy_;
  FileState before_;
};

TEST_P(PolicyProtect, BwrapCannotRewriteReplaceOrMoveThePolicyFile) {
  const RunResult r = exec("bwrap", policy_, attack_script());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("workspace writable"), std::string::npos) << describe(r);
  expect_unchanged();
}

// The policy named through a symlink in the workspace: the real file is what is protected.
TEST_P(PolicyProtect, BwrapProtectsTheRealFileBehindASymlink) {
  const std::string link = ws_ / "link.json";
  ASSERT_EQ(::symlink(policy_.c_str(), link.c_str()), 0) << std::strerror(errno);
  const RunResult r = exec("bwrap", link, attack_script());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << describe(r);
  expect_unchanged();
}

TEST_P(PolicyProtect, ExplainMarksThePolicyFileReadOnlyAlways) {
  const RunResult r = run_as(
      who(), {sbx_path(), "explain", "--policy", policy_, "--cwd", ws_.path()}, env_for(who()));
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::size_t at = r.out.find("  " + policy_ + " ");
  ASSERT_NE(at, std::string::npos) << describe(r);
  const std::size_t end = r.out.find('\n', at);
  EXPECT_NE(r.out.substr(at, end - at).find("policy file: read only (always)"), std::string::npos)
      << describe(r);
}

TEST_P(PolicyProtect, LandlockRefusesNamingThePolicyFile) {
  const std::string marker = ws_ / "ran";  // writable: only a refusal keeps it absent
  const RunResult r =
      exec("landlock", policy_, "echo '{}' > '" + policy_ + "'; touch '" + marker + "'");
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("the policy file '" + policy_ + "'"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("keep the policy file outside the writable roots"), std::string::npos)
      << describe(r);
  EXPECT_FALSE(exists(marker)) << "the command ran although the policy was refused";
  expect_unchanged();
}

// A policy read from a pipe has no file on disk to protect: it runs as before.
TEST_P(PolicyProtect, PolicyFromAPipeStillRuns) {
  // The pipe is made by a shell of the identity's: /dev/stdin reopens it through /proc, which a
  // pipe of the test's own (root's, mode 0600) would refuse to user 65534.
  const RunResult r = run_as(who(),
                             {"/bin/sh", "-c",
                              "cat | " + sbx_path() +
                                  " --backends bwrap exec --policy /dev/stdin "
                                  "--cwd '" +
                                  ws_.path() + "' -- /bin/sh -c 'echo ran'"},
                             env_for(who()), kPolicy);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "ran\n") << describe(r);
}

// Outside the writable roots the file needs no carve-out, and Landlock runs the command.
TEST_P(PolicyProtect, LandlockRunsWithThePolicyFileOutsideTheWritableRoots) {
  TempDir conf{"/var/tmp"};
  const std::string outside = conf / "pol.json";
  write_file(outside, kPolicy);
  give_to(who(), conf.path());
  const RunResult r = exec("landlock", outside, "echo ok > '" + ws_.path() + "/ran'");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(exists(ws_ / "ran")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Identities, PolicyProtect, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
