#include "sbx_test/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace sbx::test {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// Reads both pipes until both close, so that neither can fill up and block the child.
void drain(int out_fd, int err_fd, RunResult& result) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(n));
      }
    }
  }
}

}  // namespace

RunResult run(const std::vector<std::string>& argv, const RunOptions& options) {
  int in[2], out[2], err[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0 || ::pipe(err) != 0) return {};
  // Built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> args = c_strings(argv);
  std::vector<char*> env = options.env ? c_strings(*options.env) : std::vector<char*>{};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(127);
    if (options.env)
      ::execve(args[0], args.data(), env.data());
    else
      ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  std::thread writer([fd = in[1], &input = options.input] {
    std::size_t written = 0;
    while (written < input.size()) {
      const ssize_t n = ::write(fd, input.data() + written, input.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
  RunResult result;
  drain(out[0], err[0], result);
  writer.join();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    result.exit_code = 0;
    result.signal = WTERMSIG(status);
    result.code = 128 + result.signal;
  } else {
    result.exit_code = WEXITSTATUS(status);
    result.code = result.exit_code;
  }
  return result;
}

RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const std::string& input) {
  return run(argv, RunOptions{env, input, ""});
}

std::string describe(const RunResult& result) {
  return "exit " + std::to_string(result.code) + "\nstdout: " + result.out.substr(0, 2000) +
         "\nstderr: " + result.err.substr(0, 2000);
}

pid_t start_in_background(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> a, e;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    e.push_back(nullptr);
    ::execve(a[0], a.data(), e.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace sbx::test
