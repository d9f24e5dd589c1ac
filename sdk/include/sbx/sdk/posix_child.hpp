// The POSIX child toolkit: what every process that sbx, sbx-stage2 or a plugin starts goes
// through between fork (or vfork) and execve, the exit codes that tell sbx's own failures from
// the command's, and a short-helper runner built from those pieces. Header-only, so a plugin
// uses it without linking libsbx (the plugin boundary, docs/ARCHITECTURE.md).
//
// The child side (namespace posix_child, functions marked "child side") is async-signal-safe
// and writes nothing but its own stack and the kernel's per-process state: it may run after
// vfork in a multi-threaded parent (an agent embedding libsbx), whose other threads may hold
// the malloc or stdio locks and whose memory the vforked child shares until execve. So the
// child side never allocates, never throws, never touches std::string; the parent prepares
// argv/envp (c_string_array) and every descriptor before forking.
//
// The usual order in the child: reset_signal_dispositions, descriptor placement
// (place_fd / close_on_exec_all_but), chdir and the like, unblock_all_signals, exec_or_fail.
// Every failure goes to the parent as a Failure (step + errno) over a CLOEXEC pipe: a
// successful execve closes it, so the parent reads EOF; otherwise exactly one Failure.
#pragma once

#include <cerrno>

namespace sbx::sdk {

// Exit codes of the shell convention, which sbx keeps: 125 means sbx (or a backend, or
// sbx-stage2) failed and the command did not run; 126 and 127 mean the command itself could
// not be executed. No status of a helper (bwrap's 1, say) may pass for the command's.
inline constexpr int kExitSandboxFailure = 125;
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

// The exit code for an execve that failed with `error`: 127 when there is no such program
// (ENOENT, ENOTDIR), 126 for every other reason (permissions, not a binary, ...).
constexpr int exit_code_for_exec_error(int error) noexcept {
  return error == ENOENT || error == ENOTDIR ? kExitNotFound : kExitNotExecutable;
}

}  // namespace sbx::sdk

#if !defined(_WIN32)

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::sdk {

namespace posix_child {

// Which step of the child failed. The spawner turns it into its message; the exit code the
// child left with is already the right one (kExitSandboxFailure for every step but kExec).
enum class Step : int { kSetup = 1, kChdir = 2, kLimits = 3, kExec = 4 };

// What the child writes to the report pipe when a step fails.
struct Failure {
  Step step;
  int error;  // errno of the failed call
};

// ---------------------------------------------------------------------------------------------
// Child side: async-signal-safe only.

// Child side. Reports `step` with the current errno on `report_fd` and exits with `exit_code`.
[[noreturn]] inline void fail(int report_fd, Step step, int exit_code) noexcept {
  const Failure failure{step, errno};
  // Best effort: if this write fails, the parent still sees the exit code.
  [[maybe_unused]] const ssize_t written = ::write(report_fd, &failure, sizeof failure);
  ::_exit(exit_code);
}

// Child side. Every signal back to SIG_DFL: execve keeps SIG_IGN, so a parent that ignores
// SIGPIPE or SIGINT (common in agents and background jobs) would pass that on, and the parent's
// own handlers (signal forwarding) must not run in a child that shares its memory.
inline void reset_signal_dispositions() noexcept {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);  // fails harmlessly for reserved real-time signals
  }
}

// Child side. An empty signal mask, which execve would otherwise pass on. Called last before
// execve: a signal that arrived since fork then acts with its default disposition, exactly as
// if it had arrived a moment after execve.
inline void unblock_all_signals() noexcept {
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
}

namespace detail {

#if defined(__linux__)
// Marks every descriptor >= 3 close-on-exec by walking /proc/self/fd with raw getdents64
// (opendir would allocate). The records are read by offset (linux_dirent64: d_reclen at 16,
// d_name at 19), so no libc's dirent64 declaration is needed. False when /proc is unavailable.
inline bool cloexec_fds_from_proc() noexcept {
  const int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  constexpr std::size_t kReclenOffset = 16;
  constexpr std::size_t kNameOffset = 19;
  alignas(8) char buffer[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, buffer, sizeof buffer);
    if (n <= 0) break;
    for (std::size_t offset = 0; offset < static_cast<std::size_t>(n);) {
      unsigned short reclen = 0;
      std::memcpy(&reclen, buffer + offset + kReclenOffset, sizeof reclen);
      const char* p = buffer + offset + kNameOffset;
      offset += reclen;
      if (reclen == 0) break;              // malformed: never loop forever
      if (*p < '0' || *p > '9') continue;  // "." and ".."
      int fd = 0;
      for (; *p >= '0' && *p <= '9'; ++p) fd = fd * 10 + (*p - '0');
      if (fd >= 3 && fd != dir) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
  ::close(dir);
  return true;
}
#endif

// Marks every descriptor >= 3 close-on-exec: close_range (Linux >= 5.11), else /proc/self/fd,
// else every number below the open-files limit.
inline void cloexec_every_fd_from_3() noexcept {
#if defined(__linux__) && defined(SYS_close_range)
  constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, <linux/close_range.h>
  if (::syscall(SYS_close_range, 3U, ~0U, kCloseRangeCloexec) == 0) return;
#endif
#if defined(__linux__)
  if (cloexec_fds_from_proc()) return;
#endif
  struct rlimit limit {};
  rlim_t max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    max_fd = limit.rlim_cur;
  for (rlim_t fd = 3; fd < max_fd; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
}

}  // namespace detail

// Child side. Every descriptor >= 3 is marked close-on-exec except the `count` in `kept`, which
// are made inheritable; false (errno set) when one of those cannot be. Stray descriptors (an
// agent's sockets, log files, another command's pipes) must not leak into what runs: they could
// give it access the policy does not grant, or keep a pipe open so its reader never sees EOF.
// Marked rather than closed so that the report pipe stays usable until execve succeeds.
inline bool close_on_exec_all_but(const int* kept, std::size_t count) noexcept {
  detail::cloexec_every_fd_from_3();
  for (std::size_t i = 0; i < count; ++i) {
    if (::fcntl(kept[i], F_SETFD, 0) != 0) return false;
  }
  return true;
}

// Child side. A close-on-exec duplicate of `fd` numbered `lowest` or above (-1 stays -1; -1 with
// errno on failure). Before descriptors are placed at fixed numbers, every source is moved above
// them first: any source may currently *be* one of the target numbers.
inline int move_above(int fd, int lowest) noexcept {
  return fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, lowest);
}

// Child side. Makes `from` available as `to` across execve (dup2, which clears close-on-exec on
// the copy; or, when they are already the same number, clearing the flag). False on failure.
inline bool place_fd(int from, int to) noexcept {
  if (from == to) return ::fcntl(to, F_SETFD, 0) == 0;
  return ::dup2(from, to) == to;
}

// Child side. Gives the process sources[i] as its descriptor i (0 stdin, 1 stdout, 2 stderr),
// inheritable whatever flags the source carries: FD_CLOEXEC belongs to the descriptor, not to
// the open file (fcntl(2)), and dup2(2) clears it on the copy, so a caller that marked its own
// 0-2 close-on-exec (Node does, at start-up) still hands them on. -1 closes i: the command has
// nothing there. Every source is first moved to `lowest` or above (any source may *be* one of
// 0-2, a pipe made while the caller's own 0 was closed, or a number placed later), so call it
// before anything is placed at fixed numbers. False (errno set) on failure.
inline bool place_standard_fds(const int* sources, int lowest) noexcept {
  int moved[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    moved[i] = move_above(sources[i], lowest);
    if (sources[i] >= 0 && moved[i] < 0) return false;
  }
  for (int i = 0; i < 3; ++i) {
    if (moved[i] < 0) {
      ::close(i);
      continue;
    }
    if (::dup2(moved[i], i) != i) return false;
    ::close(moved[i]);
  }
  return true;
}

// Child side. execve(argv[0], argv, envp), and if it returns, reports Step::kExec with 127 or
// 126 (exit_code_for_exec_error). argv[0] is an absolute path: nothing searches PATH.
[[noreturn]] inline void exec_or_fail(int report_fd, char* const argv[],
                                      char* const envp[]) noexcept {
  ::execve(argv[0], argv, envp);
  fail(report_fd, Step::kExec, exit_code_for_exec_error(errno));
}

// ---------------------------------------------------------------------------------------------
// Parent side: may allocate.

// The NULL-terminated char* array execve takes, pointing into `strings` (which must outlive
// it). Built before forking: the child may not allocate.
inline std::vector<char*> c_string_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  // execve takes char* const[] but never writes through it.
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Writes all of `data` to `fd` (retrying on EINTR and short writes); false when a write fails
// (errno set) or writes nothing. For sbx's own messages on the command's stderr and reports on
// a caller's descriptor: a short write would cut a line another program parses.
inline bool write_all(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The report pipe: both ends close-on-exec, so the write end vanishes at a successful execve
// (that EOF is the "exec worked" signal) and neither end leaks into other children spawned
// concurrently. False (errno set) on failure.
inline bool open_report_pipe(int fds[2]) noexcept { return ::pipe2(fds, O_CLOEXEC) == 0; }

// Reads the child's report from the pipe's read end (after closing the parent's write end).
// True with `failure` filled when the child reported one; false at EOF, i.e. execve succeeded
// (or the child died without a word, which its exit status then tells).
inline bool read_failure(int fd, Failure& failure) noexcept {
  for (;;) {
    const ssize_t n = ::read(fd, &failure, sizeof failure);
    if (n == static_cast<ssize_t>(sizeof failure)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Reaps `pid` (retrying on EINTR) into `status`; false with errno set when waitpid fails.
inline bool reap(pid_t pid, ExitStatus& status) noexcept {
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  status = ExitStatus{};
  if (WIFSIGNALED(wait_status)) {
    status.signal = WTERMSIG(wait_status);
  } else {
    status.exit_code = WEXITSTATUS(wait_status);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Running a short helper (a probe's trial, `tool --version`) and capturing its output. Not for
// the sandboxed command itself: that goes through the host's spawn service.

struct CaptureOptions {
  std::vector<std::string> env;  // exactly this environment (empty: none)
  std::string cwd;               // absolute directory to run in; empty: stay where the caller is
  int timeout_ms = 5000;         // killed with SIGKILL after this long
  std::size_t max_output = 64 * 1024;  // bytes of output kept; the rest is read and dropped
};

struct Captured {
  int exit_code = -1;      // the helper's exit status; -1 when it died of a signal or timed out
  int signal = 0;          // the signal that ended it, or 0
  bool timed_out = false;  // killed at the deadline
  Step failed_step{};      // meaningful when failed_error != 0
  int failed_error = 0;    // errno of the child-side step that failed (exec included), or 0
  std::string output;      // stdout and stderr interleaved, at most max_output bytes
};

namespace detail {

// What the capture child needs, all prepared before fork (child side reads only).
struct CaptureChild {
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: stay
  int null_fd;      // /dev/null, becomes stdin
  int out_fd;       // write end of the output pipe, becomes stdout and stderr
  int report_fd;    // write end of the report pipe
};

// Child side.
[[noreturn]] inline void run_capture_child(const CaptureChild& c) noexcept {
  reset_signal_dispositions();
  // Above 2 first: the sources may be 0, 1 or 2 themselves (a parent with closed stdio).
  const int report = move_above(c.report_fd, 3);
  if (report < 0) fail(c.report_fd, Step::kSetup, kExitSandboxFailure);
  const int null_fd = move_above(c.null_fd, 3);
  const int out = move_above(c.out_fd, 3);
  if (null_fd < 0 || out < 0) fail(report, Step::kSetup, kExitSandboxFailure);
  if (!place_fd(null_fd, 0) || !place_fd(out, 1) || !place_fd(out, 2))
    fail(report, Step::kSetup, kExitSandboxFailure);
  if (!close_on_exec_all_but(nullptr, 0)) fail(report, Step::kSetup, kExitSandboxFailure);
  if (c.cwd != nullptr && ::chdir(c.cwd) != 0) fail(report, Step::kChdir, kExitSandboxFailure);
  unblock_all_signals();
  exec_or_fail(report, c.argv, c.envp);
}

inline long monotonic_ms() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// Reads `fd` until EOF or the deadline (false then), keeping at most `max_output` bytes.
inline bool drain_until(int fd, long deadline_ms, std::size_t max_output, std::string& output) {
  char buffer[4096];
  for (;;) {
    const long left = deadline_ms - monotonic_ms();
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return true;  // cannot watch it: let waitpid tell the outcome
    if (ready == 0) return false;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    const std::size_t room = max_output - std::min(max_output, output.size());
    output.append(buffer, std::min(static_cast<std::size_t>(n), room));
  }
}

// Closes every descriptor in the list that is open (>= 0).
inline void close_all(std::initializer_list<int> fds) noexcept {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

}  // namespace detail

// Runs argv (argv[0] absolute; never searched in PATH) with exactly options.env, stdin from
// /dev/null, stdout and stderr captured, every other descriptor closed at exec and default
// signal dispositions and mask; kills it at the deadline. Error only when it could not be
// started at all (no pipe, no fork); a child-side failure is reported in failed_step /
// failed_error with exit code 125, 126 or 127. Signals stay blocked in this thread across fork,
// so no handler of the caller ever runs in the child.
inline Result<Captured> run_capture(const std::vector<std::string>& argv,
                                    const CaptureOptions& options) {
  if (argv.empty() || argv.front().empty() || argv.front().front() != '/')
    return Error{"run_capture: argv[0] must be an absolute path"};
  if (!options.cwd.empty() && options.cwd.front() != '/')
    return Error{"run_capture: cwd must be an absolute path"};
  const std::vector<char*> c_argv = c_string_array(argv);
  const std::vector<char*> c_env = c_string_array(options.env);
  int out[2] = {-1, -1};
  int report[2] = {-1, -1};
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::pipe2(out, O_CLOEXEC) != 0 || !open_report_pipe(report)) {
    const int error = errno;
    detail::close_all({null_fd, out[0], out[1], report[0], report[1]});
    return Error{std::string("run_capture: cannot prepare descriptors: ") + std::strerror(error)};
  }
  const detail::CaptureChild child{
      c_argv.data(), c_env.data(), options.cwd.empty() ? nullptr : options.cwd.c_str(),
      null_fd,       out[1],       report[1]};
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) detail::run_capture_child(child);
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  detail::close_all({null_fd, out[1], report[1]});
  if (pid < 0) {
    detail::close_all({out[0], report[0]});
    return Error{std::string("run_capture: fork failed: ") + std::strerror(fork_error)};
  }
  Captured result;
  Failure failure{};
  if (read_failure(report[0], failure)) {
    result.failed_step = failure.step;
    result.failed_error = failure.error;
  }
  ::close(report[0]);
  const long deadline = detail::monotonic_ms() + options.timeout_ms;
  if (!detail::drain_until(out[0], deadline, options.max_output, result.output)) {
    result.timed_out = true;
    ::kill(pid, SIGKILL);
  }
  ::close(out[0]);
  ExitStatus status;
  if (!reap(pid, status))
    return Error{std::string("run_capture: waitpid failed: ") + std::strerror(errno)};
  result.signal = status.signal;
  if (status.signal == 0 && !result.timed_out) result.exit_code = status.exit_code;
  return result;
}

}  // namespace posix_child
}  // namespace sbx::sdk

#endif  // !_WIN32
