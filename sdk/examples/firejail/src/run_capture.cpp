#include "run_capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace firejail_backend {
namespace {

constexpr std::size_t kMaxOutput = 64 * 1024;

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child between fork and execve: async-signal-safe calls only.
[[noreturn]] void exec_child(int out_fd, char* const argv[], char* const envp[]) {
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0)
    ::_exit(127);
  // Nothing of the host process (plugin files, sockets) leaks into the helper.
  if (::close_range(3, ~0U, 0) != 0) {
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  }
  if (::chdir("/") != 0) ::_exit(127);
  ::execve(argv[0], argv, envp);
  ::_exit(127);
}

// Reads until EOF or the deadline; returns false on timeout.
bool drain(int fd, std::chrono::steady_clock::time_point deadline, std::string& output) {
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return ready == 0 ? false : true;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    if (output.size() < kMaxOutput)
      output.append(buffer, std::min(static_cast<std::size_t>(n), kMaxOutput - output.size()));
  }
}

}  // namespace

sbx::Result<Captured> run_capture(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, int timeout_ms) {
  if (argv.empty() || argv.front().empty() || argv.front()[0] != '/')
    return sbx::Error{"run_capture: argv[0] must be an absolute path"};
  std::vector<char*> c_argv = c_strings(argv);
  std::vector<char*> c_env = c_strings(env);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return sbx::Error{std::string("pipe2: ") + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return sbx::Error{std::string("fork: ") + std::strerror(err)};
  }
  if (pid == 0) exec_child(fds[1], c_argv.data(), c_env.data());
  ::close(fds[1]);
  Captured result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (!drain(fds[0], deadline, result.output)) {
    result.timed_out = true;
    ::kill(pid, SIGKILL);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace firejail_backend
