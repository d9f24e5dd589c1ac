// The stage-2 launch (launch.hpp): sbx -> bwrap -> sbx-stage2 (the sandbox's PID 1) -> command,
// for plans in network mode proxy (the relay runs inside the sandbox), plans without a direct
// form and kernels without pidfds or openat2.
//
// bwrap is started with --info-fd, and signals go to the pid bwrap reports: sbx-stage2, PID 1 of
// the sandbox's pid namespace, which blocks the forwarded signals, takes them with sigwaitinfo
// and passes them on to the command (core/stage2/stage2_main.cpp, run_as_init). PID 1 of a pid
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
#include <string>
#include <utility>

#include "launch.hpp"
#include "sbx/bwrap/bind_fds.hpp"
#include "sbx/bwrap/spawn.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"

namespace sbx::bwrap::launch {
namespace {

namespace child = sdk::posix_child;

// Everything prepared for one stage-2 run beyond the plan: the final argv and the descriptors
// bwrap and stage 2 get (all close-on-exec here; closed when the run is over).
struct Stage2Launch {
  std::vector<std::string> argv;
  int env_fd = -1;
  int mounts_fd = -1;
  int ready_read = -1;
  int ready_write = -1;
  int channel_child = -1;   // the child's end: sends the seccomp listener
  int channel_parent = -1;  // sbx's end: receives it
  UnixSocketRules unix_rules;
  std::vector<int> bind_fds;

  Stage2Launch() = default;
  Stage2Launch(const Stage2Launch&) = delete;
  Stage2Launch& operator=(const Stage2Launch&) = delete;
  ~Stage2Launch() {
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
Status prepare_launch(const ExecPlan& plan, const RunContext& run, Stage2Launch& launch) {
  if (Status inherited = check_inherited_descriptors(run.stdio_fds()); !inherited.ok())
    return inherited;
  SupervisedArgv supervised = take_supervisor_options(plan.argv);
  launch.unix_rules = std::move(supervised.rules);
  Result<BoundArgv> bound = bind_sources_by_fd(supervised.argv);
  if (!bound.ok()) return Error{bound.error()};
  launch.bind_fds = bound->fds;
  std::vector<std::string> stage2_options = {"--ready-fd", std::to_string(kReadyFd),
                                             kUnixSupervisedOption};
  if (has_proc_mount(bound->argv)) {
    Result<std::string> mounts = planned_mounts_block(bound->argv);
    if (!mounts.ok()) return Error{mounts.error()};
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

Result<ExitStatus> run_stage2_launch(const ExecPlan& plan, const Pipes& pipes, int signal_fd,
                                     const RunContext& run, std::vector<UnixRefusal>* refusals) {
  Stage2Launch launch;
  if (Status prepared = prepare_launch(plan, run, launch); !prepared.ok()) {
    for (int fd : {pipes.report[1], pipes.info[1], pipes.info[0]}) close(fd);
    return Error{prepared.error()};
  }
  std::vector<char*> argv = child::c_string_array(launch.argv);
  std::vector<char*> envp = child::c_string_array(plan.env);
  // Every signal blocked across vfork: a handler of sbx (or of an embedding process) must never
  // run in the child, which shares this memory; the child unblocks after resetting them.
  sigset_t all;
  sigset_t watching;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &watching);
  int fork_errno = 0;  // meaningful only when pid < 0
  static_assert(kInfoFd == kFirstPlacedFd && kEnvFd == kInfoFd + 1 && kReadyFd == kEnvFd + 1 &&
                kMountsFd == kReadyFd + 1);
  const pid_t pid =
      vfork_child({argv.data(),
                   envp.data(),
                   plan.cwd.c_str(),
                   pipes.report[1],
                   {pipes.info[1], launch.env_fd, launch.ready_write, launch.mounts_fd, -1},
                   launch.bind_fds.data(),
                   launch.bind_fds.size(),
                   run.child_hook(),
                   launch.channel_child,
                   -1,
                   launch.unix_rules.private_network,
                   run.stdio_fds()},
                  fork_errno);
  pthread_sigmask(SIG_SETMASK, &watching, nullptr);
  // Only bwrap may hold these: in sbx they are closed now (bind sources included).
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
  // bwrap runs and its notifications are answered: the host's work alongside the run starts
  // now, while bwrap sets the sandbox up (not before the vfork, whose child would copy the
  // descriptors that work holds).
  run.run_started();
  bool cancelled = false;
  Status watched =
      watch_stage2_run(pid, signal_fd, pipes.info[0], supervisor.get(), run.cancel_fd(), cancelled);
  // bwrap has ended, and the whole sandbox with it (its PID 1 is gone).
  if (supervisor) {
    supervisor->stop();
    if (refusals != nullptr) *refusals = supervisor->refusals();
  }
  if (!watched.ok()) return Error{"bwrap: " + watched.error()};
  ExitStatus status;
  if (!child::reap(pid, status))
    return Error{std::string("bwrap: waitpid failed: ") + std::strerror(errno)};
  if (failed) return report_failure(plan, failure, run.stdio_fd(2));
  if (!stage2_started(launch.ready_read))
    return cancelled ? ended_by_cancel() : report_bwrap_failure(status, run.stdio_fd(2));
  return status;
}

}  // namespace sbx::bwrap::launch
