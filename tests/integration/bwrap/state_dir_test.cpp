// sbx's per-user state directories against a bwrap sandbox that may write what holds them
// (issue #32, red team round 2), driving the installed sbx as root and as user 65534:
//   * B3: every place a later run of the user could keep its state is read-only in the sandbox,
//     not only the one this run uses: with XDG_RUNTIME_DIR in use, the fallback of a run
//     without it (the user's ~/.cache/sbx, root's /run/sbx-*) cannot be planted;
//   * B2: a sandboxed chmod that widens a directory on the way to the state directory (`chmod
//     1777 ~/.cache` with HOME writable) is set back when the run ends, so later runs keep
//     their state and trust nothing planted (core/src/run/state_guard.cpp);
//   * a symlinked ~/.cache works, and a writable root holding it is refused (rounds 5, 6).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class StateDirCandidates : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  }
};

// ":root" readable, ":cwd" and `also` (if given) writable, the default protected names.
std::string state_policy(const TempDir& dir, const std::string& also = "") {
  std::string entries = R"({"path":":root","access":"read"},{"path":":cwd","access":"write"})";
  if (!also.empty()) entries += R"(,{"path":")" + also + R"(","access":"write"})";
  return dir.write("policy.json", R"({"version":1,"filesystem":{"kind":"restricted","entries":[)" +
                                      entries +
                                      R"(],"protected_names":[".git",".codex",".agents"]},)"
                                      R"("network":{"mode":"restricted"}})");
}

// env_for(who) with HOME=`home`, no XDG_* variable, and XDG_RUNTIME_DIR=`runtime` if given.
std::vector<std::string> state_env(Identity who, const std::string& home,
                                   const std::string& runtime = "") {
  std::vector<std::string> env;
  for (const std::string& entry : env_for(who))
    if (entry.rfind("HOME=", 0) != 0 && entry.rfind("XDG_", 0) != 0) env.push_back(entry);
  env.push_back("HOME=" + home);
  if (!runtime.empty()) env.push_back("XDG_RUNTIME_DIR=" + runtime);
  return env;
}

// Why runs of `who` without a runtime directory would not keep their state in ~/.cache/sbx
// (root: /run, which the tests expect), or "".
std::string why_state_not_in_cache(Identity who) {
  const std::string run_user = "/run/user/" + std::to_string(uid_of(who));
  if (who != Identity::kRoot && exists(run_user))
    return run_user + " exists here: the state would go there";
  return "";
}

// Runs of one identity with a private HOME and no XDG_* variable: the policy (state_policy),
// its environment and a workspace `later` for the runs after the attack.
struct CacheStateRuns {
  explicit CacheStateRuns(Identity who)
      : home(who), policy(state_policy(conf)), env(state_env(who, home.path())) {
    give_to(who, conf.path());
    give_to(who, later.path());
  }
  PrivateHome home;
  TempDir conf, later;
  std::string policy;
  std::vector<std::string> env;
};

mode_t state_mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 07777;
}

// B3: XDG_RUNTIME_DIR names a private runtime directory, so this run keeps its state there. A
// later run without it keeps its state in the fallback: the user's ~/.cache/sbx, root's /run
// (runtime_base). Before, only the directory in use was read-only in the sandbox: a command
// with HOME (root: /run) writable planted a state directory in the fallback, and the later run
// found it private and used it. Now every such place is read-only: nothing is planted, and the
// later run's state there is its own.
TEST_P(StateDirCandidates, WithARuntimeDirectoryInUseTheFallbackCannotBePlanted) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  PrivateHome home(who);
  TempDir runtime(private_parent());  // mkdtemp: 0700
  give_to(who, runtime.path());
  TempDir conf, later;
  give_to(who, conf.path());
  give_to(who, later.path());
  const bool root = who == Identity::kRoot;
  // The fallback's parent made writable: root's state there is /run/sbx-*.
  const std::string fallback = root ? "/run/sbx-bwrap" : home.path() + "/.cache/sbx/bwrap";
  const std::string planted = fallback + "/planted-" + std::to_string(::getpid());
  const std::string policy = state_policy(conf, root ? "/run" : "");
  std::vector<std::string> env = state_env(who, home.path(), runtime.path());
  env.push_back("F=" + fallback);
  env.push_back("P=" + planted);
  // The user's probe cache too, in the test's own home; never root's, which every root run of
  // sbx on this host reads.
  env.push_back("C=" + (root ? planted : fallback + "/probe.cache"));
  const RunResult r =
      exec_as(who, "bwrap", {"--policy", policy}, home.path(),
              {"/bin/sh", "-c",
               "mkdir -p \"$F\" 2>/dev/null; echo forged > \"$P\" 2>/dev/null && echo PLANTED; "
               "echo forged > \"$C\" 2>/dev/null && echo PLANTED; echo ran"},
              env);
  const bool planted_file = exists(planted);
  ::unlink(planted.c_str());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "ran\n") << "the fallback state directory was writable: " << describe(r);
  EXPECT_FALSE(planted_file) << planted;
  EXPECT_TRUE(exists(runtime / "sbx-bwrap")) << "the run did not use the runtime directory";
  // The later run, without XDG_RUNTIME_DIR, uses the fallback: nothing forged in it.
  const RunResult next = exec_as(who, "bwrap", {"--policy", state_policy(conf)}, later.path(),
                                 {"/bin/true"}, state_env(who, home.path()));
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(state_mode_of(fallback), 0700u) << fallback;
  EXPECT_EQ(read_file(fallback + "/probe.cache").find("forged"), std::string::npos);
}

// B2: HOME as the workspace, no runtime directory for user 65534 (its state in ~/.cache/sbx).
// The command widened ~/.cache (`chmod 1777`, sticky and world-writable; and the home itself,
// `chmod 777`): a read-only ~/.cache/sbx does not stop a chmod of what holds it. Every later
// run then refused the state directory below a directory others may write: no registry, its
// mount points left on the host. Now the run sets both back when its command has ended, with a
// warning, and the next run keeps its state and leaves nothing. Root keeps its state in /run,
// outside HOME: its modes there are not on the way to any state directory and stay as the
// command set them.
TEST_P(StateDirCandidates, AModeWidenedAboveTheStateDirectoryIsSetBackWhenTheRunEnds) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  if (const std::string why = why_state_not_in_cache(who); !why.empty()) GTEST_SKIP() << why;
  const CacheStateRuns runs(who);
  const PrivateHome& home = runs.home;
  const TempDir& later = runs.later;
  const std::string& policy = runs.policy;
  const std::vector<std::string>& env = runs.env;
  ASSERT_EQ(::mkdir((home / ".cache").c_str(), 0700), 0);  // root's too: nothing makes it
  give_to(who, home / ".cache");
  const RunResult first =
      exec_as(who, "bwrap", {"--policy", policy}, later.path(), {"/bin/true"}, env);
  ASSERT_EQ(first.code, 0) << describe(first);
  ASSERT_EQ(state_mode_of(home / ".cache"), 0700u);
  const RunResult chmod = exec_as(
      who, "bwrap", {"--policy", policy}, home.path(),
      {"/bin/sh", "-c", "chmod 1777 \"$HOME/.cache\" && chmod 777 \"$HOME\" && echo done"}, env);
  ASSERT_EQ(chmod.code, 0) << describe(chmod);
  ASSERT_EQ(chmod.out, "done\n") << describe(chmod);
  const RunResult next =
      exec_as(who, "bwrap", {"--policy", policy}, later.path(), {"/bin/true"}, env);
  if (who == Identity::kRoot) {
    EXPECT_EQ(state_mode_of(home / ".cache"), 01777u) << "set back, though no state lies below it";
    EXPECT_EQ(chmod.err.find("changed the mode"), std::string::npos) << describe(chmod);
  } else {
    EXPECT_EQ(state_mode_of(home / ".cache"), 0700u) << "not set back: " << describe(chmod);
    EXPECT_EQ(state_mode_of(home.path()), 0700u) << "not set back: " << describe(chmod);
    EXPECT_NE(chmod.err.find("sbx: warning: the sandboxed command changed the mode of '" +
                             home.path() + "/.cache' from 0700 to 1777: '" + home.path() +
                             "/.cache' is writable by others (mode 1777), and sbx's state "
                             "directories lie below it (a later run would refuse them); sbx set "
                             "it back to 0700"),
              std::string::npos)
        << describe(chmod);
    EXPECT_NE(chmod.err.find("changed the mode of '" + home.path() + "' from 0700 to 0777"),
              std::string::npos)
        << describe(chmod);
    EXPECT_EQ(state_mode_of(home / ".cache/sbx/bwrap"), 0700u);
  }
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(next.err, "") << "the later run lost its state: " << describe(next);
  EXPECT_TRUE(listing(later.path()).empty()) << "mount points left on the host";
  ::chmod(home.path().c_str(), 0700);
  ::chmod((home / ".cache").c_str(), 0700);
}

// A symlinked ~/.cache (the cache on another disk, common): before, every run failed with 125,
// its read-only copy of ~/.cache/sbx refused as a bind source through a symlink; now the state
// directory is bound by its real path. A symlink cannot be kept read-only (a mount follows it),
// so with HOME as a writable root a command could repoint it at a directory it filled, which a
// run started meanwhile would trust as its state (red team round 6): such a run is refused
// (125, naming the link), and nothing is repointed. Root keeps its state in /run: its ~/.cache
// is not on the way, and the run goes ahead.
TEST_P(StateDirCandidates, ASymlinkedCacheWorksAndAWritableRootHoldingItIsRefused) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  if (const std::string why = why_state_not_in_cache(who); !why.empty()) GTEST_SKIP() << why;
  const CacheStateRuns runs(who);
  const PrivateHome& home = runs.home;
  const std::string disk = home / "disk-cache";
  ASSERT_EQ(::mkdir(disk.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(disk.c_str(), (home / ".cache").c_str()), 0);
  give_to(who, disk);
  give_to(who, home / ".cache");
  const RunResult first =
      exec_as(who, "bwrap", {"--policy", runs.policy}, runs.later.path(), {"/bin/true"}, runs.env);
  EXPECT_EQ(first.code, 0) << describe(first);
  EXPECT_EQ(first.err, "") << describe(first);
  const RunResult repoint = exec_as(
      who, "bwrap", {"--policy", runs.policy}, home.path(),
      {"/bin/sh", "-c",
       "mkdir -p \"$HOME/forged/sbx/bwrap\" && ln -sfn \"$HOME/forged\" \"$HOME/.cache\" && "
       "echo done"},
      runs.env);
  char target[4096] = {};
  ASSERT_GT(::readlink((home / ".cache").c_str(), target, sizeof target - 1), 0);
  if (who == Identity::kRoot) {
    EXPECT_EQ(repoint.code, 0) << describe(repoint);
    EXPECT_EQ(std::string(target), home / "forged") << "root's state is not below ~/.cache";
  } else {
    EXPECT_EQ(repoint.code, 125) << describe(repoint);
    EXPECT_EQ(repoint.out, "") << describe(repoint);
    EXPECT_NE(repoint.err.find("writable root '" + home.path() + "' holds '" + home.path() +
                               "/.cache', a symlink on the way to sbx's state"),
              std::string::npos)
        << describe(repoint);
    EXPECT_EQ(std::string(target), disk) << "repointed: " << describe(repoint);
  }
  const RunResult next =
      exec_as(who, "bwrap", {"--policy", runs.policy}, runs.later.path(), {"/bin/true"}, runs.env);
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(next.err, "") << "the later run lost its state: " << describe(next);
  EXPECT_TRUE(listing(runs.later.path()).empty()) << "mount points left on the host";
}

INSTANTIATE_TEST_SUITE_P(Identities, StateDirCandidates, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
