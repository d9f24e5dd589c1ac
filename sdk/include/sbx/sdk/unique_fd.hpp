// sbx::UniqueFd: owns one POSIX file descriptor and closes it when it goes out of scope.
// Header-only and part of no ABI (nothing of it crosses the plugin boundary); for plugins, core
// and helpers that open descriptors of their own.
#pragma once

#include <unistd.h>

#include <utility>

namespace sbx {

class UniqueFd {
 public:
  UniqueFd() = default;
  // Takes ownership of `fd`; a negative value (a failed open) owns nothing.
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership: the caller must close the returned descriptor.
  int release() { return std::exchange(fd_, -1); }
  // Closes the descriptor owned so far (if any) and owns `fd` instead.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace sbx
