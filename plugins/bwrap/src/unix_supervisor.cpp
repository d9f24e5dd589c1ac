// The unix-socket supervisor (see unix_supervisor.hpp for what it decides and why).
#include "sbx/bwrap/unix_supervisor.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include "sbx/sdk/unique_fd.hpp"
#include "unix_socket_gate.hpp"

namespace sbx::bwrap {

// ---------------------------------------------------------------------------------------------
// The filter.

namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "the unix-socket supervisor knows the system call numbers of x86_64 and aarch64 only"
#endif
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the filter reads the low 32 bits of an argument at its first word");

constexpr std::uint32_t kNr = offsetof(seccomp_data, nr);
constexpr std::uint32_t kArch = offsetof(seccomp_data, arch);
constexpr std::uint32_t kArg0 = offsetof(seccomp_data, args[0]);
constexpr std::uint32_t kArg1 = offsetof(seccomp_data, args[1]);
constexpr std::uint32_t kArg4 = offsetof(seccomp_data, args[4]);
// x32 system calls (x86_64 numbers with this bit) would name other calls: killed, like every
// call of a foreign architecture (stage 2's filter does the same later on).
constexpr std::uint32_t kX32Bit = 0x40000000;

// Jump offsets are relative to the next instruction; the labels are the indices noted below.
// The kernel reads int arguments (family, type) as their low 32 bits, so the filter compares
// exactly those: upper bits set by the caller cannot slip a unix datagram socket past it.
// socket() and socketpair() of AF_UNIX with a type other than SOCK_STREAM or SOCK_SEQPACKET (an
// allow-list: SOCK_RAW is a datagram socket too, net/unix/af_unix.c unix_create() maps it to
// SOCK_DGRAM) are notified: the supervisor refuses socket() and reports it, and answers a
// datagram socketpair() with a pair that cannot be re-addressed (substitute_datagram_pair).
// Two programs: the second also notifies sendto() with a destination address (its pointer
// argument not NULL), for the reports of a private network namespace (UnixSocketRules::
// private_network); the first lets every send through.
constexpr sock_filter kProgram[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArch),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 0, 18),  // else -> 20 kill
    /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
    /* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 16, 0),                 // -> 20 kill
    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 13, 0),            // -> 18 notify
    /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bind, 12, 0),               // -> 18 notify
    /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 12, 0),     // -> 19 EPERM
    /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 11, 0),     // -> 19 EPERM
    /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 10, 0),  // -> 19 EPERM
    /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),              // -> 11
    /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, 6),         // else -> 17
    /* 11 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0),
    /* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 4),  // else -> 17 allow
    /* 13 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg1),
    /* 14 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),  // the type without SOCK_NONBLOCK/CLOEXEC
    /* 15 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 1, 0),     // -> 17 allow
    /* 16 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_SEQPACKET, 0, 1),  // else -> 18 notify
    /* 17 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* 18 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    /* 19 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    /* 20 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};

// The same, and sendto() with a non-NULL destination (both words of the pointer tested) is
// notified too. Only the report rests on it: the kernel's routing refuses the destination.
constexpr sock_filter kProgramWithSends[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArch),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 0, 23),  // else -> 25 kill
    /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
    /* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 21, 0),                 // -> 25 kill
    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 18, 0),            // -> 23 notify
    /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bind, 17, 0),               // -> 23 notify
    /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 17, 0),     // -> 24 EPERM
    /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 16, 0),     // -> 24 EPERM
    /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 15, 0),  // -> 24 EPERM
    /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 6, 0),              // -> 16
    /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 5, 0),         // -> 16
    /* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 0, 10),            // else -> 22
    /* 12 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg4),
    /* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 9),  // low word set -> 23 notify
    /* 14 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg4 + 4),
    /* 15 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 6, 7),  // NULL -> 22 allow, else -> 23
    /* 16 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0),
    /* 17 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 4),  // else -> 22 allow
    /* 18 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg1),
    /* 19 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf),  // the type without SOCK_NONBLOCK/CLOEXEC
    /* 20 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 1, 0),     // -> 22 allow
    /* 21 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_SEQPACKET, 0, 1),  // else -> 23 notify
    /* 22 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* 23 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    /* 24 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    /* 25 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};

const sock_fprog kProgramDescriptor = {static_cast<unsigned short>(std::size(kProgram)),
                                       const_cast<sock_filter*>(kProgram)};
const sock_fprog kProgramWithSendsDescriptor = {
    static_cast<unsigned short>(std::size(kProgramWithSends)),
    const_cast<sock_filter*>(kProgramWithSends)};

}  // namespace

std::string unix_supervisor_unavailable() {
  seccomp_notif_sizes sizes{};
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0)
    return "seccomp user notification is not available (Linux 5.0)";
  if (syscall(SYS_pidfd_getfd, -1, -1, 0) != 0 && errno == ENOSYS)
    return "pidfd_getfd is not available (Linux 5.6)";
  if (syscall(SYS_openat2, -1, "", nullptr, 0) != 0 && errno == ENOSYS)
    return "openat2 is not available (Linux 5.6)";
  return {};
}

const sock_fprog& unix_notify_program(bool report_sends) noexcept {
  return report_sends ? kProgramWithSendsDescriptor : kProgramDescriptor;
}

int install_unix_notify_filter(bool report_sends) noexcept {
  const sock_fprog* program = &unix_notify_program(report_sends);
  // Required to install a filter without CAP_SYS_ADMIN; bwrap (not set-user-ID here) and stage
  // 2 (which sets it anyway) run the same with it.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  // WAIT_KILLABLE_RECV: once the supervisor has taken a call, only a fatal signal interrupts
  // the caller. Otherwise a signal would abort the wait while the supervisor performs the call
  // anyway, and the restarted call would find the socket already bound or connected.
  int fd = static_cast<int>(
      syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
              SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, program));
  if (fd < 0 && errno == EINVAL)  // kernels before 5.19
    fd = static_cast<int>(
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, program));
  return fd;
}

bool send_descriptor(int channel, int fd) noexcept {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
  ssize_t n = 0;
  do {
    n = sendmsg(channel, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == 1;
}

int receive_descriptor(int channel) noexcept {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  do {
    n = recvmsg(channel, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int))) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      return fd;
    }
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// The supervisor.

namespace {

constexpr int kRefusalErrno = EACCES;
// Blocking connects run in worker threads (a TCP handshake or a full backlog must not stall
// every other call of the sandbox); beyond this many at once, one runs in the supervisor's
// thread.
constexpr int kMaxWorkers = 128;
// Refusals kept for the run's report (the rest are not recorded; core keeps fewer anyway).
constexpr std::size_t kMaxRefusals = 1000;
// Substituted datagram socketpairs remembered (for the reports and bind refusal below); beyond
// this many a new pair still works but is not remembered.
constexpr std::size_t kMaxSubstitutes = 65536;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

using unix_sockets::Identity;

std::string proc_path(pid_t pid, const char* what) {
  return "/proc/" + std::to_string(pid) + "/" + what;
}

// The caller's address and socket, copied out of the sandbox.
struct Call {
  std::uint64_t id = 0;
  int nr = 0;
  Fd socket;  // our duplicate of the caller's socket
  sockaddr_storage address{};
  socklen_t length = 0;
  pid_t pid = 0;
};

// What the supervisor knows of unix sockets (guarded by State::mutex; the listed and bound
// sockets are the gate's, which guards them itself).
struct Known {
  std::set<std::uint64_t> substitutes;  // SO_COOKIE of each socket substitute_datagram_pair made
  std::vector<UnixRefusal> refusals;
};

}  // namespace

struct UnixSupervisor::State : std::enable_shared_from_this<UnixSupervisor::State> {
  UnixSocketRules rules;
  std::optional<Identity> launcher;  // rules.launcher's file, identified when the run starts
  Fd listener;
  Fd stop_event;
  unix_sockets::UnixSocketGate gate;  // pathname connects and the sandbox's binds
  mutable std::mutex mutex;
  Known known;
  std::thread thread;
  std::condition_variable workers_done;  // signalled when active_workers drops (mutex)
  std::set<int> busy_sockets;            // sockets workers are connecting (mutex)
  std::atomic<int> active_workers{0};
  std::atomic<bool> stopping{false};
  bool stopped = false;  // stop() ran (only the owner's thread touches it)
  // Owner-driven (attach): the owner serves the listener until `threaded`; `hung_up` once no
  // process is left under the filter. Only the owner's thread touches them.
  bool threaded = false;
  bool hung_up = false;
  // The pair factory (substitute_datagram_pair), started at the first datagram socketpair of
  // the run; only the thread that serves the listener (one at a time) touches it.
  Fd factory;
  pid_t factory_pid = 0;
  bool factory_tried = false;
};

namespace {

using State = UnixSupervisor::State;

void respond(State& state, std::uint64_t id, std::int64_t value, int error) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.val = value;
  resp.error = error == 0 ? 0 : -error;
  // ENOENT: the caller is gone or was interrupted by a fatal signal; nothing to answer.
  ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

void respond_result(State& state, std::uint64_t id, int rc, int error) {
  respond(state, id, rc == 0 ? 0 : -1, rc == 0 ? 0 : error);
}

bool still_valid(State& state, std::uint64_t id) {
  std::uint64_t copy = id;
  return ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &copy) == 0;
}

void record_refusal(State& state, std::string address, const char* kind = "unix") {
  std::lock_guard lock(state.mutex);
  if (state.known.refusals.size() < kMaxRefusals)
    state.known.refusals.push_back({kind, std::move(address)});
}

// "ADDRESS:PORT" ("[ADDRESS]:PORT" for IPv6) of an inet address, or "" for another family.
std::string inet_text(const sockaddr_storage& address, socklen_t length) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET && length >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) return {};
    return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (address.ss_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    if (inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text) == nullptr) return {};
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return {};
}

// A connect out of the sandbox's private network namespace, which has nothing but its
// loopback: ENETUNREACH is the sandbox's refusal (no route out), recorded as kind "ip". With
// the host's namespace (network enabled) the answer is the network's, not the sandbox's.
void note_unreachable(State& state, const sockaddr_storage& address, socklen_t length, int error) {
  if (error != ENETUNREACH || !state.rules.private_network) return;
  std::string text = inet_text(address, length);
  if (!text.empty()) record_refusal(state, std::move(text), "ip");
}

// ---- performing calls ----

int do_call(int nr, int socket, const sockaddr* address, socklen_t length) {
  const int rc = nr == __NR_bind ? bind(socket, address, length) : connect(socket, address, length);
  return rc == 0 ? 0 : errno;
}

bool is_blocking(int socket) {
  const int flags = fcntl(socket, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) == 0;
}

// Connects in a worker thread when the socket blocks, else here; answers the caller either way.
// `keep` (an O_PATH descriptor the address names) lives until the connect is done.
void connect_and_respond(State& state, Call call, sockaddr_storage address, socklen_t length,
                         Fd keep = {}) {
  const bool worker = is_blocking(call.socket.get()) && state.active_workers.load() < kMaxWorkers &&
                      !state.stopping.load();
  if (!worker) {
    const int error = do_call(__NR_connect, call.socket.get(),
                              reinterpret_cast<const sockaddr*>(&address), length);
    // Recorded before the answer: the caller's next call cannot be recorded ahead of it.
    note_unreachable(state, address, length, error);
    respond_result(state, call.id, error == 0 ? 0 : -1, error);
    return;
  }
  // Detached, holding the state alive: a worker never outlives what it uses, and a finished
  // one leaves nothing behind (a long run makes many connects).
  std::lock_guard lock(state.mutex);
  state.active_workers.fetch_add(1);
  const int socket_number = call.socket.get();
  state.busy_sockets.insert(socket_number);
  std::shared_ptr<State> shared = state.shared_from_this();
  try {
    std::thread([shared, id = call.id, socket = std::move(call.socket), address, length,
                 keep = std::move(keep)]() {
      const int error =
          do_call(__NR_connect, socket.get(), reinterpret_cast<const sockaddr*>(&address), length);
      note_unreachable(*shared, address, length, error);
      respond_result(*shared, id, error == 0 ? 0 : -1, error);
      std::lock_guard done(shared->mutex);
      shared->busy_sockets.erase(socket.get());
      shared->active_workers.fetch_sub(1);
      shared->workers_done.notify_all();
    }).detach();
  } catch (const std::system_error&) {
    // No thread: the lambda (and the socket) is gone; the caller gets EAGAIN.
    state.busy_sockets.erase(socket_number);
    state.active_workers.fetch_sub(1);
    respond_result(state, call.id, -1, EAGAIN);
  }
}

void perform_as_given(State& state, Call call) {
  if (call.nr == __NR_connect) {
    const sockaddr_storage address = call.address;
    const socklen_t length = call.length;
    connect_and_respond(state, std::move(call), address, length);
    return;
  }
  const int error = do_call(call.nr, call.socket.get(),
                            reinterpret_cast<const sockaddr*>(&call.address), call.length);
  respond_result(state, call.id, error == 0 ? 0 : -1, error);
}

// ---- unix pathname sockets ----

void connect_pathname(State& state, Call call, const std::string& path) {
  unix_sockets::UnixSocketGate::Verdict verdict = state.gate.decide_pathname(call.pid, path);
  using Outcome = unix_sockets::UnixSocketGate::Outcome;
  if (verdict.outcome == Outcome::kFail) return respond_result(state, call.id, -1, verdict.error);
  if (verdict.outcome == Outcome::kRefuse) {
    record_refusal(state, path);
    return respond_result(state, call.id, -1, kRefusalErrno);
  }
  // Through the very descriptor that was checked: a rename or symlink swap after the check
  // changes nothing.
  socklen_t length = 0;
  const sockaddr_storage address = unix_sockets::address_of_descriptor(verdict.file.get(), length);
  connect_and_respond(state, std::move(call), address, length, Fd(verdict.file.release()));
}

// bind() is never refused (a bind only names the caller's own socket, in a place the kernel
// checks as the caller's), so it is the one call the kernel is let to continue: the decision
// does not rest on the address. Performing it here instead would store sbx's view of the name
// (getsockname, which multiprocessing hands to its clients, would answer it). The socket is
// kept until the bind is seen done, to record which file it created.
void bind_continues(State& state, const seccomp_notif& request, Fd socket, int domain) {
  if (socket.ok() && domain == AF_UNIX)
    state.gate.note_bind(UniqueFd(socket.release()), static_cast<pid_t>(request.pid));
  seccomp_notif_resp resp{};
  resp.id = request.id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

// ---- unix abstract names ----

std::string printable_abstract(const std::string& name) {
  std::string out = "@";
  for (char c : name) out.push_back(c == '\0' ? '@' : c);
  return out;
}

// connect() on a unix socket.
void unix_connect(State& state, Call call) {
  const socklen_t path_offset = offsetof(sockaddr_un, sun_path);
  const auto* un = reinterpret_cast<const sockaddr_un*>(&call.address);
  // No name (too short to carry one), or not AF_UNIX: the kernel fails (EINVAL) or, for
  // AF_UNSPEC, disconnects, without looking anything up; performed as given.
  if (call.length <= path_offset || un->sun_family != AF_UNIX)
    return perform_as_given(state, std::move(call));
  const std::size_t size = call.length - path_offset;
  if (un->sun_path[0] == '\0') {
    const std::string name(un->sun_path + 1, size - 1);
    if (state.rules.private_network || state.gate.abstract_name_is_ours(name))
      return perform_as_given(state, std::move(call));
    record_refusal(state, printable_abstract(name));
    return respond_result(state, call.id, -1, kRefusalErrno);
  }
  connect_pathname(state, std::move(call), std::string(un->sun_path, strnlen(un->sun_path, size)));
}

// ---- sendto() with a destination (report-only) ----

// The largest payload copied for a send performed here: a UDP datagram is at most 65507
// bytes (IPv4), 65527 (IPv6); longer sends fail EMSGSIZE in the kernel and are let through.
constexpr std::size_t kMaxDatagram = 65536;

void continue_call(State& state, std::uint64_t id) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

// A destination the private namespace's loopback takes: 127.0.0.0/8 and 0.0.0.0 (which the
// kernel sends to loopback), ::1 and ::, and the IPv4-mapped forms of the IPv4 ones.
bool loopback_destination(const sockaddr_storage& address, socklen_t length) {
  const auto v4_local = [](std::uint32_t host_order) {
    return (host_order >> 24) == 127 || host_order == 0;
  };
  if (address.ss_family == AF_INET && length >= sizeof(sockaddr_in))
    return v4_local(ntohl(reinterpret_cast<const sockaddr_in*>(&address)->sin_addr.s_addr));
  if (address.ss_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_UNSPECIFIED(&a)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
      std::uint32_t v4 = 0;
      std::memcpy(&v4, a.s6_addr + 12, sizeof v4);
      return v4_local(ntohl(v4));
    }
  }
  return false;
}

// sendto() with a destination, notified only in a private network namespace. Nothing is
// decided here: the namespace has no route but its loopback, and the kernel's routing is what
// refuses every other destination. The supervisor only makes that refusal visible. A send to
// a loopback address (the usual one) continues as the caller's own call, unreported; any other
// is performed here on the duplicate with private copies of the address and the datagram, so
// the kernel's answer (ENETUNREACH: recorded as kind "ip") is known and injected. A command
// that rewrites the address after the copy can dodge a report, never the kernel's refusal.
void refuse_addressed_send(State& state, const seccomp_notif& request);
bool is_substitute(State& state, int socket);

void send_to(State& state, const seccomp_notif& request, Fd socket, int domain) {
  if (socket.ok() && domain == AF_UNIX && is_substitute(state, socket.get()))
    return refuse_addressed_send(state, request);
  int type = 0;
  socklen_t type_size = sizeof type;
  if (!socket.ok() || (domain != AF_INET && domain != AF_INET6) ||
      getsockopt(socket.get(), SOL_SOCKET, SO_TYPE, &type, &type_size) != 0 || type != SOCK_DGRAM ||
      !state.rules.private_network)
    return continue_call(state, request.id);
  const auto pid = static_cast<pid_t>(request.pid);
  // int and size_t arguments, read as the kernel reads them.
  const auto address_length = static_cast<int>(request.data.args[5]);
  const auto size = static_cast<std::size_t>(request.data.args[2]);
  const auto flags = static_cast<int>(request.data.args[3]);
  if (address_length <= 0 || static_cast<std::size_t>(address_length) > sizeof(sockaddr_storage))
    return continue_call(state, request.id);
  sockaddr_storage address{};
  const auto length = static_cast<socklen_t>(address_length);
  iovec local{&address, length};
  iovec remote{reinterpret_cast<void*>(request.data.args[4]), length};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(length) ||
      loopback_destination(address, length) || size > kMaxDatagram)
    return continue_call(state, request.id);
  std::vector<char> payload(size);
  if (size > 0) {
    iovec local_data{payload.data(), size};
    iovec remote_data{reinterpret_cast<void*>(request.data.args[1]), size};
    if (process_vm_readv(pid, &local_data, 1, &remote_data, 1, 0) != static_cast<ssize_t>(size))
      return continue_call(state, request.id);
  }
  if (!still_valid(state, request.id)) return;
  const ssize_t sent = sendto(socket.get(), payload.data(), size, flags | MSG_NOSIGNAL,
                              reinterpret_cast<const sockaddr*>(&address), length);
  const int error = sent < 0 ? errno : 0;
  note_unreachable(state, address, length, error);
  respond(state, request.id, sent < 0 ? -1 : sent, error);
}

// For the owner (serve()): a send on a socket that is not an inet one only continues (send_to
// performs nothing for it), so it is continued here, without a thread. bwrap's own set-up of
// the loopback in a private network namespace sends to netlink with an address: every such run
// would otherwise start the thread for it. Only continued, on the domain of the descriptor as
// duplicated now: a caller that swaps in an inet socket meanwhile gets its send unreported,
// never a route the namespace lacks (the kernel's routing decides; send_to's comment). False
// (nothing answered) for an inet socket, or when the socket cannot be looked at: the thread
// takes the call then, as before.
bool continued_unless_inet(State& state, const seccomp_notif& request) {
  Fd pidfd(unix_sockets::pidfd_of_caller(static_cast<pid_t>(request.pid)));
  if (!pidfd.ok()) return false;
  // The pid may have been reused if the caller died: valid still means it is our caller.
  if (!still_valid(state, request.id)) return true;
  const Fd socket(static_cast<int>(
      syscall(SYS_pidfd_getfd, pidfd.get(), static_cast<int>(request.data.args[0]), 0)));
  int domain = 0;
  socklen_t domain_size = sizeof domain;
  if (!socket.ok() || getsockopt(socket.get(), SOL_SOCKET, SO_DOMAIN, &domain, &domain_size) != 0 ||
      domain == AF_INET || domain == AF_INET6)
    return false;
  if (domain == AF_UNIX && is_substitute(state, socket.get())) {
    refuse_addressed_send(state, request);
    return true;
  }
  continue_call(state, request.id);
  return true;
}

// ---- unix datagram sockets ----
//
// No unix datagram socket ever exists inside the sandbox: socket() of one is refused (and
// reported), and a datagram socketpair() is answered with a seqpacket pair made here. A
// seqpacket socket keeps message boundaries like a datagram one, but cannot be re-addressed:
// net/unix/af_unix.c unix_seqpacket_sendmsg() clears msg_namelen (so sendto, sendmsg and
// sendmmsg go to the pair's peer, whatever address they carry) and unix_stream_connect()
// refuses a connected socket (EISCONN) and a datagram server (EPROTOTYPE). So no destination in
// memory the filter cannot read (sendmsg's msg_name) matters, the sends are not notified, and
// a run that makes no datagram socket pays nothing. A multithreaded command swapping
// descriptors (dup2) changes nothing either: there is no datagram socket to swap in.

std::uint64_t cookie_of(int socket) {
  std::uint64_t cookie = 0;
  socklen_t size = sizeof cookie;
  return getsockopt(socket, SOL_SOCKET, SO_COOKIE, &cookie, &size) == 0 ? cookie : 0;
}

bool is_substitute(State& state, int socket) {
  const std::uint64_t cookie = cookie_of(socket);
  std::lock_guard lock(state.mutex);
  return cookie != 0 && state.known.substitutes.contains(cookie);
}

// The kernel's own answer to a unix socket()/socketpair() the filter notified (a type outside
// stream and seqpacket), when it would refuse it anyway (__sys_socket(), unix_create()): 0 for
// a datagram socket it would make.
int kernel_refusal(int type, int protocol) {
  if ((type & ~0xf & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) != 0) return EINVAL;
  if (protocol != 0 && protocol != PF_UNIX) return EPROTONOSUPPORT;
  if ((type & 0xf) != SOCK_DGRAM && (type & 0xf) != SOCK_RAW) return ESOCKTNOSUPPORT;
  return 0;
}

std::string datagram_call(const char* call, int type) {
  return std::string(call) + "(AF_UNIX, " + ((type & 0xf) == SOCK_RAW ? "SOCK_RAW" : "SOCK_DGRAM") +
         ")";
}

// True when `tid` runs the launcher's executable (/proc/TID/exe is that file). Only a report
// rests on it: a command that runs the launcher itself can at most hide its own refusals.
bool runs_the_launcher(State& state, pid_t tid) {
  struct stat st {};
  return state.launcher && stat(proc_path(tid, "exe").c_str(), &st) == 0 &&
         Identity{st.st_dev, st.st_ino} == *state.launcher;
}

// socket(AF_UNIX, SOCK_DGRAM or SOCK_RAW): refused, reported as kind "unix" with the call (the
// destination is not named yet). Its only use is to name host paths.
void refuse_datagram_socket(State& state, const seccomp_notif& request) {
  const int type = static_cast<int>(request.data.args[1]);
  if (const int error = kernel_refusal(type, static_cast<int>(request.data.args[2])); error != 0)
    return respond_result(state, request.id, -1, error);
  if (!runs_the_launcher(state, static_cast<pid_t>(request.pid)))
    record_refusal(state, datagram_call("socket", type));
  respond_result(state, request.id, -1, EPERM);
}

// The pair factory: a process of sbx's in a network namespace of its own, empty (not even its
// loopback is up), that makes each substituted pair. A socket belongs to the network namespace
// of the task that made it, and reaches it through ioctls that need no privilege (SIOCGIFCONF,
// SIOCGIFADDR, SIOCGIFHWADDR... list its interfaces and addresses): a pair made by sbx itself
// would show a sandbox in a private namespace the host's network, and take abstract names
// (SO_PASSCRED's autobind) in the host's. sbx's threads cannot enter another namespace
// without CAP_SYS_ADMIN, so a process does: unshare(CLONE_NEWNET) (root), else with
// CLONE_NEWUSER (as bwrap does). It only ever makes seqpacket pairs and sends them back.
// Started by clone() without an exit signal (the spawner's SIGCHLD is bwrap's), reaped by
// stop(); it dies with the thread that started it (PR_SET_PDEATHSIG) and on EOF.

// The factory's loop, in the cloned child: raw system calls only (it is a copy of a
// multithreaded process), never returns.
[[noreturn]] void run_pair_factory(int channel, pid_t parent) noexcept {
  syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (syscall(SYS_getppid) != parent) syscall(SYS_exit_group, 1);
  // Every descriptor of sbx's but its channel: its copy of sbx's end would keep the channel
  // from ever reading EOF, and the factory needs nothing else (close_range, Linux 5.9).
  if ((channel > 0 && syscall(SYS_close_range, 0, channel - 1, 0) != 0) ||
      syscall(SYS_close_range, channel + 1, ~0U, 0) != 0)
    syscall(SYS_exit_group, 1);
  if (syscall(SYS_unshare, CLONE_NEWNET) != 0 &&
      syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNET) != 0)
    syscall(SYS_exit_group, 1);
  char byte = 'R';
  if (syscall(SYS_sendto, channel, &byte, 1, MSG_NOSIGNAL, nullptr, 0) != 1)
    syscall(SYS_exit_group, 1);
  for (;;) {
    if (syscall(SYS_recvfrom, channel, &byte, 1, 0, nullptr, 0) != 1) syscall(SYS_exit_group, 0);
    int pair[2] = {-1, -1};
    const bool made = syscall(SYS_socketpair, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof pair)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (made) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof pair);
      std::memcpy(CMSG_DATA(cmsg), pair, sizeof pair);
    }
    const long sent = syscall(SYS_sendmsg, channel, &msg, MSG_NOSIGNAL);
    if (made) {
      syscall(SYS_close, pair[0]);
      syscall(SYS_close, pair[1]);
    }
    if (sent != 1) syscall(SYS_exit_group, 0);
  }
}

// Starts the factory once per run; false when it cannot run (no user namespaces for an
// unprivileged sbx, say): datagram socketpairs are then refused, as before.
bool pair_factory_ready(State& state) {
  if (state.factory.ok()) return true;
  if (state.factory_tried) return false;
  state.factory_tried = true;
  int channel[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) return false;
  Fd ours(channel[0]);
  Fd theirs(channel[1]);
  const pid_t parent = getpid();
  // Like fork(), without SIGCHLD at exit and without glibc's fork handlers.
  const long pid = syscall(SYS_clone, 0, nullptr, nullptr, nullptr, 0);
  if (pid == 0) run_pair_factory(theirs.get(), parent);
  if (pid < 0) return false;
  theirs.reset();
  state.factory_pid = static_cast<pid_t>(pid);
  char ready = 0;
  if (recv(ours.get(), &ready, 1, 0) != 1 || ready != 'R') return false;
  state.factory = std::move(ours);
  return true;
}

// A seqpacket pair from the factory, or false.
bool pair_from_factory(State& state, Fd& first, Fd& second) {
  if (!pair_factory_ready(state)) return false;
  const char request = 'P';
  if (send(state.factory.get(), &request, 1, MSG_NOSIGNAL) != 1) return false;
  char byte = 0;
  iovec iov{&byte, 1};
  int pair[2] = {-1, -1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof pair)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(state.factory.get(), &msg, MSG_CMSG_CLOEXEC) != 1) return false;
  const cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == nullptr || cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS ||
      cmsg->cmsg_len != CMSG_LEN(sizeof pair))
    return false;
  std::memcpy(pair, CMSG_DATA(cmsg), sizeof pair);
  first = Fd(pair[0]);
  second = Fd(pair[1]);
  return true;
}

void stop_pair_factory(State& state) {
  state.factory.reset();  // EOF: the factory exits
  if (state.factory_pid > 0) waitpid(state.factory_pid, nullptr, __WALL);
  state.factory_pid = 0;
}

// Installs `fd` in the caller (SECCOMP_IOCTL_NOTIF_ADDFD, Linux 5.9): its number there, or
// -errno.
int install_in_caller(State& state, std::uint64_t id, int fd, bool cloexec) {
  seccomp_notif_addfd addfd{};
  addfd.id = id;
  addfd.srcfd = static_cast<std::uint32_t>(fd);
  addfd.newfd_flags = cloexec ? O_CLOEXEC : 0;
  const int number = ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
  return number < 0 ? -errno : number;
}

// socketpair(AF_UNIX, SOCK_DGRAM or SOCK_RAW): a seqpacket pair (above) from the pair factory
// with the caller's SOCK_NONBLOCK (a file status flag: shared with the caller's descriptors)
// and SOCK_CLOEXEC, installed in the caller, its two numbers written to the caller's sv[2].
// Nothing is decided on the caller's memory; a write that fails (sv unmapped meanwhile) answers
// EFAULT and leaves the two descriptors in the caller, as a partial ADDFD failure leaves the
// first. The pair is remembered (SO_COOKIE, never reused) so that a bind of it can be refused
// (it belongs to the factory's network namespace, not the sandbox's) and an addressed sendto on
// it reported.
void substitute_datagram_pair(State& state, const seccomp_notif& request) {
  const int type = static_cast<int>(request.data.args[1]);
  if (const int error = kernel_refusal(type, static_cast<int>(request.data.args[2])); error != 0)
    return respond_result(state, request.id, -1, error);
  Fd first;
  Fd second;
  if (!pair_from_factory(state, first, second)) return respond_result(state, request.id, -1, EPERM);
  // SOCK_NONBLOCK is a file status flag: set here, it is the caller's too.
  if ((type & SOCK_NONBLOCK) != 0 && (fcntl(first.get(), F_SETFL, O_NONBLOCK) != 0 ||
                                      fcntl(second.get(), F_SETFL, O_NONBLOCK) != 0))
    return respond_result(state, request.id, -1, EPERM);
  {
    std::lock_guard lock(state.mutex);
    if (state.known.substitutes.size() + 2 <= kMaxSubstitutes) {
      state.known.substitutes.insert(cookie_of(first.get()));
      state.known.substitutes.insert(cookie_of(second.get()));
    }
  }
  const bool cloexec = (type & SOCK_CLOEXEC) != 0;
  int numbers[2] = {-1, -1};
  for (int i = 0; i < 2; ++i) {
    numbers[i] = install_in_caller(state, request.id, i == 0 ? first.get() : second.get(), cloexec);
    if (numbers[i] == -ENOENT) return;  // the caller is gone or was interrupted
    // Out of descriptors keeps its errno; anything else (a kernel before 5.9, without ADDFD)
    // refuses the pair as before.
    if (numbers[i] < 0)
      return respond_result(state, request.id, -1, numbers[i] == -EMFILE ? EMFILE : EPERM);
  }
  iovec local{numbers, sizeof numbers};
  iovec remote{reinterpret_cast<void*>(request.data.args[3]), sizeof numbers};
  if (process_vm_writev(static_cast<pid_t>(request.pid), &local, 1, &remote, 1, 0) !=
      static_cast<ssize_t>(sizeof numbers))
    return respond_result(state, request.id, -1, EFAULT);
  respond(state, request.id, 0, 0);
}

// The unix socket calls the filter notifies for their type (not connect, bind or sendto).
bool datagram_socket_call(const seccomp_notif& request) {
  return request.data.nr == __NR_socket || request.data.nr == __NR_socketpair;
}

void answer_datagram_socket_call(State& state, const seccomp_notif& request) {
  if (request.data.nr == __NR_socket) return refuse_datagram_socket(state, request);
  substitute_datagram_pair(state, request);
}

// A sendto() with an address on a substituted pair: the kernel would ignore the address and
// deliver to the pair's peer; refused instead (EACCES, like a refused connect) and reported
// with the address the command gave, as a datagram socket's send there would have been.
void refuse_addressed_send(State& state, const seccomp_notif& request) {
  const auto address_length = static_cast<int>(request.data.args[5]);
  sockaddr_storage address{};
  std::string named = "sendto(AF_UNIX, SOCK_DGRAM)";
  if (address_length > static_cast<int>(offsetof(sockaddr_un, sun_path)) &&
      static_cast<std::size_t>(address_length) <= sizeof(sockaddr_un)) {
    iovec local{&address, static_cast<std::size_t>(address_length)};
    iovec remote{reinterpret_cast<void*>(request.data.args[4]),
                 static_cast<std::size_t>(address_length)};
    const auto* un = reinterpret_cast<const sockaddr_un*>(&address);
    const std::size_t size =
        static_cast<std::size_t>(address_length) - offsetof(sockaddr_un, sun_path);
    if (process_vm_readv(static_cast<pid_t>(request.pid), &local, 1, &remote, 1, 0) ==
            address_length &&
        un->sun_family == AF_UNIX)
      named = un->sun_path[0] == '\0' ? printable_abstract(std::string(un->sun_path + 1, size - 1))
                                      : std::string(un->sun_path, strnlen(un->sun_path, size));
  }
  record_refusal(state, std::move(named));
  respond_result(state, request.id, -1, kRefusalErrno);
}

// ---- one notification ----

void handle(State& state, const seccomp_notif& request) {
  Call call;
  call.id = request.id;
  call.nr = request.data.nr;
  call.pid = static_cast<pid_t>(request.pid);
  if (datagram_socket_call(request)) return answer_datagram_socket_call(state, request);
  if (call.nr != __NR_connect && call.nr != __NR_bind && call.nr != __NR_sendto)
    return respond_result(state, call.id, -1, ENOSYS);
  // int arguments: the kernel reads the low 32 bits.
  const int fd = static_cast<int>(request.data.args[0]);
  const int length = static_cast<int>(request.data.args[2]);
  Fd pidfd(unix_sockets::pidfd_of_caller(call.pid));
  // The pid may have been reused if the caller died: valid still means it is our caller.
  if (!still_valid(state, call.id)) return;
  if (!pidfd.ok()) {
    // Out of descriptors, say: a bind goes ahead unrecorded (nothing may connect to it), a
    // connect fails.
    if (call.nr == __NR_bind) return bind_continues(state, request, Fd{}, -1);
    if (call.nr == __NR_sendto) return continue_call(state, call.id);
    return respond_result(state, call.id, -1, EAGAIN);
  }
  call.socket = Fd(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), fd, 0)));
  const int getfd_error = errno;
  int domain = 0;
  socklen_t domain_size = sizeof domain;
  if (call.socket.ok() &&
      getsockopt(call.socket.get(), SOL_SOCKET, SO_DOMAIN, &domain, &domain_size) != 0)
    domain = -1;
  // A substituted pair is a socket of the pair factory's network namespace: a name bound to it
  // would not be the sandbox's. Refused as the kernel refuses binding a socket twice; a
  // connected pair has no use for a name.
  if (call.nr == __NR_bind && domain == AF_UNIX && is_substitute(state, call.socket.get()))
    return respond_result(state, call.id, -1, EINVAL);
  if (call.nr == __NR_bind) return bind_continues(state, request, std::move(call.socket), domain);
  if (call.nr == __NR_sendto) return send_to(state, request, std::move(call.socket), domain);
  if (!call.socket.ok())
    return respond_result(state, call.id, -1, getfd_error == EBADF ? EBADF : EPERM);
  if (domain < 0) return respond_result(state, call.id, -1, ENOTSOCK);
  if (length < 0 || static_cast<std::size_t>(length) > sizeof(sockaddr_storage))
    return respond_result(state, call.id, -1, EINVAL);
  call.length = static_cast<socklen_t>(length);
  if (call.length > 0) {
    iovec local{&call.address, call.length};
    iovec remote{reinterpret_cast<void*>(request.data.args[1]), call.length};
    if (process_vm_readv(call.pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(call.length))
      return respond_result(state, call.id, -1, EFAULT);
  }
  // From here on only the private copy counts; checked again that it is the caller's.
  if (!still_valid(state, call.id)) return;
  if (domain != AF_UNIX) return perform_as_given(state, std::move(call));
  unix_connect(state, std::move(call));
}

void block_all_signals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, nullptr);
}

// The supervisor acts with the sandbox's own privileges, not sbx's: without effective
// capabilities (a root sbx would otherwise bind privileged ports of the host's namespace or
// create socket files where the command's user may not write for it). Reaching the sandbox's
// processes needs none: sbx's user owns the sandbox's user namespace. Threads start with their
// creator's capabilities, so the workers have none either.
bool drop_effective_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (auto& d : data) d.effective = 0;
  return syscall(SYS_capset, &header, data) == 0;
}

// The supervisor's thread. `first`, when set, is a call the owner received before handing the
// listener over (attach/serve), answered first.
void run(State& state, std::optional<seccomp_notif> first) {
  block_all_signals();
  if (!drop_effective_capabilities()) {
    // Fail closed: every call is refused rather than performed with sbx's privileges.
    if (first) respond_result(state, first->id, -1, EPERM);
    for (;;) {
      std::array<pollfd, 2> fds{
          {{state.listener.get(), POLLIN, 0}, {state.stop_event.get(), POLLIN, 0}}};
      if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      if (fds[1].revents != 0 || (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return;
      seccomp_notif request{};
      if (ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &request) == 0)
        respond_result(state, request.id, -1, EPERM);
    }
  }
  if (first) handle(state, *first);
  for (;;) {
    std::array<pollfd, 2> fds{
        {{state.listener.get(), POLLIN, 0}, {state.stop_event.get(), POLLIN, 0}}};
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) {
      if ((fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) return;  // no caller left
      continue;
    }
    seccomp_notif request{};
    if (ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &request) != 0) continue;
    handle(state, request);
  }
}

// Starts the supervisor's thread (once), handing it `first`. False (with the reason in `error`)
// when it cannot; nothing was handed over then.
bool start_thread(State& state, std::optional<seccomp_notif> first, std::string& error) {
  state.stop_event = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!state.stop_event.ok()) {
    error = std::string("eventfd failed: ") + std::strerror(errno);
    return false;
  }
  // Created with every signal blocked, so the thread never takes a signal meant for sbx's
  // signalfd (threads inherit the creator's mask).
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    state.thread = std::thread([raw = &state, first] { run(*raw, first); });
  } catch (const std::system_error& e) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    state.stop_event.reset();
    error = std::string("cannot start its thread: ") + e.what();
    return false;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  state.threaded = true;
  return true;
}

Status load_listed(State& state) {
  // Absent now (or not a socket): not allowed (the README says so).
  for (const std::string& path : state.rules.allowed_paths) state.gate.list_path(path);
  return {};
}

}  // namespace

UnixSupervisor::UnixSupervisor(std::shared_ptr<State> state) : state_(std::move(state)) {}

namespace {

Result<std::shared_ptr<State>> make_state(int listener, UnixSocketRules rules) {
  auto state = std::make_shared<State>();
  state->listener = Fd(listener);
  state->rules = std::move(rules);
  if (!state->listener.ok()) return Error{"unix-socket supervisor: no seccomp listener"};
  struct stat launcher {};
  if (!state->rules.launcher.empty() && stat(state->rules.launcher.c_str(), &launcher) == 0)
    state->launcher = Identity{launcher.st_dev, launcher.st_ino};
  if (Status listed = load_listed(*state); !listed.ok()) return listed.failure();
  return state;
}

}  // namespace

Result<std::unique_ptr<UnixSupervisor>> UnixSupervisor::start(int listener, UnixSocketRules rules) {
  Result<std::shared_ptr<State>> state = make_state(listener, std::move(rules));
  if (!state.ok()) return state.failure();
  std::string error;
  if (!start_thread(**state, std::nullopt, error)) return Error{"unix-socket supervisor: " + error};
  return std::unique_ptr<UnixSupervisor>(new UnixSupervisor(std::move(*state)));
}

Result<std::unique_ptr<UnixSupervisor>> UnixSupervisor::attach(int listener,
                                                               UnixSocketRules rules) {
  Result<std::shared_ptr<State>> state = make_state(listener, std::move(rules));
  if (!state.ok()) return state.failure();
  return std::unique_ptr<UnixSupervisor>(new UnixSupervisor(std::move(*state)));
}

int UnixSupervisor::poll_fd() const {
  if (!state_ || state_->threaded || state_->hung_up || state_->stopped) return -1;
  return state_->listener.get();
}

void UnixSupervisor::serve() {
  if (poll_fd() < 0) return;
  State& state = *state_;
  // Looked at again here: RECV waits when nothing is pending, and the owner must never wait.
  // (A pending call withdrawn by a fatal signal after this poll makes RECV fail, not wait.)
  pollfd ready{state.listener.get(), POLLIN, 0};
  if (poll(&ready, 1, 0) <= 0) return;
  if ((ready.revents & POLLIN) == 0) {
    if ((ready.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) state.hung_up = true;
    return;
  }
  seccomp_notif request{};
  if (ioctl(state.listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &request) != 0) return;
  // A bind is continued as the caller's own call (after its socket is noted): nothing is
  // performed with the owner's privileges, nothing blocks. Neither does a unix datagram
  // socket() (refused) or socketpair() (a seqpacket pair installed in the caller).
  if (request.data.nr == __NR_bind || datagram_socket_call(request)) return handle(state, request);
  if (request.data.nr == __NR_sendto && continued_unless_inet(state, request)) return;
  std::string ignored;
  if (start_thread(state, request, ignored)) return;
  if (request.data.nr == __NR_sendto) return continue_call(state, request.id);
  respond_result(state, request.id, -1, EAGAIN);
}

void UnixSupervisor::stop() {
  if (!state_ || state_->stopped) return;
  state_->stopped = true;
  state_->stopping.store(true);
  if (state_->thread.joinable()) {
    const std::uint64_t one = 1;
    (void)!write(state_->stop_event.get(), &one, sizeof one);
    state_->thread.join();
  }
  stop_pair_factory(*state_);
  std::unique_lock lock(state_->mutex);
  // A connect still blocking (a TCP handshake to a silent host) is cut short: the sandbox that
  // waited for it is gone. Workers hold the state, so a late one is harmless; wait briefly.
  for (int socket : state_->busy_sockets) shutdown(socket, SHUT_RDWR);
  state_->workers_done.wait_for(lock, std::chrono::seconds(5),
                                [this] { return state_->active_workers.load() == 0; });
}

UnixSupervisor::~UnixSupervisor() { stop(); }

std::vector<UnixRefusal> UnixSupervisor::refusals() const {
  std::lock_guard lock(state_->mutex);
  return state_->known.refusals;
}

}  // namespace sbx::bwrap
