// guarded_probe (manager.hpp): each backend's probe() runs in a forked child with a deadline.
//
// Why a child: probe() is plugin code that runs on every `sbx exec`, before anything is
// sandboxed. A plugin that crashes there (a bad pointer, an abort) would take sbx down with it,
// and one that hangs would hang sbx forever; either way no other backend would get its turn.
// In a child, a signal or a missed deadline only marks that backend unavailable, with the reason.
//
// The child does the least it can: probe, serialise the report, write it to a pipe, _exit (no
// atexit handlers, no flushing of buffers inherited from sbx). The parent reads until end of
// file, bounded in time and size, reaps the child and rebuilds the report. The wire format
// carries every byte of every string and every capability bit, so a probe that answers gives
// exactly the report it would have given in process.
//
// Known limits: in-memory state a probe sets in its backend object stays in the child (backends
// that keep such state must also be able to recompute it in transform()); fork() in a process
// with other threads (an embedder's) gives a child with only this thread, so a probe that takes
// a lock another thread held at that moment waits until the deadline; descendants a probe
// started itself are not killed with it. On Windows the probe runs in process, guarded against
// exceptions only.
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "probe_wire.hpp"
#include "sbx/core/exit_codes.hpp"
#include "sbx/core/manager.hpp"

#ifndef _WIN32
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif
#endif

namespace sbx {

namespace json = boost::json;

// The wire format (probe_wire.hpp), also that of the kept answers (probe_store.cpp):
// Boost.JSON copies bytes that are not valid UTF-8 through unchanged and the reader is told to
// accept them, so strings arrive exactly as sent (unlike report_json.hpp, which makes text
// valid for people and other programs); capabilities travel as their bits, unknown ones
// included.
std::string probe_to_wire(const ProbeReport& report) {
  json::array checks;
  for (const ProbeCheck& check : report.checks) {
    checks.emplace_back(json::array{json::string(check.name), static_cast<int>(check.status),
                                    json::string(check.observed), json::string(check.remedy)});
  }
  json::object out;
  out["available"] = report.available;
  out["summary"] = json::string(report.summary);
  out["checks"] = std::move(checks);
  out["capabilities"] = report.capabilities.bits();
  return json::serialize(out);
}

Result<ProbeReport> probe_from_wire(std::string_view text) {
  try {
    json::parse_options options;
    options.allow_invalid_utf8 = true;
    const json::value value = json::parse(text, {}, options);
    const json::object& in = value.as_object();
    ProbeReport report;
    report.available = in.at("available").as_bool();
    report.summary = std::string(in.at("summary").as_string());
    for (const json::value& item : in.at("checks").as_array()) {
      const json::array& check = item.as_array();
      if (check.size() != 4) return Error{"a check is malformed"};
      const std::int64_t status = check.at(1).as_int64();
      if (status < 0 || status > static_cast<int>(CheckStatus::kFail))
        return Error{"a check has an unknown status"};
      report.checks.push_back(
          {std::string(check.at(0).as_string()), static_cast<CheckStatus>(status),
           std::string(check.at(2).as_string()), std::string(check.at(3).as_string())});
    }
    const std::uint64_t bits = in.at("capabilities").to_number<std::uint64_t>();
    for (std::uint32_t bit = 0; bit < 32; ++bit) {
      if ((bits >> bit) & 1u) report.capabilities.add(static_cast<Capability>(1u << bit));
    }
    return report;
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

namespace {

ProbeReport unavailable(std::string summary) {
  ProbeReport report;
  report.summary = std::move(summary);
  return report;
}

// probe() in this process; an exception becomes an unavailable report naming it.
ProbeReport probe_in_process(Backend& backend) {
  try {
    return backend.probe(ProbeContext{});
  } catch (const std::exception& e) {
    return unavailable(std::string("probe failed with an exception: ") + e.what());
  } catch (...) {
    return unavailable("probe failed with an unknown exception");
  }
}

#ifndef _WIN32

// A report that large is not a report (the real ones are a few kilobytes).
constexpr std::size_t kMaxReportBytes = 4u << 20;

using Clock = std::chrono::steady_clock;

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
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::string duration_text(std::chrono::milliseconds deadline) {
  if (deadline.count() % 1000 == 0) return std::to_string(deadline.count() / 1000) + " s";
  return std::to_string(deadline.count()) + " ms";
}

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The child: probe, serialise, write, _exit. Never returns.
[[noreturn]] void run_child(Backend& backend, int out, pid_t parent) {
#ifdef __linux__
  // A probe that hangs must not outlive an sbx that was killed meanwhile.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != parent)
    ::_exit(kExitSbxFailure);
#else
  (void)parent;
#endif
  try {
    const std::string wire = probe_to_wire(probe_in_process(backend));
    const bool written = write_all(out, wire);
    // End of file now, so the parent reads the answer while this process is torn down.
    ::close(out);
    ::_exit(written ? 0 : 124);
  } catch (...) {
    ::_exit(123);
  }
}

// What the child wrote, until end of file, the deadline or the size limit.
struct ChildOutput {
  std::string data;
  bool timed_out = false;
  bool too_large = false;
};

int remaining_ms(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left) + 1;  // +1: never wake up just before it
}

ChildOutput read_until_eof(int in, Clock::time_point deadline) {
  ChildOutput out;
  // Small: a report is a few kilobytes, and every 4 KiB page of a stack buffer is touched (stack
  // clash probes) and costs a page fault the first time, on every sbx run.
  char buffer[8192];
  for (;;) {
    const int wait = remaining_ms(deadline);
    if (wait == 0) {
      out.timed_out = true;
      return out;
    }
    pollfd fd{in, POLLIN, 0};
    const int ready = ::poll(&fd, 1, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;  // the deadline is checked above
    const ssize_t n = ::read(in, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;  // end of file (or an error: no more to read either way)
    out.data.append(buffer, static_cast<std::size_t>(n));
    if (out.data.size() > kMaxReportBytes) {
      out.too_large = true;
      return out;
    }
  }
}

// A descriptor that becomes readable when `pid` has exited (Linux 5.3+), or -1.
int open_pidfd(pid_t pid) {
#if defined(__linux__) && defined(SYS_pidfd_open)
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// Reaps the child. It normally exits right after closing the pipe; until it has, wait on a
// pidfd (or, without one, look again after growing pauses). A child that closed the pipe but
// keeps running is killed at the deadline. nullopt: the status is unknown (an embedder's
// SIGCHLD handler reaped it first).
std::optional<int> reap(pid_t pid, Clock::time_point deadline, bool& timed_out) {
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

ProbeReport probe_in_child(Backend& backend, std::chrono::milliseconds limit) {
  // Close-on-exec: whatever the probe executes does not keep the pipe open (nor does anything
  // another thread of an embedder starts meanwhile).
  int fds[2];
#ifdef __linux__
  const int piped = ::pipe2(fds, O_CLOEXEC);
#else
  const int piped = ::pipe(fds);
  if (piped == 0) {
    for (int fd : fds) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
#endif
  if (piped != 0)
    return unavailable(std::string("probe could not be isolated: pipe: ") + std::strerror(errno));
  const Clock::time_point deadline = Clock::now() + limit;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const std::string error = std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return unavailable("probe could not be isolated: fork: " + error);
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(backend, fds[1], parent);
  }
  ::close(fds[1]);
  ChildOutput output = read_until_eof(fds[0], deadline);
  ::close(fds[0]);
  bool timed_out = output.timed_out || output.too_large;
  if (timed_out) ::kill(pid, SIGKILL);
  const std::optional<int> status = reap(pid, deadline, timed_out);
  if (output.too_large)
    return unavailable("probe answered with more than " + std::to_string(kMaxReportBytes >> 20) +
                       " MiB");
  if (timed_out) return unavailable("probe did not answer within " + duration_text(limit));
  if (status && WIFSIGNALED(*status))
    return unavailable("probe crashed with " + signal_name(WTERMSIG(*status)));
  if (status && WIFEXITED(*status) && WEXITSTATUS(*status) != 0)
    return unavailable("probe exited with status " + std::to_string(WEXITSTATUS(*status)) +
                       " before it answered");
  if (output.data.empty()) return unavailable("probe ended without an answer");
  Result<ProbeReport> report = probe_from_wire(output.data);
  if (!report.ok()) return unavailable("probe sent an unreadable answer: " + report.error());
  return std::move(*report);
}

#endif  // _WIN32

}  // namespace

ProbeReport guarded_probe(Backend& backend, std::chrono::milliseconds deadline) {
#ifdef _WIN32
  (void)deadline;
  return probe_in_process(backend);
#else
  return probe_in_child(backend, deadline);
#endif
}

}  // namespace sbx
