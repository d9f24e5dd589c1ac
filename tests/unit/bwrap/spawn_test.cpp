// The bwrap backend's spawner: the stage-2 launch's argv from the typed plan (pure parts) and
// the spawn contract (exact argv/env/cwd, only fds 0-2 and the info fd inherited, 126/127 for
// exec failures, no plan without its typed detail),
// checked with a stand-in "bwrap" script so that every case is fast and deterministic. The
// real bwrap path is covered end to end by tests/integration/bwrap.
#include "sbx/bwrap/spawn.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sbx/bwrap/bind_fds.hpp"
#include "sbx/bwrap/launch_form.hpp"
#include "sbx/bwrap/plan.hpp"
#include "sbx_test/capture.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using sbx::ExecPlan;
using sbx::bwrap::BwrapPlan;
using sbx::bwrap::parse_child_pid;
using sbx::bwrap::spawn_bwrap;
using sbx::bwrap::stage2_form;
using sbx::bwrap::stage2_launch_argv;
using sbx::bwrap::Stage2Net;
using sbx::test::capture_stderr;

// A typed plan as the translator makes one (translate.hpp), restricted network, with an
// environment, a listed unix socket and a procfs.
BwrapPlan typed_plan() {
  BwrapPlan plan;
  plan.bwrap = "/usr/bin/bwrap";
  plan.options = {"--ro-bind", "/", "/", "--proc", "/proc", "--unshare-net", "--as-pid-1"};
  plan.chdir = "/w";
  plan.stage2 = "/s2";
  plan.net = Stage2Net::kPrivate;
  plan.write_layer = true;
  plan.write_roots = {"/w"};
  plan.unix_sockets = {"/run/a.sock"};
  plan.env = {"PATH=/bin", "TOKEN=s3cr=t"};
  plan.command = {"/bin/echo", "--env", "NOT_MINE=1"};
  return plan;
}

// The printed plan shows everything, runnable by hand; the stage-2 launch gives bwrap --info-fd
// right after its path, stage 2 its ready pipe, the supervisor's flag, the mount list (a procfs
// is mounted) and the environment's descriptor, and leaves the environment and the supervisor's
// sockets out of every argument. The command's own arguments are never touched.
TEST(BwrapStageTwoLaunch, ArgvFromTheTypedPlan) {
  const BwrapPlan plan = typed_plan();
  EXPECT_EQ(stage2_form(plan), (std::vector<std::string>{"/usr/bin/bwrap",
                                                         "--ro-bind",
                                                         "/",
                                                         "/",
                                                         "--proc",
                                                         "/proc",
                                                         "--unshare-net",
                                                         "--as-pid-1",
                                                         "--chdir",
                                                         "/w",
                                                         "--",
                                                         "/s2",
                                                         "--net",
                                                         "private",
                                                         "--write-layer",
                                                         "--write-root",
                                                         "/w",
                                                         "--allow-unix-socket",
                                                         "/run/a.sock",
                                                         "--env",
                                                         "PATH=/bin",
                                                         "--env",
                                                         "TOKEN=s3cr=t",
                                                         "--",
                                                         "/bin/echo",
                                                         "--env",
                                                         "NOT_MINE=1"}));
  const std::vector<std::string> argv =
      stage2_launch_argv(plan, sbx::bwrap::stage2_launch_options(plan));
  EXPECT_EQ(argv, (std::vector<std::string>{"/usr/bin/bwrap",
                                            "--info-fd",
                                            "3",
                                            "--ro-bind",
                                            "/",
                                            "/",
                                            "--proc",
                                            "/proc",
                                            "--unshare-net",
                                            "--as-pid-1",
                                            "--chdir",
                                            "/w",
                                            "--",
                                            "/s2",
                                            "--ready-fd",
                                            "5",
                                            "--unix-supervised",
                                            "--mounts-fd",
                                            "6",
                                            "--env-fd",
                                            "4",
                                            "--net",
                                            "private",
                                            "--write-layer",
                                            "--write-root",
                                            "/w",
                                            "--",
                                            "/bin/echo",
                                            "--env",
                                            "NOT_MINE=1"}));
  for (const std::string& arg : argv)
    EXPECT_EQ(arg.find("s3cr"), std::string::npos) << "a secret stayed in the arguments";
}

// Without an environment there is no descriptor for it; without a procfs no mount list (stage 2
// could not read its mountinfo); proxy mode tells stage 2 its port and the proxy's socket.
TEST(BwrapStageTwoLaunch, OptionalDescriptorsAndProxy) {
  BwrapPlan plan = typed_plan();
  plan.env.clear();
  plan.options = {"--ro-bind", "/", "/"};
  plan.write_layer = false;
  plan.write_roots.clear();
  plan.net = Stage2Net::kProxy;
  plan.proxy_port = 3128;
  plan.proxy_socket = "/tmp/p/proxy.sock";
  plan.command = {"/bin/true"};
  EXPECT_EQ(stage2_launch_argv(plan, sbx::bwrap::stage2_launch_options(plan)),
            (std::vector<std::string>{"/usr/bin/bwrap",
                                      "--info-fd",
                                      "3",
                                      "--ro-bind",
                                      "/",
                                      "/",
                                      "--chdir",
                                      "/w",
                                      "--",
                                      "/s2",
                                      "--ready-fd",
                                      "5",
                                      "--unix-supervised",
                                      "--net",
                                      "proxy",
                                      "--proxy-port",
                                      "3128",
                                      "--proxy-socket",
                                      "/tmp/p/proxy.sock",
                                      "--",
                                      "/bin/true"}));
}

// What the plan's JSON shows (and exec logs): the environment by name only.
TEST(BwrapStageTwoLaunch, TheLaunchRecordNamesTheEnvironmentWithoutItsValues) {
  sbx::Result<sbx::bwrap::Launch> launch = sbx::bwrap::planned_launch(typed_plan(), {});
  ASSERT_TRUE(launch.ok()) << launch.error();
  EXPECT_EQ(launch->form, sbx::bwrap::LaunchForm::kStage2);
  const std::string json = sbx::bwrap::launch_json(*launch, {{10, "/"}});
  EXPECT_EQ(json.find("s3cr"), std::string::npos) << json;
  EXPECT_NE(json.find("\"environment\":[\"PATH\",\"TOKEN\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"bind_sources\":{\"10\":\"/\"}"), std::string::npos) << json;
  EXPECT_EQ(json.rfind("{\"form\":\"stage2\",\"argv\":[\"/usr/bin/bwrap\",\"--info-fd\"", 0), 0u)
      << json;
}

TEST(BwrapInfoFd, ParsesChildPidAsBwrapWritesIt) {
  EXPECT_EQ(parse_child_pid("{\n    \"child-pid\": 4242\n}\n"), 4242);
  EXPECT_EQ(parse_child_pid("{\"child-pid\":7}"), 7);
  EXPECT_EQ(parse_child_pid("{ \"cgroup-namespace\": 1, \"child-pid\" :\t 99 }"), 99);
}

TEST(BwrapInfoFd, RejectsMissingOrMalformedChildPid) {
  EXPECT_EQ(parse_child_pid(""), std::nullopt);
  EXPECT_EQ(parse_child_pid("{}"), std::nullopt);
  EXPECT_EQ(parse_child_pid("{\"child-pid\": }"), std::nullopt);
  EXPECT_EQ(parse_child_pid("{\"child-pid\": \"12\"}"), std::nullopt);
  EXPECT_EQ(parse_child_pid("{\"child-pid\" 12}"), std::nullopt);
  EXPECT_EQ(parse_child_pid("{\"child-pid\": 0}"), std::nullopt);
  EXPECT_EQ(parse_child_pid("{\"child-pid\": -5}"), std::nullopt);
  EXPECT_EQ(parse_child_pid("{\"child-pid\": 99999999999999999999}"), std::nullopt);
  EXPECT_EQ(parse_child_pid("{\"child-pid\""), std::nullopt);  // truncated
}

// A scratch directory holding a stand-in bwrap: a shell script that records what it was
// given (argv, environment, cwd, open fds) and exits with a chosen code.
class BwrapSpawn : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = dir_ + "/fake-bwrap";
    std::ofstream(script_) << "#!/bin/sh\n"
                              "out=\"$SBX_TEST_OUT\"\n"
                              "printf '%s\\n' \"$@\" > \"$out/argv\"\n"
                              "env > \"$out/env\"\n"
                              "pwd > \"$out/cwd\"\n"
                              "ls /proc/$$/fd > \"$out/fds\"\n"
                              "printf '{\"child-pid\": %d}' $$ >&3\n"
                              // What sbx-stage2 does first (--ready-fd 5), unless the stand-in
                              // plays a bwrap that failed before starting it.
                              "[ \"$SBX_TEST_READY\" = 0 ] || printf R >&5\n"
                              "exit \"$SBX_TEST_EXIT\"\n";
    ASSERT_EQ(::chmod(script_.c_str(), 0755), 0);
  }

  // A typed plan for the stand-in (stage 2 is /bin/true), with `options` for bwrap; the
  // stand-in's own environment is the ExecPlan's (bwrap's), the typed plan's (the command's) is
  // empty. No direct launch (LaunchHost{}): the stage-2 launch.
  ExecPlan plan(int exit_code, bool ready = true, const std::string& bwrap = "",
                std::vector<std::string> options = {"--ro-bind", "/", "/"}) const {
    BwrapPlan typed;
    typed.bwrap = bwrap.empty() ? script_ : bwrap;
    typed.options = std::move(options);
    typed.chdir = "/";
    typed.stage2 = "/bin/true";
    typed.command = {"/bin/echo", "hi"};
    ExecPlan out = sbx::bwrap::exec_plan_of(typed, {}, dir_);
    out.env = {"SBX_TEST_OUT=" + dir_, "SBX_TEST_EXIT=" + std::to_string(exit_code),
               "SBX_TEST_READY=" + std::string(ready ? "1" : "0"), "PATH=/usr/bin:/bin"};
    return out;
  }
  std::vector<std::string> lines(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

  sbx::test::TempDir scratch_;
  const std::string dir_ = scratch_.path();
  std::string script_;
};

TEST_F(BwrapSpawn, RunsTheExactPlanAndReturnsItsStatus) {
  sbx::Result<sbx::ExitStatus> status = spawn_bwrap(plan(7));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 7);
  EXPECT_EQ(status->signal, 0);
  // The bind source went as a checked descriptor; stage 2 (here /bin/true) got --ready-fd, was
  // told the unix-socket supervisor runs, and got its own arguments and the command.
  const std::vector<std::string> argv = lines("argv");
  ASSERT_EQ(argv.size(), 17u);
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 3),
            (std::vector<std::string>{"--info-fd", "3", "--ro-bind-fd"}));
  EXPECT_GE(std::stoi(argv[3]), sbx::bwrap::kFirstBindFd);
  EXPECT_EQ(
      std::vector<std::string>(argv.begin() + 4, argv.end()),
      (std::vector<std::string>{"/", "--chdir", "/", "--", "/bin/true", "--ready-fd", "5",
                                "--unix-supervised", "--net", "private", "--", "/bin/echo", "hi"}));
  EXPECT_EQ(lines("cwd"), std::vector<std::string>{fs::canonical(dir_).string()});
  // Exactly the plan's environment (sh adds PWD, SHLVL and `_` itself).
  for (const std::string& entry : lines("env")) {
    const std::string name = entry.substr(0, entry.find('='));
    EXPECT_TRUE(name == "SBX_TEST_OUT" || name == "SBX_TEST_EXIT" || name == "PATH" ||
                name == "SBX_TEST_READY" || name == "PWD" || name == "SHLVL" || name == "_" ||
                name == "OLDPWD")
        << "leaked into bwrap's environment: " << entry;
  }
}

// exec() launches from the typed plan only: a plan that carries nothing but its printed argv
// (made by another backend, or by hand) is refused before anything runs.
TEST_F(BwrapSpawn, APlanWithoutItsTypedDetailIsRefused) {
  ExecPlan printed = plan(0);
  printed.detail = nullptr;
  sbx::Result<sbx::ExitStatus> status = spawn_bwrap(printed);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("no bwrap plan detail"), std::string::npos) << status.error();
  EXPECT_FALSE(fs::exists(dir_ + "/argv")) << "bwrap ran";
}

// An inherited unix datagram socket could name any host socket on each send: refused before
// bwrap starts (a stream socket, as journald gives services, is fine).
TEST_F(BwrapSpawn, InheritedUnixDatagramSocketIsRefused) {
  const int saved = ::dup(0);
  ASSERT_GE(saved, 0);
  // stdin becomes one end of a pair of `type`, then the plan runs.
  auto run_with_stdin = [this](int type) {
    int pair[2];
    if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, pair) != 0 || ::dup2(pair[0], 0) != 0)
      return sbx::Result<sbx::ExitStatus>(sbx::Error{"cannot set up stdin"});
    ::close(pair[0]);
    sbx::Result<sbx::ExitStatus> result = spawn_bwrap(plan(7));
    ::close(pair[1]);
    return result;
  };
  sbx::Result<sbx::ExitStatus> refused = run_with_stdin(SOCK_DGRAM);
  sbx::Result<sbx::ExitStatus> stream = run_with_stdin(SOCK_STREAM);
  ::dup2(saved, 0);
  ::close(saved);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("unix datagram socket"), std::string::npos) << refused.error();
  ASSERT_TRUE(stream.ok()) << stream.error();
  EXPECT_EQ(stream->exit_code, 7);
}

TEST_F(BwrapSpawn, StrayDescriptorsDoNotReachBwrap) {
  // A descriptor the caller left inheritable must not reach bwrap (it would pass it on into
  // the sandbox); the info pipe must, as fd 3.
  const int opened = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(opened, 0);
  constexpr int kStray = 57;
  ASSERT_EQ(::fcntl(opened, F_DUPFD, kStray), kStray);  // F_DUPFD: no close-on-exec
  ::close(opened);
  sbx::Result<sbx::ExitStatus> status = spawn_bwrap(plan(0));
  ::close(kStray);
  ASSERT_TRUE(status.ok()) << status.error();
  const std::vector<std::string> fds = lines("fds");  // the shell's own descriptors
  auto has = [&](const std::string& fd) {
    return std::find(fds.begin(), fds.end(), fd) != fds.end();
  };
  for (const char* fd : {"0", "1", "2", "3"}) EXPECT_TRUE(has(fd)) << "fd " << fd << " missing";
  EXPECT_FALSE(has(std::to_string(kStray))) << "an inherited descriptor reached bwrap";
}

// bwrap that cannot be run is the backend's failure, not the command's 127 or 126: the command
// never started, so the run has an error and no exit status (issue #33 point 6).
TEST_F(BwrapSpawn, MissingOrNotExecutableBwrapIsAnErrorNotAnExitStatus) {
  sbx::Result<sbx::ExitStatus> status = spawn_bwrap(plan(0, true, dir_ + "/no-such-bwrap"));
  ASSERT_FALSE(status.ok()) << "exit " << status->exit_code;
  EXPECT_EQ(status.kind(), sbx::ErrorKind::backend_failure);
  EXPECT_NE(status.error().find("bwrap: cannot run " + dir_ + "/no-such-bwrap: No such file"),
            std::string::npos)
      << status.error();

  const std::string plain = dir_ + "/not-executable";
  std::ofstream(plain) << "#!/bin/sh\nexit 0\n";
  ASSERT_EQ(::chmod(plain.c_str(), 0644), 0);
  status = spawn_bwrap(plan(0, true, plain));
  ASSERT_FALSE(status.ok()) << "exit " << status->exit_code;
  EXPECT_NE(status.error().find("Permission denied"), std::string::npos) << status.error();
}

TEST_F(BwrapSpawn, MissingWorkingDirectoryFailsBeforeBwrapRuns) {
  ExecPlan bad_cwd = plan(0);
  bad_cwd.cwd = dir_ + "/gone";
  sbx::Result<sbx::ExitStatus> status = spawn_bwrap(bad_cwd);
  ASSERT_FALSE(status.ok()) << "exit " << status->exit_code;
  EXPECT_NE(status.error().find("cannot change directory to '" + dir_ + "/gone'"),
            std::string::npos)
      << status.error();
  EXPECT_FALSE(fs::exists(dir_ + "/argv")) << "bwrap ran despite the missing cwd";
}

// bwrap ending before stage 2 said it started is bwrap's own failure, whatever bwrap's exit
// status was: an error, never an exit status; once stage 2 has started, every status is the
// command's.
TEST_F(BwrapSpawn, ExitBeforeStageTwoStartedIsAnErrorAndAfterwardsPassesThrough) {
  for (int code : {0, 1, 2, 125, 126, 127}) {
    sbx::Result<sbx::ExitStatus> failed = spawn_bwrap(plan(code, /*ready=*/false));
    ASSERT_FALSE(failed.ok()) << "bwrap exit " << code << " passed as the command's";
    EXPECT_EQ(failed.kind(), sbx::ErrorKind::backend_failure);
    EXPECT_NE(failed.error().find("bwrap failed before the command started (exit " +
                                  std::to_string(code)),
              std::string::npos)
        << failed.error();
    sbx::Result<sbx::ExitStatus> ran = spawn_bwrap(plan(code, /*ready=*/true));
    ASSERT_TRUE(ran.ok()) << ran.error();
    EXPECT_EQ(ran->exit_code, code);
  }
}

// The same with the real bwrap refusing its arguments: an error, and bwrap's own message is
// shown on the command's stderr.
TEST_F(BwrapSpawn, RealBwrapSetupFailureIsAnErrorWithBwrapsMessage) {
  if (!fs::exists("/usr/bin/bwrap")) GTEST_SKIP() << "/usr/bin/bwrap is not installed";
  ExecPlan bad = plan(0, true, "/usr/bin/bwrap", {"--ro-bind", "/", "/", "--no-such-bwrap-option"});
  bad.env = {};
  sbx::Result<sbx::ExitStatus> status = sbx::Error{"not run"};
  const std::string text = capture_stderr([&] { status = spawn_bwrap(bad); });
  ASSERT_FALSE(status.ok()) << "exit " << status->exit_code;
  EXPECT_NE(text.find("bwrap: Unknown option --no-such-bwrap-option"), std::string::npos) << text;
  EXPECT_NE(status.error().find("bwrap failed before the command started"), std::string::npos)
      << status.error();
}

// The mask of a missing name is /dev/null bound onto an empty file; if a directory appeared at
// the name after sbx's own check (a person's, or an older sbx's mount point), the real bwrap
// refuses to bind a file onto it, and the run ends with an error and bwrap's message: fail
// closed.
TEST_F(BwrapSpawn, ADirectoryWhereTheFileMaskGoesIsAnErrorWithBwrapsMessage) {
  if (!fs::exists("/usr/bin/bwrap")) GTEST_SKIP() << "/usr/bin/bwrap is not installed";
  const std::string ws = dir_ + "/ws";
  fs::create_directories(ws + "/.codex");
  ExecPlan masked = plan(0, true, "/usr/bin/bwrap",
                         {"--ro-bind", "/", "/", "--bind", ws, ws, "--ro-bind", "/dev/null",
                          ws + "/.codex", "--unshare-user"});
  masked.env = {};
  masked.cwd = ws;
  sbx::Result<sbx::ExitStatus> status = sbx::Error{"not run"};
  const std::string text = capture_stderr([&] { status = spawn_bwrap(masked); });
  ASSERT_FALSE(status.ok()) << "exit " << status->exit_code;
  EXPECT_NE(text.find("Can't create file at " + ws + "/.codex: Is a directory"), std::string::npos)
      << text;
  EXPECT_NE(status.error().find("bwrap failed before the command started"), std::string::npos)
      << status.error();
  EXPECT_TRUE(fs::is_empty(ws + "/.codex"));
}

// An agent embedding libsbx has other threads, and a process-directed SIGCHLD goes to any
// thread that does not block it. If bwrap ends between the spawner's last look and its poll and
// another thread consumes the SIGCHLD, the signalfd alone never wakes; the spawner watches a
// pidfd of bwrap too. The window is narrow, so this runs many spawns against such a thread (a
// regression shows up as an occasional failure here, not a deterministic one), in a forked
// child with a deadline so that a hang fails instead of hanging the suite.
TEST_F(BwrapSpawn, BwrapsEndIsSeenWhenAnotherThreadTakesSigchld) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::thread taker([] {
      sigset_t chld;
      sigemptyset(&chld);
      sigaddset(&chld, SIGCHLD);
      pthread_sigmask(SIG_UNBLOCK, &chld, nullptr);
      for (;;) ::usleep(1000);  // wakes for each signal; SIGCHLD's default action drops it
    });
    taker.detach();
    for (int i = 0; i < 50; ++i) {
      sbx::Result<sbx::ExitStatus> status = spawn_bwrap(plan(3));
      if (!status.ok() || status->exit_code != 3) ::_exit(1);
    }
    ::_exit(0);
  }
  // The child's end, seen through a pidfd (pidfd_open(2), Linux >= 5.3: readable once it exits).
  const int ended = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  const int open_error = errno;
  pollfd p{ended, POLLIN, 0};
  const int ready = ended < 0 ? -1 : ::poll(&p, 1, 30000);
  if (ended >= 0) ::close(ended);
  int status = 0;
  if (ready != 1) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << (ended < 0
                   ? "pidfd_open: " + std::string(std::strerror(open_error))
                   : "spawn_bwrap did not return within 30 s while another thread took SIGCHLD");
  }
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// When the watcher fails while bwrap runs (here poll(2), EINVAL once RLIMIT_NOFILE is below
// its descriptor count), the run ends with an error and nothing of the sandbox runs on
// unwatched: bwrap is killed and reaped, in the stage-2 launch as in the direct one (both end
// through end_bwrap). In a forked child: the limit and the signal are the process's.
// The failed-watcher test's breaker: once the stand-in bwrap wrote its pid, lowers the
// descriptor limit and wakes the watcher, whose next poll then fails.
void* break_the_watcher(void* arg) {
  const std::string& pid_file = *static_cast<const std::string*>(arg);
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  pthread_sigmask(SIG_BLOCK, &winch, nullptr);  // for the watcher's signalfd, not this thread
  for (int i = 0; i < 2000 && !fs::exists(pid_file); ++i) ::usleep(5000);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = 3;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  ::kill(::getpid(), SIGWINCH);
  return nullptr;
}

TEST_F(BwrapSpawn, AFailedWatcherLeavesNoBwrapRunning) {
  const std::string sleeper = dir_ + "/sleeping-bwrap";
  std::ofstream(sleeper) << "#!/bin/sh\n"
                            "printf '{\"child-pid\": %d}' $$ >&3\n"
                            "printf R >&5\n"
                            "echo $$ > \"$SBX_TEST_OUT/pid.tmp\"\n"
                            "mv \"$SBX_TEST_OUT/pid.tmp\" \"$SBX_TEST_OUT/pid\"\n"
                            "exec sleep 60\n";
  ASSERT_EQ(::chmod(sleeper.c_str(), 0755), 0);
  ExecPlan sleeping = plan(0, true, sleeper);
  sleeping.env = {"SBX_TEST_OUT=" + dir_, "PATH=/usr/bin:/bin"};
  const std::string pid_file = dir_ + "/pid";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A plain pthread, not std::thread: UBSan's vptr check misreads std::thread's _State in a
    // child forked from a process with threads (the sanitizer preset runs this test too).
    pthread_t breaker{};
    if (::pthread_create(&breaker, nullptr, break_the_watcher,
                         const_cast<std::string*>(&pid_file)) != 0)
      ::_exit(2);
    sbx::Result<sbx::ExitStatus> status = spawn_bwrap(sleeping);
    ::pthread_join(breaker, nullptr);
    ::_exit(status.ok() ? 1 : 0);  // no descriptor is left to say more
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::ifstream in(pid_file);
  pid_t bwrap = 0;
  in >> bwrap;
  ASSERT_GT(bwrap, 0) << "the stand-in bwrap never started";
  const bool running = ::kill(bwrap, 0) == 0;
  ::kill(bwrap, SIGKILL);  // whatever the outcome, nothing is left behind
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "spawn_bwrap did not fail when its watcher did";
  EXPECT_FALSE(running) << "bwrap was left running after the watcher failed";
}

}  // namespace
