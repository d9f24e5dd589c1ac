// Waits for the last writer of a file to be gone, instead of sleeping past it.
//
// Why it works: a shell's `exec 3>file` opens one open file description that everything the
// shell starts afterwards inherits; inotify reports IN_CLOSE_WRITE when its last reference is
// dropped (inotify(7): "File opened for writing was closed"; the kernel's fsnotify_close runs on
// the final fput). So the event means every process that held fd 3 has ended (or closed it): a
// test that must see a sandbox's processes gone waits for exactly that, with a generous timeout,
// and fails when one outlives it.
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace sbx::test {

class LastCloseWatch {
 public:
  // Watch `path` (which must exist) from now on: a close before this call is not seen.
  explicit LastCloseWatch(const std::string& path)
      : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    if (fd_ >= 0 && ::inotify_add_watch(fd_, path.c_str(), IN_CLOSE_WRITE) < 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~LastCloseWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  LastCloseWatch(const LastCloseWatch&) = delete;
  LastCloseWatch& operator=(const LastCloseWatch&) = delete;

  // False if the watch could not be set up.
  bool ok() const { return fd_ >= 0; }

  // True once a close of a writable descriptor of the file was reported; false after
  // `timeout_ms` without one.
  bool wait(int timeout_ms) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (fd_ >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      alignas(inotify_event) char buf[4096];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      for (ssize_t at = 0; n > 0 && at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buf + at);
        if ((event->mask & IN_CLOSE_WRITE) != 0) return true;
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
    }
    return false;
  }

 private:
  int fd_ = -1;
};

}  // namespace sbx::test
