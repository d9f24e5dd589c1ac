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
#include "sbx/bwrap/unix_supervisor.hpp"
#include "sbx/sdk/posix_child.hpp"

namespace sbx::bwrap {
namespace {

Status validate_plan(const ExecPlan& plan) {
  if (plan.argv.empty() || plan.argv[0].empty() || plan.argv[0].front() != '/')
    return Error{"bwrap: exec plan's argv[0] is not an absolute path"};
  if (plan.cwd.empty() || plan.cwd.front() != '/')
    return Error{"bwrap: exec plan's cwd '" + plan.cwd + "' is not an absolute path"};
  return {};
}

// Blocks the forwarded signals and SIGCHLD in this thread and opens a signalfd for them.
// Blocked first: a signal arriving before the sandbox's target is known stays queued, not lost.
Result<int> open_signal_fd(sigset_t& previous) {
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

// The direct launch when the kernel has what it needs and the plan has a direct form (direct.hpp),
// the stage-2 launch otherwise.
Result<ExitStatus> launch_and_watch(const ExecPlan& plan, const launch::Pipes& pipes, int signal_fd,
                                    const RunContext& run, std::vector<UnixRefusal>* refusals) {
  if (launch::direct_launch_supported()) {
    if (Status inherited = launch::check_inherited_descriptors(run.stdio_fds()); !inherited.ok()) {
      for (int fd : {pipes.report[1], pipes.info[1], pipes.info[0]}) close(fd);
      return Error{inherited.error()};
    }
    SupervisedArgv supervised = take_supervisor_options(plan.argv);
    if (direct_plan(supervised.argv))
      return launch::run_direct_launch(plan, supervised.argv, std::move(supervised.rules), pipes,
                                       signal_fd, run, refusals);
  }
  return launch::run_stage2_launch(plan, pipes, signal_fd, run, refusals);
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

Result<ExitStatus> spawn_bwrap(const ExecPlan& plan, const RunContext& run,
                               std::vector<UnixRefusal>* refusals) {
  if (Status valid = validate_plan(plan); !valid.ok()) return Error{valid.error()};
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
  Result<int> signal_fd = open_signal_fd(previous);
  if (!signal_fd.ok()) {
    for (int fd : {pipes.report[0], pipes.report[1], pipes.info[0], pipes.info[1]}) close(fd);
    return Error{signal_fd.error()};
  }
  Result<ExitStatus> result = launch_and_watch(plan, pipes, *signal_fd, run, refusals);
  // Signals that came in after bwrap ended are consumed here rather than acting on sbx with
  // their default disposition: the command they were meant for has already finished.
  launch::drain_signals(*signal_fd, nullptr);
  close(*signal_fd);
  close(pipes.report[0]);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return result;
}

}  // namespace sbx::bwrap
