// The POSIX child toolkit (sbx/sdk/posix_child.hpp), exercised in real forked children and with
// no libsbx linked (plugins use it the same way):
//  - only the descriptors a child keeps reach the program it execs; the others are closed at exec;
//  - a signal the parent ignores is back to its default in the child, and the child's signal
//    mask is empty although the parent blocks signals;
//  - exec of a missing program is 127, of a non-executable file 126, and the parent learns the
//    errno of the child-side step that failed (exec, chdir), which exits 125;
//  - run_capture's deadline kills a helper that does not end.
#include "sbx/sdk/posix_child.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace child = sbx::sdk::posix_child;

static_assert(sbx::sdk::kExitSandboxFailure == 125);
static_assert(sbx::sdk::exit_code_for_exec_error(ENOENT) == 127);
static_assert(sbx::sdk::exit_code_for_exec_error(ENOTDIR) == 127);
static_assert(sbx::sdk::exit_code_for_exec_error(EACCES) == 126);
static_assert(sbx::sdk::exit_code_for_exec_error(ENOEXEC) == 126);

// A temporary file open on a descriptor without close-on-exec, removed at the end.
struct TempFile {
  explicit TempFile(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "XXXXXX";
    fd = ::mkstemp(tmpl.data());
    path = tmpl;
  }
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  int fd = -1;
  std::string path;
};

child::Captured capture(const std::vector<std::string>& argv,
                        const child::CaptureOptions& options = {}) {
  sbx::Result<child::Captured> result = child::run_capture(argv, options);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error());
  return result.ok() ? *result : child::Captured{};
}

// The hex mask on the line `name:` of /proc/self/status as the helper printed it.
unsigned long long status_mask(const std::string& status, const std::string& name) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0)
      return std::stoull(line.substr(name.size() + 1), nullptr, 16);
  }
  ADD_FAILURE() << "no " << name << " in:\n" << status;
  return ~0ULL;
}

unsigned long long bit(int sig) { return 1ULL << (sig - 1); }

TEST(PosixChild, OnlyTheKeptDescriptorsReachTheExecdProgram) {
  TempFile kept("sbx-child-kept-");
  TempFile stray("sbx-child-stray-");
  ASSERT_GE(kept.fd, 0);
  ASSERT_GE(stray.fd, 0);
  int out[2];
  int report[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  ASSERT_TRUE(child::open_report_pipe(report));
  // Everything the child needs, prepared before fork.
  const std::vector<std::string> args = {"/bin/ls", "-l", "/proc/self/fd"};
  const std::vector<char*> argv = child::c_string_array(args);
  const std::vector<char*> envp = child::c_string_array({});
  const int kept_fd = kept.fd;
  const pid_t pid = ::fork();
  if (pid == 0) {
    child::reset_signal_dispositions();
    const int moved_out = child::move_above(out[1], 3);
    if (moved_out < 0 || !child::place_fd(moved_out, 1))
      child::fail(report[1], child::Step::kSetup, sbx::sdk::kExitSandboxFailure);
    if (!child::close_on_exec_all_but(&kept_fd, 1))
      child::fail(report[1], child::Step::kSetup, sbx::sdk::kExitSandboxFailure);
    child::unblock_all_signals();
    child::exec_or_fail(report[1], argv.data(), envp.data());
  }
  ASSERT_GT(pid, 0);
  ::close(out[1]);
  ::close(report[1]);
  child::Failure failure{};
  EXPECT_FALSE(child::read_failure(report[0], failure)) << "child failed, errno " << failure.error;
  std::string listing;
  char buffer[1024];
  for (ssize_t n = 0; (n = ::read(out[0], buffer, sizeof buffer)) > 0;)
    listing.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  ::close(report[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << listing;
  EXPECT_NE(listing.find(kept.path), std::string::npos) << listing;
  EXPECT_EQ(listing.find(stray.path), std::string::npos) << listing;
}

TEST(PosixChild, CaptureLeavesNoInheritedDescriptorOpen) {
  TempFile stray("sbx-child-stray-");
  ASSERT_GE(stray.fd, 0);
  const child::Captured run = capture({"/bin/ls", "-l", "/proc/self/fd"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find(stray.path), std::string::npos) << run.output;
}

TEST(PosixChild, IgnoredSignalsAreDefaultAndTheMaskIsEmptyInTheChild) {
  struct sigaction ignore {};
  struct sigaction previous_action {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ASSERT_EQ(::sigaction(SIGINT, &ignore, &previous_action), 0);
  sigset_t blocked;
  sigset_t previous_mask;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blocked, &previous_mask), 0);
  const child::Captured run = capture({"/bin/cat", "/proc/self/status"});
  ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  ::sigaction(SIGINT, &previous_action, nullptr);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(status_mask(run.output, "SigIgn") & bit(SIGINT), 0ULL) << run.output;
  EXPECT_EQ(status_mask(run.output, "SigBlk"), 0ULL) << run.output;
}

TEST(PosixChild, MissingProgramIs127AndTheParentLearnsENOENT) {
  const child::Captured run = capture({"/nonexistent/sbx-no-such-program"});
  EXPECT_EQ(run.exit_code, sbx::sdk::kExitNotFound);
  EXPECT_EQ(run.failed_step, child::Step::kExec);
  EXPECT_EQ(run.failed_error, ENOENT);
}

TEST(PosixChild, NonExecutableFileIs126AndTheParentLearnsEACCES) {
  TempFile script("sbx-child-noexec-");
  ASSERT_GE(script.fd, 0);
  ASSERT_EQ(::fchmod(script.fd, 0644), 0);
  // As root, execve refuses a file without any x bit with EACCES all the same.
  const child::Captured run = capture({script.path});
  EXPECT_EQ(run.exit_code, sbx::sdk::kExitNotExecutable);
  EXPECT_EQ(run.failed_step, child::Step::kExec);
  EXPECT_EQ(run.failed_error, EACCES);
}

TEST(PosixChild, AChildSideSetupFailureIs125WithItsErrno) {
  child::CaptureOptions options;
  options.cwd = "/nonexistent/sbx-no-such-directory";
  const child::Captured run = capture({"/bin/true"}, options);
  EXPECT_EQ(run.exit_code, sbx::sdk::kExitSandboxFailure);
  EXPECT_EQ(run.failed_step, child::Step::kChdir);
  EXPECT_EQ(run.failed_error, ENOENT);
}

TEST(PosixChild, ASuccessfulRunReportsNoFailureAndItsOwnStatus) {
  const child::Captured run = capture({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.failed_error, 0);
  EXPECT_EQ(run.output, "out\nerr\n");
}

TEST(PosixChild, TheEnvironmentIsExactlyTheGivenOne) {
  child::CaptureOptions options;
  options.env = {"SBX_CHILD_TEST=1"};
  const child::Captured run = capture({"/usr/bin/env"}, options);
  EXPECT_EQ(run.output, "SBX_CHILD_TEST=1\n");
}

TEST(PosixChild, TheDeadlineKillsAHelperThatDoesNotEnd) {
  child::CaptureOptions options;
  options.timeout_ms = 200;
  const child::Captured run = capture({"/bin/sleep", "30"}, options);
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.exit_code, -1);
  EXPECT_EQ(run.signal, SIGKILL);
}

TEST(PosixChild, OutputBeyondTheLimitIsDropped) {
  child::CaptureOptions options;
  options.max_output = 10;
  const child::Captured run = capture({"/bin/sh", "-c", "yes | head -c 100000"}, options);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output.size(), 10U);
}

}  // namespace
