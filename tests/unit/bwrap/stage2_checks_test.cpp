// What sbx-stage2 checks of bwrap's work (core/stage2/bwrap_checks.hpp): the mount list it is
// given against /proc/self/mountinfo, and the ready byte.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "bwrap_checks.hpp"

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

}  // namespace
