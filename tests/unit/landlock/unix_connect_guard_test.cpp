// Landlock mode with the network enabled: the unix connect guard
// (linux/landlock/unix_connect_notify.hpp) through the launcher, with real Landlock, the real
// precompiled guard and filter, and the built sbx-stage2 as the guard's emulator. Each case runs
// a body in the confined child (forked by the launcher instead of the exec) that tries one
// route to a host unix socket and returns its errno; the host's listener shows from outside
// that nothing reached it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "landlock_launch.hpp"
#include "landlock_ruleset.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace unix_connect_guard_test {
namespace {

using HostListener = sbx::test::Listener;
using GuardTempDir = sbx::test::TempDir;

constexpr int kAbiScope = 6;

int run_body(void* arg) { return (*static_cast<const std::function<int()>*>(arg))(); }

struct Outcome {
  int code = -1;                      // the body's result (an errno, 0: it worked)
  std::vector<std::string> refusals;  // what the run named in its network refusals
};

// Runs `body` confined as a run with the network enabled (Landlock: / readable, `writable`
// writable, its working directory).
Outcome confined(const std::string& writable, const std::function<int()>& body,
                 std::array<int, 3> stdio = {0, 1, 2}) {
  sbx::stage2::LandlockLaunch launch;
  launch.landlock.enabled = true;
  launch.landlock.min_abi = kAbiScope;
  launch.landlock.read = {"/"};
  launch.landlock.keep_dev_closed = false;  // "/" readable for brevity: sockets are tested
  launch.landlock.write = {writable};
  launch.landlock.dev = {"/dev/null"};
  launch.landlock.scope_abstract_unix = true;
  launch.network = sbx::stage2::NetworkFilter::kOpen;
  launch.command = {"/bin/true"};  // never run: the body replaces the exec
  sbx::stage2::LaunchOptions options;
  options.guard_program = std::string(SBX_BUILD_TREE) + "/libexec/sbx/sbx-stage2";
  options.cwd = writable;
  options.body = run_body;
  options.body_arg = const_cast<std::function<int()>*>(&body);
  options.stdio = stdio;
  Outcome out;
  options.unix_refusals = &out.refusals;
  sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(launch, options);
  out.code = !status.ok() ? 254 : (status->signal != 0 ? 255 : status->exit_code);
  return out;
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), std::min(path.size(), sizeof address.sun_path - 1));
  return address;
}

// connect() of a new unix stream socket to `path` (a leading '@' names an abstract socket):
// 0 or its errno.
int connect_unix(const std::string& path, bool nonblocking = false) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) return errno;
  sockaddr_un address = unix_address(path);
  socklen_t length = sizeof address;
  if (!path.empty() && path[0] == '@') {
    address.sun_path[0] = '\0';
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  }
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&address), length);
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

// A listening unix socket bound at `path` ('@': abstract) by the caller (non-blocking: the host
// looks at its backlog without waiting); -1 on failure.
int listen_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un address = unix_address(path);
  socklen_t length = sizeof address;
  if (!path.empty() && path[0] == '@') {
    address.sun_path[0] = '\0';
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  }
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(fd, 8) != 0)
    return -1;
  return fd;
}

// Binds and listens at `path` inside the body, then connects to `connect_to` (default: the
// same path): 0 or the errno of the step that failed (the bind's as 1000 + errno).
int bind_then_connect(const std::string& path, const std::string& connect_to = "",
                      bool nonblocking = false) {
  const int listener = listen_unix(path);
  if (listener < 0) return 1000 + errno;
  const int err = connect_unix(connect_to.empty() ? path : connect_to, nonblocking);
  ::close(listener);
  return err;
}

bool named(const Outcome& o, const std::string& what) {
  for (const std::string& r : o.refusals) {
    if (r == what) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += " [" + s + "]";
  return out;
}

class UnixConnectGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    const int abi = sbx::stage2::landlock_abi();
    if (abi < kAbiScope)
      GTEST_SKIP() << "Landlock ABI " << abi << " < 6: the network enabled is not offered here";
    ASSERT_FALSE(ws_.path().empty());
    ASSERT_FALSE(outside_.path().empty());
  }
  GuardTempDir ws_;                   // the writable root and working directory
  GuardTempDir outside_{"/var/tmp"};  // a host directory outside every writable root
};

TEST_F(UnixConnectGuard, AHostSocketOutsideTheRootsIsRefusedAndNamed) {
  const std::string host = outside_ / "host.sock";
  HostListener listener(HostListener::kUnix, host);
  ASSERT_TRUE(listener.ok());
  const Outcome o = confined(ws_.path(), [&] { return connect_unix(host); });
  EXPECT_EQ(o.code, EACCES);
  EXPECT_TRUE(named(o, host)) << joined(o.refusals);
  // Non-blocking: the same answer (the decision is not the connect's).
  EXPECT_EQ(confined(ws_.path(), [&] { return connect_unix(host, true); }).code, EACCES);
  EXPECT_EQ(listener.hits_before_now(), 0);
}

TEST_F(UnixConnectGuard, AHostSocketInsideAWritableRootIsRefused) {
  // Bound by a host process in the sandbox's own writable root: still the host's.
  const std::string host = ws_ / "host.sock";
  HostListener listener(HostListener::kUnix, host);
  ASSERT_TRUE(listener.ok());
  EXPECT_EQ(confined(ws_.path(), [&] { return connect_unix(host); }).code, EACCES);
  EXPECT_EQ(confined(ws_.path(), [] { return connect_unix("host.sock"); }).code, EACCES);
  EXPECT_EQ(listener.hits_before_now(), 0);
}

TEST_F(UnixConnectGuard, ASocketTheCommandBindsIsReachable) {
  EXPECT_EQ(confined(ws_.path(), [&] { return bind_then_connect(ws_ / "own.sock"); }).code, 0);
  // By a relative name, resolved in the caller's working directory.
  EXPECT_EQ(confined(ws_.path(), [] { return bind_then_connect("rel.sock"); }).code, 0);
  // Non-blocking (performed inline rather than in a worker).
  EXPECT_EQ(confined(ws_.path(), [&] { return bind_then_connect(ws_ / "nb.sock", "", true); }).code,
            0);
  // Renamed after its bind: the same inode, still the command's own.
  EXPECT_EQ(confined(ws_.path(),
                     [&] {
                       const int listener = listen_unix(ws_ / "a.sock");
                       if (listener < 0) return 1000 + errno;
                       if (::rename((ws_ / "a.sock").c_str(), (ws_ / "b.sock").c_str()) != 0)
                         return 2000 + errno;
                       const int err = connect_unix(ws_ / "b.sock");
                       ::close(listener);
                       return err;
                     })
                .code,
            0);
}

TEST_F(UnixConnectGuard, ASymlinkToAHostSocketIsRefused) {
  const std::string host = outside_ / "host.sock";
  HostListener listener(HostListener::kUnix, host);
  ASSERT_TRUE(listener.ok());
  const Outcome o = confined(ws_.path(), [&] {
    if (::symlink(host.c_str(), (ws_ / "link.sock").c_str()) != 0) return 1000 + errno;
    return connect_unix(ws_ / "link.sock");
  });
  EXPECT_EQ(o.code, EACCES);
  EXPECT_EQ(listener.hits_before_now(), 0);
}

TEST_F(UnixConnectGuard, ProcSelfFdAndOtherMagicLinksAreRefused) {
  const std::string host = outside_ / "host.sock";
  HostListener listener(HostListener::kUnix, host);
  ASSERT_TRUE(listener.ok());
  // O_PATH opens are not Landlock's to refuse; the kernel would follow the magic link.
  EXPECT_EQ(confined(ws_.path(),
                     [&] {
                       const int fd = ::open(host.c_str(), O_PATH | O_CLOEXEC);
                       if (fd < 0) return 1000 + errno;
                       return connect_unix("/proc/self/fd/" + std::to_string(fd));
                     })
                .code,
            EACCES);
  EXPECT_EQ(confined(ws_.path(),
                     [&] {
                       const int dir = ::open(outside_.path().c_str(), O_PATH | O_CLOEXEC);
                       if (dir < 0) return 1000 + errno;
                       return connect_unix("/proc/self/fd/" + std::to_string(dir) + "/host.sock");
                     })
                .code,
            EACCES);
  EXPECT_EQ(confined(ws_.path(), [&] { return connect_unix("/proc/self/root" + host); }).code,
            EACCES);
  EXPECT_EQ(listener.hits_before_now(), 0);
}

TEST_F(UnixConnectGuard, HostAbstractSocketsAreRefusedTheCommandsOwnReachable) {
  const std::string name = "@sbx-test-host-" + std::to_string(::getpid());
  const int host = listen_unix(name);
  ASSERT_GE(host, 0) << std::strerror(errno);
  const Outcome o = confined(ws_.path(), [&] { return connect_unix(name); });
  EXPECT_EQ(o.code, EACCES);
  EXPECT_TRUE(named(o, name)) << joined(o.refusals);
  const int pending = ::accept4(host, nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_LT(pending, 0) << "the host's abstract socket was reached";
  ::close(host);
  const std::string own = "@sbx-test-own-" + std::to_string(::getpid());
  EXPECT_EQ(confined(ws_.path(), [&] { return bind_then_connect(own); }).code, 0);
}

TEST_F(UnixConnectGuard, ASocketAnotherSandboxBoundIsRefused) {
  // Another run, at the same time, binds and listens in the same writable root, then waits:
  // its socket is a host socket to this run. It says so on its stdout and waits on its stdin
  // (the launcher hands a run no other descriptor).
  int ready[2];
  int done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const std::string other = ws_ / "other.sock";
  std::thread first([&] {
    confined(ws_.path(),
             [&] {
               const int listener = listen_unix(other);
               char byte = listener < 0 ? 'F' : 'R';
               (void)!::write(1, &byte, 1);
               (void)!::read(0, &byte, 1);
               return 0;
             },
             {done[0], ready[1], 2});
  });
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_EQ(byte, 'R');
  EXPECT_EQ(confined(ws_.path(), [&] { return connect_unix(other); }).code, EACCES);
  (void)!::write(done[1], "x", 1);
  first.join();
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
}

TEST_F(UnixConnectGuard, InetLoopbackStaysReachable) {
  HostListener tcp(HostListener::kTcp4);
  ASSERT_TRUE(tcp.ok());
  const int port = tcp.port();
  EXPECT_EQ(confined(ws_.path(),
                     [port] {
                       const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
                       sockaddr_in address{};
                       address.sin_family = AF_INET;
                       address.sin_port = htons(static_cast<std::uint16_t>(port));
                       address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                       return ::connect(fd, reinterpret_cast<sockaddr*>(&address),
                                        sizeof address) == 0
                                  ? 0
                                  : errno;
                     })
                .code,
            0);
  EXPECT_EQ(tcp.hits_before_now(), 1);
}

TEST_F(UnixConnectGuard, AStreamSendmsgNamingAHostSocketReachesNothing) {
  // A unix stream socket takes no destination on a send (unix_stream_sendmsg(): EOPNOTSUPP
  // unconnected, EISCONN connected): the connect is the only way to name a path.
  const std::string host = outside_ / "host.sock";
  HostListener listener(HostListener::kUnix, host);
  ASSERT_TRUE(listener.ok());
  const int code = confined(ws_.path(), [&] {
                     const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
                     sockaddr_un address = unix_address(host);
                     char byte = 'x';
                     return ::sendto(fd, &byte, 1, MSG_NOSIGNAL,
                                     reinterpret_cast<sockaddr*>(&address), sizeof address) == 1
                                ? 0
                                : errno;
                   }).code;
  EXPECT_NE(code, 0);
  EXPECT_EQ(listener.hits_before_now(), 0);
}

}  // namespace
}  // namespace unix_connect_guard_test
