// A settings file that does not exist yet is kept from being created by the command (the next
// run would read it), and that protection leaves nothing on the host that blocks the user's own
// programs or a later run: with the home directory writable and no ~/.config, sbx makes
// ~/.config/sbx (a real directory, as the user's programs would) and keeps it read-only in the
// sandbox, instead of a mount point at ~/.config on the host — which stayed after a run without
// a usable state directory or a killed one, and made every later run fail with 125 ("Can't
// mkdir parents for ~/.config/sbx: Not a directory").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

// The home directory writable, nothing protected by name: only the settings file's protection
// puts anything into the home directory.
std::string write_home_policy(const TempDir& dir) {
  return dir.write("policy.json",
                   R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                   R"({"path":":root","access":"read"},{"path":"~","access":"write"}],)"
                   R"("protected_names":[]},"network":{"mode":"restricted"}})");
}

std::vector<std::string> env_with_home(const std::string& home) {
  std::vector<std::string> env = base_env();
  for (std::string& entry : env) {
    if (entry.rfind("HOME=", 0) == 0) entry = "HOME=" + home;
  }
  return env;
}

// Plants the user settings file from inside; prints PLANTED if that worked.
const char kPlant[] =
    "mkdir -p ~/.config/sbx 2>/dev/null; "
    "echo '{\"excluded_commands\":[\"*\"]}' > ~/.config/sbx/settings.json 2>/dev/null && "
    "echo PLANTED; true; ";

bool eventually(const std::function<bool()>& condition, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

bool is_real_directory(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Root, state in /run/sbx-bwrap: during the run the user's own programs can make ~/.config/...
// on the host; sbx is then killed with SIGKILL, and the next run starts and still keeps the
// file uncreatable.
TEST(MissingSettings, HomeStaysUsableDuringAndAfterAKilledRun) {
  SBX_REQUIRE_BWRAP();
  TempDir base("/var/tmp");
  TempDir conf("/var/tmp");
  const std::string home = base / "home";
  const std::string ws = home + "/ws";
  fs::create_directories(ws);
  const std::string policy = write_home_policy(conf);
  const std::vector<std::string> env = env_with_home(home);
  const pid_t sbx = start_in_background(
      {sbx_path(), "--backends", "bwrap", "exec", "--policy", policy, "--cwd", ws, "--", "/bin/sh",
       "-c", std::string(kPlant) + "echo up > ready; sleep 300"},
      env, conf / "sbx.log");
  ASSERT_TRUE(eventually([&] { return exists(ws + "/ready"); }, 30))
      << "the command did not start: " << read_file(conf / "sbx.log");
  // On the host, while the run lasts: ~/.config is a directory a program of the user can use.
  EXPECT_TRUE(is_real_directory(home + "/.config")) << "~/.config is not a directory on the host";
  std::error_code error;
  fs::create_directories(home + "/.config/editor", error);
  EXPECT_FALSE(error) << "the user's own program could not make ~/.config/editor: "
                      << error.message();
  ::kill(sbx, SIGKILL);
  ::waitpid(sbx, nullptr, 0);
  EXPECT_EQ(read_file(conf / "sbx.log").find("PLANTED"), std::string::npos)
      << read_file(conf / "sbx.log");

  const RunResult next = run({sbx_path(), "--backends", "bwrap", "exec", "--policy", policy,
                              "--cwd", ws, "--", "/bin/sh", "-c", kPlant},
                             env);
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(next.out.find("PLANTED"), std::string::npos) << describe(next);
  EXPECT_FALSE(exists(home + "/.config/sbx/settings.json"));
  EXPECT_TRUE(is_real_directory(home + "/.config/sbx"));
  EXPECT_TRUE(is_real_directory(home + "/.config/editor"));
}

// An unprivileged user without any usable state directory (no /run/user/<uid>, the cache
// directory unusable): nothing can be recorded for removal, so nothing that needs removal may
// be made. Before, the first run left a socket at ~/.config for good and every later run failed.
TEST(MissingSettings, WithoutAStateDirectoryLaterRunsStillWork) {
  SBX_REQUIRE_BWRAP();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
  if (exists("/run/user/65534")) GTEST_SKIP() << "/run/user/65534 exists here: state is usable";
  const RunResult probe =
      run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/bwrap",
           "--unshare-user", "--ro-bind", "/", "/", "/bin/true"},
          base_env());
  if (probe.code != 0)
    GTEST_SKIP() << "user 65534 cannot create user namespaces here: " << probe.err;
  const RunResult reachable = run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                   "--clear-groups", "/usr/bin/test", "-x", sbx_path()},
                                  base_env());
  if (reachable.code != 0)
    GTEST_SKIP() << "user 65534 cannot execute " << sbx_path()
                 << " (a parent directory of the installed tree is private to its owner)";
  TempDir base("/var/tmp");
  TempDir conf("/var/tmp");
  ASSERT_EQ(::chmod(base.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(conf.path().c_str(), 0755), 0);
  const std::string home = base / "home";
  const std::string ws = home + "/ws";
  fs::create_directories(ws);
  ASSERT_EQ(::chown(home.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chown(ws.c_str(), 65534, 65534), 0);
  const std::string policy = write_home_policy(conf);
  std::vector<std::string> env = env_with_home(home);
  env.push_back("XDG_CACHE_HOME=/proc/no-cache-here");  // no private place for bwrap's state
  const std::vector<std::string> argv = {"/usr/bin/setpriv",
                                         "--reuid=65534",
                                         "--regid=65534",
                                         "--clear-groups",
                                         sbx_path(),
                                         "--backends",
                                         "bwrap",
                                         "exec",
                                         "--policy",
                                         policy,
                                         "--cwd",
                                         ws,
                                         "--",
                                         "/bin/sh",
                                         "-c",
                                         kPlant};
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const RunResult r = run(argv, env);
    EXPECT_EQ(r.code, 0) << "run " << attempt << ": " << describe(r);
    EXPECT_EQ(r.out.find("PLANTED"), std::string::npos) << describe(r);
    EXPECT_TRUE(is_real_directory(home + "/.config"))
        << "after run " << attempt << " ~/.config is not a directory";
  }
  EXPECT_FALSE(exists(home + "/.config/sbx/settings.json"));
  // The user's own programs can use ~/.config afterwards.
  const RunResult mkdir = run({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                               "--clear-groups", "/bin/mkdir", home + "/.config/editor"},
                              env);
  EXPECT_EQ(mkdir.code, 0) << describe(mkdir);
}

}  // namespace
