// sbx's one choice of a per-user state directory (sbx/sdk/private_state.hpp, state_dir): the
// runtime directory, else ~/.cache/sbx/<name>, never a shared directory such as /tmp, and a
// directory squatted at any of those names (another owner, a symlink, a wider mode) refused
// with the reason (issue #32).
#include "sbx/sdk/private_state.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "sbx/core/proxy.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using private_state::Sources;
using private_state::state_dir;
using test::TempDir;

// Sources with no runtime directory: a user of a su session, a container or CI.
Sources without_runtime_dir(const std::string& home) {
  Sources sources;
  sources.uid = ::geteuid();
  sources.run_user_root = home + "/no-run-user";
  sources.home = home;
  return sources;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST(StateDir, WithoutARuntimeDirectoryItIsInTheUsersCacheNeverTmp) {
  TempDir home;
  Sources sources = without_runtime_dir(home.path());
  sources.xdg_runtime_dir = "/tmp";  // world-writable, not this user's: never used
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, home.path() + "/.cache/sbx/proxy");
  EXPECT_EQ(mode_of(*dir), 0700u);
  EXPECT_EQ(mode_of(home.path() + "/.cache/sbx"), 0700u);
  Result<std::string> again = state_dir(sources, "proxy");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *dir);
}

TEST(StateDir, UsesTheUsersOwnRuntimeDirectory) {
  TempDir runtime;
  ASSERT_EQ(::chmod(runtime.path().c_str(), 0700), 0);
  Sources sources = without_runtime_dir(runtime.path());
  sources.xdg_runtime_dir = runtime.path();
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(*dir, runtime.path() + "/sbx-proxy");
  EXPECT_EQ(mode_of(*dir), 0700u);
}

TEST(StateDir, NoPrivatePlaceIsAnErrorWithTheReason) {
  Sources sources;
  sources.uid = ::geteuid();
  sources.run_user_root = "/nonexistent-sbx-run-user";
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("no private place for sbx's state"), std::string::npos) << dir.error();
}

TEST(StateDir, ASymlinkSquattedAtTheNameIsRefusedNotFollowed) {
  TempDir home;
  TempDir elsewhere;
  ASSERT_EQ(::chmod(elsewhere.path().c_str(), 0700), 0);
  fs::create_directories(home.path() + "/.cache");
  fs::create_directory_symlink(elsewhere.path(), home.path() + "/.cache/sbx");
  Result<std::string> dir = state_dir(without_runtime_dir(home.path()), "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("is a symlink or not a directory"), std::string::npos) << dir.error();
  EXPECT_TRUE(fs::is_empty(elsewhere.path())) << "the symlink was followed";
}

TEST(StateDir, ADirectoryWithAWiderModeIsRefused) {
  TempDir home;
  for (const char* level : {"/.cache", "/.cache/sbx", "/.cache/sbx/proxy"})
    ASSERT_EQ(::mkdir((home.path() + level).c_str(), 0700), 0) << level;
  ASSERT_EQ(::chmod((home.path() + "/.cache/sbx/proxy").c_str(), 0777), 0);
  Result<std::string> dir = state_dir(without_runtime_dir(home.path()), "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("has mode 0777, not 0700"), std::string::npos) << dir.error();
}

TEST(StateDir, ADirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to make a directory owned by another uid (65534)";
  TempDir runtime;
  ASSERT_EQ(::chmod(runtime.path().c_str(), 0700), 0);
  const std::string squat = runtime.path() + "/sbx-proxy";
  ASSERT_EQ(::mkdir(squat.c_str(), 0700), 0);
  ASSERT_EQ(::chown(squat.c_str(), 65534, 65534), 0);
  Sources sources = without_runtime_dir(runtime.path());
  sources.xdg_runtime_dir = runtime.path();
  Result<std::string> dir = state_dir(sources, "proxy");
  ASSERT_FALSE(dir.ok()) << *dir;
  EXPECT_NE(dir.error().find("is owned by uid 65534, not by uid 0"), std::string::npos)
      << dir.error();
}

// The proxy's socket directories live there too: never under /tmp, whatever the host offers.
TEST(StateDir, TheProxyUsesIt) {
  Result<std::string> parent = proxy::private_runtime_parent();
  if (!parent.ok()) {
    EXPECT_NE(parent.error().find("never puts it in a shared directory"), std::string::npos)
        << parent.error();
    return;
  }
  Result<std::string> expected = state_dir(private_state::current_sources(), "proxy");
  ASSERT_TRUE(expected.ok()) << expected.error();
  EXPECT_EQ(*parent, *expected);
  EXPECT_NE(parent->rfind("/tmp/", 0), 0u) << *parent;
}

}  // namespace
}  // namespace sbx
