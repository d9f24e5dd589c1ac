// Landlock mode's launcher: runs one command confined by Landlock and seccomp, with no helper
// program exec'd in between (linux/landlock/README.md, "The launcher").
//
// The landlock plugin's exec() calls it inside sbx (or a process embedding the C API), and
// `sbx-stage2 --landlock` is a thin wrapper over it for plans run by hand. The shape:
//
//   caller (sbx)     builds the Landlock ruleset (every path opened and checked), opens the
//                    writable roots for the metadata guard and takes the precompiled seccomp
//                    programs, all before any child exists, so every error of that kind is
//                    reported before anything runs; then starts the supervisor with
//                    clone(CLONE_VM) (no copy of its page tables: the fork this replaces was
//                    most of a run's cost), forwards the signals sent to it (si_code <= 0) and
//                    waits through a pidfd.
//   supervisor       shares the caller's memory and thread-local storage, so it makes raw
//                    system calls only, on data the caller prepared, and allocates nothing:
//                    not dumpable (the flag is the memory's: the caller is not dumpable either
//                    until the run ends), a child subreaper, tied to the caller by a
//                    parent-death signal, every descriptor but the ones it needs closed. It
//                    starts the command's child, forwards signals sent to it, and once the
//                    command has exited kills and reaps every descendant left (no pid
//                    namespace does that here). It stays outside the Landlock domain, so with
//                    signal scoping (ABI 6+) the command cannot signal it.
//   guard emulator   sbx-stage2 --metadata-guard, exec'd by the supervisor when the command
//                    first makes a call the metadata guard reports (metadata_notify.hpp), with
//                    the guard's listener and the writable roots as opened at the start: not
//                    dumpable, no capability, none of the caller's memory. A run that never
//                    changes metadata never starts it. With the network enabled (--net open)
//                    the guard's program is its connect variant and the emulator also decides
//                    and performs every connect (unix_connect_notify.hpp).
//   command's child  clone(CLONE_VM | CLONE_VFORK) of the supervisor, like posix_spawn: only
//                    async-signal-safe steps on data prepared before: SIGPIPE's default
//                    disposition back (the supervisor reset every other one), parent-death
//                    signal, chdir, the run's limits (the run's prepare_child), no_new_privs,
//                    every capability dropped and checked, the metadata guard (a precompiled
//                    user-notification filter; its listener goes to the supervisor; with an
//                    unrestricted filesystem the unix datagram guard, metadata_filter.hpp),
//                    landlock_restrict_self, the precompiled seccomp filter, the pid scope
//                    when there is no guard (whose program carries it: pid_scope_filter.hpp,
//                    no pid namespace here), every descriptor
//                    but 0-2 close-on-exec, execve: the launcher's rows of the confinement order
//                    (linux/confine/order.hpp), each checked in builds with tests. A failed step
//                    is written into memory it shares with the supervisor, which reports it to
//                    the caller; the command never runs after a failed step.
//
// Exit statuses: the command's own code, 128+N when signal N ended it, 126/127 when it could not
// be executed, 125 when a step of sbx's failed (with a message on stderr). The environment goes
// only into the command's execve: no process's arguments carry it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "landlock_ruleset.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "seccomp_filter.hpp"

namespace sbx::stage2 {

// One run as the landlock plugin's plan describes it (its stage-2 arguments).
struct LandlockLaunch {
  LandlockSpec landlock;  // the rules; block_tcp and connect_tcp_ports follow `network`
  NetworkFilter network = NetworkFilter::kBlocked;  // kBlocked, kOpen or kProxy
  std::uint16_t proxy_port = 0;                     // kProxy: the only TCP port connect() reaches
  bool env_environ = false;          // --env-environ: the command's environment is the caller's
  pid_t parent = 0;                  // --parent-pid (sbx-stage2 only): whose death ends the run
  std::vector<std::string> command;  // argv; command[0] absolute
};

// Parses a plan's argv ("SBX-STAGE2 --landlock N ... -- COMMAND...", argv[0] ignored). Error
// names the bad option; the network filter's TCP rules are set from --net and --proxy-port.
Result<LandlockLaunch> parse_landlock_argv(const std::vector<std::string>& argv);

// True when argv (argv[0] ignored) asks for Landlock mode: "--landlock" before the first "--".
bool is_landlock_argv(const std::vector<std::string>& argv);

struct LaunchOptions {
  std::vector<std::string> env;  // the command's whole environment
  std::string cwd;               // absolute; empty: stay in the caller's directory
  // The run's prepare_child (its cgroup and rlimits), called in the command's child
  // before no_new_privs: async-signal-safe, 0 or an errno (the command then does not run).
  int (*prepare_child)(void* ctx) = nullptr;
  void* prepare_child_ctx = nullptr;
  // The trusted sbx-stage2 (absolute), run as the metadata guard's emulator when the command
  // first makes a call the guard reports (run_metadata_guard). Required (every run has a
  // guard: the metadata guard, or the unix datagram guard with an unrestricted filesystem).
  std::string guard_program;
  // Filled, when set, with the unix datagram sockets the metadata guard refused, each named as
  // the call that asked ("socket(AF_UNIX, SOCK_DGRAM)"), for the run's network_refusals.
  std::vector<std::string>* unix_refusals = nullptr;
  // The command's stdin, stdout and stderr: descriptors of this process (close-on-exec or not;
  // -1: none), given to the command as 0, 1 and 2, inheritable. Where sbx's messages about the
  // run go, too (stdio[2]).
  std::array<int, 3> stdio{0, 1, 2};
  // Readable once the run is to end early (sbx_run_v2.cancel_fd; never read or closed here):
  // the supervisor then kills the command and every descendant, as when the caller dies, and
  // the run ends with 128 + SIGKILL. -1: none.
  int cancel_fd = -1;
  // Pass the signals other processes send this one (SIGINT, SIGTERM, ...) on to the command
  // (sbx_run_v2.forward_signals: `sbx exec`). False (a library run): no signalfd takes them, and
  // they stay the embedding process's own (its handler, on one of its threads that does not
  // block them, or after the run: this thread blocks every signal until the supervisor ends).
  bool forward_signals = true;
  // For tests: run `body` in the confined child instead of execve, its result being the exit
  // code. The child is then forked rather than cloned with CLONE_VM (a body may make calls the
  // supervisor must answer while it runs), so a failed step shows only as exit code 125.
  int (*body)(void* arg) = nullptr;
  void* body_arg = nullptr;
  // The confinement order's trace (linux/confine/steps.hpp, checked builds): -1 for none. Kept
  // open through the supervisor for the command's child; close-on-exec, as it must be.
  int trace_fd = -1;
};

// Runs the command (see the file comment) and returns how it ended: exit_code as the shell
// reports it (128+N for signal N), or `signal` when the supervisor itself was killed from
// outside. A step of sbx's that fails once children exist prints its message on stderr and
// returns 125 (126/127 for an execve failure, as a shell). Error when nothing was started (the
// ruleset could not be built, no fork): the caller reports it.
Result<ExitStatus> run_landlock(const LandlockLaunch& launch, const LaunchOptions& options);

// sbx-stage2 --metadata-guard SUPERVISOR-PID ROOT-COUNT: the metadata guard's emulator, started
// by the supervisor with the guard's listener at descriptor 3, the writable roots (opened
// when the run started) at 4, 5, ... and the write end of the refusal pipe after them (each
// refused unix datagram socket one line, read by run_landlock): not dumpable, ends with the
// supervisor, every capability dropped, answers the listener until no task uses the filter. Returns
// its exit code.
int run_metadata_guard(int argc, char** argv);

}  // namespace sbx::stage2
