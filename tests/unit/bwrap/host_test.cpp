// The host-facing pieces of the bwrap backend: the deny-glob matcher and expansion, the
// mount-point registry, and the trusted-bwrap lookup.
#include "sbx/bwrap/host.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "sbx_test/files.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace sbx::bwrap;

using Scratch = sbx::test::TempDir;

TEST(BwrapGlob, MatchesGitignoreStylePatterns) {
  EXPECT_TRUE(glob_matches("/w/**/*.pem", "/w/a.pem"));
  EXPECT_TRUE(glob_matches("/w/**/*.pem", "/w/x/y/a.pem"));
  EXPECT_FALSE(glob_matches("/w/**/*.pem", "/w/a.pem.bak"));
  EXPECT_FALSE(glob_matches("/w/*.pem", "/w/x/a.pem"));  // '*' stays within a component
  EXPECT_TRUE(glob_matches("/w/?.key", "/w/a.key"));
  EXPECT_FALSE(glob_matches("/w/?.key", "/w/ab.key"));
  EXPECT_TRUE(glob_matches("/w/[a-c]x", "/w/bx"));
  EXPECT_FALSE(glob_matches("/w/[!a-c]x", "/w/bx"));
  EXPECT_TRUE(glob_matches("/w/{.env,secrets}/**", "/w/secrets/k"));
  EXPECT_TRUE(glob_matches("/w/{.env,secrets}", "/w/.env"));
  EXPECT_FALSE(glob_matches("/w/{.env,secrets}", "/w/other"));
}

TEST(BwrapGlob, ExpandsBraces) {
  EXPECT_EQ(expand_braces("/a/{b,c}/{d,e}"),
            (std::vector<std::string>{"/a/b/d", "/a/b/e", "/a/c/d", "/a/c/e"}));
  EXPECT_EQ(expand_braces("/a/{b"), (std::vector<std::string>{"/a/{b"}));
}

TEST(BwrapGlob, ExpandsAgainstTheFilesystemAndFailsClosed) {
  Scratch s;
  fs::create_directories(s.path() + "/k/deep");
  std::ofstream(s.path() + "/a.pem") << "x";
  std::ofstream(s.path() + "/k/deep/b.pem") << "x";
  std::ofstream(s.path() + "/c.txt") << "x";
  auto matches = expand_deny_globs({s.path() + "/**/*.pem"});
  ASSERT_TRUE(matches.ok()) << matches.error();
  EXPECT_EQ(*matches, (std::vector<std::string>{s.path() + "/a.pem", s.path() + "/k/deep/b.pem"}));
  auto root = expand_deny_globs({"/**/*.pem"});
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.error().find("no literal directory prefix"), std::string::npos);
  auto many = expand_deny_globs({s.path() + "/**"}, 2);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().find("more than 2"), std::string::npos);
}

TEST(BwrapMountRegistry, RemovesTheMountPointItPlannedOnceLastOut) {
  Scratch state, ws;
  ::chmod(state.path().c_str(), 0700);
  const std::string codex = ws.path() + "/.codex";
  MountRegistry first;
  ASSERT_TRUE(first.acquire(state.path(), {codex}, {}).ok());
  ASSERT_TRUE(fs::is_socket(fs::symlink_status(codex))) << "the run makes its mount point";
  MountRegistry second;  // a concurrent run that found .codex existing
  ASSERT_TRUE(second.acquire(state.path(), {}, {codex}).ok());
  EXPECT_TRUE(first.release_and_cleanup().empty()) << "removed while another run holds it";
  EXPECT_TRUE(fs::exists(codex));
  EXPECT_EQ(second.release_and_cleanup(), std::vector<std::string>{codex});
  EXPECT_FALSE(fs::exists(codex));
}

// A run whose plan found another run's mount point (the name existing) and that takes its lock
// only after that run, last out, removed it: the name is made again and recorded, not left to
// bwrap (which would make an empty file nothing records or removes).
TEST(BwrapMountRegistry, ANameFoundExistingButRemovedBeforeTheLockIsMadeAndRemoved) {
  Scratch state, ws;
  ::chmod(state.path().c_str(), 0700);
  const std::string git = ws.path() + "/.git";
  MountRegistry first;
  ASSERT_TRUE(first.acquire(state.path(), {git}, {}).ok());
  // The second run's plan sees .git existing now; the first run ends before it locks.
  ASSERT_TRUE(fs::is_socket(fs::symlink_status(git)));
  EXPECT_EQ(first.release_and_cleanup(), std::vector<std::string>{git});
  ASSERT_FALSE(fs::exists(fs::symlink_status(git)));
  MountRegistry second;
  ASSERT_TRUE(second.acquire(state.path(), {}, {git}).ok());
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(git))) << "made again, for bwrap to mount on";
  EXPECT_EQ(second.release_and_cleanup(), std::vector<std::string>{git});
  EXPECT_FALSE(fs::exists(fs::symlink_status(git))) << "nothing left on the host";
}

// Another user's run made the mount point this run found existing, and removed it during this
// run (each user has their own registry); this run's bwrap then made an empty 0444 file to mount
// its mask on. sbx did not make that file and cannot tell it from a person's own file saved
// empty during the run (H4), so it stays and the run warns of it: sbx removes only what it made.
TEST(BwrapMountRegistry, AnEmptyFileSbxDidNotMakeIsKeptAndWarnedOf) {
  Scratch state, ws;
  ::chmod(state.path().c_str(), 0700);
  const std::string git = ws.path() + "/.git";
  ASSERT_TRUE(sbx::test::make_socket_inode(git));  // as another user's run makes it
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path(), {}, {git}).ok());
  ASSERT_EQ(::unlink(git.c_str()), 0);  // the other user's run ends
  { std::ofstream made(git); }          // bwrap's mount point for this run's mask
  ::chmod(git.c_str(), 0444);
  EXPECT_TRUE(run.release_and_cleanup().empty()) << "sbx did not make it: never removed";
  EXPECT_TRUE(fs::exists(fs::symlink_status(git)));
  ASSERT_EQ(run.kept().size(), 1u);
  EXPECT_NE(run.kept()[0].find("an empty file bwrap may have made remains at '" + git + "'"),
            std::string::npos)
      << run.kept()[0];
  EXPECT_NE(run.kept()[0].find("remove it if it is not yours"), std::string::npos);

  // H4: a person's .codex with content, saved empty during the run by an atomic replace.
  const std::string codex = ws.path() + "/.codex";
  std::ofstream(codex) << "model = \"x\"\n";
  MountRegistry keeps;
  ASSERT_TRUE(keeps.acquire(state.path(), {}, {codex}).ok());
  { std::ofstream saved(codex + ".new"); }
  fs::rename(codex + ".new", codex);
  EXPECT_TRUE(keeps.release_and_cleanup().empty());
  EXPECT_TRUE(fs::exists(codex)) << "the person's own file was removed";
  EXPECT_EQ(keeps.kept().size(), 1u);
}

// In a directory every user may write (/tmp) a mount point is recorded and removed only when no
// run of ANY user relies on it: every run with a mount point there holds a shared flock on the
// directory itself, which another user's run (whose registry this one cannot see) takes too.
// Before, such mount points stayed for good, and a socket `.git` in /tmp made another user's
// `git init /tmp` fail (only its owner can remove it from a sticky directory).
TEST(BwrapMountRegistry, AMountPointInADirectoryEveryUserMayWriteGoesWhenNoUsersRunRelies) {
  Scratch state, shared;
  ::chmod(state.path().c_str(), 0700);
  ASSERT_EQ(::chmod(shared.path().c_str(), 01777), 0);
  const std::string git = shared.path() + "/.git";
  // Another user's run in that directory: it holds the directory's lock, shared.
  const int other_users_run = ::open(shared.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(other_users_run, 0);
  ASSERT_EQ(::flock(other_users_run, LOCK_SH), 0);
  MountRegistry first;
  ASSERT_TRUE(first.acquire(state.path(), {git}, {}).ok());
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(git))) << "made, for bwrap to mount on";
  EXPECT_TRUE(first.release_and_cleanup().empty()) << "removed while another user's run relies";
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(git)));
  EXPECT_TRUE(sweep_stale_entries(state.path()).empty()) << "swept while it is relied on";
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(git)));
  // That run ends: the next run's sweep removes what the record still describes.
  ::close(other_users_run);
  EXPECT_EQ(sweep_stale_entries(state.path()), std::vector<std::string>{git});
  EXPECT_FALSE(fs::exists(fs::symlink_status(git)));
  EXPECT_TRUE(fs::is_empty(state.path())) << "the registry entry stays";
  // Nobody else there: removed at the end of the run that made it.
  const std::string codex = shared.path() + "/.codex";
  MountRegistry alone;
  ASSERT_TRUE(alone.acquire(state.path(), {codex}, {}).ok());
  EXPECT_EQ(alone.release_and_cleanup(), std::vector<std::string>{codex});
  EXPECT_FALSE(fs::exists(fs::symlink_status(codex)));
  // A lock held exclusively for good (a local user holding it on purpose): the run still goes
  // on; its mount point is made but not recorded, so it stays, as nothing can tell whether
  // another user's run relies on it.
  const int hog = ::open(shared.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_EQ(::flock(hog, LOCK_EX), 0);
  const std::string agents = shared.path() + "/.agents";
  MountRegistry held_off;
  ASSERT_TRUE(held_off.acquire(state.path(), {agents}, {}).ok());
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(agents)));
  EXPECT_TRUE(held_off.release_and_cleanup().empty());
  ::close(hog);
  EXPECT_TRUE(sweep_stale_entries(state.path()).empty());
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(agents))) << "unrecorded, so never removed";
  fs::remove(agents);
}

// A chown or chmod of the mount point during the run (a `chown -R` of the workspace by the
// user or another host process) changes its change time; it is still recognised (by inode,
// type and birth time) and removed, at the end of the run and by the sweep after a kill.
// Before, it was recognised by its change time and stayed on the host for good.
TEST(BwrapMountRegistry, AChownOrChmodOfTheMountPointDuringTheRunDoesNotKeepIt) {
  Scratch state, ws;
  ::chmod(state.path().c_str(), 0700);
  const std::string codex = ws.path() + "/.codex";
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path(), {codex}, {}).ok());
  ASSERT_TRUE(fs::is_socket(fs::symlink_status(codex)));
  ::usleep(20 * 1000);  // past a coarse clock tick, so the change time really changes
  ASSERT_EQ(::chmod(codex.c_str(), 0700), 0);
  if (::geteuid() == 0) {
    ASSERT_EQ(::lchown(codex.c_str(), 65534, 65534), 0);
  }
  EXPECT_EQ(run.release_and_cleanup(), std::vector<std::string>{codex});
  EXPECT_FALSE(fs::exists(fs::symlink_status(codex))) << "left on the host";
}

// A person's own file at the name, made after the mount point was removed by someone else: it
// may get the same inode number (ext4 and tmpfs reuse freed numbers), but not the same birth
// time, and is never removed, whatever its type.
TEST(BwrapMountRegistry, APersonsFileOnAReusedInodeNumberIsNeverRemoved) {
  Scratch state, ws;
  ::chmod(state.path().c_str(), 0700);
  const std::string codex = ws.path() + "/.codex";
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path(), {codex}, {}).ok());
  struct stat made {};
  ASSERT_EQ(::lstat(codex.c_str(), &made), 0);
  ASSERT_EQ(::unlink(codex.c_str()), 0);             // removed during the run by someone else
  ASSERT_TRUE(sbx::test::make_socket_inode(codex));  // the person's own socket there
  struct stat persons {};
  ASSERT_EQ(::lstat(codex.c_str(), &persons), 0);
  std::printf("note: the person's socket %s the inode number of the removed mount point\n",
              persons.st_ino == made.st_ino ? "reuses" : "does not reuse");
  EXPECT_TRUE(run.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(codex))) << "a person's socket was removed";
}

// The user's own directory made read-only during the run (a sandboxed `chmod 555 .`): the owner's
// write bit is added for the unlink and the mode given back. A directory of someone else that
// the user may write only through its group is never chmodded: when it turns read-only, the
// mount point stays recorded, kept() says why, and the directory's mode is untouched. Run as
// user 65534 in a child (root passes every permission check, CAP_DAC_OVERRIDE).
TEST(BwrapMountRegistry, OnlyTheUsersOwnReadOnlyDirectoryIsOpenedForTheUnlink) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become user 65534 in a child";
  Scratch top;
  ASSERT_EQ(::chmod(top.path().c_str(), 0755), 0);
  const std::string state = top.path() + "/state";
  const std::string own = top.path() + "/own";
  const std::string theirs = top.path() + "/theirs";
  ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(own.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(theirs.c_str(), 0770), 0);
  ASSERT_EQ(::chown(state.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown(own.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 0, 65534), 0);  // root's, the user writes through the group
  ASSERT_EQ(::chmod(theirs.c_str(), 0770), 0);      // mkdir's mode went through the umask
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const gid_t group = 65534;
    if (::setgroups(1, &group) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    ::close(to_child[1]);
    ::close(from_child[0]);
    MountRegistry run;
    if (!run.acquire(state, {own + "/.codex", theirs + "/.codex"}, {}).ok()) ::_exit(11);
    char byte = 'a';
    if (::write(from_child[1], &byte, 1) != 1 || ::read(to_child[0], &byte, 1) != 1) ::_exit(12);
    // Both made read-only by now (the own one by the sandboxed command, root's by its owner).
    const std::vector<std::string> removed = run.release_and_cleanup();
    if (removed != std::vector<std::string>{own + "/.codex"}) ::_exit(13);
    if (run.kept().size() != 1 || run.kept()[0].find(theirs + "/.codex") == std::string::npos)
      ::_exit(14);
    ::_exit(0);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  char byte = 0;
  ASSERT_EQ(::read(from_child[0], &byte, 1), 1);
  ASSERT_TRUE(fs::is_socket(fs::symlink_status(own + "/.codex")));
  ASSERT_TRUE(fs::is_socket(fs::symlink_status(theirs + "/.codex")));
  ASSERT_EQ(::chmod(own.c_str(), 0555), 0);
  ASSERT_EQ(::chmod(theirs.c_str(), 0750), 0);
  ASSERT_EQ(::write(to_child[1], &byte, 1), 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status << " (10 setuid, 11 acquire, 12 pipe, 13 removed, 14 kept)";
  EXPECT_FALSE(fs::exists(fs::symlink_status(own + "/.codex"))) << "the own one stayed";
  struct stat st {};
  ASSERT_EQ(::stat(own.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u) << "the user's mode was not given back";
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(theirs + "/.codex")));
  ASSERT_EQ(::stat(theirs.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u) << "another user's directory was chmodded";
  ::close(to_child[1]);
  ::close(from_child[0]);
  fs::remove(theirs + "/.codex");
}

// Runs `body` as user 65534 in a child; its exit code (10: the switch failed).
int as_user_65534(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const gid_t group = 65534;
    if (::setgroups(1, &group) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 07777;
}

// Issue #32 B1: a sandboxed `chmod 000` of a writable root the user owns ABOVE the workspace (a
// writable bind: the host's inode): sbx, the same user outside, could not search it to reach the
// mount points below, dropped their records as stale and left them on the host for good. Now
// the walk gives each of the user's own directories on the way the owner's search bit and its
// mode back after: the run's own cleanup removes them, and so does the sweep after a SIGKILL;
// the user's 000 stays. A directory on the way that is not the user's (root's, 0700 here) is
// never chmodded: the record is kept and kept() says why, and a later sweep that can reach it
// removes it. As user 65534 (root searches any directory, CAP_DAC_READ_SEARCH).
TEST(BwrapMountRegistry, AChmod000OfAWritableRootAboveTheWorkspaceIsWalkedThrough) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become user 65534 in a child";
  Scratch top;
  ASSERT_EQ(::chmod(top.path().c_str(), 0755), 0);
  const std::string state = top.path() + "/state";
  const std::string root = top.path() + "/root";  // the writable root, the user's
  const std::string ws = root + "/a/ws";          // the workspace below it
  const std::string theirs = top.path() + "/theirs";
  fs::create_directories(ws);
  fs::create_directories(theirs + "/ws");
  ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
  for (const std::string& dir : {state, root, root + "/a", ws, theirs + "/ws"})
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0) << dir;
  ASSERT_EQ(::chmod(theirs.c_str(), 0755), 0);  // root's
  const std::vector<std::string> planned = {root + "/.codex", ws + "/.codex", ws + "/.git",
                                            theirs + "/ws/.codex"};
  // The run ends after its command made both roots unsearchable: its cleanup removes what it can.
  int from_child[2];
  int to_child[2];
  ASSERT_EQ(::pipe(from_child), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const gid_t group = 65534;
    if (::setgroups(1, &group) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    MountRegistry run;
    if (!run.acquire(state, planned, {}).ok()) ::_exit(11);
    char byte = 'a';
    if (::write(from_child[1], &byte, 1) != 1 || ::read(to_child[0], &byte, 1) != 1) ::_exit(12);
    const std::vector<std::string> removed = run.release_and_cleanup();
    if (removed != std::vector<std::string>{root + "/.codex", ws + "/.codex", ws + "/.git"})
      ::_exit(13);
    if (run.kept().size() != 1 || run.kept()[0].find(theirs + "/ws/.codex") == std::string::npos)
      ::_exit(14);
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(from_child[0], &byte, 1), 1);
  for (const std::string& path : planned) ASSERT_TRUE(fs::is_socket(path)) << path;
  ASSERT_EQ(::chmod(root.c_str(), 0), 0);    // the sandboxed command's, on the user's own
  ASSERT_EQ(::chmod(theirs.c_str(), 0), 0);  // root's: never opened up by sbx
  ASSERT_EQ(::write(to_child[1], &byte, 1), 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status << " (10 setuid, 11 acquire, 12 pipe, 13 removed, 14 kept)";
  EXPECT_EQ(mode_of(root), 0u) << "the user's mode was not given back";
  EXPECT_EQ(mode_of(theirs), 0u) << "root's directory was chmodded";
  for (const int fd : {from_child[0], from_child[1], to_child[0], to_child[1]}) ::close(fd);
  ASSERT_EQ(::chmod(root.c_str(), 0755), 0);
  for (const std::string& path : {root + "/.codex", ws + "/.codex", ws + "/.git"})
    EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << path << " stayed on the host";
  EXPECT_TRUE(fs::is_socket(theirs + "/ws/.codex"));
  // Kept on record: once the directory can be searched again, the next sweep removes it.
  ASSERT_EQ(::chmod(theirs.c_str(), 0755), 0);
  EXPECT_EQ(as_user_65534([&] {
              return sweep_stale_entries(state) == std::vector<std::string>{theirs + "/ws/.codex"}
                         ? 0
                         : 1;
            }),
            0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(theirs + "/ws/.codex")));
}

// The same after a SIGKILL: the killed run's records are swept by the next run of the user
// through the writable root its command made unsearchable, whose 000 stays.
TEST(BwrapMountRegistry, AKilledRunsMountPointsBelowAChmod000RootAreSwept) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become user 65534 in a child";
  Scratch top;
  ASSERT_EQ(::chmod(top.path().c_str(), 0755), 0);
  const std::string state = top.path() + "/state";
  const std::string root = top.path() + "/root";
  const std::string ws = root + "/ws";
  fs::create_directories(ws);
  ASSERT_EQ(::mkdir(state.c_str(), 0700), 0);
  for (const std::string& dir : {state, root, ws})
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0) << dir;
  const std::vector<std::string> planned = {root + "/.agents", ws + "/.git"};
  EXPECT_EQ(as_user_65534([&] {
              auto* registry = new MountRegistry();  // never destroyed: nothing runs at the end
              const bool ok = registry->acquire(state, planned, {}).ok();
              ::kill(::getpid(), SIGKILL);
              return ok ? 0 : 1;
            }),
            128 + SIGKILL);
  for (const std::string& path : planned) ASSERT_TRUE(fs::is_socket(path)) << path;
  ASSERT_EQ(::chmod(root.c_str(), 0), 0);
  EXPECT_EQ(as_user_65534([&] {
              std::vector<std::string> removed = sweep_stale_entries(state);
              std::sort(removed.begin(), removed.end());
              return removed == std::vector<std::string>{root + "/.agents", ws + "/.git"} ? 0 : 1;
            }),
            0);
  EXPECT_EQ(mode_of(root), 0u) << "the user's mode was not given back";
  ASSERT_EQ(::chmod(root.c_str(), 0755), 0);
  for (const std::string& path : planned)
    EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << path << " stayed on the host";
  EXPECT_TRUE(fs::is_empty(state)) << "the swept records stayed";
}

// A file with content or a directory a person put in the mount point's place during the run
// (from outside every sandbox) is never removed.
TEST(BwrapMountRegistry, NeverRemovesContentOrAPersonsDirectory) {
  Scratch state, ws;
  const std::string planned = ws.path() + "/.agents";
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path(), {planned}, {}).ok());
  fs::remove(planned);
  std::ofstream(planned) << "data";
  EXPECT_TRUE(run.release_and_cleanup().empty());
  EXPECT_EQ(fs::file_size(planned), 4u);

  const std::string replaced = ws.path() + "/.codex";
  MountRegistry replacing;
  ASSERT_TRUE(replacing.acquire(state.path(), {replaced}, {}).ok());
  fs::remove(replaced);
  fs::create_directory(replaced);  // empty, but not the recorded inode
  EXPECT_TRUE(replacing.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_directory(replaced));

  const std::string mine = ws.path() + "/.git";  // existed before: no marker, never removed
  fs::create_directory(mine);
  MountRegistry other;
  ASSERT_TRUE(other.acquire(state.path(), {}, {mine}).ok());
  EXPECT_TRUE(other.release_and_cleanup().empty());
  EXPECT_TRUE(fs::exists(mine));
}

TEST(BwrapLookup, TakesBwrapOnlyFromFixedSystemPaths) {
  EXPECT_EQ(bwrap_candidates(), (std::vector<std::string>{"/usr/bin/bwrap", "/bin/bwrap"}));
  auto found = find_trusted_bwrap({});
  if (!found.ok()) GTEST_SKIP() << "bubblewrap is not installed: " << found.error();
  EXPECT_EQ(found->rfind("/usr/bin/", 0), 0u) << *found;
  // A bwrap inside a writable root is refused, whatever its ownership.
  auto refused = find_trusted_bwrap({"/usr"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("inside a writable root"), std::string::npos) << refused.error();
}

TEST(BwrapStateDir, IsPrivateToTheUser) {
  auto dir = ensure_state_dir();
  ASSERT_TRUE(dir.ok()) << dir.error();
  struct stat st {};
  ASSERT_EQ(::lstat(dir->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 077, 0u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(BwrapStateDir, RootKeepsItOutOfTmp) {
  // /tmp is writable in the workspace-write preset; a Landlock-sandboxed command of the same
  // user must not find bwrap's state there when a private place exists.
  struct stat run {};
  if (::geteuid() != 0 || ::lstat("/run", &run) != 0 || run.st_uid != 0 || (run.st_mode & 022))
    GTEST_SKIP() << "needs root and a root-owned /run not writable by others";
  auto dir = ensure_state_dir();
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(dir->rfind("/run/", 0), 0u) << *dir;
}

// A private scratch directory standing in for the state directory.
using ScratchDir = sbx::test::TempDir;

// The registry entry ("<hash>.lock" without the suffix) a run makes for one mount point.
std::string entry_base(const std::string& state, const std::string& mount_point) {
  MountRegistry probe;
  EXPECT_TRUE(probe.acquire(state, {}, {mount_point}).ok());
  std::string base;
  for (const auto& entry : fs::directory_iterator(state)) {
    const std::string name = entry.path().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0)
      base = name.substr(0, name.size() - 5);
  }
  probe.release_and_cleanup();
  return base;
}

TEST(BwrapRegistry, PlantedMarkerSymlinkIsNotWrittenThrough) {
  // Someone who can write the state directory plants "<hash>.synthetic" as a symlink to a file
  // of their choosing: recording the mount point must not create or write that file.
  ScratchDir state;
  ScratchDir work;
  const std::string mount_point = work.path() + "/.codex";
  const std::string victim = work.path() + "/victim";
  const std::string base = entry_base(state.path(), mount_point);
  ASSERT_FALSE(base.empty());
  fs::create_symlink(victim, base + ".synthetic");
  MountRegistry registry;
  ASSERT_TRUE(registry.acquire(state.path(), {mount_point}, {}).ok());
  EXPECT_FALSE(fs::exists(fs::symlink_status(victim)))
      << "the marker was written through a symlink";
  EXPECT_FALSE(fs::is_symlink(base + ".synthetic"));
  registry.release_and_cleanup();
  EXPECT_FALSE(fs::exists(fs::symlink_status(victim)));
}

TEST(BwrapRegistry, LockThatIsNotARegularFileIsRefused) {
  ScratchDir state;
  ScratchDir work;
  const std::string mount_point = work.path() + "/.codex";
  const std::string base = entry_base(state.path(), mount_point);
  ASSERT_FALSE(base.empty());
  ASSERT_EQ(::mkfifo((base + ".lock").c_str(), 0600), 0);
  MountRegistry registry;
  const sbx::Status status = registry.acquire(state.path(), {mount_point}, {});
  EXPECT_FALSE(status.ok());
}

// A run killed with SIGKILL: it acquires (and so makes and records its mount point) in a child
// that then dies without any cleanup; the kernel drops its locks.
void killed_run(const std::string& state, const std::vector<std::string>& planned) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto* registry = new MountRegistry();  // never destroyed: nothing runs at the end
    const bool ok = registry->acquire(state, planned, {}).ok();
    ::kill(::getpid(), SIGKILL);
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST(BwrapRegistry, AKilledRunsMountPointsAreRemovedByTheNextRun) {
  ScratchDir state;
  ScratchDir work;
  const std::string codex = work.path() + "/.codex";
  const std::string agents = work.path() + "/.agents";
  killed_run(state.path(), {codex, agents});
  ASSERT_TRUE(fs::is_socket(codex)) << "the killed run made no mount point";
  ASSERT_TRUE(fs::is_socket(agents));
  std::vector<std::string> removed = sweep_stale_entries(state.path());
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{agents, codex}));
  EXPECT_FALSE(fs::exists(codex));
  EXPECT_FALSE(fs::exists(agents));
  EXPECT_TRUE(fs::is_empty(state.path())) << "stale registry entries stay";
}

TEST(BwrapRegistry, SweepKeepsLiveRunsPersonsDirectoriesAndContent) {
  ScratchDir state;
  ScratchDir work;
  const std::string live = work.path() + "/.codex";
  MountRegistry running;  // a live run: its mount point and entry stay
  ASSERT_TRUE(running.acquire(state.path(), {live}, {}).ok());
  const std::string filled = work.path() + "/.agents";
  killed_run(state.path(), {filled});
  fs::remove(filled);
  std::ofstream(filled) << "written after the run";  // content: never removed
  const std::string mine = work.path() + "/.git";    // a person's empty directory, no record
  fs::create_directory(mine);
  EXPECT_TRUE(sweep_stale_entries(state.path()).empty());
  EXPECT_TRUE(fs::is_socket(live));
  EXPECT_GT(fs::file_size(filled), 0u);
  EXPECT_TRUE(fs::is_directory(mine));
  EXPECT_EQ(running.release_and_cleanup(), std::vector<std::string>{live});
  EXPECT_TRUE(fs::is_empty(state.path())) << "the last run out leaves no registry entry";
}

TEST(BwrapRegistry, StaleLockFilesAreRemoved) {
  ScratchDir state;
  ScratchDir work;
  // Entries of earlier runs whose mount points are gone (or that recorded nothing).
  for (int i = 0; i < 5; ++i) {
    const std::string gone = work.path() + "/gone" + std::to_string(i);
    killed_run(state.path(), {gone});
    fs::remove(gone);
  }
  std::ofstream(state.path() + "/00000000000000aa.lock");  // no marker at all
  std::ofstream(state.path() + "/probe.cache") << "kept";  // not a registry entry
  EXPECT_TRUE(sweep_stale_entries(state.path()).empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(state.path()), fs::directory_iterator()), 1);
  EXPECT_TRUE(fs::exists(state.path() + "/probe.cache"));
}

TEST(BwrapRegistry, NeverMakesOrRemovesAMountPointThroughASymlink) {
  // A sandboxed command can swap a directory in a writable root for a symlink; sbx works
  // outside every sandbox and must not create (or remove) a file where that symlink points.
  ScratchDir state;
  ScratchDir work;
  ScratchDir target;
  fs::create_directory_symlink(target.path(), work.path() + "/swapped");
  const std::string planned = work.path() + "/swapped/.codex";
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path(), {planned}, {}).ok());
  EXPECT_TRUE(fs::is_empty(target.path())) << "sbx made a mount point through a symlink";
  std::ofstream(target.path() + "/.codex");  // bwrap would make it in its namespace
  EXPECT_TRUE(run.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_regular_file(target.path() + "/.codex"));
}

// When sbx could not make the mount point (here its parent did not exist yet), bwrap makes an
// empty file there. sbx did not make it and cannot tell it from a person's own empty file made
// during the run, so it is kept and the run warns of it; a directory found there is not removed
// either, nor warned of.
TEST(BwrapRegistry, TheEmptyFileBwrapMadeIsKeptAndWarnedOf) {
  ScratchDir state;
  ScratchDir work;
  const std::string planned = work.path() + "/later/.codex";
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path(), {planned}, {}).ok());
  EXPECT_FALSE(fs::exists(work.path() + "/later"));
  fs::create_directory(work.path() + "/later");
  std::ofstream{planned};  // what bwrap's --ro-bind of /dev/null creates
  EXPECT_TRUE(run.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_regular_file(planned));
  ASSERT_EQ(run.kept().size(), 1u);
  EXPECT_NE(run.kept()[0].find("an empty file bwrap may have made remains at '" + planned + "'"),
            std::string::npos)
      << run.kept()[0];

  const std::string dir = work.path() + "/later2/.agents";
  MountRegistry other;
  ASSERT_TRUE(other.acquire(state.path(), {dir}, {}).ok());
  fs::create_directories(dir);
  EXPECT_TRUE(other.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(other.kept().empty());
  EXPECT_TRUE(fs::is_empty(state.path()));
}

// A name too long for a socket address through /proc/self/fd: the mount point is an empty
// regular file instead, recorded and removed the same way.
TEST(BwrapRegistry, ANameTooLongForASocketGetsAnEmptyFile) {
  ScratchDir state;
  ScratchDir work;
  const std::string planned = work.path() + "/" + std::string(120, 'n');
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path(), {planned}, {}).ok());
  const fs::file_status made = fs::symlink_status(planned);
  EXPECT_TRUE(fs::is_regular_file(made));
  EXPECT_EQ(fs::file_size(planned), 0u);
  EXPECT_EQ(made.permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_EQ(run.release_and_cleanup(), std::vector<std::string>{planned});
  EXPECT_FALSE(fs::exists(fs::symlink_status(planned)));
}

// A directory (or a symlink) that appeared at a planned mount point after the plan cannot take
// the /dev/null mask: the run is refused, naming it, nothing there is touched and the lock is
// given back.
TEST(BwrapRegistry, ADirectoryOrSymlinkAtAPlannedMountPointIsRefused) {
  ScratchDir state;
  ScratchDir work;
  ScratchDir target;
  const std::string dir = work.path() + "/.git";
  fs::create_directory(dir);
  MountRegistry run;
  const sbx::Status refused = run.acquire(state.path(), {dir}, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("'" + dir +
                                 "' was missing when the run was planned and is now "
                                 "a directory"),
            std::string::npos)
      << refused.error();
  EXPECT_TRUE(run.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(fs::is_empty(state.path())) << "the refused run kept its registry entry";

  const std::string link = work.path() + "/.codex";
  fs::create_symlink(target.path() + "/made", link);
  MountRegistry planted;
  const sbx::Status refused_link = planted.acquire(state.path(), {link}, {});
  ASSERT_FALSE(refused_link.ok());
  EXPECT_NE(refused_link.error().find("is now a symlink"), std::string::npos)
      << refused_link.error();
  EXPECT_TRUE(planted.release_and_cleanup().empty());
  EXPECT_TRUE(fs::is_empty(target.path())) << "something was created through the symlink";
  EXPECT_TRUE(fs::is_symlink(link));
}

// A killed run of an sbx version before the file mask recorded an empty DIRECTORY as its mount
// point: the sweep still removes it (and only while it is the recorded one).
TEST(BwrapRegistry, AnOlderVersionsRecordedDirectoryIsStillSwept) {
  ScratchDir state;
  ScratchDir work;
  const std::string old_mount = work.path() + "/.codex";
  const std::string base = entry_base(state.path(), old_mount);
  ASSERT_FALSE(base.empty());
  fs::create_directory(old_mount);
  struct stat st {};
  ASSERT_EQ(::lstat(old_mount.c_str(), &st), 0);
  std::ofstream(base + ".synthetic") << st.st_dev << ' ' << st.st_ino << ' ' << st.st_ctim.tv_sec
                                     << ' ' << st.st_ctim.tv_nsec << '\n'
                                     << old_mount;
  std::ofstream(base + ".lock");
  EXPECT_EQ(sweep_stale_entries(state.path()), std::vector<std::string>{old_mount});
  EXPECT_FALSE(fs::exists(old_mount));
  EXPECT_TRUE(fs::is_empty(state.path()));
}

// Another user (or their sandbox) can create any name in /tmp first; sbx's state must not be
// reachable that way, and must not depend on a directory someone else owns. (Homes and runtime
// directories below private_parent(): below /tmp they are refused, private_state_test.cpp.)
TEST(BwrapStateDir, NeverInASharedDirectoryNorInAnotherUsersOne) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory owned by another uid";
  ScratchDir home(sbx::test::private_parent());
  ScratchDir foreign(
      sbx::test::private_parent());  // a 0700 "runtime directory" that belongs to someone else
  ASSERT_EQ(::chown(foreign.path().c_str(), 65534, 65534), 0);
  StateDirSources sources;
  sources.uid = ::geteuid();
  sources.xdg_runtime_dir = foreign.path();
  sources.run_user_root = home.path() + "/no-run-user";
  sources.home = home.path();
  auto dir = ensure_state_dir(sources);
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, home.path() + "/.cache/sbx/bwrap");
  EXPECT_TRUE(fs::is_empty(foreign.path()));
  struct stat st {};
  ASSERT_EQ(::lstat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  sources.xdg_runtime_dir = "/tmp";  // world-writable: never used
  auto again = ensure_state_dir(sources);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *dir);
}

TEST(BwrapStateDir, UsesTheUsersOwnRuntimeDirectory) {
  ScratchDir runtime(sbx::test::private_parent());
  ::chmod(runtime.path().c_str(), 0700);
  StateDirSources sources;
  sources.uid = ::geteuid();
  sources.xdg_runtime_dir = runtime.path();
  auto dir = ensure_state_dir(sources);
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, runtime.path() + "/sbx-bwrap");
}

TEST(BwrapStateDir, ACacheDirectoryOfAnotherUserIsRefusedNotFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory owned by another uid";
  ScratchDir home(sbx::test::private_parent());
  fs::create_directories(home.path() + "/.cache/sbx");
  ASSERT_EQ(::chown((home.path() + "/.cache/sbx").c_str(), 65534, 65534), 0);
  StateDirSources sources;
  sources.uid = ::geteuid();
  sources.run_user_root = home.path() + "/no-run-user";
  sources.home = home.path();
  auto dir = ensure_state_dir(sources);
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("is owned by uid 65534"), std::string::npos) << dir.error();
}

TEST(BwrapStateDir, NoPrivatePlaceIsAnErrorNotTmp) {
  StateDirSources sources;
  sources.uid = ::geteuid();
  sources.run_user_root = "/nonexistent-sbx-run-user";
  auto dir = ensure_state_dir(sources);
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("no private place"), std::string::npos) << dir.error();
}

TEST(BwrapProbeCache, PlantedTemporarySymlinkIsNotWrittenThrough) {
  ScratchDir state;
  ScratchDir work;
  const std::string victim = work.path() + "/precious";
  std::ofstream(victim) << "keep\n";
  const std::string cache = state.path() + "/probe.cache";
  // The temporary name the writer uses in this process (sbx/sdk/private_state.hpp: the probe
  // runs in process here), and the name of older releases.
  fs::create_symlink(victim, cache + "." + std::to_string(::getpid()) + ".tmp");
  fs::create_symlink(victim, cache + ".tmp");
  const sbx::ProbeReport report = run_probe("", cache);
  bool all_passed = true;
  for (const sbx::ProbeCheck& check : report.checks) {
    if (check.name == "user_namespaces" || check.name == "network_namespace")
      all_passed = all_passed && check.status == sbx::CheckStatus::kPass;
  }
  if (!all_passed) GTEST_SKIP() << "bwrap cannot run here, so nothing would be cached";
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep\n");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(cache))) << "the cache was not stored";
}

}  // namespace
