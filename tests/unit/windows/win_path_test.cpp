// Policy paths to Win32 paths: accepted forms and every refused name, each with its reason.
#include "sbx/windows/win_path.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sbx::windows {
namespace {

TEST(WinPath, ConvertsDrivePaths) {
  EXPECT_EQ(*to_windows_path("C:/Users/me/proj"), (WindowsPath{"C:\\Users\\me\\proj", true}));
  EXPECT_EQ(*to_windows_path("d:/x"), (WindowsPath{"D:\\x", true}));
  EXPECT_EQ(*to_windows_path("C:/"), (WindowsPath{"C:\\", true}));
}

TEST(WinPath, ConvertsUncPaths) {
  EXPECT_EQ(*to_windows_path("//srv/share/dir"), (WindowsPath{"\\\\srv\\share\\dir", true}));
  Result<WindowsPath> no_share = to_windows_path("//srv");
  ASSERT_FALSE(no_share.ok());
  EXPECT_NE(no_share.error().find("names a server but no share"), std::string::npos);
}

TEST(WinPath, PosixPathsAreDriveRelative) {
  EXPECT_EQ(*to_windows_path("/home/me"), (WindowsPath{"\\home\\me", false}));
  EXPECT_EQ(*to_windows_path("/"), (WindowsPath{"\\", false}));
}

struct Refusal {
  std::string path;
  std::string reason;
};

class WinPathRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(WinPathRefusal, NamesPathAndReason) {
  Result<WindowsPath> result = to_windows_path(GetParam().path);
  ASSERT_FALSE(result.ok()) << GetParam().path;
  EXPECT_NE(result.error().find(GetParam().reason), std::string::npos) << result.error();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WinPathRefusal,
    ::testing::Values(
        Refusal{"relative/x", "is not absolute"}, Refusal{"", "is not absolute"},
        Refusal{"C:", "relative to the drive's current directory"},
        Refusal{"C:x", "relative to the drive's current directory"},
        Refusal{"C:/a\\b", "contains a backslash"}, Refusal{"C:/a//b", "empty component"},
        Refusal{"C:/a/../b", "contains '..'"}, Refusal{"C:/a/./b", "contains '.'"},
        Refusal{"C:/a/file:stream", "does not allow in file names"},
        Refusal{"C:/a/b?", "does not allow in file names"},
        Refusal{"C:/a/b\nc", "does not allow in file names"},
        Refusal{"C:/a/.git.", "ending in a dot or space"},
        Refusal{"C:/a/.git ", "ending in a dot or space"}, Refusal{"C:/a/NUL", "reserved device"},
        Refusal{"C:/a/con.txt", "reserved device"}, Refusal{"C:/a/Com1", "reserved device"},
        Refusal{"C:/a/LPT9.log", "reserved device"}, Refusal{"/tmp/aux", "reserved device"}));

TEST(WinPath, ReservedNamesAreExact) {
  EXPECT_TRUE(is_reserved_device_name("CONOUT$"));
  EXPECT_TRUE(is_reserved_device_name("com\xC2\xB9"));
  EXPECT_FALSE(is_reserved_device_name("COM0"));
  EXPECT_FALSE(is_reserved_device_name("console"));
  EXPECT_FALSE(is_reserved_device_name("nully"));
  EXPECT_FALSE(is_reserved_device_name(".nul"));
}

}  // namespace
}  // namespace sbx::windows
