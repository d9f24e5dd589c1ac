// A call of plugin code in a forked child of sbx, and the pieces it is made of: the guarded probe
// (probe_isolation.cpp) and the isolated transform and exec of third-party plugins
// (call_isolation.cpp). POSIX only; on Windows those calls run in process.
//
// The child does the least it can: the work, its answer written to a close-on-exec pipe, _exit
// (no atexit handlers, no flushing of buffers inherited from sbx). It dies with the sbx thread
// that forked it (Linux: PR_SET_PDEATHSIG). The parent reads until end of file, bounded in time
// and size, and reaps the child.
#pragma once

#ifndef _WIN32

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sbx::plugins::isolated {

using Clock = std::chrono::steady_clock;

// "SIGSEGV", "SIGABRT", ..., or "signal N".
std::string signal_name(int sig);
// "10 s", or "250 ms" when not whole seconds.
std::string duration_text(std::chrono::milliseconds duration);
// Writes all of `data` (EINTR retried); false on any error.
bool write_all(int fd, std::string_view data);
// A pipe whose both ends are close-on-exec; false (errno set) when none can be had.
bool open_cloexec_pipe(int fds[2]);
// A descriptor readable once `pid` has exited (Linux 5.3+), or -1.
int open_pidfd(pid_t pid);
// Milliseconds left until `deadline` for poll(), 0 once passed (rounded up otherwise).
int remaining_ms(Clock::time_point deadline);
// In a child just forked by `parent`: ends the child with SIGKILL when the forking thread of
// `parent` ends (Linux), and false when `parent` is already gone.
bool die_with_parent(pid_t parent);
// Reaps `pid`; a child still running at `deadline` is killed (timed_out set). Also kills it
// at once when timed_out is already set. nullopt: the status is unknown (an embedder's SIGCHLD
// handler reaped it first).
std::optional<int> reap(pid_t pid, Clock::time_point deadline, bool& timed_out);

// What a child that answered once sent, and how it ended.
struct Answer {
  std::string setup_error;  // the pipe or the fork failed ("pipe: ...", "fork: ..."): no child
  std::string data;
  bool timed_out = false;     // no end of file by the deadline: killed
  bool too_large = false;     // more than the limit: killed
  std::optional<int> status;  // wait status, when known
};

// Forks; the child runs `work` and writes what it returns, then _exits 0 (124 when the write
// failed, 123 when `work` threw). The parent reads at most `max_bytes` until end of file or
// `limit`, kills the child when either is passed, and reaps it.
Answer answer_from_child(const std::function<std::string()>& work, std::chrono::milliseconds limit,
                         std::size_t max_bytes);

}  // namespace sbx::plugins::isolated

#endif  // _WIN32
