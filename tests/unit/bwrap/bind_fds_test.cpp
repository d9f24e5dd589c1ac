// Exec-time binding by descriptor (bind_fds.hpp): sources are opened without following any
// symlink and checked, the argv names the descriptors, and the mount list for sbx-stage2 is
// derived from bwrap's options.
#include "sbx/bwrap/bind_fds.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using sbx::bwrap::bind_sources_by_fd;
using sbx::bwrap::kFirstBindFd;
using sbx::bwrap::open_bind_source;
using sbx::bwrap::planned_mounts_block;

std::size_t open_fd_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

class BindFds : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ + "/real/sub");
    std::ofstream(dir_ + "/real/file.txt") << "x";
    fs::create_directory_symlink(dir_ + "/real", dir_ + "/link");
  }
  sbx::test::TempDir scratch_;
  const std::string dir_ = scratch_.path();
};

TEST_F(BindFds, OpensADirectoryAndAFileAboveTheSpawnersDescriptors) {
  for (const std::string& path : {dir_ + "/real/sub", dir_ + "/real/file.txt", std::string("/")}) {
    sbx::Result<int> fd = open_bind_source(path, false);
    ASSERT_TRUE(fd.ok()) << fd.error();
    EXPECT_GE(*fd, kFirstBindFd);
    EXPECT_EQ(fs::read_symlink("/proc/self/fd/" + std::to_string(*fd)).string(), path);
    EXPECT_NE(::fcntl(*fd, F_GETFD) & FD_CLOEXEC, 0) << "must stay close-on-exec in sbx";
    ::close(*fd);
  }
}

TEST_F(BindFds, RefusesASymlinkInAnyComponent) {
  const std::size_t before = open_fd_count();
  for (const std::string& path : {dir_ + "/link", dir_ + "/link/sub", dir_ + "/link/file.txt"}) {
    sbx::Result<int> fd = open_bind_source(path, false);
    EXPECT_FALSE(fd.ok()) << path;
    if (!fd.ok()) {
      EXPECT_NE(fd.error().find("symlink"), std::string::npos) << fd.error();
    }
  }
  EXPECT_EQ(open_fd_count(), before) << "a refused source left a descriptor open";
}

TEST_F(BindFds, RefusesMissingSourcesAndDevicesUnlessAllowed) {
  EXPECT_FALSE(open_bind_source(dir_ + "/gone", false).ok());
  EXPECT_FALSE(open_bind_source("relative/path", false).ok());
  EXPECT_FALSE(open_bind_source("/dev/null", false).ok());
  sbx::Result<int> null = open_bind_source("/dev/null", true);
  ASSERT_TRUE(null.ok()) << null.error();
  ::close(*null);
}

TEST_F(BindFds, ReplacesBindOptionsOnlyBeforeTheSeparator) {
  const std::vector<std::string> argv = {"/usr/bin/bwrap",
                                         "--ro-bind",
                                         "/",
                                         "/",
                                         "--bind",
                                         dir_ + "/real",
                                         dir_ + "/real",
                                         "--ro-bind",
                                         "/dev/null",
                                         dir_ + "/real/file.txt",
                                         "--tmpfs",
                                         "/x",
                                         "--",
                                         "/stage2",
                                         "--bind",
                                         "a",
                                         "b"};
  sbx::Result<sbx::bwrap::BoundArgv> bound = bind_sources_by_fd(argv);
  ASSERT_TRUE(bound.ok()) << bound.error();
  ASSERT_EQ(bound->fds.size(), 3u);
  const std::vector<std::string> expected = {"/usr/bin/bwrap",
                                             "--ro-bind-fd",
                                             std::to_string(bound->fds[0]),
                                             "/",
                                             "--bind-fd",
                                             std::to_string(bound->fds[1]),
                                             dir_ + "/real",
                                             "--ro-bind-fd",
                                             std::to_string(bound->fds[2]),
                                             dir_ + "/real/file.txt",
                                             "--tmpfs",
                                             "/x",
                                             "--",
                                             "/stage2",
                                             "--bind",
                                             "a",
                                             "b"};
  EXPECT_EQ(bound->argv, expected);
  for (int fd : bound->fds) ::close(fd);
}

TEST_F(BindFds, OneBadSourceFailsTheWholeArgvAndClosesTheOthers) {
  const std::size_t before = open_fd_count();
  sbx::Result<sbx::bwrap::BoundArgv> bound =
      bind_sources_by_fd({"/usr/bin/bwrap", "--ro-bind", "/", "/", "--bind", dir_ + "/link",
                          dir_ + "/link", "--", "/stage2"});
  EXPECT_FALSE(bound.ok());
  EXPECT_EQ(open_fd_count(), before);
}

TEST(BwrapPlannedMounts, ListsEveryMountWithItsFinalWritability) {
  sbx::Result<std::string> block = planned_mounts_block({"/usr/bin/bwrap",
                                                         "--tmpfs",
                                                         "/",
                                                         "--ro-bind-fd",
                                                         "10",
                                                         "/usr",
                                                         "--dev",
                                                         "/dev",
                                                         "--bind-fd",
                                                         "11",
                                                         "/w",
                                                         "--perms",
                                                         "0555",
                                                         "--tmpfs",
                                                         "/w/.git",
                                                         "--ro-bind",
                                                         "/dev/null",
                                                         "/w/secret",
                                                         "--proc",
                                                         "/proc",
                                                         "--remount-ro",
                                                         "/w/.git",
                                                         "--remount-ro",
                                                         "/",
                                                         "--unshare-user",
                                                         "--cap-drop",
                                                         "ALL",
                                                         "--chdir",
                                                         "/w",
                                                         "--info-fd",
                                                         "3",
                                                         "--",
                                                         "/stage2",
                                                         "--bind",
                                                         "/x",
                                                         "/x"});
  ASSERT_TRUE(block.ok()) << block.error();
  using namespace std::string_literals;
  EXPECT_EQ(*block, "r /\0r /usr\0w /dev\0w /w\0r /w/.git\0r /w/secret\0w /proc\0"s);
}

TEST(BwrapPlannedMounts, AnOptionItCannotVerifyIsAnError) {
  EXPECT_FALSE(planned_mounts_block({"/usr/bin/bwrap", "--overlay-src", "/a", "--", "/s"}).ok());
  EXPECT_FALSE(planned_mounts_block({"/usr/bin/bwrap", "--bind", "/a"}).ok());
}

}  // namespace
