// The unix-socket supervisor on its own: a forked child installs the notification filter and
// tries things; this process supervises it exactly as the bwrap spawner does, and checks from
// the outside (host listeners count what reached them).
#include "sbx/bwrap/unix_supervisor.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sbx/bwrap/launch_form.hpp"

namespace fs = std::filesystem;
using sbx::bwrap::UnixSocketRules;
using sbx::bwrap::UnixSupervisor;

namespace {

sockaddr_un address_of(const std::string& name, socklen_t& length) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, name.data(), name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() +
                                  (name.empty() || name.front() != '\0' ? 1 : 0));
  return sa;
}

// A listening host socket (pathname, or abstract when the name starts with '\0') that counts
// the connections that reached it.
class HostListener {
 public:
  explicit HostListener(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t length = 0;
    const sockaddr_un sa = address_of(name, length);
    ok_ =
        ::bind(fd_, reinterpret_cast<const sockaddr*>(&sa), length) == 0 && ::listen(fd_, 64) == 0;
  }
  ~HostListener() { ::close(fd_); }
  HostListener(const HostListener&) = delete;
  HostListener& operator=(const HostListener&) = delete;
  bool ok() const { return ok_; }
  int hits() {
    for (int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC); c >= 0;
         c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) {
      ::close(c);
      ++hits_;
    }
    return hits_;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  int hits_ = 0;
};

// connect() on a fresh stream socket; 0 or the errno.
int connect_to(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  socklen_t length = 0;
  const sockaddr_un sa = address_of(name, length);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), length);
  const int error = rc == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

// A listening socket of the child's own; -1 on failure.
int listen_on(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t length = 0;
  const sockaddr_un sa = address_of(name, length);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), length) != 0 || ::listen(fd, 64) != 0)
    return -1;
  return fd;
}

// Brings up the loopback of this process's network namespace (as bwrap does for its own).
bool loopback_up() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq request{};
  std::strcpy(request.ifr_name, "lo");
  const bool ok = fd >= 0 && ::ioctl(fd, SIOCGIFFLAGS, &request) == 0 &&
                  (request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP),
                   ::ioctl(fd, SIOCSIFFLAGS, &request) == 0);
  if (fd >= 0) ::close(fd);
  return ok;
}

// How this process serves the child's listener: as the bwrap spawner does (owner-driven:
// UnixSupervisor::attach, this thread polls and calls serve(), a thread starts at the first
// connect or send), or with a thread from the start (UnixSupervisor::start).
enum class SupervisorServing { kOwner, kThread };

// Serves `supervisor` from this thread until the process `pid` has ended; false on error.
bool serve_until_exit(UnixSupervisor& supervisor, pid_t pid) {
  const int exited = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (exited < 0) return false;
  for (;;) {
    std::array<pollfd, 2> fds{{{exited, POLLIN, 0}, {supervisor.poll_fd(), POLLIN, 0}}};
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) supervisor.serve();
    if (fds[0].revents != 0) {
      ::close(exited);
      return true;
    }
  }
  ::close(exited);
  return false;
}

// Runs `body` in a forked child under the supervisor's filter, supervised by this process with
// `rules`; the child's exit code (body's return value), or -1. `refusals`, when given, gets
// what the supervisor refused. With `own_network` the child first moves into a network
// namespace of its own (only its loopback: no route anywhere else), as under bwrap; `prepare`
// runs there before the filter, with the child's privileges (-1: skip the body, exit 123).
int run_supervised(UnixSocketRules rules, const std::function<int()>& body,
                   std::vector<sbx::bwrap::UnixRefusal>* refusals = nullptr,
                   bool own_network = false, SupervisorServing serving = SupervisorServing::kOwner,
                   const std::function<int()>& prepare = {}) {
  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) return -1;
  const bool report_sends = rules.private_network;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (own_network && (::unshare(CLONE_NEWNET) != 0 || !loopback_up())) ::_exit(122);
    if (prepare && prepare() != 0) ::_exit(123);
    const int listener = sbx::bwrap::install_unix_notify_filter(report_sends);
    if (listener < 0 || !sbx::bwrap::send_descriptor(channel[1], listener)) ::_exit(120);
    ::close(listener);
    // Like a sandboxed command: no capability left (the supervisor reaches the caller's view
    // with the caller's privileges, not more).
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, none) != 0) ::_exit(121);
    ::_exit(body());
  }
  ::close(channel[1]);
  pollfd p{channel[0], POLLIN, 0};
  ::poll(&p, 1, 10000);
  const int listener = sbx::bwrap::receive_descriptor(channel[0]);
  ::close(channel[0]);
  auto supervisor = serving == SupervisorServing::kOwner
                        ? UnixSupervisor::attach(listener, std::move(rules))
                        : UnixSupervisor::start(listener, std::move(rules));
  if (supervisor.ok() && serving == SupervisorServing::kOwner) serve_until_exit(**supervisor, pid);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!supervisor.ok()) return -1;
  (*supervisor)->stop();
  if (refusals != nullptr) *refusals = (*supervisor)->refusals();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class UnixSupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string missing = sbx::bwrap::unix_supervisor_unavailable(); !missing.empty())
      GTEST_SKIP() << missing;
    char tmpl[] = "/tmp/sbx-unixsup-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::string dir_;
};

// The supervisor's rules come from the typed plan (launch_form.hpp), never from the printed
// argv: the listed sockets, the proxy's socket first in proxy mode, bwrap as the launcher; the
// network namespace is private unless the network is open. The command's own arguments, even
// one spelled like the printed option, are never taken for a rule.
TEST(UnixSupervisorOptions, RulesComeFromTheTypedPlan) {
  sbx::bwrap::BwrapPlan plan;
  plan.bwrap = "/usr/bin/bwrap";
  plan.net = sbx::bwrap::Stage2Net::kProxy;
  plan.proxy_port = 3128;
  plan.proxy_socket = "/tmp/p/proxy.sock";
  plan.unix_sockets = {"/run/a.sock"};
  plan.command = {"/bin/cmd", "--allow-unix-socket", "x"};
  const UnixSocketRules rules = sbx::bwrap::unix_socket_rules(plan);
  EXPECT_TRUE(rules.private_network);
  EXPECT_EQ(rules.allowed_paths, (std::vector<std::string>{"/tmp/p/proxy.sock", "/run/a.sock"}));
  EXPECT_EQ(rules.launcher, "/usr/bin/bwrap");
  plan.net = sbx::bwrap::Stage2Net::kOpen;
  EXPECT_FALSE(sbx::bwrap::unix_socket_rules(plan).private_network);
  EXPECT_EQ(sbx::bwrap::unix_socket_rules(plan).allowed_paths,
            (std::vector<std::string>{"/run/a.sock"}));
  plan.net = sbx::bwrap::Stage2Net::kPrivate;
  EXPECT_TRUE(sbx::bwrap::unix_socket_rules(plan).private_network);
}

TEST_F(UnixSupervisorTest, HostSocketIsRefusedUnlessListed) {
  HostListener host(path("host.sock"));
  ASSERT_TRUE(host.ok());
  const std::string target = path("host.sock");
  EXPECT_EQ(run_supervised({}, [&] { return connect_to(target); }), EACCES);
  EXPECT_EQ(host.hits(), 0);
  UnixSocketRules listed;
  listed.allowed_paths = {target};
  EXPECT_EQ(run_supervised(listed, [&] { return connect_to(target); }), 0);
  EXPECT_EQ(host.hits(), 1);
}

// connect() on a fresh inet stream socket to `address`:`port`; 0 or the errno.
int connect_inet(int family, const char* address, std::uint16_t port) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    ::inet_pton(AF_INET, address, &in->sin_addr);
    length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    ::inet_pton(AF_INET6, address, &in6->sin6_addr);
    length = sizeof(sockaddr_in6);
  }
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&storage), length);
  const int error = rc == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

// What was refused is recorded for the run's report, in order: a host socket with the path the
// caller gave, and a connect that finds no route out of a private network namespace as kind
// "ip" with its address (IPv6 in brackets).
TEST_F(UnixSupervisorTest, RefusalsAreRecordedWithPathAndAddress) {
  HostListener host(path("host.sock"));
  ASSERT_TRUE(host.ok());
  const std::string d = dir_;
  UnixSocketRules rules;
  rules.private_network = true;
  std::vector<sbx::bwrap::UnixRefusal> refusals;
  EXPECT_EQ(run_supervised(
                rules,
                [&] {
                  if (connect_to(d + "/host.sock") != EACCES) return 11;
                  if (connect_inet(AF_INET, "192.0.2.7", 8443) != ENETUNREACH) return 12;
                  if (connect_inet(AF_INET6, "2001:db8::7", 443) != ENETUNREACH) return 13;
                  return 0;
                },
                &refusals, /*own_network=*/true),
            0);
  ASSERT_EQ(refusals.size(), 3u);
  EXPECT_EQ(refusals[0].kind, "unix");
  EXPECT_EQ(refusals[0].address, d + "/host.sock");
  EXPECT_EQ(refusals[1].kind, "ip");
  EXPECT_EQ(refusals[1].address, "192.0.2.7:8443");
  EXPECT_EQ(refusals[2].kind, "ip");
  EXPECT_EQ(refusals[2].address, "[2001:db8::7]:443");
  EXPECT_EQ(host.hits(), 0);
}

TEST_F(UnixSupervisorTest, SymlinksRelativePathsAndMagicLinksDoNotReachAHostSocket) {
  HostListener host(path("host.sock"));
  ASSERT_TRUE(host.ok());
  fs::create_directory(path("sub"));
  fs::create_symlink(path("host.sock"), path("link.sock"));
  const std::string d = dir_;
  EXPECT_EQ(run_supervised({},
                           [&] {
                             if (::chdir((d + "/sub").c_str()) != 0) return 99;
                             const std::vector<std::string> names = {
                                 "../host.sock",
                                 "../link.sock",
                                 d + "/sub/../host.sock",
                                 "/proc/self/cwd/../host.sock",
                                 "/proc/self/root" + d + "/host.sock",
                                 "/proc/" + std::to_string(::getpid()) + "/cwd/../host.sock"};
                             for (const std::string& name : names) {
                               if (connect_to(name) == 0) return 1;
                             }
                             return 0;
                           }),
            0);
  EXPECT_EQ(host.hits(), 0);
}

TEST_F(UnixSupervisorTest, OwnServersWorkPathnameAndAbstract) {
  const std::string d = dir_;
  EXPECT_EQ(
      run_supervised({},
                     [&] {
                       const int server = listen_on(d + "/own.sock");
                       if (server < 0) return 10;
                       if (connect_to(d + "/own.sock") != 0) return 11;
                       // Relative, from the socket's directory.
                       if (::chdir(d.c_str()) != 0 || connect_to("own.sock") != 0) return 12;
                       // Renamed: still the same (sandbox-bound) inode.
                       if (::rename((d + "/own.sock").c_str(), (d + "/moved.sock").c_str()) != 0 ||
                           connect_to(d + "/moved.sock") != 0)
                         return 13;
                       const int abstract = listen_on(std::string("\0sbx-own-", 9) + d);
                       if (abstract < 0 || connect_to(std::string("\0sbx-own-", 9) + d) != 0)
                         return 14;
                       return 0;
                     }),
      0);
}

// Renamed before the supervisor saw its bind done (no connect in between), in the host's
// namespace (the network enabled): the file is no longer under the name the socket reports, so
// it is found through the socket diagnostics (linux/unix_sockets/unix_socket_gate.hpp).
TEST_F(UnixSupervisorTest, OwnSocketRenamedBeforeItsFirstConnectIsReachable) {
  const std::string d = dir_;
  EXPECT_EQ(run_supervised({},
                           [&] {
                             const int server = listen_on(d + "/first.sock");
                             if (server < 0) return 10;
                             if (::rename((d + "/first.sock").c_str(),
                                          (d + "/renamed.sock").c_str()) != 0)
                               return 11;
                             return connect_to(d + "/renamed.sock");
                           }),
            0);
}

TEST_F(UnixSupervisorTest, HostAbstractNameIsRefusedInTheHostsNamespace) {
  const std::string name = std::string("\0sbx-host-", 10) + dir_;
  HostListener host(name);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(run_supervised({}, [&] { return connect_to(name); }), EACCES);
  EXPECT_EQ(host.hits(), 0);
  // In a private namespace every abstract name would be the sandbox's: the supervisor allows
  // it (here the child shares this namespace, so the host's listener is what answers).
  UnixSocketRules private_network;
  private_network.private_network = true;
  EXPECT_EQ(run_supervised(private_network, [&] { return connect_to(name); }), 0);
}

TEST_F(UnixSupervisorTest, UnixDatagramSocketsAndIoUringAreRefused) {
  std::vector<sbx::bwrap::UnixRefusal> refused;
  EXPECT_EQ(run_supervised(
                {},
                [] {
                  if (::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0) >= 0 || errno != EPERM)
                    return 1;
                  // net/unix/af_unix.c unix_create() makes SOCK_RAW a datagram socket.
                  if (::socket(AF_UNIX, SOCK_RAW | SOCK_NONBLOCK, 0) >= 0 || errno != EPERM)
                    return 2;
                  // Upper bits of the int argument are ignored by the kernel, and by the filter.
                  if (::syscall(SYS_socket, 0x100000000L | AF_UNIX, SOCK_DGRAM, 0) >= 0) return 3;
                  if (::syscall(SYS_io_uring_setup, 4, nullptr) >= 0 || errno != EPERM) return 4;
                  // What the kernel refuses anyway keeps the kernel's answer, unreported.
                  if (::socket(AF_UNIX, SOCK_PACKET, 0) >= 0 || errno != ESOCKTNOSUPPORT) return 6;
                  const int stream = ::socket(AF_UNIX, SOCK_STREAM, 0);
                  const int seqpacket = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
                  return stream >= 0 && seqpacket >= 0 ? 0 : 5;
                },
                &refused),
            0);
  std::vector<std::string> named;
  for (const auto& r : refused) named.push_back(r.kind + " " + r.address);
  EXPECT_EQ(named, (std::vector<std::string>{"unix socket(AF_UNIX, SOCK_DGRAM)",
                                             "unix socket(AF_UNIX, SOCK_RAW)",
                                             "unix socket(AF_UNIX, SOCK_DGRAM)"}));
}

// A host datagram socket bound at `name`, counting what reached it.
class HostDatagram {
 public:
  explicit HostDatagram(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t length = 0;
    const sockaddr_un sa = address_of(name, length);
    ok_ = ::bind(fd_, reinterpret_cast<const sockaddr*>(&sa), length) == 0;
  }
  ~HostDatagram() { ::close(fd_); }
  HostDatagram(const HostDatagram&) = delete;
  HostDatagram& operator=(const HostDatagram&) = delete;
  bool ok() const { return ok_; }
  int received() const {
    char buffer[16];
    int count = 0;
    while (::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT) >= 0) ++count;
    return count;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

// Codex's allow_unix_socketpair_recvfrom: a datagram socketpair carries a message inside. The
// pair the supervisor gives (seqpacket) keeps boundaries, SOCK_NONBLOCK and SOCK_CLOEXEC, and
// every re-addressing ends at the pair's peer or is refused, never at the host's socket: sendto
// (refused and reported in a private namespace, where addressed sends are notified), sendmsg and
// sendmmsg with msg_name (the kernel ignores the name: to the peer), connect (refused and
// reported by the supervisor), bind (refused: the pair is a socket of sbx's namespace).
TEST_F(UnixSupervisorTest, DatagramSocketpairWorksInsideAndCannotBeReAddressed) {
  const std::string host_path = path("host.sock");
  HostDatagram host(host_path);
  ASSERT_TRUE(host.ok());
  for (const bool private_network : {false, true}) {
    UnixSocketRules rules;
    rules.private_network = private_network;
    std::vector<sbx::bwrap::UnixRefusal> refused;
    const int code = run_supervised(
        rules,
        [&] {
          int sv[2] = {-1, -1};
          if (::socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0) return 1;
          if (::write(sv[0], "hello_unix", 10) != 10 || ::write(sv[0], "x", 1) != 1) return 2;
          char buf[64];
          if (::recvfrom(sv[1], buf, sizeof buf, 0, nullptr, nullptr) != 10)
            return 3;  // boundaries
          if (::recv(sv[1], buf, sizeof buf, 0) != 1) return 4;
          int raw[2] = {-1, -1};
          if (::socketpair(AF_UNIX, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, raw) != 0) return 5;
          if ((::fcntl(raw[0], F_GETFL) & O_NONBLOCK) == 0 ||
              (::fcntl(raw[1], F_GETFD) & FD_CLOEXEC) == 0 ||
              (::fcntl(sv[0], F_GETFD) & FD_CLOEXEC) != 0)
            return 6;
          if (::recv(raw[1], buf, sizeof buf, 0) >= 0 || errno != EAGAIN) return 7;
          // Made in the pair factory's empty network namespace, neither sbx's nor the caller's:
          // interface ioctls on it (SIOCGIFCONF...) show nothing of the host.
          constexpr int kSoNetnsCookie = 71;  // SO_NETNS_COOKIE (Linux 5.14)
          const auto netns_of = [](int fd) {
            std::uint64_t cookie = 0;
            socklen_t size = sizeof cookie;
            return ::getsockopt(fd, SOL_SOCKET, kSoNetnsCookie, &cookie, &size) == 0 ? cookie : 0;
          };
          const int own = ::socket(AF_UNIX, SOCK_STREAM, 0);
          if (netns_of(raw[0]) == 0 || netns_of(raw[0]) == netns_of(own)) return 13;
          socklen_t length = 0;
          const sockaddr_un sa = address_of(host_path, length);
          const long to =
              ::sendto(raw[0], "a", 1, 0, reinterpret_cast<const sockaddr*>(&sa), length);
          if (private_network ? (to >= 0 || errno != EACCES) : to != 1) return 8;
          char byte = 'b';
          iovec iov{&byte, 1};
          msghdr msg{};
          msg.msg_name = const_cast<sockaddr_un*>(&sa);
          msg.msg_namelen = length;
          msg.msg_iov = &iov;
          msg.msg_iovlen = 1;
          if (::sendmsg(raw[0], &msg, 0) != 1) return 9;
          mmsghdr many{msg, 0};
          if (::sendmmsg(raw[0], &many, 1, 0) != 1) return 10;
          if (::connect(raw[0], reinterpret_cast<const sockaddr*>(&sa), length) == 0 ||
              errno != EACCES)
            return 11;
          const sockaddr_un name = address_of(std::string("\0sbx-pair", 9), length);
          if (::bind(raw[0], reinterpret_cast<const sockaddr*>(&name), length) == 0 ||
              errno != EINVAL)
            return 12;
          return 0;
        },
        &refused);
    EXPECT_EQ(code, 0) << (private_network ? "private network" : "host network");
    std::vector<std::string> named;
    for (const auto& r : refused) named.push_back(r.kind + " " + r.address);
    std::vector<std::string> expected;
    if (private_network) expected.push_back("unix " + host_path);  // the sendto
    expected.push_back("unix " + host_path);                       // the connect
    EXPECT_EQ(named, expected);
  }
  EXPECT_EQ(host.received(), 0);
}

// A multithreaded command swapping descriptors under the sends (dup2 of a datagram pair's
// socket, a stream socket and back over one number) while another thread sends to the host's
// datagram socket by every call: no datagram socket exists to be swapped in, so nothing
// reaches the host.
TEST_F(UnixSupervisorTest, SwappingDescriptorsDuringSendsNeverReachesTheHost) {
  const std::string host_path = path("host.sock");
  HostDatagram host(host_path);
  ASSERT_TRUE(host.ok());
  UnixSocketRules rules;
  rules.private_network = true;
  EXPECT_EQ(run_supervised(rules,
                           [&] {
                             int pair[2];
                             int stream[2];
                             if (::socketpair(AF_UNIX, SOCK_DGRAM, 0, pair) != 0 ||
                                 ::socketpair(AF_UNIX, SOCK_STREAM, 0, stream) != 0)
                               return 1;
                             const int target = 100;
                             std::atomic<bool> done{false};
                             std::thread swapper([&] {
                               while (!done.load()) {
                                 ::dup2(pair[0], target);
                                 ::dup2(stream[0], target);
                               }
                             });
                             socklen_t length = 0;
                             const sockaddr_un sa = address_of(host_path, length);
                             char byte = 'x';
                             iovec iov{&byte, 1};
                             msghdr msg{};
                             msg.msg_name = const_cast<sockaddr_un*>(&sa);
                             msg.msg_namelen = length;
                             msg.msg_iov = &iov;
                             msg.msg_iovlen = 1;
                             mmsghdr many{msg, 0};
                             for (int i = 0; i < 2000; ++i) {
                               ::sendto(target, &byte, 1, MSG_DONTWAIT,
                                        reinterpret_cast<const sockaddr*>(&sa), length);
                               ::sendmsg(target, &msg, MSG_DONTWAIT);
                               ::sendmmsg(target, &many, 1, MSG_DONTWAIT);
                               ::connect(target, reinterpret_cast<const sockaddr*>(&sa), length);
                               char drain[16];
                               while (::recv(pair[1], drain, sizeof drain, MSG_DONTWAIT) > 0) {
                               }
                             }
                             done.store(true);
                             swapper.join();
                             return 0;
                           }),
            0);
  EXPECT_EQ(host.received(), 0);
}

// A second thread rewrites the address between the sandbox's own socket and the host's while
// the first connects in a loop: whatever the timing, the host's socket is never reached.
TEST_F(UnixSupervisorTest, RewritingTheAddressDuringConnectNeverReachesTheHost) {
  HostListener host(path("host.sock"));
  ASSERT_TRUE(host.ok());
  const std::string own = path("mine.sock");
  const std::string other = path("host.sock");
  ASSERT_EQ(own.size(), other.size());
  EXPECT_EQ(
      run_supervised({},
                     [&] {
                       const int server = listen_on(own);
                       if (server < 0) return 10;
                       ::fcntl(server, F_SETFL, O_NONBLOCK);
                       socklen_t length = 0;
                       static sockaddr_un shared;
                       shared = address_of(own, length);
                       std::atomic<bool> done{false};
                       std::thread flipper([&] {
                         for (bool flip = false; !done.load(); flip = !flip)
                           std::memcpy(shared.sun_path, (flip ? other : own).c_str(), own.size());
                       });
                       int accepted = 0;
                       for (int i = 0; i < 2000; ++i) {
                         const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                         ::connect(fd, reinterpret_cast<const sockaddr*>(&shared), length);
                         ::close(fd);
                         while (true) {
                           const int c = ::accept4(server, nullptr, nullptr, SOCK_CLOEXEC);
                           if (c < 0) break;
                           ::close(c);
                           ++accepted;
                         }
                       }
                       done = true;
                       flipper.join();
                       return accepted > 0 ? 0 : 20;  // the loop did connect (to its own socket)
                     }),
      0);
  EXPECT_EQ(host.hits(), 0);
}

// The eager mode (a thread from the start, for owners without a poll loop) decides the same.
TEST_F(UnixSupervisorTest, ThreadServedSupervisorDecidesTheSame) {
  HostListener host(path("host.sock"));
  ASSERT_TRUE(host.ok());
  const std::string d = dir_;
  EXPECT_EQ(run_supervised(
                {},
                [&] {
                  if (connect_to(d + "/host.sock") != EACCES) return 1;
                  const int server = listen_on(d + "/own.sock");
                  if (server < 0 || connect_to(d + "/own.sock") != 0) return 2;
                  return 0;
                },
                nullptr, false, SupervisorServing::kThread),
            0);
  EXPECT_EQ(host.hits(), 0);
}

// The threads of this process (/proc/self/task).
std::size_t supervisor_test_thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Owner-driven, as in the spawner: a run that binds (unix and inet) but never connects or sends
// to an address starts no thread, its binds are answered by the owner and recorded (a later
// connect to the bound file is allowed); the first connect starts the one thread.
TEST_F(UnixSupervisorTest, OwnerServedRunStartsNoThreadUntilItsFirstConnect) {
  const std::string d = dir_;
  int channel[2];
  int go[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel), 0);
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int listener = sbx::bwrap::install_unix_notify_filter(true);
    if (listener < 0 || !sbx::bwrap::send_descriptor(channel[1], listener)) ::_exit(120);
    ::close(listener);
    // Like a sandboxed command: no capability (the supervisor reaches no caller with more).
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, none) != 0) ::_exit(121);
    if (listen_on(d + "/own.sock") < 0) ::_exit(10);
    const int inet = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(inet, reinterpret_cast<const sockaddr*>(&any), sizeof any) != 0) ::_exit(11);
    // Wait until the parent has counted its threads, then connect.
    char byte = 0;
    if (::write(channel[1], "b", 1) != 1 || ::read(go[0], &byte, 1) != 1) ::_exit(12);
    ::_exit(connect_to(d + "/own.sock"));
  }
  ::close(go[0]);
  pollfd p{channel[0], POLLIN, 0};
  ::poll(&p, 1, 10000);
  const std::size_t before = supervisor_test_thread_count();
  auto supervisor = UnixSupervisor::attach(sbx::bwrap::receive_descriptor(channel[0]), {});
  ASSERT_TRUE(supervisor.ok()) << supervisor.error();
  // Serve until the child says its binds are done.
  for (bool bound = false; !bound;) {
    std::array<pollfd, 2> fds{{{channel[0], POLLIN, 0}, {(*supervisor)->poll_fd(), POLLIN, 0}}};
    ASSERT_GT(::poll(fds.data(), fds.size(), 10000), 0);
    if (fds[1].revents != 0) (*supervisor)->serve();
    bound = fds[0].revents != 0;
  }
  EXPECT_EQ(supervisor_test_thread_count(), before) << "binds started a thread";
  EXPECT_GE((*supervisor)->poll_fd(), 0);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  // The connect: handed to a thread, which answers it (allowed: the child bound that file).
  pollfd notified{(*supervisor)->poll_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&notified, 1, 10000), 1);
  (*supervisor)->serve();
  EXPECT_EQ((*supervisor)->poll_fd(), -1);
  // The supervisor's thread (and perhaps a worker for the blocking connect).
  EXPECT_GT(supervisor_test_thread_count(), before);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);
  (*supervisor)->stop();
  // Joined; a detached worker that answered may take a moment to be gone.
  for (int i = 0; i < 200 && supervisor_test_thread_count() != before; ++i) ::usleep(10000);
  EXPECT_EQ(supervisor_test_thread_count(), before);
  ::close(channel[0]);
  ::close(channel[1]);
  ::close(go[1]);
}

// Owner-driven, sends reported (a private network namespace): a send with an address on a
// socket that is not an inet one (bwrap's netlink set-up of the loopback, in every such run) is
// continued by the owner itself, as the caller's own call (the kernel answers it: the dump
// request gets its reply), and starts no thread; an inet send still goes to the thread
// (UdpSendtoOutOfThePrivateNamespaceIsRecordedLoopbackIsNot, served the same way).
TEST_F(UnixSupervisorTest, OwnerContinuesANetlinkSendWithoutAThread) {
  int channel[2];
  int go[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel), 0);
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int listener = sbx::bwrap::install_unix_notify_filter(true);
    if (listener < 0 || !sbx::bwrap::send_descriptor(channel[1], listener)) ::_exit(120);
    ::close(listener);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, none) != 0) ::_exit(121);
    const int route = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (route < 0) ::_exit(10);
    struct {
      nlmsghdr header;
      rtgenmsg body;
    } request{};
    request.header.nlmsg_len = sizeof request;
    request.header.nlmsg_type = RTM_GETLINK;
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.body.rtgen_family = AF_UNSPEC;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(route, &request, sizeof request, 0, reinterpret_cast<const sockaddr*>(&kernel),
                 sizeof kernel) != static_cast<ssize_t>(sizeof request))
      ::_exit(11);
    char reply[8192];
    if (::recv(route, reply, sizeof reply, 0) <= 0) ::_exit(12);
    // Wait until the parent has counted its threads.
    char byte = 0;
    if (::write(channel[1], "s", 1) != 1 || ::read(go[0], &byte, 1) != 1) ::_exit(13);
    ::_exit(0);
  }
  ::close(go[0]);
  pollfd p{channel[0], POLLIN, 0};
  ::poll(&p, 1, 10000);
  const std::size_t before = supervisor_test_thread_count();
  UnixSocketRules rules;
  rules.private_network = true;
  auto supervisor =
      UnixSupervisor::attach(sbx::bwrap::receive_descriptor(channel[0]), std::move(rules));
  ASSERT_TRUE(supervisor.ok()) << supervisor.error();
  bool served = false;
  for (bool sent = false; !sent;) {
    std::array<pollfd, 2> fds{{{channel[0], POLLIN, 0}, {(*supervisor)->poll_fd(), POLLIN, 0}}};
    ASSERT_GT(::poll(fds.data(), fds.size(), 10000), 0);
    if (fds[1].revents != 0) {
      (*supervisor)->serve();
      served = true;
    }
    sent = fds[0].revents != 0;
  }
  EXPECT_TRUE(served) << "the send was not notified";
  EXPECT_EQ(supervisor_test_thread_count(), before) << "a netlink send started a thread";
  EXPECT_GE((*supervisor)->poll_fd(), 0);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);
  (*supervisor)->stop();
  EXPECT_TRUE((*supervisor)->refusals().empty());
  ::close(channel[0]);
  ::close(channel[1]);
  ::close(go[1]);
}

// Owner-driven: once every process under the filter is gone the listener hangs up, and the
// owner stops polling it (no busy loop on a dead listener).
TEST_F(UnixSupervisorTest, OwnerStopsPollingWhenTheSandboxIsGone) {
  int channel[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int listener = sbx::bwrap::install_unix_notify_filter(false);
    ::_exit(listener >= 0 && sbx::bwrap::send_descriptor(channel[1], listener) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  auto supervisor = UnixSupervisor::attach(sbx::bwrap::receive_descriptor(channel[0]), {});
  ASSERT_TRUE(supervisor.ok()) << supervisor.error();
  const int fd = (*supervisor)->poll_fd();
  ASSERT_GE(fd, 0);
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  EXPECT_NE(p.revents & POLLHUP, 0);
  (*supervisor)->serve();
  EXPECT_EQ((*supervisor)->poll_fd(), -1);
  ::close(channel[0]);
  ::close(channel[1]);
}

// A UDP sendto() and its errno; the datagram is "ping".
int supervisor_test_udp_send(int family, const char* address, std::uint16_t port) {
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    ::inet_pton(AF_INET, address, &in->sin_addr);
    length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    ::inet_pton(AF_INET6, address, &in6->sin6_addr);
    length = sizeof(sockaddr_in6);
  }
  const ssize_t n = ::sendto(fd, "ping", 4, 0, reinterpret_cast<const sockaddr*>(&storage), length);
  const int error = n == 4 ? 0 : (n < 0 ? errno : -1);
  ::close(fd);
  return error;
}

// A UDP socket bound to `address` (any port) of `family`; its port in `port`, -1 on failure.
int supervisor_test_udp_server(int family, const char* address, std::uint16_t& port) {
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage storage{};
  socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  storage.ss_family = static_cast<sa_family_t>(family);
  ::inet_pton(family, address,
              family == AF_INET
                  ? static_cast<void*>(&reinterpret_cast<sockaddr_in*>(&storage)->sin_addr)
                  : static_cast<void*>(&reinterpret_cast<sockaddr_in6*>(&storage)->sin6_addr));
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&storage), length) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0)
    return -1;
  port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&storage)->sin_port
                                 : reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
  return fd;
}

// The datagram waiting on `fd` (within 5 s), or "" if none came.
std::string supervisor_test_receive(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return {};
  char buffer[64] = {};
  const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

// UDP sends in a private network namespace: one to an address outside it is refused by the
// kernel (no route) and recorded as kind "ip", IPv4 and IPv6; sends to loopback (IPv4, IPv6,
// IPv4-mapped) and sends without an address arrive and are not recorded.
TEST_F(UnixSupervisorTest, UdpSendtoOutOfThePrivateNamespaceIsRecordedLoopbackIsNot) {
  UnixSocketRules rules;
  rules.private_network = true;
  std::vector<sbx::bwrap::UnixRefusal> refusals;
  EXPECT_EQ(run_supervised(
                rules,
                [] {
                  if (supervisor_test_udp_send(AF_INET, "192.0.2.1", 53) != ENETUNREACH) return 10;
                  if (supervisor_test_udp_send(AF_INET6, "2001:db8::1", 5353) != ENETUNREACH)
                    return 11;
                  std::uint16_t port4 = 0;
                  std::uint16_t port6 = 0;
                  const int server4 = supervisor_test_udp_server(AF_INET, "127.0.0.1", port4);
                  const int server6 = supervisor_test_udp_server(AF_INET6, "::1", port6);
                  if (server4 < 0 || server6 < 0) return 12;
                  if (supervisor_test_udp_send(AF_INET, "127.0.0.1", port4) != 0 ||
                      supervisor_test_receive(server4) != "ping")
                    return 13;
                  if (supervisor_test_udp_send(AF_INET6, "::1", port6) != 0 ||
                      supervisor_test_receive(server6) != "ping")
                    return 14;
                  if (supervisor_test_udp_send(AF_INET6, "::ffff:127.0.0.1", port4) != 0 ||
                      supervisor_test_receive(server4) != "ping")
                    return 15;
                  // Connected, then send() (sendto without an address): not even notified.
                  const int client = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                  sockaddr_in to{};
                  to.sin_family = AF_INET;
                  to.sin_port = htons(port4);
                  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                  if (::connect(client, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 ||
                      ::send(client, "pong", 4, 0) != 4 ||
                      supervisor_test_receive(server4) != "pong")
                    return 16;
                  return 0;
                },
                &refusals, /*own_network=*/true),
            0);
  ASSERT_EQ(refusals.size(), 2u);
  EXPECT_EQ(refusals[0].kind, "ip");
  EXPECT_EQ(refusals[0].address, "192.0.2.1:53");
  EXPECT_EQ(refusals[1].kind, "ip");
  EXPECT_EQ(refusals[1].address, "[2001:db8::1]:5353");
}

// A send to a non-loopback address is performed by the supervisor (to learn the kernel's
// answer): where the namespace does take it (here an extra address on its lo), the datagram
// arrives intact, the caller gets its length, and nothing is recorded.
TEST_F(UnixSupervisorTest, UdpSendPerformedByTheSupervisorDeliversTheSameDatagram) {
  UnixSocketRules rules;
  rules.private_network = true;
  std::vector<sbx::bwrap::UnixRefusal> refusals;
  const auto add_address = [] {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq request{};
    std::strcpy(request.ifr_name, "lo:1");
    auto* in = reinterpret_cast<sockaddr_in*>(&request.ifr_addr);
    in->sin_family = AF_INET;
    ::inet_pton(AF_INET, "10.77.0.1", &in->sin_addr);
    const bool ok = fd >= 0 && ::ioctl(fd, SIOCSIFADDR, &request) == 0;
    if (fd >= 0) ::close(fd);
    return ok ? 0 : 1;
  };
  const int code = run_supervised(
      rules,
      [] {
        std::uint16_t port = 0;
        const int server = supervisor_test_udp_server(AF_INET, "10.77.0.1", port);
        if (server < 0) return 10;
        const int client = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(port);
        ::inet_pton(AF_INET, "10.77.0.1", &to.sin_addr);
        std::string datagram(40000, 'x');
        for (std::size_t i = 0; i < datagram.size(); ++i) datagram[i] = static_cast<char>(i * 7);
        if (::sendto(client, datagram.data(), datagram.size(), 0,
                     reinterpret_cast<const sockaddr*>(&to),
                     sizeof to) != static_cast<ssize_t>(datagram.size()))
          return 11;
        pollfd p{server, POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1) return 12;
        std::string received(65536, '\0');
        const ssize_t n = ::recv(server, received.data(), received.size(), 0);
        if (n != static_cast<ssize_t>(datagram.size())) return 13;
        received.resize(static_cast<std::size_t>(n));
        return received == datagram ? 0 : 14;
      },
      &refusals, /*own_network=*/true, SupervisorServing::kOwner, add_address);
  if (code == 123) GTEST_SKIP() << "cannot add an address to lo in a new network namespace";
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(refusals.empty());
}

}  // namespace
