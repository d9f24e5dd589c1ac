// One run's standard streams and its early end (run.hpp: RunRequest::stdio, RunRequest::control).
// A front end makes both before the run (the C API at sbx_run_start, so that the caller has its
// pipe ends and can cancel at once); the run hands the backend what they stand for through its
// table (sbx_run_v2.stdio_fd and cancel_fd, ABI 2.1) and reports what they did.
//
// Per stream the command gets this process's own descriptor, /dev/null, a descriptor of the
// caller's, or a pipe whose other end is the caller's (streaming) or sbx's: captured to memory up
// to a cap (what comes after it is read and counted, never kept), written from memory (stdin),
// or copied on to a descriptor while its last 64 KiB are kept (the tail the denial
// classification reads: `sbx exec --json`, SBX_EXEC_CAPTURE_STDERR). The pipes sbx reads and
// writes are served by one thread per run that blocks every signal; none of this touches the
// process's own 0-2, so any number of runs may go on at once.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sbx/sdk/result.hpp"

namespace sbx {

// How a run ended before its command did, if it did.
enum class RunEnd { kNone, kCancelled, kTimedOut };

// Ends one run early: the caller's cancel() or the time-out, whichever comes first. fd() is what
// the backend polls (sbx_run_v2.cancel_fd): readable from then on. On Linux a timerfd armed at the
// deadline, which cancel() re-arms to expire at once, so no thread waits for the deadline;
// elsewhere on POSIX a pipe, written by cancel() or by a thread at the deadline. On Windows there
// is no descriptor: cancel() and the deadline stop only a run that has not started its command.
class RunControl {
 public:
  // `timeout` counts from now; nullopt: none.
  static Result<std::shared_ptr<RunControl>> create(
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  ~RunControl();
  RunControl(const RunControl&) = delete;
  RunControl& operator=(const RunControl&) = delete;

  // Any thread, any time, any number of times: the run ends as soon as its backend sees fd()
  // readable (a run whose command has not started yet never starts it). No effect once the
  // deadline has passed (the run timed out first). Async-signal-safe on Linux.
  void cancel() noexcept;
  int fd() const noexcept { return fd_; }
  // Whether the run is to end, and why: the first of cancel() and the deadline.
  RunEnd ended() const noexcept;
  std::optional<std::chrono::milliseconds> timeout() const { return timeout_; }

  struct Waiter;  // the deadline's thread where there is no timerfd

 private:
  RunControl() = default;
  bool deadline_passed() const noexcept;

  int fd_ = -1;        // readable once the run is to end
  int write_fd_ = -1;  // the pipe's write end (no timerfd)
  std::optional<std::chrono::milliseconds> timeout_;
  std::chrono::steady_clock::time_point deadline_{};
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<Waiter> waiter_;
};

// Where one of the command's standard streams goes.
struct StdioSpec {
  enum class Mode {
    kInherit,  // this process's own 0, 1 or 2 (made inheritable for the command; none if closed)
    kNull,     // /dev/null
    kFd,       // the caller's descriptor `fd`: never closed by sbx, open until the run has ended
    kPipe,     // a pipe; its other end is the caller's (RunStdio::take_caller_fd)
    kCapture,  // stdout, stderr: a pipe read into memory, at most `max_bytes` kept
    kData,     // stdin: a pipe sbx writes `data` into, then closes (end of file)
  };
  Mode mode = Mode::kInherit;
  int fd = -1;                // kFd
  std::size_t max_bytes = 0;  // kCapture
  std::string data;           // kData
  // kInherit and kFd on stderr: a pipe copied on to that descriptor, its last 64 KiB kept for
  // the denial classification (RunStdio::stderr_tail). With kCapture the tail is the end of what
  // was captured. Ignored elsewhere.
  bool tail = false;
};

// What a capture kept and how much of the stream it dropped.
struct CapturedOutput {
  std::string bytes;          // the first max_bytes of the stream, at most
  std::uint64_t dropped = 0;  // bytes read after the cap and thrown away
  bool truncated() const { return dropped > 0; }
};

// The stdio of one run: the pipes, their ends, the thread that serves sbx's ends.
class RunStdio {
 public:
  static constexpr std::size_t kTailBytes = 64 * 1024;

  // Opens what `specs` (stdin, stdout, stderr) need and starts serving sbx's pipe ends. Error
  // (nothing left open) for a spec that does not fit its stream (kData on stdout, kCapture on
  // stdin), a bad kFd descriptor, or when a pipe, /dev/null or the thread cannot be had.
  static Result<std::unique_ptr<RunStdio>> open(std::array<StdioSpec, 3> specs);
  ~RunStdio();
  RunStdio(const RunStdio&) = delete;
  RunStdio& operator=(const RunStdio&) = delete;

  // The descriptors the command gets as 0, 1, 2 (-1: none): RunServices::set_stdio. Valid
  // until finish().
  const std::array<int, 3>& child_fds() const { return child_; }
  // True when every stream is this process's own (a tail copied through a pipe counts as own:
  // the command writes where sbx's own stderr goes). A plugin built for ABI 2.0 can run only
  // such a run; it then writes straight to sbx's own stderr, and the tail stays empty.
  bool own_stdio() const;
  // kPipe: the caller's end of stream `which`, handed over once (the caller closes it); -1 for
  // another mode or when already taken. An end not taken is closed by the destructor.
  int take_caller_fd(int which);
  // Once everything the run started has ended (or nothing was started): closes the command's
  // ends, reads what is still in the pipes (until end of file, or until a pipe is empty while a
  // process outside the run still holds it), abandons stdin data the command did not read, and
  // stops the thread. Idempotent; the destructor calls it.
  void finish() noexcept;
  // After finish(). The capture of stream `which` (1, 2), nullptr when it was not captured.
  const CapturedOutput* captured(int which) const;
  // After finish(). The last kTailBytes of stderr (from its first whole line when cut), when a
  // tail was asked for; nullopt otherwise.
  std::optional<std::string> stderr_tail() const;

  struct State;  // implementation detail

 private:
  explicit RunStdio(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  std::array<int, 3> child_{-1, -1, -1};
};

}  // namespace sbx
