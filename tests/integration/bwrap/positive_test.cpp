// The positive suite: ordinary work succeeds under the bwrap backend
// through the installed `sbx exec`, and exit statuses, stdin, large output and TTYs pass
// through unchanged.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class BwrapPositive : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    ASSERT_FALSE(ws_.path().empty());
  }
  TempDir ws_;
};

TEST_F(BwrapPositive, WritesInWorkspaceSlashTmpAndTmpdirReachTheHost) {
  TempDir tmpdir("/var/tmp");
  auto env = base_env();
  env.push_back("TMPDIR=" + tmpdir.path());
  const std::string in_tmp = "/tmp/sbx-bwrap-it-" + std::to_string(::getpid()) + ".txt";
  const RunResult r = sh(ws_.path(),
                         "echo ws > out.txt && mkdir -p sub/dir && echo tmp > " + in_tmp +
                             " && echo td > \"$TMPDIR/td.txt\"",
                         {"--preset", "workspace-write"}, env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(read_file(ws_ / "out.txt"), "ws\n");
  EXPECT_TRUE(exists(ws_ / "sub/dir"));
  EXPECT_EQ(read_file(in_tmp), "tmp\n");
  EXPECT_EQ(read_file(tmpdir / "td.txt"), "td\n");
  ::unlink(in_tmp.c_str());
}

// .git decision (README): with the default protected names, `git init` cannot create .git;
// a policy whose protected_names leaves out ".git" lets git work normally.
TEST_F(BwrapPositive, GitWorksOnlyWhenGitIsNotProtected) {
  const std::string git =
      "git init -q . && git add a.txt && git -c user.name=t -c "
      "user.email=t@t commit -qm init && git log --oneline | wc -l";
  write_file(ws_ / "a.txt", "a\n");
  const RunResult blocked = sh(ws_.path(), git);
  EXPECT_NE(blocked.code, 0) << describe(blocked);
  EXPECT_FALSE(exists(ws_ / ".git"));

  TempDir pol;
  write_file(pol / "git.json", R"({"version": 1,
    "filesystem": {"kind": "restricted",
      "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},
                  {"path": ":slash_tmp", "access": "write"}],
      "protected_names": [".codex", ".agents"]},
    "network": {"mode": "restricted"}})");
  const RunResult ok = sh(ws_.path(), git, {"--policy", pol / "git.json"});
  EXPECT_EQ(ok.code, 0) << describe(ok);
  EXPECT_EQ(ok.out, "1\n") << describe(ok);
  EXPECT_TRUE(exists(ws_ / ".git/HEAD"));
}

// The mask of a missing protected `.git` is a device node (/dev/null bound read-only), not an
// empty regular file: git's discovery takes a `.git` that is neither a directory nor a file
// for "no repository here" and goes on to the parent's repository, as it did when the mask was
// an empty directory, while `git init` still cannot create the repository. (An empty regular
// `.git` would make git stop with "invalid gitfile format".)
TEST_F(BwrapPositive, GitFindsTheParentRepositoryPastTheMaskOfAMissingGit) {
  if (!exists("/usr/bin/git")) GTEST_SKIP() << "git is not installed (/usr/bin/git)";
  const RunResult init = run({"/usr/bin/git", "init", "-q", ws_.path()}, base_env());
  ASSERT_EQ(init.code, 0) << describe(init);
  fs::create_directory(ws_ / "sub");  // the cwd, a writable root without its own .git
  const RunResult r = sh(ws_ / "sub",
                         "git rev-parse --show-toplevel; echo found=$?; "
                         "if [ -c .git ]; then echo mask=device; fi; "
                         "git init -q . 2>/dev/null; echo init=$?");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(ws_.path() + "\nfound=0\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("mask=device\n"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("init=0"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists(ws_ / "sub/.git")) << "the mask's mount point was left on the host";
}

// What the host sees while a run masks missing names: the mount points are socket inodes,
// which git ignores like the empty directories they replaced. `git status` in the repository
// lists nothing new, and git in the run's cwd (a subdirectory without its own .git) still finds
// the repository above; an empty regular file there would be listed as untracked (.codex,
// .agents) and stop git at `.git` ("invalid gitfile format").
TEST_F(BwrapPositive, HostGitIgnoresTheMountPointsWhileARunMasksMissingNames) {
  if (!exists("/usr/bin/git")) GTEST_SKIP() << "git is not installed (/usr/bin/git)";
  const std::vector<std::string> git_env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent",
                                            "GIT_OPTIONAL_LOCKS=0", "LANG=C"};
  ASSERT_EQ(run({"/usr/bin/git", "init", "-q", ws_.path()}, git_env).code, 0);
  fs::create_directory(ws_ / "sub");
  TempDir signals("/tmp");  // writable in workspace-write, outside the repository
  std::thread sandboxed([&] {
    const RunResult r = sh(ws_ / "sub", "echo up > " + signals / "ready" + "; while [ ! -e " +
                                            signals / "go" + " ]; do sleep 0.05; done");
    EXPECT_EQ(r.code, 0) << describe(r);
  });
  // Bounded wait for the command to start (not a timing assertion).
  for (int i = 0; i < 3000 && !exists(signals / "ready"); ++i) ::usleep(10 * 1000);
  const bool started = exists(signals / "ready");
  const bool masked = fs::is_socket(fs::symlink_status(ws_ / "sub/.codex")) &&
                      fs::is_socket(fs::symlink_status(ws_ / "sub/.git"));
  const RunResult status =
      run({"/usr/bin/git", "-C", ws_.path(), "status", "--porcelain", "--untracked-files=all"},
          git_env);
  const RunResult top =
      run({"/usr/bin/git", "-C", ws_ / "sub", "rev-parse", "--show-toplevel"}, git_env);
  write_file(signals / "go", "");
  sandboxed.join();
  ASSERT_TRUE(started) << "the sandboxed command did not start";
  EXPECT_TRUE(masked) << "the mount points on the host are not socket inodes";
  EXPECT_EQ(status.code, 0) << describe(status);
  EXPECT_EQ(status.out, "") << describe(status);
  EXPECT_EQ(top.code, 0) << describe(top);
  EXPECT_EQ(top.out, ws_.path() + "\n") << describe(top);
  EXPECT_TRUE(listing(ws_ / "sub").empty()) << "the run left its mount points behind";
}

// A caller whose own PWD is elsewhere (an agent passing --cwd): the command's PWD names the
// directory it runs in, and bwrap starts the command itself (its PID 1 is bwrap's init, whose
// /proc/1 the direct launch hides, not sbx-stage2), as for a caller in that directory.
TEST_F(BwrapPositive, ACallerElsewhereGivesThePwdOfTheWorkingDirectoryAndTheDirectLaunch) {
  std::vector<std::string> env = base_env();
  env.push_back("PWD=/");
  // No shell in between: sh would correct a PWD that does not name its directory itself.
  const RunResult pwd =
      sbx_exec({"--preset", "workspace-write"}, ws_.path(), {"/usr/bin/printenv", "PWD"}, env);
  EXPECT_EQ(pwd.code, 0) << describe(pwd);
  EXPECT_EQ(pwd.out, ws_.path() + "\n") << describe(pwd);
  const RunResult init =
      sbx_exec({"--preset", "workspace-write"}, ws_.path(), {"/bin/ls", "-A", "/proc/1"}, env);
  EXPECT_EQ(init.code, 0) << describe(init);
  EXPECT_EQ(init.out, "") << "stage 2 ran: " << describe(init);
}

// The same caller under Landlock: the command's PWD names the directory it runs in.
TEST_F(BwrapPositive, ACallerElsewhereGivesThePwdOfTheWorkingDirectoryUnderLandlockToo) {
  if (const std::string why = backend_unavailable("landlock"); !why.empty())
    GTEST_SKIP() << "landlock cannot run here: " << why;
  std::vector<std::string> env = base_env();
  env.push_back("PWD=/");
  const RunResult landlock = exec_with("landlock", {"--preset", "read-only"}, ws_.path(),
                                       {"/usr/bin/printenv", "PWD"}, env);
  EXPECT_EQ(landlock.code, 0) << describe(landlock);
  EXPECT_EQ(landlock.out, ws_.path() + "\n") << describe(landlock);
}

// Runs side by side in one workspace, as an agent runs commands in parallel: each masks the
// missing protected names over mount points that the others make and remove meanwhile. None
// may fail, warn that its command created a protected name (the others' mount points are not
// its command's doing), or leave anything in the workspace (a mount point removed by the run
// that made it before a later run held it was left as an empty file bwrap made: an empty
// `.git` there breaks git). Only the cwd is writable, so runs of other tests in /tmp do not
// take part.
TEST_F(BwrapPositive, RunsSideBySideInOneWorkspaceNeitherFailNorWarnNorLeaveAnything) {
  TempDir policy_dir;
  const std::string policy = policy_dir / "cwd-only.json";
  write_file(policy, R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [
      {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
      "network": {"mode": "restricted"}})");
  constexpr int kRunners = 3;
  constexpr int kRunsEach = 12;
  std::vector<std::vector<RunResult>> results(kRunners);
  std::vector<std::thread> runners;
  for (int i = 0; i < kRunners; ++i) {
    runners.emplace_back([&, i] {
      for (int run = 0; run < kRunsEach; ++run)
        results[static_cast<std::size_t>(i)].push_back(
            sbx_exec({"--policy", policy}, ws_.path(), {"/bin/true"}));
    });
  }
  for (std::thread& runner : runners) runner.join();
  for (const std::vector<RunResult>& runs : results) {
    for (const RunResult& r : runs) {
      EXPECT_EQ(r.code, 0) << describe(r);
      EXPECT_EQ(r.err, "") << describe(r);
    }
  }
  EXPECT_TRUE(listing(ws_.path()).empty()) << "the runs left something in the workspace";
}

// The command's environment arrives whole, but not through arguments: those are
// world-readable in /proc for the whole run. Inside, no process's arguments hold it (PID 1,
// bwrap's init, is hidden by the direct launch; its argv, "bwrap --args 4 -- COMMAND", is
// checked from outside by BwrapDirectRun.TheEnvironmentIsInNoArgvOrEnvironmentOfBwrap).
TEST_F(BwrapPositive, EnvironmentArrivesWithoutAppearingInAnyArguments) {
  auto env = base_env();
  env.push_back("SBX_IT_CARRIED=sbx-it-secret-value-4711");
  const RunResult r = sh(ws_.path(),
                         "printf '%s\\n' \"$SBX_IT_CARRIED\"; for p in /proc/[0-9]*; do tr "
                         "'\\0' '\\n' < $p/cmdline; done > cmdlines.txt",
                         {"--preset", "workspace-write"}, env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "sbx-it-secret-value-4711\n") << describe(r);
  const std::string cmdlines = read_file(ws_ / "cmdlines.txt");
  EXPECT_NE(cmdlines.find("/bin/sh\n-c\n"), std::string::npos) << cmdlines;
  EXPECT_EQ(cmdlines.find("sbx-it-secret-value"), std::string::npos) << cmdlines;
}

// The filter is on for the command itself, both programs of it (the syscall table and the
// argument rules; a later layer may stack more), with no_new_privs: whichever process installs
// them (sbx-stage2 today), this is what the command must see.
TEST_F(BwrapPositive, TheCommandRunsUnderTheSeccompProgramsWithNoNewPrivs) {
  const RunResult r =
      sh(ws_.path(), "grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status",
         {"--preset", "workspace-write"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("NoNewPrivs:\t1\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Seccomp:\t2\n"), std::string::npos) << describe(r);
  const std::size_t at = r.out.find("Seccomp_filters:\t");
  ASSERT_NE(at, std::string::npos) << describe(r);
  EXPECT_GE(std::atoi(r.out.c_str() + at + 17), 2) << describe(r);
}

TEST_F(BwrapPositive, StdinIsPiped) {
  const RunResult r = sbx_exec({"--preset", "workspace-write"}, ws_.path(), {"/bin/cat"},
                               base_env(), "hello through stdin\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "hello through stdin\n");
}

TEST_F(BwrapPositive, ExitCodesPassThrough) {
  for (int code : {0, 1, 2, 3, 42, 64, 100, 124, 125, 126, 127, 128, 129, 200, 254, 255}) {
    const RunResult r = sh(ws_.path(), "exit " + std::to_string(code));
    EXPECT_EQ(r.code, code) << describe(r);
  }
}

TEST_F(BwrapPositive, DeathBySignalIs128PlusN) {
  EXPECT_EQ(sh(ws_.path(), "kill -TERM $$").code, 128 + SIGTERM);
  EXPECT_EQ(sh(ws_.path(), "kill -KILL $$").code, 128 + SIGKILL);
  EXPECT_EQ(sh(ws_.path(), "kill -SEGV $$").code, 128 + SIGSEGV);
}

TEST_F(BwrapPositive, NotFoundIs127AndNotExecutableIs126) {
  const RunResult missing =
      sbx_exec({"--preset", "workspace-write"}, ws_.path(), {ws_ / "no-such-command"});
  EXPECT_EQ(missing.code, 127) << describe(missing);
  write_file(ws_ / "plain.txt", "not a program\n");
  const RunResult plain =
      sbx_exec({"--preset", "workspace-write"}, ws_.path(), {ws_ / "plain.txt"});
  EXPECT_EQ(plain.code, 126) << describe(plain);
  // Found not executable inside the sandbox before bwrap could exec it (the direct launch's
  // pause point), and said why.
  EXPECT_NE(plain.err.find("cannot run " + (ws_ / "plain.txt") + ": Permission denied"),
            std::string::npos)
      << describe(plain);
  // Found on the host but not inside the sandbox (a denied directory): also 127.
  const RunResult in_sh = sh(ws_.path(), "/no/such/thing");
  EXPECT_EQ(in_sh.code, 127) << describe(in_sh);
}

TEST_F(BwrapPositive, LargeOutputArrivesWhole) {
  const RunResult r = sh(ws_.path(), "head -c 8000000 /dev/zero | tr '\\0' 'x'");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.size(), 8000000u);
}

TEST_F(BwrapPositive, TtyProgramRunsUnderScript) {
  if (!exists("/usr/bin/script")) GTEST_SKIP() << "/usr/bin/script (bsdutils) is not installed";
  const RunResult r =
      sbx_exec({"--preset", "workspace-write"}, ws_.path(),
               {"/usr/bin/script", "-qec", "tty; test -t 0 && echo is-a-tty", "/dev/null"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("/dev/pts/"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("is-a-tty"), std::string::npos) << describe(r);
}

// The same confinement for an unprivileged user, where the host lets one create namespaces.
TEST_F(BwrapPositive, UnprivilegedUserIsConfinedToo) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
  const RunResult probe =
      run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/bwrap",
           "--unshare-user", "--ro-bind", "/", "/", "/bin/true"},
          base_env());
  if (probe.code != 0)
    GTEST_SKIP() << "user 65534 cannot create user namespaces here: " << probe.err;
  if (!std::filesystem::exists(SBX_ESCAPE_PROBE)) GTEST_SKIP() << "escape probe missing";
  // The probe runs as user 65534 from the build tree: a build under a private directory (a
  // mktemp -d parent, mode 0700) cannot be reached by that user at all.
  const RunResult reachable = run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                   "--clear-groups", "/usr/bin/test", "-x", SBX_ESCAPE_PROBE},
                                  base_env());
  if (reachable.code != 0)
    GTEST_SKIP() << "user 65534 cannot execute " << SBX_ESCAPE_PROBE
                 << " (a parent directory of the build tree is private to its owner)";
  ::chown(ws_.path().c_str(), 65534, 65534);
  TempDir outside("/var/tmp");
  ::chmod(outside.path().c_str(), 0777);
  // A home of its own: bwrap's state (and so the removal of its mount points) lives in
  // ~/.cache/sbx when there is no runtime directory, never below a directory others may write.
  TempDir home(private_parent());
  ::chown(home.path().c_str(), 65534, 65534);
  auto env = base_env();
  env[1] = "HOME=" + home.path();
  const RunResult r = run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sbx_path(), "--backends", "bwrap", "exec", "--preset", "workspace-write",
                           "--cwd", ws_.path(), "--", "/bin/sh", "-c",
                           "echo ok > in.txt; echo x > " + outside / "out.txt" +
                               "; mkdir .codex; " + probe_path() + " tcp4 127.0.0.1 9; true"},
                          env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(read_file(ws_ / "in.txt"), "ok\n");
  EXPECT_FALSE(exists(outside / "out.txt"));
  EXPECT_FALSE(exists(ws_ / ".codex"));
  EXPECT_NE(r.out.find("BLOCKED"), std::string::npos) << describe(r);
}

}  // namespace
