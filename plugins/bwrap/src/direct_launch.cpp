// The direct launch (launch.hpp, direct.hpp): sbx -> bwrap -> the waiter -> command, no
// sbx-stage2 as PID 1. bwrap gets its options on a sealed memfd (--args), the seccomp programs on
// descriptors and a pause point; the watcher checks the paused sandbox, lets it go on (or kills
// it), and sends signals to the waiter (SignalForwarder::aim_at_waiter_of), which passes them on
// to the command and tells sbx the signal that killed it (kWaiterStatusFd).
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
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
#include "sbx/bwrap/launch_form.hpp"
#include "sbx/bwrap/seccomp_fds.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "steps.hpp"

namespace sbx::bwrap::launch {
namespace {

namespace child = sdk::posix_child;
using sdk::kExitSandboxFailure;

// Everything prepared for one direct run beyond what both launches share (all close-on-exec in
// sbx).
struct DirectLaunch : LaunchBase {
  std::vector<std::string> argv;
  int args_fd = -1;
  SeccompFds seccomp;
  int pause_read = -1;
  int pause_write = -1;  // sbx's: bwrap waits at the pause point until it is closed
  int scope_ruleset = -1;
  int waiter_status_read = -1;   // sbx's: the command's signal, read once bwrap has ended
  int waiter_status_write = -1;  // the waiter's (kWaiterStatusFd)
  std::vector<std::pair<int, std::string>> bind_sources;  // for the record (launch_json)
  std::string args;                                       // the --args block as written
  std::vector<std::string> env;                           // its --setenv entries
  std::vector<stage2::PlannedMount> planned;
  bool private_network = false;
  std::string command;
  bool write_layer = false;  // the waiter enters the write layer
  int cancel_fd = -1;        // the run's (RunContext::cancel_fd): never closed here

  DirectLaunch() = default;
  DirectLaunch(const DirectLaunch&) = delete;
  DirectLaunch& operator=(const DirectLaunch&) = delete;
  ~DirectLaunch() {
    close_after_fork();
    if (pause_write >= 0) close(pause_write);
    if (waiter_status_read >= 0) close(waiter_status_read);
  }
  // What only the child needed of this launch's own: closed once bwrap has been started.
  void close_after_fork() {
    for (int* fd : {&args_fd, &pause_read, &scope_ruleset, &waiter_status_write}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    seccomp = SeccompFds();
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

// The waiter's status pipe: the write end goes through bwrap to the waiter at kWaiterStatusFd
// (bwrap's PID 1 closes it, bubblewrap.c: "Close fds in pid 1"; the waiter makes it
// close-on-exec), the read end stays in sbx, non-blocking: read once bwrap has ended, when the
// waiter has written its byte or never will.
Status open_waiter_status_pipe(DirectLaunch& launch) {
  int status[2];
  if (pipe2(status, O_CLOEXEC) != 0)
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(errno)};
  launch.waiter_status_read = status[0];
  launch.waiter_status_write = status[1];
  if (fcntl(status[0], F_SETFL, O_NONBLOCK) != 0)
    return Error{std::string("bwrap: cannot set up a pipe: ") + std::strerror(errno)};
  return {};
}

// The launch's confinement order (linux/confine/order.hpp): the direct route, its Landlock
// scope (none with the write layer, which scopes) and the waiter's write layer as prepared.
confine::Order direct_order(const DirectLaunch& launch) {
  confine::Shape shape;
  shape.route = confine::Route::kBwrapDirect;
  shape.private_network = launch.private_network;
  shape.landlock_scope = launch.scope_ruleset >= 0;
  shape.write_layer = launch.write_layer;
  return confine::confinement_order(shape);
}

// With a trace (checked builds), the waiter is told where it is: right after --waiter, which
// precedes the command's own arguments.
void hand_on_trace(std::vector<std::string>& argv) {
  const auto waiter = std::find(argv.begin(), argv.end(), "--waiter");
  if (waiter != argv.end())
    argv.insert(std::next(waiter), {"--trace-fd", std::to_string(kTraceFd)});
}

// The pause check's rows of the order (checked builds): the checks just passed. Out of order,
// the run is refused like a failed check.
PauseVerdict record_pause_check(const DirectLaunch& launch) {
  confine::ConfinementSteps steps(launch.order, confine::Actor::kPauseCheck, launch.trace_fd);
  bool in_order = steps.done(confine::Step::kMountCheck);
  if (in_order && launch.private_network) in_order = steps.done(confine::Step::kNetworkCheck);
  if (in_order) return {};
  return {kExitSandboxFailure, "the pause point's checks are out of the confinement order"};
}

// `plan` (the typed plan's direct form, launch_form.hpp) as bwrap gets it: bind sources as
// checked descriptors (bind_fds.hpp) in the --args block.
Status prepare_direct(const DirectPlan& plan, DirectLaunch& launch) {
  std::vector<std::string> unbound = {plan.bwrap};
  unbound.insert(unbound.end(), plan.options.begin(), plan.options.end());
  Result<BoundArgv> bound = bind_sources_by_fd(unbound);
  if (!bound.ok()) return bound.failure();
  launch.bind_fds = bound->fds;
  launch.bind_sources = bound->sources;
  DirectPlan direct = plan;
  direct.options.assign(std::next(bound->argv.begin()), bound->argv.end());
  // The mounts of the direct form (the plan's and the /proc/1 mask, kPidOneMask), checked at the
  // pause point like the plan's.
  Result<std::string> mounts = planned_mounts_block(bound->argv);
  if (!mounts.ok()) return mounts.failure();
  Result<std::vector<stage2::PlannedMount>> planned = stage2::parse_planned_mounts(*mounts);
  if (!planned.ok()) return planned.failure().prefixed("bwrap: ");
  launch.planned = std::move(*planned);
  launch.private_network = direct.filter != stage2::NetworkFilter::kOpen;
  launch.command = direct.command.front();
  Result<std::string> block = direct_args_block(direct);
  if (!block.ok()) return block.failure();
  launch.args = *block;
  launch.args_fd = sealed_memfd("sbx-bwrap-args", *block);
  if (launch.args_fd < 0)
    return Error{std::string("bwrap: cannot hand bwrap its arguments (memfd): ") +
                 std::strerror(errno)};
  Result<SeccompFds> seccomp = seccomp_program_fds(direct.filter);
  if (!seccomp.ok()) return seccomp.failure();
  launch.seccomp = std::move(*seccomp);
  if (Status pause = open_pause_pipe(launch); !pause.ok()) return pause;
  if (Status status = open_waiter_status_pipe(launch); !status.ok()) return status;
  // With the write layer the command is scoped by the layer's domain, and a scope entered
  // here as well would lie beneath it: every cross-directory rename and link would then be
  // EXDEV (linux/landlock/write_layer.hpp). So the scope is the child's only without one.
  if (!direct.write_layer) {
    Result<int> scope = open_scope_ruleset();
    if (!scope.ok()) return scope.failure();
    launch.scope_ruleset = *scope;
  }
  if (Status channel = open_supervisor_channel(launch); !channel.ok()) return channel;
  launch.env = direct.env;
  launch.argv = direct_argv(direct);
  launch.write_layer = direct.write_layer;
  launch.trace_fd = confine::trace_fd_from_environment();
  if (launch.trace_fd >= 0) hand_on_trace(launch.argv);
  launch.order = direct_order(launch);
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
      if (verdict.exit_code == 0) verdict = record_pause_check(launch);
      if (verdict.exit_code != 0) {
        // Nothing of the command has run: the sandbox's PID 1 still sits in bwrap's setup.
        if (init_pidfd >= 0) syscall(SYS_pidfd_send_signal, init_pidfd, SIGKILL, nullptr, 0);
        kill(bwrap, SIGKILL);
        out.refused = std::move(verdict);
      } else {
        close(launch.pause_write);
        launch.pause_write = -1;
        out.released = true;
        // Signals held until now go to the waiter, once it catches them.
        forwarder.aim_at_waiter_of(init);
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
  if (!failed.ok()) return failed.failure();
  return out;
}

// The pause-point check failed: the sandbox was killed before the command ran. The command
// not found or not executable inside is its own status (127, 126: what a shell gives), said on
// the command's stderr `err_fd`; any other refusal is the run's error: no exit status.
Result<ExitStatus> report_refused(const PauseVerdict& refused, int err_fd) {
  if (refused.exit_code == kExitSandboxFailure)
    return Error{"bwrap: " + refused.message + "; the command did not run", ErrorKind::refused};
  print_message(err_fd, "sbx: bwrap: " + refused.message + "; the command did not run\n");
  ExitStatus status;
  status.exit_code = refused.exit_code;
  return status;
}

// The run's status once bwrap (started without a failure of its child) was reaped with `bwrap`;
// the waiter's status pipe `signal_read` gives the command's signal; sbx's messages on `err_fd`,
// the command's stderr.
Result<ExitStatus> direct_status(const DirectOutcome& outcome, const ExitStatus& bwrap,
                                 int signal_read, int err_fd) {
  if (outcome.refused) return report_refused(*outcome.refused, err_fd);
  // bwrap writes "exit-code" only once the command has run; without it, bwrap itself failed,
  // or it was killed while the command ran (past the pause point): the run's timeout kills the
  // whole cgroup after the grace period, bwrap included, and so may the OOM killer or a
  // SIGKILL from outside. That end is the run's, reported as stage 2 reports it: 128 + N.
  if (!parse_json_status(outcome.status_text).exit_code) {
    if (outcome.cancelled) return ended_by_cancel();
    if (outcome.released && bwrap.signal != 0) return bwrap;
    return report_bwrap_failure(bwrap);
  }
  return with_command_signal(bwrap, signal_read);
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

Result<ExitStatus> run_direct_launch(const ExecPlan& plan, const DirectPlan& direct,
                                     UnixSocketRules rules, const Pipes& pipes, int signal_fd,
                                     const RunContext& run, std::vector<UnixRefusal>* refusals,
                                     std::string* launched) {
  DirectLaunch launch;
  launch.unix_rules = std::move(rules);
  launch.cancel_fd = run.cancel_fd();
  if (Status prepared = prepare_direct(direct, launch); !prepared.ok()) {
    for (int fd : {pipes.report[1], pipes.info[1], pipes.info[0]}) close(fd);
    return prepared.failure();
  }
  if (launched != nullptr)
    *launched =
        launch_json({LaunchForm::kDirect, launch.argv, split_args_block(launch.args), launch.env},
                    launch.bind_sources);
  std::vector<char*> argv = child::c_string_array(launch.argv);
  char* no_env[] = {nullptr};  // bwrap gets the command's environment through --args
  static_assert(kStatusFd == kFirstPlacedFd && kArgsFd == kStatusFd + 1 &&
                kSeccompTableFd == kArgsFd + 1 && kSeccompRulesFd == kSeccompTableFd + 1 &&
                kPauseFd == kSeccompRulesFd + 1 && kTraceFd == kPauseFd + 1 &&
                kWaiterStatusFd == kTraceFd + 1);
  // The trace and the status pipe go on through bwrap to the waiter, which makes both
  // close-on-exec: the command gets nothing but 0-2.
  const ChildProgram program{
      argv.data(),
      no_env,
      {pipes.info[1], launch.args_fd, launch.seccomp.table(), launch.seccomp.rules(),
       launch.pause_read, launch.trace_fd, launch.waiter_status_write},
      launch.scope_ruleset};
  Result<StartedBwrap> bwrap =
      start_bwrap(plan, program, launch, pipes, run, [&launch] { launch.close_after_fork(); });
  if (!bwrap.ok()) return bwrap.failure();
  Result<DirectOutcome> outcome =
      watch_direct_run(bwrap->pid, signal_fd, pipes.info[0], launch, bwrap->supervisor.get());
  Result<ExitStatus> ended = end_bwrap(*bwrap, outcome.status(), refusals);
  if (!ended.ok()) return ended;
  const int err_fd = run.stdio_fd(2);
  if (bwrap->failure) return report_failure(plan, *bwrap->failure);
  return direct_status(*outcome, *ended, launch.waiter_status_read, err_fd);
}

}  // namespace sbx::bwrap::launch
