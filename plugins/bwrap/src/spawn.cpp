// The bwrap backend's spawner (see spawn.hpp for the contract): the pipes and the signalfd every
// run needs, then one of the two launchers (launch.hpp): the direct launch (direct_launch.cpp)
// when the kernel and the plan allow it, the stage-2 launch (stage2_launch.cpp) otherwise.
//
// Why not core's spawner: it forwards a signal to its direct child, which here is bwrap. bwrap
// 0.8 has no handler for SIGTERM & co., dies of it, and --die-with-parent then SIGKILLs the
// sandbox: the command never sees the signal (sbx promises that it does). So signals go into
// the sandbox past bwrap (SignalForwarder, launch.hpp): to sbx-stage2, its PID 1, in the
// stage-2 launch; to the command itself in the direct launch.
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
// A run that does not forward (RunContext::forward_signals: a library run, whose process's
// signals are the embedding program's) opens no signalfd and blocks nothing: a signalfd takes a
// process-directed signal from the shared queue ahead of the thread the kernel chose for it, so
// the agent's own SIGINT handler would not run (nor SIGCHLD reach its own children's waits).
// The watchers need none of it: bwrap's end comes through its pidfd (or a short poll without
// one), the run's end through cancel_fd. bwrap stays in its process group and the sandbox in its
// session, so a terminal's ^C reaches only the embedding program, which ends the run if it
// wants to.
#include "sbx/bwrap/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <utility>

#include "launch.hpp"
#include "sbx/bwrap/direct.hpp"
#include "sbx/bwrap/launch_form.hpp"
#include "sbx/bwrap/plan.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "sbx/sdk/posix_child.hpp"

namespace sbx::bwrap {
namespace {

// The typed plan exec() launches from (launch_form.hpp), checked.
Result<const BwrapPlanDetail*> typed_plan(const ExecPlan& plan) {
  const BwrapPlanDetail* detail = bwrap_detail_of(plan);
  if (detail == nullptr)
    return Error{
        "bwrap: the plan has no bwrap plan detail (it must come from this backend's "
        "transform)"};
  const std::string& bwrap = detail->plan().bwrap;
  if (bwrap.empty() || bwrap.front() != '/')
    return Error{"bwrap: the plan's bwrap path '" + bwrap + "' is not absolute"};
  if (plan.cwd.empty() || plan.cwd.front() != '/')
    return Error{"bwrap: exec plan's cwd '" + plan.cwd + "' is not an absolute path"};
  return detail;
}

// Blocks the forwarded signals and SIGCHLD in this thread and opens a signalfd for them.
// Blocked first: a signal arriving before the sandbox's target is known stays queued, not lost.
// Without `forward`, nothing: -1 (the watchers skip a negative descriptor in their poll).
Result<int> open_signal_fd(bool forward, sigset_t& previous) {
  pthread_sigmask(SIG_BLOCK, nullptr, &previous);
  if (!forward) return -1;
  sigset_t set;
  sigemptyset(&set);
  for (int sig : launch::kForwardedSignals) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  if (pthread_sigmask(SIG_BLOCK, &set, &previous) != 0) return Error{"bwrap: cannot block signals"};
  const int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return Error{std::string("bwrap: signalfd failed: ") + std::strerror(error)};
  }
  return fd;
}

// The direct launch when the plan has a direct form on the host it was made for
// (direct_launch_of, launch_form.hpp), the stage-2 launch otherwise.
Result<ExitStatus> launch_and_watch(const ExecPlan& plan, const BwrapPlanDetail& typed,
                                    const launch::Pipes& pipes, int signal_fd,
                                    const RunContext& run, std::vector<UnixRefusal>* refusals,
                                    std::string* launched) {
  if (const std::optional<DirectPlan> direct = direct_launch_of(typed.plan(), typed.host())) {
    if (Status inherited = launch::check_inherited_descriptors(run.stdio_fds()); !inherited.ok()) {
      for (int fd : {pipes.report[1], pipes.info[1], pipes.info[0]}) close(fd);
      return inherited.failure();
    }
    return launch::run_direct_launch(plan, *direct, unix_socket_rules(typed.plan()), pipes,
                                     signal_fd, run, refusals, launched);
  }
  return launch::run_stage2_launch(plan, typed.plan(), pipes, signal_fd, run, refusals, launched);
}

}  // namespace

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

Result<ExitStatus> spawn_bwrap(const ExecPlan& plan, const RunContext& run,
                               std::vector<UnixRefusal>* refusals, std::string* launched) {
  Result<const BwrapPlanDetail*> typed = typed_plan(plan);
  if (!typed.ok()) return typed.failure();
  launch::Pipes pipes{};
  // CLOEXEC on all ends: none may leak into other children spawned concurrently; the child
  // gives bwrap its copy of info[1] explicitly.
  if (!sdk::posix_child::open_report_pipe(pipes.report))
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(errno)};
  if (pipe2(pipes.info, O_CLOEXEC) != 0) {
    const int error = errno;
    close(pipes.report[0]);
    close(pipes.report[1]);
    return Error{std::string("bwrap: cannot create a pipe: ") + std::strerror(error)};
  }
  sigset_t previous;
  Result<int> signal_fd = open_signal_fd(run.forward_signals(), previous);
  if (!signal_fd.ok()) {
    for (int fd : {pipes.report[0], pipes.report[1], pipes.info[0], pipes.info[1]}) close(fd);
    return signal_fd.failure();
  }
  Result<ExitStatus> result =
      launch_and_watch(plan, **typed, pipes, *signal_fd, run, refusals, launched);
  // Signals that came in after bwrap ended are consumed here rather than acting on sbx with
  // their default disposition: the command they were meant for has already finished.
  if (*signal_fd >= 0) {
    launch::drain_signals(*signal_fd, nullptr);
    close(*signal_fd);
  }
  close(pipes.report[0]);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return result;
}

}  // namespace sbx::bwrap
