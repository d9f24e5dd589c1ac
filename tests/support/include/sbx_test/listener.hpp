// A loopback listener (TCP on 127.0.0.1/::1, UDP on 127.0.0.1, or a unix socket) on the host,
// counting what reaches it, to prove from outside that a sandboxed command reached nothing.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

namespace sbx::test {

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
  // What reached the listener before this call, counted for certain: the host itself connects
  // (or sends a datagram) once and waits until the listener has counted that too. The backlog
  // and a datagram socket's queue are taken in arrival order, and a command that has ended
  // made its connect(2) or sendto(2) before, so nothing earlier is still on its way. -1 if
  // the host's own never arrived within 10 s (the listener is broken: no proof). A unix socket
  // the command renamed is knocked at under its new name, `renamed`.
  int hits_before_now(const std::string& renamed = "") {
    const int before = hits_.load();
    if (!knock(renamed)) return -1;
    for (int waited = 0; waited < 10000 && hits_.load() == before; waited += 5) {
      ::poll(nullptr, 0, 5);
    }
    const int after = hits_.load();
    return after == before ? -1 : after - 1;
  }

 private:
  // One connection (or datagram) from the host to this listener.
  bool knock(const std::string& renamed) const {
    const int family = kind_ == kTcp6 ? AF_INET6 : (kind_ == kUnix ? AF_UNIX : AF_INET);
    const int fd = ::socket(family, kind_ == kUdp4 ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    bool sent = ::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0;
    if (sent && !renamed.empty()) {
      sockaddr_un* un = reinterpret_cast<sockaddr_un*>(&ss);
      std::snprintf(un->sun_path, sizeof un->sun_path, "%s", renamed.c_str());
      len = sizeof *un;
    }
    sent = sent && ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
    if (sent && kind_ == kUdp4) sent = ::send(fd, "k", 1, 0) == 1;
    ::close(fd);
    return sent;
  }
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

}  // namespace sbx::test
