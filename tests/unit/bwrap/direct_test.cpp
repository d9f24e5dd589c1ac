// The direct bwrap launch (plugins/bwrap/include/sbx/bwrap/direct.hpp): which plans take it,
// what bwrap is given (argv, the --args block), how the pause point's mount table, bwrap's
// JSON status and a network namespace's interfaces are read; then, with the real bwrap and the
// built sbx-stage2 as the waiter, runs through spawn_bwrap: nothing of the environment in any
// bwrap argv or environment, only fds 0-2 reach the command, statuses (a signal as a signal), no
// descendant outlives the run, a missing or non-executable command is refused at the pause
// point, signals reach the command however early they come.
#include "sbx/bwrap/direct.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sbx/bwrap/launch_form.hpp"
#include "sbx/bwrap/plan.hpp"
#include "sbx/bwrap/spawn.hpp"
#include "sbx_test/last_close.hpp"
#include "sbx_test/temp_dir.hpp"

namespace direct_launch_test {

namespace fs = std::filesystem;
using sbx::bwrap::BwrapPlan;
using sbx::bwrap::direct_args_block;
using sbx::bwrap::direct_argv;
using sbx::bwrap::direct_plan;
using sbx::bwrap::Stage2Net;
using sbx::stage2::NetworkFilter;

// A typed plan as the translator makes one (translate.hpp): restricted network, PWD at the
// working directory.
BwrapPlan stage2_plan() {
  BwrapPlan plan;
  plan.bwrap = "/usr/bin/bwrap";
  plan.options = {"--ro-bind", "/", "/", "--unshare-pid", "--as-pid-1"};
  plan.chdir = "/w";
  plan.stage2 = "/opt/sbx/libexec/sbx/sbx-stage2";
  plan.net = Stage2Net::kPrivate;
  plan.env = {"A=1", "PWD=/w"};
  plan.command = {"/bin/echo", "hi"};
  return plan;
}

TEST(BwrapDirectPlan, TakesRestrictedAndEnabledPlansApart) {
  std::optional<sbx::bwrap::DirectPlan> plan = direct_plan(stage2_plan(), true);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->bwrap, "/usr/bin/bwrap");
  // --as-pid-1 is dropped: bwrap's own PID 1 reaps, the waiter is pid 2.
  EXPECT_EQ(plan->options,
            (std::vector<std::string>{"--ro-bind", "/", "/", "--unshare-pid", "--chdir", "/w"}));
  // With a procfs, PID 1's directory is hidden right after it is mounted (kPidOneMask).
  BwrapPlan with_proc = stage2_plan();
  with_proc.options.insert(with_proc.options.begin() + 3, {"--proc", "/proc"});
  ASSERT_TRUE(direct_plan(with_proc, true));
  EXPECT_EQ(direct_plan(with_proc, true)->options,
            (std::vector<std::string>{"--ro-bind", "/", "/", "--proc", "/proc", "--perms", "0555",
                                      "--tmpfs", "/proc/1", "--remount-ro", "/proc/1",
                                      "--unshare-pid", "--chdir", "/w"}));
  EXPECT_EQ(plan->filter, NetworkFilter::kPrivateUnixSupervised);
  EXPECT_EQ(plan->env, (std::vector<std::string>{"A=1", "PWD=/w"}));
  EXPECT_EQ(plan->command, (std::vector<std::string>{"/bin/echo", "hi"}));

  BwrapPlan open = stage2_plan();
  open.net = Stage2Net::kOpen;
  ASSERT_TRUE(direct_plan(open, true));
  EXPECT_EQ(direct_plan(open, true)->filter, NetworkFilter::kOpen);
}

TEST(BwrapDirectPlan, ProxyAndRelativeCommandsKeepStageTwo) {
  BwrapPlan proxy = stage2_plan();
  proxy.net = Stage2Net::kProxy;
  proxy.proxy_port = 3128;
  proxy.proxy_socket = "/tmp/p/proxy.sock";
  EXPECT_FALSE(direct_plan(proxy, true));
  BwrapPlan relative = stage2_plan();
  relative.command = {"echo"};
  EXPECT_FALSE(direct_plan(relative, true));
  BwrapPlan none = stage2_plan();
  none.command.clear();
  EXPECT_FALSE(direct_plan(none, true));
  // No sbx-stage2 to run as the waiter: the stage-2 launch, which then fails as it must.
  BwrapPlan no_waiter = stage2_plan();
  no_waiter.stage2 = "sbx-stage2";
  EXPECT_FALSE(direct_plan(no_waiter, true));
}

// The launch follows the host the plan was made for: without pidfds or openat2 the stage-2
// launch, whatever the plan (launch_form.hpp).
TEST(BwrapDirectPlan, AKernelWithoutPidfdsOrOpenat2KeepsStageTwo) {
  EXPECT_TRUE(sbx::bwrap::direct_launch_of(stage2_plan(), {true, true}));
  EXPECT_FALSE(sbx::bwrap::direct_launch_of(stage2_plan(), {false, true}));
  sbx::Result<sbx::bwrap::Launch> launch = sbx::bwrap::planned_launch(stage2_plan(), {false, true});
  ASSERT_TRUE(launch.ok()) << launch.error();
  EXPECT_EQ(launch->form, sbx::bwrap::LaunchForm::kStage2);
  EXPECT_EQ(launch->argv, sbx::bwrap::stage2_launch_argv(
                              stage2_plan(), sbx::bwrap::stage2_launch_options(stage2_plan())));
}

// bwrap runs stage 2's waiter, which runs the command (and reports its signal). The write layer
// (linux/landlock/write_layer.hpp) cannot be entered before bwrap mounts: the waiter enters it.
TEST(BwrapDirectPlan, TheWaiterRunsTheCommandAndEntersTheWriteLayer) {
  BwrapPlan layered = stage2_plan();
  layered.write_layer = true;
  layered.write_roots = {"/w", "/tmp"};
  std::optional<sbx::bwrap::DirectPlan> plan = direct_plan(layered, true);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->write_layer);
  EXPECT_EQ(plan->writable_roots, (std::vector<std::string>{"/w", "/tmp"}));
  EXPECT_EQ(plan->command, (std::vector<std::string>{"/bin/echo", "hi"}));
  EXPECT_EQ(direct_argv(*plan),
            (std::vector<std::string>{"/usr/bin/bwrap", "--args", "4", "--",
                                      "/opt/sbx/libexec/sbx/sbx-stage2", "--waiter",
                                      "--write-layer", "--write-root", "/w", "--write-root", "/tmp",
                                      "--status-fd", "9", "--", "/bin/echo", "hi"}));
  // Below the write layer's Landlock ABI the layer would enter nothing: the waiter enters none.
  ASSERT_TRUE(direct_plan(layered, false));
  EXPECT_FALSE(direct_plan(layered, false)->write_layer);
  EXPECT_EQ(direct_argv(*direct_plan(layered, false)),
            (std::vector<std::string>{"/usr/bin/bwrap", "--args", "4", "--",
                                      "/opt/sbx/libexec/sbx/sbx-stage2", "--waiter", "--status-fd",
                                      "9", "--", "/bin/echo", "hi"}));
  // Roots without the layer: stage 2 would refuse the plan, so the direct launch does not guess.
  BwrapPlan roots_only = stage2_plan();
  roots_only.write_roots = {"/w"};
  EXPECT_FALSE(direct_plan(roots_only, true));
}

// bwrap sets PWD to the --chdir directory whatever its environment says: only a plan whose
// environment already holds exactly that runs without stage 2 (the command then gets exactly
// the plan's environment either way).
TEST(BwrapDirectPlan, AnEnvironmentWithoutPwdAtTheWorkingDirectoryKeepsStageTwo) {
  BwrapPlan elsewhere = stage2_plan();
  elsewhere.env[1] = "PWD=/home";
  EXPECT_FALSE(direct_plan(elsewhere, true));
  BwrapPlan none = stage2_plan();
  none.env.pop_back();
  EXPECT_FALSE(direct_plan(none, true));
}

std::vector<std::string> split_block(const std::string& block) {
  std::vector<std::string> out;
  std::string current;
  for (char c : block) {
    if (c == '\0') {
      out.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  EXPECT_TRUE(current.empty()) << "the block does not end with a NUL";
  return out;
}

TEST(BwrapDirectPlan, EnvironmentAndOptionsGoToTheArgsBlockNotTheArgv) {
  const sbx::bwrap::DirectPlan plan = *direct_plan(stage2_plan(), true);
  sbx::Result<std::string> block = direct_args_block(plan);
  ASSERT_TRUE(block.ok()) << block.error();
  EXPECT_EQ(split_block(*block), (std::vector<std::string>{"--json-status-fd",
                                                           "3",
                                                           "--add-seccomp-fd",
                                                           "5",
                                                           "--add-seccomp-fd",
                                                           "6",
                                                           "--clearenv",
                                                           "--setenv",
                                                           "A",
                                                           "1",
                                                           "--setenv",
                                                           "PWD",
                                                           "/w",
                                                           "--ro-bind",
                                                           "/",
                                                           "/",
                                                           "--unshare-pid",
                                                           "--chdir",
                                                           "/w",
                                                           "--ro-bind-data",
                                                           "7",
                                                           sbx::bwrap::kPauseFile}));
  EXPECT_EQ(direct_argv(plan),
            (std::vector<std::string>{"/usr/bin/bwrap", "--args", "4", "--",
                                      "/opt/sbx/libexec/sbx/sbx-stage2", "--waiter", "--status-fd",
                                      "9", "--", "/bin/echo", "hi"}));
  // What the plan's JSON shows (and exec logs): the block without the --setenv triples, whose
  // names "environment" lists; no value of the environment.
  sbx::Result<sbx::bwrap::Launch> launch = sbx::bwrap::planned_launch(stage2_plan(), {true, true});
  ASSERT_TRUE(launch.ok()) << launch.error();
  EXPECT_EQ(launch->form, sbx::bwrap::LaunchForm::kDirect);
  EXPECT_EQ(launch->args, split_block(*block));
  EXPECT_EQ(sbx::bwrap::launch_json(*launch),
            "{\"form\":\"direct\",\"argv\":[\"/usr/bin/bwrap\",\"--args\",\"4\",\"--\",\"/opt/"
            "sbx/libexec/sbx/sbx-stage2\",\"--waiter\",\"--status-fd\",\"9\",\"--\",\"/bin/"
            "echo\",\"hi\"],\"args\":[\"--json-status-fd\",\"3\",\"--add-seccomp-fd\",\"5\",\"--"
            "add-seccomp-fd\",\"6\",\"--clearenv\",\"--ro-bind\",\"/\",\"/\",\"--unshare-pid\",\"--"
            "chdir\",\"/w\",\"--ro-bind-data\",\"7\",\"/dev/.sbx-setup\"],\"environment\":[\"A\","
            "\"PWD\"]}");
  sbx::bwrap::DirectPlan equals = plan;
  equals.env = {"SECRET=x=y"};
  ASSERT_TRUE(direct_args_block(equals).ok());
  EXPECT_NE(direct_args_block(equals)->find(std::string("--setenv\0SECRET\0x=y\0", 20)),
            std::string::npos);
  sbx::bwrap::DirectPlan with_nul = plan;
  with_nul.env.push_back(std::string("B=a\0b", 5));
  EXPECT_FALSE(direct_args_block(with_nul).ok());
  sbx::bwrap::DirectPlan no_name = plan;
  no_name.env.push_back("=v");
  EXPECT_FALSE(direct_args_block(no_name).ok());
}

TEST(BwrapDirectPause, MountsUnderNewRootBecomeTheSandboxsAndBwrapsOwnBindIsDropped) {
  const std::vector<sbx::stage2::ActualMount> seen = {
      {"/", true},              // bwrap's setup tmpfs
      {"/newroot", true},       // bwrap's bind of its newroot directory
      {"/newroot", false},      // the plan's --ro-bind / /
      {"/newroot/work", true},  // a writable root
      {"/newrootx", true},      // not below /newroot
      {"/oldroot", true},       // the host's root
      {"/oldroot/newroot/a", true}};
  const std::vector<sbx::stage2::ActualMount> mapped = sbx::bwrap::mounts_in_new_root(seen);
  ASSERT_EQ(mapped.size(), 2u);
  EXPECT_EQ(mapped[0].path, "/");
  EXPECT_FALSE(mapped[0].writable);
  EXPECT_EQ(mapped[1].path, "/work");
  EXPECT_TRUE(mapped[1].writable);
}

TEST(BwrapDirectPause, JsonStatusAndInterfacesAreParsedAsBwrapAndProcWriteThem) {
  const sbx::bwrap::JsonStatus started =
      sbx::bwrap::parse_json_status("{ \"child-pid\": 2523, \"mnt-namespace\": 4026532174 }\n");
  EXPECT_EQ(started.child_pid, 2523);
  EXPECT_FALSE(started.exit_code);
  const sbx::bwrap::JsonStatus ended =
      sbx::bwrap::parse_json_status("{ \"child-pid\": 2525 }\n{ \"exit-code\": 143 }\n");
  EXPECT_EQ(ended.exit_code, 143);
  EXPECT_FALSE(sbx::bwrap::parse_json_status("{ \"child-pid\": x }").child_pid);
  EXPECT_EQ(sbx::bwrap::net_dev_interfaces(
                "Inter-|   Receive  |  Transmit\n face |bytes packets\n    lo: 0 0\n"
                "  eth0: 1 2\n"),
            (std::vector<std::string>{"lo", "eth0"}));
}

// ---------------------------------------------------------------------------------------------
// With the real bwrap.

class BwrapDirectRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/bwrap")) GTEST_SKIP() << "/usr/bin/bwrap is not installed";
    if (::access("/proc/self/task", R_OK) != 0) GTEST_SKIP() << "no /proc";
  }
  // A typed plan as the translator makes it, network restricted, the scratch dir writable, for
  // `command` (by default /bin/sh -c SCRIPT).
  BwrapPlan typed(const std::vector<std::string>& command,
                  std::vector<std::string> env = {}) const {
    BwrapPlan plan;
    plan.bwrap = "/usr/bin/bwrap";
    plan.options = {"--ro-bind",
                    "/",
                    "/",
                    "--dev",
                    "/dev",
                    "--proc",
                    "/proc",
                    "--bind",
                    dir_,
                    dir_,
                    "--unshare-user",
                    "--unshare-pid",
                    "--unshare-ipc",
                    "--unshare-net",
                    "--die-with-parent",
                    "--new-session",
                    "--cap-drop",
                    "ALL",
                    "--as-pid-1"};
    plan.chdir = dir_;
    plan.stage2 = stage2_;  // the waiter
    plan.net = Stage2Net::kPrivate;
    env.push_back("PWD=" + dir_);  // as sbx's environment has it (else stage 2 would run)
    plan.env = std::move(env);
    plan.command = command;
    return plan;
  }
  // The ExecPlan of `typed` for this kernel (the launch exec() takes is the plan's).
  sbx::ExecPlan plan(const BwrapPlan& typed) const {
    return sbx::bwrap::exec_plan_of(typed, sbx::bwrap::running_launch_host(), dir_);
  }
  sbx::ExecPlan plan(const std::string& script, std::vector<std::string> env = {}) const {
    return plan(typed({"/bin/sh", "-c", script}, std::move(env)));
  }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static std::string proc_file(const std::string& pid, const char* name) {
    std::ifstream in("/proc/" + pid + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  sbx::test::TempDir scratch_;
  const std::string dir_ = scratch_.path();
  const std::string stage2_ = std::string(SBX_BUILD_TREE) + "/libexec/sbx/sbx-stage2";
};

// A run's status as one exit code of a forked child: the command's code (below 100), 100 + the
// signal that killed it, 99 for an error of the run.
int child_code(const sbx::Result<sbx::ExitStatus>& status) {
  if (!status.ok()) return 99;
  return status->signal != 0 ? 100 + status->signal : status->exit_code;
}

TEST_F(BwrapDirectRun, TheEnvironmentIsInNoArgvOrEnvironmentOfBwrap) {
  const std::string secret = "sbx-direct-secret-7f3a";
  // The command says it runs, then waits for the test to have looked at /proc.
  const std::string script =
      "echo \"$TOKEN\" > out; : > running; "
      "while [ ! -e go ]; do sleep 0.02; done";
  auto run = std::async(std::launch::async, [&] {
    return sbx::bwrap::spawn_bwrap(plan(script, {"TOKEN=" + secret, "PATH=/usr/bin:/bin"}));
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(dir_ + "/running") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(dir_ + "/running"));
  int bwraps = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = proc_file(pid, "cmdline");
    EXPECT_EQ(cmdline.find(secret), std::string::npos) << "pid " << pid << ": " << cmdline;
    if (cmdline.rfind(std::string("/usr/bin/bwrap\0--args\0", 22), 0) == 0 &&
        cmdline.find(script) != std::string::npos) {
      ++bwraps;  // bwrap, and its PID 1 inside the sandbox
      std::string expected;
      for (const std::string& arg :
           {std::string("/usr/bin/bwrap"), std::string("--args"), std::string("4"),
            std::string("--"), stage2_, std::string("--waiter"), std::string("--status-fd"),
            std::string("9"), std::string("--"), std::string("/bin/sh"), std::string("-c"), script})
        expected += arg + std::string(1, '\0');
      EXPECT_EQ(cmdline, expected);
      EXPECT_EQ(proc_file(pid, "environ"), "") << "bwrap has an environment (pid " << pid << ")";
    }
  }
  EXPECT_GE(bwraps, 2) << "bwrap and its PID 1 not found";
  std::ofstream(dir_ + "/go").close();
  sbx::Result<sbx::ExitStatus> status = run.get();
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 0);
  EXPECT_EQ(read("out"), secret + "\n");  // and yet the command has it
}

// bwrap folds a death by signal N into 128+N; the waiter tells the signal apart from a plain
// `exit 128+N`.
TEST_F(BwrapDirectRun, OnlyStdioReachesTheCommandAndStatusesPassThrough) {
  sbx::Result<sbx::ExitStatus> status =
      sbx::bwrap::spawn_bwrap(plan("ls /proc/self/fd > fds; exit 7"));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 7);
  // ls's own directory descriptor is 3.
  EXPECT_EQ(read("fds"), "0\n1\n2\n3\n");
  for (int sig : {SIGTERM, SIGKILL, SIGSEGV}) {
    status = sbx::bwrap::spawn_bwrap(plan("kill -" + std::to_string(sig) + " $$"));
    ASSERT_TRUE(status.ok()) << status.error();
    EXPECT_EQ(*status, (sbx::ExitStatus{0, sig}));
    status = sbx::bwrap::spawn_bwrap(plan("exit " + std::to_string(128 + sig)));
    ASSERT_TRUE(status.ok()) << status.error();
    EXPECT_EQ(*status, (sbx::ExitStatus{128 + sig, 0}));
  }
  status = sbx::bwrap::spawn_bwrap(plan("exit 1"));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 1);  // the command's 1, not bwrap's
}

TEST_F(BwrapDirectRun, MissingOrNonExecutableCommandIsRefusedBeforeItRuns) {
  sbx::Result<sbx::ExitStatus> status =
      sbx::bwrap::spawn_bwrap(plan(typed({dir_ + "/no-such-program"})));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 127);

  const std::string plain = dir_ + "/plain";
  std::ofstream(plain) << "#!/bin/sh\ntouch " << dir_ << "/ran\n";
  ASSERT_EQ(::chmod(plain.c_str(), 0644), 0);
  status = sbx::bwrap::spawn_bwrap(plan(typed({plain})));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 126);
  EXPECT_FALSE(fs::exists(dir_ + "/ran"));
}

TEST_F(BwrapDirectRun, BwrapFailingAfterThePausePointIsAnError) {
  BwrapPlan bad_cwd = typed({"/bin/sh", "-c", "touch ran"});
  bad_cwd.chdir = dir_ + "/gone";
  bad_cwd.env.back() = "PWD=" + dir_ + "/gone";
  ASSERT_TRUE(sbx::bwrap::direct_launch_of(bad_cwd, sbx::bwrap::running_launch_host()))
      << "not the direct launch";
  sbx::Result<sbx::ExitStatus> status = sbx::bwrap::spawn_bwrap(plan(bad_cwd));
  // bwrap's own exit 1 never passes for the command's: the run has an error, no exit status.
  ASSERT_FALSE(status.ok()) << "exit " << status->exit_code;
  EXPECT_NE(status.error().find("bwrap failed before the command started"), std::string::npos)
      << status.error();
  EXPECT_FALSE(fs::exists(dir_ + "/ran"));
}

TEST_F(BwrapDirectRun, NoDescendantOutlivesTheRun) {
  const std::string marker = "31.4159";
  // Both sleeps inherit the shell's fd 3 on `held`: its last close is the last of them gone.
  std::ofstream(dir_ + "/held").close();
  const sbx::test::LastCloseWatch sleeps(dir_ + "/held");
  ASSERT_TRUE(sleeps.ok());
  sbx::Result<sbx::ExitStatus> status = sbx::bwrap::spawn_bwrap(
      plan("exec 3>held; sleep " + marker + " & setsid sleep " + marker + " & exit 0"));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 0);
  EXPECT_TRUE(sleeps.wait(10'000)) << "a sleep still holds fd 3 ten seconds after the run";
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    EXPECT_EQ(proc_file(pid, "cmdline").find(marker), std::string::npos)
        << "a sleep outlived the run: pid " << pid;
  }
}

// Signals sent to the process running spawn_bwrap reach the command (bwrap's PID 1 would drop
// them): a trap runs and its status comes back; without a trap the command dies of the signal.
// spawn_bwrap runs in a forked child (its only thread blocks the signals and takes them from a
// signalfd), which the test signals once the command has started.
TEST_F(BwrapDirectRun, SignalsSentToTheCallerReachTheCommand) {
  auto run_and_signal = [this](const std::string& script, int sig) {
    std::filesystem::remove(dir_ + "/running");
    const sbx::ExecPlan p = plan(script);
    const pid_t child = ::fork();
    if (child == 0) ::_exit(child_code(sbx::bwrap::spawn_bwrap(p)));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(dir_ + "/running") && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(fs::exists(dir_ + "/running"));
    ::kill(child, sig);
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
  };
  EXPECT_EQ(run_and_signal("trap 'echo got > sig; exit 5' TERM; : > running; "
                           "while :; do sleep 0.05; done",
                           SIGTERM),
            5);
  EXPECT_EQ(read("sig"), "got\n");
  EXPECT_EQ(run_and_signal(": > running; exec sleep 30", SIGTERM), 100 + SIGTERM);
  EXPECT_EQ(run_and_signal(": > running; exec sleep 30", SIGINT), 100 + SIGINT);
}

// A signal that comes while bwrap sets up or starts the waiter is held until the waiter catches
// it, then reaches the command: it never kills bwrap's child before the command started (which
// was reported as "bwrap failed before the command started"). Sent after 0 to 40 ms, so that
// some land in each phase of the launch.
TEST_F(BwrapDirectRun, AnEarlySignalReachesTheCommandWheneverItComes) {
  const sbx::ExecPlan p = plan("exec sleep 30");
  for (int delay_ms = 0; delay_ms <= 40; delay_ms += 2) {
    int started[2];
    ASSERT_EQ(::pipe(started), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      // Blocked before the parent may send it, so that it is the run's: spawn_bwrap's signalfd
      // takes it (before spawn_bwrap blocks it, it would end this process, not the run).
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      ::sigprocmask(SIG_BLOCK, &term, nullptr);
      ::close(started[0]);
      ::close(started[1]);
      ::_exit(child_code(sbx::bwrap::spawn_bwrap(p)));
    }
    ::close(started[1]);
    char byte = 0;
    ASSERT_EQ(::read(started[0], &byte, 1), 0);  // EOF: the child blocks SIGTERM
    ::close(started[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(child, SIGTERM);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status))
        << "spawn_bwrap's process itself died, after " << delay_ms << " ms";
    EXPECT_EQ(WEXITSTATUS(status), 100 + SIGTERM) << "signal sent after " << delay_ms << " ms";
  }
}

// bwrap killed while the command runs (the run's timeout kills its whole cgroup after the grace
// period, bwrap included): bwrap then writes no exit code, but the command did start, so the
// run ends like one killed by that signal (128 + N), not as "bwrap failed" (125).
TEST_F(BwrapDirectRun, BwrapKilledWhileTheCommandRunsEndsTheRunWithThatSignal) {
  sbx::Result<sbx::ExitStatus> status = sbx::Error{"not run"};
  std::thread runner([&] { status = sbx::bwrap::spawn_bwrap(plan(": > running; exec sleep 30")); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(dir_ + "/running") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(fs::exists(dir_ + "/running"));
  // bwrap is this process's child (the runner thread's vfork): the one whose parent we are.
  int killed = 0;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = proc_file(pid, "stat");
    const std::size_t end = stat.rfind(')');
    if (proc_file(pid, "comm") != "bwrap\n" || end == std::string::npos) continue;
    std::istringstream fields(stat.substr(end + 1));
    std::string state, parent;
    fields >> state >> parent;
    if (parent == self && ::kill(std::stoi(pid), SIGKILL) == 0) ++killed;
  }
  runner.join();
  EXPECT_EQ(killed, 1);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->signal, SIGKILL);
  EXPECT_EQ(status->shell_code(), 128 + SIGKILL);
}

}  // namespace direct_launch_test
