// The pieces both bwrap launchers share (launch.hpp): the child side, the signal forwarder and
// the watcher's helpers.
#include "launch.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "sbx/bwrap/direct.hpp"
#include "sbx/sdk/inherited_sockets.hpp"
#include "steps.hpp"

namespace sbx::bwrap::launch {
namespace {

namespace child = sdk::posix_child;
using sdk::kExitSandboxFailure;

// Every descriptor of the child is moved above the placed range before anything is placed:
// any of them may currently *be* one of the numbers placed.
constexpr int kAbovePlaced = kFirstPlacedFd + static_cast<int>(kPlacedCount);

// Every failure of the child's own setup: bwrap did not run.
[[noreturn]] void setup_failed(int report_fd) {
  child::fail(report_fd, child::Step::kSetup, kExitSandboxFailure);
}

// Each step, once performed, against the launch's confinement order (checked builds,
// linux/confine/steps.hpp): out of order, bwrap does not run.
void step_done(confine::ConfinementSteps& steps, confine::Step step, int report) {
  if (!steps.done(step)) setup_failed(report);
}

// The descriptors bwrap inherits: every other one close-on-exec (bwrap passes inherited fds on
// into the sandbox); the bind sources (>= kFirstBindFd, never moved) kept as they are, bwrap
// uses each for its mount and closes it before running what follows; the placed ones at their
// numbers (the stage-2 launch's are passed on to stage 2, which closes kEnvFd, kReadyFd and
// kMountsFd once used; the direct launch's are bwrap's own but kWaiterStatusFd, which goes on to
// the waiter; kTraceFd goes on to stage 2 or the waiter; both make what they get close-on-exec);
// the run's stdio at 0-2. Every source is moved above the placed range first: any of them may
// currently *be* one of the numbers placed. Returns the report pipe's new number.
int arrange_descriptors(const ChildArgs& a, int& channel, int& ruleset, int& trace) {
  if (!child::close_on_exec_all_but(a.bind_fds, a.bind_fd_count)) setup_failed(a.report_fd);
  const int report = child::move_above(a.report_fd, kAbovePlaced);
  if (report < 0) setup_failed(a.report_fd);
  channel = child::move_above(a.supervisor_channel, kAbovePlaced);
  ruleset = child::move_above(a.scope_ruleset, kAbovePlaced);
  trace = child::move_above(a.trace_fd, kAbovePlaced);
  if (channel < 0 || (a.scope_ruleset >= 0 && ruleset < 0) || (a.trace_fd >= 0 && trace < 0))
    setup_failed(report);
  std::array<int, kPlacedCount> moved{};
  for (std::size_t i = 0; i < kPlacedCount; ++i) {
    moved[i] = child::move_above(a.placed[i], kAbovePlaced);
    if (a.placed[i] >= 0 && moved[i] < 0) setup_failed(report);
  }
  // The command's stdin, stdout and stderr, bwrap's own 0-2 (it passes them on), inheritable
  // whatever flags they carry; moved before anything is placed at 3 and up, which they may be.
  if (!child::place_standard_fds(a.stdio.data(), kAbovePlaced)) setup_failed(report);
  for (std::size_t i = 0; i < kPlacedCount; ++i) {
    if (moved[i] >= 0 && !child::place_fd(moved[i], kFirstPlacedFd + static_cast<int>(i)))
      setup_failed(report);
  }
  return report;
}

// The launcher's rows of the confinement order (linux/confine/order.hpp), in that order.
[[noreturn]] void run_child(const ChildArgs& a) {
  // Default dispositions: SIG_IGN survives execve and would reach the sandbox and the command.
  child::reset_signal_dispositions();
  // Own process group: ^C from the terminal must reach sbx (which forwards it), not bwrap.
  if (setpgid(0, 0) != 0) setup_failed(a.report_fd);
  int channel = -1;
  int ruleset = -1;
  int trace = -1;
  const int report = arrange_descriptors(a, channel, ruleset, trace);
  confine::ConfinementSteps steps(*a.order, confine::Actor::kLauncher, trace);
  step_done(steps, confine::Step::kDescriptors, report);
  if (chdir(a.cwd) != 0) child::fail(report, child::Step::kChdir, kExitSandboxFailure);
  // After the descriptor moves, which the run's limits (a low open-files limit, say) must not
  // hinder; before no_new_privs and the filter: bwrap with everything below it starts inside
  // the run's cgroup.
  if (const int error = a.prepare_child(); error != 0) {
    errno = error;
    child::fail(report, child::Step::kLimits, kExitSandboxFailure);
  }
  step_done(steps, confine::Step::kLimits, report);
  // no_new_privs: required for the filter below without CAP_SYS_ADMIN (seccomp(2)) and for the
  // Landlock scope (landlock_restrict_self(2)); install_unix_notify_filter sets it too.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) setup_failed(report);
  step_done(steps, confine::Step::kNoNewPrivs, report);
  // The unix-socket supervisor's filter (unix_supervisor.hpp) covers bwrap and all it starts;
  // its listener goes to sbx, which answers from now on (the watcher, and a supervisor thread
  // from the first connect on). Then the Landlock scope of a direct launch without the write
  // layer: bwrap and all it starts run inside both. (With it the waiter's write layer scopes
  // instead: a scope entered here would lie beneath it and turn every cross-directory rename and
  // link into EXDEV, linux/landlock/write_layer.hpp.)
  const int listener = install_unix_notify_filter(a.report_sends);
  if (listener < 0 || !send_descriptor(channel, listener)) setup_failed(report);
  close(listener);
  step_done(steps, confine::Step::kNotifyFilter, report);
  if (ruleset >= 0) {
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) setup_failed(report);
    step_done(steps, confine::Step::kLandlockScope, report);
  }
  child::unblock_all_signals();
  step_done(steps, confine::Step::kExec, report);
  child::exec_or_fail(report, a.argv, a.envp);
}

// vfork + the child side, kept apart so that no local of the caller lives across vfork (the
// child shares this stack frame's memory until execve). Every signal must be blocked.
[[gnu::noinline]] pid_t vfork_child(const ChildArgs& args, int& vfork_errno) {
  const pid_t pid = vfork();
  if (pid == 0) run_child(args);
  vfork_errno = errno;
  return pid;
}

// Every signal blocked across vfork: a handler of sbx (or of an embedding process) must never
// run in the child, which shares this memory; the child unblocks after resetting them.
pid_t vfork_with_signals_blocked(const ChildArgs& args, int& fork_errno) {
  sigset_t all;
  sigset_t watching;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &watching);
  const pid_t pid = vfork_child(args, fork_errno);
  pthread_sigmask(SIG_SETMASK, &watching, nullptr);
  return pid;
}

// bwrap runs under the supervisor's filter: without a supervisor its first bind would wait
// forever, and nothing may run unsupervised. So it is killed and the run fails.
Error abandon_bwrap(pid_t pid, const std::string& why) {
  kill(pid, SIGKILL);
  ExitStatus ignored;
  child::reap(pid, ignored);
  return Error{"bwrap: " + why};
}

// The unix-socket supervisor for the bwrap just started: its listener was sent over `channel`
// before execve.
Result<std::unique_ptr<UnixSupervisor>> attach_supervisor(int channel, UnixSocketRules rules) {
  const int listener = receive_descriptor(channel);
  if (listener < 0)
    return Error{"the child sent no seccomp listener for the unix-socket supervisor"};
  return UnixSupervisor::attach(listener, std::move(rules));
}

}  // namespace

int pidfd_open_raw(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

SignalForwarder::~SignalForwarder() {
  if (pidfd_ >= 0) close(pidfd_);
}

void SignalForwarder::aim_at_init(pid_t init) {
  aim_ = Aim::kInit;
  pid_ = init;
  pidfd_ = pidfd_open_raw(init);  // kill() fallback below: Linux < 5.3
}

void SignalForwarder::aim_at_waiter_of(pid_t init) {
  aim_ = Aim::kWaiterOf;
  pid_ = init;
}

void SignalForwarder::receive(int sig) {
  sigaddset(&held_, sig);
  deliver_held();
}

bool SignalForwarder::holding() const {
  return !stopped_ && aim_ != Aim::kNone && pid_ > 0 && !sigisemptyset(&held_);
}

void SignalForwarder::deliver_held() {
  if (!holding()) return;
  if (!ready_) ready_ = target_ready();
  if (!ready_) return;
  for (int sig : kForwardedSignals) {
    if (!sigismember(&held_, sig)) continue;
    if (pidfd_ >= 0) {
      syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0);
    } else {
      kill(pid_, sig);  // kInit only: a kWaiterOf target is ready only with its pidfd
    }
  }
  sigemptyset(&held_);
}

namespace {

// True once process `pid` catches every forwarded signal: from then on a signal is queued for
// sbx-stage2's sigwaitinfo (they are blocked too) instead of being dropped (a PID 1) or killing
// it (the waiter, or whatever ran before it as that pid). (SigCgt: stage 2 installs handlers it
// never runs, precisely to make this visible; SigBlk does not work, as sigwaitinfo shows the
// awaited signals unblocked while it sleeps.)
bool catches_forwarded(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    unsigned long long mask = 0;
    const char* begin = line.c_str() + line.find_first_not_of(" \t", 7);
    const auto parsed = std::from_chars(begin, line.c_str() + line.size(), mask, 16);
    if (parsed.ec != std::errc()) return false;
    for (int sig : kForwardedSignals) {
      if ((mask & (1ULL << (sig - 1))) == 0) return false;
    }
    return true;
  }
  return false;  // gone, or /proc unreadable: keep holding until bwrap ends
}

}  // namespace

bool SignalForwarder::target_ready() {
  if (aim_ == Aim::kInit) return catches_forwarded(pid_);
  if (pidfd_ < 0) {
    const std::optional<pid_t> waiter = find_sandbox_waiter(pid_, pidfd_);
    if (!waiter) return false;
    waiter_ = *waiter;
  }
  // Read by pid, then the pinned process seen unreaped: the pid was its own all along (a pidfd
  // keeps no pid from reuse once the process is reaped). A process that exited shows no SigCgt.
  return catches_forwarded(waiter_) && syscall(SYS_pidfd_send_signal, pidfd_, 0, nullptr, 0) == 0;
}

void drain_signals(int signal_fd, SignalForwarder* forwarder) {
  signalfd_siginfo si{};
  while (read(signal_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    if (forwarder != nullptr && si.ssi_signo != SIGCHLD)
      forwarder->receive(static_cast<int>(si.ssi_signo));
  }
}

bool read_info(int fd, std::string& info) {
  char buffer[512];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    info.append(buffer, static_cast<std::size_t>(n));
    return true;
  }
}

Result<bool> child_ended(pid_t pid) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return false;
    std::string text = std::string("waitid failed: ") + std::strerror(errno);
    if (errno == ECHILD) text += " (is SIGCHLD ignored in this process?)";
    return Error{text};
  }
  return info.si_pid == pid;
}

int watch_timeout(const SignalForwarder& forwarder, int exit_fd) {
  int timeout = forwarder.holding() ? kReadyPollMs : -1;
  if (exit_fd < 0 && (timeout < 0 || timeout > kNoPidfdPollMs)) timeout = kNoPidfdPollMs;
  return timeout;
}

int sealed_memfd(const char* name, const std::string& block) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd < 0) return -1;
  std::size_t written = 0;
  while (written < block.size()) {
    const ssize_t n = write(fd, block.data() + written, block.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      errno = error;
      return -1;
    }
    written += static_cast<std::size_t>(n);
  }
  // Sealed: nothing that later holds the descriptor can change what bwrap or stage 2 reads.
  fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  if (lseek(fd, 0, SEEK_SET) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

Status check_inherited_descriptors(const std::array<int, 3>& stdio) {
  // sbx/sdk/inherited_sockets.hpp says which sockets may go into the sandbox, and why.
  if (std::optional<std::string> why = inherited::check_descriptors("bwrap", stdio.data()))
    return Error{*why};
  return {};
}

void print_message(int err_fd, const std::string& message) {
  if (err_fd < 0) return;
  if (err_fd == 2) std::fflush(stderr);
  (void)child::write_all(err_fd, message);
}

void end_sandbox(pid_t bwrap, int init_pidfd) {
  if (init_pidfd >= 0 && syscall(SYS_pidfd_send_signal, init_pidfd, SIGKILL, nullptr, 0) == 0)
    return;
  kill(bwrap, SIGKILL);  // not reaped yet: the pid is still bwrap's
}

ExitStatus ended_by_cancel() {
  ExitStatus status;
  status.signal = SIGKILL;
  return status;
}

std::optional<unsigned char> read_one_byte(int fd) {
  unsigned char byte = 0;
  ssize_t n = 0;
  do {
    n = read(fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return std::nullopt;
  return byte;
}

ExitStatus with_command_signal(const ExitStatus& bwrap, int signal_read) {
  if (bwrap.signal != 0 || signal_read < 0) return bwrap;
  const std::optional<unsigned char> signal = read_one_byte(signal_read);
  if (!signal || *signal == 0 || bwrap.exit_code != 128 + *signal) return bwrap;
  return ExitStatus{0, *signal};
}

Error report_failure(const ExecPlan& plan, const child::Failure& failure) {
  const std::string reason = std::strerror(failure.error);
  switch (failure.step) {
    case child::Step::kSetup:
      return Error{"bwrap: cannot prepare the process for bwrap: " + reason,
                   ErrorKind::host_failure};
    case child::Step::kLimits:
      return Error{"cannot put the sandbox under the run's resource limits: " + reason,
                   ErrorKind::host_failure};
    case child::Step::kChdir:
      return Error{"cannot change directory to '" + plan.cwd + "': " + reason + " (check --cwd)",
                   ErrorKind::invalid_input};
    default:
      return Error{"bwrap: cannot run " + plan.argv[0] + ": " + reason, ErrorKind::backend_failure};
  }
}

Error report_bwrap_failure(const ExitStatus& bwrap) {
  const std::string how = bwrap.signal != 0 ? "killed by signal " + std::to_string(bwrap.signal)
                                            : "exit " + std::to_string(bwrap.exit_code);
  return Error{"bwrap failed before the command started (" + how + "; its message is above)",
               ErrorKind::backend_failure};
}

LaunchBase::~LaunchBase() {
  close_child_ends();
  if (channel_parent >= 0) close(channel_parent);
}

void LaunchBase::close_child_ends() {
  if (channel_child >= 0) close(channel_child);
  channel_child = -1;
  for (int fd : bind_fds) close(fd);
  bind_fds.clear();
}

Status open_supervisor_channel(LaunchBase& launch) {
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
    return Error{std::string("bwrap: cannot create a socket pair: ") + std::strerror(errno)};
  launch.channel_parent = channel[0];
  launch.channel_child = channel[1];
  return {};
}

Result<StartedBwrap> start_bwrap(const ExecPlan& plan, const ChildProgram& program,
                                 LaunchBase& launch, const Pipes& pipes, const RunContext& run,
                                 const std::function<void()>& close_after_fork) {
  const ChildArgs args{program.argv,
                       program.envp,
                       plan.cwd.c_str(),
                       pipes.report[1],
                       program.placed,
                       launch.bind_fds.data(),
                       launch.bind_fds.size(),
                       run.child_hook(),
                       launch.channel_child,
                       program.scope_ruleset,
                       launch.unix_rules.private_network,
                       &launch.order,
                       launch.trace_fd,
                       run.stdio_fds()};
  int fork_errno = 0;  // meaningful only when pid < 0
  StartedBwrap bwrap;
  bwrap.pid = vfork_with_signals_blocked(args, fork_errno);
  // Only bwrap may hold these: in sbx they are closed now (bind sources included).
  launch.close_child_ends();
  close_after_fork();
  close(pipes.report[1]);
  close(pipes.info[1]);
  if (bwrap.pid < 0) {
    close(pipes.info[0]);
    return Error{std::string("bwrap: vfork failed: ") + std::strerror(fork_errno)};
  }
  if (child::Failure failure{}; child::read_failure(pipes.report[0], failure)) {
    bwrap.failure = failure;
  } else {
    Result<std::unique_ptr<UnixSupervisor>> attached =
        attach_supervisor(launch.channel_parent, std::move(launch.unix_rules));
    if (!attached.ok()) {
      close(pipes.info[0]);
      return abandon_bwrap(bwrap.pid, attached.error());
    }
    bwrap.supervisor = std::move(*attached);
  }
  // bwrap runs and its notifications are answered: the host's work alongside the run starts
  // now, while bwrap sets the sandbox up (not before the vfork, whose child would copy the
  // descriptors that work holds).
  run.run_started();
  return bwrap;
}

Result<ExitStatus> end_bwrap(StartedBwrap& bwrap, const Status& watched,
                             std::vector<UnixRefusal>* refusals) {
  if (bwrap.supervisor) {
    bwrap.supervisor->stop();
    if (refusals != nullptr) *refusals = bwrap.supervisor->refusals();
  }
  if (!watched.ok()) {
    kill(bwrap.pid, SIGKILL);
    ExitStatus ignored;
    child::reap(bwrap.pid, ignored);
    return watched.failure().prefixed("bwrap: ");
  }
  ExitStatus status;
  if (!child::reap(bwrap.pid, status))
    return Error{std::string("bwrap: waitpid failed: ") + std::strerror(errno)};
  return status;
}

}  // namespace sbx::bwrap::launch
