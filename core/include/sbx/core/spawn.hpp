// Running a process: absolute-path execve, an explicit environment, stray fds closed,
// the run's stdin/stdout/stderr placed (this process's own by default), TTY inherited, signals
// forwarded (when the run says so), the run's cancel honoured, exit status mapped.
#pragma once

#include <string>
#include <vector>

#include "sbx/core/exit_codes.hpp"
#include "sbx/sdk/posix_child.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

class RunServices;  // runtime.hpp

// Children exit with the SDK toolkit's codes; sbx's own are defined in exit_codes.hpp. They
// must be the same numbers, or a report would misread a child's failure.
static_assert(kExitSbxFailure == sdk::kExitSandboxFailure);
static_assert(kExitNotExecutable == sdk::kExitNotExecutable);
static_assert(kExitNotFound == sdk::kExitNotFound);

// Starts plan.argv[0] (must be absolute) with exactly plan.env in plan.cwd, forwards SIGINT,
// SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2, SIGWINCH to it, and waits. A command that cannot be
// executed yields exit_code 127 (not found) or 126 (not executable) with a message on stderr.
// Error only when sbx could not even fork.
// Details: the child gets default signal dispositions and an empty signal mask; every fd >= 3
// is closed at exec; stdin/stdout/stderr (the run's) and the controlling terminal are given and the
// child stays in sbx's process group (no setsid), so job control and TTY programs work.
// Forwarded are signals sent to sbx with kill()/sigqueue() (also SIGCONT); signals the
// terminal generates already reach the whole foreground group and are not sent twice.
// An unusable plan.cwd yields exit_code 125 (kExitSbxFailure) with a message; the command
// does not run. Error also for a plan with an empty argv or a relative argv[0] or cwd.
// Safe to call from several threads at once; SIGCHLD must not be ignored (SIG_IGN).
// On Windows (run/spawn_win32.cpp): CreateProcessW of the drive path argv[0] (never a search)
// with plan.env and plan.cwd and the console's standard handles; the 32-bit exit code is
// passed through; no signals are forwarded.
// With `run`, the child is put under the run's limits (RunServices::prepare_child) right before
// execve, gets the run's stdio as 0-2 (RunServices::stdio_fd; made inheritable whatever flags
// they carry here), and the run is told it started (RunServices::started) once the child exists;
// once the run's cancel descriptor (RunServices::cancel_fd) is readable the child is killed
// (SIGKILL; what it started ends with the run's cgroup, where it has one). Messages of sbx's own
// ("command not found") go to the run's stderr. A run whose RunServices::forward_signals is
// false (a library run) forwards nothing: no handler is installed, so the embedding process's
// own dispositions stay in force for the whole run (its SIGINT handler runs, its default action
// happens), and every thread's mask is as it was outside the few instructions of the vfork.
Result<ExitStatus> spawn_and_wait(const ExecPlan& plan, RunServices* run = nullptr);

// Finds `command` the way a shell would (absolute, relative to cwd, or through PATH from `env`)
// and returns an absolute path; Error says "command not found".
Result<std::string> resolve_command(const std::string& command, const std::string& cwd,
                                    const std::vector<std::string>& env);

// Removes LD_*, DYLD_* and glibc's unsafe variables (GCONV_PATH, GLIBC_TUNABLES, ...):
// used for the environment of helpers such as bwrap and sbx-stage2.
std::vector<std::string> strip_unsafe_env(const std::vector<std::string>& env);

// Hardens the sbx process itself at start: not dumpable, no core files, LD_* removed from
// its own environment, and a closed 0, 1 or 2 held by a close-on-exec /dev/null for the
// process's life, which no descriptor of sbx's can then take (the command still gets none
// there: core/src/run/standard_fds.hpp).
void harden_current_process();

// The names of the variables harden_current_process removed from this process's environment
// (its first call's), in environ order; empty when it was not called. A front end that hands
// its environment to a run adds them as bare names (no '='), which every run drops and lists
// (filter_environment): the command never gets them, and a report naming what a command did
// not get names them too.
const std::vector<std::string>& environment_removed_at_start();

}  // namespace sbx
