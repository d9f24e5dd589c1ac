// Windows paths in policies: validation of Windows entries and resolution with
// PathStyle::kWindows (lexical, so it runs on this Linux host exactly as it would for a plan
// shown for Windows). The string helpers themselves: win_path_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sbx/core/policy.hpp"
#include "sbx/core/resolve.hpp"

namespace sbx {
namespace winpaths_test {

Policy parse_windows_policy(const std::string& json) {
  Result<Policy> parsed = parse_policy(json);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return parsed.ok() ? *parsed : Policy{};
}

std::string windows_policy_json(const std::string& entries) {
  return R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [)" + entries +
         R"(], "protected_names": [".git"]}, "network": {"mode": "enabled"}})";
}

TEST(WinPathPolicy, ValidationNormalisesWindowsEntries) {
  Policy policy = parse_windows_policy(windows_policy_json(
      R"({"path": "c:\\Work\\Proj\\", "access": "write"},
         {"path": "%temp%\\cache", "access": "write"},
         {"path": "%USERPROFILE%", "access": "read"})"));
  ASSERT_EQ(policy.filesystem.entries.size(), 3u);
  EXPECT_EQ(policy.filesystem.entries[0].path, "C:/Work/Proj");
  EXPECT_EQ(policy.filesystem.entries[1].path, "%TEMP%/cache");
  EXPECT_EQ(policy.filesystem.entries[2].path, "%USERPROFILE%");
  for (const char* bad : {R"(\\\\server\\share)", R"(\\\\?\\C:\\x)", R"(C:x)", R"(%APPDATA%\\x)",
                          R"(C:\\a\\..\\b)"}) {
    Result<Policy> parsed = parse_policy(
        windows_policy_json(R"({"path": ")" + std::string(bad) + R"(", "access": "read"})"));
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().find("/filesystem/entries/0/path"), std::string::npos)
        << parsed.error();
  }
}

ResolveContext windows_context() {
  ResolveContext context;
  context.cwd = "C:\\Work\\Proj";
  context.home = "C:\\Users\\me";
  context.env = {{"TEMP", "C:\\Users\\me\\AppData\\Local\\Temp"}, {"PATH", "C:\\Windows"}};
  context.install_dirs = {"C:\\Program Files\\sbx\\bin", "/usr/lib/sbx"};
  context.style = PathStyle::kWindows;
  return context;
}

TEST(WinPathResolve, SpecialPathsAndVariablesTakeWindowsMeanings) {
  Policy policy = parse_windows_policy(windows_policy_json(
      R"({"path": ":root", "access": "read"},
         {"path": ":cwd", "access": "write"},
         {"path": ":tmpdir", "access": "write"},
         {"path": ":slash_tmp", "access": "write"},
         {"path": "~/.ssh", "access": "read"},
         {"path": "c:\\work\\proj\\secrets", "access": "read"})"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, windows_context());
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  const ResolvedPolicy& r = resolved->policy;
  EXPECT_EQ(r.cwd, "C:/Work/Proj");
  std::vector<std::pair<std::string, Access>> rules;
  for (const PathRule& rule : r.rules) rules.emplace_back(rule.path, rule.access);
  // "c:\work\proj\secrets" takes the cwd's spelling, so it is a carve-out of the cwd rule.
  const std::vector<std::pair<std::string, Access>> want = {
      {"/", Access::kRead},
      {"C:/Work/Proj", Access::kWrite},
      {"C:/Users/me/.ssh", Access::kRead},
      {"C:/Work/Proj/secrets", Access::kRead},
      {"C:/Users/me/AppData/Local/Temp", Access::kWrite},
  };
  EXPECT_EQ(rules, want);
  EXPECT_EQ(rule_access(r, "C:/Work/Proj/secrets/key"), Access::kRead);
  EXPECT_EQ(rule_access(r, "C:/Work/Proj/src"), Access::kWrite);
  ASSERT_EQ(r.protected_paths.size(), 2u);
  EXPECT_EQ(r.protected_paths[0].path, "C:/Users/me/AppData/Local/Temp/.git");
  EXPECT_EQ(r.protected_paths[1].path, "C:/Work/Proj/.git");
  EXPECT_FALSE(r.protected_paths[1].exists);  // nothing is looked up on this (Linux) host
  bool slash_tmp_noted = false;
  for (const std::string& note : resolved->notes)
    slash_tmp_noted = slash_tmp_noted || note.find("Windows has no /tmp") != std::string::npos;
  EXPECT_TRUE(slash_tmp_noted);
}

TEST(WinPathResolve, CaseVariantsAreOnePathWithTheTieRules) {
  // One path spelled two ways is one rule, and the policy's tie rule (deny > write > read)
  // decides, as for two entries spelled alike.
  Policy policy = parse_windows_policy(windows_policy_json(
      R"({"path": "C:\\Data", "access": "read"},
         {"path": "c:\\DATA", "access": "write"},
         {"path": "C:\\Data\\Keys", "access": "write"},
         {"path": "c:\\data\\keys", "access": "deny"})"));
  Result<ResolvedPolicy> resolved = resolve_policy(policy, windows_context());
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  ASSERT_EQ(resolved->rules.size(), 2u);
  EXPECT_EQ(resolved->rules[0].path, "C:/Data");
  EXPECT_EQ(resolved->rules[0].access, Access::kWrite);
  EXPECT_EQ(resolved->rules[1].path, "C:/Data/Keys");
  EXPECT_EQ(resolved->rules[1].access, Access::kDeny);
}

TEST(WinPathResolve, InstallDirectoryInsideAWritableRootIsCarvedOut) {
  Policy policy = parse_windows_policy(
      windows_policy_json(R"({"path": "c:\\program files", "access": "write"})"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, windows_context());
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  // The install directory takes the spelling the policy gave "C:/program files" first.
  EXPECT_EQ(resolved->install_carveouts, std::vector<std::string>{"C:/program files/sbx/bin"});
  EXPECT_EQ(rule_access(resolved->policy, "C:/program files/sbx/bin/sbx.exe"), Access::kRead);
  EXPECT_EQ(rule_access(resolved->policy, "C:/program files/other"), Access::kWrite);
}

TEST(WinPathResolve, PosixPathsRefusedForWindowsAndWindowsPathsForPosix) {
  Policy posix_entry =
      parse_windows_policy(windows_policy_json(R"({"path": "/etc", "access": "read"})"));
  Result<ResolvedPolicy> on_windows = resolve_policy(posix_entry, windows_context());
  ASSERT_FALSE(on_windows.ok());
  EXPECT_NE(on_windows.error().find("is a POSIX path, but this policy is resolved for Windows"),
            std::string::npos)
      << on_windows.error();

  Policy windows_entry =
      parse_windows_policy(windows_policy_json(R"({"path": "C:\\x", "access": "read"})"));
  ResolveContext posix{"/tmp", "/root", {}};
  Result<ResolvedPolicy> on_posix = resolve_policy(windows_entry, posix);
  ASSERT_FALSE(on_posix.ok());
  EXPECT_NE(on_posix.error().find("is a Windows path, but this policy is resolved for a POSIX"),
            std::string::npos)
      << on_posix.error();
}

TEST(WinPathResolve, UncCwdAndUnsetVariablesAreErrors) {
  Policy policy =
      parse_windows_policy(windows_policy_json(R"({"path": ":cwd", "access": "write"})"));
  ResolveContext unc = windows_context();
  unc.cwd = "\\\\server\\share\\proj";
  Result<ResolvedPolicy> resolved = resolve_policy(policy, unc);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.error().find("UNC path"), std::string::npos) << resolved.error();

  Policy profile =
      parse_windows_policy(windows_policy_json(R"({"path": "%USERPROFILE%", "access": "read"})"));
  Result<ResolvedPolicy> unset = resolve_policy(profile, windows_context());
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.error().find("%USERPROFILE%, which is not set"), std::string::npos)
      << unset.error();
}

}  // namespace winpaths_test
}  // namespace sbx
