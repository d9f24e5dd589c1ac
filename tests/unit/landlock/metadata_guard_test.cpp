// Landlock mode's metadata guard (linux/landlock/metadata_notify.hpp): the pure inside/outside
// decision with hostile paths, then the whole mechanism as a run uses it: the launcher
// (landlock_launch.hpp) with its supervisor, its child dropping every capability, installing
// the precompiled guard, the Landlock ruleset and the seccomp filter, then trying one call
// instead of the exec and reporting its errno as the exit code.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <pty.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "landlock_launch.hpp"
#include "landlock_ruleset.hpp"
#include "metadata_notify.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using sbx::stage2::within_writable_roots;

constexpr int kGuardSetupFailed = 200;
constexpr long kNrFchmodat2 = 452;
constexpr long kNrSetxattrat = 463;

// ---- the decision ----

TEST(MetadataDecision, InsideARootOrTheRootItselfIsAllowed) {
  const std::vector<std::string> roots = {"/work/ws", "/tmp"};
  EXPECT_TRUE(within_writable_roots("/work/ws", roots));
  EXPECT_TRUE(within_writable_roots("/work/ws/build/out", roots));
  EXPECT_TRUE(within_writable_roots("/tmp/x", roots));
  EXPECT_TRUE(within_writable_roots("/anything", {"/"}));
}

TEST(MetadataDecision, PrefixesThatAreNotComponentsAreOutside) {
  const std::vector<std::string> roots = {"/work/ws"};
  EXPECT_FALSE(within_writable_roots("/work/ws2", roots));
  EXPECT_FALSE(within_writable_roots("/work/ws2/file", roots));
  EXPECT_FALSE(within_writable_roots("/work/w", roots));
  EXPECT_FALSE(within_writable_roots("/work", roots));
  EXPECT_FALSE(within_writable_roots("/", roots));
}

TEST(MetadataDecision, NonCanonicalOrUnusualPathsAreNeverInside) {
  const std::vector<std::string> roots = {"/work/ws"};
  for (const char* hostile :
       {"/work/ws/../etc/shadow", "/work/ws/..", "/work/ws/./x", "/work/ws//x", "/work/ws/",
        "work/ws/x", "", "/work/ws/x (deleted)", "pipe:[1234]", "anon_inode:[seccomp notify]",
        "/work/ws/a/../../../etc"}) {
    EXPECT_FALSE(within_writable_roots(hostile, roots)) << hostile;
  }
}

TEST(MetadataDecision, NonCanonicalRootsGrantNothing) {
  EXPECT_FALSE(within_writable_roots("/work/ws/x", {"work/ws"}));
  EXPECT_FALSE(within_writable_roots("/work/ws/x", {"/work/ws/"}));
  EXPECT_FALSE(within_writable_roots("/etc/x", {"/work/ws/../../etc"}));
  EXPECT_FALSE(within_writable_roots("/work/ws/x", {""}));
  EXPECT_FALSE(within_writable_roots("/work/ws/x", {}));
}

// ---- the mechanism, as stage 2 runs it ----

using Dir = sbx::test::TempDir;

void write(const std::string& path, const char* text = "x\n", mode_t mode = 0644) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  return st.st_mode & 07777;
}

// The body's std::function, called in the confined child instead of the exec.
int run_guard_attempt(void* arg) { return (*static_cast<const std::function<int()>*>(arg))(); }

// The host's prepare_child slot, used to give the child another filesystem uid before it
// drops its capabilities (only a test wants that).
int become_fsuid_nobody(void* /*ctx*/) {
  ::setfsuid(65534);
  return 0;
}

// Runs `body` in a guarded, Landlock-confined child under the launcher's supervisor. 0 = the
// call succeeded, else its errno.
int guarded(const std::string& writable, const std::function<int()>& body,
            bool as_fsuid_nobody = false) {
  sbx::stage2::LandlockLaunch launch;
  launch.landlock.enabled = true;
  launch.landlock.read = {"/"};
  launch.landlock.keep_dev_closed = false;  // "/" readable for brevity; the guard is tested
  launch.landlock.write = {writable};
  launch.landlock.dev = {"/dev/null", "/dev/ptmx"};
  launch.network = sbx::stage2::NetworkFilter::kOpen;
  launch.command = {"/bin/true"};  // never run: the body replaces the exec
  sbx::stage2::LaunchOptions options;
  options.guard_program = std::string(SBX_BUILD_TREE) + "/libexec/sbx/sbx-stage2";
  options.cwd = writable;
  options.body = run_guard_attempt;
  options.body_arg = const_cast<std::function<int()>*>(&body);
  if (as_fsuid_nobody) options.prepare_child = become_fsuid_nobody;
  sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(launch, options);
  if (!status.ok()) return 254;
  return status->signal != 0 ? 255 : status->exit_code;
}

int errno_of(long rc) { return rc < 0 ? errno : 0; }

class MetadataGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    const int abi = sbx::stage2::landlock_abi();
    if (abi < 1) GTEST_SKIP() << "no Landlock on this kernel (" << abi << "): nothing to guard";
    ASSERT_FALSE(ws_.path().empty());
    ASSERT_FALSE(outside_.path().empty());
    write(outside_ / "victim");
    write(ws_ / "out");
  }
  Dir ws_;
  Dir outside_{"/var/tmp"};
};

TEST_F(MetadataGuard, ChmodOutsideTheWritableRootsFailsInsideWorks) {
  const std::string victim = outside_ / "victim";
  EXPECT_EQ(guarded(ws_.path(), [&] { return errno_of(::chmod(victim.c_str(), 04777)); }), EPERM);
  EXPECT_EQ(guarded(ws_.path(), [&] { return errno_of(::chmod(victim.c_str(), 0666)); }), EPERM);
  EXPECT_EQ(mode_of(victim), 0644u);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::chmod("out", 0755)); }), 0);
  EXPECT_EQ(mode_of(ws_ / "out"), 0755u);
}

TEST_F(MetadataGuard, SetuidAndSetgidModesAreRefusedEvenInside) {
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::chmod("out", 04755)); }), EPERM);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::chmod("out", 02755)); }), EPERM);
  EXPECT_EQ(mode_of(ws_ / "out"), 0644u);
}

TEST_F(MetadataGuard, EveryFormOfTheCallIsGuarded) {
  const std::string victim = outside_ / "victim";
  const std::string dir = outside_.path();
  const auto outside_calls = std::vector<std::pair<const char*, std::function<int()>>>{
      {"fchmod",
       [&] {
         const int fd = ::open(victim.c_str(), O_RDONLY);
         return errno_of(::fchmod(fd, 0666));
       }},
      {"fchmodat dirfd",
       [&] {
         const int fd = ::open(dir.c_str(), O_PATH);
         return errno_of(::fchmodat(fd, "victim", 0666, 0));
       }},
      {"fchmodat nofollow (glibc: /proc/self/fd)",
       [&] { return errno_of(::fchmodat(AT_FDCWD, victim.c_str(), 0666, AT_SYMLINK_NOFOLLOW)); }},
      {"fchmodat2",
       [&] { return errno_of(::syscall(kNrFchmodat2, AT_FDCWD, victim.c_str(), 0666, 0)); }},
      {"relative ..", [&] { return errno_of(::chmod(("../../.." + victim).c_str(), 0666)); }},
      {"chown", [&] { return errno_of(::chown(victim.c_str(), 0, 0)); }},
      {"lchown", [&] { return errno_of(::lchown(victim.c_str(), 0, 0)); }},
      {"fchown",
       [&] {
         const int fd = ::open(victim.c_str(), O_RDONLY);
         return errno_of(::fchown(fd, 0, 0));
       }},
      {"utimensat",
       [&] {
         const timespec ts[2] = {{1, 0}, {1, 0}};
         return errno_of(::utimensat(AT_FDCWD, victim.c_str(), ts, 0));
       }},
      {"futimens",
       [&] {
         const int fd = ::open(victim.c_str(), O_RDONLY);
         const timespec ts[2] = {{1, 0}, {1, 0}};
         return errno_of(::futimens(fd, ts));
       }},
      {"utimes",
       [&] {
         const timeval tv[2] = {{1, 0}, {1, 0}};
         return errno_of(::utimes(victim.c_str(), tv));
       }},
      {"setxattr", [&] { return errno_of(::setxattr(victim.c_str(), "user.sbx", "1", 1, 0)); }},
      {"fsetxattr",
       [&] {
         const int fd = ::open(victim.c_str(), O_RDONLY);
         return errno_of(::fsetxattr(fd, "user.sbx", "1", 1, 0));
       }},
      {"removexattr", [&] { return errno_of(::removexattr(victim.c_str(), "user.keep")); }},
  };
  ASSERT_EQ(::setxattr(victim.c_str(), "user.keep", "1", 1, 0), 0) << std::strerror(errno);
  struct stat before {};
  ASSERT_EQ(::stat(victim.c_str(), &before), 0);
  for (const auto& [name, call] : outside_calls)
    EXPECT_EQ(guarded(ws_.path(), call), EPERM) << name;
  struct stat after {};
  ASSERT_EQ(::stat(victim.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_atim.tv_sec, before.st_atim.tv_sec);
  char value[8] = {};
  EXPECT_EQ(::getxattr(victim.c_str(), "user.keep", value, sizeof value), 1);
  EXPECT_EQ(::getxattr(victim.c_str(), "user.sbx", value, sizeof value), -1);
}

TEST_F(MetadataGuard, TheSameFormsWorkInside) {
  const std::string out = ws_ / "out";
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      const int fd = ::open("out", O_RDONLY);
                      return errno_of(::fchmod(fd, 0700));
                    }),
            0);
  EXPECT_EQ(mode_of(out), 0700u);
  EXPECT_EQ(
      guarded(ws_.path(),
              [] { return errno_of(::fchmodat(AT_FDCWD, "out", 0750, AT_SYMLINK_NOFOLLOW)); }),
      0);
  EXPECT_EQ(mode_of(out), 0750u);
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      const timespec ts[2] = {{1000, 0}, {2000, 5}};
                      return errno_of(::utimensat(AT_FDCWD, "out", ts, 0));
                    }),
            0);
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 2000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 5);
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      const timeval tv[2] = {{3000, 0}, {4000, 0}};
                      return errno_of(::utimes("out", tv));
                    }),
            0);
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 4000);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::setxattr("out", "user.sbx", "v", 1, 0)); }),
            0);
  char value[8] = {};
  EXPECT_EQ(::getxattr(out.c_str(), "user.sbx", value, sizeof value), 1);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::removexattr("out", "user.sbx")); }), 0);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::chown("out", ::getuid(), ::getgid())); }),
            0);
}

TEST_F(MetadataGuard, ASymlinkInsidePointingOutsideDoesNotLetTheCallThrough) {
  ASSERT_EQ(::symlink((outside_ / "victim").c_str(), (ws_ / "link").c_str()), 0);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::chmod("link", 0666)); }), EPERM);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::chown("link", 0, 0)); }), EPERM);
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::utimensat(AT_FDCWD, "link", nullptr, 0)); }),
            EPERM);
  EXPECT_EQ(mode_of(outside_ / "victim"), 0644u);
  // The link itself is inside: changing the link (not its target) is the command's business.
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::lchown("link", ::getuid(), ::getgid())); }),
            0);
}

TEST_F(MetadataGuard, ASiblingWithTheRootAsPrefixIsOutside) {
  const std::string sibling = ws_.path() + "2";
  ASSERT_TRUE(fs::create_directory(sibling));
  write(sibling + "/f");
  const int rc =
      guarded(ws_.path(), [&] { return errno_of(::chmod((sibling + "/f").c_str(), 0666)); });
  const mode_t mode = mode_of(sibling + "/f");
  fs::remove_all(sibling);
  EXPECT_EQ(rc, EPERM);
  EXPECT_EQ(mode, 0644u);
}

TEST_F(MetadataGuard, TheSupervisorActsWithoutCapabilities) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root: checks the supervisor dropped root's capabilities";
  // Root without CAP_CHOWN cannot give a file away, nor set file capabilities: the supervisor
  // must not be able to either, inside the workspace too.
  EXPECT_EQ(guarded(ws_.path(), [] { return errno_of(::chown("out", 65534, 65534)); }), EPERM);
  const unsigned char cap[20] = {0x01, 0, 0, 0x02};
  EXPECT_EQ(guarded(ws_.path(),
                    [&] {
                      return errno_of(::setxattr("out", "security.capability", cap, sizeof cap, 0));
                    }),
            EPERM);
  struct stat st {};
  ASSERT_EQ(::stat((ws_ / "out").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST_F(MetadataGuard, ACallerWithOtherFilesystemCredentialsIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: changes the caller's fsuid";
  // The caller (fsuid 65534; the kernel clears its filesystem capabilities with that) does not
  // own root's file and may not chmod it; the supervisor (fsuid 0) would, as its owner. Two
  // layers refuse it: the supervisor's fsuid/fsgid comparison, and before it the kernel's
  // ptrace check on /proc/TID/mem (such a caller is no longer dumpable, or holds capabilities
  // the supervisor does not), so the comparison alone cannot be observed from here.
  EXPECT_EQ(guarded(
                ws_.path(),
                [] {
                  return ::setfsuid(static_cast<uid_t>(-1)) == 65534
                             ? errno_of(::chmod("out", 0600))
                             : kGuardSetupFailed + 9;
                },
                /*as_fsuid_nobody=*/true),
            EPERM);
  EXPECT_EQ(mode_of(ws_ / "out"), 0644u);
}

TEST_F(MetadataGuard, NewerAttributeCallsAndChattrAreRefused) {
  EXPECT_EQ(
      guarded(ws_.path(),
              [] {
                return errno_of(::syscall(kNrSetxattrat, AT_FDCWD, "out", 0, "user.x", nullptr, 0));
              }),
      ENOSYS);
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      const int fd = ::open("out", O_RDONLY);
                      long flags = 0;  // the current flags again: the kernel would allow that
                      if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return kGuardSetupFailed + 8;
                      return errno_of(::ioctl(fd, FS_IOC_SETFLAGS, &flags));
                    }),
            EPERM);
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      const int fd = ::open("out", O_RDONLY);
                      long version = 7;
                      return errno_of(::ioctl(fd, FS_IOC_SETVERSION, &version));
                    }),
            EPERM);
}

TEST_F(MetadataGuard, TheCommandNeverHoldsTheListener) {
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
                        std::error_code ec;
                        const std::string target = fs::read_symlink(entry.path(), ec).string();
                        if (target.find("seccomp") != std::string::npos) return 1;
                      }
                      return 0;
                    }),
            0);
}

TEST_F(MetadataGuard, OpenptyWorksWithoutAccessToDevPts) {
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      int master = -1, peer = -1;
                      if (::openpty(&master, &peer, nullptr, nullptr, nullptr) != 0) return errno;
                      // The peer works as a terminal; /dev/pts itself stays closed.
                      termios t{};
                      if (::tcgetattr(peer, &t) != 0) return 100;
                      if (::write(master, "x\n", 2) != 2) return 101;
                      char c = 0;
                      if (::read(peer, &c, 1) != 1 || c != 'x') return 102;
                      if (::open(::ptsname(master), O_RDWR | O_NOCTTY) >= 0) return 103;
                      return 0;
                    }),
            0);
}

TEST_F(MetadataGuard, OnlyPtmxMastersGetAPeer) {
  EXPECT_EQ(guarded(ws_.path(),
                    [] {
                      const int fd = ::open("out", O_RDONLY);
                      return errno_of(::ioctl(fd, TIOCGPTPEER, O_RDWR | O_NOCTTY));
                    }),
            ENOTTY);
}

}  // namespace
