// sbx_unix_datagram_probe: run inside the sandbox by the unix datagram suite.
//
//   attack PATH      tries every way a unix datagram could reach the socket bound at PATH: a
//                    socket from socket() and from socketpair(), of type SOCK_DGRAM and SOCK_RAW
//                    (net/unix/af_unix.c unix_create() maps SOCK_RAW to SOCK_DGRAM), each with no
//                    flag, SOCK_NONBLOCK, SOCK_CLOEXEC and both, the destination carried by
//                    sendto, sendmsg, sendmmsg and connect + send. One line per attempt:
//                    "<source> <type> <flags> <call>: sent" or ": <errno name>" (creation
//                    refused: "<source> <type> <flags> create: <errno name>").
//   socketpair       Codex's allow_unix_socketpair_recvfrom body: a datagram socketpair carrying
//                    "hello_unix" (write, recvfrom without an address), then a stream pair;
//                    prints "ok" or what failed.
//   ifconf           the interfaces SIOCGIFCONF lists through a datagram socketpair.
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

const char* errno_name(int error) {
  switch (error) {
    case EPERM:
      return "EPERM";
    case EACCES:
      return "EACCES";
    case EINVAL:
      return "EINVAL";
    case EISCONN:
      return "EISCONN";
    case ENOTCONN:
      return "ENOTCONN";
    case EPROTOTYPE:
      return "EPROTOTYPE";
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case ENOENT:
      return "ENOENT";
    case EAGAIN:
      return "EAGAIN";
    case ENOSYS:
      return "ENOSYS";
    case EPIPE:
      return "EPIPE";
    default:
      return strerror(error);
  }
}

sockaddr_un address_of(const char* path, socklen_t& length) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + std::strlen(path) + 1);
  return sa;
}

// One send of "x" to `path` through `fd` by `call`: 0 or errno.
int send_by(int fd, const std::string& call, const char* path) {
  socklen_t length = 0;
  sockaddr_un sa = address_of(path, length);
  char byte = 'x';
  iovec iov{&byte, 1};
  msghdr msg{};
  msg.msg_name = &sa;
  msg.msg_namelen = length;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  long rc = -1;
  if (call == "sendto") {
    rc = ::sendto(fd, &byte, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&sa), length);
  } else if (call == "sendmsg") {
    rc = ::sendmsg(fd, &msg, MSG_DONTWAIT);
  } else if (call == "sendmmsg") {
    mmsghdr one{};
    one.msg_hdr = msg;
    rc = ::sendmmsg(fd, &one, 1, MSG_DONTWAIT);
    if (rc == 0) return EAGAIN;
  } else {
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), length);
    if (rc == 0) rc = ::send(fd, &byte, 1, MSG_DONTWAIT);
  }
  return rc < 0 ? errno : 0;
}

int attack(const char* path) {
  const int types[] = {SOCK_DGRAM, SOCK_RAW};
  const int flag_sets[] = {0, SOCK_NONBLOCK, SOCK_CLOEXEC, SOCK_NONBLOCK | SOCK_CLOEXEC};
  const char* calls[] = {"sendto", "sendmsg", "sendmmsg", "connect"};
  for (const char* source : {"socket", "socketpair"}) {
    for (int type : types) {
      for (int flags : flag_sets) {
        const std::string label = std::string(source) + (type == SOCK_RAW ? " raw" : " dgram") +
                                  " " + std::to_string(flags);
        for (const char* call : calls) {
          int fds[2] = {-1, -1};
          const int rc = std::strcmp(source, "socket") == 0
                             ? (fds[0] = ::socket(AF_UNIX, type | flags, 0))
                             : ::socketpair(AF_UNIX, type | flags, 0, fds);
          if (rc < 0) {
            std::printf("%s create: %s\n", label.c_str(), errno_name(errno));
            break;
          }
          const int error = send_by(fds[0], call, path);
          std::printf("%s %s: %s\n", label.c_str(), call, error == 0 ? "sent" : errno_name(error));
          ::close(fds[0]);
          if (fds[1] >= 0) ::close(fds[1]);
        }
      }
    }
  }
  return 0;
}

int codex_socketpair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM, 0, fds) != 0) {
    std::printf("socketpair(AF_UNIX, SOCK_DGRAM): %s\n", errno_name(errno));
    return 1;
  }
  const char msg[] = "hello_unix";
  if (::write(fds[0], msg, sizeof msg - 1) != static_cast<ssize_t>(sizeof msg - 1)) {
    std::printf("write: %s\n", errno_name(errno));
    return 1;
  }
  char buf[64];
  const ssize_t got = ::recvfrom(fds[1], buf, sizeof buf, 0, nullptr, nullptr);
  if (got != static_cast<ssize_t>(sizeof msg - 1) || std::memcmp(buf, msg, sizeof msg - 1) != 0) {
    std::printf("recvfrom: %zd %s\n", got, got < 0 ? errno_name(errno) : "payload mismatch");
    return 1;
  }
  int stream[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, stream) != 0 || ::write(stream[0], msg, 3) != 3 ||
      ::recv(stream[1], buf, sizeof buf, 0) != 3) {
    std::printf("stream pair: %s\n", errno_name(errno));
    return 1;
  }
  std::printf("ok\n");
  return 0;
}

// The interfaces SIOCGIFCONF lists through one end of a datagram socketpair (the ioctl reads
// the network namespace the socket belongs to), one name per line after "interfaces:".
int interfaces_through_a_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM, 0, fds) != 0) {
    std::printf("socketpair(AF_UNIX, SOCK_DGRAM): %s\n", errno_name(errno));
    return 1;
  }
  ifreq entries[64] = {};
  ifconf conf{};
  conf.ifc_len = sizeof entries;
  conf.ifc_req = entries;
  if (::ioctl(fds[0], SIOCGIFCONF, &conf) != 0) {
    std::printf("SIOCGIFCONF: %s\n", errno_name(errno));
    return 1;
  }
  std::printf("interfaces:\n");
  for (std::size_t i = 0; i < static_cast<std::size_t>(conf.ifc_len) / sizeof(ifreq); ++i)
    std::printf("%s\n", entries[i].ifr_name);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc == 3 && std::strcmp(argv[1], "attack") == 0) return attack(argv[2]);
  if (argc == 2 && std::strcmp(argv[1], "socketpair") == 0) return codex_socketpair();
  if (argc == 2 && std::strcmp(argv[1], "ifconf") == 0) return interfaces_through_a_pair();
  return 2;
}
