// Process spawning for sbx (see spawn.hpp for the contract).
//
// The child is started with vfork + execve by absolute path so that nothing between sbx and the
// command consults PATH or the caller's environment. Between vfork and execve the child runs
// only async-signal-safe code that writes nothing but its own stack: it shares the parent's
// memory (the parent may be multi-threaded, an embedding agent, and other threads keep running),
// and a lock held by another thread would deadlock malloc/stdio in the child.
//
// Why vfork and not fork: fork copies the page tables of a process that has mapped libsbx,
// Boost and the plugins, and then write-faults every page either side touches; on a VM that
// is several milliseconds per command (bench/README.md). vfork shares the memory until execve,
// as posix_spawn does; it is safe here because every signal is blocked in the child until its
// dispositions are back to SIG_DFL, so no handler of the parent ever runs on the shared memory.
#include "sbx/core/spawn.hpp"

#include "run/signal_forwarding.hpp"
#include "run/standard_fds.hpp"
#include "sbx/core/run_limits.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/sdk/posix_child.hpp"

// POSIX only: Windows compiles run/spawn_win32.cpp instead (core/cross/libsbx.cmake).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;  // NOLINT: POSIX global

namespace sbx {
namespace {

// ---------------------------------------------------------------------------------------------
// Signal forwarding.
//
// Signals somebody sends to sbx explicitly (kill(1), a supervisor's SIGTERM, an agent's
// SIGINT on timeout) must reach the command, or the command would outlive the request to stop
// it. Signals the terminal generates (^C, ^\, hangup, window size change) are different: the
// kernel already delivers them to the whole foreground process group, which contains the
// command because sbx does not call setsid(). Forwarding those too would deliver them twice
// (a command that counts ^C presses, or a shell that exits on the second one, would misbehave).
// The kernel marks terminal-generated signals with si_code SI_KERNEL (> 0); kill(), tkill()
// and sigqueue() give si_code <= 0 (SI_USER, SI_TKILL, SI_QUEUE). So only si_code <= 0 is
// forwarded.
//
// Limitation, accepted: a kill() aimed at the whole process group (kill -TERM -PGID, or the
// shell's SIGCONT on `fg`) also looks like SI_USER and reaches the command twice. For SIGCONT
// that is harmless; for the others it is the caller's explicit choice to signal the group.
//
// Only for a run that asks (RunServices::forward_signals: `sbx exec`). In a library the
// signals sent to the process are the embedding program's: a handler installed here would
// replace its own for the whole run (an agent's Ctrl-C would stop the command, never the
// agent), so a library run installs none and is ended through its cancel descriptor.
//
// The handler's state is shared with the isolated exec of third-party plugins
// (signal_forwarding.hpp).
using signal_forwarding::kSignals;

// Children currently being waited for, by any thread. A fixed array of lock-free atomics so
// the signal handler can read it without locks or allocation. A child that finds no free slot
// (more than kMaxChildren concurrent spawns) still runs; it just does not get forwarded signals.
constexpr std::size_t kMaxChildren = 256;
std::array<std::atomic<pid_t>, kMaxChildren> g_children{};

// A forked child constructs it afresh (reset_in_child): its copy may be locked by a thread that
// does not exist in the child, and would never be unlocked.
std::mutex g_handlers_mutex;
int g_handler_users = 0;  // guarded by g_handlers_mutex
std::array<struct sigaction, kSignals.size()> g_previous_actions{};

void forward_signal(int signal_number, siginfo_t* info, void* /*context*/) {
  if (info != nullptr && info->si_code > 0) return;  // terminal/kernel generated: see above
  const int saved_errno = errno;  // the interrupted code may be about to read errno
  for (const std::atomic<pid_t>& child : g_children) {
    const pid_t pid = child.load(std::memory_order_relaxed);
    if (pid > 0) kill(pid, signal_number);
  }
  errno = saved_errno;
}

}  // namespace

namespace signal_forwarding {

void install() {
  std::lock_guard<std::mutex> lock(g_handlers_mutex);
  if (g_handler_users++ > 0) return;
  struct sigaction action {};
  action.sa_sigaction = forward_signal;
  // SA_RESTART: the parent's read()/waitpid() continue after a forwarded signal.
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < kSignals.size(); ++i)
    sigaction(kSignals[i], &action, &g_previous_actions[i]);
}

void remove() {
  std::lock_guard<std::mutex> lock(g_handlers_mutex);
  if (--g_handler_users > 0) return;
  for (std::size_t i = 0; i < kSignals.size(); ++i)
    sigaction(kSignals[i], &g_previous_actions[i], nullptr);
}

std::atomic<pid_t>* add(pid_t pid) {
  for (std::atomic<pid_t>& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return &slot;
  }
  return nullptr;
}

void reset_in_child() noexcept {
  for (std::atomic<pid_t>& slot : g_children) slot.store(0);
  // std::mutex has a trivial destructor here (a pthread mutex): nothing is lost by not running it.
  new (&g_handlers_mutex) std::mutex();
  g_handler_users = 0;
}

}  // namespace signal_forwarding

namespace {

// ---------------------------------------------------------------------------------------------
// The child side: only the async-signal-safe pieces of the POSIX child toolkit
// (sbx/sdk/posix_child.hpp), on data prepared before vfork.

namespace child = sdk::posix_child;

[[noreturn]] void run_child(char* const argv[], char* const envp[], const char* cwd, int report_fd,
                            const int* stdio, const RunServices* run) {
  child::reset_signal_dispositions();
  const int report = child::move_above(report_fd, 3);
  if (report < 0) child::fail(report_fd, child::Step::kSetup, kExitSbxFailure);
  // The command's stdin, stdout and stderr: the run's (RunServices::stdio_fd), inheritable
  // whatever flags the caller left on them (Node marks its own 0-2 close-on-exec).
  if (!child::place_standard_fds(stdio, 3))
    child::fail(report, child::Step::kSetup, kExitSbxFailure);
  // Only stdin, stdout and stderr reach the command; the report pipe is close-on-exec already.
  child::close_on_exec_all_but(nullptr, 0);
  if (chdir(cwd) != 0) child::fail(report, child::Step::kChdir, kExitSbxFailure);
  // The run's cgroup and rlimits (run_limits.hpp), when the spawn is part of a run: last
  // before execve, so they bind what runs and nothing of sbx's own setup.
  if (const int error = run != nullptr ? run->prepare_child() : 0; error != 0) {
    errno = error;
    child::fail(report, child::Step::kLimits, kExitSbxFailure);
  }
  child::unblock_all_signals();
  child::exec_or_fail(report, argv, envp);
}

// ---------------------------------------------------------------------------------------------
// The parent side.

std::string wait_error(const char* call) {
  const int error = errno;
  std::string text = std::string(call) + " failed: " + std::strerror(error);
  if (error == ECHILD)
    text += " (is SIGCHLD ignored in this process? sbx must be able to wait for its child)";
  return text;
}

// Until `pid` has ended (left unreaped), killing it once `cancel_fd` becomes readable (the run's
// control: RunServices::cancel_fd). Only the child itself is killed: an unsandboxed command's
// own children end with the run's cgroup, where it has one (LimitedRun::finish). Returns early
// on a waitid error, which wait_for then reports.
void await_end_or_cancel(pid_t pid, int cancel_fd) {
#ifdef __linux__
  // A pidfd (Linux 5.3) says when it has ended; without one, a short poll looks again.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  const int pidfd = -1;
#endif
  bool killed = false;
  for (;;) {
    siginfo_t ended{};
    if (waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT) == 0) {
      if (ended.si_pid == pid) break;
    } else if (errno != EINTR) {
      break;
    }
    std::array<pollfd, 2> fds{{{killed ? -1 : cancel_fd, POLLIN, 0}, {pidfd, POLLIN, 0}}};
    if (poll(fds.data(), fds.size(), pidfd >= 0 ? -1 : 50) < 0 && errno != EINTR) break;
    if (!killed && fds[0].revents != 0) {
      kill(pid, SIGKILL);  // not reaped yet: the pid is still the child's
      killed = true;
    }
  }
  if (pidfd >= 0) close(pidfd);
}

// Waits for the child to end, then stops forwarding to it, and only then reaps it: once reaped,
// its pid may be reused by an unrelated process, which a late forwarded signal must not hit.
Result<ExitStatus> wait_for(pid_t pid, std::atomic<pid_t>* slot, int cancel_fd) {
  if (cancel_fd >= 0) await_end_or_cancel(pid, cancel_fd);
  siginfo_t ended{};
  while (waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOWAIT) < 0) {
    if (errno != EINTR) return Error{wait_error("waitid")};
  }
  if (slot != nullptr) slot->store(0);
  ExitStatus result;
  if (!child::reap(pid, result)) return Error{wait_error("waitpid")};
  return result;
}

// sbx's own message about the run, on the command's stderr (where a shell would say "command
// not found"); nowhere when the command has none.
void write_message(int fd, const std::string& message) {
  if (fd < 0) return;
  if (fd == 2) std::fflush(stderr);
  (void)child::write_all(fd, message);
}

// Turns a failure the child reported into the shell's exit code and a message on the command's
// stderr (`err_fd`).
ExitStatus report_failure(const ExecPlan& plan, const child::Failure& failure, int err_fd) {
  const std::string reason = std::strerror(failure.error);
  std::string message;
  ExitStatus status;
  if (failure.step == child::Step::kSetup) {
    status.exit_code = kExitSbxFailure;
    message = "sbx: cannot give the command its stdin, stdout and stderr: " + reason;
  } else if (failure.step == child::Step::kChdir) {
    status.exit_code = kExitSbxFailure;
    message = "sbx: cannot change directory to '" + plan.cwd + "': " + reason + " (check --cwd)";
  } else if (failure.step == child::Step::kLimits) {
    status.exit_code = kExitSbxFailure;
    message = "sbx: cannot put the command under the run's resource limits: " + reason;
  } else if (sdk::exit_code_for_exec_error(failure.error) == kExitNotFound) {
    status.exit_code = kExitNotFound;
    message = "sbx: " + plan.argv[0] + ": command not found";
  } else {
    status.exit_code = kExitNotExecutable;
    message = "sbx: " + plan.argv[0] + ": not executable: " + reason;
  }
  message += '\n';
  write_message(err_fd, message);
  return status;
}

Status validate_plan(const ExecPlan& plan) {
  if (plan.argv.empty() || plan.argv[0].empty()) return Error{"exec plan has an empty argv"};
  if (plan.argv[0].front() != '/')
    return Error{"exec plan's argv[0] '" + plan.argv[0] +
                 "' is not an absolute path (resolve it with resolve_command first)"};
  if (plan.cwd.empty() || plan.cwd.front() != '/')
    return Error{"exec plan's cwd '" + plan.cwd + "' is not an absolute path"};
  return {};
}

// Whether the run passes the signals sent to this process on to its command (the CLI's, and a
// spawn without a run, do).
bool forwards(const RunServices* run) { return run == nullptr || run->forward_signals(); }

// Forks and execs; the child's pid is registered for forwarding before any signal this thread
// receives can be handled, because every signal stays blocked in this thread until then.
// (A signal the kernel hands to another thread of an embedding process in that window of a
// few microseconds finds no child and is not forwarded.) Without `forward` no handler is
// installed at all: the process's dispositions are the embedding program's throughout, and a
// signal sent to it while the command runs is its own (the block around vfork only delays one
// aimed at this thread by those microseconds).
Result<ExitStatus> fork_exec_wait(const ExecPlan& plan, int report_read, int report_write,
                                  RunServices* run) {
  std::vector<char*> argv = child::c_string_array(plan.argv);
  std::vector<char*> envp = child::c_string_array(plan.env);
  // Read in the child, so prepared here (the child may not call into the run).
  std::array<int, 3> stdio{0, 1, 2};
  if (run != nullptr) stdio = {run->stdio_fd(0), run->stdio_fd(1), run->stdio_fd(2)};
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  // Block first, then install: a signal arriving before the child is registered stays pending
  // in this thread and is forwarded once the mask is restored, instead of being swallowed by a
  // handler with no child to forward to.
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  // (No local lives across vfork for this: the child shares this frame until execve.)
  if (forwards(run)) signal_forwarding::install();
  const pid_t pid = vfork();
  if (pid == 0)
    run_child(argv.data(), envp.data(), plan.cwd.c_str(), report_write, stdio.data(), run);
  const int fork_errno = errno;  // meaningful only when pid < 0
  const bool forward = forwards(run);
  std::atomic<pid_t>* slot = forward && pid > 0 ? signal_forwarding::add(pid) : nullptr;
  // Forwarding, this thread takes the forwarded signals while it waits, whatever its mask was:
  // a library's run thread blocks every signal, and a caller that asked for forwarding blocks
  // them on its own threads so that they come here (sbx.h, SBX_EXEC_FORWARD_SIGNALS).
  sigset_t waiting = previous;
  if (forward) {
    for (int sig : kSignals) sigdelset(&waiting, sig);
  }
  pthread_sigmask(SIG_SETMASK, &waiting, nullptr);
  close(report_write);
  Result<ExitStatus> result = Error{std::string("vfork failed: ") + std::strerror(fork_errno)};
  if (pid > 0) {
    // The child has exec'd (or failed): what the run does alongside the command starts now.
    if (run != nullptr) run->started();
    child::Failure failure{};
    const bool failed = child::read_failure(report_read, failure);
    result = wait_for(pid, slot, run != nullptr ? run->cancel_fd() : -1);
    if (failed && result.ok()) result = report_failure(plan, failure, stdio[2]);
  }
  if (slot != nullptr) slot->store(0);  // already cleared unless waiting failed
  if (forward) {
    // Blocked again before the handlers go: one still pending then acts on its own disposition
    // once the caller unblocks it, as it would have without the run.
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    signal_forwarding::remove();
  }
  return result;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string env_value(const std::vector<std::string>& env, std::string_view name,
                      std::string_view fallback) {
  for (const std::string& entry : env) {
    if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 &&
        entry[name.size()] == '=')
      return entry.substr(name.size() + 1);
  }
  return std::string(fallback);
}

std::string join_path(const std::string& directory, const std::string& name) {
  if (directory.empty() || directory == "/") return "/" + name;
  return directory.back() == '/' ? directory + name : directory + "/" + name;
}

}  // namespace

Result<ExitStatus> spawn_and_wait(const ExecPlan& plan, RunServices* run) {
  if (Status valid = validate_plan(plan); !valid.ok()) return valid.failure();
  int pipe_fds[2];
  if (!sdk::posix_child::open_report_pipe(pipe_fds))
    return Error{std::string("cannot create a pipe to start the command: ") + std::strerror(errno)};
  Result<ExitStatus> result = fork_exec_wait(plan, pipe_fds[0], pipe_fds[1], run);
  close(pipe_fds[0]);
  return result;
}

Result<std::string> resolve_command(const std::string& command, const std::string& cwd,
                                    const std::vector<std::string>& env) {
  if (command.empty()) return Error{"command not found: the command is empty"};
  if (cwd.empty() || cwd.front() != '/')
    return Error{"cannot resolve '" + command + "': cwd '" + cwd + "' is not absolute"};
  // Like a shell: a name containing '/' is a path (relative to cwd) and PATH is not searched.
  if (command.find('/') != std::string::npos) {
    std::string_view relative(command);
    while (relative.substr(0, 2) == "./") relative.remove_prefix(2);  // "./x" is "<cwd>/x"
    const std::string path =
        command.front() == '/' ? command : join_path(cwd, std::string(relative));
    struct stat st {};
    // Returned even when not executable, so that running it reports 126 like a shell does.
    if (stat(path.c_str(), &st) == 0) return path;
    return Error{"command not found: " + command + " (no such file: " + path + ")"};
  }
  const std::string search = env_value(env, "PATH", "/usr/bin:/bin");
  std::size_t begin = 0;
  while (begin <= search.size()) {
    std::size_t end = search.find(':', begin);
    if (end == std::string::npos) end = search.size();
    std::string directory = search.substr(begin, end - begin);
    // POSIX: an empty PATH element means the current directory; relative ones are under cwd.
    if (directory.empty()) directory = cwd;
    if (directory.front() != '/') directory = join_path(cwd, directory);
    const std::string candidate = join_path(directory, command);
    if (is_executable_file(candidate)) return candidate;
    begin = end + 1;
  }
  return Error{"command not found: " + command + " (searched PATH=" + search + ")"};
}

std::vector<std::string> strip_unsafe_env(const std::vector<std::string>& env) {
  // glibc's UNSECURE_ENVVARS (what ld.so drops for setuid programs): each changes how libc or
  // the loader behaves (load a library, read a config or locale file an attacker chose).
  // TMPDIR is on glibc's list but deliberately kept: it only steers temp-file placement,
  // our helpers are not privileged beyond the caller, and the command (which inherits the
  // helper's environment through bwrap/sbx-stage2) needs it for ":tmpdir".
  static constexpr std::string_view kUnsafeNames[] = {
      "GCONV_PATH",   "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES",      "LOCALDOMAIN", "LOCPATH",
      "MALLOC_TRACE", "NIS_PATH",    "NLSPATH",        "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR"};
  // Prefixes: the dynamic loaders' variables (Linux LD_*, macOS DYLD_*) and glibc's malloc
  // tuning aliases (MALLOC_CHECK_, MALLOC_PERTURB_, MALLOC_ARENA_MAX, ...).
  static constexpr std::string_view kUnsafePrefixes[] = {"LD_", "DYLD_", "MALLOC_"};
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const std::string& entry : env) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) continue;  // not KEY=VALUE: meaningless
    const std::string_view name(entry.data(), equals);
    bool unsafe = false;
    for (std::string_view unsafe_name : kUnsafeNames) unsafe = unsafe || name == unsafe_name;
    for (std::string_view prefix : kUnsafePrefixes)
      unsafe = unsafe || name.substr(0, prefix.size()) == prefix;
    if (!unsafe) out.push_back(entry);
  }
  return out;
}

namespace {
std::vector<std::string>& removed_at_start() {
  static std::vector<std::string> names;
  return names;
}
}  // namespace

const std::vector<std::string>& environment_removed_at_start() { return removed_at_start(); }

void harden_current_process() {
  // sbx's own descriptors never take a closed 0, 1 or 2, for as long as sbx runs: a command
  // that inherits them would get it as its stdin, stdout or stderr (standard_fds.hpp).
  hold_standard_descriptors_for_life();
#ifdef __linux__
  // Not dumpable: another process of the same user cannot ptrace sbx or read its memory via
  // /proc while it holds policy state and plugin code.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
  // No core files: a crash must not write sbx's memory to a file in the cwd.
  struct rlimit no_core {};
  setrlimit(RLIMIT_CORE, &no_core);
  // LD_* must not reach anything sbx starts by inheriting environ (e.g. a helper that does not
  // get an explicit environment). Names are collected first: unsetenv() edits environ.
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.substr(0, 3) == "LD_") names.emplace_back(text.substr(0, text.find('=')));
  }
  for (const std::string& name : names) unsetenv(name.c_str());
  if (removed_at_start().empty()) removed_at_start() = std::move(names);
}

}  // namespace sbx
