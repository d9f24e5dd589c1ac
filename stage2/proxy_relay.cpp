// See proxy_relay.hpp for what the relay does and why the command cannot misuse it.
#include "proxy_relay.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "seccomp_filter.hpp"

namespace sbx::stage2 {
namespace {

// More concurrent connections wait in the listen backlog until one ends (the command could
// otherwise make the relay fork without bound).
constexpr int kMaxConnections = 256;
constexpr std::size_t kBufferSize = 16 * 1024;

std::string errno_text() { return std::strerror(errno); }

// A connection's process failed: nothing to report to (the command sees the connection close).
[[noreturn]] void quit() { ::_exit(0); }

struct Direction {
  int from = -1;
  int to = -1;
  char buffer[kBufferSize];
  std::size_t length = 0;
  std::size_t offset = 0;
  bool eof = false;
  bool shut = false;
};

bool set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// (EWOULDBLOCK == EAGAIN on Linux.)
bool would_block() { return errno == EAGAIN || errno == EINTR; }

// One step of one direction after poll: read when empty, write what is buffered, pass on the
// end of stream. False when the connection is broken.
bool step(Direction& d, short from_events, short to_events) {
  if (d.length == 0 && !d.eof && (from_events & (POLLIN | POLLHUP | POLLERR)) != 0) {
    const ssize_t n = ::read(d.from, d.buffer, sizeof d.buffer);
    if (n > 0) {
      d.length = static_cast<std::size_t>(n);
      d.offset = 0;
    } else if (n == 0) {
      d.eof = true;
    } else if (!would_block()) {
      return false;
    }
  }
  if (d.length > 0 && (to_events & (POLLOUT | POLLHUP | POLLERR)) != 0) {
    // MSG_NOSIGNAL: a peer that went away is an error here, not a SIGPIPE.
    const ssize_t n = ::send(d.to, d.buffer + d.offset, d.length, MSG_NOSIGNAL);
    if (n > 0) {
      d.offset += static_cast<std::size_t>(n);
      d.length -= static_cast<std::size_t>(n);
    } else if (n < 0 && !would_block()) {
      return false;
    }
  }
  if (d.eof && d.length == 0 && !d.shut) {
    ::shutdown(d.to, SHUT_WR);
    d.shut = true;
  }
  return true;
}

short interest(const Direction& d, int fd) {
  short events = 0;
  if (d.from == fd && d.length == 0 && !d.eof) events |= POLLIN;
  if (d.to == fd && d.length > 0) events |= POLLOUT;
  return events;
}

int connect_upstream(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, name.c_str(), name.size() + 1);  // length checked at start
  // Relative: resolved against the relay's working directory, the proxy's directory.
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The process of one connection: forward it to the proxy, then exit.
[[noreturn]] void serve(int client, const std::string& name) {
  const int upstream = connect_upstream(name);
  if (upstream < 0) quit();
  pump(client, upstream);
  quit();
}

// The relay's accept loop; never returns. Connection processes are reaped as they end.
[[noreturn]] void accept_loop(int listener, const std::string& name) {
  int active = 0;
  for (;;) {
    while (active > 0 && ::waitpid(-1, nullptr, WNOHANG) > 0) --active;
    if (active >= kMaxConnections) {
      if (::waitpid(-1, nullptr, 0) > 0) --active;
      continue;
    }
    const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE ||
          errno == ENOBUFS || errno == ENOMEM)
        continue;
      std::fprintf(stderr, "sbx-stage2: relay: accept: %s\n", errno_text().c_str());
      ::_exit(1);
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(listener);
      serve(client, name);
    }
    if (pid > 0) ++active;
    ::close(client);
  }
}

// The relay process, before it serves: harden it, then loop.
[[noreturn]] void run_relay(int listener, int directory, const std::string& name) {
  // Not dumpable: the command (same uid, no capability) cannot ptrace it or write its memory
  // through /proc/PID/mem, which would let it steer the relay's connect() elsewhere.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
    ::_exit(1);
  // The directory as it was checked, whatever happens to its path later.
  if (::fchdir(directory) != 0) ::_exit(1);
  ::close(directory);
  // The always-on rules (no ptrace, mounts, namespaces, ...); the relay needs AF_UNIX and
  // AF_INET sockets, so not the proxy-mode socket rules.
  if (!install_filter(NetworkFilter::kOpen).ok()) ::_exit(1);
  ::signal(SIGPIPE, SIG_IGN);
  accept_loop(listener, name);
}

Result<int> listen_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{"socket: " + errno_text()};
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    const std::string error = "listen on 127.0.0.1:" + std::to_string(port) + ": " + errno_text();
    ::close(fd);
    return Error{error};
  }
  return fd;
}

// Opens the socket's directory and checks that its last component is a socket.
Result<int> open_socket_directory(const std::string& path, std::string& name) {
  const std::size_t slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == std::string::npos || slash + 1 == path.size())
    return Error{"the proxy socket must be an absolute path to a file, got '" + path + "'"};
  name = path.substr(slash + 1);
  if (name.size() >= sizeof(sockaddr_un{}.sun_path) || name == "." || name == "..")
    return Error{"the proxy socket's name '" + name + "' is not usable"};
  const std::string directory = slash == 0 ? "/" : path.substr(0, slash);
  const int fd = ::open(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{"open " + directory + ": " + errno_text()};
  struct stat st {};
  if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode)) {
    ::close(fd);
    return Error{path + " is not a socket (is the proxy running?)"};
  }
  return fd;
}

}  // namespace

Result<std::uint16_t> parse_port(const std::string& text) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos)
    return Error{"expected a TCP port 1..65535, got '" + text + "'"};
  const unsigned long value = std::stoul(text);
  if (value == 0 || value > 65535) return Error{"expected a TCP port 1..65535, got '" + text + "'"};
  return static_cast<std::uint16_t>(value);
}

void pump(int a, int b) {
  if (!set_nonblocking(a) || !set_nonblocking(b)) return;
  Direction directions[2];  // [0]: a -> b, [1]: b -> a
  directions[0].from = directions[1].to = a;
  directions[0].to = directions[1].from = b;
  for (;;) {
    if (directions[0].shut && directions[1].shut) return;
    pollfd fds[2] = {{a, 0, 0}, {b, 0, 0}};
    for (pollfd& p : fds)
      p.events = static_cast<short>(interest(directions[0], p.fd) | interest(directions[1], p.fd));
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (const pollfd& p : fds) {
      if ((p.revents & (POLLERR | POLLNVAL)) != 0) return;
    }
    if (!step(directions[0], fds[0].revents, fds[1].revents)) return;
    if (!step(directions[1], fds[1].revents, fds[0].revents)) return;
    // Hung up and read to its end: that socket is closed both ways, so nothing more can be
    // delivered to it (and poll would report the hang-up forever: no busy loop).
    for (int i = 0; i < 2; ++i) {
      if ((fds[i].revents & POLLHUP) != 0 && directions[i].eof) return;
    }
  }
}

Result<pid_t> start_relay(const RelaySpec& spec) {
  std::string name;
  Result<int> directory = open_socket_directory(spec.socket_path, name);
  if (!directory.ok()) return directory.failure();
  Result<int> listener = listen_loopback(spec.port);
  if (!listener.ok()) {
    ::close(*directory);
    return listener.failure();
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const std::string error = "fork: " + errno_text();
    ::close(*directory);
    ::close(*listener);
    return Error{error};
  }
  if (pid == 0) run_relay(*listener, *directory, name);
  // The listening socket stays only in the relay: the command never holds it.
  ::close(*listener);
  ::close(*directory);
  return pid;
}

}  // namespace sbx::stage2
