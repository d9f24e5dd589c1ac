// sbx's one choice of a per-user state directory (sbx/sdk/private_state.hpp, state_dir): the
// runtime directory, else ~/.cache/sbx/<name>, never a shared directory such as /tmp, and a
// directory squatted at any of those names (another owner, a symlink, a wider mode) refused
// with the reason (issue #32); nor a place below a directory that others, or a sandboxed command
// given it writable, could rename entries in (HOME=/tmp), whatever symlink leads there.
#include "sbx/sdk/private_state.hpp"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sbx/core/proxy.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using private_state::Sources;
using private_state::state_dir;
using test::TempDir;

// Sources with no runtime directory: a user of a su session, a container or CI.
Sources without_runtime_dir(const std::string& home) {
  Sources sources;
  sources.uid = ::geteuid();
  sources.run_user_root = home + "/no-run-user";
  sources.home = home;
  return sources;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// Homes and runtime directories of these tests are below private_parent(): below /tmp they
// would be refused (StateDir.AHomeBelowTmpIsRefused).
TEST(StateDir, WithoutARuntimeDirectoryItIsInTheUsersCacheNeverTmp) {
  TempDir home(test::private_parent());
  Sources sources = without_runtime_dir(home.path());
  sources.xdg_runtime_dir = "/tmp";  // world-writable, not this user's: never used
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, home.path() + "/.cache/sbx/proxy");
  EXPECT_EQ(mode_of(*dir), 0700u);
  EXPECT_EQ(mode_of(home.path() + "/.cache/sbx"), 0700u);
  Result<std::string> again = state_dir(sources, "proxy");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *dir);
}

TEST(StateDir, UsesTheUsersOwnRuntimeDirectory) {
  TempDir runtime(test::private_parent());
  ASSERT_EQ(::chmod(runtime.path().c_str(), 0700), 0);
  Sources sources = without_runtime_dir(runtime.path());
  sources.xdg_runtime_dir = runtime.path();
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, runtime.path() + "/sbx-proxy");
  EXPECT_EQ(mode_of(*dir), 0700u);
}

TEST(StateDir, NoPrivatePlaceIsAnErrorWithTheReason) {
  Sources sources;
  sources.uid = ::geteuid();
  sources.run_user_root = "/nonexistent-sbx-run-user";
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("no private place for sbx's state"), std::string::npos) << dir.error();
}

TEST(StateDir, ASymlinkSquattedAtTheNameIsRefusedNotFollowed) {
  TempDir home(test::private_parent());
  TempDir elsewhere(test::private_parent());
  ASSERT_EQ(::chmod(elsewhere.path().c_str(), 0700), 0);
  fs::create_directories(home.path() + "/.cache");
  fs::create_directory_symlink(elsewhere.path(), home.path() + "/.cache/sbx");
  Result<std::string> dir = state_dir(without_runtime_dir(home.path()), "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("is a symlink or not a directory"), std::string::npos) << dir.error();
  EXPECT_TRUE(fs::is_empty(elsewhere.path())) << "the symlink was followed";
}

TEST(StateDir, ADirectoryWithAWiderModeIsRefused) {
  TempDir home(test::private_parent());
  for (const char* level : {"/.cache", "/.cache/sbx", "/.cache/sbx/proxy"})
    ASSERT_EQ(::mkdir((home.path() + level).c_str(), 0700), 0) << level;
  ASSERT_EQ(::chmod((home.path() + "/.cache/sbx/proxy").c_str(), 0777), 0);
  Result<std::string> dir = state_dir(without_runtime_dir(home.path()), "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("has mode 0777, not 0700"), std::string::npos) << dir.error();
}

// A sandboxed command given HOME writable ran `chmod 000 ~/.cache ~/.cache/sbx` (issue #32
// B1): every later run had no state directory. A mode narrowed like that (the owner's own
// directory, no group or other bits) is given back as 0700, the cache and each level below.
TEST(StateDir, ANarrowedModeIsRepairedTo0700) {
  TempDir home(test::private_parent());
  for (const char* level : {"/.cache", "/.cache/sbx", "/.cache/sbx/proxy"})
    ASSERT_EQ(::mkdir((home.path() + level).c_str(), 0700), 0) << level;
  ASSERT_EQ(::chmod((home.path() + "/.cache/sbx/proxy").c_str(), 0500), 0);
  ASSERT_EQ(::chmod((home.path() + "/.cache/sbx").c_str(), 0000), 0);
  ASSERT_EQ(::chmod((home.path() + "/.cache").c_str(), 0000), 0);
  Result<std::string> dir = state_dir(without_runtime_dir(home.path()), "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  for (const char* level : {"/.cache", "/.cache/sbx", "/.cache/sbx/proxy"})
    EXPECT_EQ(mode_of(home.path() + level), 0700u) << level;
}

// Only a narrowing is undone: group or other bits, even without the owner's own (0070), are
// the user's choice or someone else's doing, never widened or narrowed by sbx, and refused.
TEST(StateDir, AModeWithGroupOrOtherBitsIsNotRepaired) {
  TempDir home(test::private_parent());
  for (const char* level : {"/.cache", "/.cache/sbx"})
    ASSERT_EQ(::mkdir((home.path() + level).c_str(), 0700), 0) << level;
  ASSERT_EQ(::chmod((home.path() + "/.cache/sbx").c_str(), 0070), 0);
  Result<std::string> dir = state_dir(without_runtime_dir(home.path()), "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("has mode 0070, not 0700"), std::string::npos) << dir.error();
  EXPECT_EQ(mode_of(home.path() + "/.cache/sbx"), 0070u);
  ::chmod((home.path() + "/.cache/sbx").c_str(), 0700);
}

// Another owner's directory is never changed, whatever its mode.
TEST(StateDir, ANarrowedDirectoryOfAnotherUserIsLeftAlone) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to make a directory owned by another uid (65534)";
  TempDir runtime(test::private_parent());
  ASSERT_EQ(::chmod(runtime.path().c_str(), 0700), 0);
  const std::string squat = runtime.path() + "/sbx-proxy";
  ASSERT_EQ(::mkdir(squat.c_str(), 0500), 0);
  ASSERT_EQ(::chown(squat.c_str(), 65534, 65534), 0);
  Sources sources = without_runtime_dir(runtime.path());
  sources.xdg_runtime_dir = runtime.path();
  EXPECT_FALSE(state_dir(sources, "proxy").ok());
  EXPECT_EQ(mode_of(squat), 0500u);
}

TEST(StateDir, ADirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to make a directory owned by another uid (65534)";
  TempDir runtime(test::private_parent());
  ASSERT_EQ(::chmod(runtime.path().c_str(), 0700), 0);
  const std::string squat = runtime.path() + "/sbx-proxy";
  ASSERT_EQ(::mkdir(squat.c_str(), 0700), 0);
  ASSERT_EQ(::chown(squat.c_str(), 65534, 65534), 0);
  Sources sources = without_runtime_dir(runtime.path());
  sources.xdg_runtime_dir = runtime.path();
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("is owned by uid 65534, not by uid 0"), std::string::npos)
      << dir.error();
}

// A home below `shared` (mode `mode`): <shared>/home, this user's own and 0700.
std::string home_below(const TempDir& shared, mode_t mode) {
  const std::string home = shared.path() + "/home";
  EXPECT_EQ(::mkdir(home.c_str(), 0700), 0) << home;
  EXPECT_EQ(::chmod(shared.path().c_str(), mode), 0) << shared.path();
  return home;
}

void expect_refused(const Result<std::string>& dir, const std::string& why) {
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find(why), std::string::npos) << dir.error();
  EXPECT_NE(dir.error().find("Set XDG_RUNTIME_DIR to a private runtime directory"),
            std::string::npos)
      << dir.error();
  EXPECT_NE(dir.error().find("outside shared directories such as /tmp"), std::string::npos)
      << dir.error();
}

// HOME=/tmp, as containers and CI give users: a sandboxed command with /tmp writable (the
// workspace-write preset) could rename /tmp/.cache away and plant a forged one. Refused before
// anything is made there.
TEST(StateDir, AHomeBelowTmpIsRefused) {
  TempDir home;  // in /tmp: 1777
  Result<std::string> dir = state_dir(without_runtime_dir(home.path()), "proxy");
  expect_refused(dir, "'/tmp' is writable by others (mode 1777)");
  EXPECT_NE(dir.error().find("below '" + home.path() + "/.cache'"), std::string::npos)
      << dir.error();
  EXPECT_FALSE(fs::exists(home.path() + "/.cache")) << "made in the shared directory";
}

// Sticky or not: the sticky bit keeps other users from renaming this user's entries, not a
// command running as this user.
TEST(StateDir, ATmpLikeAncestorIsRefused) {
  TempDir shared(test::private_parent());
  const std::string home = home_below(shared, 01777);
  Result<std::string> dir = state_dir(without_runtime_dir(home), "proxy");
  expect_refused(dir, "'" + shared.path() + "' is writable by others (mode 1777)");
  EXPECT_FALSE(fs::exists(home + "/.cache")) << "made below the shared directory";
}

TEST(StateDir, AGroupWritableAncestorWithoutTheStickyBitIsRefused) {
  TempDir shared(test::private_parent());
  const std::string home = home_below(shared, 0775);
  expect_refused(state_dir(without_runtime_dir(home), "proxy"),
                 "'" + shared.path() +
                     "' is writable by its group without the sticky bit "
                     "(mode 0775)");
  // With the sticky bit a member of the group cannot rename this user's entries: accepted.
  ASSERT_EQ(::chmod(shared.path().c_str(), 01775), 0);
  Result<std::string> dir = state_dir(without_runtime_dir(home), "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, home + "/.cache/sbx/proxy");
}

TEST(StateDir, AChainOf0755DirectoriesIsAccepted) {
  TempDir shared(test::private_parent());
  const std::string home = home_below(shared, 0755);
  ASSERT_EQ(::chmod(home.c_str(), 0755), 0);
  Result<std::string> dir = state_dir(without_runtime_dir(home), "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, home + "/.cache/sbx/proxy");
  EXPECT_EQ(mode_of(*dir), 0700u);
}

// The user may symlink ~/.cache: what counts is every directory on the way to where it leads.
TEST(StateDir, ASymlinkedCacheIntoASharedDirectoryIsRefused) {
  TempDir home(test::private_parent());
  TempDir shared(test::private_parent());
  const std::string target = home_below(shared, 01777);  // this user's own, 0700
  fs::create_directory_symlink(target, home.path() + "/.cache");
  expect_refused(state_dir(without_runtime_dir(home.path()), "proxy"),
                 "'" + shared.path() + "' is writable by others (mode 1777)");
  EXPECT_TRUE(fs::is_empty(target)) << "state was made below the shared directory";
  // The same through XDG_CACHE_HOME, and through a relative link in a link.
  Sources sources = without_runtime_dir(home.path());
  fs::create_directory_symlink("../" + fs::path(shared.path()).filename().string(),
                               home.path() + "/up");
  sources.xdg_cache_home = home.path() + "/up/home";
  expect_refused(state_dir(sources, "proxy"),
                 "'" + shared.path() + "' is writable by others (mode 1777)");
  EXPECT_TRUE(fs::is_empty(target)) << "state was made below the shared directory";
}

// An ancestor another (non-root) user owns: its owner may chmod it and rename what is in it.
TEST(StateDir, AnAncestorOfAnotherUserIsRefused) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to make a directory owned by another uid (65534)";
  TempDir shared(test::private_parent());
  const std::string home = home_below(shared, 0755);
  ASSERT_EQ(::chown(shared.path().c_str(), 65534, 65534), 0);
  expect_refused(state_dir(without_runtime_dir(home), "proxy"),
                 "'" + shared.path() + "' is owned by uid 65534, neither root nor this user");
}

// A runtime directory below /tmp (XDG_RUNTIME_DIR=/tmp/runtime-<user>), though this user's own
// and 0700, is not private: the state goes to the cache instead.
TEST(StateDir, ARuntimeDirectoryBelowTmpIsNotUsed) {
  TempDir runtime;  // in /tmp
  ASSERT_EQ(::chmod(runtime.path().c_str(), 0700), 0);
  TempDir home(test::private_parent());
  Sources sources = without_runtime_dir(home.path());
  sources.xdg_runtime_dir = runtime.path();
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, home.path() + "/.cache/sbx/proxy");
  EXPECT_TRUE(fs::is_empty(runtime.path()));
}

// Issue #32 B3: with a runtime directory in use, the cache fallback (~/.cache/sbx, what a later
// run without XDG_RUNTIME_DIR uses) was no state directory of the run, so a sandbox with HOME
// writable could plant one there that the later run trusted. Every place a run of this user
// could use is a candidate, made (0700) so that it can be kept read-only: the runtime
// directory's, /run/user/<uid>'s beside another XDG_RUNTIME_DIR, and the cache's.
TEST(CandidateStateDirs, EveryPlaceALaterRunOfThisUserCouldUse) {
  TempDir home(test::private_parent());
  TempDir runtime(test::private_parent());
  TempDir run_user_root(test::private_parent());
  ASSERT_EQ(::chmod(runtime.path().c_str(), 0700), 0);
  const std::string run_user = run_user_root.path() + "/" + std::to_string(::geteuid());
  ASSERT_EQ(::mkdir(run_user.c_str(), 0700), 0);
  Sources sources = without_runtime_dir(home.path());
  sources.xdg_runtime_dir = runtime.path();
  sources.run_user_root = run_user_root.path();
  const std::vector<std::string> dirs =
      private_state::candidate_state_dirs(sources, {"probe", "bwrap"});
  EXPECT_EQ(dirs, (std::vector<std::string>{runtime.path() + "/sbx-probe",
                                            runtime.path() + "/sbx-bwrap", run_user + "/sbx-probe",
                                            run_user + "/sbx-bwrap", home.path() + "/.cache/sbx"}));
  for (const std::string& dir : dirs) EXPECT_EQ(mode_of(dir), 0700u) << dir;
  // The one in use is among them.
  Result<std::string> in_use = state_dir(sources, "bwrap");
  ASSERT_TRUE(in_use.ok()) << in_use.error();
  EXPECT_EQ(*in_use, runtime.path() + "/sbx-bwrap");
  // XDG_CACHE_HOME and ~/.cache are both places a run could use.
  TempDir cache(test::private_parent());
  ASSERT_EQ(::chmod(cache.path().c_str(), 0700), 0);
  sources.xdg_cache_home = cache.path();
  const std::vector<std::string> with_cache = private_state::candidate_state_dirs(sources, {});
  EXPECT_EQ(with_cache,
            (std::vector<std::string>{cache.path() + "/sbx", home.path() + "/.cache/sbx"}));
}

// Red team round 4: a run with HOME set elsewhere (per task) and the usual home writable moved
// the usual home's ~/.cache aside; the passwd home's cache is a candidate too.
TEST(CandidateStateDirs, ThePasswdHomesCacheCountsWhenHomeIsElsewhere) {
  TempDir usual(test::private_parent());
  TempDir task(test::private_parent());
  Sources sources = without_runtime_dir(task.path());
  sources.passwd_home = usual.path();
  EXPECT_EQ(private_state::candidate_state_dirs(sources, {}),
            (std::vector<std::string>{task.path() + "/.cache/sbx", usual.path() + "/.cache/sbx"}));
  sources.passwd_home = task.path();
  EXPECT_EQ(private_state::candidate_state_dirs(sources, {}),
            (std::vector<std::string>{task.path() + "/.cache/sbx"}));
}

// A cache below a shared directory is no place for state (StateDir.AHomeBelowTmpIsRefused), so
// no candidate either: nothing is made there.
TEST(CandidateStateDirs, NothingIsMadeBelowASharedDirectory) {
  TempDir home;  // in /tmp: 1777
  const std::vector<std::string> dirs =
      private_state::candidate_state_dirs(without_runtime_dir(home.path()), {"bwrap"});
  EXPECT_TRUE(dirs.empty()) << dirs.front();
  EXPECT_FALSE(fs::exists(home.path() + "/.cache"));
}

// Root with a usable /run never gets to the cache (runtime_base picks /run whatever the
// environment): root's cache is no candidate, and a HOME workspace of root keeps running under
// Landlock (LandlockStateDir.AWorkspaceHoldingTheStateDirectoryIsRefusedWithTheFix/root).
TEST(CandidateStateDirs, RootWithItsRunDirectoryHasNoCacheCandidate) {
  if (::geteuid() != 0) GTEST_SKIP() << "root's candidates: needs uid 0";
  TempDir home(test::private_parent());
  TempDir run(test::private_parent());
  Sources sources = without_runtime_dir(home.path());
  sources.root_run = run.path();
  EXPECT_EQ(private_state::candidate_state_dirs(sources, {"bwrap"}),
            std::vector<std::string>{run.path() + "/sbx-bwrap"});
  EXPECT_FALSE(fs::exists(home.path() + "/.cache"));
}

// The proxy's socket directories live there too: never under /tmp, whatever the host offers.
TEST(StateDir, TheProxyUsesIt) {
  Result<std::string> parent = proxy::private_runtime_parent();
  if (!parent.ok()) {
    EXPECT_NE(parent.error().find("never puts it in a shared directory"), std::string::npos)
        << parent.error();
    return;
  }
  Result<std::string> expected = state_dir(private_state::current_sources(), "proxy");
  ASSERT_TRUE(expected.ok()) << expected.error();
  EXPECT_EQ(*parent, *expected);
  EXPECT_NE(parent->rfind("/tmp/", 0), 0u) << *parent;
}

// caller_confinement() in a forked child after `change` (which returns false when it cannot be
// made here): 0 = the key changed, 1 = it did not, 2 = the change could not be made.
int key_changes_after(bool (*change)()) {
  const pid_t child = ::fork();
  if (child == 0) {
    const std::string before = private_state::caller_confinement();
    if (before.empty()) ::_exit(1);
    if (!change()) ::_exit(2);
    ::_exit(private_state::caller_confinement() != before ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}

// An allow-everything filter: the same behaviour, one more filter (a container's profile).
bool add_seccomp_filter() {
  struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog program = {1, &allow};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

bool drop_a_bounding_capability() { return ::prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) == 0; }

bool enter_a_new_uts_namespace() { return ::unshare(CLONE_NEWUTS) == 0; }

// A probe answer kept outside a container-like confinement is never reused inside it
// (issue #38): the key of kept answers changes with seccomp filters, capabilities and
// namespaces.
TEST(CallerConfinement, ChangesWithSeccompCapabilitiesAndNamespaces) {
  EXPECT_NE(private_state::caller_confinement().find("Seccomp:"), std::string::npos);
  EXPECT_EQ(private_state::caller_confinement(), private_state::caller_confinement());
  EXPECT_EQ(key_changes_after(add_seccomp_filter), 0);
  if (::geteuid() != 0) GTEST_SKIP() << "dropping a capability and unshare need root";
  EXPECT_EQ(key_changes_after(drop_a_bounding_capability), 0);
  EXPECT_EQ(key_changes_after(enter_a_new_uts_namespace), 0);
}

}  // namespace
}  // namespace sbx
