// The unix-socket supervisor on its own: a forked child installs the notification filter and
// tries things; this process supervises it exactly as the bwrap spawner does, and checks from
// the outside (host listeners count what reached them).
#include "sbx/bwrap/unix_supervisor.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>
#include <sys/syscall.h>

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
    ok_ = ::bind(fd_, reinterpret_cast<const sockaddr*>(&sa), length) == 0 &&
          ::listen(fd_, 64) == 0;
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

// Runs `body` in a forked child under the supervisor's filter, supervised by this process with
// `rules`; the child's exit code (body's return value), or -1. `refusals`, when given, gets
// what the supervisor refused. With `own_network` the child first moves into a network
// namespace of its own (only its loopback: no route anywhere else), as under bwrap.
int run_supervised(UnixSocketRules rules, const std::function<int()>& body,
                   std::vector<sbx::bwrap::UnixRefusal>* refusals = nullptr,
                   bool own_network = false) {
  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (own_network && (::unshare(CLONE_NEWNET) != 0 || !loopback_up())) ::_exit(122);
    const int listener = sbx::bwrap::install_unix_notify_filter();
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
  auto supervisor = UnixSupervisor::start(listener, std::move(rules));
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

TEST(UnixSupervisorOptions, TakesAllowedSocketsAndTheProxySocketOutOfTheArgv) {
  const sbx::bwrap::SupervisedArgv out = sbx::bwrap::take_supervisor_options(
      {"/usr/bin/bwrap", "--unshare-net", "--", "/stage2", "--net", "proxy", "--proxy-socket",
       "/tmp/p/proxy.sock", "--allow-unix-socket", "/run/a.sock", "--", "/bin/cmd",
       "--allow-unix-socket", "x"});
  EXPECT_TRUE(out.rules.private_network);
  EXPECT_EQ(out.rules.allowed_paths,
            (std::vector<std::string>{"/tmp/p/proxy.sock", "/run/a.sock"}));
  // The command's own arguments are never touched.
  EXPECT_EQ(out.argv, (std::vector<std::string>{"/usr/bin/bwrap", "--unshare-net", "--",
                                                "/stage2", "--net", "proxy", "--proxy-socket",
                                                "/tmp/p/proxy.sock", "--", "/bin/cmd",
                                                "--allow-unix-socket", "x"}));
  EXPECT_FALSE(sbx::bwrap::take_supervisor_options({"/usr/bin/bwrap", "--", "/s", "--net", "open"})
                   .rules.private_network);
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
  EXPECT_EQ(run_supervised({}, [&] {
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
  EXPECT_EQ(run_supervised({}, [&] {
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
              if (abstract < 0 || connect_to(std::string("\0sbx-own-", 9) + d) != 0) return 14;
              return 0;
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
  EXPECT_EQ(run_supervised({}, [] {
              if (::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0) >= 0 || errno != EPERM) return 1;
              int pair[2];
              if (::socketpair(AF_UNIX, SOCK_DGRAM, 0, pair) == 0 || errno != EPERM) return 2;
              // Upper bits of the int argument are ignored by the kernel, and by the filter.
              if (::syscall(SYS_socket, 0x100000000L | AF_UNIX, SOCK_DGRAM, 0) >= 0) return 3;
              if (::syscall(SYS_io_uring_setup, 4, nullptr) >= 0 || errno != EPERM) return 4;
              const int stream = ::socket(AF_UNIX, SOCK_STREAM, 0);
              return stream >= 0 ? 0 : 5;
            }),
            0);
}

// A second thread rewrites the address between the sandbox's own socket and the host's while
// the first connects in a loop: whatever the timing, the host's socket is never reached.
TEST_F(UnixSupervisorTest, RewritingTheAddressDuringConnectNeverReachesTheHost) {
  HostListener host(path("host.sock"));
  ASSERT_TRUE(host.ok());
  const std::string own = path("mine.sock");
  const std::string other = path("host.sock");
  ASSERT_EQ(own.size(), other.size());
  EXPECT_EQ(run_supervised({}, [&] {
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

}  // namespace
