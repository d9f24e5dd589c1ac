// One run's stdio and its early end (see sbx/core/run_io.hpp).
#include "sbx/core/run_io.hpp"

#include "run/standard_fds.hpp"

#ifndef _WIN32
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/timerfd.h>
#endif
#endif

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sbx {

namespace {

#ifndef _WIN32
std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }
#endif

// Every signal blocked in the thread made here (the mask is inherited): process-directed signals
// must reach the embedding program's threads or the spawners' signalfds, never this one; and a
// write to a pipe whose reader is gone gives EPIPE here instead of a SIGPIPE that would end the
// process (a thread-directed SIGPIPE stays pending on this thread and dies with it).
template <typename Body>
std::thread quiet_thread(Body&& body) {
#ifdef _WIN32
  return std::thread(std::forward<Body>(body));
#else
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    std::thread thread(std::forward<Body>(body));
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return thread;
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
#endif
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// RunControl

struct RunControl::Waiter {
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;
};

bool RunControl::deadline_passed() const noexcept {
  return timeout_ && std::chrono::steady_clock::now() >= deadline_;
}

RunEnd RunControl::ended() const noexcept {
  if (cancelled_.load()) return RunEnd::kCancelled;
  if (deadline_passed()) return RunEnd::kTimedOut;
  return RunEnd::kNone;
}

#ifdef __linux__

Result<std::shared_ptr<RunControl>> RunControl::create(
    std::optional<std::chrono::milliseconds> timeout) {
  std::shared_ptr<RunControl> control(new RunControl());
  control->timeout_ = timeout;
  // A timer, not an eventfd: at the deadline the kernel makes it readable by itself, so nothing
  // of sbx waits for the deadline (timerfd_create(2), Linux 2.6.25). It is never read: once
  // expired it stays readable for every watcher of the run.
  control->fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (control->fd_ < 0) return Error{system_error("cannot make the run's cancel timer")};
  if (timeout) {
    control->deadline_ = std::chrono::steady_clock::now() + *timeout;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*timeout).count();
    itimerspec at{};
    at.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    // An all-zero it_value disarms the timer: a zero time-out expires after 1 ns instead.
    at.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    if (at.it_value.tv_sec == 0 && at.it_value.tv_nsec == 0) at.it_value.tv_nsec = 1;
    if (::timerfd_settime(control->fd_, 0, &at, nullptr) != 0)
      return Error{system_error("cannot arm the run's time-out")};
  }
  return control;
}

void RunControl::cancel() noexcept {
  if (deadline_passed()) return;  // timed out first
  cancelled_.store(true);
  itimerspec now{};
  now.it_value.tv_nsec = 1;  // expires at once: readable for every watcher
  ::timerfd_settime(fd_, 0, &now, nullptr);
}

RunControl::~RunControl() {
  if (fd_ >= 0) ::close(fd_);
}

#elif !defined(_WIN32)

Result<std::shared_ptr<RunControl>> RunControl::create(
    std::optional<std::chrono::milliseconds> timeout) {
  std::shared_ptr<RunControl> control(new RunControl());
  control->timeout_ = timeout;
  int fds[2] = {-1, -1};
  if (::pipe(fds) != 0) return Error{system_error("cannot make the run's cancel pipe")};
  for (int fd : fds) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  control->fd_ = fds[0];
  control->write_fd_ = fds[1];
  if (timeout) {
    control->deadline_ = std::chrono::steady_clock::now() + *timeout;
    auto waiter = std::make_unique<Waiter>();
    Waiter* raw = waiter.get();
    const int write_fd = fds[1];
    const auto deadline = control->deadline_;
    waiter->thread = quiet_thread([raw, write_fd, deadline] {
      std::unique_lock<std::mutex> lock(raw->mutex);
      if (raw->wake.wait_until(lock, deadline, [raw] { return raw->stop; })) return;
      [[maybe_unused]] const ssize_t n = ::write(write_fd, "t", 1);
    });
    control->waiter_ = std::move(waiter);
  }
  return control;
}

void RunControl::cancel() noexcept {
  if (deadline_passed()) return;
  cancelled_.store(true);
  [[maybe_unused]] const ssize_t n = ::write(write_fd_, "c", 1);  // full pipe: readable anyway
}

RunControl::~RunControl() {
  if (waiter_) {
    {
      std::lock_guard<std::mutex> lock(waiter_->mutex);
      waiter_->stop = true;
    }
    waiter_->wake.notify_all();
    if (waiter_->thread.joinable()) waiter_->thread.join();
  }
  if (fd_ >= 0) ::close(fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

#else  // _WIN32

Result<std::shared_ptr<RunControl>> RunControl::create(
    std::optional<std::chrono::milliseconds> timeout) {
  std::shared_ptr<RunControl> control(new RunControl());
  control->timeout_ = timeout;
  if (timeout) control->deadline_ = std::chrono::steady_clock::now() + *timeout;
  return control;
}

void RunControl::cancel() noexcept {
  if (!deadline_passed()) cancelled_.store(true);
}

RunControl::~RunControl() = default;

#endif

// ---------------------------------------------------------------------------------------------
// RunStdio

#ifndef _WIN32

namespace {

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A pipe, both ends close-on-exec (no other child may hold either: a writer left in another
// command would keep the reader from ever seeing end of file), sbx's end non-blocking. The
// command's end stays blocking: commands expect blocking stdio.
bool open_pipe(int fds[2]) {
#ifdef __linux__
  return ::pipe2(fds, O_CLOEXEC) == 0;
#else
  if (::pipe(fds) != 0) return false;
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  return true;
#endif
}

}  // namespace

// sbx's end of one output pipe: captured, or copied on with a tail kept.
struct OutputReader {
  int fd = -1;
  CapturedOutput* capture = nullptr;  // kCapture
  std::size_t cap = 0;
  int copy_to = -1;  // tail: where the bytes go on to (-1: nowhere)
  bool keep_tail = false;
  std::string tail;
  bool tail_cut = false;
};

struct RunStdio::State {
  std::array<int, 3> child{-1, -1, -1};
  std::vector<int> child_owned;  // the command's ends sbx made: closed by finish()
  std::array<int, 3> caller{-1, -1, -1};
  std::array<std::optional<CapturedOutput>, 3> captures;
  int stdin_fd = -1;  // kData: sbx's write end
  std::string stdin_data;
  std::size_t stdin_written = 0;
  std::array<OutputReader, 2> readers;  // stdout, stderr
  int wake_read = -1;
  int wake_write = -1;
  std::thread thread;
  std::mutex mutex;  // finish() and take_caller_fd()
  bool finished = false;
  bool own = true;
  bool tail_wanted = false;
  std::optional<std::string> tail;

  ~State() {
    for (int& fd : child_owned) close_fd(fd);
    for (int& fd : caller) close_fd(fd);
    close_fd(stdin_fd);
    for (OutputReader& r : readers) close_fd(r.fd);
    close_fd(wake_read);
    close_fd(wake_write);
  }

  // Reads what one chunk brings. True when something was read (more may follow).
  bool read_some(OutputReader& r, char* scratch, std::size_t size) {
    if (r.fd < 0) return false;
    if (r.capture != nullptr && r.capture->bytes.size() >= r.cap) {
#ifdef __linux__
      // Past the cap nothing is copied into sbx at all: the kernel moves the bytes to /dev/null
      // (splice(2)); they are only counted. A kernel that refuses falls back to reading them.
      static const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (devnull >= 0) {
        const ssize_t moved =
            ::splice(r.fd, nullptr, devnull, nullptr, 1 << 20, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (moved > 0) {
          r.capture->dropped += static_cast<std::uint64_t>(moved);
          return true;
        }
        if (moved == 0) {
          close_fd(r.fd);
          return false;
        }
        if (errno == EAGAIN) return false;
        if (errno == EINTR) return true;
      }
#endif
    }
    const std::size_t room = r.capture != nullptr && r.capture->bytes.size() < r.cap
                                 ? r.cap - r.capture->bytes.size()
                                 : 0;
    // Never more than the room left is read while there is room: what is kept is a prefix of
    // the stream, and nothing beyond the cap is copied into memory that is kept.
    const std::size_t want = room > 0 ? std::min(room, size) : size;
    const ssize_t got = ::read(r.fd, scratch, want);
    if (got < 0 && errno == EINTR) return true;
    if (got < 0 && errno == EAGAIN) return false;
    if (got <= 0) {
      close_fd(r.fd);  // end of file: every writer is gone
      return false;
    }
    const auto n = static_cast<std::size_t>(got);
    if (r.capture != nullptr) {
      if (room > 0) {
        r.capture->bytes.append(scratch, n);
      } else {
        r.capture->dropped += n;
      }
      return true;
    }
    if (r.copy_to >= 0 && !write_all(r.copy_to, scratch, n)) r.copy_to = -1;  // gone: keep the tail
    if (r.keep_tail) {
      r.tail.append(scratch, n);
      if (r.tail.size() > 2 * kTailBytes) {
        r.tail.erase(0, r.tail.size() - kTailBytes);
        r.tail_cut = true;
      }
    }
    return true;
  }

  void write_some() {
    if (stdin_fd < 0) return;
    const std::size_t rest = stdin_data.size() - stdin_written;
    const ssize_t n = ::write(stdin_fd, stdin_data.data() + stdin_written,
                              std::min<std::size_t>(rest, 64 * 1024));
    if (n > 0) stdin_written += static_cast<std::size_t>(n);
    // All written: end of file for the command. EPIPE: it closed its stdin without reading.
    if (stdin_written == stdin_data.size() || (n < 0 && errno != EAGAIN && errno != EINTR))
      close_fd(stdin_fd);
  }

  // The thread: serves the pipes until they end or finish() wakes it, then reads what is left.
  void serve() {
    std::vector<char> buffer(64 * 1024);
    for (;;) {
      if (stdin_fd < 0 && readers[0].fd < 0 && readers[1].fd < 0) return;
      std::array<pollfd, 4> fds{{{wake_read, POLLIN, 0},
                                 {stdin_fd, POLLOUT, 0},
                                 {readers[0].fd, POLLIN, 0},
                                 {readers[1].fd, POLLIN, 0}}};
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[0].revents != 0) break;
      if (fds[1].revents != 0) write_some();
      for (std::size_t i = 0; i < readers.size(); ++i) {
        if (fds[i + 2].revents != 0) read_some(readers[i], buffer.data(), buffer.size());
      }
    }
    // finish(): the run has ended and the command's ends are closed. What the run wrote is in
    // the pipes; a process outside the run (an unsandboxed command's backgrounded child) may
    // still hold one, so reading stops at an empty pipe rather than waiting for its end.
    close_fd(stdin_fd);
    for (OutputReader& r : readers) {
      while (read_some(r, buffer.data(), buffer.size())) {
      }
    }
  }
};

RunStdio::RunStdio(std::unique_ptr<State> state) : state_(std::move(state)) {
  child_ = state_->child;
}

RunStdio::~RunStdio() { finish(); }

namespace {

const char* stream_name(int which) {
  return which == 0 ? "stdin" : which == 1 ? "stdout" : "stderr";
}

}  // namespace

Result<std::unique_ptr<RunStdio>> RunStdio::open(std::array<StdioSpec, 3> specs) {
  auto state = std::make_unique<State>();
  bool needs_thread = false;
  for (int which = 0; which < 3; ++which) {
    StdioSpec& spec = specs[static_cast<std::size_t>(which)];
    const std::string name = stream_name(which);
    int& child = state->child[static_cast<std::size_t>(which)];
    const bool tail = which == 2 && spec.tail;
    if (spec.mode != StdioSpec::Mode::kInherit) state->own = false;
    switch (spec.mode) {
      case StdioSpec::Mode::kInherit:
      case StdioSpec::Mode::kFd: {
        const int source = spec.mode == StdioSpec::Mode::kInherit ? which : spec.fd;
        // This process's own: open and not a placeholder for a closed one (standard_fds.hpp).
        const bool open = spec.mode == StdioSpec::Mode::kInherit
                              ? standard_fd_is_callers(source)
                              : source >= 0 && ::fcntl(source, F_GETFD) != -1;
        if (spec.mode == StdioSpec::Mode::kFd && !open)
          return Error{"the descriptor given for the command's " + name + " (" +
                           std::to_string(spec.fd) + ") is not open",
                       ErrorKind::invalid_input};
        if (!tail) {
          child = open ? source : -1;
          break;
        }
        int fds[2];
        if (!open_pipe(fds)) return Error{system_error("cannot make a pipe for stderr")};
        ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
        child = fds[1];
        state->child_owned.push_back(fds[1]);
        OutputReader& reader = state->readers[1];
        reader.fd = fds[0];
        reader.copy_to = open ? source : -1;
        reader.keep_tail = true;
        state->tail_wanted = true;
        needs_thread = true;
        break;
      }
      case StdioSpec::Mode::kNull: {
        child = ::open("/dev/null", (which == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
        if (child < 0) return Error{system_error("cannot open /dev/null for " + name)};
        state->child_owned.push_back(child);
        break;
      }
      case StdioSpec::Mode::kPipe: {
        int fds[2];
        if (!open_pipe(fds)) return Error{system_error("cannot make a pipe for " + name)};
        child = which == 0 ? fds[0] : fds[1];
        state->child_owned.push_back(child);
        state->caller[static_cast<std::size_t>(which)] = which == 0 ? fds[1] : fds[0];
        break;
      }
      case StdioSpec::Mode::kCapture: {
        if (which == 0)
          return Error{"stdin cannot be captured; give it data, a pipe, a descriptor or null",
                       ErrorKind::invalid_input};
        int fds[2];
        if (!open_pipe(fds)) return Error{system_error("cannot make a pipe for " + name)};
        ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
#ifdef F_SETPIPE_SZ
        // Room for the cap in the pipe itself (at most 1 MiB, the default
        // /proc/sys/fs/pipe-max-size): a command writing a lot is woken, and sbx's thread reads,
        // fewer times. Best effort: the default 64 KiB works too (fcntl(2), Linux 2.6.35).
        ::fcntl(fds[1], F_SETPIPE_SZ,
                static_cast<int>(std::clamp<std::size_t>(spec.max_bytes, 64 * 1024, 1 << 20)));
#endif
        child = fds[1];
        state->child_owned.push_back(fds[1]);
        auto& capture = state->captures[static_cast<std::size_t>(which)];
        capture.emplace();
        // Address space only (pages are touched as bytes come): no copy as the capture grows,
        // up to 1 MiB.
        capture->bytes.reserve(std::min<std::size_t>(spec.max_bytes, 1 << 20));
        OutputReader& reader = state->readers[static_cast<std::size_t>(which - 1)];
        reader.fd = fds[0];
        reader.capture = &*capture;
        reader.cap = spec.max_bytes;
        if (tail) state->tail_wanted = true;
        needs_thread = true;
        break;
      }
      case StdioSpec::Mode::kData: {
        if (which != 0)
          return Error{name +
                           " cannot be given data; capture it, or give it a pipe, a "
                           "descriptor or null",
                       ErrorKind::invalid_input};
        int fds[2];
        if (!open_pipe(fds)) return Error{system_error("cannot make a pipe for stdin")};
        child = fds[0];
        state->child_owned.push_back(fds[0]);
        if (spec.data.empty()) {
          ::close(fds[1]);  // end of file at once
          break;
        }
        ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
        state->stdin_fd = fds[1];
        state->stdin_data = std::move(spec.data);
        needs_thread = true;
        break;
      }
    }
  }
  if (needs_thread) {
    int wake[2];
    if (!open_pipe(wake)) return Error{system_error("cannot make the stdio thread's pipe")};
    state->wake_read = wake[0];
    state->wake_write = wake[1];
    State* raw = state.get();
    try {
      state->thread = quiet_thread([raw] { raw->serve(); });
    } catch (const std::exception& e) {
      return Error{std::string("cannot start the stdio thread: ") + e.what()};
    }
  }
  return std::unique_ptr<RunStdio>(new RunStdio(std::move(state)));
}

bool RunStdio::own_stdio() const { return state_->own; }

int RunStdio::take_caller_fd(int which) {
  if (which < 0 || which > 2) return -1;
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return std::exchange(state_->caller[static_cast<std::size_t>(which)], -1);
}

void RunStdio::finish() noexcept {
  State& s = *state_;
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.finished) return;
  s.finished = true;
  // The command's ends first: sbx's copies must not keep the pipes open.
  for (int& fd : s.child_owned) close_fd(fd);
  if (s.thread.joinable()) {
    [[maybe_unused]] const ssize_t n = ::write(s.wake_write, "f", 1);
    s.thread.join();
  }
  close_fd(s.stdin_fd);
  for (OutputReader& r : s.readers) close_fd(r.fd);
  if (!s.tail_wanted) return;
  const OutputReader& err = s.readers[1];
  std::string text = err.capture != nullptr ? err.capture->bytes : err.tail;
  bool cut = err.tail_cut || (err.capture != nullptr && err.capture->truncated());
  if (text.size() > kTailBytes) {
    text.erase(0, text.size() - kTailBytes);
    cut = true;
  }
  if (cut) {
    // From the first whole line, so the first line is not a fragment.
    const std::size_t newline = text.find('\n');
    if (newline != std::string::npos) text.erase(0, newline + 1);
  }
  s.tail = std::move(text);
}

const CapturedOutput* RunStdio::captured(int which) const {
  if (which < 1 || which > 2) return nullptr;
  const auto& capture = state_->captures[static_cast<std::size_t>(which)];
  return capture ? &*capture : nullptr;
}

std::optional<std::string> RunStdio::stderr_tail() const { return state_->tail; }

#else  // _WIN32

// Windows: only this process's own stdio (the windows backend runs nothing yet, and the host's
// spawn passes the console's handles).
struct RunStdio::State {};

RunStdio::RunStdio(std::unique_ptr<State> state) : state_(std::move(state)) { child_ = {0, 1, 2}; }

RunStdio::~RunStdio() = default;

Result<std::unique_ptr<RunStdio>> RunStdio::open(std::array<StdioSpec, 3> specs) {
  for (const StdioSpec& spec : specs) {
    if (spec.mode != StdioSpec::Mode::kInherit || spec.tail)
      return Error{"only the caller's own stdio is implemented on Windows yet",
                   ErrorKind::unavailable};
  }
  return std::unique_ptr<RunStdio>(new RunStdio(std::make_unique<State>()));
}

bool RunStdio::own_stdio() const { return true; }
int RunStdio::take_caller_fd(int) { return -1; }
void RunStdio::finish() noexcept {}
const CapturedOutput* RunStdio::captured(int) const { return nullptr; }
std::optional<std::string> RunStdio::stderr_tail() const { return std::nullopt; }

#endif

}  // namespace sbx
