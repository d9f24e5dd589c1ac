// spawn_and_wait with real processes: exit status mapping, 126/127/125, exact environment,
// cwd, stray fds, signal dispositions, and stdin/stdout passthrough of large data.
#include "sbx/core/spawn.hpp"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "spawn_helpers.hpp"

namespace sbx {
namespace {

using sbx::test::TempDir;
using spawn_test::Captured;
using spawn_test::run_capturing;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ExecPlan sh(const std::string& script, std::vector<std::string> env = {}) {
  return ExecPlan{{"/bin/sh", "-c", script}, std::move(env), "/", {}};
}

ExitStatus run_ok(const ExecPlan& plan) {
  Result<ExitStatus> status = spawn_and_wait(plan);
  EXPECT_TRUE(status.ok()) << status.error();
  return status.ok() ? *status : ExitStatus{-1, -1};
}

TEST(SpawnTest, ExitCodesPassThrough) {
  for (int code : {0, 1, 42, 255}) {
    ExitStatus status = run_ok(sh("exit " + std::to_string(code)));
    EXPECT_EQ(status.exit_code, code);
    EXPECT_EQ(status.signal, 0);
    EXPECT_EQ(status.shell_code(), code);
  }
}

TEST(SpawnTest, DeathBySignalIsReportedAs128PlusSignal) {
  ExitStatus killed = run_ok(sh("kill -KILL $$"));
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_EQ(killed.shell_code(), 128 + SIGKILL);
  ExitStatus terminated = run_ok(sh("kill -TERM $$"));
  EXPECT_EQ(terminated.signal, SIGTERM);
  EXPECT_EQ(terminated.shell_code(), 143);
}

TEST(SpawnTest, MissingCommandIs127WithMessage) {
  ::testing::internal::CaptureStderr();
  ExitStatus status = run_ok({{"/nonexistent-sbx-dir/nosuch"}, {}, "/", {}});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status.exit_code, kExitNotFound);
  EXPECT_EQ(status.signal, 0);
  EXPECT_EQ(err, "sbx: /nonexistent-sbx-dir/nosuch: command not found\n");
}

TEST(SpawnTest, NonExecutableFileIs126) {
  TempDir dir;
  const std::string plain = dir.write("plain", "#!/bin/sh\necho hi\n", 0644);
  ::testing::internal::CaptureStderr();
  ExitStatus status = run_ok({{plain}, {}, "/", {}});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status.exit_code, kExitNotExecutable);
  EXPECT_THAT(err, HasSubstr("sbx: " + plain + ": not executable: Permission denied"));
}

TEST(SpawnTest, UnknownBinaryFormatAndDirectoryAre126) {
  TempDir dir;
  // Executable bits but no #! and no ELF header: execve fails with ENOEXEC.
  const std::string garbage = dir.write("garbage", "\x01\x02\x03 not a program", 0755);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_ok({{garbage}, {}, "/", {}}).exit_code, kExitNotExecutable);
  EXPECT_EQ(run_ok({{dir.path()}, {}, "/", {}}).exit_code, kExitNotExecutable);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("Exec format error"));
}

TEST(SpawnTest, CommandOwn126And127AreNotConfusedWithSbxFailures) {
  // The same numbers from the command itself pass through silently.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_ok(sh("exit 127")).exit_code, 127);
  EXPECT_EQ(run_ok(sh("exit 125")).exit_code, 125);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(SpawnTest, EnvironmentIsExactlyThePlans) {
  setenv("SBX_SPAWN_TEST_LEAK", "must-not-appear", 1);
  Captured run = run_capturing({{"/usr/bin/env"}, {"A=1", "B=two words", "EMPTY="}, "/", {}});
  ASSERT_TRUE(run.status.ok()) << run.status.error();
  EXPECT_EQ(run.out, "A=1\nB=two words\nEMPTY=\n");
  Captured empty = run_capturing({{"/usr/bin/env"}, {}, "/", {}});
  ASSERT_TRUE(empty.status.ok()) << empty.status.error();
  EXPECT_EQ(empty.out, "");
  unsetenv("SBX_SPAWN_TEST_LEAK");
}

TEST(SpawnTest, RunsInThePlansCwd) {
  TempDir dir;
  Captured run = run_capturing({{"/bin/pwd", "-P"}, {}, dir.path(), {}});
  ASSERT_TRUE(run.status.ok()) << run.status.error();
  EXPECT_EQ(run.out, dir.path() + "\n");
}

TEST(SpawnTest, UnusableCwdIs125AndTheCommandDoesNotRun) {
  TempDir dir;
  const std::string marker = dir.file("ran");
  ::testing::internal::CaptureStderr();
  ExitStatus status = run_ok({{"/usr/bin/touch", marker}, {}, "/nonexistent-sbx-cwd", {}});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status.exit_code, kExitSbxFailure);
  EXPECT_THAT(err, StartsWith("sbx: cannot change directory to '/nonexistent-sbx-cwd'"));
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
}

TEST(SpawnTest, StrayDescriptorsAreClosedInTheChild) {
  const int fd = open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  ASSERT_GE(fd, 0);
  ASSERT_EQ(dup2(fd, 100), 100);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);  // also without O_CLOEXEC
  const std::string probe = "[ -e /proc/$$/fd/100 ] && exit 1; [ -e /proc/$$/fd/" +
                            std::to_string(pipe_fds[1]) + " ] && exit 2; ls /proc/$$/fd";
  // Control: a plain fork+exec (system) does inherit them, so the probe can see a leak.
  EXPECT_NE(std::system(("/bin/sh -c '" + probe + "' >/dev/null").c_str()), 0);
  Captured run = run_capturing(sh(probe));
  ASSERT_TRUE(run.status.ok()) << run.status.error();
  EXPECT_EQ(run.status->exit_code, 0) << "1: fd 100 leaked, 2: pipe leaked";
  EXPECT_EQ(run.out, "0\n1\n2\n");  // only stdin, stdout, stderr
  close(100);
  close(fd);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(SpawnTest, IgnoredSignalsAreResetForTheCommand) {
  // Agents often ignore SIGPIPE; execve would keep SIG_IGN, so the child must reset it.
  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &previous), 0);
  ExitStatus status = run_ok(sh("kill -PIPE $$; exit 0"));
  sigaction(SIGPIPE, &previous, nullptr);
  EXPECT_EQ(status.signal, SIGPIPE);
}

TEST(SpawnTest, BlockedSignalsAreUnblockedForTheCommand) {
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &previous), 0);
  ExitStatus status = run_ok(sh("kill -USR2 $$; exit 0"));
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  EXPECT_EQ(status.signal, SIGUSR2);
}

TEST(SpawnTest, LargeOutputAndInputPassThrough) {
  constexpr std::size_t kBytes = 16u << 20;  // more than any pipe buffer
  Captured out = run_capturing(sh("head -c " + std::to_string(kBytes) + " /dev/zero"));
  ASSERT_TRUE(out.status.ok()) << out.status.error();
  EXPECT_EQ(out.status->exit_code, 0);
  EXPECT_EQ(out.out.size(), kBytes);
  std::string input(3u << 20, 'x');
  for (std::size_t i = 0; i < input.size(); i += 4096) input[i] = static_cast<char>('a' + i % 26);
  Captured echo = run_capturing({{"/bin/cat"}, {}, "/", {}}, &input);
  ASSERT_TRUE(echo.status.ok()) << echo.status.error();
  EXPECT_TRUE(echo.out == input) << "cat output differs from its stdin (" << echo.out.size()
                                 << " bytes vs " << input.size() << ")";
}

TEST(SpawnTest, ConcurrentSpawnsFromManyThreadsKeepTheirOwnResults) {
  // Embedding agents run commands in parallel: each call must get its own child's status and
  // its own exec-failure report (the report pipes are per call and close-on-exec).
  ::testing::internal::CaptureStderr();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < 5; ++i) {
        const bool missing = (t + i) % 4 == 0;
        const int code = 10 * t + i;
        Result<ExitStatus> status = missing
                                        ? spawn_and_wait({{"/nonexistent-sbx/cmd"}, {}, "/", {}})
                                        : spawn_and_wait(sh("exit " + std::to_string(code)));
        const int expected = missing ? kExitNotFound : code;
        if (!status.ok() || status->exit_code != expected || status->signal != 0) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(SpawnTest, BadPlansAreErrors) {
  Result<ExitStatus> empty = spawn_and_wait({{}, {}, "/", {}});
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.error(), HasSubstr("empty argv"));
  Result<ExitStatus> relative = spawn_and_wait({{"sh"}, {}, "/", {}});
  ASSERT_FALSE(relative.ok());
  EXPECT_THAT(relative.error(), HasSubstr("'sh' is not an absolute path"));
  Result<ExitStatus> bad_cwd = spawn_and_wait({{"/bin/true"}, {}, "tmp", {}});
  ASSERT_FALSE(bad_cwd.ok());
  EXPECT_THAT(bad_cwd.error(), HasSubstr("cwd 'tmp'"));
}

}  // namespace
}  // namespace sbx
