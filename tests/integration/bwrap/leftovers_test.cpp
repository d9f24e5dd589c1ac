// Protecting a missing name (.git, .codex, .agents at the top of a writable root) never leaves an
// object on the host that blocks the user's own programs or later runs (issue #32, 6c). Under
// bwrap the mask needs a mount point on the host for the run, a socket inode sbx makes and
// removes (plugins/bwrap/README.md, "Missing protected names leave nothing behind"). Each case
// drives the installed sbx as root and as user 65534 and checks the host afterwards:
//   * a chown/chmod of the workspace during the run (its change time moves) does not keep the
//     mount points on the host;
//   * a sandboxed `chmod 555 .` of the workspace the user owns does not either, at the end of
//     the run or, after a SIGKILL, at the next run's sweep; the user's mode is kept;
//   * in a directory every user may write (sticky, like /tmp) the mount points go when the last
//     run of any user there ends, never while another user's run relies on them, and another
//     user can then `git init` there;
//   * a missing settings directory in such a directory (XDG_CONFIG_HOME=/tmp/cfg) blocks no later
//     run;
//   * a person's own `.codex` saved empty during the run is kept (sbx removes only what it made);
//   * with HOME in /tmp and no runtime directory no state is kept there: the reason is shown.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/last_close.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

const std::vector<std::string> kNames = {".git", ".codex", ".agents"};

// :cwd and `also` (if given) writable, the default protected names kept at the top of each.
std::string write_policy(const TempDir& dir, const std::string& also = "") {
  std::string entries = R"({"path":":root","access":"read"},{"path":":cwd","access":"write"})";
  if (!also.empty()) entries += R"(,{"path":")" + also + R"(","access":"write"})";
  return dir.write("policy.json", R"({"version":1,"filesystem":{"kind":"restricted","entries":[)" +
                                      entries +
                                      R"(],"protected_names":[".git",".codex",".agents"]},)"
                                      R"("network":{"mode":"restricted"}})");
}

bool eventually(const std::function<bool()>& condition, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

// Starts argv (output to `log`) in the background; returns its pid (sbx's own: setpriv execs it).
// The exit code of `pid`, waited for at most `seconds` (then killed: -1).
int wait_exit(pid_t pid, int seconds) {
  int status = 0;
  const bool ended = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, seconds);
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A background `sbx exec` as `who` in `ws`; `script` runs inside.
pid_t start_exec(Identity who, const std::string& policy, const std::string& ws,
                 const std::string& script, const std::string& log) {
  return start_in_background(
      argv_as(who, exec_argv("bwrap", {"--policy", policy}, ws, {"/bin/sh", "-c", script})),
      with_pwd(env_for(who), ws), log);
}

std::string socket_names_in(const std::string& dir) {
  std::string out;
  for (const std::string& name : kNames) {
    struct stat st {};
    if (::lstat((dir + "/" + name).c_str(), &st) == 0)
      out += name + (S_ISSOCK(st.st_mode) ? "(socket) " : "(not a socket) ");
  }
  return out;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

class MountPointLeftovers : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  }
};

// The user (or a host process) runs `chown -R` and `chmod -R` over the workspace while a run
// masks its missing .git/.codex/.agents: the mount points' change times move. Before, sbx
// recognised its mount points by that change time and left all three on the host for good.
TEST_P(MountPointLeftovers, AChownOfTheWorkspaceDuringTheRunLeavesNothing) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  TempDir conf, ws;
  const std::string policy = write_policy(conf);
  give_to(who, conf.path());
  give_to(who, ws.path());
  const pid_t sbx =
      start_exec(who, policy, ws.path(),
                 "echo up > ready; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; "
                 "i=$((i+1)); done",
                 conf / "sbx.log");
  ASSERT_TRUE(eventually([&] { return exists(ws / "ready"); }, 30))
      << "the command did not start: " << read_file(conf / "sbx.log");
  ASSERT_EQ(socket_names_in(ws.path()), ".git(socket) .codex(socket) .agents(socket) ");
  const std::string owner = std::to_string(uid_of(who)) + ":" + std::to_string(gid_of(who));
  const RunResult chown = run({"/bin/chown", "-R", owner, ws.path()}, base_env());
  ASSERT_EQ(chown.code, 0) << describe(chown);
  const RunResult chmod = run({"/bin/chmod", "-R", "g-w,o-w", ws.path()}, base_env());
  ASSERT_EQ(chmod.code, 0) << describe(chmod);
  write_file(ws / "go", "go\n");
  EXPECT_EQ(wait_exit(sbx, 60), 0) << read_file(conf / "sbx.log");
  EXPECT_EQ(socket_names_in(ws.path()), "") << "left on the host after the run";
  EXPECT_EQ(listing(ws.path()), (std::vector<std::string>{"go", "ready"}));
}

// The command makes the workspace it owns read-only (`chmod 555 .`, the host directory's mode):
// sbx, the same user outside, could not unlink its mount points there and left them; a later
// `git init` on the host then failed on the socket named .git. Now sbx adds the owner's write
// bit for the unlink and gives the user's mode back.
TEST_P(MountPointLeftovers, AChmod555OfTheWorkspaceFromInsideLeavesNothing) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap", {"/usr/bin/git"});
  TempDir conf, ws;
  const std::string policy = write_policy(conf);
  give_to(who, conf.path());
  give_to(who, ws.path());
  const RunResult r = exec_as(who, "bwrap", {"--policy", policy}, ws.path(),
                              {"/bin/sh", "-c", "chmod 555 . && echo done"}, env_for(who));
  ASSERT_EQ(r.code, 0) << describe(r);
  ASSERT_EQ(r.out, "done\n") << describe(r);
  EXPECT_EQ(mode_of(ws.path()), 0555u) << "the user's mode was not kept";
  EXPECT_EQ(socket_names_in(ws.path()), "") << "left on the host: " << describe(r);
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << describe(r);
  // The user makes it writable again and creates their repository on the host.
  ASSERT_EQ(::chmod(ws.path().c_str(), 0755), 0);
  const RunResult init =
      run_as(who, {"/usr/bin/git", "init", "-q", ws.path()},
             {"PATH=/usr/bin:/bin", "HOME=" + home_of(who), "GIT_CONFIG_NOSYSTEM=1"});
  EXPECT_EQ(init.code, 0) << describe(init);
  EXPECT_TRUE(std::filesystem::is_directory(ws / ".git"));
}

// Issue #32 B1: the command makes a writable root ABOVE its working directory unsearchable
// (`chmod 000`, on the host's inode: the user owns it). sbx, the same user outside, could not
// walk through it to the mount points of the working directory below: it dropped their records
// as stale and left the sockets on the host for good (a later `git init` there failed). Now the
// walk gives the user's own directory the owner's search bit for the cleanup and its 000 back.
TEST_P(MountPointLeftovers, AChmod000OfAWritableRootAboveTheWorkspaceLeavesNothing) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  TempDir conf, top;
  const std::string ws = top / "sub";
  ASSERT_EQ(::mkdir(ws.c_str(), 0755), 0);
  const std::string policy = write_policy(conf, top.path());
  give_to(who, conf.path());
  give_to(who, top.path());
  const RunResult r = exec_as(who, "bwrap", {"--policy", policy}, ws,
                              {"/bin/sh", "-c", "chmod 000 \"$TOP\" && echo done"}, [&] {
                                std::vector<std::string> env = env_for(who);
                                env.push_back("TOP=" + top.path());
                                return env;
                              }());
  EXPECT_EQ(mode_of(top.path()), 0u) << "the reproducer no longer changes the mode";
  ASSERT_EQ(::chmod(top.path().c_str(), 0755), 0);
  ASSERT_EQ(r.code, 0) << describe(r);
  ASSERT_EQ(r.out, "done\n") << describe(r);
  EXPECT_EQ(socket_names_in(ws), "") << "left on the host below the root: " << describe(r);
  EXPECT_EQ(socket_names_in(top.path()), "") << "left on the host: " << describe(r);
  EXPECT_EQ(r.err.find("mount point"), std::string::npos) << describe(r);
}

// The same, but sbx is killed with SIGKILL after the `chmod 555 .`: the next run (in another
// workspace) sweeps the killed run's mount points from the read-only directory, mode kept.
TEST_P(MountPointLeftovers, AKilledRunsMountPointsInADirectoryMadeReadOnlyAreSwept) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  TempDir conf, ws, next_ws;
  const std::string policy = write_policy(conf);
  give_to(who, conf.path());
  give_to(who, ws.path());
  give_to(who, next_ws.path());
  // The shell and its sleep share fd 3 on `ready`: its last close is the sandbox gone.
  const pid_t sbx =
      start_exec(who, policy, ws.path(), "exec 3>ready; echo up >&3; chmod 555 .; sleep 300",
                 conf / "sbx.log");
  ASSERT_TRUE(eventually([&] { return mode_of(ws.path()) == 0555; }, 30))
      << "the command did not start: " << read_file(conf / "sbx.log");
  ASSERT_EQ(socket_names_in(ws.path()), ".git(socket) .codex(socket) .agents(socket) ");
  const LastCloseWatch sandbox(ws / "ready");
  ASSERT_TRUE(sandbox.ok()) << "cannot watch " << ws / "ready";
  ::kill(sbx, SIGKILL);
  ::waitpid(sbx, nullptr, 0);
  // The sandbox dies with sbx (--die-with-parent); its mounts go with its namespace.
  ASSERT_TRUE(sandbox.wait(30'000)) << "the sandbox outlived the killed sbx";
  const RunResult next =
      exec_as(who, "bwrap", {"--policy", policy}, next_ws.path(), {"/bin/true"}, env_for(who));
  ASSERT_EQ(next.code, 0) << describe(next);
  // A concurrent run of this user (another test) may have swept them first: either way, gone.
  EXPECT_EQ(socket_names_in(ws.path()), "") << "the killed run's mount points stayed";
  EXPECT_EQ(listing(ws.path()), std::vector<std::string>{"ready"});
  EXPECT_EQ(mode_of(ws.path()), 0555u) << "the user's mode was not kept";
  ::chmod(ws.path().c_str(), 0755);
}

// A mount point that cannot be removed at the end of the run (here: the workspace made
// immutable from the host during the run, `chattr +i`; the same for a directory of another user
// or a read-only filesystem) is not dropped: sbx warns with the path and what to do, keeps its
// record, and a later run removes it once it can. User 65534's registry is private to this test
// process (root's, /run/sbx-bwrap, is swept by every other sbx build run as root on the host).
TEST(MountPointKept, OneThatCannotBeRemovedIsWarnedAboutAndRemovedByALaterRun) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const Identity who = Identity::kUnprivileged;
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  TempDir conf, ws, next_ws;
  const RunResult probe = run({"/usr/bin/chattr", "+i", next_ws.path()}, base_env());
  if (probe.code != 0) GTEST_SKIP() << "chattr +i does not work here: " << describe(probe);
  run({"/usr/bin/chattr", "-i", next_ws.path()}, base_env());
  const std::string policy = write_policy(conf);
  give_to(who, conf.path());
  give_to(who, ws.path());
  give_to(who, next_ws.path());
  // The go file is outside the workspace (readable inside): the workspace is immutable then.
  const pid_t sbx = start_exec(who, policy, ws.path(),
                               "echo up > ready; i=0; while [ ! -e " + conf / "go" +
                                   " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
                               conf / "sbx.log");
  ASSERT_TRUE(eventually([&] { return exists(ws / "ready"); }, 30)) << read_file(conf / "sbx.log");
  const RunResult immutable = run({"/usr/bin/chattr", "+i", ws.path()}, base_env());
  ASSERT_EQ(immutable.code, 0) << describe(immutable);
  write_file(conf / "go", "go\n");
  const int code = wait_exit(sbx, 60);
  run({"/usr/bin/chattr", "-i", ws.path()}, base_env());
  const std::string log = read_file(conf / "sbx.log");
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(
      log.find("sbx: warning: bwrap: could not remove the mount point '" + ws.path() + "/.git'"),
      std::string::npos)
      << log;
  EXPECT_EQ(socket_names_in(ws.path()), ".git(socket) .codex(socket) .agents(socket) ");
  const RunResult next =
      exec_as(who, "bwrap", {"--policy", policy}, next_ws.path(), {"/bin/true"}, env_for(who));
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(next.err.find("warning"), std::string::npos) << describe(next);
  EXPECT_EQ(socket_names_in(ws.path()), "") << "the kept record was not acted on";
  EXPECT_EQ(listing(ws.path()), std::vector<std::string>{"ready"});
}

// H4: a person's own `.codex` (with content before the run) saved empty during the run, by an
// atomic replace or by rm and touch, from the host. sbx took any empty file of the run's user
// with a new identity at a name the run relied on for bwrap's mount point and removed it: the
// person's file was gone. Now sbx removes only an inode it made, keeps this one and warns.
TEST_P(MountPointLeftovers, APersonsFileSavedEmptyDuringTheRunIsKept) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  const std::vector<std::string> saves = {": > .codex.new && mv .codex.new .codex",
                                          "rm .codex && touch .codex"};
  for (const std::string& save : saves) {
    TempDir conf, ws;
    const std::string policy = write_policy(conf);
    write_file(ws / ".codex", "model = \"x\"\n");
    give_to(who, conf.path());
    give_to(who, ws.path());
    const pid_t sbx =
        start_exec(who, policy, ws.path(),
                   "echo up > ready; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; "
                   "i=$((i+1)); done",
                   conf / "sbx.log");
    ASSERT_TRUE(eventually([&] { return exists(ws / "ready"); }, 30))
        << "the command did not start: " << read_file(conf / "sbx.log");
    const RunResult saved =
        run_as(who, {"/bin/sh", "-c", "cd " + ws.path() + " && " + save}, base_env());
    ASSERT_EQ(saved.code, 0) << describe(saved);
    write_file(ws / "go", "go\n");
    EXPECT_EQ(wait_exit(sbx, 60), 0) << read_file(conf / "sbx.log");
    struct stat st {};
    EXPECT_EQ(::lstat((ws / ".codex").c_str(), &st), 0)
        << save << ": the person's .codex was removed";
    EXPECT_TRUE(S_ISREG(st.st_mode)) << save;
    const std::string log = read_file(conf / "sbx.log");
    EXPECT_NE(log.find("an empty file bwrap may have made remains at '" + ws.path() + "/.codex'"),
              std::string::npos)
        << save << ": " << log;
  }
}

// H5: a sandboxed command with the home directory writable makes ~/.cache world-writable, so
// sbx refuses it as the state directory's parent and every later run of that user has no
// registry: its mount points stay in each workspace. Before, silently; now the run that makes
// them warns once with the state directory's error, the paths and what to do. A run that ends
// sets such a mode back itself (StateDirCandidates.AModeWidenedAboveTheStateDirectoryIsSetBack
// WhenTheRunEnds): this is what is left when sbx is killed (SIGKILL) before it could. (User
// 65534: root's state directory is /run/sbx-bwrap, outside its home.)
TEST(MountPointUnrecorded, AChmodOfTheCacheFromInsideAKilledRunIsWarnedOfAtTheNextRun) {
  const Identity who = Identity::kUnprivileged;
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  PrivateHome home(who);  // below /tmp there would be no state directory from the start
  TempDir conf, ws, later;
  const std::string policy = write_policy(conf, home.path());
  give_to(who, conf.path());
  give_to(who, ws.path());
  give_to(who, later.path());
  std::vector<std::string> env;
  for (const std::string& entry : env_for(who))
    if (entry.rfind("HOME=", 0) != 0 && entry.rfind("XDG_", 0) != 0) env.push_back(entry);
  env.push_back("HOME=" + home.path());
  // The shell and its sleep share fd 3 on `ready`: its last close is the sandbox gone.
  const pid_t sbx = start_in_background(
      argv_as(who, exec_argv("bwrap", {"--policy", policy}, ws.path(),
                             {"/bin/sh", "-c",
                              "exec 3>ready; chmod 777 \"$HOME/.cache\" && echo done >&3; "
                              "sleep 300"})),
      with_pwd(env, ws.path()), conf / "sbx.log");
  ASSERT_TRUE(eventually([&] { return read_file(ws / "ready") == "done\n"; }, 30))
      << "the command did not run: " << read_file(conf / "sbx.log");
  const LastCloseWatch sandbox(ws / "ready");
  ASSERT_TRUE(sandbox.ok()) << "cannot watch " << ws / "ready";
  ::kill(sbx, SIGKILL);
  ::waitpid(sbx, nullptr, 0);
  ASSERT_TRUE(sandbox.wait(30'000)) << "the sandbox outlived the killed sbx";
  ASSERT_EQ(mode_of(home / ".cache"), 0777u) << "the reproducer no longer changes the mode";
  const RunResult next =
      exec_as(who, "bwrap", {"--policy", policy}, later.path(), {"/bin/true"}, env);
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_NE(next.err.find("no private state directory ("), std::string::npos) << describe(next);
  EXPECT_NE(next.err.find("cannot be recorded and stay on the host: "), std::string::npos)
      << describe(next);
  EXPECT_NE(next.err.find("'" + later.path() + "/.codex'"), std::string::npos) << describe(next);
  EXPECT_NE(next.err.find("chmod 700 ~/.cache"), std::string::npos) << describe(next);
  EXPECT_EQ(socket_names_in(later.path()), ".git(socket) .codex(socket) .agents(socket) ")
      << "unrecorded, they stay (what the warning says)";
  ::chmod((home / ".cache").c_str(), 0700);
}

// HOME as the workspace, with no runtime directory for user 65534 (its state in ~/.cache/sbx):
// the command ran `chmod 000 ~/.cache ~/.cache/sbx` and every later run had no state directory
// and left its mount points unrecorded in each workspace (issue #32 B1). Now ~/.cache/sbx is
// read-only in the sandbox (its chmod fails) and sbx gives a narrowed ~/.cache back its 0700:
// the next run keeps its state, warns of nothing and leaves nothing. (Root's state is in /run,
// outside HOME: the same holds.)
TEST_P(MountPointLeftovers, AChmod000OfTheCacheFromInsideIsRepairedByTheNextRun) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  const std::string run_user = "/run/user/" + std::to_string(uid_of(who));
  if (who != Identity::kRoot && exists(run_user))
    GTEST_SKIP() << run_user << " exists here: the state would go there";
  PrivateHome home(who);
  TempDir conf, later;
  const std::string policy = write_policy(conf);
  give_to(who, conf.path());
  give_to(who, later.path());
  std::vector<std::string> env;
  for (const std::string& entry : env_for(who))
    if (entry.rfind("HOME=", 0) != 0 && entry.rfind("XDG_", 0) != 0) env.push_back(entry);
  env.push_back("HOME=" + home.path());
  // A first run makes the state (as user 65534: ~/.cache/sbx/bwrap).
  const RunResult first =
      exec_as(who, "bwrap", {"--policy", policy}, later.path(), {"/bin/true"}, env);
  ASSERT_EQ(first.code, 0) << describe(first);
  const std::string state =
      who == Identity::kRoot ? "/run/sbx-bwrap" : home.path() + "/.cache/sbx/bwrap";
  ASSERT_EQ(mode_of(state), 0700u) << state;
  const RunResult chmod = exec_as(
      who, "bwrap", {"--policy", policy}, home.path(),
      {"/bin/sh", "-c", "chmod 000 \"$HOME/.cache/sbx\"; chmod 000 \"$HOME/.cache\"; echo done"},
      env);
  ASSERT_EQ(chmod.code, 0) << describe(chmod);
  ASSERT_EQ(chmod.out, "done\n") << describe(chmod);
  if (who != Identity::kRoot) {
    EXPECT_EQ(mode_of(home / ".cache/sbx"), 0700u) << "the sandbox changed ~/.cache/sbx";
    EXPECT_EQ(mode_of(home / ".cache"), 0u) << "the reproducer no longer narrows ~/.cache";
  }
  const RunResult next =
      exec_as(who, "bwrap", {"--policy", policy}, later.path(), {"/bin/true"}, env);
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(next.err.find("no private state directory"), std::string::npos) << describe(next);
  EXPECT_EQ(socket_names_in(later.path()), "") << "left on the host after the run";
  EXPECT_EQ(socket_names_in(home.path()), "") << "left on the host after the run";
  EXPECT_EQ(mode_of(state), 0700u) << state;
  if (who != Identity::kRoot) {
    EXPECT_EQ(mode_of(home / ".cache"), 0700u);
    EXPECT_EQ(mode_of(home / ".cache/sbx"), 0700u);
  }
  ::chmod((home / ".cache").c_str(), 0700);
  ::chmod((home / ".cache/sbx").c_str(), 0700);
}

// How often `needle` occurs in `text`.
std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

// HOME in /tmp and no runtime directory (containers and CI give users that): a sandboxed command
// with /tmp writable could rename $HOME/.cache away and plant a state directory a later run
// trusts, so sbx keeps nothing there (sbx/sdk/private_state.hpp why_shared_path). A run that
// makes mount points warns once with the reason and what to do; a proxy run, whose socket needs
// the state directory, is refused with it and its command never starts; nothing is made below
// the shared HOME.
TEST(StateBelowASharedDirectory, IsRefusedWithTheReasonNeverUsed) {
  const Identity who = Identity::kUnprivileged;
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  const std::string run_user = "/run/user/" + std::to_string(uid_of(who));
  if (exists(run_user)) GTEST_SKIP() << run_user << " exists here: the state would go there";
  TempDir home;  // in /tmp (1777)
  TempDir conf, ws, proxy_ws;
  const std::string policy = write_policy(conf);
  const std::string proxy_policy = conf.write(
      "proxy.json", R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                    R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
                    R"("protected_names":[".git",".codex",".agents"]},)"
                    R"("network":{"mode":"proxy","allowed_domains":["127.0.0.1:9"]}})");
  for (const TempDir* dir : {&home, &conf, &ws, &proxy_ws}) give_to(who, dir->path());
  std::vector<std::string> env;
  for (const std::string& entry : env_for(who))
    if (entry.rfind("HOME=", 0) != 0 && entry.rfind("XDG_", 0) != 0) env.push_back(entry);
  env.push_back("HOME=" + home.path());
  const std::string reason = "sbx keeps no state below '" + home.path() +
                             "/.cache': '/tmp' is writable by others (mode 1777)";

  const RunResult masked =
      exec_as(who, "bwrap", {"--policy", policy}, ws.path(), {"/bin/sh", "-c", "echo ran"}, env);
  EXPECT_EQ(masked.code, 0) << describe(masked);
  EXPECT_EQ(masked.out, "ran\n") << describe(masked);
  EXPECT_EQ(count_of(masked.err, reason), 1u) << describe(masked);
  EXPECT_NE(masked.err.find("Set XDG_RUNTIME_DIR to a private runtime directory"),
            std::string::npos)
      << describe(masked);
  EXPECT_NE(masked.err.find("cannot be recorded and stay on the host: "), std::string::npos)
      << describe(masked);

  const RunResult proxied = exec_as(who, "bwrap", {"--policy", proxy_policy}, proxy_ws.path(),
                                    {"/bin/sh", "-c", "echo ran"}, env);
  EXPECT_NE(proxied.code, 0) << describe(proxied);
  EXPECT_EQ(proxied.out.find("ran"), std::string::npos) << describe(proxied);
  EXPECT_NE(proxied.err.find("no private directory for the proxy's socket: " + reason),
            std::string::npos)
      << describe(proxied);

  EXPECT_FALSE(exists(home / ".cache")) << "sbx made its state below the shared HOME";
  EXPECT_FALSE(exists("/tmp/sbx-bwrap-" + std::to_string(uid_of(who)))) << "state went to /tmp";
}

INSTANTIATE_TEST_SUITE_P(Identities, MountPointLeftovers, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

// A sticky directory every user may write, like /tmp (not /tmp itself: other runs and other
// sbx versions on this host use it at the same time).
void make_sticky_shared(const TempDir& dir) { ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0); }

// Runs of user 65534 and of root side by side with the same directory every user may write:
// the mount points there go when the last run of either user ends, never while the other's
// run relies on them (its command still cannot create the names), and afterwards another user
// can `git init` there. Before, they stayed for good, owned by whichever user's run made them:
// `git init` of another user failed on the socket, and in a sticky directory only its owner can
// remove it. The user's run makes them (its registry is private to this test process; root's,
// /run/sbx-bwrap, is shared with every other sbx build run as root on the host, whose sweeps
// this test must not depend on).
TEST(SharedDirectoryMountPoints, GoWhenTheLastRunOfAnyUserEndsAndNeverBefore) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  SBX_REQUIRE_IDENTITY(Identity::kRoot, "bwrap");
  SBX_REQUIRE_IDENTITY(Identity::kUnprivileged, "bwrap", {"/usr/bin/git"});
  TempDir shared, root_conf, root_ws, user_conf, user_ws;
  make_sticky_shared(shared);
  const std::string root_policy = write_policy(root_conf, shared.path());
  const std::string user_policy = write_policy(user_conf, shared.path());
  give_to(Identity::kUnprivileged, user_conf.path());
  give_to(Identity::kUnprivileged, user_ws.path());
  const std::string wait_for_go =
      "echo up > ready; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; "
      "i=$((i+1)); done; ";
  const pid_t user_run = start_exec(Identity::kUnprivileged, user_policy, user_ws.path(),
                                    wait_for_go, user_conf / "sbx.log");
  ASSERT_TRUE(eventually([&] { return exists(user_ws / "ready"); }, 30))
      << read_file(user_conf / "sbx.log");
  struct stat made {};
  ASSERT_EQ(::lstat((shared / ".git").c_str(), &made), 0);
  EXPECT_EQ(made.st_uid, uid_of(Identity::kUnprivileged)) << "not made by the user's run";
  const pid_t root_run = start_exec(
      Identity::kRoot, root_policy, root_ws.path(),
      wait_for_go + "mkdir " + shared.path() + "/.codex 2>/dev/null && echo CREATED; true",
      root_conf / "sbx.log");
  ASSERT_TRUE(eventually([&] { return exists(root_ws / "ready"); }, 30))
      << read_file(root_conf / "sbx.log");
  EXPECT_EQ(socket_names_in(shared.path()), ".git(socket) .codex(socket) .agents(socket) ");
  // The user's run (which made them) ends first: root's run still relies on the mount points.
  write_file(user_ws / "go", "go\n");
  EXPECT_EQ(wait_exit(user_run, 60), 0) << read_file(user_conf / "sbx.log");
  EXPECT_EQ(socket_names_in(shared.path()), ".git(socket) .codex(socket) .agents(socket) ")
      << "removed while the other user's run relied on them";
  write_file(root_ws / "go", "go\n");
  EXPECT_EQ(wait_exit(root_run, 60), 0) << read_file(root_conf / "sbx.log");
  const std::string root_log = read_file(root_conf / "sbx.log");
  EXPECT_EQ(root_log.find("CREATED"), std::string::npos)
      << "root's mask was detached: " << root_log;
  // The user's record stayed (root's run held the directory): the user's next run removes them.
  const RunResult user_next =
      exec_as(Identity::kUnprivileged, "bwrap", {"--policy", user_policy}, user_ws.path(),
              {"/bin/true"}, env_for(Identity::kUnprivileged));
  EXPECT_EQ(user_next.code, 0) << describe(user_next);
  EXPECT_EQ(socket_names_in(shared.path()), "") << "left in the shared directory for good";
  EXPECT_TRUE(listing(shared.path()).empty());
  // Another user's programs are not blocked there (root's, and the user's own).
  const RunResult init = run({"/usr/bin/git", "init", "-q", shared.path()},
                             {"PATH=/usr/bin:/bin", "HOME=/root", "GIT_CONFIG_NOSYSTEM=1"});
  EXPECT_EQ(init.code, 0) << describe(init);
}

// Red team round 5: two runs side by side in one workspace that keep their state in different
// places (one with XDG_RUNTIME_DIR, one without, whose state is ~/.cache/sbx: a terminal beside
// cron), so neither registry's locks hold the other off. The first run made the mount points
// and ended first: it removed them while the second still relied on them, which detached the
// second's masks, and its command wrote `.git/config` on the host. Now every run holds a
// shared lock on the workspace itself and a mount point is removed only under an exclusive one:
// the masks stay while the second runs, and the first's own next run removes them afterwards.
// The case above; with `first_starts_locked`, another process holds the workspace locked
// (flock -x) while the first run starts, as a third run's sandboxed command can: the first run
// cannot take the directory's lock then, and must not remove its mount points on its registry's
// lock alone at its end (red team round 6: it did, and the second run's command wrote
// .git/config on the host).
void check_runs_across_state_directories(bool first_starts_locked) {
  const Identity who = Identity::kUnprivileged;
  PrivateHome home(who);
  TempDir conf, ws, runtime_parent(private_parent());
  const std::string runtime = runtime_parent / "rt";
  ASSERT_EQ(::mkdir(runtime.c_str(), 0700), 0);
  give_to(who, runtime_parent.path());
  give_to(who, runtime);
  give_to(who, conf.path());
  give_to(who, ws.path());
  const std::string policy = write_policy(conf);
  std::vector<std::string> with_runtime, without_runtime;
  for (const std::string& entry : env_for(who)) {
    if (entry.rfind("HOME=", 0) == 0) continue;
    with_runtime.push_back(entry);
    without_runtime.push_back(entry);
  }
  for (auto* env : {&with_runtime, &without_runtime}) {
    env->push_back("HOME=" + home.path());
    env->push_back("PWD=" + ws.path());
  }
  with_runtime.push_back("XDG_RUNTIME_DIR=" + runtime);
  const auto start = [&](const std::vector<std::string>& env, const std::string& script,
                         const std::string& log) {
    return start_in_background(argv_as(who, exec_argv("bwrap", {"--policy", policy}, ws.path(),
                                                      {"/bin/sh", "-c", script})),
                               env, log);
  };
  const int held = ::open(ws.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  if (first_starts_locked) {
    ASSERT_EQ(::flock(held, LOCK_EX), 0);
  }
  const pid_t first =
      start(with_runtime,
            "echo up > first.ready; i=0; while [ ! -e first.go ] && [ $i -lt 600 ]; "
            "do sleep 0.05; i=$((i+1)); done",
            conf / "first.log");
  const bool first_ready = eventually([&] { return exists(ws / "first.ready"); }, 30);
  ::close(held);
  ASSERT_TRUE(first_ready) << read_file(conf / "first.log");
  EXPECT_EQ(socket_names_in(ws.path()), ".git(socket) .codex(socket) .agents(socket) ");
  ASSERT_TRUE(exists(runtime + "/sbx-bwrap")) << "the first run keeps no state in its runtime dir";
  const pid_t second = start(
      without_runtime,
      "echo up > second.ready; i=0; while [ ! -e second.go ] && [ $i -lt 600 ]; do sleep 0.05; "
      "i=$((i+1)); done; mkdir .git 2>/dev/null && echo CREATED; "
      "printf '[core]\\n' > .git/config 2>/dev/null && echo WROTE; true",
      conf / "second.log");
  ASSERT_TRUE(eventually([&] { return exists(ws / "second.ready"); }, 30))
      << read_file(conf / "second.log");
  ASSERT_TRUE(exists(home / ".cache/sbx/bwrap")) << "the second run keeps no state in ~/.cache";
  write_file(ws / "first.go", "go\n");
  EXPECT_EQ(wait_exit(first, 60), 0) << read_file(conf / "first.log");
  EXPECT_EQ(socket_names_in(ws.path()), ".git(socket) .codex(socket) .agents(socket) ")
      << "removed while the other run relied on them";
  write_file(ws / "second.go", "go\n");
  EXPECT_EQ(wait_exit(second, 60), 0) << read_file(conf / "second.log");
  const std::string second_log = read_file(conf / "second.log");
  EXPECT_EQ(second_log.find("CREATED"), std::string::npos)
      << "the mask was detached: " << second_log;
  EXPECT_EQ(second_log.find("WROTE"), std::string::npos) << "the mask was detached: " << second_log;
  EXPECT_FALSE(std::filesystem::is_directory(ws / ".git"));
  // The first run's record stayed (the second held the directory): its next run removes them.
  const RunResult next =
      exec_as(who, "bwrap", {"--policy", policy}, ws.path(), {"/bin/true"}, with_runtime);
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(socket_names_in(ws.path()), "") << "left on the host";
}

TEST(MountPointsAcrossStateDirectories, AreNeverRemovedWhileAnotherRunReliesOnThem) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  SBX_REQUIRE_IDENTITY(Identity::kUnprivileged, "bwrap");
  check_runs_across_state_directories(false);
}

TEST(MountPointsAcrossStateDirectories, ARunThatStartedWithoutTheLockNeverRemovesThem) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  SBX_REQUIRE_IDENTITY(Identity::kUnprivileged, "bwrap");
  check_runs_across_state_directories(true);
}

// The directory's lock is what keeps another registry's run from removing a mount point this
// run relies on: a run that cannot take it (a process holds the workspace locked, as another
// run's sandboxed command can with flock(1)) and would rely on an existing mount point does not
// start (125, naming the directory), rather than run with a mask that may be detached.
TEST(MountPointsAcrossStateDirectories, ARunThatCannotLockTheDirectoryDoesNotRelyOnAMountPoint) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  SBX_REQUIRE_IDENTITY(Identity::kRoot, "bwrap");
  TempDir conf, ws;
  const std::string policy = write_policy(conf);
  ASSERT_TRUE(make_socket_inode(ws / ".git"));  // another run's mount point, as far as it knows
  const int held = ::open(ws.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  const RunResult r = exec_as(Identity::kRoot, "bwrap", {"--policy", policy}, ws.path(),
                              {"/bin/sh", "-c", "echo ran"}, env_for(Identity::kRoot));
  ::close(held);
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_EQ(r.out, "") << describe(r);
  EXPECT_NE(r.err.find("sbx cannot lock '" + ws.path() +
                       "' (flock(2)), which keeps other runs from removing the mount point at '" +
                       ws.path() + "/.git'"),
            std::string::npos)
      << describe(r);
  const RunResult unlocked = exec_as(Identity::kRoot, "bwrap", {"--policy", policy}, ws.path(),
                                     {"/bin/sh", "-c", "echo ran"}, env_for(Identity::kRoot));
  EXPECT_EQ(unlocked.code, 0) << describe(unlocked);
  EXPECT_EQ(unlocked.out, "ran\n") << describe(unlocked);
}

// H3: a local user's symlink at a protected name in a sticky directory every user may write
// (like /tmp) refuses every other user's run with that directory writable (125), for good: a
// symlink there is never followed. The refusal says whose it is, that only they or root can
// remove it, and how to run meanwhile; the symlink and its target are left alone.
TEST(ProtectedSymlink, InASharedDirectoryTheRefusalSaysWhoMustRemoveIt) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  SBX_REQUIRE_IDENTITY(Identity::kRoot, "bwrap");
  TempDir shared, conf, ws;
  make_sticky_shared(shared);
  const std::string agents = shared / ".agents";
  ASSERT_EQ(::symlink(conf.path().c_str(), agents.c_str()), 0);
  ASSERT_EQ(::lchown(agents.c_str(), 65534, 65534), 0);
  const std::string policy = write_policy(conf, shared.path());
  const RunResult r = exec_as(Identity::kRoot, "bwrap", {"--policy", policy}, ws.path(),
                              {"/bin/sh", "-c", "echo ran"}, env_for(Identity::kRoot));
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_EQ(r.out, "") << describe(r);
  EXPECT_NE(r.err.find("it is a symlink inside a writable root"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("uid 65534) or root must remove it (rm '" + agents +
                       "'; in a directory every user may write nobody else can)"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.err.find("or run with '" + shared.path() + "' not writable"), std::string::npos)
      << describe(r);
  EXPECT_TRUE(std::filesystem::is_symlink(agents));
}

// XDG_CONFIG_HOME in a directory every user may write and missing (XDG_CONFIG_HOME=/tmp/cfg):
// the user settings file's directory is made on the host (a real directory, as the user's own
// programs would), never a socket mount point at `cfg` that made every later run fail with 125
// ("Can't mkdir parents for /tmp/cfg/sbx: Not a directory").
TEST_P(MountPointLeftovers, AMissingConfigDirectoryInASharedDirectoryBlocksNoLaterRun) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  TempDir shared, conf, ws;
  make_sticky_shared(shared);
  const std::string policy = write_policy(conf, shared.path());
  give_to(who, conf.path());
  give_to(who, ws.path());
  std::vector<std::string> env = env_for(who);
  env.push_back("XDG_CONFIG_HOME=" + shared.path() + "/cfg");
  for (int attempt = 0; attempt < 2; ++attempt) {
    const RunResult r = exec_as(who, "bwrap", {"--policy", policy}, ws.path(),
                                {"/bin/sh", "-c",
                                 "mkdir -p \"$XDG_CONFIG_HOME/sbx\" && echo "
                                 "'{}' > \"$XDG_CONFIG_HOME/sbx/settings.json\""
                                 " 2>/dev/null && echo PLANTED; true"},
                                env);
    ASSERT_EQ(r.code, 0) << "run " << attempt << ": " << describe(r);
    EXPECT_EQ(r.out.find("PLANTED"), std::string::npos) << describe(r);
  }
  struct stat st {};
  ASSERT_EQ(::lstat((shared / "cfg").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode)) << "cfg is not a directory on the host";
  EXPECT_EQ(st.st_uid, uid_of(who));
  EXPECT_TRUE(std::filesystem::is_directory(shared / "cfg/sbx"));
  EXPECT_FALSE(exists(shared / "cfg/sbx/settings.json"));
  EXPECT_EQ(socket_names_in(shared.path()), "");
}

}  // namespace
