// Signal forwarding: signals sent to sbx with kill() reach the command; signals the terminal
// generates are not forwarded a second time (the command already got them as a member of the
// foreground process group).
//
// Each test forks a process P that plays sbx: it calls spawn_and_wait on a helper (this test
// executable in helper mode, see spawn_helpers.hpp) and exits with the helper's exit code.
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "sbx/core/spawn.hpp"
#include "spawn_helpers.hpp"

namespace sbx {
namespace {

using sbx::test::read_file;
using sbx::test::TempDir;
using sbx::test::wait_for_file;
using spawn_test::record_helper_plan;

[[noreturn]] void play_sbx(const ExecPlan& plan) {
  Result<ExitStatus> status = spawn_and_wait(plan);
  _exit(status.ok() ? status->shell_code() : 200);
}

// Waits up to `timeout_ms` until the file at `path` holds `text`.
bool wait_for_text(const std::string& path, const std::string& text, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (sbx::test::read_file(path) == text) return true;
    usleep(10000);
  }
  return false;
}

// Waits for P; returns its exit code, or -1 (with a test failure) if it did not exit normally.
int wait_exit_code(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (!WIFEXITED(status)) {
    ADD_FAILURE() << "the sbx-side process died of signal " << WTERMSIG(status)
                  << " instead of waiting for the command";
    return -1;
  }
  return WEXITSTATUS(status);
}

int mask_of(std::initializer_list<int> signals) {
  int mask = 0;
  for (int sig : signals) mask |= 1 << sig;
  return mask;
}

TEST(SignalForwardingTest, SignalsSentToSbxReachTheCommand) {
  TempDir dir;
  const ExecPlan plan = record_helper_plan(dir.file("ready"), dir.file("result"), false);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) play_sbx(plan);
  ASSERT_TRUE(wait_for_file(dir.file("ready"), 10000)) << "helper never started";
  // Every forwarded signal that would kill or be lost on sbx itself, then SIGTERM to finish.
  // Each waits until the helper has it: identical pending signals would merge.
  int sent = 0;
  for (int sig : {SIGINT, SIGHUP, SIGQUIT, SIGUSR2, SIGWINCH, SIGCONT}) {
    kill(pid, sig);
    sent |= 1 << sig;
    EXPECT_TRUE(wait_for_text(dir.file("result.caught"), std::to_string(sent), 10000))
        << "signal " << sig << " did not reach the helper";
  }
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit_code(pid), 1) << "1 = the helper got SIGTERM through sbx";
  EXPECT_EQ(read_file(dir.file("result")),
            std::to_string(mask_of({SIGINT, SIGHUP, SIGQUIT, SIGUSR2, SIGWINCH, SIGCONT})));
}

// Runs P on a new pseudo-terminal (P is the session leader and the foreground process group),
// types ^C on it, then sends SIGUSR1 to P with kill() to end the helper. Returns the helper's
// caught-signal mask, or -1.
int caught_after_terminal_interrupt(bool helper_in_own_group) {
  TempDir dir;
  const ExecPlan plan =
      record_helper_plan(dir.file("ready"), dir.file("result"), helper_in_own_group);
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) {
    ADD_FAILURE() << "forkpty failed";
    return -1;
  }
  if (pid == 0) play_sbx(plan);
  if (!wait_for_file(dir.file("ready"), 10000)) {
    kill(pid, SIGKILL);
    ADD_FAILURE() << "helper never started";
    return -1;
  }
  EXPECT_EQ(write(master, "\x03", 1), 1);  // the terminal sends SIGINT to the foreground group
  if (helper_in_own_group) {
    // Nothing is to arrive, and nothing shows the terminal has sent it: a fixed wait.
    usleep(300000);
  } else {
    EXPECT_TRUE(wait_for_text(dir.file("result.caught"), std::to_string(mask_of({SIGINT})), 10000))
        << "^C did not reach the helper";
  }
  kill(pid, SIGUSR1);
  EXPECT_EQ(wait_exit_code(pid), 2) << "2 = the helper got SIGUSR1 through sbx";
  close(master);
  const std::string result = read_file(dir.file("result"));
  return result.empty() ? -1 : std::stoi(result);
}

TEST(SignalForwardingTest, TerminalSignalsReachTheForegroundCommandDirectly) {
  // Control for the next test: with the helper in sbx's (foreground) group, ^C reaches it, so
  // the terminal really generates SIGINT and sbx survives it.
  EXPECT_EQ(caught_after_terminal_interrupt(false), mask_of({SIGINT}));
}

TEST(SignalForwardingTest, TerminalSignalsAreNotForwardedASecondTime) {
  // The helper leaves the foreground group, so the only way ^C could reach it is sbx
  // forwarding the terminal's SIGINT, which it must not do (it would be a double delivery for
  // a command in the foreground group).
  EXPECT_EQ(caught_after_terminal_interrupt(true), 0);
}

}  // namespace
}  // namespace sbx
