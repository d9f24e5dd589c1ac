// Test helpers for the proxy tests: a counting HTTP server on 127.0.0.1 and blocking loopback
// clients. Only loopback is ever used: every socket here is AF_INET to 127.0.0.1 or AF_UNIX.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace sbx::proxy::testing {

inline int open_fd_count() {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (::readdir(dir) != nullptr) ++count;
  ::closedir(dir);
  return count;
}

inline void set_timeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Connects to 127.0.0.1:port; -1 on failure.
inline int connect_loopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  set_timeout(fd, 10);
  return fd;
}

inline int connect_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  set_timeout(fd, 10);
  return fd;
}

inline bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads until EOF, error or timeout.
inline std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Reads exactly n bytes (or less on EOF/timeout).
inline std::string read_n(int fd, std::size_t n) {
  std::string out;
  char buf[4096];
  while (out.size() < n) {
    ssize_t got = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (got <= 0) break;
    out.append(buf, static_cast<std::size_t>(got));
  }
  return out;
}

// Reads until "\r\n\r\n" (an HTTP response head) or EOF.
inline std::string read_head(int fd) {
  std::string out;
  char c;
  while (out.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) out.push_back(c);
  return out;
}

// An HTTP/1.0 server on 127.0.0.1 (ephemeral port) that answers every request with
// "hello <request line>" and closes. Counts accepted connections and keeps the last request.
class CountingServer {
 public:
  CountingServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 1024);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~CountingServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  CountingServer(const CountingServer&) = delete;
  CountingServer& operator=(const CountingServer&) = delete;

  std::uint16_t port() const { return port_; }
  int accepts() const { return accepts_.load(); }
  std::string last_request() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }

 private:
  void loop() {
    while (!stop_) {
      int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      ++accepts_;
      set_timeout(client, 5);
      std::string request = read_head(client);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        last_ = request;
      }
      std::string body = "hello " + request.substr(0, request.find("\r\n"));
      send_all(client, "HTTP/1.0 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body);
      ::close(client);
    }
  }

  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> accepts_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::string last_;
  std::thread thread_;
};

// An ssh-like server on 127.0.0.1 (ephemeral port): sends an SSH identification line (RFC 4253
// 4.2), keeps the client's first line (its own identification: "SSH-2.0-OpenSSH_...") and
// closes. Enough to show that an ssh client reached it; no key exchange.
class SshBannerServer {
 public:
  SshBannerServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 16);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~SshBannerServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  SshBannerServer(const SshBannerServer&) = delete;
  SshBannerServer& operator=(const SshBannerServer&) = delete;

  std::uint16_t port() const { return port_; }
  int accepts() const { return accepts_.load(); }
  std::string client_line() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return line_;
  }

 private:
  void loop() {
    while (!stop_) {
      int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      ++accepts_;
      set_timeout(client, 5);
      send_all(client, "SSH-2.0-sbx_test_server\r\n");
      std::string line;
      char c;
      while (line.size() < 255 && ::recv(client, &c, 1, 0) == 1 && c != '\n') line.push_back(c);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        line_ = line;
      }
      ::close(client);
    }
  }

  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> accepts_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::string line_;
  std::thread thread_;
};

}  // namespace sbx::proxy::testing
