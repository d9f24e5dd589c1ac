// One run's stdio and early end (sbx/core/run_io.hpp), with real child processes through core's
// spawner (the host side every backend's exec gets through sbx_run_v2.stdio_fd and cancel_fd):
//  - stderr copied on through a pipe with its tail kept (`sbx exec --json`), cut at a line
//    boundary; a backgrounded straggler holding the pipe does not hold up finish();
//  - a capture keeps the start of the stream up to its cap and counts the rest;
//  - stdin from memory, a pipe handed to the caller, a spec that does not fit its stream;
//  - a cancel or a time-out kills the command through the run's cancel descriptor and is seen
//    by RunControl::ended();
//  - a plugin built for ABI 2.0 is refused a run with other stdio or an end, and runs one with
//    sbx's own.
#include "sbx/core/run_io.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sbx/core/manager.hpp"
#include "sbx/core/run.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/spawn.hpp"

namespace sbx {
namespace {

using Clock = std::chrono::steady_clock;

ExecPlan shell(const std::string& script) {
  return ExecPlan{{"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, "/", {}};
}

std::unique_ptr<RunStdio> open_stdio(std::array<StdioSpec, 3> specs) {
  Result<std::unique_ptr<RunStdio>> stdio = RunStdio::open(std::move(specs));
  EXPECT_TRUE(stdio.ok()) << stdio.error();
  return stdio.ok() ? std::move(*stdio) : nullptr;
}

// Runs `script` through core's spawner with the run's stdio and control, then finishes the stdio.
Result<ExitStatus> run_with(const std::string& script, RunStdio* stdio,
                            const RunControl* control = nullptr) {
  RunServices services(nullptr, {}, nullptr);
  if (stdio != nullptr) services.set_stdio(stdio->child_fds(), stdio->own_stdio());
  if (control != nullptr) services.set_cancel_fd(control->fd());
  Result<ExitStatus> status = spawn_and_wait(shell(script), &services);
  if (stdio != nullptr) stdio->finish();
  return status;
}

TEST(RunStdio, StderrIsCopiedOnWithItsTailKept) {
  int sink[2];
  ASSERT_EQ(pipe2(sink, O_CLOEXEC), 0);
  std::array<StdioSpec, 3> specs{};
  specs[1].mode = StdioSpec::Mode::kNull;
  specs[2].mode = StdioSpec::Mode::kFd;
  specs[2].fd = sink[1];
  specs[2].tail = true;
  std::unique_ptr<RunStdio> stdio = open_stdio(std::move(specs));
  ASSERT_NE(stdio, nullptr);
  EXPECT_FALSE(stdio->own_stdio());
  Result<ExitStatus> status = run_with("echo to-stderr >&2; echo to-stdout", stdio.get());
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 0);
  EXPECT_EQ(stdio->stderr_tail(), "to-stderr\n");
  stdio->finish();  // idempotent
  EXPECT_EQ(stdio->stderr_tail(), "to-stderr\n");
  ::close(sink[1]);
  char copied[64] = {};
  EXPECT_EQ(::read(sink[0], copied, sizeof copied), 10) << "copied on to the descriptor";
  EXPECT_EQ(std::string(copied), "to-stderr\n");
  ::close(sink[0]);
  EXPECT_EQ(stdio->captured(1), nullptr);
}

TEST(RunStdio, TheTailIsTheLastBytesFromALineBoundary) {
  // Copied on to /dev/null: only the tail is looked at here.
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  std::array<StdioSpec, 3> specs{};
  specs[2].mode = StdioSpec::Mode::kFd;
  specs[2].fd = null_fd;
  specs[2].tail = true;
  std::unique_ptr<RunStdio> stdio = open_stdio(std::move(specs));
  ASSERT_NE(stdio, nullptr);
  Result<ExitStatus> status = run_with(
      "i=10000; while [ $i -lt 20000 ]; do echo line-$i >&2; i=$((i+1)); done", stdio.get());
  ::close(null_fd);
  ASSERT_TRUE(status.ok()) << status.error();
  const std::string tail = stdio->stderr_tail().value_or("");
  EXPECT_LE(tail.size(), RunStdio::kTailBytes);
  EXPECT_GT(tail.size(), RunStdio::kTailBytes - 20);
  EXPECT_EQ(tail.rfind("line-", 0), 0u) << "starts with a whole line: " << tail.substr(0, 20);
  EXPECT_NE(tail.find("line-19999\n"), std::string::npos);
}

TEST(RunStdio, ABackgroundedStragglerDoesNotHoldUpFinish) {
  std::array<StdioSpec, 3> specs{};
  specs[2].mode = StdioSpec::Mode::kCapture;
  specs[2].max_bytes = 1024;
  std::unique_ptr<RunStdio> stdio = open_stdio(std::move(specs));
  ASSERT_NE(stdio, nullptr);
  const auto before = Clock::now();
  Result<ExitStatus> status = run_with("(sleep 3 >&2 &); echo done >&2", stdio.get());
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_LT(Clock::now() - before, std::chrono::milliseconds(2500));
  ASSERT_NE(stdio->captured(2), nullptr);
  EXPECT_EQ(stdio->captured(2)->bytes, "done\n");
}

TEST(RunStdio, ACaptureKeepsTheStartAndCountsTheRest) {
  std::array<StdioSpec, 3> specs{};
  specs[1].mode = StdioSpec::Mode::kCapture;
  specs[1].max_bytes = 100;
  specs[2].mode = StdioSpec::Mode::kCapture;
  specs[2].max_bytes = 100;
  std::unique_ptr<RunStdio> stdio = open_stdio(std::move(specs));
  ASSERT_NE(stdio, nullptr);
  Result<ExitStatus> status =
      run_with("head -c 1000000 /dev/zero | tr '\\0' a; printf abc >&2", stdio.get());
  ASSERT_TRUE(status.ok()) << status.error();
  const CapturedOutput* out = stdio->captured(1);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->bytes, std::string(100, 'a'));
  EXPECT_EQ(out->dropped, 1000000u - 100u);
  EXPECT_TRUE(out->truncated());
  ASSERT_NE(stdio->captured(2), nullptr);
  EXPECT_EQ(stdio->captured(2)->bytes, "abc");
  EXPECT_FALSE(stdio->captured(2)->truncated());
  EXPECT_FALSE(stdio->stderr_tail().has_value()) << "no tail was asked for";
}

TEST(RunStdio, StdinFromMemoryAndAPipeForTheCaller) {
  std::array<StdioSpec, 3> specs{};
  specs[0].mode = StdioSpec::Mode::kData;
  specs[0].data = "from memory\n";
  specs[1].mode = StdioSpec::Mode::kPipe;
  std::unique_ptr<RunStdio> stdio = open_stdio(std::move(specs));
  ASSERT_NE(stdio, nullptr);
  const int out = stdio->take_caller_fd(1);
  ASSERT_GE(out, 0);
  EXPECT_EQ(stdio->take_caller_fd(1), -1);
  EXPECT_EQ(stdio->take_caller_fd(0), -1);
  Result<ExitStatus> status = run_with("cat", stdio.get());
  ASSERT_TRUE(status.ok()) << status.error();
  char text[64] = {};
  EXPECT_EQ(::read(out, text, sizeof text), 12);
  EXPECT_EQ(std::string(text), "from memory\n");
  EXPECT_EQ(::read(out, text, sizeof text), 0) << "end of file once the run has finished";
  ::close(out);
}

TEST(RunStdio, ASpecThatDoesNotFitItsStreamIsRefused) {
  std::array<StdioSpec, 3> capture_stdin{};
  capture_stdin[0].mode = StdioSpec::Mode::kCapture;
  EXPECT_FALSE(RunStdio::open(capture_stdin).ok());
  std::array<StdioSpec, 3> data_stdout{};
  data_stdout[1].mode = StdioSpec::Mode::kData;
  EXPECT_FALSE(RunStdio::open(data_stdout).ok());
  std::array<StdioSpec, 3> closed_fd{};
  closed_fd[1].mode = StdioSpec::Mode::kFd;
  closed_fd[1].fd = 4000;
  Result<std::unique_ptr<RunStdio>> refused = RunStdio::open(closed_fd);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.kind(), ErrorKind::invalid_input);
}

TEST(RunControl, ACancelEndsTheCommandAndSaysSo) {
  Result<std::shared_ptr<RunControl>> control = RunControl::create();
  ASSERT_TRUE(control.ok()) << control.error();
  EXPECT_EQ((*control)->ended(), RunEnd::kNone);
  std::thread canceller([c = *control] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    c->cancel();
  });
  const auto before = Clock::now();
  Result<ExitStatus> status = run_with("sleep 30", nullptr, control->get());
  canceller.join();
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->signal, SIGKILL);
  EXPECT_LT(Clock::now() - before, std::chrono::seconds(10));
  EXPECT_EQ((*control)->ended(), RunEnd::kCancelled);
  pollfd ready{(*control)->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&ready, 1, 0), 1) << "readable for every watcher, and stays so";
}

TEST(RunControl, ATimeOutEndsTheCommandAndACancelAfterItChangesNothing) {
  Result<std::shared_ptr<RunControl>> control = RunControl::create(std::chrono::milliseconds(300));
  ASSERT_TRUE(control.ok()) << control.error();
  Result<ExitStatus> status = run_with("sleep 30", nullptr, control->get());
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->signal, SIGKILL);
  EXPECT_EQ((*control)->ended(), RunEnd::kTimedOut);
  (*control)->cancel();
  EXPECT_EQ((*control)->ended(), RunEnd::kTimedOut);
  // A command that ends before its time-out is not ended.
  Result<std::shared_ptr<RunControl>> spare = RunControl::create(std::chrono::seconds(60));
  ASSERT_TRUE(spare.ok());
  Result<ExitStatus> quick = run_with("exit 3", nullptr, spare->get());
  ASSERT_TRUE(quick.ok());
  EXPECT_EQ(quick->exit_code, 3);
  EXPECT_EQ((*spare)->ended(), RunEnd::kNone);
}

// A backend that records what it was given and runs nothing.
class OldBackend final : public Backend {
 public:
  OldBackend() : Backend(HostServices(nullptr)) {}
  ProbeReport probe(const ProbeContext&) override { return {}; }
  Result<ExecPlan> transform(const TransformRequest&) const override { return ExecPlan{}; }
  Result<ExitStatus> exec(const ExecPlan&, const RunContext&) override {
    ++runs;
    return ExitStatus{0, 0};
  }
  int runs = 0;
};

TEST(RunStdio, APluginBuiltForAbi20RunsOnlyWithSbxsOwnStdioAndNoEnd) {
  auto backend = std::make_shared<OldBackend>();
  std::vector<LoadedPlugin> plugins;
  plugins.push_back({"old", "1.0", "built for 2.0", "/fake/old.so", backend, 0});
  const PluginRegistry registry = PluginRegistry::from_plugins(std::move(plugins), {});
  const Manager manager(registry, {"old"});
  const ExecPlan plan = shell("true");
  {
    RunServices own(nullptr, {}, nullptr);
    EXPECT_TRUE(manager.exec("old", plan, own).ok());
  }
  {
    std::array<StdioSpec, 3> specs{};
    specs[2].tail = true;  // a copy of sbx's own stderr still counts as its own
    std::unique_ptr<RunStdio> stdio = open_stdio(std::move(specs));
    ASSERT_NE(stdio, nullptr);
    RunServices tee(nullptr, {}, nullptr);
    tee.set_stdio(stdio->child_fds(), stdio->own_stdio());
    EXPECT_TRUE(manager.exec("old", plan, tee).ok());
  }
  EXPECT_EQ(backend->runs, 2);
  std::array<StdioSpec, 3> specs{};
  specs[1].mode = StdioSpec::Mode::kCapture;
  std::unique_ptr<RunStdio> stdio = open_stdio(std::move(specs));
  ASSERT_NE(stdio, nullptr);
  RunServices captured(nullptr, {}, nullptr);
  captured.set_stdio(stdio->child_fds(), stdio->own_stdio());
  Result<ExitStatus> refused = manager.exec("old", plan, captured);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("built for sbx plugin ABI 2.0"), std::string::npos)
      << refused.error();
  EXPECT_EQ(refused.kind(), ErrorKind::unavailable);
  Result<std::shared_ptr<RunControl>> control = RunControl::create();
  ASSERT_TRUE(control.ok());
  RunServices ended(nullptr, {}, nullptr);
  ended.set_cancel_fd((*control)->fd());
  EXPECT_FALSE(manager.exec("old", plan, ended).ok());
  EXPECT_EQ(backend->runs, 2) << "a refused run never reaches the plugin";
}

}  // namespace
}  // namespace sbx
