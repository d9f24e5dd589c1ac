// What the bwrap spawner's two launchers share (spawn.hpp has the contract): the stage-2 launch
// (stage2_launch.cpp: sbx -> bwrap -> sbx-stage2 -> command) and the direct launch
// (direct_launch.cpp, direct.hpp: sbx -> bwrap -> command). One child side (ChildArgs,
// run_child: the launcher's rows of linux/confine/order.hpp), one start and end of bwrap
// (start_bwrap, end_bwrap), one signal forwarder (SignalForwarder), and the pieces of the
// parent's waiting loop, the *watcher*: it learns the sandbox's pid from bwrap, forwards signals
// and waits for bwrap to end. "Supervisor" names one actor only: the unix-socket supervisor
// (unix_supervisor.hpp), which the watcher serves until the supervisor's own thread takes over.
// Private to the bwrap plugin.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "order.hpp"
#include "sbx/bwrap/direct.hpp"
#include "sbx/bwrap/translate.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "sbx/sdk/backend.hpp"
#include "sbx/sdk/posix_child.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::bwrap::launch {

// The signals forwarded to the sandbox (SIGCONT is left out: sbx stopping does not stop the
// sandbox, which is in its own session, so there is nothing to continue).
inline constexpr std::array<int, 7> kForwardedSignals = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                                         SIGUSR1, SIGUSR2, SIGWINCH};
// How long to poll /proc while a signal is held for a target that cannot receive it yet.
inline constexpr int kReadyPollMs = 5;
// Without a pidfd for bwrap (Linux < 5.3): how often to look whether bwrap has ended, in case
// another thread of this process took its SIGCHLD.
inline constexpr int kNoPidfdPollMs = 100;

// The first descriptor number a launcher places for bwrap (3, right after stdio); each launcher
// places up to kPlacedCount consecutive ones (the stage-2 launch: kInfoFd..kMountsFd, the direct
// launch: kStatusFd..kPauseFd and kWaiterStatusFd; both: kTraceFd).
inline constexpr int kFirstPlacedFd = 3;
inline constexpr std::size_t kPlacedCount = 7;
// The confinement order's trace (checked builds, linux/confine/steps.hpp), handed on through
// bwrap to stage 2 or the direct launch's waiter as --trace-fd; the sixth placed slot (the
// seventh is the waiter's status pipe, kWaiterStatusFd).
inline constexpr int kTraceFd = kFirstPlacedFd + 5;
static_assert(kWaiterStatusFd == kTraceFd + 1 &&
              kWaiterStatusFd == kFirstPlacedFd + static_cast<int>(kPlacedCount) - 1);

// The pipes every launch starts with: the child's failure report (CLOEXEC, EOF at a successful
// execve) and bwrap's info or status pipe (the sandbox PID 1's pid, as JSON).
struct Pipes {
  int report[2];
  int info[2];
};

// Everything the child needs, prepared before vfork. The child side uses only the
// async-signal-safe pieces of the POSIX child toolkit (sbx/sdk/posix_child.hpp), writing
// nothing but its own stack: it is started with vfork and shares sbx's memory until execve
// (why vfork, and why that is safe: see core/src/run/spawn.cpp; here too every signal is
// blocked until the dispositions are reset).
struct ChildArgs {
  char* const* argv;
  char* const* envp;
  const char* cwd;
  int report_fd;  // CLOEXEC; EOF at a successful execve
  // Placed at kFirstPlacedFd + i (all CLOEXEC before); -1: nothing at that number.
  std::array<int, kPlacedCount> placed;
  // Bind sources (CLOEXEC, >= kFirstBindFd): made inheritable as they are, never moved.
  const int* bind_fds;
  std::size_t bind_fd_count;
  RunContext::ChildHook prepare_child;  // the run's cgroup and rlimits (async-signal-safe)
  int supervisor_channel;  // CLOEXEC unix socket: the seccomp listener goes to sbx over it
  int scope_ruleset;       // CLOEXEC Landlock ruleset entered last; -1 for none
  bool report_sends;       // private network namespace: the filter notifies sendto with an address
  const confine::Order* order;  // the launch's confinement order: the child follows its rows
  int trace_fd;                 // CLOEXEC; -1, or the order's trace (handed on: placed[5])
  std::array<int, 3> stdio;     // the command's 0-2 (RunContext::stdio_fds; -1: none), via bwrap
};

int pidfd_open_raw(pid_t pid);

// Delivers the forwarded signals to the sandbox, holding them until their target can receive
// them: until /proc shows that it catches every forwarded signal (sbx-stage2 installs handlers
// it never runs for that, stage2_main.cpp catch_forwarded_signals). Two targets, one per launch:
//  * aim_at_init (stage-2 launch): sbx-stage2, the sandbox's PID 1 (a PID 1 drops a signal it
//    neither blocks nor handles);
//  * aim_at_waiter_of (direct launch): the waiter, the child of bwrap's PID 1 whose innermost
//    pid is 2 (find_sandbox_waiter, direct.hpp), which passes them on to the command. Until it
//    catches them that process is bwrap's own, or sbx-stage2 setting up: a signal then would
//    kill it before the command ran, and the run would be reported as bwrap's failure. bwrap's
//    PID 1 never gets them.
// A pidfd pins the target: once it has exited and been reaped its pid may be reused, and a late
// signal must not hit an unrelated process (kill() only for PID 1 on Linux < 5.3).
class SignalForwarder {
 public:
  SignalForwarder() { sigemptyset(&held_); }
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  void aim_at_init(pid_t init);
  void aim_at_waiter_of(pid_t init);
  // Called once bwrap has ended: nothing may be sent any more.
  void stop() { stopped_ = true; }
  void receive(int sig);
  bool holding() const;
  void deliver_held();

 private:
  enum class Aim { kNone, kInit, kWaiterOf };
  bool target_ready();

  Aim aim_ = Aim::kNone;
  pid_t pid_ = 0;     // PID 1 of the sandbox (both aims)
  pid_t waiter_ = 0;  // kWaiterOf: the waiter, once found
  int pidfd_ = -1;    // the target's pidfd: PID 1's (kInit), the waiter's (kWaiterOf)
  bool ready_ = false;
  bool stopped_ = false;
  sigset_t held_;
};

// Reads every signal queued on the signalfd and hands the forwarded ones to the forwarder
// (none when it is null: then they are only consumed).
void drain_signals(int signal_fd, SignalForwarder* forwarder);

// Reads what is available on one of bwrap's pipes; returns false at EOF or error.
bool read_info(int fd, std::string& info);

// True once the child has ended (left unreaped, so its pid cannot be reused meanwhile).
Result<bool> child_ended(pid_t pid);

// The watcher's poll timeout: kReadyPollMs while a signal is held, kNoPidfdPollMs without a
// pidfd for bwrap, else none (-1).
int watch_timeout(const SignalForwarder& forwarder, int exit_fd);

// A sealed memfd holding `block`, positioned at its start; -1 (errno set) on failure.
int sealed_memfd(const char* name, const std::string& block);

// The command inherits stdin, stdout and stderr (`stdio`, RunContext::stdio_fds) and nothing
// else. A socket among them was made in the caller's network namespace: unless it is a connected
// stream socket it could reach the host (a datagram socket names a destination on every send,
// which the supervisor never sees; an unconnected one connects in the host's namespace): the run
// is refused instead.
Status check_inherited_descriptors(const std::array<int, 3>& stdio);

// sbx's own message about the run, on the command's stderr `err_fd` (-1: none).
void print_message(int err_fd, const std::string& message);

// The failure of the child that was to exec bwrap: the command never started, so the run has
// no exit status but this error (issue #33 point 6: "exit" null and "error" set in the report;
// the CLI's 125).
Error report_failure(const ExecPlan& plan, const sdk::posix_child::Failure& failure);

// bwrap ended without starting the command: its own failure (it printed why on the command's
// stderr), never the command's status, so no exit status of bwrap (1 for most of its errors)
// can pass for the command's: an error, like the child's.
Error report_bwrap_failure(const ExitStatus& bwrap);

// The run's cancel_fd (RunContext) became readable: ends the sandbox, whole. With its PID 1
// known (init_pidfd), SIGKILL to it: the kernel then kills every process of its pid namespace
// before PID 1 can be reaped (pid_namespaces(7)), and bwrap, which waits for PID 1, ends after
// that. Before then, bwrap itself: its child dies with it (--die-with-parent), and nothing of
// the command has started.
void end_sandbox(pid_t bwrap, int init_pidfd);

// A run ended by its cancel_fd: killed (128 + SIGKILL as a shell says it), quietly: the host
// reports why.
ExitStatus ended_by_cancel();

// The run's status from bwrap's, once bwrap has ended: bwrap (bubblewrap.c
// propagate_exit_status) and sbx-stage2 (PID 1 or the waiter) all turn a death by signal N into
// exit code 128+N; stage 2 then wrote N as one byte on `signal_read` (stage2_main.cpp,
// tell_signal; -1: no such pipe). Taken only when it matches bwrap's code, so nothing in the
// sandbox can make a plain exit look like a signal other than the one its code already names.
ExitStatus with_command_signal(const ExitStatus& bwrap, int signal_read);

// One byte of `fd` (a pipe's read end, read after bwrap ended: what stage 2 wrote waits there);
// nullopt when there is none.
std::optional<unsigned char> read_one_byte(int fd);

// What both launchers prepare alike (DirectLaunch and Stage2Launch derive from it): the bind
// sources, the channel the unix-socket supervisor's listener travels over and its rules, the
// launch's confinement order and its trace. All close-on-exec in sbx.
struct LaunchBase {
  std::vector<int> bind_fds;
  int channel_child = -1;   // the child's end: sends the seccomp listener
  int channel_parent = -1;  // sbx's end: receives it
  UnixSocketRules unix_rules;
  int trace_fd = -1;  // the order's trace (not owned: sbx's, steps.hpp); -1 for none
  confine::Order order;

  LaunchBase() = default;
  LaunchBase(const LaunchBase&) = delete;
  LaunchBase& operator=(const LaunchBase&) = delete;
  ~LaunchBase();
  // What only the child needed of these: closed in sbx as soon as bwrap has been started.
  void close_child_ends();
};

// The socket pair of `launch`'s channel.
Status open_supervisor_channel(LaunchBase& launch);

// What differs between the launchers' children: bwrap's argv and environment, the descriptors
// placed for it (at kFirstPlacedFd + i; -1 for none), the Landlock scope entered last (-1 for
// none).
struct ChildProgram {
  char* const* argv;
  char* const* envp;
  std::array<int, kPlacedCount> placed;
  int scope_ruleset;
};

// A bwrap started by start_bwrap: its pid, its child's own failure (bwrap then never ran), and
// the unix-socket supervisor answering it (none after a failure).
struct StartedBwrap {
  pid_t pid = -1;
  std::optional<sdk::posix_child::Failure> failure;
  std::unique_ptr<UnixSupervisor> supervisor;
};

// Both launchers' start: bwrap's child (run_child: `program` in `plan.cwd` with `launch`'s
// descriptors, order and trace) vforked with every signal blocked, then what only the child
// needed closed (`launch`'s child ends, `close_after_fork` the launcher's own, the pipes' child
// ends), the child's failure read, the supervisor attached to the listener the child sent (bwrap
// killed when that fails) and the run told run_started. On Error nothing runs and
// pipes.info[0] is closed.
Result<StartedBwrap> start_bwrap(const ExecPlan& plan, const ChildProgram& program,
                                 LaunchBase& launch, const Pipes& pipes, const RunContext& run,
                                 const std::function<void()>& close_after_fork);

// Both launchers' end, once their watcher returned `watched`: stops the supervisor (its refusals
// into `refusals`), kills bwrap if the watcher failed (nothing of the sandbox may run on
// unwatched), and reaps it. Error when the watcher or waitpid failed.
Result<ExitStatus> end_bwrap(StartedBwrap& bwrap, const Status& watched,
                             std::vector<UnixRefusal>* refusals);

// The launchers, each from the plan's typed form (launch_form.hpp). Each closes
// pipes.report[1] and both ends of pipes.info before it returns (pipes.report[0] stays the
// caller's); `signal_fd` is the caller's signalfd of the forwarded signals and SIGCHLD, all
// blocked, or -1 for a run that forwards nothing (RunContext::forward_signals); `refusals` and
// `launched` as in spawn_bwrap. `plan` gives bwrap's working directory and environment (plan.cwd,
// plan.env) and names bwrap in messages.
Result<ExitStatus> run_stage2_launch(const ExecPlan& plan, const BwrapPlan& typed,
                                     const Pipes& pipes, int signal_fd, const RunContext& run,
                                     std::vector<UnixRefusal>* refusals, std::string* launched);
// `direct` is the plan's direct form (direct_launch_of), `rules` its unix_socket_rules.
Result<ExitStatus> run_direct_launch(const ExecPlan& plan, const DirectPlan& direct,
                                     UnixSocketRules rules, const Pipes& pipes, int signal_fd,
                                     const RunContext& run, std::vector<UnixRefusal>* refusals,
                                     std::string* launched);

// True when this kernel has what the direct launch relies on from outside the sandbox: pidfds
// (the sandbox's PID 1 and the command pinned) and openat2 (the command checked inside the new
// root). Older kernels keep stage 2.
bool direct_launch_supported();

}  // namespace sbx::bwrap::launch
