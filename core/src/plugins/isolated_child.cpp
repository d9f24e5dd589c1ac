// A call of plugin code in a forked child of sbx (isolated_child.hpp). POSIX only.
#ifndef _WIN32

#include "plugins/isolated_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "sbx/core/exit_codes.hpp"

#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

namespace sbx::plugins::isolated {

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGSYS:
      return "SIGSYS";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::string duration_text(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
  return std::to_string(duration.count()) + " ms";
}

bool write_all(int fd, std::string_view data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool open_cloexec_pipe(int fds[2]) {
  // Close-on-exec: whatever the child executes does not keep the pipe open (nor does anything
  // another thread of an embedder starts meanwhile).
#ifdef __linux__
  return ::pipe2(fds, O_CLOEXEC) == 0;
#else
  if (::pipe(fds) != 0) return false;
  for (int i = 0; i < 2; ++i) ::fcntl(fds[i], F_SETFD, FD_CLOEXEC);
  return true;
#endif
}

int open_pidfd(pid_t pid) {
#if defined(__linux__) && defined(SYS_pidfd_open)
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

int remaining_ms(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left) + 1;  // +1: never wake up just before it
}

bool die_with_parent(pid_t parent) {
#ifdef __linux__
  // A child that hangs must not outlive an sbx that was killed meanwhile (prctl(2): the signal
  // comes when the forking thread ends); a parent gone before the prctl is seen by getppid.
  return ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0 && ::getppid() == parent;
#else
  return ::getppid() == parent;
#endif
}

namespace {

// The child: the work, its answer, _exit. Never returns.
[[noreturn]] void run_child(const std::function<std::string()>& work, int out, pid_t parent) {
  if (!die_with_parent(parent)) ::_exit(kExitSbxFailure);
  try {
    const std::string answer = work();
    const bool written = write_all(out, answer);
    // End of file now, so the parent reads the answer while this process is torn down.
    ::close(out);
    ::_exit(written ? 0 : 124);
  } catch (...) {
    ::_exit(123);
  }
}

// What the child wrote, until end of file, the deadline or the size limit.
void read_until_eof(int in, Clock::time_point deadline, std::size_t max_bytes, Answer& out) {
  // Small: an answer is usually a few kilobytes, and every 4 KiB page of a stack buffer is
  // touched (stack clash probes) and costs a page fault the first time, on every sbx run.
  char buffer[8192];
  for (;;) {
    const int wait = remaining_ms(deadline);
    if (wait == 0) {
      out.timed_out = true;
      return;
    }
    pollfd fd{in, POLLIN, 0};
    const int ready = ::poll(&fd, 1, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked above
    const ssize_t n = ::read(in, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // end of file (or an error: no more to read either way)
    out.data.append(buffer, static_cast<std::size_t>(n));
    if (out.data.size() > max_bytes) {
      out.too_large = true;
      return;
    }
  }
}

}  // namespace

// The child normally exits right after closing the pipe; until it has, wait on a pidfd (or,
// without one, look again after growing pauses).
std::optional<int> reap(pid_t pid, Clock::time_point deadline, bool& timed_out) {
  if (timed_out) ::kill(pid, SIGKILL);
  int pidfd = -2;  // not opened yet: the first look usually finds the child gone already
  auto pause = std::chrono::microseconds(20);
  std::optional<int> result;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, timed_out ? 0 : WNOHANG);
    if (done == pid) {
      result = status;
      break;
    }
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) break;
    if (Clock::now() >= deadline) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      continue;
    }
    if (pidfd == -2) pidfd = open_pidfd(pid);
    if (pidfd >= 0) {
      pollfd exited{pidfd, POLLIN, 0};
      ::poll(&exited, 1, remaining_ms(deadline));
    } else {
      ::usleep(static_cast<useconds_t>(pause.count()));
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  return result;
}

Answer answer_from_child(const std::function<std::string()>& work, std::chrono::milliseconds limit,
                         std::size_t max_bytes) {
  Answer answer;
  int fds[2];
  if (!open_cloexec_pipe(fds)) {
    answer.setup_error = std::string("pipe: ") + std::strerror(errno);
    return answer;
  }
  const Clock::time_point deadline = Clock::now() + limit;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    answer.setup_error = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return answer;
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(work, fds[1], parent);
  }
  ::close(fds[1]);
  read_until_eof(fds[0], deadline, max_bytes, answer);
  ::close(fds[0]);
  bool timed_out = answer.timed_out || answer.too_large;
  answer.status = reap(pid, deadline, timed_out);
  answer.timed_out = answer.timed_out || (timed_out && !answer.too_large);
  return answer;
}

}  // namespace sbx::plugins::isolated

#endif  // _WIN32
