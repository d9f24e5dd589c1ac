// Helpers for the bwrap suites: run the installed `sbx exec`, make scratch directories, and
// small loopback servers that record whether anything connected.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sbx_it {

namespace fs = std::filesystem;

struct RunResult {
  int code = -1;  // exit code, or 128+signal
  std::string out;
  std::string err;
};

inline std::string sbx_path() { return std::string(SBX_TEST_PREFIX) + "/bin/sbx"; }
inline std::string probe_path() { return SBX_ESCAPE_PROBE; }

inline std::vector<std::string> base_env() {
  return {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8"};
}

// Runs argv with `env`, feeding `input` on stdin; collects stdout/stderr.
inline RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               const std::string& input = "") {
  int in[2], out[2], err[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0 || ::pipe(err) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
    std::vector<char*> a, e;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    e.push_back(nullptr);
    ::execve(a[0], a.data(), e.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  std::thread writer([fd = in[1], input] {
    std::size_t off = 0;
    while (off < input.size()) {
      const ssize_t n = ::write(fd, input.data() + off, input.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
  RunResult r;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      }
    }
  }
  writer.join();
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// `sbx exec [policy args] --cwd cwd -- command...` as the test's user.
inline RunResult sbx_exec(const std::vector<std::string>& policy_args, const std::string& cwd,
                    const std::vector<std::string>& command,
                    std::vector<std::string> env = base_env(), const std::string& input = "") {
  std::vector<std::string> argv = {sbx_path(), "--backends", "bwrap", "exec"};
  argv.insert(argv.end(), policy_args.begin(), policy_args.end());
  argv.insert(argv.end(), {"--cwd", cwd, "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return run(argv, env, input);
}

inline RunResult sh(const std::string& cwd, const std::string& script,
              const std::vector<std::string>& policy = {"--preset", "workspace-write"},
              std::vector<std::string> env = base_env()) {
  return sbx_exec(policy, cwd, {"/bin/sh", "-c", script}, std::move(env));
}

inline std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.code) + "\nstdout: " + r.out.substr(0, 2000) +
         "\nstderr: " + r.err.substr(0, 2000);
}

// A fresh directory (removed at scope exit).
class TempDir {
 public:
  explicit TempDir(const std::string& parent = "/tmp") {
    std::string tmpl = parent + "/sbx-bwrap-it-XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Names directly inside `dir` (to prove nothing new appeared).
inline std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// A loopback listener (TCP on 127.0.0.1/::1, UDP on 127.0.0.1, or a unix socket) that counts
// what reaches it, polled from a background thread until stopped.
class Listener {
 public:
  enum Kind { kTcp4, kTcp6, kUdp4, kUnix };
  explicit Listener(Kind kind, const std::string& unix_path = "") : kind_(kind) {
    const int family = kind == kTcp6 ? AF_INET6 : (kind == kUnix ? AF_UNIX : AF_INET);
    fd_ = ::socket(family, kind == kUdp4 ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (kind == kTcp4 || kind == kUdp4) {
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
      socklen_t len = sizeof sa;
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
      port_ = ntohs(sa.sin_port);
    } else if (kind == kTcp6) {
      sockaddr_in6 sa{};
      sa.sin6_family = AF_INET6;
      sa.sin6_addr = in6addr_loopback;
      ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
      socklen_t len = sizeof sa;
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
      port_ = ntohs(sa.sin6_port);
    } else {
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", unix_path.c_str());
      ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    }
    if (kind != kUdp4) ::listen(fd_, 16);
    thread_ = std::thread([this] { loop(); });
  }
  ~Listener() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int port() const { return port_; }
  bool ok() const { return fd_ >= 0 && (kind_ == kUnix ? ok_ : port_ > 0); }
  int hits() const { return hits_.load(); }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[64];
      if (kind_ == kUdp4) {
        if (::recv(fd_, buf, sizeof buf, MSG_DONTWAIT) >= 0) ++hits_;
      } else {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c >= 0) {
          ++hits_;
          ::close(c);
        }
      }
    }
  }
  Kind kind_;
  int fd_ = -1;
  int port_ = 0;
  bool ok_ = true;
  std::atomic<bool> stop_{false};
  std::atomic<int> hits_{0};
  std::thread thread_;
};

}  // namespace sbx_it
