// What sbx-stage2 checks of bwrap's work (plugins/bwrap/checks/bwrap_checks.hpp): the mount list it
// is given against /proc/self/mountinfo, and the ready byte.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bwrap_checks.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace std::string_literals;
using sbx::stage2::ActualMount;
using sbx::stage2::check_mounts;
using sbx::stage2::parse_mountinfo;
using sbx::stage2::parse_planned_mounts;
using sbx::stage2::PlannedMount;

// What mountinfo looks like in a workspace-write sandbox (trimmed).
const std::string kMountinfo =
    "60 58 254:0 / / ro,nosuid,relatime master:1 - ext4 /dev/vda rw\n"
    "61 60 0:5 / /dev rw,nosuid,nodev - tmpfs tmpfs rw\n"
    "62 61 0:22 / /dev/pts rw,nosuid,noexec - devpts devpts rw\n"
    "63 60 254:0 /home/u/my\\040proj /home/u/my\\040proj rw,nosuid,relatime - ext4 /dev/vda rw\n"
    "64 63 0:30 / /home/u/my\\040proj/.codex ro,nosuid - tmpfs tmpfs rw\n"
    "65 63 0:31 / /home/u/my\\040proj/build rw,nosuid - tmpfs tmpfs rw\n"
    "66 60 0:32 / /proc rw,nosuid,nodev - proc proc rw\n";

std::vector<PlannedMount> planned() {
  return {{"/", false},
          {"/dev", true},
          {"/home/u/my proj", true},
          {"/home/u/my proj/.codex", false},
          {"/proc", true}};
}

TEST(Stage2Mounts, ParsesMountinfoUnescapingMountPoints) {
  sbx::Result<std::vector<ActualMount>> actual = parse_mountinfo(kMountinfo);
  ASSERT_TRUE(actual.ok()) << actual.error();
  ASSERT_EQ(actual->size(), 7u);
  EXPECT_EQ((*actual)[0].path, "/");
  EXPECT_FALSE((*actual)[0].writable);
  EXPECT_EQ((*actual)[3].path, "/home/u/my proj");
  EXPECT_TRUE((*actual)[3].writable);
  EXPECT_FALSE(parse_mountinfo("garbage\n").ok());
}

TEST(Stage2Mounts, PassesWhenEveryPlannedMountIsThereAndWritesStayInside) {
  sbx::Result<std::vector<ActualMount>> actual = parse_mountinfo(kMountinfo);
  ASSERT_TRUE(actual.ok());
  // /home/u/my proj/build: a host submount carried along by the writable bind (inside it).
  EXPECT_TRUE(check_mounts(planned(), *actual).ok()) << check_mounts(planned(), *actual).error();
}

TEST(Stage2Mounts, RefusesAPlannedMountPointWithoutAMount) {
  sbx::Result<std::vector<ActualMount>> actual = parse_mountinfo(kMountinfo);
  ASSERT_TRUE(actual.ok());
  std::vector<PlannedMount> plan = planned();
  plan.push_back({"/home/u/my proj/config/secrets", false});  // the mask landed elsewhere
  sbx::Status status = check_mounts(plan, *actual);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("/home/u/my proj/config/secrets"), std::string::npos);
}

TEST(Stage2Mounts, RefusesAWritableMountOutsideThePlannedWritableOnes) {
  sbx::Result<std::vector<ActualMount>> actual =
      parse_mountinfo(kMountinfo + "67 60 254:0 /var/tmp/target /var/tmp/target rw - ext4 x rw\n");
  ASSERT_TRUE(actual.ok());
  sbx::Status status = check_mounts(planned(), *actual);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("/var/tmp/target"), std::string::npos) << status.error();
  // The same mount read-only is fine (e.g. a host submount under a read-only root).
  actual = parse_mountinfo(kMountinfo + "67 60 254:0 /var/tmp/t /var/tmp/t ro - ext4 x rw\n");
  ASSERT_TRUE(actual.ok());
  EXPECT_TRUE(check_mounts(planned(), *actual).ok());
}

// /proc/sys inside bwrap's procfs may be writable by the rule above (bwrap's own /proc); the
// plan's read-only bind over it is what keeps a uid-0 command from the host's sysctls, so the
// topmost mount at a planned read-only path must be read-only.
TEST(Stage2Mounts, RefusesAPlannedReadOnlyMountWhoseTopmostMountIsWritable) {
  std::vector<PlannedMount> plan = planned();
  plan.push_back({"/proc/sys", false});
  sbx::Result<std::vector<ActualMount>> held =
      parse_mountinfo(kMountinfo + "67 66 0:21 /sys /proc/sys ro,nosuid - proc proc rw\n");
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(check_mounts(plan, *held).ok()) << check_mounts(plan, *held).error();
  // A writable mount stacked on top of the read-only one (the last listed at the path).
  sbx::Result<std::vector<ActualMount>> covered =
      parse_mountinfo(kMountinfo + "67 66 0:21 /sys /proc/sys ro,nosuid - proc proc rw\n" +
                      "68 67 0:32 /sys /proc/sys rw,nosuid - proc proc rw\n");
  ASSERT_TRUE(covered.ok());
  sbx::Status status = check_mounts(plan, *covered);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("'/proc/sys' must be read-only"), std::string::npos)
      << status.error();
}

TEST(Stage2Mounts, ParsesThePlannedBlockAndRejectsMalformedEntries) {
  sbx::Result<std::vector<PlannedMount>> ok = parse_planned_mounts("w /a b\0r /\0"s);
  ASSERT_TRUE(ok.ok()) << ok.error();
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].path, "/a b");
  EXPECT_TRUE((*ok)[0].writable);
  EXPECT_FALSE((*ok)[1].writable);
  EXPECT_FALSE(parse_planned_mounts("w /a"s).ok());          // no NUL: truncated
  EXPECT_FALSE(parse_planned_mounts("x /a\0"s).ok());        // unknown kind
  EXPECT_FALSE(parse_planned_mounts("w relative\0"s).ok());  // not absolute
}

TEST(Stage2Ready, WritesOneByteAndClosesTheDescriptor) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_TRUE(sbx::stage2::signal_ready(fds[1]).ok());
  char buffer[4] = {};
  EXPECT_EQ(::read(fds[0], buffer, sizeof buffer), 1);  // one byte, then EOF: the end was closed
  EXPECT_EQ(::read(fds[0], buffer, sizeof buffer), 0);
  ::close(fds[0]);
}

// The real thing: bwrap runs the built sbx-stage2 with a mount list on fd 6. A list that matches
// what bwrap mounted lets the command run; a list that does not (a writable bind the list calls
// read-only) is refused with 125 before the command runs.
class Stage2MountsUnderBwrap : public ::testing::Test {
 protected:
  void SetUp() override {
    stage2_ = std::string(SBX_BUILD_TREE) + "/libexec/sbx/sbx-stage2";
    if (!std::filesystem::exists("/usr/bin/bwrap")) GTEST_SKIP() << "bwrap is not installed";
    // The test depends on sbx-stage2 (extra.cmake): a missing one is a broken build.
    ASSERT_TRUE(std::filesystem::exists(stage2_)) << "no sbx-stage2 at " << stage2_;
  }
  // Exit status of bwrap running stage 2 (which runs `touch DIR/ran`) with `list` on fd 6.
  int run(const std::string& list) const {
    const int memfd = ::memfd_create("mounts", 0);
    if (memfd < 0 || ::write(memfd, list.data(), list.size()) != static_cast<ssize_t>(list.size()))
      return -1;
    ::lseek(memfd, 0, SEEK_SET);
    const std::string ran = dir_ + "/ran";
    // As sbx's plan does: no capability left (stage 2 refuses otherwise), stage 2 as PID 1.
    std::vector<std::string> args = {"/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev"};
    args.insert(args.end(), {"--bind", dir_, dir_, "--proc", "/proc", "--unshare-user"});
    args.insert(args.end(), {"--unshare-pid", "--unshare-net", "--die-with-parent"});
    args.insert(args.end(), {"--cap-drop", "ALL", "--as-pid-1", "--", stage2_});
    args.insert(args.end(), {"--mounts-fd", "6", "--net", "blocked", "--", "/usr/bin/touch", ran});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(memfd, 6);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(memfd);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string stage2_;
  sbx::test::TempDir scratch_;
  const std::string dir_ = scratch_.path();
};

TEST_F(Stage2MountsUnderBwrap, MatchingListRunsTheCommandAndAMismatchIsRefused) {
  const std::string ok = "r /\0w /dev\0w "s + dir_ + "\0w /proc\0"s;
  EXPECT_EQ(run(ok), 0);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/ran"));
  std::filesystem::remove(dir_ + "/ran");
  const std::string says_read_only = "r /\0w /dev\0r "s + dir_ + "\0w /proc\0"s;
  EXPECT_EQ(run(says_read_only), 125);
  const std::string names_a_missing_mount =
      "r /\0w /dev\0w "s + dir_ + "\0w "s + dir_ + "/elsewhere\0w /proc\0"s;
  EXPECT_EQ(run(names_a_missing_mount), 125);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ran")) << "the command ran despite a mismatch";
}

// The private-namespace filter opens loopback TCP/UDP, which is harmless only when loopback is
// the sandbox's own: stage 2 refuses --net private (exit 125, the command does not run) in a
// network namespace with any interface besides lo, and in Landlock mode, which never has one.
int run_stage2_under_bwrap(const std::string& stage2, bool unshare_net,
                           const std::vector<std::string>& stage2_args) {
  std::vector<std::string> args = {"/usr/bin/bwrap", "--ro-bind",    "/",      "/",
                                   "--dev",          "/dev",         "--proc", "/proc",
                                   "--unshare-user", "--unshare-pid"};
  if (unshare_net) args.push_back("--unshare-net");
  args.insert(args.end(), {"--die-with-parent", "--cap-drop", "ALL", "--as-pid-1", "--", stage2});
  args.insert(args.end(), stage2_args.begin(), stage2_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool host_has_interface_besides_lo() {
  std::ifstream dev("/proc/net/dev");
  std::string line;
  while (std::getline(dev, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != "lo") return true;
  }
  return false;
}

TEST(Stage2PrivateNetwork, RunsOnlyInAPrivateNetworkNamespace) {
  const std::string stage2 = std::string(SBX_BUILD_TREE) + "/libexec/sbx/sbx-stage2";
  if (!std::filesystem::exists("/usr/bin/bwrap")) GTEST_SKIP() << "bwrap is not installed";
  ASSERT_TRUE(std::filesystem::exists(stage2)) << "no sbx-stage2 at " << stage2;
  const std::vector<std::string> private_true = {"--net", "private", "--", "/usr/bin/true"};
  EXPECT_EQ(run_stage2_under_bwrap(stage2, true, private_true), 0);
  if (host_has_interface_besides_lo()) {
    EXPECT_EQ(run_stage2_under_bwrap(stage2, false, private_true), 125);
  } else {
    std::printf("host has only lo: the shared-namespace refusal is not exercised here\n");
  }
  const std::vector<std::string> landlock_private = {"--landlock", "1",  "--net",
                                                     "private",    "--", "/usr/bin/true"};
  EXPECT_EQ(run_stage2_under_bwrap(stage2, true, landlock_private), 125);
}

}  // namespace
