// A run whose sbx is killed with SIGKILL (no cleanup at all): nothing of its process tree may
// keep running, and what it left on the host (mount points, the proxy's socket directory) is
// removed by the next run, while nothing that is not sbx's is touched. Checked from outside
// through /proc and the host's filesystem.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

// How long a condition that holds at once on a quiet machine may take on a loaded one (a CI
// machine running the whole suite on two cores): waiting longer costs nothing when it holds.
constexpr int kLoadedMachineSeconds = 20;

bool eventually(const std::function<bool()>& condition, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

struct ProcInfo {
  pid_t ppid = 0;
  char state = '?';
  std::string comm;
};

std::map<pid_t, ProcInfo> processes() {
  std::map<pid_t, ProcInfo> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string text = read_file("/proc/" + name + "/stat");
    const std::size_t open = text.find('(');
    const std::size_t close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    ProcInfo info;
    info.comm = text.substr(open + 1, close - open - 1);
    long ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %ld", &info.state, &ppid) != 2) continue;
    info.ppid = static_cast<pid_t>(ppid);
    out[static_cast<pid_t>(std::stol(name))] = info;
  }
  return out;
}

// Every process below `root` (not `root` itself).
std::set<pid_t> descendants(pid_t root) {
  const std::map<pid_t, ProcInfo> all = processes();
  std::set<pid_t> out;
  std::vector<pid_t> queue = {root};
  while (!queue.empty()) {
    const pid_t parent = queue.back();
    queue.pop_back();
    for (const auto& [pid, info] : all) {
      if (info.ppid == parent && out.insert(pid).second) queue.push_back(pid);
    }
  }
  return out;
}

// Running or sleeping: a zombie (or a reused pid would be a false alarm only in theory: the
// test lasts seconds).
bool alive(pid_t pid) {
  const std::string text = read_file("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

std::string describe_pids(const std::set<pid_t>& pids) {
  const std::map<pid_t, ProcInfo> all = processes();
  std::string out;
  for (pid_t pid : pids) {
    auto it = all.find(pid);
    out += std::to_string(pid) + "(" + (it != all.end() ? it->second.comm : "?") + ") ";
  }
  return out;
}

std::string sbx_log(const TempDir& scratch) { return read_file(scratch / "sbx.log"); }

// workspace-write for bwrap; for landlock the same without protected names (it cannot keep
// them), written to `scratch`.
// The Landlock policy lives in `scratch`, outside its only writable root (the working
// directory): a --policy file inside a writable root is kept read-only, which Landlock cannot do.
std::vector<std::string> policy_for(const std::string& backend, const TempDir& scratch) {
  if (backend == "bwrap") return {"--preset", "workspace-write"};
  write_file(scratch / "policy.json",
             R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
             R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
             R"("protected_names":[]},)"
             R"("network":{"mode":"restricted"}})");
  return {"--policy", scratch / "policy.json"};
}

std::vector<std::string> exec_argv(const std::string& backend, const TempDir& scratch,
                                   const std::string& cwd,
                                   const std::vector<std::string>& command) {
  std::vector<std::string> argv = {sbx_path(), "--backends", backend, "exec"};
  const std::vector<std::string> policy = policy_for(backend, scratch);
  argv.insert(argv.end(), policy.begin(), policy.end());
  argv.insert(argv.end(), {"--cwd", cwd, "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// SIGKILLs sbx once the command has written `ready`, then expects its whole tree gone.
void expect_tree_dies_with_sbx(const std::string& backend) {
  TempDir ws;
  TempDir scratch;
  const pid_t sbx = start_in_background(
      exec_argv(backend, scratch, ws.path(),
                {"/bin/sh", "-c", "sleep 300 & sleep 300 & echo \"$$ $!\" > pids; wait"}),
      base_env(), scratch / "sbx.log");
  ASSERT_TRUE(eventually([&] { return exists(ws / "pids"); }, 30))
      << "the command did not start: " << sbx_log(scratch);
  std::set<pid_t> tree;
  // Both sleeps are up once the shell has written the file; give /proc a moment to list them.
  eventually(
      [&] {
        tree = descendants(sbx);
        int sleeps = 0;
        for (const auto& [pid, info] : processes())
          if (tree.count(pid) != 0 && info.comm == "sleep") ++sleeps;
        return sleeps == 2;
      },
      kLoadedMachineSeconds);
  int sleeps = 0;
  for (const auto& [pid, info] : processes())
    if (tree.count(pid) != 0 && info.comm == "sleep") ++sleeps;
  ASSERT_EQ(sleeps, 2) << "tree: " << describe_pids(tree);
  ASSERT_EQ(::kill(sbx, SIGKILL), 0);
  int status = 0;
  ::waitpid(sbx, &status, 0);
  const bool gone = eventually(
      [&] {
        for (pid_t pid : tree)
          if (alive(pid)) return false;
        return true;
      },
      kLoadedMachineSeconds);
  std::set<pid_t> left;
  for (pid_t pid : tree)
    if (alive(pid)) left.insert(pid);
  EXPECT_TRUE(gone) << "still running " << kLoadedMachineSeconds
                    << " s after sbx was killed: " << describe_pids(left);
  for (pid_t pid : left) ::kill(pid, SIGKILL);  // do not leave them to the next test
}

bool backend_available(const std::string& backend, std::string& why) {
  TempDir ws;
  TempDir scratch;
  const RunResult r = run(exec_argv(backend, scratch, ws.path(), {"/bin/true"}), base_env());
  why = describe(r);
  return r.code == 0;
}

TEST(KilledSbx, LandlockRunsWholeTreeEndsWithIt) {
  std::string why;
  if (!backend_available("landlock", why)) GTEST_SKIP() << "landlock cannot run here: " << why;
  expect_tree_dies_with_sbx("landlock");
}

TEST(KilledSbx, BwrapRunsWholeTreeEndsWithIt) {
  std::string why;
  if (!backend_available("bwrap", why)) GTEST_SKIP() << "bwrap cannot run here: " << why;
  expect_tree_dies_with_sbx("bwrap");
}

struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool present = false;
};

Identity identity(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, true};
}

// Starts sbx, waits for the command's `ready` file, SIGKILLs sbx and waits until its tree is
// gone. Returns the pids' cmdlines seen while it ran (to find the proxy's socket).
std::vector<std::string> kill_mid_run(const std::vector<std::string>& argv,
                                      const std::vector<std::string>& env, const TempDir& ws,
                                      const TempDir& scratch) {
  const pid_t sbx = start_in_background(argv, env, scratch / "sbx.log");
  std::vector<std::string> cmdlines;
  if (!eventually([&] { return exists(ws / "ready"); }, 30)) {
    ::kill(sbx, SIGKILL);
    ::waitpid(sbx, nullptr, 0);
    ADD_FAILURE() << "the command did not start: " << sbx_log(scratch);
    return cmdlines;
  }
  const std::set<pid_t> tree = descendants(sbx);
  for (pid_t pid : tree) cmdlines.push_back(read_file("/proc/" + std::to_string(pid) + "/cmdline"));
  ::kill(sbx, SIGKILL);
  ::waitpid(sbx, nullptr, 0);
  eventually(
      [&] {
        for (pid_t pid : tree)
          if (alive(pid)) return false;
        return true;
      },
      10);
  return cmdlines;
}

TEST(KilledSbx, BwrapMountPointsAreRemovedByTheNextRunAndAPersonsAreKept) {
  std::string why;
  if (!backend_available("bwrap", why)) GTEST_SKIP() << "bwrap cannot run here: " << why;
  TempDir ws;      // no .git, .codex, .agents: the run masks them over mount point files
  TempDir tmpdir;  // $TMPDIR, the second writable root, holds a person's own empty .codex
  TempDir scratch;
  ASSERT_TRUE(fs::create_directory(tmpdir / ".codex"));
  const std::vector<std::string> names = {".git", ".codex", ".agents"};
  // /tmp is a writable root too, one every user may write: a mount point made there goes only
  // when no run of any user holds /tmp's lock (other users' runs may rely on it), which other
  // tests running alongside may do; so what is checked there is that the inode this run made
  // is, after the next run, either gone or still that socket, never replaced by anything else.
  std::map<std::string, bool> in_slash_tmp_before;
  for (const std::string& name : names) in_slash_tmp_before[name] = exists("/tmp/" + name);
  std::vector<std::string> env = base_env();
  env.push_back("TMPDIR=" + tmpdir.path());
  const std::vector<std::string> argv = {
      sbx_path(), "--backends", "bwrap", "exec",    "--preset", "workspace-write",
      "--cwd",    ws.path(),    "--",    "/bin/sh", "-c",       "echo up > ready; sleep 300"};
  const pid_t sbx = start_in_background(argv, env, scratch / "sbx.log");
  ASSERT_TRUE(eventually([&] { return exists(ws / "ready"); }, 30))
      << "the command did not start: " << sbx_log(scratch);
  std::map<std::string, Identity> slash_tmp_made;
  for (const std::string& name : names) {
    // The mount point is a socket inode (/dev/null is bound over it in the sandbox).
    EXPECT_TRUE(fs::is_socket(fs::symlink_status(ws / name)))
        << name << ": no mount point on the host";
    if (!in_slash_tmp_before[name]) slash_tmp_made[name] = identity("/tmp/" + name);
  }
  const std::set<pid_t> tree = descendants(sbx);
  ::kill(sbx, SIGKILL);
  ::waitpid(sbx, nullptr, 0);
  eventually(
      [&] {
        for (pid_t pid : tree)
          if (alive(pid)) return false;
        return true;
      },
      10);
  // A killed sbx cleans nothing up: the mount points stay until the next bwrap run of this user
  // (any concurrent one sweeps them too, so under a parallel test run they may be gone).
  for (const std::string& name : names) {
    if (!fs::exists(ws / name))
      std::printf("note: %s was already removed by a concurrent run's sweep\n", name.c_str());
  }

  const RunResult next = run({sbx_path(), "--backends", "bwrap", "exec", "--preset",
                              "workspace-write", "--cwd", ws.path(), "--", "/bin/true"},
                             env);
  ASSERT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(listing(ws.path()), std::vector<std::string>{"ready"})
      << "the killed run's mount points are still in the workspace";
  EXPECT_EQ(listing(tmpdir.path()), std::vector<std::string>{".codex"})
      << "$TMPDIR is not back to what it was";
  EXPECT_TRUE(fs::is_directory(tmpdir / ".codex")) << "a person's own .codex was removed";
  for (const auto& [name, made] : slash_tmp_made) {
    const Identity now = identity("/tmp/" + name);
    if (!now.present) continue;  // swept: no run of any user relied on it any more
    std::printf("note: /tmp/%s is still there (a run alongside holds /tmp's lock)\n", name.c_str());
    EXPECT_TRUE(made.present && made.dev == now.dev && made.ino == now.ino &&
                fs::is_socket(fs::symlink_status("/tmp/" + name)))
        << "/tmp/" << name << " made by the killed run was replaced";
  }
  if (slash_tmp_made.empty())
    std::printf(
        "note: /tmp/.git, .codex and .agents all existed before the run (another run's "
        "or a person's), so /tmp was not checked\n");
}

TEST(KilledSbx, ProxyRunsSocketDirectoryIsRemovedByTheNextRun) {
  std::string why;
  if (!backend_available("bwrap", why)) GTEST_SKIP() << "bwrap cannot run here: " << why;
  TempDir ws;
  TempDir scratch;
  write_file(scratch / "policy.json", R"({"version": 1,
      "filesystem": {"kind": "restricted",
        "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
      "network": {"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]}})");
  const std::vector<std::string> argv = {
      sbx_path(), "--backends", "bwrap", "exec",    "--policy", scratch / "policy.json",
      "--cwd",    ws.path(),    "--",    "/bin/sh", "-c",       "echo up > ready; sleep 300"};
  const std::vector<std::string> cmdlines = kill_mid_run(argv, base_env(), ws, scratch);
  std::string socket;
  for (const std::string& cmdline : cmdlines) {
    const std::string flag = std::string("--proxy-socket") + '\0';
    const std::size_t at = cmdline.find(flag);
    if (at != std::string::npos) socket = cmdline.substr(at + flag.size()).c_str();
  }
  ASSERT_FALSE(socket.empty()) << "no --proxy-socket in the run's process tree";
  const std::string directory = socket.substr(0, socket.rfind('/'));
  EXPECT_TRUE(exists(socket)) << "a killed sbx cannot remove its socket";
  fs::remove(ws / "ready");
  const RunResult next = run({sbx_path(), "--backends", "bwrap", "exec", "--policy",
                              scratch / "policy.json", "--cwd", ws.path(), "--", "/bin/true"},
                             base_env());
  ASSERT_EQ(next.code, 0) << describe(next);
  EXPECT_FALSE(exists(directory)) << directory << " (the killed run's) is still there";
}

// Another user creates the name sbx once used for this user's state in /tmp
// (/tmp/sbx-bwrap-<uid>) before the user ever runs sbx: bwrap must stay available and the state
// must not go there.
TEST(StateDirectory, AnotherUsersSquatInTmpNeitherBlocksNorRedirectsBwrap) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a throwaway user";
  if (::access("/usr/sbin/useradd", X_OK) != 0) GTEST_SKIP() << "no /usr/sbin/useradd here";
  const std::string name = "sbxsq" + std::to_string(::getpid());
  TempDir home(private_parent());  // below /tmp sbx would keep no state in it
  TempDir ws;
  const RunResult added = run({"/usr/sbin/useradd", "--system", "--no-create-home", "--home-dir",
                               home.path(), "--shell", "/bin/sh", name},
                              base_env());
  ASSERT_EQ(added.code, 0) << describe(added);
  struct Cleanup {
    std::string name;
    ~Cleanup() { run({"/usr/sbin/userdel", name}, base_env()); }
  } cleanup{name};
  const passwd* pw = ::getpwnam(name.c_str());
  ASSERT_NE(pw, nullptr);
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  ASSERT_EQ(::chown(home.path().c_str(), uid, gid), 0);
  ASSERT_EQ(::chown(ws.path().c_str(), uid, gid), 0);
  if (exists("/run/user/" + std::to_string(uid)))
    GTEST_SKIP() << "/run/user/" << uid << " exists: the user would not need a fallback";
  // The squat: owned by someone else (daemon, uid 1), private to them. Not nobody: the escape
  // suites, running meanwhile, check that nobody (their unprivileged identity) has no sbx
  // state in /tmp.
  const std::string squat = "/tmp/sbx-bwrap-" + std::to_string(uid);
  fs::remove_all(squat);
  ASSERT_EQ(::mkdir(squat.c_str(), 0700), 0);
  ASSERT_EQ(::chown(squat.c_str(), 1, 1), 0);
  struct RemoveSquat {
    std::string path;
    ~RemoveSquat() { fs::remove_all(path); }
  } remove_squat{squat};

  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + home.path(),
                                        "LANG=C.UTF-8"};
  const std::vector<std::string> argv = {sbx_path(), "--backends",   "bwrap", "exec",
                                         "--cwd",    ws.path(),      "--",    "/bin/sh",
                                         "-c",       "echo ok > out"};
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(120);
    std::vector<char*> a, e;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    e.push_back(nullptr);
    ::execve(a[0], a.data(), e.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string output;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
    output.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bwrap was not usable for " << name << ": " << output;
  EXPECT_EQ(read_file(ws / "out"), "ok\n");
  EXPECT_TRUE(fs::is_empty(squat)) << "state went into the squatted directory";
  struct stat st {};
  const std::string state = home.path() + "/.cache/sbx/bwrap";
  ASSERT_EQ(::lstat(state.c_str(), &st), 0) << "no state directory in the user's cache";
  EXPECT_EQ(st.st_uid, uid);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

// A user with no runtime directory and no home (a service account): bwrap stays available, and
// nothing goes to /tmp; without a registry nobody may remove the mount points, so they stay.
TEST(StateDirectory, WithoutAnyPrivatePlaceBwrapRunsAndKeepsItsMountPoints) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
  if (exists("/run/user/65534")) GTEST_SKIP() << "/run/user/65534 exists here";
  const RunResult probe =
      run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/bwrap",
           "--unshare-user", "--ro-bind", "/", "/", "/bin/true"},
          base_env());
  if (probe.code != 0)
    GTEST_SKIP() << "user 65534 cannot create user namespaces here: " << probe.err;
  TempDir ws;
  ASSERT_EQ(::chown(ws.path().c_str(), 65534, 65534), 0);
  const bool old_name_existed = exists("/tmp/sbx-bwrap-65534");
  // The kept mount points include those at the top of /tmp (a writable root of the preset):
  // this test removes the ones it made, so that no later test or run finds a stray /tmp/.git.
  std::vector<std::string> made_in_tmp;
  for (const char* name : {"/tmp/.git", "/tmp/.codex", "/tmp/.agents"}) {
    if (!exists(name)) made_in_tmp.emplace_back(name);
  }
  const RunResult r =
      run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sbx_path(),
           "--backends", "bwrap", "exec", "--preset", "workspace-write", "--cwd", ws.path(), "--",
           "/bin/sh", "-c", "echo ok > out; mkdir .codex 2>/dev/null; true"},
          {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(read_file(ws / "out"), "ok\n");
  // The kept mount point: the socket inode sbx made without recording it (without a state
  // directory nothing can be recorded) and bwrap bound /dev/null over; nothing the command made.
  // Not the empty regular file bwrap would have made: left for good, an empty `.git` file makes
  // git die in that directory.
  EXPECT_TRUE(fs::is_socket(fs::symlink_status(ws / ".codex")))
      << "the command created .codex, or the mount point is not sbx's socket inode";
  if (!old_name_existed) {
    EXPECT_FALSE(exists("/tmp/sbx-bwrap-65534")) << "state went to /tmp";
  }
  // Only what user 65534 made (an empty file of a concurrent run of root's is a mount point its
  // registry still holds: removing it would unmask that run's protected name). Sockets and
  // empty files (this version's mount points) and empty directories (an older version's).
  for (const std::string& path : made_in_tmp) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || st.st_uid != 65534) continue;
    if (S_ISDIR(st.st_mode)) ::rmdir(path.c_str());  // only if still empty
    if ((S_ISREG(st.st_mode) && st.st_size == 0) || S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  }
}

// Without /run/user/<uid> (su sessions, containers, CI) the proxy's socket directory went to
// /tmp, where a Landlock run with /tmp writable deleted another run's socket (issue #32). Now
// it is in the user's ~/.cache/sbx/proxy: a second run of the same user, with /tmp writable,
// can neither remove nor replace it. Both runs as user 65534 under Landlock, the home outside
// /tmp and /var/tmp (as a real home is).
TEST(StateDirectory, ARunWithTmpWritableCannotReachAnotherRunsProxySocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
  if (exists("/run/user/65534")) GTEST_SKIP() << "/run/user/65534 exists here";
  std::string why;
  if (!backend_available("landlock", why)) GTEST_SKIP() << "landlock cannot run here: " << why;
  TempDir home(private_parent());  // below /var/tmp sbx would keep no state in it
  TempDir victim_ws("/var/tmp");
  TempDir attacker_ws("/var/tmp");
  TempDir scratch("/var/tmp");  // the policy files: outside every writable root
  for (const TempDir* dir : {&home, &victim_ws, &attacker_ws})
    ASSERT_EQ(::chown(dir->path().c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(scratch.path().c_str(), 0755), 0);
  write_file(scratch / "victim.json", R"({"version": 1,
      "filesystem": {"kind": "restricted", "protected_names": [],
        "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
      "network": {"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]}})");
  write_file(scratch / "attacker.json", R"({"version": 1,
      "filesystem": {"kind": "restricted", "protected_names": [],
        "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},
                    {"path": "/tmp", "access": "write"}]},
      "network": {"mode": "restricted"}})");
  ::chmod((scratch / "victim.json").c_str(), 0644);
  ::chmod((scratch / "attacker.json").c_str(), 0644);
  const std::vector<std::string> as_nobody = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                              "--clear-groups"};
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + home.path(),
                                        "LANG=C.UTF-8"};
  std::vector<std::string> victim = as_nobody;
  for (const std::string& arg :
       {sbx_path(), std::string("--backends"), std::string("landlock"), std::string("exec"),
        std::string("--policy"), scratch / "victim.json", std::string("--cwd"), victim_ws.path(),
        std::string("--"), std::string("/bin/sh"), std::string("-c"),
        std::string("echo up > ready; sleep 120")})
    victim.push_back(arg);
  const pid_t pid = start_in_background(victim, env, scratch / "victim.log");
  struct StopVictim {
    pid_t pid;
    ~StopVictim() {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
  } stop{pid};
  ASSERT_TRUE(eventually([&] { return exists(victim_ws / "ready"); }, kLoadedMachineSeconds))
      << "the proxy run never started: " << read_file(scratch / "victim.log");
  // Its socket, wherever sbx put it: the user's state directory, or (before) /tmp.
  std::string socket;
  for (const std::string& parent : {home.path() + "/.cache/sbx/proxy", std::string("/tmp")}) {
    if (!fs::is_directory(parent)) continue;
    for (const auto& entry : fs::directory_iterator(parent)) {
      struct stat st {};
      const std::string candidate = entry.path().string() + "/proxy.sock";
      if (entry.path().filename().string().rfind("sbx-proxy-", 0) == 0 &&
          ::lstat(entry.path().c_str(), &st) == 0 && st.st_uid == 65534 &&
          fs::is_socket(fs::symlink_status(candidate)))
        socket = candidate;
    }
  }
  ASSERT_FALSE(socket.empty()) << "no proxy socket of user 65534 found";
  EXPECT_NE(socket.rfind("/tmp/", 0), 0u) << "the proxy's socket is in /tmp: " << socket;
  struct stat before {};
  ASSERT_EQ(::lstat(socket.c_str(), &before), 0);
  const std::string directory = socket.substr(0, socket.rfind('/'));
  // The attack: remove the socket, or its directory, and put a socket of its own in its place.
  const std::string attack = "rm -rf '" + directory + "'; mkdir -p '" + directory +
                             "' && python3 -c 'import socket,sys; "
                             "socket.socket(socket.AF_UNIX).bind(sys.argv[1])' '" +
                             socket + "'; true";
  std::vector<std::string> attacker = as_nobody;
  for (const std::string& arg :
       {sbx_path(), std::string("--backends"), std::string("landlock"), std::string("exec"),
        std::string("--policy"), scratch / "attacker.json", std::string("--cwd"),
        attacker_ws.path(), std::string("--"), std::string("/bin/sh"), std::string("-c"), attack})
    attacker.push_back(arg);
  const RunResult attacked = run(attacker, env);
  ASSERT_EQ(attacked.code, 0) << describe(attacked);
  struct stat after {};
  ASSERT_EQ(::lstat(socket.c_str(), &after), 0) << "the other run's socket was removed";
  EXPECT_EQ(after.st_ino, before.st_ino) << "the other run's socket was replaced";
  EXPECT_EQ(after.st_dev, before.st_dev);

  // A policy that makes the home (and so ~/.cache/sbx/proxy) writable: the state directory is
  // kept read-only like sbx's install, which Landlock cannot do, so the run is refused naming it.
  write_file(scratch / "home.json", R"({"version": 1,
      "filesystem": {"kind": "restricted", "protected_names": [],
        "entries": [{"path": ":root", "access": "read"}, {"path": "~", "access": "write"}]},
      "network": {"mode": "restricted"}})");
  ::chmod((scratch / "home.json").c_str(), 0644);
  for (std::string& arg : attacker)
    if (arg == scratch / "attacker.json") arg = scratch / "home.json";
  const RunResult refused = run(attacker, env);
  EXPECT_EQ(refused.code, 125) << describe(refused);
  EXPECT_NE(refused.err.find(home.path() + "/.cache/sbx/proxy"), std::string::npos)
      << describe(refused);
  ASSERT_EQ(::lstat(socket.c_str(), &after), 0) << "the other run's socket was removed";
  EXPECT_EQ(after.st_ino, before.st_ino) << "the other run's socket was replaced";

  // bwrap carves the state directory out of the writable home (read-only inside).
  const RunResult userns =
      run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/bwrap",
           "--unshare-user", "--ro-bind", "/", "/", "/bin/true"},
          base_env());
  if (userns.code != 0) {
    std::printf(
        "note: user 65534 cannot create user namespaces here, the bwrap case was not "
        "run: %s\n",
        userns.err.c_str());
    return;
  }
  for (std::size_t i = 0; i + 1 < attacker.size(); ++i)
    if (attacker[i] == "--backends") attacker[i + 1] = "bwrap";
  attacker.back() = "rm -rf '" + directory + "'; touch '" + home.path() + "/written'";
  const RunResult carved = run(attacker, env);
  ASSERT_EQ(carved.code, 0) << describe(carved);
  EXPECT_TRUE(exists(home / "written")) << "the home was not writable: " << describe(carved);
  ASSERT_EQ(::lstat(socket.c_str(), &after), 0)
      << "a bwrap run with the home writable removed the other run's socket";
  EXPECT_EQ(after.st_ino, before.st_ino) << "the other run's socket was replaced";
}

}  // namespace
