// A third-party plugin's transform() and exec() run in a child of their own (LoadedPlugin::
// isolated, core/src/plugins/call_isolation.cpp), through the Manager as every front end calls
// them, with scripted in-process backends:
//  - a plan comes back field for field (bytes that are not UTF-8 included) with the plugin's
//    report_json(); exec() gets the plugin's own detail again;
//  - a crash, an exit or a hang in transform() is an error naming the backend and what happened,
//    and this process lives on; a hang is cut at the deadline;
//  - exec()'s status, a signal death, its run_started and its refusals (many, from threads)
//    reach the run here; a crash before and after the start says which; once the run's cancel
//    is readable an exec() that does not return is killed after the grace;
//  - a transform() that gives another plan when called again for exec runs nothing;
//  - the same backend not isolated behaves as before (its exception's text).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sbx/core/manager.hpp"
#include "sbx/core/run_io.hpp"
#include "sbx/core/run_report.hpp"
#include "sbx/core/runtime.hpp"

namespace sbx {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class TestDetail final : public PlanDetail {
 public:
  std::string report_json() const override { return R"({"test_detail":"\u00e9 \"x\""})"; }
};

using TransformFn = std::function<Result<ExecPlan>(const TransformRequest&)>;
using ExecFn = std::function<Result<ExitStatus>(const ExecPlan&, const RunContext&)>;

class Scripted final : public Backend {
 public:
  Scripted(TransformFn transform, ExecFn exec)
      : Backend(HostServices(nullptr)), transform_(std::move(transform)), exec_(std::move(exec)) {}
  ProbeReport probe(const ProbeContext&) override { return {}; }
  Result<ExecPlan> transform(const TransformRequest& request) const override {
    return transform_(request);
  }
  Result<ExitStatus> exec(const ExecPlan& plan, const RunContext& run) override {
    return exec_(plan, run);
  }

 private:
  TransformFn transform_;
  ExecFn exec_;
};

// Dies of `sig` itself, whatever handler a sanitizer installed or mask the thread has.
[[noreturn]] void crash_with(int sig) {
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::_exit(99);
}

ExecPlan full_plan(const TransformRequest& request) {
  ExecPlan plan;
  plan.argv = request.argv;
  plan.env = {"BYTES=\xff\xfe\x80", std::string("NUL=a") + '\0' + "b", "QUOTE=\"\\"};
  plan.cwd = request.cwd;
  plan.notes = {"a note é", std::string(70000, 'n')};
  plan.host_paths.created = {"/tmp/created"};
  plan.host_paths.kept = {"/tmp/kept", "/tmp/kept2"};
  plan.host_paths.state_dir = "/run/state";
  plan.detail = std::make_shared<const TestDetail>();
  return plan;
}

Result<ExitStatus> run_plan(const ExecPlan& plan, const RunContext& run) {
  // What a plugin that starts its command itself does: fork, the run's child hook, exec.
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (run.child_hook()() != 0) ::_exit(125);
    std::vector<char*> argv;
    for (const std::string& arg : plan.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  run.run_started();
  int status = 0;
  ::waitpid(pid, &status, 0);
  ExitStatus out;
  if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  } else {
    out.exit_code = WEXITSTATUS(status);
  }
  return out;
}

class CallIsolation : public ::testing::Test {
 protected:
  // A registry holding one backend "scripted", isolated or not, and its manager.
  const Manager& manager(TransformFn transform, ExecFn exec = run_plan, bool isolated = true) {
    LoadedPlugin plugin;
    plugin.name = "scripted";
    plugin.path = "/plugins/sbx-backend-scripted.so";
    plugin.backend = std::make_shared<Scripted>(std::move(transform), std::move(exec));
    plugin.isolated = isolated;
    std::vector<LoadedPlugin> plugins;
    plugins.push_back(std::move(plugin));
    registry_ = std::make_unique<PluginRegistry>(PluginRegistry::from_plugins(std::move(plugins)));
    manager_ = std::make_unique<Manager>(*registry_, std::vector<std::string>{"scripted"});
    manager_->set_plugin_call_limits({500ms, 300ms});
    return *manager_;
  }

  static TransformRequest request(std::vector<std::string> argv) {
    TransformRequest r;
    r.argv = std::move(argv);
    r.cwd = "/";
    r.env = {"PATH=/usr/bin:/bin"};
    return r;
  }

  std::unique_ptr<PluginRegistry> registry_;
  std::unique_ptr<Manager> manager_;
};

constexpr const char* kNamed = "backend 'scripted' (/plugins/sbx-backend-scripted.so)";

TEST_F(CallIsolation, APlanComesBackFieldForField) {
  const Manager& m = manager(full_plan);
  const TransformRequest r = request({"/bin/true"});
  Result<ExecPlan> plan = m.transform("scripted", r);
  ASSERT_TRUE(plan.ok()) << plan.error();
  const ExecPlan want = full_plan(r);
  EXPECT_EQ(plan->argv, want.argv);
  EXPECT_EQ(plan->env, want.env);
  EXPECT_EQ(plan->cwd, want.cwd);
  EXPECT_EQ(plan->notes, want.notes);
  EXPECT_EQ(plan->host_paths, want.host_paths);
  ASSERT_NE(plan->detail, nullptr);
  EXPECT_EQ(plan->detail->report_json(), want.detail->report_json());
}

TEST_F(CallIsolation, ExecGetsThePluginsOwnDetailAgain) {
  const Manager& m = manager(full_plan, [](const ExecPlan& plan, const RunContext& run) {
    if (dynamic_cast<const TestDetail*>(plan.detail.get()) == nullptr)
      return Result<ExitStatus>(Error{"not the plugin's own detail"});
    return run_plan(plan, run);
  });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/sh", "-c", "exit 3"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  RunServices run(nullptr, {}, nullptr);
  Result<ExitStatus> status = m.exec("scripted", *plan, run);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 3);
}

TEST_F(CallIsolation, APlanWithoutADetailRunsToo) {
  const Manager& m = manager([](const TransformRequest& r) -> Result<ExecPlan> {
    ExecPlan plan = full_plan(r);
    plan.detail = nullptr;
    return plan;
  });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/sh", "-c", "exit 5"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  RunServices run(nullptr, {}, nullptr);
  Result<ExitStatus> status = m.exec("scripted", *plan, run);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 5);
}

TEST_F(CallIsolation, ACrashInTransformIsAnErrorAndThisProcessLivesOn) {
  const Manager& m =
      manager([](const TransformRequest&) -> Result<ExecPlan> { crash_with(SIGSEGV); });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/true"}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error(), std::string(kNamed) + " crashed in transform() with SIGSEGV");
  EXPECT_EQ(plan.kind(), ErrorKind::backend_failure);
}

TEST_F(CallIsolation, AnExitInTransformIsNamed) {
  const Manager& m = manager([](const TransformRequest&) -> Result<ExecPlan> { std::exit(4); });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/true"}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error(),
            std::string(kNamed) + " exited with status 4 in transform() before it returned");
}

TEST_F(CallIsolation, AHangingTransformIsCutAtTheDeadline) {
  const Manager& m = manager([](const TransformRequest&) -> Result<ExecPlan> {
    for (;;) ::pause();
  });
  const Clock::time_point start = Clock::now();
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/true"}));
  EXPECT_LT(Clock::now() - start, 5s);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error(),
            std::string(kNamed) + " did not return from transform() within 500 ms; it was killed");
}

TEST_F(CallIsolation, TheRefusalAndTheThrowOfTransformReadAsInProcess) {
  for (bool isolated : {true, false}) {
    const Manager& refusing =
        manager([](const TransformRequest&) -> Result<ExecPlan> { return Error{"no such thing"}; },
                run_plan, isolated);
    EXPECT_EQ(refusing.transform("scripted", request({"/bin/true"})).error(),
              "backend 'scripted' cannot run this: no such thing");
    const Manager& throwing = manager(
        [](const TransformRequest&) -> Result<ExecPlan> { throw std::runtime_error("boom"); },
        run_plan, isolated);
    EXPECT_EQ(throwing.transform("scripted", request({"/bin/true"})).error(),
              "backend 'scripted' failed in transform: boom");
  }
}

TEST_F(CallIsolation, ExecsStatusStartAndRefusalsReachTheRun) {
  const Manager& m = manager(full_plan, [](const ExecPlan& plan, const RunContext& run) {
    // From several threads at once, as a supervisor would.
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&run, t] {
        for (int i = 0; i < 50; ++i)
          run.report_network_refusal("unix", "/socket-" + std::to_string(t) + "-" +
                                                 std::to_string(i) + std::string(100, 'x'));
      });
    }
    for (std::thread& thread : threads) thread.join();
    return run_plan(plan, run);
  });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/sh", "-c", "kill -TERM $$"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  BackendRefusalLog refusals;
  std::atomic<int> started{0};
  RunServices run(
      &refusals, [&started] { ++started; }, nullptr);
  Result<ExitStatus> status = m.exec("scripted", *plan, run);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->signal, SIGTERM);
  EXPECT_EQ(started.load(), 1);
  EXPECT_EQ(refusals.total, 200u);
  ASSERT_EQ(refusals.entries.size(), BackendRefusalLog::kMaxEntries);
  EXPECT_EQ(refusals.entries[0].kind, "unix");
}

TEST_F(CallIsolation, ACrashInExecSaysWhetherTheCommandHadStarted) {
  const Manager& before = manager(
      full_plan,
      [](const ExecPlan&, const RunContext&) -> Result<ExitStatus> { crash_with(SIGABRT); });
  Result<ExecPlan> plan = before.transform("scripted", request({"/bin/true"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  RunServices run(nullptr, {}, nullptr);
  EXPECT_EQ(before.exec("scripted", *plan, run).error(),
            std::string(kNamed) + " crashed in exec() with SIGABRT; nothing was run");

  const Manager& after =
      manager(full_plan, [](const ExecPlan&, const RunContext& context) -> Result<ExitStatus> {
        context.run_started();
        crash_with(SIGSEGV);
      });
  plan = after.transform("scripted", request({"/bin/true"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  RunServices run2(nullptr, {}, nullptr);
  EXPECT_EQ(after.exec("scripted", *plan, run2).error(),
            std::string(kNamed) +
                " crashed in exec() with SIGSEGV; the command had started and its processes "
                "tied to the plugin's were killed with it");
}

TEST_F(CallIsolation, TheCommandDiesWithACrashedExec) {
  // The command (a sleep) is started through the child hook, then the plugin crashes: the
  // command is killed with it (PR_SET_PDEATHSIG), not left behind.
  int pids[2];
  ASSERT_EQ(::pipe(pids), 0);
  const Manager& m =
      manager(full_plan, [&pids](const ExecPlan&, const RunContext& run) -> Result<ExitStatus> {
        const pid_t pid = ::fork();
        if (pid == 0) {
          if (run.child_hook()() != 0) ::_exit(125);
          ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
          ::_exit(127);
        }
        (void)::write(pids[1], &pid, sizeof pid);
        run.run_started();
        ::usleep(100000);
        crash_with(SIGSEGV);
      });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/true"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  RunServices run(nullptr, {}, nullptr);
  EXPECT_FALSE(m.exec("scripted", *plan, run).ok());
  ::close(pids[1]);
  pid_t command = 0;
  ASSERT_EQ(::read(pids[0], &command, sizeof command), static_cast<ssize_t>(sizeof command));
  ::close(pids[0]);
  // Reparented and killed: gone (or a zombie of init's) within a moment.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    const std::string stat = "/proc/" + std::to_string(command) + "/stat";
    FILE* file = std::fopen(stat.c_str(), "r");
    if (file == nullptr) {
      gone = true;
      break;
    }
    char state = 0;
    (void)std::fscanf(file, "%*d %*s %c", &state);
    std::fclose(file);
    gone = state == 'Z' || state == 'X';
    if (!gone) ::usleep(20000);
  }
  EXPECT_TRUE(gone) << "the command " << command << " outlived the plugin that started it";
}

TEST_F(CallIsolation, AnExecThatIgnoresTheCancelIsKilledAfterTheGrace) {
  const Manager& m =
      manager(full_plan, [](const ExecPlan&, const RunContext&) -> Result<ExitStatus> {
        for (;;) ::pause();
      });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/true"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  Result<std::shared_ptr<RunControl>> control = RunControl::create(100ms);
  ASSERT_TRUE(control.ok()) << control.error();
  RunServices run(nullptr, {}, nullptr);
  run.set_cancel_fd((*control)->fd());
  const Clock::time_point start = Clock::now();
  Result<ExitStatus> status = m.exec("scripted", *plan, run);
  EXPECT_LT(Clock::now() - start, 5s);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error(), std::string(kNamed) +
                                " did not return from exec() within 300 ms after the run was to "
                                "end (cancel or time-out); it was killed with SIGKILL; nothing "
                                "was run");
}

TEST_F(CallIsolation, AnImpureTransformRunsNothing) {
  const Manager& m = manager([](const TransformRequest& r) -> Result<ExecPlan> {
    ExecPlan plan = full_plan(r);
    plan.notes.push_back("pid " + std::to_string(::getpid()));
    return plan;
  });
  Result<ExecPlan> plan = m.transform("scripted", request({"/bin/true"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  RunServices run(nullptr, {}, nullptr);
  Result<ExitStatus> status = m.exec("scripted", *plan, run);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find(": its transform() returned another plan when called again"),
            std::string::npos)
      << status.error();
}

}  // namespace
}  // namespace sbx
