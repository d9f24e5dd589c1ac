#include "sbx_test/capture.hpp"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace sbx::test {
namespace {

// An unlinked temporary file, so nothing is left behind whatever happens.
int anonymous_file() {
  char name[] = "/tmp/sbx-test-capture-XXXXXX";
  const int fd = ::mkstemp(name);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::unlink(name);
  return fd;
}

std::string read_from_start(int fd) {
  std::string text;
  char buffer[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace

std::string capture_stdout(const std::function<void()>& body, const std::string* stdin_text) {
  const int out_fd = anonymous_file();
  int in_fd = -1;
  if (stdin_text != nullptr) {
    in_fd = anonymous_file();
    if (::write(in_fd, stdin_text->data(), stdin_text->size()) !=
        static_cast<ssize_t>(stdin_text->size()))
      throw std::runtime_error("cannot write the stdin file");
    ::lseek(in_fd, 0, SEEK_SET);
  }
  std::fflush(stdout);
  const int saved_out = ::dup(1);
  const int saved_in = ::dup(0);
  ::dup2(out_fd, 1);
  if (in_fd >= 0) ::dup2(in_fd, 0);
  body();
  ::dup2(saved_out, 1);
  ::dup2(saved_in, 0);
  ::close(saved_out);
  ::close(saved_in);
  std::string captured = read_from_start(out_fd);
  ::close(out_fd);
  if (in_fd >= 0) ::close(in_fd);
  return captured;
}

std::string capture_stderr(const std::function<void()>& body) {
  const int err_fd = anonymous_file();
  std::fflush(stderr);
  const int saved_err = ::dup(2);
  ::dup2(err_fd, 2);
  body();
  ::dup2(saved_err, 2);
  ::close(saved_err);
  std::string captured = read_from_start(err_fd);
  ::close(err_fd);
  return captured;
}

}  // namespace sbx::test
