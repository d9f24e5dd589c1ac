// Landlock mode's launcher (linux/landlock/landlock_launch.hpp), run from this process as the
// landlock plugin runs it inside sbx: exit statuses, signals sent to the caller reaching the
// command, no descendant outliving the run, the supervisor out of the command's reach, a failed
// confinement step never running the command, and sbx-stage2 --landlock as a wrapper over it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "landlock_launch.hpp"
#include "landlock_ruleset.hpp"
#include "sbx_test/temp_dir.hpp"

namespace launch_test {

namespace fs = std::filesystem;
using sbx::stage2::LandlockLaunch;
using sbx::stage2::LaunchOptions;
using sbx::stage2::NetworkFilter;

// / readable (device nodes too, for brevity), `ws` writable, no network.
LandlockLaunch confined(const std::string& ws, std::vector<std::string> command) {
  LandlockLaunch launch;
  launch.landlock.enabled = true;
  launch.landlock.read = {"/"};
  launch.landlock.keep_dev_closed = false;
  launch.landlock.write = {ws};
  launch.landlock.dev = {"/dev/null"};
  launch.landlock.block_tcp = true;
  launch.network = NetworkFilter::kBlocked;
  launch.command = std::move(command);
  return launch;
}

LaunchOptions in_dir(const std::string& ws) {
  LaunchOptions options;
  options.cwd = ws;
  options.guard_program = std::string(SBX_BUILD_TREE) + "/libexec/sbx/sbx-stage2";
  options.env = {"PATH=/usr/bin:/bin", "SBX_LAUNCH_TEST=visible"};
  return options;
}

// The shell code of `script` run confined in `ws`; -1 when the launcher could not start.
int run_script(const std::string& ws, const std::string& script) {
  sbx::Result<sbx::ExitStatus> status =
      sbx::stage2::run_landlock(confined(ws, {"/bin/sh", "-c", script}), in_dir(ws));
  return status.ok() ? status->shell_code() : -1;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A process that waits for `marker` to exist, then sends `sig` to `target` (the test process).
pid_t signal_when(const std::string& marker, pid_t target, int sig) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int i = 0; i < 1000 && !file_exists(marker); ++i) ::usleep(10'000);
    ::kill(target, sig);
    ::_exit(0);
  }
  return pid;
}

class LandlockLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sbx::stage2::landlock_abi() < 4)
      GTEST_SKIP() << "Landlock ABI " << sbx::stage2::landlock_abi()
                   << " on this kernel: these runs need ABI 4 (TCP rules)";
    ASSERT_FALSE(ws_.path().empty());
  }
  sbx::test::TempDir ws_;
};

TEST_F(LandlockLaunchTest, ExitStatusesAreTheCommandsOrTheShells) {
  EXPECT_EQ(run_script(ws_.path(), "exit 0"), 0);
  EXPECT_EQ(run_script(ws_.path(), "exit 42"), 42);
  EXPECT_EQ(run_script(ws_.path(), "kill -TERM $$"), 128 + SIGTERM);
  EXPECT_EQ(run_script(ws_.path(), "kill -KILL $$"), 128 + SIGKILL);
  sbx::Result<sbx::ExitStatus> missing =
      sbx::stage2::run_landlock(confined(ws_.path(), {"/nonexistent/cmd"}), in_dir(ws_.path()));
  ASSERT_TRUE(missing.ok()) << missing.error();
  EXPECT_EQ(missing->shell_code(), 127);
  const std::string plain = ws_ / "plain";
  std::ofstream(plain) << "not a program\n";
  ::chmod(plain.c_str(), 0644);
  sbx::Result<sbx::ExitStatus> not_executable =
      sbx::stage2::run_landlock(confined(ws_.path(), {plain}), in_dir(ws_.path()));
  ASSERT_TRUE(not_executable.ok()) << not_executable.error();
  EXPECT_EQ(not_executable->shell_code(), 126);
}

// A death by signal is reported as that signal (code 0), an exit with 128+N as that exit: the
// supervisor between the caller and the command passes the command's wait status on.
TEST_F(LandlockLaunchTest, SignalDeathsAreReportedAsSignals) {
  for (int sig : {SIGTERM, SIGKILL, SIGSEGV}) {
    sbx::Result<sbx::ExitStatus> killed = sbx::stage2::run_landlock(
        confined(ws_.path(), {"/bin/sh", "-c", "kill -" + std::to_string(sig) + " $$"}),
        in_dir(ws_.path()));
    ASSERT_TRUE(killed.ok()) << killed.error();
    EXPECT_EQ(*killed, (sbx::ExitStatus{0, sig})) << "signal " << sig;
    sbx::Result<sbx::ExitStatus> exited = sbx::stage2::run_landlock(
        confined(ws_.path(), {"/bin/sh", "-c", "exit " + std::to_string(128 + sig)}),
        in_dir(ws_.path()));
    ASSERT_TRUE(exited.ok()) << exited.error();
    EXPECT_EQ(*exited, (sbx::ExitStatus{128 + sig, 0})) << "exit " << 128 + sig;
  }
}

TEST_F(LandlockLaunchTest, TheCommandIsConfinedAndGetsItsEnvironmentAndDirectory) {
  EXPECT_EQ(run_script(ws_.path(),
                       "[ \"$SBX_LAUNCH_TEST\" = visible ] || exit 3; "
                       "[ \"$(pwd)\" = '" +
                           ws_.path() +
                           "' ] || exit 4; "
                           "echo in > inside.txt || exit 5; "
                           "echo out > /var/tmp/sbx-launch-outside.txt 2>/dev/null && exit 6; "
                           "exit 0"),
            0);
  EXPECT_TRUE(file_exists(ws_ / "inside.txt"));
  EXPECT_FALSE(file_exists("/var/tmp/sbx-launch-outside.txt"));
}

// Every capability set of the command is empty, the bounding set included (the child drops
// each bounding capability with one PR_CAPBSET_DROP and no read first; as root here, a
// capability left in any set would show in /proc/self/status).
TEST_F(LandlockLaunchTest, TheCommandHoldsNoCapabilityInAnySet) {
  EXPECT_EQ(run_script(ws_.path(),
                       "for set in CapInh CapPrm CapEff CapBnd CapAmb; do "
                       "  v=$(sed -n \"s/^$set:[[:space:]]*//p\" /proc/self/status); "
                       "  [ -n \"$v\" ] || exit 3; "
                       "  [ \"$v\" = 0000000000000000 ] || exit 4; "
                       "done; exit 0"),
            0);
}

// A caller that ignores signals (an agent ignoring SIGPIPE, say) does not pass that on: an
// ignored disposition would survive the command's execve. The command starts with none
// ignored (SigIgn of its /proc/PID/status), SIGPIPE included, which the supervisor itself
// ignores.
TEST_F(LandlockLaunchTest, TheCommandStartsWithNoSignalIgnored) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_pipe {};
  struct sigaction old_usr1 {};
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  ASSERT_EQ(::sigaction(SIGUSR1, &ignore, &old_usr1), 0);
  const int code = run_script(ws_.path(),
                              "v=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status); "
                              "[ -n \"$v\" ] || exit 3; "
                              "[ \"$v\" = 0000000000000000 ] || exit 4; exit 0");
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ::sigaction(SIGUSR1, &old_usr1, nullptr);
  EXPECT_EQ(code, 0);
}

TEST_F(LandlockLaunchTest, SigtermSentToTheCallerEndsTheCommandWith143) {
  const std::string marker = ws_ / "started";
  const pid_t killer = signal_when(marker, ::getpid(), SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  // exec: the signal must reach the command itself, not only a shell waiting for it.
  EXPECT_EQ(run_script(ws_.path(), "touch started; exec sleep 30"), 128 + SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  ::waitpid(killer, nullptr, 0);
}

TEST_F(LandlockLaunchTest, SigintSentToTheCallerEndsTheCommandWith130) {
  const std::string marker = ws_ / "started";
  const pid_t killer = signal_when(marker, ::getpid(), SIGINT);
  EXPECT_EQ(run_script(ws_.path(), "touch started; exec sleep 30"), 128 + SIGINT);
  ::waitpid(killer, nullptr, 0);
}

TEST_F(LandlockLaunchTest, ACaughtSignalLetsTheCommandDecideItsStatus) {
  const std::string marker = ws_ / "started";
  const pid_t killer = signal_when(marker, ::getpid(), SIGUSR1);
  EXPECT_EQ(run_script(ws_.path(),
                       "trap 'exit 7' USR1; touch started; "
                       "i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; exit 1"),
            7);
  ::waitpid(killer, nullptr, 0);
}

// The background process writes its pid; once the run is over that process must be gone,
// whether it stayed in the command's session or detached into its own.
TEST_F(LandlockLaunchTest, NoDescendantOutlivesTheRun) {
  EXPECT_EQ(run_script(ws_.path(),
                       "sleep 100 & echo $! > bg.pid; "
                       "setsid sh -c 'sleep 100 & echo $! > detached.pid; wait' & "
                       "while [ ! -s detached.pid ]; do sleep 0.01; done; exit 0"),
            0);
  for (const char* name : {"bg.pid", "detached.pid"}) {
    const std::string text = read_text(ws_ / name);
    ASSERT_FALSE(text.empty()) << name;
    const pid_t pid = static_cast<pid_t>(std::stol(text));
    const std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    EXPECT_EQ(cmdline.find("sleep"), std::string::npos)
        << name << ": pid " << pid << " still runs: " << cmdline;
  }
}

// The supervisor is the command's parent, has the command's uid and holds a copy of the
// caller's memory: none of it may be reachable.
int probe_supervisor(void* /*arg*/) {
  const std::string proc = "/proc/" + std::to_string(::getppid());
  if (read_text(proc + "/comm") != "sbx-supervisor\n") return 10;
  if (::open((proc + "/mem").c_str(), O_RDONLY) >= 0) return 11;
  if (::open((proc + "/environ").c_str(), O_RDONLY) >= 0) return 12;
  if (::open((proc + "/fd/0").c_str(), O_RDONLY) >= 0) return 13;
  if (::ptrace(PTRACE_ATTACH, ::getppid(), nullptr, nullptr) == 0) return 14;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getppid(), 0));
  if (pidfd >= 0 && ::syscall(SYS_pidfd_getfd, pidfd, 0, 0) >= 0) return 15;
  return 0;
}

TEST_F(LandlockLaunchTest, TheSupervisorIsNotReadableOrTraceableByTheCommand) {
  LaunchOptions options = in_dir(ws_.path());
  options.body = probe_supervisor;
  sbx::Result<sbx::ExitStatus> status =
      sbx::stage2::run_landlock(confined(ws_.path(), {"/bin/true"}), options);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->shell_code(), 0) << "probe_supervisor's step that got through";
}

// Unix datagram sockets (linux/landlock/metadata_notify.hpp): socket() refused and named, a
// socketpair() answered with a seqpacket pair that carries messages between its ends only.
int probe_unix_datagrams(void* arg) {
  const std::string& host_path = *static_cast<const std::string*>(arg);
  for (int type : {SOCK_DGRAM, SOCK_RAW}) {
    errno = 0;
    if (::socket(AF_UNIX, type | SOCK_CLOEXEC, 0) >= 0 || errno != EPERM) return 10;
  }
  int sv[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sv) != 0) return 20;
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
    return 21;
  if ((::fcntl(sv[1], F_GETFL) & O_NONBLOCK) == 0) return 22;
  if ((::fcntl(sv[0], F_GETFD) & FD_CLOEXEC) != 0) return 23;
  // Addressed to the host socket through sendmsg's msg_name (which no filter reads): the peer
  // gets it (a seqpacket socket ignores the address).
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::snprintf(to.sun_path, sizeof to.sun_path, "%s", host_path.c_str());
  char text[] = "abc";
  iovec iov{text, 3};
  msghdr msg{};
  msg.msg_name = &to;
  msg.msg_namelen = sizeof to;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (::sendmsg(sv[0], &msg, 0) != 3) return 24;
  char buffer[8] = {};
  if (::recv(sv[1], buffer, sizeof buffer, 0) != 3 || std::string(buffer, 3) != "abc") return 25;
  if (::connect(sv[0], reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) return 26;
  // The kernel's own answers for what it would refuse anyway.
  errno = 0;
  if (::socketpair(AF_UNIX, SOCK_RDM, 0, sv) == 0 || errno != ESOCKTNOSUPPORT) return 27;
  errno = 0;
  if (::socketpair(AF_UNIX, SOCK_DGRAM, 7, sv) == 0 || errno != EPROTONOSUPPORT) return 28;
  return 0;
}

TEST_F(LandlockLaunchTest, UnixDatagramSocketsAreRefusedAndNamedAndPairsBecomeSeqpacket) {
  const std::string host_path = ws_ / "host.sock";
  const int host = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(host, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", host_path.c_str());
  ASSERT_EQ(::bind(host, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (NetworkFilter network : {NetworkFilter::kBlocked, NetworkFilter::kProxy}) {
    LandlockLaunch launch = confined(ws_.path(), {"/bin/true"});
    launch.network = network;
    if (network == NetworkFilter::kProxy) launch.landlock.connect_tcp_ports = {1};
    LaunchOptions options = in_dir(ws_.path());
    std::vector<std::string> refusals;
    options.unix_refusals = &refusals;
    options.body = probe_unix_datagrams;
    options.body_arg = const_cast<std::string*>(&host_path);
    sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(launch, options);
    ASSERT_TRUE(status.ok()) << status.error();
    EXPECT_EQ(status->shell_code(), 0) << "probe_unix_datagrams' step that failed";
    EXPECT_EQ(refusals, (std::vector<std::string>{"socket(AF_UNIX, SOCK_DGRAM)",
                                                  "socket(AF_UNIX, SOCK_RAW)"}));
  }
  // An unrestricted filesystem has no metadata guard: its unix datagram guard does the same.
  LandlockLaunch open_fs = confined(ws_.path(), {"/bin/true"});
  open_fs.landlock.restrict_filesystem = false;
  open_fs.landlock.read.clear();
  open_fs.landlock.write.clear();
  open_fs.landlock.dev.clear();
  LaunchOptions options = in_dir(ws_.path());
  std::vector<std::string> refusals;
  options.unix_refusals = &refusals;
  options.body = probe_unix_datagrams;
  options.body_arg = const_cast<std::string*>(&host_path);
  sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(open_fs, options);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->shell_code(), 0) << "probe_unix_datagrams' step that failed (unrestricted)";
  EXPECT_EQ(refusals,
            (std::vector<std::string>{"socket(AF_UNIX, SOCK_DGRAM)", "socket(AF_UNIX, SOCK_RAW)"}));
  char buffer[8];
  EXPECT_LT(::recv(host, buffer, sizeof buffer, 0), 0) << "a datagram reached the host socket";
  ::close(host);
}

// Landlock allows 16 nested domains; a 17th restrict_self fails (E2BIG). The run's own
// ruleset builds fine in the caller, so only the child's landlock_restrict_self fails: the
// command must not run, and the status is sbx's 125.
// The supervisor shares this process's memory (clone(CLONE_VM), no copy): the memory is not
// dumpable while the command runs, so the command cannot open this process's /proc files
// either, and what it was before comes back once the run is over.
TEST_F(LandlockLaunchTest, TheCallerIsUndumpableDuringTheRunAndDumpableAgainAfter) {
  ASSERT_EQ(::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
  const std::string caller = std::to_string(::getpid());
  EXPECT_EQ(run_script(ws_.path(), "cat /proc/" + caller +
                                       "/environ > /dev/null 2>&1 && exit 3; "
                                       "exit 0"),
            0)
      << "the command read the caller's environ";
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
}

// Runs from two threads at once (an agent embedding the C API) each get their own supervisor
// and status, and the caller is dumpable again once both have ended.
TEST_F(LandlockLaunchTest, ConcurrentRunsFromTwoThreads) {
  ASSERT_EQ(::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
  int first = -1;
  int second = -1;
  std::thread a([&] { first = run_script(ws_.path(), "sleep 0.2; exit 7"); });
  std::thread b([&] { second = run_script(ws_.path(), "sleep 0.1; exit 9"); });
  a.join();
  b.join();
  EXPECT_EQ(first, 7);
  EXPECT_EQ(second, 9);
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
}

// The metadata guard's emulator (sbx-stage2 --metadata-guard) is started only when the
// command first makes a call the guard reports: before that the supervisor's only child is
// the command; after a chmod in the workspace there is one more, and the chmod worked.
TEST_F(LandlockLaunchTest, TheGuardsEmulatorStartsOnlyWhenFirstNeeded) {
  EXPECT_EQ(run_script(ws_.path(),
                       ": > f; "  // not touch(1): it sets the file's times, a reported call
                       "before=$(cat /proc/$PPID/task/$PPID/children); "
                       "[ \"$before\" = \"$$ \" ] || exit 3; "
                       "chmod 600 f || exit 4; "
                       "[ \"$(stat -c %a f)\" = 600 ] || exit 5; "
                       "after=$(cat /proc/$PPID/task/$PPID/children); "
                       "set -- $after; [ $# = 2 ] || exit 6; "
                       "for p in $after; do [ $p = $$ ] && continue; "
                       "  grep -q sbx-stage2 /proc/$p/cmdline 2>/dev/null || exit 7; done; exit 0"),
            0);
}

// Every writable root reaches the emulator as the object it was when the run started (each
// moved to its own descriptor): a chmod works in each of two roots, and still fails outside.
TEST_F(LandlockLaunchTest, TheEmulatorGetsEveryWritableRoot) {
  sbx::test::TempDir second;
  ASSERT_FALSE(second.path().empty());
  LandlockLaunch launch =
      confined(ws_.path(), {"/bin/sh", "-c",
                            ": > a; : > '" + second.path() +
                                "/b'; "
                                "chmod 600 a || exit 3; "
                                "chmod 600 '" +
                                second.path() +
                                "/b' || exit 4; "
                                "chmod 600 /etc/hostname 2>/dev/null && exit 5; "
                                "exit 0"});
  launch.landlock.write.push_back(second.path());
  sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(launch, in_dir(ws_.path()));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->shell_code(), 0);
  struct stat st {};
  ASSERT_EQ(::stat((second.path() + "/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// An emulator that cannot start ends the run (status 125) rather than leaving the command
// waiting for an answer, or answering nothing: the command's chmod never returns.
TEST_F(LandlockLaunchTest, AnEmulatorThatCannotStartEndsTheRun) {
  LaunchOptions options = in_dir(ws_.path());
  options.guard_program = "/nonexistent/sbx-stage2";
  sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(
      confined(ws_.path(), {"/bin/sh", "-c", "touch f; chmod 600 f; echo ran > after.txt"}),
      options);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->shell_code(), 125);
  EXPECT_FALSE(file_exists(ws_ / "after.txt"));
}

TEST_F(LandlockLaunchTest, AFailedLandlockStepNeverRunsTheCommand) {
  const std::string marker = ws_ / "ran";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(200);
    sbx::stage2::LandlockSpec layer;
    layer.restrict_filesystem = false;
    layer.block_tcp = true;  // handles TCP bind and connect only: harmless here
    for (int i = 0; i < 16; ++i) {
      if (!sbx::stage2::apply_landlock(layer).ok()) ::_exit(201);
    }
    sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(
        confined(ws_.path(), {"/bin/sh", "-c", "touch " + marker}), in_dir(ws_.path()));
    ::_exit(status.ok() ? status->shell_code() : 202);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
  EXPECT_FALSE(file_exists(marker));
}

TEST(LandlockLaunchArgv, ParsesThePluginsPlanAndRefusesWhatLandlockModeCannotDo) {
  const std::vector<std::string> plan = {"/s2",        "--landlock",
                                         "4",          "--ll-fs",
                                         "restricted", "--ll-read",
                                         "/usr",       "--ll-write",
                                         "/w",         "--ll-scope-abstract-unix",
                                         "on",         "--net",
                                         "proxy",      "--proxy-port",
                                         "3128",       "--env-environ",
                                         "--",         "/bin/echo",
                                         "--net",      "x"};
  ASSERT_TRUE(sbx::stage2::is_landlock_argv(plan));
  sbx::Result<LandlockLaunch> parsed = sbx::stage2::parse_landlock_argv(plan);
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->landlock.min_abi, 4);
  EXPECT_EQ(parsed->network, NetworkFilter::kProxy);
  EXPECT_TRUE(parsed->landlock.block_tcp);
  EXPECT_EQ(parsed->landlock.connect_tcp_ports, std::vector<std::uint16_t>{3128});
  EXPECT_TRUE(parsed->env_environ);
  EXPECT_EQ(parsed->command, (std::vector<std::string>{"/bin/echo", "--net", "x"}));
  EXPECT_FALSE(sbx::stage2::is_landlock_argv({"/s2", "--net", "open", "--", "/x", "--landlock"}));
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"/s2", "--landlock", "4", "--net", "private", "--", "/bin/true"},
        std::vector<std::string>{"/s2", "--landlock", "4", "--net", "proxy", "--", "/bin/true"},
        std::vector<std::string>{"/s2", "--landlock", "4", "--net", "open", "--", "true"},
        std::vector<std::string>{"/s2", "--landlock", "4", "--net", "open", "--env", "A=b", "--",
                                 "/bin/true"},
        std::vector<std::string>{"/s2", "--landlock", "4", "--", "/bin/true"},
        std::vector<std::string>{"/s2", "--landlock", "9", "--net", "open", "--", "/bin/true"}})
    EXPECT_FALSE(sbx::stage2::parse_landlock_argv(bad).ok()) << bad[4];
}

// sbx-stage2 --landlock, for plans run by hand: the same launcher behind the same argv; the
// environment is its own (--env-environ).
TEST_F(LandlockLaunchTest, Stage2WrapperRunsThePlan) {
  const std::string stage2 = std::string(SBX_BUILD_TREE) + "/libexec/sbx/sbx-stage2";
  // The test depends on sbx-stage2 (extra.cmake): a missing one is a broken build.
  ASSERT_TRUE(file_exists(stage2)) << "no sbx-stage2 at " << stage2;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(ws_.path().c_str()) != 0) ::_exit(200);
    const std::string write_rule = ws_.path();
    const char* argv[] = {stage2.c_str(),
                          "--landlock",
                          "4",
                          "--ll-fs",
                          "restricted",
                          "--ll-read",
                          "/usr",
                          "--ll-read",
                          "/bin",
                          "--ll-read",
                          "/lib",
                          "--ll-read",
                          "/lib64",
                          "--ll-read",
                          "/etc",
                          "--ll-write",
                          write_rule.c_str(),
                          "--ll-dev",
                          "/dev/null",
                          "--net",
                          "blocked",
                          "--env-environ",
                          "--",
                          "/bin/sh",
                          "-c",
                          "echo \"$SBX_WRAPPED\" > wrapped.txt; cat /root/.bashrc "
                          "2>/dev/null && exit 9; exit 5",
                          nullptr};
    const char* envp[] = {"SBX_WRAPPED=through-environ", "PATH=/usr/bin:/bin", nullptr};
    ::execve(argv[0], const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    ::_exit(201);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);
  EXPECT_EQ(read_text(ws_ / "wrapped.txt"), "through-environ\n");
}

}  // namespace launch_test
