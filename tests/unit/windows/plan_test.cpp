// The Windows plan: SIDs, ACEs, created names, token flags, command line, environment, and
// every refusal naming the rule a write-restricted token cannot enforce.
#include "sbx/windows/plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sbx/windows/plan_text.hpp"
#include "windows_test_support.hpp"

namespace sbx::windows {
namespace {

using testing::describe;
using testing::expect_golden;
using testing::request_for;
using testing::rule;

ProtectedPath protect(std::string path, std::string root, bool exists, bool dir = true) {
  return ProtectedPath{std::move(path), std::move(root), exists, exists && dir};
}

// The usual workspace-write shape: ":root" read, the project and TEMP writable, three names.
TransformRequest workspace_write() {
  return request_for(
      {rule("/", Access::kRead), rule("C:/Users/me/AppData/Local/Temp", Access::kWrite),
       rule("C:/work/proj", Access::kWrite)},
      {protect("C:/work/proj/.agents", "C:/work/proj", false),
       protect("C:/work/proj/.codex", "C:/work/proj", false),
       protect("C:/work/proj/.git", "C:/work/proj", true)});
}

WindowsPlan plan_of(const TransformRequest& request) {
  Result<WindowsPlan> plan = build_plan(request);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return plan.ok() ? *plan : WindowsPlan{};
}

std::string refusal_of(const TransformRequest& request) {
  Result<WindowsPlan> plan = build_plan(request);
  EXPECT_FALSE(plan.ok()) << "expected a refusal";
  return plan.ok() ? std::string() : plan.error();
}

bool has_ace(const WindowsPlan& plan, AceKind kind, const std::string& path) {
  return std::find(plan.aces.begin(), plan.aces.end(), Ace{kind, SidRef::kWriteCapability, path}) !=
         plan.aces.end();
}

std::vector<std::string> ace_paths(const WindowsPlan& plan, AceKind kind) {
  std::vector<std::string> out;
  for (const Ace& ace : plan.aces) {
    if (ace.kind == kind) out.push_back(ace.path);
  }
  return out;
}

bool has_info(const WindowsPlan& plan, const std::string& fragment) {
  return std::any_of(plan.info.begin(), plan.info.end(), [&](const std::string& line) {
    return line.find(fragment) != std::string::npos;
  });
}

TEST(WindowsPlan, WorkspaceWriteGolden) {
  Result<WindowsPlan> plan = build_plan(workspace_write());
  ASSERT_TRUE(plan.ok()) << plan.error();
  expect_golden("workspace_write", describe(to_exec_plan(*plan)));
}

TEST(WindowsPlan, TokenIsWriteRestrictedWithCapabilityLogonEveryoneInOrder) {
  const WindowsPlan plan = plan_of(workspace_write());
  EXPECT_TRUE(plan.token.disable_max_privilege);
  EXPECT_TRUE(plan.token.lua_token);
  EXPECT_TRUE(plan.token.write_restricted);
  const std::vector<SidRef> expected = {SidRef::kWriteCapability, SidRef::kLogon,
                                        SidRef::kEveryone};
  EXPECT_EQ(plan.token.restricting_sids, expected);
  EXPECT_EQ(plan.token.default_dacl, expected);
  EXPECT_TRUE(plan.kill_on_job_close);
}

TEST(WindowsPlan, EachWritableRootGetsOneAllowWriteAceForTheCapability) {
  const WindowsPlan plan = plan_of(workspace_write());
  EXPECT_EQ(ace_paths(plan, AceKind::kAllowWrite),
            (std::vector<std::string>{"C:\\work\\proj", "C:\\Users\\me\\AppData\\Local\\Temp"}));
  for (const Ace& ace : plan.aces) EXPECT_EQ(ace.sid, SidRef::kWriteCapability);
}

TEST(WindowsPlan, WritableRootsCannotBeRenamedOrRemoved) {
  const WindowsPlan plan = plan_of(workspace_write());
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyDelete, "C:\\work\\proj"));
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyDelete, "C:\\Users\\me\\AppData\\Local\\Temp"));
}

TEST(WindowsPlan, ExistingProtectedNameIsDeniedWritingButNotCreated) {
  const WindowsPlan plan = plan_of(workspace_write());
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyWrite, "C:\\work\\proj\\.git"));
  EXPECT_EQ(std::count(plan.create_dirs.begin(), plan.create_dirs.end(), "C:\\work\\proj\\.git"),
            0);
}

TEST(WindowsPlan, MissingProtectedNamesAreCreatedBeforeAnyAce) {
  const WindowsPlan plan = plan_of(workspace_write());
  EXPECT_EQ(plan.create_dirs,
            (std::vector<std::string>{"C:\\work\\proj\\.agents", "C:\\work\\proj\\.codex"}));
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyWrite, "C:\\work\\proj\\.codex"));
  // Creation must precede the ACEs in the notes the executor follows.
  const std::vector<std::string> notes = plan_to_notes(plan);
  const auto first_create = std::find_if(
      notes.begin(), notes.end(), [](const std::string& n) { return n.starts_with("create: "); });
  const auto first_ace = std::find_if(notes.begin(), notes.end(),
                                      [](const std::string& n) { return n.starts_with("ace: "); });
  EXPECT_LT(first_create, first_ace);
}

TEST(WindowsPlan, GitFileOfAWorktreeIsProtectedAsAFile) {
  TransformRequest request = request_for({rule("/", Access::kRead), rule("C:/wt", Access::kWrite)},
                                         {protect("C:/wt/.git", "C:/wt", true, /*dir=*/false)});
  const WindowsPlan plan = plan_of(request);
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyWrite, "C:\\wt\\.git"));
  EXPECT_TRUE(plan.create_dirs.empty());
}

TEST(WindowsPlan, AncestorsOfADeepProtectedPathCannotBeRenamed) {
  TransformRequest request = request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite)},
                                         {protect("C:/w/a/b/.git", "C:/w", true)});
  const WindowsPlan plan = plan_of(request);
  EXPECT_EQ(ace_paths(plan, AceKind::kDenyDelete),
            (std::vector<std::string>{"C:\\w", "C:\\w\\a", "C:\\w\\a\\b"}));
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyWrite, "C:\\w\\a\\b\\.git"));
}

TEST(WindowsPlan, ReadOnlyCarveoutIsDeniedCreatedIfMissingAndAnchored) {
  TransformRequest request = request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite),
                                          rule("C:/w/vendor/lib", Access::kRead)});
  const WindowsPlan plan = plan_of(request);
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyWrite, "C:\\w\\vendor\\lib"));
  EXPECT_EQ(plan.create_dirs, (std::vector<std::string>{"C:\\w\\vendor\\lib"}));
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyDelete, "C:\\w\\vendor"));
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyDelete, "C:\\w"));
}

TEST(WindowsPlan, WritableInsideReadOnlyCarveoutGetsItsOwnExplicitAllow) {
  // Explicit ACEs precede inherited ones, so the inner allow beats the carve-out's deny.
  TransformRequest request =
      request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite),
                   rule("C:/w/ro", Access::kRead), rule("C:/w/ro/rw", Access::kWrite)});
  const WindowsPlan plan = plan_of(request);
  EXPECT_EQ(ace_paths(plan, AceKind::kAllowWrite),
            (std::vector<std::string>{"C:\\w", "C:\\w\\ro\\rw"}));
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyWrite, "C:\\w\\ro"));
}

TEST(WindowsPlan, NestedWritableRootInheritsInsteadOfASecondAllow) {
  TransformRequest request = request_for(
      {rule("/", Access::kRead), rule("C:/w", Access::kWrite), rule("C:/w/sub", Access::kWrite)});
  const WindowsPlan plan = plan_of(request);
  EXPECT_EQ(ace_paths(plan, AceKind::kAllowWrite), (std::vector<std::string>{"C:\\w"}));
  EXPECT_TRUE(has_ace(plan, AceKind::kDenyDelete, "C:\\w\\sub"));
}

TEST(WindowsPlan, WritableRootInsideAProtectedPathStaysReadOnly) {
  TransformRequest request = request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite),
                                          rule("C:/w/.git/hooks", Access::kWrite)},
                                         {protect("C:/w/.git", "C:/w", true)});
  const WindowsPlan plan = plan_of(request);
  EXPECT_EQ(ace_paths(plan, AceKind::kAllowWrite), (std::vector<std::string>{"C:\\w"}));
  EXPECT_TRUE(has_info(plan, "writable root C:/w/.git/hooks lies inside protected path"));
}

TEST(WindowsPlan, ProtectedPathOutsideWritableRootsGetsNoAce) {
  TransformRequest request = request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite)},
                                         {protect("C:/repo/.git/worktrees/w", "C:/w", true)});
  const WindowsPlan plan = plan_of(request);
  EXPECT_FALSE(has_ace(plan, AceKind::kDenyWrite, "C:\\repo\\.git\\worktrees\\w"));
  EXPECT_TRUE(has_info(plan, "protected path C:/repo/.git/worktrees/w is not writable"));
}

TEST(WindowsPlan, ReadOnlyPolicyHasNoAcesButStillRestrictsWrites) {
  Result<WindowsPlan> plan = build_plan(request_for({rule("/", Access::kRead)}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_TRUE(plan->aces.empty());
  EXPECT_TRUE(plan->token.write_restricted);
  expect_golden("read_only", describe(to_exec_plan(*plan)));
}

TEST(WindowsPlan, RefusesRestrictedReads) {
  const std::string error = refusal_of(request_for({rule("C:/w", Access::kWrite)}));
  EXPECT_NE(error.find("cannot enforce restricted reads (no rule grants read on '/')"),
            std::string::npos)
      << error;
}

TEST(WindowsPlan, RefusesDenyRuleNamingIt) {
  const std::string error =
      refusal_of(request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite),
                              rule("C:/Users/me/.ssh", Access::kDeny)}));
  EXPECT_NE(error.find("cannot enforce rule {\"path\": \"C:/Users/me/.ssh\", \"access\": "
                       "\"deny\"}"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("cannot deny reading"), std::string::npos);
}

TEST(WindowsPlan, RefusesDenyGlobNamingIt) {
  TransformRequest request = request_for({rule("/", Access::kRead)});
  request.policy.deny_globs = {"**/*.pem"};
  const std::string error = refusal_of(request);
  EXPECT_NE(error.find("cannot enforce deny glob '**/*.pem'"), std::string::npos) << error;
}

TEST(WindowsPlan, RefusesRestrictedAndProxyNetwork) {
  for (NetworkMode mode : {NetworkMode::kRestricted, NetworkMode::kProxy}) {
    TransformRequest request = workspace_write();
    request.policy.network.mode = mode;
    const std::string error = refusal_of(request);
    const std::string name = mode == NetworkMode::kProxy ? "proxy" : "restricted";
    EXPECT_NE(error.find("cannot enforce network.mode=" + name), std::string::npos) << error;
    EXPECT_NE(error.find("no firewall component"), std::string::npos) << error;
  }
}

TEST(WindowsPlan, RefusesWriteOnAVolumeRoot) {
  for (const char* root : {"/", "C:/", "//srv/share"}) {
    const std::string error =
        refusal_of(request_for({rule("/", Access::kRead), rule(root, Access::kWrite)}));
    EXPECT_NE(error.find("would rewrite the ACL of a whole volume"), std::string::npos)
        << root << ": " << error;
  }
}

TEST(WindowsPlan, UnrestrictedAndExternalFilesystemsOnlyDropPrivileges) {
  for (FilesystemKind kind : {FilesystemKind::kUnrestricted, FilesystemKind::kExternal}) {
    TransformRequest request = workspace_write();
    request.policy.filesystem_kind = kind;
    const WindowsPlan plan = plan_of(request);
    EXPECT_FALSE(plan.token.write_restricted);
    EXPECT_TRUE(plan.token.disable_max_privilege);
    EXPECT_TRUE(plan.token.lua_token);
    EXPECT_TRUE(plan.token.restricting_sids.empty());
    EXPECT_TRUE(plan.aces.empty());
    EXPECT_TRUE(plan.create_dirs.empty());
    EXPECT_TRUE(check_runnable(plan).ok());
  }
}

TEST(WindowsPlan, RefusesBatchFilesWhateverTheCase) {
  for (const char* program : {"C:/tools/build.bat", "C:/tools/BUILD.CMD", "C:/x/y.Bat"}) {
    TransformRequest request = workspace_write();
    request.argv = {program, "a&b"};
    const std::string error = refusal_of(request);
    EXPECT_NE(error.find("is a batch file"), std::string::npos) << program << ": " << error;
  }
}

TEST(WindowsPlan, CmdExeIsRunButFlagged) {
  TransformRequest request = workspace_write();
  request.argv = {"C:/Windows/System32/CMD.EXE", "/d", "/c", "echo hi"};
  const WindowsPlan plan = plan_of(request);
  EXPECT_EQ(plan.command_line, "C:\\Windows\\System32\\CMD.EXE /d /c \"echo hi\"");
  EXPECT_TRUE(has_info(plan, "cmd.exe parses its command line itself"));
}

TEST(WindowsPlan, CommandLineAndPathsAreInWindowsForm) {
  TransformRequest request = workspace_write();
  request.argv = {"C:/Program Files/Git/bin/git.exe", "commit", "-m", "say \"hi\" \\"};
  const WindowsPlan plan = plan_of(request);
  EXPECT_EQ(plan.argv[0], "C:\\Program Files\\Git\\bin\\git.exe");
  EXPECT_EQ(plan.command_line,
            "\"C:\\Program Files\\Git\\bin\\git.exe\" commit -m \"say \\\"hi\\\" \\\\\"");
  EXPECT_EQ(plan.cwd, "C:\\work\\proj");
}

TEST(WindowsPlan, RefusesBadProgramAndCwdNamingThem) {
  TransformRequest request = workspace_write();
  request.argv = {"git.exe"};
  EXPECT_NE(refusal_of(request).find("argv[0]: path 'git.exe' is not absolute"), std::string::npos);
  request = workspace_write();
  request.cwd = "C:/work/proj:evil";
  EXPECT_NE(refusal_of(request).find("cwd: path 'C:/work/proj:evil'"), std::string::npos);
  request = workspace_write();
  request.argv.clear();
  EXPECT_NE(refusal_of(request).find("argv is empty"), std::string::npos);
}

TEST(WindowsPlan, RefusesPolicyPathsWin32WouldRewrite) {
  TransformRequest request = request_for({rule("/", Access::kRead), rule("C:/w", Access::kWrite)},
                                         {protect("C:/w/.git.", "C:/w", false)});
  EXPECT_NE(refusal_of(request).find("path 'C:/w/.git.' has a component ending in a dot"),
            std::string::npos);
}

TEST(WindowsPlan, EnvironmentIsSortedCaseInsensitively) {
  TransformRequest request = workspace_write();
  request.env = {"b=2", "A=1", "=C:=C:\\work", "Path=C:\\x", "_under=3", "a_b=4"};
  const WindowsPlan plan = plan_of(request);
  EXPECT_EQ(plan.env, (std::vector<std::string>{"=C:=C:\\work", "A=1", "a_b=4", "b=2", "Path=C:\\x",
                                                "_under=3"}));
}

TEST(WindowsPlan, RefusesEnvironmentNamesThatCollideOnWindows) {
  TransformRequest request = workspace_write();
  request.env = {"PATH=C:\\a", "Path=C:\\b"};
  EXPECT_NE(refusal_of(request).find("environment names 'PATH' and 'Path' are the same variable"),
            std::string::npos);
  request.env = {"NOEQUALS"};
  EXPECT_NE(refusal_of(request).find("'NOEQUALS' is not NAME=VALUE"), std::string::npos);
  request.env = {"=novalue"};
  EXPECT_NE(refusal_of(request).find("is not NAME=VALUE"), std::string::npos);
}

TEST(WindowsPlan, PosixPolicyPrintsButIsNotRunnable) {
  TransformRequest request;
  request.argv = {"/usr/bin/true", "--flag"};
  request.cwd = "/home/me/proj";
  request.env = {"HOME=/home/me"};
  request.policy.rules = {rule("/", Access::kRead), rule("/home/me/proj", Access::kWrite),
                          rule("/tmp", Access::kWrite)};
  request.policy.protected_paths = {protect("/home/me/proj/.git", "/home/me/proj", true)};
  request.policy.network.mode = NetworkMode::kEnabled;
  request.policy.cwd = request.cwd;
  Result<WindowsPlan> plan = build_plan(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_TRUE(has_info(*plan, "the Windows executor refuses to run it"));
  Status runnable = check_runnable(*plan);
  ASSERT_FALSE(runnable.ok());
  EXPECT_NE(runnable.error().find("argv[0] '\\usr\\bin\\true' has no drive letter"),
            std::string::npos);
  expect_golden("posix_debug", describe(to_exec_plan(*plan)));
}

TEST(WindowsPlan, WindowsPolicyIsRunnable) {
  EXPECT_TRUE(check_runnable(plan_of(workspace_write())).ok());
}

TEST(WindowsPlan, RunnableCheckRefusesPlansThatKeepPrivileges) {
  WindowsPlan plan = plan_of(workspace_write());
  plan.token.lua_token = false;
  EXPECT_FALSE(check_runnable(plan).ok());
  plan = plan_of(workspace_write());
  plan.token.restricting_sids.clear();
  EXPECT_FALSE(check_runnable(plan).ok());
}

TEST(WindowsPlan, CarveoutsGolden) {
  TransformRequest request = request_for(
      {rule("/", Access::kRead), rule("C:/w", Access::kWrite), rule("C:/w/ro", Access::kRead),
       rule("C:/w/ro/rw", Access::kWrite), rule("D:/cache", Access::kWrite)},
      {protect("C:/w/.git", "C:/w", true), protect("C:/w/ro/rw/.codex", "C:/w/ro/rw", false),
       protect("D:/cache/.git", "D:/cache", false)});
  Result<WindowsPlan> plan = build_plan(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  expect_golden("carveouts", describe(to_exec_plan(*plan)));
}

TEST(WindowsPlan, IsDeterministicAndOrderedParentsFirst) {
  const WindowsPlan a = plan_of(workspace_write());
  const WindowsPlan b = plan_of(workspace_write());
  EXPECT_EQ(a, b);
  for (AceKind kind : {AceKind::kAllowWrite, AceKind::kDenyWrite, AceKind::kDenyDelete}) {
    const std::vector<std::string> paths = ace_paths(a, kind);
    for (std::size_t i = 1; i < paths.size(); ++i) {
      EXPECT_LE(std::count(paths[i - 1].begin(), paths[i - 1].end(), '\\'),
                std::count(paths[i].begin(), paths[i].end(), '\\'));
    }
  }
}

TEST(WindowsPlan, DeclaresOnlyWhatItEnforces) {
  const CapabilitySet caps = windows_capabilities();
  EXPECT_TRUE(caps.has(Capability::kWriteRestriction));
  EXPECT_TRUE(caps.has(Capability::kWriteCarveouts));
  EXPECT_TRUE(caps.has(Capability::kProtectedNames));
  for (Capability c : {Capability::kReadRestriction, Capability::kReadCarveouts,
                       Capability::kDenyGlobs, Capability::kNetworkBlock, Capability::kProxyNetwork,
                       Capability::kUnixSocketAllowlist, Capability::kSyscallFilter})
    EXPECT_FALSE(caps.has(c)) << to_string(c);
}

}  // namespace
}  // namespace sbx::windows
