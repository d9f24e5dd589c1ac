// The unix connect guard (unix_connect_notify.hpp says what is decided and why).
#include "unix_connect_notify.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "sbx/sdk/unique_fd.hpp"
#include "unix_socket_gate.hpp"

namespace sbx::stage2 {

struct UnixConnectGuard::State {
  unix_sockets::UnixSocketGate gate;
  std::atomic<int> workers{0};
};

namespace {

using unix_sockets::UnixSocketGate;

constexpr int kRefusalErrno = EACCES;
// Blocking connects run in worker threads; beyond this many at once, one runs inline.
constexpr int kMaxWorkers = 128;

void respond(int listener, std::uint64_t id, int error) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.error = error == 0 ? 0 : -error;
  // ENOENT: the caller is gone or was interrupted; nothing waits for the answer.
  ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

void continue_call(int listener, std::uint64_t id) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

bool id_valid(int listener, std::uint64_t id) {
  std::uint64_t copy = id;
  return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &copy) == 0;
}

// One refusal line for the run's report, written whole (at most PIPE_BUF bytes: atomic,
// pipe(7)); a newline in the name would forge a second line, so it is shown as '?'.
void report_refusal(int fd, std::string name) {
  if (fd < 0) return;
  for (char& c : name) {
    if (c == '\n') c = '?';
  }
  name.push_back('\n');
  ssize_t n = 0;
  do n = ::write(fd, name.data(), name.size());
  while (n < 0 && errno == EINTR);
}

std::string printable_abstract(const std::string& name) {
  std::string out = "@";
  for (char c : name) out.push_back(c == '\0' ? '@' : c);
  return out;
}

int connect_errno(int socket, const sockaddr_storage& address, socklen_t length) {
  return ::connect(socket, reinterpret_cast<const sockaddr*>(&address), length) == 0 ? 0 : errno;
}

bool is_blocking(int socket) {
  const int flags = ::fcntl(socket, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) == 0;
}

// Connects the duplicate `socket` to the private copy `address` and answers the caller: in a
// worker thread when the socket blocks, else here. `keep` (the checked socket file the address
// names) lives until the connect is done.
void connect_and_respond(const std::shared_ptr<UnixConnectGuard::State>& state, int listener,
                         std::uint64_t id, UniqueFd socket, sockaddr_storage address,
                         socklen_t length, UniqueFd keep = {}) {
  if (!is_blocking(socket.get()) || state->workers.load() >= kMaxWorkers)
    return respond(listener, id, connect_errno(socket.get(), address, length));
  state->workers.fetch_add(1);
  try {
    // Detached, holding the state: the emulator ends when no task uses the filter, and a worker
    // still connecting then is ended with it.
    std::thread([state, listener, id, socket = std::move(socket), address, length,
                 keep = std::move(keep)]() {
      respond(listener, id, connect_errno(socket.get(), address, length));
      state->workers.fetch_sub(1);
    }).detach();
  } catch (const std::system_error&) {
    state->workers.fetch_sub(1);
    respond(listener, id, EAGAIN);
  }
}

void connect_unix(const std::shared_ptr<UnixConnectGuard::State>& state, int listener,
                  const seccomp_notif& request, UniqueFd socket, const sockaddr_storage& address,
                  socklen_t length, int refusal_fd) {
  const auto* un = reinterpret_cast<const sockaddr_un*>(&address);
  const std::size_t size = length - offsetof(sockaddr_un, sun_path);
  if (un->sun_path[0] == '\0') {
    const std::string name(un->sun_path + 1, size - 1);
    if (state->gate.abstract_name_is_ours(name))
      return connect_and_respond(state, listener, request.id, std::move(socket), address, length);
    report_refusal(refusal_fd, printable_abstract(name));
    return respond(listener, request.id, kRefusalErrno);
  }
  const std::string path(un->sun_path, strnlen(un->sun_path, size));
  UnixSocketGate::Verdict verdict =
      state->gate.decide_pathname(static_cast<pid_t>(request.pid), path);
  if (verdict.outcome == UnixSocketGate::Outcome::kFail)
    return respond(listener, request.id, verdict.error);
  if (verdict.outcome == UnixSocketGate::Outcome::kRefuse) {
    report_refusal(refusal_fd, path);
    return respond(listener, request.id, kRefusalErrno);
  }
  // Through the very descriptor that was checked: a rename or symlink swap after the check
  // changes nothing.
  socklen_t through_length = 0;
  const sockaddr_storage through =
      unix_sockets::address_of_descriptor(verdict.file.get(), through_length);
  connect_and_respond(state, listener, request.id, std::move(socket), through, through_length,
                      std::move(verdict.file));
}

}  // namespace

UnixConnectGuard::UnixConnectGuard() : state_(std::make_shared<State>()) {}
UnixConnectGuard::~UnixConnectGuard() = default;

void UnixConnectGuard::answer(int listener, const seccomp_notif& request, int refusal_fd) {
  const bool bind = request.data.nr == SYS_bind;
  if (!bind && request.data.nr != SYS_connect) return respond(listener, request.id, EPERM);
  // int arguments: the kernel reads their low 32 bits.
  const int fd = static_cast<int>(request.data.args[0]);
  const int length = static_cast<int>(request.data.args[2]);
  const auto pid = static_cast<pid_t>(request.pid);
  UniqueFd pidfd(unix_sockets::pidfd_of_caller(pid));
  // The pid may have been reused if the caller died: valid still means it is our caller.
  if (!id_valid(listener, request.id)) return;
  if (!pidfd.valid()) {
    // Out of descriptors, say: a bind goes ahead unrecorded (nothing may connect to it), a
    // connect fails.
    if (bind) return continue_call(listener, request.id);
    return respond(listener, request.id, EAGAIN);
  }
  UniqueFd socket(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), fd, 0)));
  const int getfd_error = errno;
  int domain = -1;
  socklen_t domain_size = sizeof domain;
  if (socket.valid() &&
      ::getsockopt(socket.get(), SOL_SOCKET, SO_DOMAIN, &domain, &domain_size) != 0)
    domain = -1;
  if (bind) {
    if (domain == AF_UNIX) state_->gate.note_bind(std::move(socket), pid);
    return continue_call(listener, request.id);
  }
  if (!socket.valid()) return respond(listener, request.id, getfd_error == EBADF ? EBADF : EPERM);
  if (domain < 0) return respond(listener, request.id, ENOTSOCK);
  if (length < 0 || static_cast<std::size_t>(length) > sizeof(sockaddr_storage))
    return respond(listener, request.id, EINVAL);
  sockaddr_storage address{};
  const auto size = static_cast<socklen_t>(length);
  if (size > 0) {
    iovec local{&address, size};
    iovec remote{reinterpret_cast<void*>(request.data.args[1]), size};
    if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(size))
      return respond(listener, request.id, EFAULT);
  }
  // From here on only the private copy counts; checked again that it is the caller's.
  if (!id_valid(listener, request.id)) return;
  // Not a unix socket, no name (too short to carry one) or not AF_UNIX: the kernel fails
  // (EINVAL) or, for AF_UNSPEC, disconnects, without looking a unix name up; performed as given.
  const auto* un = reinterpret_cast<const sockaddr_un*>(&address);
  if (domain != AF_UNIX || size <= offsetof(sockaddr_un, sun_path) || un->sun_family != AF_UNIX)
    return connect_and_respond(state_, listener, request.id, std::move(socket), address, size);
  connect_unix(state_, listener, request, std::move(socket), address, size, refusal_fd);
}

int run_unix_connect_trial(int argc, char** argv) {
  if (argc != 4) return 125;
  ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  const auto address_of = [](const char* path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path, sizeof address.sun_path - 1);
    return address;
  };
  const sockaddr_un host = address_of(argv[2]);
  const sockaddr_un own = address_of(argv[3]);
  int errors[2] = {0, 0};
  const UniqueFd to_host(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const UniqueFd to_own(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!to_host.valid() || !listener.valid() || !to_own.valid()) return 125;
  if (::connect(to_host.get(), reinterpret_cast<const sockaddr*>(&host), sizeof host) != 0)
    errors[0] = errno;
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&own), sizeof own) != 0 ||
      ::listen(listener.get(), 1) != 0 ||
      ::connect(to_own.get(), reinterpret_cast<const sockaddr*>(&own), sizeof own) != 0)
    errors[1] = errno;
  return ::write(1, errors, sizeof errors) == static_cast<ssize_t>(sizeof errors) ? 0 : 125;
}

}  // namespace sbx::stage2
