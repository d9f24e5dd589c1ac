// The stage-2 launch (launch.hpp): sbx -> bwrap -> sbx-stage2 (the sandbox's PID 1) -> command,
// for plans in network mode proxy (the relay runs inside the sandbox), plans without a direct
// form and kernels without pidfds or openat2.
//
// bwrap is started with --info-fd, and signals go to the pid bwrap reports: sbx-stage2, PID 1 of
// the sandbox's pid namespace, which blocks the forwarded signals, takes them with sigwaitinfo
// and passes them on to the command (stage2/stage2_main.cpp, run_as_init). PID 1 of a pid
// namespace only receives signals from an ancestor namespace that it blocks or has a handler
// for; one with default disposition is dropped. Before sbx-stage2 has set up its signals (bwrap
// still setting up, stage 2 installing seccomp) a forwarded signal would be lost, so signals
// are held until /proc/<pid>/status shows them caught (SignalForwarder::aim_at_init), then
// delivered. Signals that arrive before bwrap has reported the pid are held the same way.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "launch.hpp"
#include "sbx/bwrap/bind_fds.hpp"
#include "sbx/bwrap/launch_form.hpp"
#include "sbx/bwrap/spawn.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "steps.hpp"

namespace sbx::bwrap::launch {
namespace {

namespace child = sdk::posix_child;

// Everything prepared for one stage-2 run beyond the plan and what both launches share: the
// final argv and the descriptors bwrap and stage 2 get (all close-on-exec here; closed when the
// run is over).
struct Stage2Launch : LaunchBase {
  std::vector<std::string> argv;
  int env_fd = -1;
  int mounts_fd = -1;
  int ready_read = -1;
  int ready_write = -1;
  std::vector<std::pair<int, std::string>> bind_sources;  // for the record (launch_json)

  Stage2Launch() = default;
  Stage2Launch(const Stage2Launch&) = delete;
  Stage2Launch& operator=(const Stage2Launch&) = delete;
  ~Stage2Launch() {
    close_after_fork();
    if (ready_read >= 0) close(ready_read);
  }
  // What only the child needed of this launch's own: closed once bwrap has been started.
  void close_after_fork() {
    for (int* fd : {&env_fd, &mounts_fd, &ready_write}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }
};

// The launch's confinement order (linux/confine/order.hpp): the stage-2 route; of its
// conditional steps only what the launcher knows (its own rows depend on none of them).
confine::Order stage2_order(const Stage2Launch& launch) {
  confine::Shape shape;
  shape.route = confine::Route::kBwrapStage2;
  shape.private_network = launch.unix_rules.private_network;
  shape.mount_check = launch.mounts_fd >= 0;
  return confine::confinement_order(shape);
}

// Stage 2 told where the order's trace goes (steps.hpp), right after its fixed options.
void add_trace_option(std::vector<std::string>& argv) {
  const auto supervised = std::find(argv.begin(), argv.end(), kUnixSupervisedOption);
  if (supervised == argv.end()) return;
  argv.insert(std::next(supervised), {"--trace-fd", std::to_string(kTraceFd)});
}

// The plan as bwrap gets it (stage2_launch_argv, launch_form.hpp): bind sources as checked
// descriptors (bind_fds.hpp), --info-fd, the environment on kEnvFd, and stage 2 told where its
// ready pipe and mount list are (and, with a trace, where that is). The mount list needs a procfs
// inside (stage 2 reads /proc/self/mountinfo); with the empty-/proc fallback there is none, and
// only the descriptors guard the binds.
Status prepare_launch(const BwrapPlan& typed, const RunContext& run, Stage2Launch& launch) {
  if (Status inherited = check_inherited_descriptors(run.stdio_fds()); !inherited.ok())
    return inherited;
  launch.unix_rules = unix_socket_rules(typed);
  std::vector<std::string> unbound = {typed.bwrap};
  const std::vector<std::string> options = stage2_launch_options(typed);
  unbound.insert(unbound.end(), options.begin(), options.end());
  Result<BoundArgv> bound = bind_sources_by_fd(unbound);
  if (!bound.ok()) return bound.failure();
  launch.bind_fds = bound->fds;
  launch.bind_sources = bound->sources;
  const std::vector<std::string> bound_options(std::next(bound->argv.begin()), bound->argv.end());
  if (has_proc_mount(bound_options)) {
    Result<std::string> mounts = planned_mounts_block(bound->argv);
    if (!mounts.ok()) return mounts.failure();
    launch.mounts_fd = sealed_memfd("sbx-mounts", *mounts);
    if (launch.mounts_fd < 0)
      return Error{std::string("bwrap: cannot hand the mount list to sbx-stage2 (memfd): ") +
                   std::strerror(errno)};
  }
  launch.trace_fd = confine::trace_fd_from_environment();
  launch.order = stage2_order(launch);
  // Why a descriptor: arguments are world-readable in /proc for as long as bwrap and stage 2
  // run; an environment holds secrets (stage2/env_block.hpp).
  if (!typed.env.empty()) {
    std::string block;
    for (const std::string& entry : typed.env) {
      block += entry;
      block.push_back('\0');
    }
    launch.env_fd = sealed_memfd("sbx-env", block);
    if (launch.env_fd < 0)
      return Error{std::string("bwrap: cannot hand the environment to sbx-stage2 (memfd): ") +
                   std::strerror(errno)};
  }
  launch.argv = stage2_launch_argv(typed, bound_options);
  if (launch.trace_fd >= 0) add_trace_option(launch.argv);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0)
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(errno)};
  launch.ready_read = ready[0];
  launch.ready_write = ready[1];
  return open_supervisor_channel(launch);
}

// True if sbx-stage2 wrote its ready byte, i.e. bwrap's setup worked and stage 2 started.
bool stage2_started(int ready_read) {
  fcntl(ready_read, F_SETFL, O_NONBLOCK);
  return read_one_byte(ready_read).has_value();
}

// The watcher of a stage-2 run: learns the PID 1 from bwrap's info pipe, forwards signals,
// serves the unix-socket supervisor until its thread takes over, returns when bwrap ended.
// bwrap's end is watched through a pidfd as well as SIGCHLD: in a process with other threads
// (an agent embedding libsbx) a thread that does not block SIGCHLD may take it, and the
// signalfd alone would then wait forever. Without pidfds (Linux < 5.3) a 100 ms poll bounds it.
// The run's cancel_fd ends the sandbox (end_sandbox); `cancelled` says it did.
Status watch_stage2_run(pid_t bwrap, int signal_fd, int info_fd, UnixSupervisor* supervisor,
                        int cancel_fd, bool& cancelled) {
  SignalForwarder forwarder;
  std::string info;
  const int exit_fd = pidfd_open_raw(bwrap);
  int init_pidfd = -1;  // PID 1 (sbx-stage2), once bwrap has said which it is
  Status failed;
  for (;;) {
    Result<bool> ended = child_ended(bwrap);
    if (!ended.ok()) {
      failed = Error{ended.error()};
      break;
    }
    if (*ended) break;
    // A negative descriptor is skipped by poll: info once closed, the listener once handed on.
    const int unix_fd = supervisor ? supervisor->poll_fd() : -1;
    std::array<pollfd, 5> fds{{{signal_fd, POLLIN, 0},
                               {exit_fd, POLLIN, 0},
                               {info_fd, POLLIN, 0},
                               {unix_fd, POLLIN, 0},
                               {cancelled ? -1 : cancel_fd, POLLIN, 0}}};
    if (poll(fds.data(), fds.size(), watch_timeout(forwarder, exit_fd)) < 0 && errno != EINTR) {
      failed = Error{std::string("poll failed: ") + std::strerror(errno)};
      break;
    }
    if (info_fd >= 0 && fds[2].revents != 0 && !read_info(info_fd, info)) {
      close(info_fd);
      info_fd = -1;
      // bwrap writes the JSON in one go right after clone and then closes the pipe.
      if (std::optional<pid_t> pid = parse_child_pid(info)) {
        forwarder.aim_at_init(*pid);
        init_pidfd = pidfd_open_raw(*pid);
      }
    }
    if (fds[3].revents != 0) supervisor->serve();
    if (fds[4].revents != 0) {
      end_sandbox(bwrap, init_pidfd);
      cancelled = true;
    }
    if (fds[0].revents != 0) drain_signals(signal_fd, &forwarder);
    forwarder.deliver_held();
  }
  forwarder.stop();
  if (exit_fd >= 0) close(exit_fd);
  if (init_pidfd >= 0) close(init_pidfd);
  if (info_fd >= 0) close(info_fd);
  return failed;
}

}  // namespace

Result<ExitStatus> run_stage2_launch(const ExecPlan& plan, const BwrapPlan& typed,
                                     const Pipes& pipes, int signal_fd, const RunContext& run,
                                     std::vector<UnixRefusal>* refusals, std::string* launched) {
  Stage2Launch launch;
  if (Status prepared = prepare_launch(typed, run, launch); !prepared.ok()) {
    for (int fd : {pipes.report[1], pipes.info[1], pipes.info[0]}) close(fd);
    return prepared.failure();
  }
  if (launched != nullptr)
    *launched = launch_json({LaunchForm::kStage2, launch.argv, {}, typed.env}, launch.bind_sources);
  std::vector<char*> argv = child::c_string_array(launch.argv);
  std::vector<char*> envp = child::c_string_array(plan.env);
  static_assert(kInfoFd == kFirstPlacedFd && kEnvFd == kInfoFd + 1 && kReadyFd == kEnvFd + 1 &&
                kMountsFd == kReadyFd + 1 && kTraceFd > kMountsFd);
  const ChildProgram program{
      argv.data(),
      envp.data(),
      {pipes.info[1], launch.env_fd, launch.ready_write, launch.mounts_fd, -1, launch.trace_fd, -1},
      -1};
  Result<StartedBwrap> bwrap =
      start_bwrap(plan, program, launch, pipes, run, [&launch] { launch.close_after_fork(); });
  if (!bwrap.ok()) return bwrap.failure();
  bool cancelled = false;
  Status watched = watch_stage2_run(bwrap->pid, signal_fd, pipes.info[0], bwrap->supervisor.get(),
                                    run.cancel_fd(), cancelled);
  // bwrap has ended, and the whole sandbox with it (its PID 1 is gone). After the ready byte,
  // the command's signal (with_command_signal).
  Result<ExitStatus> status = end_bwrap(*bwrap, watched, refusals);
  if (!status.ok()) return status;
  if (bwrap->failure) return report_failure(plan, *bwrap->failure);
  if (!stage2_started(launch.ready_read)) {
    if (cancelled) return ended_by_cancel();
    return report_bwrap_failure(*status);
  }
  return with_command_signal(*status, launch.ready_read);
}

}  // namespace sbx::bwrap::launch
