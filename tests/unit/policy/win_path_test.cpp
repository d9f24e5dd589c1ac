// The Windows path helpers (sbx/core/win_path.hpp): pure string code. Built into the Linux unit
// tests and into the cross-built Windows host tests that run under wine (core/cross).
#include "sbx/core/win_path.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace sbx {
namespace win_path_test {

namespace wp = policy::winpath;

TEST(WinPathNormalize, DriveLettersAndBothSeparators) {
  EXPECT_EQ(*wp::normalize("C:\\Users\\me"), "C:/Users/me");
  EXPECT_EQ(*wp::normalize("c:/Users/me/"), "C:/Users/me");
  EXPECT_EQ(*wp::normalize("d:\\a\\\\b/c\\"), "D:/a/b/c");
  EXPECT_EQ(*wp::normalize("C:\\"), "C:/");
  EXPECT_EQ(*wp::normalize("C:/"), "C:/");
}

TEST(WinPathNormalize, RefusesUncDeviceAndRelativeFormsWithTheReason) {
  struct Row {
    std::string path;
    std::string reason;
  };
  const std::vector<Row> rows = {
      {"\\\\server\\share\\x", "UNC path"},
      {"//server/share", "UNC path"},
      {"\\\\?\\C:\\x", "device path"},
      {"\\\\.\\PhysicalDrive0", "device path"},
      {"//?/C:/x", "device path"},
      {"\\??\\C:\\x", "NT object path"},
      {"C:x", "relative to the drive's current directory"},
      {"C:", "relative to the drive's current directory"},
      {"\\Windows", "no drive letter"},
      {"Windows\\x", "not absolute"},
      {"C:\\a\\..\\b", "\"..\" component"},
      {"C:\\a\\.\\b", "\".\" component"},
      {"C:\\a\\file.txt:stream", "alternate data stream"},
      {"C:\\a\\b?", "does not allow"},
      {"C:\\a\\b.", "ending in a dot or a space"},
      {"C:\\a\\b ", "ending in a dot or a space"},
      {"C:\\a\\NUL", "reserved device 'NUL'"},
      {"C:\\a\\com1.txt", "reserved device 'com1.txt'"},
  };
  for (const Row& row : rows) {
    Result<std::string> got = wp::normalize(row.path);
    ASSERT_FALSE(got.ok()) << row.path << " -> " << *got;
    EXPECT_NE(got.error().find(row.reason), std::string::npos) << row.path << ": " << got.error();
  }
}

TEST(WinPathCompare, CaseInsensitiveForAsciiOnly) {
  EXPECT_TRUE(wp::equal("C:/Users/Me", "c:/users/me"));
  EXPECT_FALSE(wp::equal("C:/Users/Me", "C:/Users/Mex"));
  EXPECT_TRUE(wp::within("C:/Work/Sub/x", "c:/work"));
  EXPECT_TRUE(wp::within("C:/work", "C:/WORK"));
  EXPECT_FALSE(wp::within("C:/workshop", "C:/work"));
  EXPECT_TRUE(wp::within("C:/work", "C:/"));
  EXPECT_FALSE(wp::within("D:/work", "C:/"));
  // Non-ASCII bytes compare exactly (documented: no Unicode case table here).
  EXPECT_FALSE(wp::equal("C:/\xC3\x84", "C:/\xC3\xA4"));
}

TEST(WinPathSpeller, EachDirectoryKeepsItsFirstSpelling) {
  wp::Speller speller;
  EXPECT_EQ(speller.spell("C:/Work/Proj"), "C:/Work/Proj");
  EXPECT_EQ(speller.spell("C:/work/proj/out"), "C:/Work/Proj/out");
  EXPECT_EQ(speller.spell("C:/WORK/other"), "C:/Work/other");
  EXPECT_EQ(speller.spell("C:/"), "C:/");
  EXPECT_EQ(speller.spell("/"), "/");
}

TEST(WinPathVariables, TempTmpAndUserprofileExpandOthersRefused) {
  const std::map<std::string, std::string> env = {{"Temp", "C:\\Users\\me\\AppData\\Local\\Temp"},
                                                  {"TMP", "C:\\T"},
                                                  {"USERPROFILE", "C:\\Users\\me"}};
  EXPECT_EQ(*wp::expand("%TEMP%", env), "C:/Users/me/AppData/Local/Temp");
  EXPECT_EQ(*wp::expand("%temp%\\build", env), "C:/Users/me/AppData/Local/Temp/build");
  EXPECT_EQ(*wp::expand("%TMP%/x", env), "C:/T/x");
  EXPECT_EQ(*wp::expand("%USERPROFILE%\\.ssh", env), "C:/Users/me/.ssh");
  Result<std::string> other = wp::expand("%APPDATA%\\x", env);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().find("only %TEMP%, %TMP% and %USERPROFILE%"), std::string::npos);
  EXPECT_FALSE(wp::expand("%TEMP", env).ok());
  EXPECT_FALSE(wp::expand("%TEMP%x", env).ok());
  Result<std::string> unset = wp::expand("%USERPROFILE%", {});
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.error().find("not set"), std::string::npos);
  // A variable whose value is a share is refused like the share itself.
  Result<std::string> share = wp::expand("%TEMP%", {{"TEMP", "\\\\srv\\tmp"}});
  ASSERT_FALSE(share.ok());
  EXPECT_NE(share.error().find("UNC path"), std::string::npos);
}

TEST(WinPathResolveCommand, PathextOrderAndNoCurrentDirectory) {
  const std::set<std::string> files = {"C:/Tools/git.EXE", "C:/Tools/git.cmd", "C:/Proj/git.exe",
                                       "C:/Windows/System32/cmd.exe", "C:/Proj/bin/tool.exe"};
  auto exists = [&](const std::string& path) {
    for (const std::string& f : files)
      if (wp::equal(f, path)) return true;
    return false;
  };
  const std::string path_var = "C:\\Windows\\System32;\"C:\\Tools\";relative;\\\\srv\\bin";
  // PATHEXT order: .EXE before .CMD; the cwd (C:/Proj holds a git.exe) is never searched.
  EXPECT_EQ(*wp::resolve_command("git", "C:\\Proj", path_var, ".COM;.EXE;.CMD", exists),
            "C:/Tools/git.EXE");
  EXPECT_EQ(*wp::resolve_command("git", "C:\\Proj", path_var, ".CMD;.EXE", exists),
            "C:/Tools/git.CMD");
  EXPECT_EQ(*wp::resolve_command("cmd.exe", "C:\\Proj", path_var, "", exists),
            "C:/Windows/System32/cmd.exe");
  EXPECT_EQ(*wp::resolve_command("bin\\tool.exe", "C:\\Proj", path_var, "", exists),
            "C:/Proj/bin/tool.exe");
  EXPECT_EQ(*wp::resolve_command("C:\\Windows\\System32\\cmd.exe", "C:\\Proj", "", "", exists),
            "C:/Windows/System32/cmd.exe");
  Result<std::string> missing = wp::resolve_command("nope", "C:\\Proj", path_var, "", exists);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("command not found"), std::string::npos);
  EXPECT_FALSE(wp::resolve_command("\\\\srv\\bin\\x.exe", "C:\\Proj", "", "", exists).ok());
}

}  // namespace win_path_test
}  // namespace sbx
