// resolve_command (shell-like lookup on the real filesystem), strip_unsafe_env and
// harden_current_process (in a forked child, since it changes the process).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sbx/core/spawn.hpp"
#include "spawn_helpers.hpp"

namespace sbx {
namespace {

using sbx::test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr unsigned kExec = 0755;
constexpr unsigned kPlain = 0644;

TEST(ResolveCommandTest, AbsolutePathIsKept) {
  Result<std::string> path = resolve_command("/bin/sh", "/", {});
  ASSERT_TRUE(path.ok()) << path.error();
  EXPECT_EQ(*path, "/bin/sh");
}

TEST(ResolveCommandTest, PathWithSlashIsRelativeToCwdAndSkipsPATH) {
  TempDir dir;
  dir.write("tool", "#!/bin/sh\n", kExec);
  std::filesystem::create_directory(dir.file("sub"));
  dir.write("sub/inner", "#!/bin/sh\n", kExec);
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
  EXPECT_EQ(resolve_command("./tool", dir.path(), env).value(), dir.file("tool"));
  EXPECT_EQ(resolve_command("sub/inner", dir.path(), env).value(), dir.file("sub/inner"));
  Result<std::string> missing = resolve_command("./sh", dir.path(), env);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("command not found: ./sh"));
}

TEST(ResolveCommandTest, PathWithSlashToNonExecutableIsReturnedSoRunningGives126) {
  TempDir dir;
  dir.write("plain", "data", kPlain);
  EXPECT_EQ(resolve_command("./plain", dir.path(), {}).value(), dir.file("plain"));
}

TEST(ResolveCommandTest, SearchesPATHFromTheGivenEnvSkippingNonExecutables) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("a"));
  std::filesystem::create_directory(dir.file("b"));
  std::filesystem::create_directory(dir.file("c"));
  std::filesystem::create_directory(dir.file("a/tool"));  // a directory is not a command
  dir.write("b/tool", "data", kPlain);                    // not executable
  dir.write("c/tool", "#!/bin/sh\n", kExec);
  const std::vector<std::string> env = {
      "XPATH=/bin", "PATH=" + dir.file("a") + ":" + dir.file("b") + ":" + dir.file("c")};
  Result<std::string> path = resolve_command("tool", "/", env);
  ASSERT_TRUE(path.ok()) << path.error();
  EXPECT_EQ(*path, dir.file("c/tool"));
}

TEST(ResolveCommandTest, EmptyAndRelativePATHElementsAreUnderCwd) {
  TempDir dir;
  dir.write("here", "#!/bin/sh\n", kExec);
  std::filesystem::create_directory(dir.file("rel"));
  dir.write("rel/there", "#!/bin/sh\n", kExec);
  EXPECT_EQ(resolve_command("here", dir.path(), {"PATH=/nonexistent:"}).value(), dir.file("here"));
  EXPECT_EQ(resolve_command("there", dir.path(), {"PATH=rel"}).value(), dir.file("rel/there"));
}

TEST(ResolveCommandTest, DefaultPATHWhenEnvHasNone) {
  Result<std::string> path = resolve_command("sh", "/", {"HOME=/root"});
  ASSERT_TRUE(path.ok()) << path.error();
  // Debian 12 has merged /usr, so the first default element already has it.
  EXPECT_EQ(*path, "/usr/bin/sh");
}

TEST(ResolveCommandTest, NotFoundErrorsNameTheCommandAndPATH) {
  Result<std::string> missing = resolve_command("no-such-sbx-cmd", "/", {"PATH=/usr/bin"});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error(), HasSubstr("command not found: no-such-sbx-cmd"));
  EXPECT_THAT(missing.error(), HasSubstr("PATH=/usr/bin"));
  EXPECT_FALSE(resolve_command("", "/", {}).ok());
  Result<std::string> bad_cwd = resolve_command("sh", "relative", {});
  ASSERT_FALSE(bad_cwd.ok());
  EXPECT_THAT(bad_cwd.error(), HasSubstr("not absolute"));
}

TEST(StripUnsafeEnvTest, RemovesLoaderAndGlibcUnsafeVariablesOnly) {
  const std::vector<std::string> env = {"PATH=/usr/bin",
                                        "LD_PRELOAD=/tmp/evil.so",
                                        "LD_LIBRARY_PATH=/tmp",
                                        "LD_AUDIT=/tmp/a.so",
                                        "DYLD_INSERT_LIBRARIES=x",
                                        "GCONV_PATH=/tmp/gconv",
                                        "GETCONF_DIR=/tmp",
                                        "GLIBC_TUNABLES=glibc.malloc.check=3",
                                        "HOSTALIASES=/tmp/h",
                                        "LOCALDOMAIN=evil",
                                        "LOCPATH=/tmp/loc",
                                        "MALLOC_TRACE=/tmp/t",
                                        "MALLOC_CHECK_=3",
                                        "MALLOC_ARENA_MAX=1",
                                        "NIS_PATH=x",
                                        "NLSPATH=/tmp/%N",
                                        "RESOLV_HOST_CONF=/tmp/r",
                                        "RES_OPTIONS=debug",
                                        "TZDIR=/tmp/tz",
                                        "TMPDIR=/tmp/mine",
                                        "HOME=/home/u",
                                        "LD=keep-not-a-prefix",
                                        "OLD_LD_PRELOAD=kept",
                                        "NOEQUALS",
                                        "=nameless",
                                        "TZ=UTC"};
  EXPECT_THAT(strip_unsafe_env(env),
              ElementsAre("PATH=/usr/bin", "TMPDIR=/tmp/mine", "HOME=/home/u",
                          "LD=keep-not-a-prefix", "OLD_LD_PRELOAD=kept", "TZ=UTC"));
}

TEST(HardenCurrentProcessTest, NotDumpableNoCoreAndNoLdVariables) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("LD_PRELOAD", "/tmp/evil.so", 1);
    setenv("LD_LIBRARY_PATH", "/tmp", 1);
    setenv("SBX_KEEP_ME", "yes", 1);
    harden_current_process();
    struct rlimit core {};
    getrlimit(RLIMIT_CORE, &core);
    int failures = 0;
    if (prctl(PR_GET_DUMPABLE) != 0) failures |= 1;
    if (core.rlim_cur != 0 || core.rlim_max != 0) failures |= 2;
    if (std::getenv("LD_PRELOAD") != nullptr || std::getenv("LD_LIBRARY_PATH") != nullptr)
      failures |= 4;
    if (std::getenv("SBX_KEEP_ME") == nullptr) failures |= 8;
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "bits: 1 dumpable, 2 core limit, 4 LD_* still set, 8 other variable removed";
}

}  // namespace
}  // namespace sbx
