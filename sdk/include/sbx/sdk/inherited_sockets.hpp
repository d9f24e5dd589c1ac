// The check every Linux launcher makes of the descriptors the command gets as 0, 1 and 2: a
// socket there was made by the caller, in the caller's network namespace, so it is the one
// object inside the sandbox that the network rules never saw being made. It is harmless only
// when it cannot be pointed anywhere new: a connected stream or seqpacket socket (connect(2) on
// it again fails with EISCONN, and sends go to its peer). Everything else reaches the host:
//  - a datagram socket of any family names a destination on every send (sendto(2), or
//    sendmsg(2)'s msg_name, which seccomp cannot read); SOCK_RAW unix sockets are datagram
//    sockets too (net/unix/af_unix.c unix_create());
//  - an unconnected stream socket can be connected to any host address or socket (issue #32:
//    an unconnected TCP socket on fd 0 reached a host loopback listener from a sandbox with the
//    network restricted; a unix one reached host abstract and pathname sockets);
//  - a listening socket takes connections from the host's network.
// So the run is refused (exit 125) for those, naming the descriptor and what to pass instead.
//
// The same holds for a directory, and for any O_PATH descriptor: it names a place on the host's
// own mounts, so openat(2) relative to it, or a path through /proc/self/fd/N, resolves past the
// sandbox's mounts (a protected name's read-only mask, a denied path's empty mount), with only
// the permission checks left (outside review, session 20: a directory on stdin let a
// bwrap-sandboxed command write .git/hooks and read a --deny path). Refused too.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <optional>
#include <string>

namespace sbx::inherited {

// Why the socket at `fd` may not go into the sandbox, or nullopt when it may (not a socket, or
// a connected stream/seqpacket socket).
inline std::optional<std::string> why_unsafe_socket(int fd) {
  int domain = 0;
  socklen_t size = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0) return std::nullopt;
  int type = 0;
  size = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0)
    return std::string("a socket whose type cannot be read");
  const std::string family = domain == AF_UNIX    ? "unix"
                             : domain == AF_INET  ? "IPv4"
                             : domain == AF_INET6 ? "IPv6"
                                                  : "family " + std::to_string(domain);
  const auto with_article = [](const std::string& what) {
    return (what.front() == 'I' ? "an " : "a ") + what;  // "an IPv4", "a unix"
  };
  if (type != SOCK_STREAM && type != SOCK_SEQPACKET)
    return with_article(family +
                        " datagram socket, which could send to any host address or socket");
  int listening = 0;
  size = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0 && listening != 0)
    return "a listening " + family + " socket, which takes connections from the host's network";
  sockaddr_storage peer{};
  socklen_t peer_size = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0)
    return "an unconnected " + family +
           " socket, which could be connected to any host address or socket";
  return std::nullopt;
}

// Why the descriptor `fd` names a place on the host that the command could resolve paths from,
// or nullopt: a directory or an O_PATH descriptor (of anything).
inline std::optional<std::string> why_unsafe_place(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags != -1 && (flags & O_PATH) == O_PATH)
    return std::string(
        "an O_PATH descriptor, through which (/proc/self/fd) the command could open "
        "files on the host's mounts past the sandbox's masks");
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
    return std::string(
        "a directory, through which (openat, /proc/self/fd) the command could open "
        "files on the host's mounts past the sandbox's masks");
  return std::nullopt;
}

// The first of the command's standard descriptors that may not go into the sandbox, as a
// message for `who` ("bwrap", "landlock"); nullopt when all may. fds[i] is the descriptor of
// this process that the command gets as i (-1: none; RunContext::stdio_fds).
inline std::optional<std::string> check_descriptors(const std::string& who, const int* fds) {
  for (int i = 0; i <= 2; ++i) {
    if (fds[i] < 0) continue;
    std::optional<std::string> why = why_unsafe_place(fds[i]);
    if (!why) why = why_unsafe_socket(fds[i]);
    if (why)
      return who + ": descriptor " + std::to_string(i) + " is " + *why +
             " from inside the sandbox; give the command a pipe, a file or a connected stream "
             "socket instead";
  }
  return std::nullopt;
}

// check_descriptors for this process's own 0-2.
inline std::optional<std::string> check_standard_descriptors(const std::string& who) {
  const int own[3] = {0, 1, 2};
  return check_descriptors(who, own);
}

}  // namespace sbx::inherited
