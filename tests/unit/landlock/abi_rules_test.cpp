// One test per ABI-dependent Landlock rule sbx-stage2 applies, each in
// a forked child that sets no_new_privs, applies the ruleset with apply_landlock() exactly as
// stage 2 does, tries the operation and reports its errno as the exit code. A test skips, with
// the reason printed, only when the running kernel's ABI lacks the rule.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "landlock_ruleset.hpp"
#include "sbx_test/temp_dir.hpp"
#include "write_layer.hpp"

namespace {

namespace fs = std::filesystem;
using sbx::stage2::LandlockSpec;

constexpr int kSetupFailed = 200;

int abi() { return sbx::stage2::landlock_abi(); }

// Runs `attempt` in a child confined by `spec`; returns its result: 0 = allowed, else errno.
int confined(const LandlockSpec& spec, const std::function<int()>& attempt) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(kSetupFailed);
    if (!sbx::stage2::apply_landlock(spec).ok()) ::_exit(kSetupFailed);
    ::_exit(attempt());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

int result(long rc) { return rc < 0 ? errno : 0; }

using Dir = sbx::test::TempDir;

LandlockSpec filesystem(std::vector<std::string> read, std::vector<std::string> write,
                        std::vector<std::string> dev = {}) {
  LandlockSpec spec;
  spec.enabled = true;
  spec.read = std::move(read);
  spec.write = std::move(write);
  spec.dev = std::move(dev);
  // These tests isolate one right each with "/" readable; stage 2 itself never reads "/" whole.
  spec.keep_dev_closed = false;
  return spec;
}

#define REQUIRE_ABI(n, what) \
  if (abi() < (n))           \
  GTEST_SKIP() << "kernel Landlock ABI " << abi() << " < " << (n) << ": no " << what << " to test"

TEST(LandlockAbiRules, WritesOnlyBeneathWritableRoots) {
  REQUIRE_ABI(1, "Landlock");
  Dir ro, rw;
  EXPECT_EQ(confined(filesystem({"/"}, {rw.path()}),
                     [&] { return result(::open((ro / "f").c_str(), O_CREAT | O_WRONLY, 0600)); }),
            EACCES);
  EXPECT_EQ(confined(filesystem({"/"}, {rw.path()}),
                     [&] { return result(::open((rw / "f").c_str(), O_CREAT | O_WRONLY, 0600)); }),
            0);
}

// The bwrap write layer's ruleset (write_layer.hpp): only write rights handled, so with no
// read rule at all everything stays readable and executable, while writes (a FIFO opened for
// writing included: landlock's hook_file_open checks WRITE_FILE for any file) happen only beneath
// the writable roots.
TEST(LandlockAbiRules, WritesOnlyRulesetLeavesReadsAndRefusesFifoWritesOutsideRoots) {
  REQUIRE_ABI(2, "REFER right (the write layer's minimum)");
  Dir ro, rw;
  std::ofstream(ro / "f") << "x";
  ASSERT_EQ(::mkfifo((ro / "fifo").c_str(), 0600), 0);
  LandlockSpec spec;
  spec.writes_only = true;
  spec.write = {rw.path()};
  const auto fifo_write = [&] {
    // A reader first, so that the writer's open does not block.
    const int reader = ::open((ro / "fifo").c_str(), O_RDONLY | O_NONBLOCK);
    if (reader < 0) return 100;
    return result(::open((ro / "fifo").c_str(), O_WRONLY | O_NONBLOCK));
  };
  EXPECT_EQ(confined(spec, [&] { return result(::open((ro / "f").c_str(), O_RDONLY)); }), 0);
  EXPECT_EQ(confined(spec, [&] { return result(::access("/bin/sh", X_OK)); }), 0);
  EXPECT_EQ(confined(spec, [&] { return result(::open((ro / "f").c_str(), O_WRONLY)); }), EACCES);
  EXPECT_EQ(confined(spec, fifo_write), EACCES);
  EXPECT_EQ(confined(spec, [&] { return result(::mkfifo((ro / "new").c_str(), 0600)); }), EACCES);
  EXPECT_EQ(confined(spec, [&] { return result(::mkfifo((rw / "own").c_str(), 0600)); }), 0);
  EXPECT_EQ(
      confined(spec,
               [&] { return result(::rename((rw / "own").c_str(), (rw / "moved").c_str())); }),
      0);
}

TEST(LandlockAbiRules, ReferAllowsMovesBetweenWritableRootsButNotLinksFromReadOnlyOnes) {
  REQUIRE_ABI(2, "REFER right");
  Dir ro, a, b;
  std::ofstream(ro / "f") << "x";
  std::ofstream(a / "g") << "y";
  const LandlockSpec spec = filesystem({"/"}, {a.path(), b.path()});
  EXPECT_EQ(confined(spec, [&] { return result(::rename((a / "g").c_str(), (b / "g").c_str())); }),
            0);
  EXPECT_EQ(confined(spec, [&] { return result(::link((ro / "f").c_str(), (a / "h").c_str())); }),
            EXDEV);
  EXPECT_FALSE(fs::exists(a / "h"));
}

// Runs `attempt` in a child that enters each of `layers` in turn (one Landlock domain each, as
// the bwrap launch's performers would); returns 0 = allowed, else errno.
int layered(const std::vector<std::function<bool()>>& layers, const std::function<int()>& attempt) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(kSetupFailed);
    for (const auto& enter : layers)
      if (!enter()) ::_exit(kSetupFailed);
    ::_exit(attempt());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

// Why bwrap's write layer carries the scope itself (write_layer.hpp): Landlock denies
// reparenting in every layer that does not grant REFER, handled or not, so a scope-only domain
// beneath the layer turned every rename and link into another directory into EXDEV (`cargo
// build` could not move rustc's rmeta up from its temporary directory). The layer alone lets
// them through beneath its roots, and scopes abstract unix sockets as the scope-only domain did.
TEST(LandlockAbiRules, TheWriteLayerIsTheOnlyDomainSoMovesAcrossDirectoriesWork) {
  REQUIRE_ABI(6, "scope to carry in the write layer");
  Dir rw;
  const auto write_layer = [&] { return sbx::stage2::apply_write_layer({rw.path()}).ok(); };
  const auto scope_only = [] {
    LandlockSpec scope;
    scope.restrict_filesystem = false;
    scope.scope_abstract_unix = true;
    return sbx::stage2::apply_landlock(scope).ok();
  };
  fs::create_directories(rw / "a/d");
  const auto moves = [&] {
    std::ofstream(rw / "a/d/full.rmeta") << "meta";
    if (::rename((rw / "a/d/full.rmeta").c_str(), (rw / "a/lib.rmeta").c_str()) != 0) return errno;
    if (::link((rw / "a/lib.rmeta").c_str(), (rw / "a/d/uplifted").c_str()) != 0) return errno;
    ::unlink((rw / "a/lib.rmeta").c_str());
    ::unlink((rw / "a/d/uplifted").c_str());
    return 0;
  };
  EXPECT_EQ(layered({write_layer}, moves), 0);
  EXPECT_EQ(layered({scope_only, write_layer}, moves), EXDEV)
      << "a scope-only domain beneath the write layer no longer refuses reparenting: the kernel "
         "changed, write_layer.hpp's reason for one domain is gone";
  // A host abstract socket stays out of reach from the write layer alone.
  const int server = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(server, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const std::string name = "sbx-ll-layer-" + std::to_string(::getpid());
  std::memcpy(sa.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(::listen(server, 4), 0);
  EXPECT_EQ(layered({write_layer},
                    [&] {
                      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
                      return result(::connect(fd, reinterpret_cast<sockaddr*>(&sa), len));
                    }),
            EPERM);
  ::close(server);
}

TEST(LandlockAbiRules, TruncateOnlyBeneathWritableRoots) {
  REQUIRE_ABI(3, "TRUNCATE right");
  Dir ro, rw;
  std::ofstream(ro / "f") << "keep";
  std::ofstream(rw / "f") << "drop";
  const LandlockSpec spec = filesystem({"/"}, {rw.path()});
  EXPECT_EQ(confined(spec, [&] { return result(::truncate((ro / "f").c_str(), 0)); }), EACCES);
  EXPECT_EQ(fs::file_size(ro / "f"), 4u);
  EXPECT_EQ(confined(spec, [&] { return result(::truncate((rw / "f").c_str(), 0)); }), 0);
  EXPECT_EQ(fs::file_size(rw / "f"), 0u);
}

TEST(LandlockAbiRules, IoctlOnDevicesOnlyWhereGranted) {
  REQUIRE_ABI(5, "IOCTL_DEV right");
  // /dev/null answers TCGETS with ENOTTY when the ioctl reaches it; Landlock stops it first.
  auto tcgets = [] {
    const int fd = ::open("/dev/null", O_RDONLY);
    if (fd < 0) return 100;
    termios t{};
    return result(::ioctl(fd, TCGETS, &t));
  };
  EXPECT_EQ(confined(filesystem({"/"}, {}), tcgets), EACCES);
  EXPECT_EQ(confined(filesystem({"/"}, {}, {"/dev/null"}), tcgets), ENOTTY);
}

// A listing rule lets a directory and everything beneath it be listed, nothing be opened for
// reading: how / and /dev stay listable without opening the device nodes under /dev.
TEST(LandlockAbiRules, AListingRuleListsButOpensNothingBeneath) {
  Dir tree;
  ASSERT_TRUE(fs::create_directory(tree / "sub"));
  std::ofstream(tree / "sub/file") << "secret";
  LandlockSpec spec = filesystem({}, {});
  spec.list = {tree.path()};
  auto list_sub = [&] {
    const int fd = ::open((tree / "sub").c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return errno;
    ::close(fd);
    return 0;
  };
  auto read_file = [&] { return result(::open((tree / "sub/file").c_str(), O_RDONLY)); };
  EXPECT_EQ(confined(spec, list_sub), 0);
  EXPECT_EQ(confined(spec, read_file), EACCES);
}

// Stage 2 refuses a read or write rule that opens / or /dev itself (even through a symlink made
// after the plan): either would open every device node under /dev.
TEST(LandlockAbiRules, ARuleOpeningRootOrDevIsRefused) {
  Dir links;
  ASSERT_EQ(::symlink("/dev", (links / "to-dev").c_str()), 0);
  ASSERT_EQ(::symlink("/", (links / "to-root").c_str()), 0);
  auto nothing = [] { return 0; };
  for (const std::string& path :
       {std::string("/"), std::string("/dev"), links / "to-dev", links / "to-root"}) {
    LandlockSpec spec = filesystem({path}, {});
    spec.keep_dev_closed = true;
    EXPECT_EQ(confined(spec, nothing), kSetupFailed) << path;
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      const sbx::Status s = sbx::stage2::apply_landlock(spec);
      ::_exit(!s.ok() && s.error().find("whole of /dev") != std::string::npos ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << path << ": the error names /dev";
  }
  LandlockSpec write_root = filesystem({}, {"/dev"});
  write_root.keep_dev_closed = true;
  EXPECT_EQ(confined(write_root, nothing), kSetupFailed) << "write /dev";
  // Beneath /dev is the policy's own choice.
  LandlockSpec pts = filesystem({"/dev/pts"}, {});
  pts.keep_dev_closed = true;
  EXPECT_EQ(confined(pts, nothing), 0);
}

class Tcp {
 public:
  Tcp() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa = loopback(0);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    ::listen(fd_, 4);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
  }
  ~Tcp() { ::close(fd_); }
  static sockaddr_in loopback(int port) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sa;
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(LandlockAbiRules, RestrictedNetworkDeniesEveryTcpBindAndConnect) {
  REQUIRE_ABI(4, "TCP bind/connect rights");
  Tcp server;
  auto connect_it = [&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa = Tcp::loopback(server.port());
    return result(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa));
  };
  auto bind_it = [] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa = Tcp::loopback(0);
    return result(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa));
  };
  LandlockSpec blocked = filesystem({"/"}, {});
  blocked.block_tcp = true;
  EXPECT_EQ(confined(blocked, connect_it), EACCES);
  EXPECT_EQ(confined(blocked, bind_it), EACCES);
  EXPECT_EQ(confined(filesystem({"/"}, {}), connect_it), 0) << "open network must connect";
}

TEST(LandlockAbiRules, SignalsCannotReachProcessesOutsideTheDomain) {
  REQUIRE_ABI(6, "signal scoping");
  const pid_t outside = ::fork();
  if (outside == 0) {
    ::pause();
    ::_exit(0);
  }
  LandlockSpec spec;
  spec.enabled = true;
  spec.restrict_filesystem = false;
  EXPECT_EQ(confined(spec, [&] { return result(::kill(outside, SIGTERM)); }), EPERM);
  EXPECT_EQ(confined(spec, [] { return result(::kill(::getpid(), 0)); }), 0)
      << "signalling itself must still work";
  int status = 0;
  EXPECT_EQ(::waitpid(outside, &status, WNOHANG), 0) << "the outside process was killed";
  ::kill(outside, SIGKILL);
  ::waitpid(outside, &status, 0);
}

TEST(LandlockAbiRules, AbstractUnixSocketsOutsideTheDomainAreUnreachableWhenScoped) {
  REQUIRE_ABI(6, "abstract unix socket scoping");
  const int server = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const std::string name = "sbx-ll-unit-" + std::to_string(::getpid());
  std::memcpy(sa.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(::bind(server, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(::listen(server, 4), 0);
  auto connect_it = [&] {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    return result(::connect(fd, reinterpret_cast<sockaddr*>(&sa), len));
  };
  LandlockSpec spec;
  spec.enabled = true;
  spec.restrict_filesystem = false;
  spec.scope_abstract_unix = true;
  EXPECT_EQ(confined(spec, connect_it), EPERM);
  spec.scope_abstract_unix = false;
  EXPECT_EQ(confined(spec, connect_it), 0) << "unscoped (network enabled) must still connect";
  ::close(server);
}

TEST(LandlockAbiRules, AHigherMinimumAbiThanTheKernelsIsRefused) {
  REQUIRE_ABI(1, "Landlock");
  if (abi() >= sbx::stage2::ll::kMaxKnownAbi) {
    // Cannot ask for more than the kernel has via the ABI numbers stage 2 accepts; show the
    // check with the parser instead: 8 is rejected as unknown.
    LandlockSpec spec;
    EXPECT_FALSE(sbx::stage2::parse_landlock_option("--landlock", "8", spec).ok());
    return;
  }
  LandlockSpec spec = filesystem({"/"}, {});
  spec.min_abi = abi() + 1;
  EXPECT_EQ(confined(spec, [] { return 0; }), kSetupFailed);
}

}  // namespace
