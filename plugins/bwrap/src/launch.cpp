// The pieces both bwrap launchers share (launch.hpp): the child side, the signal forwarder and
// the watcher's helpers.
#include "launch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
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

[[noreturn]] void run_child(const ChildArgs& a) {
  // Default dispositions: SIG_IGN survives execve and would reach the sandbox and the command.
  child::reset_signal_dispositions();
  // Own process group: ^C from the terminal must reach sbx (which forwards it), not bwrap.
  if (setpgid(0, 0) != 0) setup_failed(a.report_fd);
  // Stray descriptors must not reach bwrap: it passes inherited fds on into the sandbox. The
  // bind sources (>= kFirstBindFd, never moved) are the only ones kept as they are: bwrap uses
  // each for its mount and closes it before running what follows.
  if (!child::close_on_exec_all_but(a.bind_fds, a.bind_fd_count)) setup_failed(a.report_fd);
  const int report = child::move_above(a.report_fd, kAbovePlaced);
  if (report < 0) setup_failed(a.report_fd);
  const int channel = child::move_above(a.supervisor_channel, kAbovePlaced);
  const int ruleset = child::move_above(a.scope_ruleset, kAbovePlaced);
  if (channel < 0 || (a.scope_ruleset >= 0 && ruleset < 0)) setup_failed(report);
  std::array<int, kPlacedCount> moved{};
  for (std::size_t i = 0; i < kPlacedCount; ++i) {
    moved[i] = child::move_above(a.placed[i], kAbovePlaced);
    if (a.placed[i] >= 0 && moved[i] < 0) setup_failed(report);
  }
  // The command's stdin, stdout and stderr, bwrap's own 0-2 (it passes them on), inheritable
  // whatever flags they carry; moved before anything is placed at 3 and up, which they may be.
  if (!child::place_standard_fds(a.stdio.data(), kAbovePlaced)) setup_failed(report);
  // The fds bwrap inherits (the stage-2 launch's are passed on to stage 2, which closes kEnvFd,
  // kReadyFd and kMountsFd once used; the direct launch's are bwrap's own).
  for (std::size_t i = 0; i < kPlacedCount; ++i) {
    if (moved[i] >= 0 && !child::place_fd(moved[i], kFirstPlacedFd + static_cast<int>(i)))
      setup_failed(report);
  }
  if (chdir(a.cwd) != 0) child::fail(report, child::Step::kChdir, kExitSandboxFailure);
  // Last before execve: the run's limits (a low open-files limit, say) must not hinder the
  // descriptor moves above, and bwrap with everything below it starts inside the run's cgroup.
  if (const int error = a.prepare_child(); error != 0) {
    errno = error;
    child::fail(report, child::Step::kLimits, kExitSandboxFailure);
  }
  // Very last: the unix-socket supervisor's filter (unix_supervisor.hpp; it sets no_new_privs)
  // covers bwrap and all it starts; its listener goes to sbx, which answers from now on (the
  // watcher, and a supervisor thread from the first connect on). Then the Landlock scope of the
  // direct launch, which needs no_new_privs: bwrap and all it starts run inside both.
  const int listener = install_unix_notify_filter(a.report_sends);
  if (listener < 0 || !send_descriptor(channel, listener)) setup_failed(report);
  close(listener);
  if (ruleset >= 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) setup_failed(report);
  child::unblock_all_signals();
  child::exec_or_fail(report, a.argv, a.envp);
}

}  // namespace

[[gnu::noinline]] pid_t vfork_child(const ChildArgs& args, int& vfork_errno) {
  const pid_t pid = vfork();
  if (pid == 0) run_child(args);
  vfork_errno = errno;
  return pid;
}

int pidfd_open_raw(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

SignalForwarder::~SignalForwarder() {
  if (pidfd_ >= 0) close(pidfd_);
}

void SignalForwarder::aim_at_init(pid_t init) {
  aim_ = Aim::kInit;
  pid_ = init;
  pidfd_ = pidfd_open_raw(init);  // kill() fallback below: Linux < 5.3
}

void SignalForwarder::aim_at_command_of(pid_t init) {
  aim_ = Aim::kCommandOf;
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
      kill(pid_, sig);  // kInit only: a kCommandOf target is ready only with its pidfd
    }
  }
  sigemptyset(&held_);
}

bool SignalForwarder::target_ready() {
  if (aim_ == Aim::kInit) return init_catches_forwarded();
  return pidfd_ >= 0 || find_sandbox_command(pid_, pidfd_).has_value();
}

// True once sbx-stage2 (as PID 1) catches every forwarded signal: from then on a signal is
// queued for its sigwaitinfo (they are blocked too) instead of being dropped by the kernel.
// (SigCgt: stage 2 installs handlers it never runs, precisely to make this visible; SigBlk
// does not work, as sigwaitinfo shows the awaited signals unblocked while it sleeps.)
bool SignalForwarder::init_catches_forwarded() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
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
  const char* data = message.data();
  std::size_t left = message.size();
  while (left > 0) {
    const ssize_t n = write(err_fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
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

ExitStatus report_failure(const ExecPlan& plan, const child::Failure& failure, int err_fd) {
  const std::string reason = std::strerror(failure.error);
  ExitStatus status;
  std::string message;
  if (failure.step == child::Step::kSetup) {
    status.exit_code = kExitSandboxFailure;
    message = "sbx: bwrap: cannot prepare the process for bwrap: " + reason;
  } else if (failure.step == child::Step::kLimits) {
    status.exit_code = kExitSandboxFailure;
    message = "sbx: cannot put the sandbox under the run's resource limits: " + reason;
  } else if (failure.step == child::Step::kChdir) {
    status.exit_code = kExitSandboxFailure;
    message = "sbx: cannot change directory to '" + plan.cwd + "': " + reason + " (check --cwd)";
  } else {
    status.exit_code = sdk::exit_code_for_exec_error(failure.error);
    message = "sbx: bwrap: cannot run " + plan.argv[0] + ": " + reason;
  }
  message += '\n';
  print_message(err_fd, message);
  return status;
}

ExitStatus report_bwrap_failure(const ExitStatus& bwrap, int err_fd) {
  const std::string how = bwrap.signal != 0 ? "killed by signal " + std::to_string(bwrap.signal)
                                            : "exit " + std::to_string(bwrap.exit_code);
  const std::string message =
      "sbx: bwrap failed before the command started (" + how + "; its message is above)\n";
  print_message(err_fd, message);
  ExitStatus status;
  status.exit_code = kExitSandboxFailure;
  return status;
}

Error abandon_bwrap(pid_t pid, const std::string& why) {
  kill(pid, SIGKILL);
  ExitStatus ignored;
  child::reap(pid, ignored);
  return Error{"bwrap: " + why};
}

Result<std::unique_ptr<UnixSupervisor>> attach_supervisor(int channel, UnixSocketRules rules) {
  const int listener = receive_descriptor(channel);
  if (listener < 0)
    return Error{"the child sent no seccomp listener for the unix-socket supervisor"};
  return UnixSupervisor::attach(listener, std::move(rules));
}

}  // namespace sbx::bwrap::launch
