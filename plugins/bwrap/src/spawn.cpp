// The bwrap backend's spawner (see spawn.hpp for the contract). What follows describes the
// stage-2 launch; the direct launch (direct.hpp, run_direct below) sends signals to the command
// itself, found once bwrap's pause point has passed.
//
// Why not core's spawner: it forwards a signal to its direct child, which here is bwrap. bwrap
// 0.8 has no handler for SIGTERM & co., dies of it, and --die-with-parent then SIGKILLs the
// sandbox: the command never sees the signal (sbx promises that it does). So bwrap is started with
// --info-fd, and signals go to the pid bwrap reports: sbx-stage2, PID 1 of the sandbox's pid
// namespace, which blocks the forwarded signals, takes them with sigwaitinfo and passes them
// on to the command (core/stage2/stage2_main.cpp, run_as_init).
//
// Terminal-generated signals (^C, ^\, SIGWINCH): bwrap runs the sandbox with --new-session, so
// the command is never in the terminal's foreground process group and the kernel does not
// deliver those signals to it. They must be forwarded like any other (unlike core's spawner,
// which skips si_code > 0 because its command does get them from the terminal). bwrap itself,
// though, would get ^C from the terminal and die of it; so bwrap is put in a process group of
// its own (setpgid in the child) and only sbx, in the foreground group, receives ^C. Every
// signal then reaches the command exactly once, whatever its source. (bwrap does no terminal
// I/O, and the sandbox has no controlling terminal after setsid, so the background group costs
// nothing; with `stty tostop`, a bwrap error message on the terminal would stop bwrap.)
//
// PID 1 of a pid namespace only receives signals from an ancestor namespace that it blocks or
// has a handler for; one with default disposition is dropped. Before sbx-stage2 has set up its
// signals (bwrap still setting up, stage2 installing seccomp) a forwarded signal would be lost,
// so signals are held until /proc/<pid>/status shows them caught (SigCgt: stage 2 installs
// handlers it never runs, precisely to make this visible; SigBlk does not work, as sigwaitinfo
// shows the awaited signals unblocked while it sleeps), then delivered.
// Signals that arrive before bwrap has reported the pid are held the same way.
#include "sbx/bwrap/spawn.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "sbx/bwrap/bind_fds.hpp"
#include "sbx/bwrap/direct.hpp"
#include "sbx/bwrap/seccomp_fds.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "sbx/sdk/inherited_sockets.hpp"
#include "sbx/sdk/posix_child.hpp"
#include "write_layer.hpp"

namespace sbx::bwrap {
namespace {

namespace child = sdk::posix_child;
using sdk::kExitSandboxFailure;

// The signals forwarded to the sandbox (SIGCONT is left out: sbx stopping does not stop the
// sandbox, which is in its own session, so there is nothing to continue).
constexpr std::array<int, 7> kForwardedSignals = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                                  SIGUSR1, SIGUSR2, SIGWINCH};

// How long to poll /proc while a signal is held for a PID 1 that has not blocked it yet.
constexpr int kReadyPollMs = 5;
// Without a pidfd for bwrap (Linux < 5.3): how often to look whether bwrap has ended, in case
// another thread of this process took its SIGCHLD.
constexpr int kNoPidfdPollMs = 100;

// ---------------------------------------------------------------------------------------------
// The child side: only the async-signal-safe pieces of the POSIX child toolkit
// (sbx/sdk/posix_child.hpp), writing nothing but its own stack: it is started with vfork and
// shares sbx's memory until execve (why vfork, and why that is safe: see
// core/src/run/spawn.cpp; here too every signal is blocked until the dispositions are reset).

struct ChildArgs {
  char* const* argv;
  char* const* envp;
  const char* cwd;
  int report_fd;  // CLOEXEC; EOF at a successful execve
  int info_fd;    // write end of the info pipe, becomes kInfoFd
  int env_fd;     // the environment block (CLOEXEC), becomes kEnvFd; -1 if there is none
  int ready_fd;   // write end of the ready pipe (CLOEXEC), becomes kReadyFd
  int mounts_fd;  // the planned-mounts block (CLOEXEC), becomes kMountsFd; -1 if none
  const int* bind_fds;  // bind sources (CLOEXEC, >= kFirstBindFd): made inheritable as they are
  std::size_t bind_fd_count;
  HostServices::ChildHook prepare_child;  // the run's cgroup and rlimits (core, async-signal-safe)
  int supervisor_channel;  // CLOEXEC unix socket: the seccomp listener goes to sbx over it
  bool report_sends;       // private network namespace: the filter notifies sendto with an address
};

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
  // each for its mount and closes it before running stage 2.
  if (!child::close_on_exec_all_but(a.bind_fds, a.bind_fd_count)) setup_failed(a.report_fd);
  // Move every descriptor above kMountsFd first: any of them may currently *be* one of the
  // numbers placed below.
  const int report = child::move_above(a.report_fd, kMountsFd + 1);
  if (report < 0) setup_failed(a.report_fd);
  const int info = child::move_above(a.info_fd, kMountsFd + 1);
  const int env = child::move_above(a.env_fd, kMountsFd + 1);
  const int ready = child::move_above(a.ready_fd, kMountsFd + 1);
  const int mounts = child::move_above(a.mounts_fd, kMountsFd + 1);
  const int channel = child::move_above(a.supervisor_channel, kMountsFd + 1);
  if (info < 0 || ready < 0 || channel < 0 || (a.env_fd >= 0 && env < 0) ||
      (a.mounts_fd >= 0 && mounts < 0))
    setup_failed(report);
  // The fds bwrap inherits (and passes on to stage 2, which closes kEnvFd, kReadyFd and
  // kMountsFd once used).
  if (!child::place_fd(info, kInfoFd)) setup_failed(report);
  if (env >= 0 && !child::place_fd(env, kEnvFd)) setup_failed(report);
  if (!child::place_fd(ready, kReadyFd)) setup_failed(report);
  if (mounts >= 0 && !child::place_fd(mounts, kMountsFd)) setup_failed(report);
  if (chdir(a.cwd) != 0) child::fail(report, child::Step::kChdir, kExitSandboxFailure);
  // Last before execve: the run's limits (a low open-files limit, say) must not hinder the
  // descriptor moves above, and bwrap with everything below it starts inside the run's cgroup.
  if (const int error = a.prepare_child(); error != 0) {
    errno = error;
    child::fail(report, child::Step::kLimits, kExitSandboxFailure);
  }
  // Very last: the unix-socket supervisor's filter (unix_supervisor.hpp) covers bwrap and all it
  // starts; its listener goes to sbx, which answers from now on (its waiting loop below, and a
  // supervisor thread from the first connect on).
  const int listener = install_unix_notify_filter(a.report_sends);
  if (listener < 0 || !send_descriptor(channel, listener)) setup_failed(report);
  close(listener);
  child::unblock_all_signals();
  child::exec_or_fail(report, a.argv, a.envp);
}

// The direct launch's child (direct.hpp): the same steps, other descriptors, the Landlock scope
// entered last, and bwrap exec'd with an empty environment.
struct DirectChildArgs {
  char* const* argv;
  char* const* envp;  // empty: bwrap gets the command's environment through --args
  const char* cwd;
  int report_fd;
  // Placed at kStatusFd, kArgsFd, kSeccompTableFd, kSeccompRulesFd, kPauseFd (all CLOEXEC).
  std::array<int, 5> placed;
  const int* bind_fds;
  std::size_t bind_fd_count;
  HostServices::ChildHook prepare_child;
  int supervisor_channel;
  int scope_ruleset;  // CLOEXEC; -1 below Landlock ABI 6
  bool report_sends;  // private network namespace: the filter notifies sendto with an address
};

[[noreturn]] void run_direct_child(const DirectChildArgs& a) {
  child::reset_signal_dispositions();
  if (setpgid(0, 0) != 0) setup_failed(a.report_fd);
  if (!child::close_on_exec_all_but(a.bind_fds, a.bind_fd_count)) setup_failed(a.report_fd);
  const int report = child::move_above(a.report_fd, kPauseFd + 1);
  if (report < 0) setup_failed(a.report_fd);
  const int channel = child::move_above(a.supervisor_channel, kPauseFd + 1);
  const int ruleset = child::move_above(a.scope_ruleset, kPauseFd + 1);
  if (channel < 0 || (a.scope_ruleset >= 0 && ruleset < 0)) setup_failed(report);
  std::array<int, 5> moved{};
  for (std::size_t i = 0; i < moved.size(); ++i) {
    moved[i] = child::move_above(a.placed[i], kPauseFd + 1);
    if (moved[i] < 0) setup_failed(report);
  }
  for (std::size_t i = 0; i < moved.size(); ++i) {
    if (!child::place_fd(moved[i], kStatusFd + static_cast<int>(i))) setup_failed(report);
  }
  if (chdir(a.cwd) != 0) child::fail(report, child::Step::kChdir, kExitSandboxFailure);
  if (const int error = a.prepare_child(); error != 0) {
    errno = error;
    child::fail(report, child::Step::kLimits, kExitSandboxFailure);
  }
  // The unix-socket supervisor's filter (it sets no_new_privs), then the Landlock scope, which
  // needs no_new_privs: bwrap and all it starts run inside both.
  const int listener = install_unix_notify_filter(a.report_sends);
  if (listener < 0 || !send_descriptor(channel, listener)) setup_failed(report);
  close(listener);
  if (ruleset >= 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) setup_failed(report);
  child::unblock_all_signals();
  child::exec_or_fail(report, a.argv, a.envp);
}

// ---------------------------------------------------------------------------------------------
// The parent side.

int pidfd_open_raw(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Delivers signals to the sandbox's PID 1, holding them until it can receive them.
class Forwarder {
 public:
  Forwarder() { sigemptyset(&held_); }
  ~Forwarder() {
    if (pidfd_ >= 0) close(pidfd_);
  }
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  void set_target(pid_t pid) {
    target_ = pid;
    // A pidfd pins the process: once stage 2 has exited and bwrap reaped it, its pid may be
    // reused, and a late signal must not hit an unrelated process. (kill() fallback: < 5.3.)
    pidfd_ = pidfd_open_raw(pid);
  }
  // Called once bwrap has ended: nothing may be sent to the pid any more.
  void stop() { target_ = 0; }
  void receive(int sig) {
    sigaddset(&held_, sig);
    deliver_held();
  }
  bool holding() const { return target_ > 0 && !sigisemptyset(&held_); }

  void deliver_held() {
    if (target_ <= 0 || sigisemptyset(&held_)) return;
    if (!ready_) ready_ = target_catches_forwarded();
    if (!ready_) return;
    for (int sig : kForwardedSignals) {
      if (sigismember(&held_, sig)) send(sig);
    }
    sigemptyset(&held_);
  }

 private:
  void send(int sig) const {
    if (pidfd_ >= 0) {
      syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0);
    } else {
      kill(target_, sig);
    }
  }
  // True once sbx-stage2 (as PID 1) catches every forwarded signal: from then on a signal is
  // queued for its sigwaitinfo (they are blocked too) instead of being dropped by the kernel.
  bool target_catches_forwarded() const {
    std::ifstream status("/proc/" + std::to_string(target_) + "/status");
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

  pid_t target_ = 0;
  int pidfd_ = -1;
  bool ready_ = false;
  sigset_t held_;
};

// Reads what is available on bwrap's info pipe; returns false at EOF or error.
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

// True once the child has ended (left unreaped, so its pid cannot be reused meanwhile).
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

struct Channels {
  int signal_fd;
  int info_fd;  // -1 once bwrap has closed it
  // Served by this loop until it hands the listener to a thread (UnixSupervisor::attach).
  UnixSupervisor* unix_supervisor;
};

// Reads every signal queued on the signalfd and hands the forwarded ones to the forwarder
// (none when it is null: then they are only consumed).
void drain_signals(int signal_fd, Forwarder* forwarder) {
  signalfd_siginfo si{};
  while (read(signal_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    if (forwarder != nullptr && si.ssi_signo != SIGCHLD)
      forwarder->receive(static_cast<int>(si.ssi_signo));
  }
}

// The parent's loop: learns the PID 1 from bwrap, forwards signals, returns when bwrap ended.
// bwrap's end is watched through a pidfd as well as SIGCHLD: in a process with other threads
// (an agent embedding libsbx) a thread that does not block SIGCHLD may take it, and the
// signalfd alone would then wait forever. Without pidfds (Linux < 5.3) a 100 ms poll bounds it.
Status supervise(pid_t bwrap, Channels channels) {
  Forwarder forwarder;
  std::string info;
  const int exit_fd = pidfd_open_raw(bwrap);
  for (;;) {
    Result<bool> ended = child_ended(bwrap);
    if (!ended.ok()) {
      if (exit_fd >= 0) close(exit_fd);
      return ended.failure();
    }
    if (*ended) {
      forwarder.stop();
      break;
    }
    // A negative descriptor is skipped by poll: info once closed, the listener once handed on.
    const int unix_fd = channels.unix_supervisor ? channels.unix_supervisor->poll_fd() : -1;
    std::array<pollfd, 4> fds{{{channels.signal_fd, POLLIN, 0},
                               {exit_fd, POLLIN, 0},
                               {channels.info_fd, POLLIN, 0},
                               {unix_fd, POLLIN, 0}}};
    int timeout = forwarder.holding() ? kReadyPollMs : -1;
    if (exit_fd < 0 && (timeout < 0 || timeout > kNoPidfdPollMs)) timeout = kNoPidfdPollMs;
    if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
      const int error = errno;
      if (exit_fd >= 0) close(exit_fd);
      return Error{std::string("poll failed: ") + std::strerror(error)};
    }
    if (channels.info_fd >= 0 && fds[2].revents != 0 && !read_info(channels.info_fd, info)) {
      close(channels.info_fd);
      channels.info_fd = -1;
      // bwrap writes the JSON in one go right after clone and then closes the pipe.
      if (std::optional<pid_t> pid = parse_child_pid(info)) forwarder.set_target(*pid);
    }
    if (fds[3].revents != 0) channels.unix_supervisor->serve();
    if (fds[0].revents != 0) drain_signals(channels.signal_fd, &forwarder);
    forwarder.deliver_held();
  }
  if (exit_fd >= 0) close(exit_fd);
  if (channels.info_fd >= 0) close(channels.info_fd);
  return {};
}

ExitStatus report_failure(const ExecPlan& plan, const child::Failure& failure) {
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
  std::fputs(message.c_str(), stderr);
  std::fflush(stderr);
  return status;
}

Status validate_plan(const ExecPlan& plan) {
  if (plan.argv.empty() || plan.argv[0].empty() || plan.argv[0].front() != '/')
    return Error{"bwrap: exec plan's argv[0] is not an absolute path"};
  if (plan.cwd.empty() || plan.cwd.front() != '/')
    return Error{"bwrap: exec plan's cwd '" + plan.cwd + "' is not an absolute path"};
  return {};
}

// Blocks the forwarded signals and SIGCHLD in this thread and opens a signalfd for them.
// Blocked first: a signal arriving before bwrap's PID 1 is known stays queued, not lost.
Result<int> open_signal_fd(sigset_t& previous) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwardedSignals) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  if (pthread_sigmask(SIG_BLOCK, &set, &previous) != 0)
    return Error{"bwrap: cannot block signals"};
  const int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return Error{std::string("bwrap: signalfd failed: ") + std::strerror(error)};
  }
  return fd;
}

// vfork + run_child, kept apart so that no local of the caller lives across vfork (the child
// shares this stack frame's memory until execve).
[[gnu::noinline]] pid_t vfork_child(const ChildArgs& args, int& vfork_errno) {
  const pid_t pid = vfork();
  if (pid == 0) run_child(args);
  vfork_errno = errno;
  return pid;
}

// A sealed memfd holding `block`, positioned at its start; -1 (errno set) on failure.
int sealed_memfd(const char* name, const std::string& block) {
  const int fd = static_cast<int>(
      syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
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
  // Sealed: nothing that later holds the descriptor can change what stage 2 reads.
  fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  if (lseek(fd, 0, SEEK_SET) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

// Everything prepared for one bwrap run beyond the plan: the final argv and the descriptors
// bwrap and stage 2 get (all close-on-exec here; closed when the run is over).
struct Launch {
  std::vector<std::string> argv;
  int env_fd = -1;
  int mounts_fd = -1;
  int ready_read = -1;
  int ready_write = -1;
  int channel_child = -1;   // the child's end: sends the seccomp listener
  int channel_parent = -1;  // sbx's end: receives it
  UnixSocketRules unix_rules;
  std::vector<int> bind_fds;

  Launch() = default;
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
  ~Launch() {
    close_after_fork();
    if (ready_read >= 0) close(ready_read);
    if (channel_parent >= 0) close(channel_parent);
  }
  // What only the child needed: closed in sbx as soon as bwrap has been started.
  void close_after_fork() {
    for (int* fd : {&env_fd, &mounts_fd, &ready_write, &channel_child}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    for (int fd : bind_fds) close(fd);
    bind_fds.clear();
  }
};

bool has_proc_mount(const std::vector<std::string>& argv) {
  const auto end = std::find(argv.begin(), argv.end(), "--");
  return std::find(argv.begin(), end, "--proc") != end;
}

// The plan as bwrap gets it: bind sources as checked descriptors (bind_fds.hpp), --info-fd,
// the environment on kEnvFd, and stage 2 told where its ready pipe and mount list are. The
// mount list needs a procfs inside (stage 2 reads /proc/self/mountinfo); with the empty-/proc
// fallback there is none, and only the descriptors guard the binds.
// The command inherits stdin, stdout and stderr and nothing else. A socket among them was made
// in the caller's network namespace: unless it is a connected stream socket it could reach the
// host (a datagram socket names a destination on every send, which the supervisor never sees;
// an unconnected one connects in the host's namespace): the run is refused instead.
Status check_inherited_descriptors() {
  // sbx/sdk/inherited_sockets.hpp says which sockets may go into the sandbox, and why.
  if (std::optional<std::string> why = inherited::check_standard_descriptors("bwrap"))
    return Error{*why};
  return {};
}

Status prepare_launch(const ExecPlan& plan, Launch& launch) {
  if (Status inherited = check_inherited_descriptors(); !inherited.ok()) return inherited;
  SupervisedArgv supervised = take_supervisor_options(plan.argv);
  launch.unix_rules = std::move(supervised.rules);
  Result<BoundArgv> bound = bind_sources_by_fd(supervised.argv);
  if (!bound.ok()) return bound.failure();
  launch.bind_fds = bound->fds;
  std::vector<std::string> stage2_options = {"--ready-fd", std::to_string(kReadyFd),
                                             kUnixSupervisedOption};
  if (has_proc_mount(bound->argv)) {
    Result<std::string> mounts = planned_mounts_block(bound->argv);
    if (!mounts.ok()) return mounts.failure();
    launch.mounts_fd = sealed_memfd("sbx-mounts", *mounts);
    if (launch.mounts_fd < 0)
      return Error{std::string("bwrap: cannot hand the mount list to sbx-stage2 (memfd): ") +
                   std::strerror(errno)};
    stage2_options.insert(stage2_options.end(), {"--mounts-fd", std::to_string(kMountsFd)});
  }
  const EnvOnFd moved = move_env_to_fd(with_info_fd(bound->argv));
  if (!moved.block.empty()) {
    launch.env_fd = sealed_memfd("sbx-env", moved.block);
    if (launch.env_fd < 0)
      return Error{std::string("bwrap: cannot hand the environment to sbx-stage2 (memfd): ") +
                   std::strerror(errno)};
  }
  launch.argv = with_stage2_options(moved.argv, stage2_options);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0)
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(errno)};
  launch.ready_read = ready[0];
  launch.ready_write = ready[1];
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
    return Error{std::string("bwrap: cannot create a socket pair: ") + std::strerror(errno)};
  launch.channel_parent = channel[0];
  launch.channel_child = channel[1];
  return {};
}

// bwrap runs under the supervisor's filter: without a supervisor its first bind would wait
// forever, and nothing may run unsupervised. So it is killed and the run fails.
Error abandon_bwrap(pid_t pid, const std::string& why) {
  kill(pid, SIGKILL);
  ExitStatus ignored;
  child::reap(pid, ignored);
  return Error{"bwrap: " + why};
}

// The supervisor for the bwrap just started: its listener was sent before execve.
Result<std::unique_ptr<UnixSupervisor>> start_supervisor(Launch& launch) {
  const int listener = receive_descriptor(launch.channel_parent);
  if (listener < 0) return Error{"the child sent no seccomp listener for the unix-socket supervisor"};
  return UnixSupervisor::attach(listener, std::move(launch.unix_rules));
}

// True if sbx-stage2 wrote its ready byte, i.e. bwrap's setup worked and stage 2 started.
// Read after bwrap ended: the byte waits in the pipe.
bool stage2_started(int ready_read) {
  fcntl(ready_read, F_SETFL, O_NONBLOCK);
  char byte = 0;
  ssize_t n = 0;
  do {
    n = read(ready_read, &byte, 1);
  } while (n < 0 && errno == EINTR);
  return n == 1;
}

// bwrap ended without starting stage 2: its own failure (it printed why), never the command's
// status. 125 like every other failure of sbx's own, so no exit status of bwrap (1 for most of
// its errors) can pass for the command's.
ExitStatus report_bwrap_failure(const ExitStatus& bwrap) {
  const std::string how = bwrap.signal != 0 ? "killed by signal " + std::to_string(bwrap.signal)
                                            : "exit " + std::to_string(bwrap.exit_code);
  const std::string message =
      "sbx: bwrap failed before the command started (" + how + "; its message is above)\n";
  std::fputs(message.c_str(), stderr);
  std::fflush(stderr);
  ExitStatus status;
  status.exit_code = kExitSandboxFailure;
  return status;
}

// ---------------------------------------------------------------------------------------------
// The direct launch (direct.hpp): sbx -> bwrap -> command.

[[gnu::noinline]] pid_t vfork_direct_child(const DirectChildArgs& args, int& vfork_errno) {
  const pid_t pid = vfork();
  if (pid == 0) run_direct_child(args);
  vfork_errno = errno;
  return pid;
}

// True when this kernel has what the direct launch relies on from outside the sandbox: pidfds
// (the sandbox's PID 1 and the command pinned) and openat2 (the command checked inside the new
// root). Older kernels keep stage 2.
bool direct_launch_supported() {
  static const bool supported = [] {
    const int fd = pidfd_open_raw(getpid());
    if (fd < 0) return false;
    close(fd);
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT;
    const int root = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how));
    if (root < 0) return false;
    close(root);
    return true;
  }();
  return supported;
}

// Signals for the command of a direct launch: held until the pause point has passed and the
// command (pid 2 inside) exists, then sent through a pidfd of it. bwrap's PID 1 never gets
// them (a namespace init with default dispositions would drop them).
class CommandForwarder {
 public:
  CommandForwarder() { sigemptyset(&held_); }
  ~CommandForwarder() {
    if (pidfd_ >= 0) close(pidfd_);
  }
  CommandForwarder(const CommandForwarder&) = delete;
  CommandForwarder& operator=(const CommandForwarder&) = delete;

  void release(pid_t init) { init_ = init; }
  void stop() { stopped_ = true; }
  void receive(int sig) {
    sigaddset(&held_, sig);
    deliver_held();
  }
  bool holding() const { return !stopped_ && init_ > 0 && !sigisemptyset(&held_); }
  void deliver_held() {
    if (stopped_ || init_ <= 0 || sigisemptyset(&held_)) return;
    if (pidfd_ < 0 && !find_sandbox_command(init_, pidfd_)) return;
    for (int sig : kForwardedSignals) {
      if (sigismember(&held_, sig)) syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0);
    }
    sigemptyset(&held_);
  }

 private:
  pid_t init_ = 0;  // the sandbox's PID 1, once the pause point has passed
  int pidfd_ = -1;  // the command
  bool stopped_ = false;
  sigset_t held_;
};

// Everything prepared for one direct run (all close-on-exec in sbx).
struct DirectLaunch {
  std::vector<std::string> argv;
  int args_fd = -1;
  SeccompFds seccomp;
  int pause_read = -1;
  int pause_write = -1;  // sbx's: bwrap waits at the pause point until it is closed
  int scope_ruleset = -1;
  int channel_child = -1;
  int channel_parent = -1;
  UnixSocketRules unix_rules;
  std::vector<int> bind_fds;
  std::vector<stage2::PlannedMount> planned;
  bool private_network = false;
  std::string command;

  DirectLaunch() = default;
  DirectLaunch(const DirectLaunch&) = delete;
  DirectLaunch& operator=(const DirectLaunch&) = delete;
  ~DirectLaunch() {
    close_after_fork();
    for (int fd : {pause_write, channel_parent}) {
      if (fd >= 0) close(fd);
    }
  }
  void close_after_fork() {
    for (int* fd : {&args_fd, &pause_read, &scope_ruleset, &channel_child}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    seccomp = SeccompFds();
    for (int fd : bind_fds) close(fd);
    bind_fds.clear();
  }
};

// The pause point's pipe, shrunk to one page and filled: it becomes writable again only once
// bwrap has started reading it, i.e. has done every mount before it.
Status open_pause_pipe(DirectLaunch& launch) {
  int pause[2];
  if (pipe2(pause, O_CLOEXEC) != 0)
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(errno)};
  launch.pause_read = pause[0];
  launch.pause_write = pause[1];
  fcntl(pause[1], F_SETPIPE_SZ, 4096);  // best effort: any fill works, a small one is cheaper
  fcntl(pause[1], F_SETFL, O_NONBLOCK);
  static const char zeros[4096] = {};
  for (;;) {
    const ssize_t n = write(pause[1], zeros, sizeof zeros);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n < 0 && errno == EAGAIN) return {};
    return Error{std::string("bwrap: cannot fill the setup pipe: ") + std::strerror(errno)};
  }
}

// The kernel's Landlock ABI (landlock_create_ruleset(2), LANDLOCK_CREATE_RULESET_VERSION), 0
// without Landlock.
long landlock_abi_or_zero() {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u << 0);
  return abi < 0 ? 0 : abi;
}

Status prepare_direct(const std::vector<std::string>& supervised_argv, DirectLaunch& launch) {
  Result<BoundArgv> bound = bind_sources_by_fd(supervised_argv);
  if (!bound.ok()) return bound.failure();
  launch.bind_fds = bound->fds;
  std::optional<DirectPlan> direct = direct_plan(bound->argv);
  if (!direct) return Error{"bwrap: internal error: the plan lost its direct form"};
  // Below the write layer's ABI the trampoline would enter nothing (write_layer.hpp): spare
  // the run its execve. The plan's notes say what stays writable then.
  if (direct->write_layer && landlock_abi_or_zero() < stage2::kWriteLayerMinAbi)
    direct->write_layer = false;
  // The mounts of the direct form (the plan's and the /proc/1 mask, kPidOneMask), checked at the
  // pause point like the plan's.
  std::vector<std::string> direct_form = {direct->bwrap};
  direct_form.insert(direct_form.end(), direct->options.begin(), direct->options.end());
  direct_form.push_back("--");
  Result<std::string> mounts = planned_mounts_block(direct_form);
  if (!mounts.ok()) return mounts.failure();
  Result<std::vector<stage2::PlannedMount>> planned = stage2::parse_planned_mounts(*mounts);
  if (!planned.ok()) return planned.failure().prefixed("bwrap: ");
  launch.planned = std::move(*planned);
  launch.private_network = direct->filter != stage2::NetworkFilter::kOpen;
  launch.command = direct->command.front();
  Result<std::string> block = direct_args_block(*direct);
  if (!block.ok()) return block.failure();
  launch.args_fd = sealed_memfd("sbx-bwrap-args", *block);
  if (launch.args_fd < 0)
    return Error{std::string("bwrap: cannot hand bwrap its arguments (memfd): ") +
                 std::strerror(errno)};
  Result<SeccompFds> seccomp = seccomp_program_fds(direct->filter);
  if (!seccomp.ok()) return seccomp.failure();
  launch.seccomp = std::move(*seccomp);
  if (Status pause = open_pause_pipe(launch); !pause.ok()) return pause;
  Result<int> scope = open_scope_ruleset();
  if (!scope.ok()) return scope.failure();
  launch.scope_ruleset = *scope;
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0)
    return Error{std::string("bwrap: cannot create a socket pair: ") + std::strerror(errno)};
  launch.channel_parent = channel[0];
  launch.channel_child = channel[1];
  launch.argv = direct_argv(*direct);
  return {};
}

struct DirectOutcome {
  std::string status_text;  // what --json-status-fd carried
  std::optional<PauseVerdict> refused;  // the pause-point check failed: the sandbox was killed
  bool released = false;  // the pause point passed: bwrap went on to start the command
};

void drain_signals_to(int signal_fd, CommandForwarder& forwarder) {
  signalfd_siginfo si{};
  while (read(signal_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    if (si.ssi_signo != SIGCHLD) forwarder.receive(static_cast<int>(si.ssi_signo));
  }
}

// The parent's loop of a direct run: learns the sandbox's PID 1, checks the sandbox at the pause
// point and lets it go on (or kills it), forwards signals, returns when bwrap has ended.
Result<DirectOutcome> supervise_direct(pid_t bwrap, int signal_fd, int status_fd,
                                       DirectLaunch& launch, UnixSupervisor* unix_supervisor) {
  DirectOutcome out;
  CommandForwarder forwarder;
  pid_t init = 0;
  int init_pidfd = -1;
  const int exit_fd = pidfd_open_raw(bwrap);
  Status failed;
  for (;;) {
    Result<bool> ended = child_ended(bwrap);
    if (!ended.ok()) {
      failed = ended.failure();
      break;
    }
    if (*ended) break;
    const bool watch_pause = init > 0 && launch.pause_write >= 0 && !out.refused;
    // Served by this loop until the supervisor hands its listener to a thread (-1 from then on).
    const int unix_fd = unix_supervisor ? unix_supervisor->poll_fd() : -1;
    std::array<pollfd, 5> fds{{{signal_fd, POLLIN, 0},
                               {exit_fd, POLLIN, 0},
                               {status_fd, POLLIN, 0},
                               {watch_pause ? launch.pause_write : -1, POLLOUT, 0},
                               {unix_fd, POLLIN, 0}}};
    int timeout = forwarder.holding() ? kReadyPollMs : -1;
    if (exit_fd < 0 && (timeout < 0 || timeout > kNoPidfdPollMs)) timeout = kNoPidfdPollMs;
    if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
      failed = Error{std::string("poll failed: ") + std::strerror(errno)};
      break;
    }
    if (status_fd >= 0 && fds[2].revents != 0 && !read_info(status_fd, out.status_text)) {
      close(status_fd);
      status_fd = -1;
    }
    if (init == 0) {
      if (std::optional<pid_t> pid = parse_json_status(out.status_text).child_pid) {
        init = *pid;
        init_pidfd = pidfd_open_raw(init);
      }
    }
    if (watch_pause && (fds[3].revents & (POLLERR | POLLHUP)) != 0) {
      // bwrap's side is gone before it read: bwrap failed, its end shows it.
      close(launch.pause_write);
      launch.pause_write = -1;
    } else if (watch_pause && (fds[3].revents & POLLOUT) != 0) {
      PauseVerdict verdict =
          init_pidfd >= 0
              ? check_paused_sandbox(init, init_pidfd, launch.planned, launch.private_network,
                                     launch.command)
              : PauseVerdict{kExitSandboxFailure, "cannot pin the sandbox's PID 1 (pidfd_open)"};
      if (verdict.exit_code != 0) {
        // Nothing of the command has run: the sandbox's PID 1 still sits in bwrap's setup.
        if (init_pidfd >= 0) syscall(SYS_pidfd_send_signal, init_pidfd, SIGKILL, nullptr, 0);
        kill(bwrap, SIGKILL);
        out.refused = std::move(verdict);
      } else {
        close(launch.pause_write);
        launch.pause_write = -1;
        out.released = true;
        forwarder.release(init);
      }
    }
    if (fds[4].revents != 0) unix_supervisor->serve();
    if (fds[0].revents != 0) drain_signals_to(signal_fd, forwarder);
    forwarder.deliver_held();
  }
  forwarder.stop();
  if (exit_fd >= 0) close(exit_fd);
  if (init_pidfd >= 0) close(init_pidfd);
  if (status_fd >= 0) {
    // bwrap has ended: what it wrote last (the exit code) is in the pipe.
    fcntl(status_fd, F_SETFL, O_NONBLOCK);
    while (read_info(status_fd, out.status_text)) {
    }
    close(status_fd);
  }
  if (!failed.ok()) return failed.failure();
  return out;
}

Result<ExitStatus> run_direct(const ExecPlan& plan, const std::vector<std::string>& supervised_argv,
                              UnixSocketRules rules, const int report[2], const int info[2],
                              int signal_fd, HostServices::ChildHook prepare_child,
                              std::vector<UnixRefusal>* refusals, HostServices host) {
  DirectLaunch launch;
  launch.unix_rules = std::move(rules);
  if (Status prepared = prepare_direct(supervised_argv, launch); !prepared.ok()) {
    close(report[1]);
    close(info[1]);
    close(info[0]);
    return prepared.failure();
  }
  std::vector<char*> argv = child::c_string_array(launch.argv);
  char* no_env[] = {nullptr};
  sigset_t all;
  sigset_t supervising;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &supervising);
  int fork_errno = 0;
  const pid_t pid = vfork_direct_child(
      {argv.data(), no_env, plan.cwd.c_str(), report[1],
       {info[1], launch.args_fd, launch.seccomp.table(), launch.seccomp.rules(),
        launch.pause_read},
       launch.bind_fds.data(), launch.bind_fds.size(), prepare_child, launch.channel_child,
       launch.scope_ruleset, launch.unix_rules.private_network},
      fork_errno);
  pthread_sigmask(SIG_SETMASK, &supervising, nullptr);
  launch.close_after_fork();
  close(report[1]);
  close(info[1]);
  if (pid < 0) {
    close(info[0]);
    return Error{std::string("bwrap: vfork failed: ") + std::strerror(fork_errno)};
  }
  child::Failure failure{};
  const bool failed = child::read_failure(report[0], failure);
  std::unique_ptr<UnixSupervisor> unix_supervisor;
  if (!failed) {
    const int listener = receive_descriptor(launch.channel_parent);
    Result<std::unique_ptr<UnixSupervisor>> started =
        listener < 0 ? Result<std::unique_ptr<UnixSupervisor>>(Error{
                           "the child sent no seccomp listener for the unix-socket supervisor"})
                     : UnixSupervisor::attach(listener, std::move(launch.unix_rules));
    if (!started.ok()) {
      close(info[0]);
      return abandon_bwrap(pid, started.error());
    }
    unix_supervisor = std::move(*started);
  }
  // bwrap runs and its notifications are answered: the host's work alongside the run starts
  // now, while bwrap sets the sandbox up (not before the vfork, whose child would copy the
  // descriptors that work holds).
  host.run_started();
  Result<DirectOutcome> outcome =
      supervise_direct(pid, signal_fd, info[0], launch, unix_supervisor.get());
  if (unix_supervisor) {
    unix_supervisor->stop();
    if (refusals != nullptr) *refusals = unix_supervisor->refusals();
  }
  if (!outcome.ok()) {
    kill(pid, SIGKILL);
    ExitStatus ignored;
    child::reap(pid, ignored);
    return outcome.failure().prefixed("bwrap: ");
  }
  ExitStatus status;
  if (!child::reap(pid, status))
    return Error{std::string("bwrap: waitpid failed: ") + std::strerror(errno)};
  if (failed) return report_failure(plan, failure);
  if (outcome->refused) {
    const std::string message =
        "sbx: bwrap: " + outcome->refused->message + "; the command did not run\n";
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    ExitStatus refused;
    refused.exit_code = outcome->refused->exit_code;
    return refused;
  }
  // bwrap writes "exit-code" only once the command has run; without it, bwrap itself failed,
  // or it was killed while the command ran (past the pause point): the run's timeout kills the
  // whole cgroup after the grace period, bwrap included, and so may the OOM killer or a
  // SIGKILL from outside. That end is the run's, reported as stage 2 reports it: 128 + N.
  if (!parse_json_status(outcome->status_text).exit_code) {
    if (outcome->released && status.signal != 0) return status;
    return report_bwrap_failure(status);
  }
  return status;
}

Result<ExitStatus> fork_and_supervise(const ExecPlan& plan, const int report[2], const int info[2],
                                      int signal_fd, HostServices::ChildHook prepare_child,
                                      std::vector<UnixRefusal>* refusals, HostServices host) {
  if (direct_launch_supported()) {
    if (Status inherited = check_inherited_descriptors(); !inherited.ok()) {
      close(report[1]);
      close(info[1]);
      close(info[0]);
      return inherited.failure();
    }
    SupervisedArgv supervised = take_supervisor_options(plan.argv);
    if (direct_plan(supervised.argv))
      return run_direct(plan, supervised.argv, std::move(supervised.rules), report, info,
                        signal_fd, prepare_child, refusals, host);
  }
  Launch launch;
  if (Status prepared = prepare_launch(plan, launch); !prepared.ok()) {
    close(report[1]);
    close(info[1]);
    close(info[0]);
    return prepared.failure();
  }
  std::vector<char*> argv = child::c_string_array(launch.argv);
  std::vector<char*> envp = child::c_string_array(plan.env);
  // Every signal blocked across vfork: a handler of sbx (or of an embedding process) must never
  // run in the child, which shares this memory; the child unblocks after resetting them.
  sigset_t all;
  sigset_t supervising;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &supervising);
  int fork_errno = 0;  // meaningful only when pid < 0
  const pid_t pid = vfork_child({argv.data(), envp.data(), plan.cwd.c_str(), report[1], info[1],
                                 launch.env_fd, launch.ready_write, launch.mounts_fd,
                                 launch.bind_fds.data(), launch.bind_fds.size(), prepare_child,
                                 launch.channel_child, launch.unix_rules.private_network},
                                fork_errno);
  pthread_sigmask(SIG_SETMASK, &supervising, nullptr);
  // Only bwrap may hold these: in sbx they are closed now (bind sources included).
  launch.close_after_fork();
  close(report[1]);
  close(info[1]);
  if (pid < 0) {
    close(info[0]);
    return Error{std::string("bwrap: vfork failed: ") + std::strerror(fork_errno)};
  }
  child::Failure failure{};
  const bool failed = child::read_failure(report[0], failure);
  std::unique_ptr<UnixSupervisor> unix_supervisor;
  if (!failed) {
    Result<std::unique_ptr<UnixSupervisor>> started = start_supervisor(launch);
    if (!started.ok()) {
      close(info[0]);
      return abandon_bwrap(pid, started.error());
    }
    unix_supervisor = std::move(*started);
  }
  host.run_started();  // as in run_direct
  Status supervised = supervise(pid, {signal_fd, info[0], unix_supervisor.get()});
  // bwrap has ended, and the whole sandbox with it (its PID 1 is gone).
  if (unix_supervisor) {
    unix_supervisor->stop();
    if (refusals != nullptr) *refusals = unix_supervisor->refusals();
  }
  if (!supervised.ok()) return supervised.failure().prefixed("bwrap: ");
  ExitStatus status;
  if (!child::reap(pid, status))
    return Error{std::string("bwrap: waitpid failed: ") + std::strerror(errno)};
  if (failed) return report_failure(plan, failure);
  if (!stage2_started(launch.ready_read)) return report_bwrap_failure(status);
  return status;
}

}  // namespace

std::vector<std::string> with_info_fd(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size() + 2);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    out.push_back(argv[i]);
    if (i == 0) {
      out.emplace_back("--info-fd");
      out.push_back(std::to_string(kInfoFd));
    }
  }
  return out;
}

std::vector<std::string> with_stage2_options(const std::vector<std::string>& argv,
                                             const std::vector<std::string>& options) {
  const auto bwrap_end = std::find(argv.begin(), argv.end(), "--");
  if (bwrap_end == argv.end() || std::next(bwrap_end) == argv.end()) return argv;
  const auto after_stage2 = std::next(bwrap_end, 2);
  std::vector<std::string> out(argv.begin(), after_stage2);
  out.insert(out.end(), options.begin(), options.end());
  out.insert(out.end(), after_stage2, argv.end());
  return out;
}

EnvOnFd move_env_to_fd(const std::vector<std::string>& argv) {
  const auto bwrap_end = std::find(argv.begin(), argv.end(), "--");
  if (bwrap_end == argv.end() || std::next(bwrap_end) == argv.end()) return {argv, {}};
  const auto stage2 = std::next(bwrap_end);  // stage 2's path
  EnvOnFd out;
  out.argv.assign(argv.begin(), std::next(stage2));
  std::vector<std::string> stage2_args;
  auto it = std::next(stage2);
  for (; it != argv.end() && *it != "--"; ++it) {
    if (*it == "--env" && std::next(it) != argv.end()) {
      ++it;
      out.block += *it;
      out.block.push_back('\0');
    } else {
      stage2_args.push_back(*it);
    }
  }
  if (out.block.empty()) return {argv, {}};
  out.argv.insert(out.argv.end(), {"--env-fd", std::to_string(kEnvFd)});
  out.argv.insert(out.argv.end(), stage2_args.begin(), stage2_args.end());
  out.argv.insert(out.argv.end(), it, argv.end());
  return out;
}

std::optional<pid_t> parse_child_pid(std::string_view info) {
  constexpr std::string_view kKey = "\"child-pid\"";
  const std::size_t key = info.find(kKey);
  if (key == std::string_view::npos) return std::nullopt;
  std::size_t i = key + kKey.size();
  while (i < info.size() && (info[i] == ' ' || info[i] == '\t' || info[i] == '\n')) ++i;
  if (i >= info.size() || info[i] != ':') return std::nullopt;
  ++i;
  while (i < info.size() && (info[i] == ' ' || info[i] == '\t' || info[i] == '\n')) ++i;
  pid_t pid = 0;
  const auto parsed = std::from_chars(info.data() + i, info.data() + info.size(), pid);
  if (parsed.ec != std::errc() || pid <= 0) return std::nullopt;
  return pid;
}

Result<ExitStatus> spawn_bwrap(const ExecPlan& plan, HostServices::ChildHook prepare_child,
                               std::vector<UnixRefusal>* refusals, HostServices host) {
  if (Status valid = validate_plan(plan); !valid.ok()) return valid.failure();
  int report[2];
  int info[2];
  // CLOEXEC on all ends: none may leak into other children spawned concurrently; the child
  // gives bwrap its copy of info[1] as kInfoFd explicitly.
  if (!child::open_report_pipe(report))
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(errno)};
  if (pipe2(info, O_CLOEXEC) != 0) {
    const int error = errno;
    close(report[0]);
    close(report[1]);
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(error)};
  }
  sigset_t previous;
  Result<int> signal_fd = open_signal_fd(previous);
  if (!signal_fd.ok()) {
    for (int fd : {report[0], report[1], info[0], info[1]}) close(fd);
    return signal_fd.failure();
  }
  Result<ExitStatus> result =
      fork_and_supervise(plan, report, info, *signal_fd, prepare_child, refusals, host);
  // Signals that came in after bwrap ended are consumed here rather than acting on sbx with
  // their default disposition: the command they were meant for has already finished.
  drain_signals(*signal_fd, nullptr);
  close(*signal_fd);
  close(report[0]);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return result;
}

}  // namespace sbx::bwrap
