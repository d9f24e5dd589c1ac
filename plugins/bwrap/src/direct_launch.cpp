// The direct launch (launch.hpp, direct.hpp): sbx -> bwrap -> command, no sbx-stage2 in between.
// bwrap gets its options on a sealed memfd (--args), the seccomp programs on descriptors and a
// pause point; the watcher checks the paused sandbox, lets it go on (or kills it), and sends
// signals to the command itself (SignalForwarder::aim_at_command_of).
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "launch.hpp"
#include "sbx/bwrap/bind_fds.hpp"
#include "sbx/bwrap/direct.hpp"
#include "sbx/bwrap/seccomp_fds.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "write_layer.hpp"

namespace sbx::bwrap::launch {
namespace {

namespace child = sdk::posix_child;
using sdk::kExitSandboxFailure;

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
  int cancel_fd = -1;  // the run's (RunContext::cancel_fd): never closed here

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
  if (!bound.ok()) return Error{bound.error()};
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
  if (!mounts.ok()) return Error{mounts.error()};
  Result<std::vector<stage2::PlannedMount>> planned = stage2::parse_planned_mounts(*mounts);
  if (!planned.ok()) return Error{"bwrap: " + planned.error()};
  launch.planned = std::move(*planned);
  launch.private_network = direct->filter != stage2::NetworkFilter::kOpen;
  launch.command = direct->command.front();
  Result<std::string> block = direct_args_block(*direct);
  if (!block.ok()) return Error{block.error()};
  launch.args_fd = sealed_memfd("sbx-bwrap-args", *block);
  if (launch.args_fd < 0)
    return Error{std::string("bwrap: cannot hand bwrap its arguments (memfd): ") +
                 std::strerror(errno)};
  Result<SeccompFds> seccomp = seccomp_program_fds(direct->filter);
  if (!seccomp.ok()) return Error{seccomp.error()};
  launch.seccomp = std::move(*seccomp);
  if (Status pause = open_pause_pipe(launch); !pause.ok()) return pause;
  Result<int> scope = open_scope_ruleset();
  if (!scope.ok()) return Error{scope.error()};
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
  std::string status_text;              // what --json-status-fd carried
  std::optional<PauseVerdict> refused;  // the pause-point check failed: the sandbox was killed
  bool released = false;   // the pause point passed: bwrap went on to start the command
  bool cancelled = false;  // the run's cancel_fd ended the sandbox
};

// The watcher of a direct run: learns the sandbox's PID 1, checks the sandbox at the pause
// point and lets it go on (or kills it), forwards signals, serves the unix-socket supervisor
// until its thread takes over, returns when bwrap has ended.
Result<DirectOutcome> watch_direct_run(pid_t bwrap, int signal_fd, int status_fd,
                                       DirectLaunch& launch, UnixSupervisor* supervisor) {
  DirectOutcome out;
  SignalForwarder forwarder;
  pid_t init = 0;
  int init_pidfd = -1;
  const int exit_fd = pidfd_open_raw(bwrap);
  Status failed;
  for (;;) {
    Result<bool> ended = child_ended(bwrap);
    if (!ended.ok()) {
      failed = Error{ended.error()};
      break;
    }
    if (*ended) break;
    const bool watch_pause = init > 0 && launch.pause_write >= 0 && !out.refused;
    // Served by this loop until the supervisor hands its listener to a thread (-1 from then on).
    const int unix_fd = supervisor ? supervisor->poll_fd() : -1;
    std::array<pollfd, 6> fds{{{signal_fd, POLLIN, 0},
                               {exit_fd, POLLIN, 0},
                               {status_fd, POLLIN, 0},
                               {watch_pause ? launch.pause_write : -1, POLLOUT, 0},
                               {unix_fd, POLLIN, 0},
                               {out.cancelled ? -1 : launch.cancel_fd, POLLIN, 0}}};
    if (poll(fds.data(), fds.size(), watch_timeout(forwarder, exit_fd)) < 0 && errno != EINTR) {
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
        // Signals held until now go to the command, once it exists.
        forwarder.aim_at_command_of(init);
      }
    }
    if (fds[4].revents != 0) supervisor->serve();
    if (fds[5].revents != 0) {
      end_sandbox(bwrap, init_pidfd);
      out.cancelled = true;
    }
    if (fds[0].revents != 0) drain_signals(signal_fd, &forwarder);
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
  if (!failed.ok()) return Error{failed.error()};
  return out;
}

}  // namespace

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

Result<ExitStatus> run_direct_launch(const ExecPlan& plan,
                                     const std::vector<std::string>& supervised_argv,
                                     UnixSocketRules rules, const Pipes& pipes, int signal_fd,
                                     const RunContext& run, std::vector<UnixRefusal>* refusals) {
  DirectLaunch launch;
  launch.unix_rules = std::move(rules);
  launch.cancel_fd = run.cancel_fd();
  if (Status prepared = prepare_direct(supervised_argv, launch); !prepared.ok()) {
    for (int fd : {pipes.report[1], pipes.info[1], pipes.info[0]}) close(fd);
    return Error{prepared.error()};
  }
  std::vector<char*> argv = child::c_string_array(launch.argv);
  char* no_env[] = {nullptr};  // bwrap gets the command's environment through --args
  sigset_t all;
  sigset_t watching;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &watching);
  int fork_errno = 0;
  static_assert(kStatusFd == kFirstPlacedFd && kArgsFd == kStatusFd + 1 &&
                kSeccompTableFd == kArgsFd + 1 && kSeccompRulesFd == kSeccompTableFd + 1 &&
                kPauseFd == kSeccompRulesFd + 1);
  const pid_t pid = vfork_child({argv.data(),
                                 no_env,
                                 plan.cwd.c_str(),
                                 pipes.report[1],
                                 {pipes.info[1], launch.args_fd, launch.seccomp.table(),
                                  launch.seccomp.rules(), launch.pause_read},
                                 launch.bind_fds.data(),
                                 launch.bind_fds.size(),
                                 run.child_hook(),
                                 launch.channel_child,
                                 launch.scope_ruleset,
                                 launch.unix_rules.private_network,
                                 run.stdio_fds()},
                                fork_errno);
  pthread_sigmask(SIG_SETMASK, &watching, nullptr);
  launch.close_after_fork();
  close(pipes.report[1]);
  close(pipes.info[1]);
  if (pid < 0) {
    close(pipes.info[0]);
    return Error{std::string("bwrap: vfork failed: ") + std::strerror(fork_errno)};
  }
  child::Failure failure{};
  const bool failed = child::read_failure(pipes.report[0], failure);
  std::unique_ptr<UnixSupervisor> supervisor;
  if (!failed) {
    Result<std::unique_ptr<UnixSupervisor>> started =
        attach_supervisor(launch.channel_parent, std::move(launch.unix_rules));
    if (!started.ok()) {
      close(pipes.info[0]);
      return abandon_bwrap(pid, started.error());
    }
    supervisor = std::move(*started);
  }
  // As in the stage-2 launch: the host's work alongside the run overlaps bwrap's set-up.
  run.run_started();
  Result<DirectOutcome> outcome =
      watch_direct_run(pid, signal_fd, pipes.info[0], launch, supervisor.get());
  if (supervisor) {
    supervisor->stop();
    if (refusals != nullptr) *refusals = supervisor->refusals();
  }
  if (!outcome.ok()) {
    kill(pid, SIGKILL);
    ExitStatus ignored;
    child::reap(pid, ignored);
    return Error{"bwrap: " + outcome.error()};
  }
  ExitStatus status;
  if (!child::reap(pid, status))
    return Error{std::string("bwrap: waitpid failed: ") + std::strerror(errno)};
  const int err_fd = run.stdio_fd(2);
  if (failed) return report_failure(plan, failure, err_fd);
  if (outcome->refused) {
    print_message(err_fd,
                  "sbx: bwrap: " + outcome->refused->message + "; the command did not run\n");
    ExitStatus refused;
    refused.exit_code = outcome->refused->exit_code;
    return refused;
  }
  // bwrap writes "exit-code" only once the command has run; without it, bwrap itself failed,
  // or it was killed while the command ran (past the pause point): the run's timeout kills the
  // whole cgroup after the grace period, bwrap included, and so may the OOM killer or a
  // SIGKILL from outside. That end is the run's, reported as stage 2 reports it: 128 + N.
  if (!parse_json_status(outcome->status_text).exit_code) {
    if (outcome->cancelled) return ended_by_cancel();
    if (outcome->released && status.signal != 0) return status;
    return report_bwrap_failure(status, err_fd);
  }
  return status;
}

}  // namespace sbx::bwrap::launch
