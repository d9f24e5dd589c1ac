// Windows-only tests (cross-built with mingw-w64 and run under Wine in CI): the quoting against
// the real CommandLineToArgvW, and the real sbx-backend-windows.dll loaded through its entry.
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <aclapi.h>
#include <gtest/gtest.h>
#include <shellapi.h>
#include <windows.h>

#include <string>
#include <thread>
#include <vector>

#include "sbx/sdk/abi.h"
#include "sbx/sdk/backend.hpp"
#include "sbx/windows/command_line.hpp"
#include "windows_test_support.hpp"

namespace sbx::windows {
namespace {

// Splits with the system's own CommandLineToArgvW.
std::vector<std::string> system_split(const std::string& line) {
  Result<std::u16string> units = utf8_to_utf16(line);
  EXPECT_TRUE(units.ok());
  const std::wstring text(units->begin(), units->end());
  int count = 0;
  LPWSTR* argv = CommandLineToArgvW(text.c_str(), &count);
  std::vector<std::string> out;
  if (argv == nullptr) return out;
  for (int i = 0; i < count; ++i) {
    const std::wstring arg(argv[i]);
    out.push_back(*utf16_to_utf8(std::u16string(arg.begin(), arg.end())));
  }
  LocalFree(argv);
  return out;
}

TEST(Win32CommandLine, EveryHostileArgumentRoundTripsThroughTheSystemParser) {
  for (const std::string& argument : testing::hostile_arguments()) {
    const std::vector<std::string> argv = {"C:\\Program Files\\x.exe", argument, "", argument};
    Result<std::string> line = build_command_line(argv);
    ASSERT_TRUE(line.ok()) << line.error();
    EXPECT_EQ(system_split(*line), argv) << "command line: " << printable(*line);
  }
}

TEST(Win32CommandLine, ReferenceParserAgreesWithTheSystemParser) {
  for (const std::string& line : testing::raw_command_lines()) {
    EXPECT_EQ(testing::reference_command_line_to_argv(line), system_split(line))
        << "command line: " << printable(line);
  }
}

// Every line the module logged through the host, with its level (tests clear it first).
std::vector<std::pair<int, std::string>>& module_log() {
  static std::vector<std::pair<int, std::string>> lines;
  return lines;
}

bool logged(int level, const std::string& fragment) {
  for (const auto& [line_level, line] : module_log()) {
    if (line_level == level && line.find(fragment) != std::string::npos) return true;
  }
  return false;
}

struct LoadedModule {
  HMODULE module = nullptr;
  const sbx_plugin_v2* descriptor = nullptr;
  Backend* backend = nullptr;
  sbx_host_v2 host{};
};

LoadedModule load_module() {
  LoadedModule loaded;
  Result<std::u16string> path = utf8_to_utf16(SBX_WINDOWS_MODULE_DLL);
  const std::wstring wide(path->begin(), path->end());
  loaded.module = LoadLibraryW(wide.c_str());
  if (loaded.module == nullptr) return loaded;
  auto entry = reinterpret_cast<sbx_plugin_entry_fn>(
      reinterpret_cast<void*>(GetProcAddress(loaded.module, SBX_PLUGIN_ENTRY_SYMBOL)));
  if (entry == nullptr) return loaded;
  loaded.descriptor = entry();
  loaded.host.struct_size = sizeof(sbx_host_v2);
  loaded.host.abi_major = SBX_ABI_MAJOR;
  loaded.host.abi_minor = SBX_ABI_MINOR;
  loaded.host.ctx = &module_log();
  loaded.host.log = [](void* ctx, int level, const char* message, size_t length) {
    std::fprintf(stderr, "[module %d] %.*s\n", level, static_cast<int>(length), message);
    static_cast<std::vector<std::pair<int, std::string>>*>(ctx)->emplace_back(
        level, std::string(message, length));
  };
  loaded.backend = static_cast<Backend*>(loaded.descriptor->create(&loaded.host));
  return loaded;
}

TEST(Win32Module, DllExportsTheEntryAndCreatesTheBackend) {
  LoadedModule loaded = load_module();
  ASSERT_NE(loaded.module, nullptr)
      << "LoadLibraryW(" << SBX_WINDOWS_MODULE_DLL << ") failed, " << GetLastError();
  ASSERT_NE(loaded.descriptor, nullptr) << "no " SBX_PLUGIN_ENTRY_SYMBOL " export";
  EXPECT_STREQ(loaded.descriptor->name, "windows");
  EXPECT_STREQ(loaded.descriptor->fingerprint, SBX_TOOLCHAIN_FINGERPRINT);
  ASSERT_NE(loaded.backend, nullptr);
  loaded.descriptor->destroy(loaded.backend);
}

TEST(Win32Module, ProbeRunsTheRealChecks) {
  LoadedModule loaded = load_module();
  ASSERT_NE(loaded.backend, nullptr);
  const ProbeReport report = loaded.backend->probe(ProbeContext{});
  ASSERT_EQ(report.checks.size(), 3u);
  EXPECT_EQ(report.checks[0].name, "restricted_token");
  EXPECT_EQ(report.checks[1].name, "job_object");
  EXPECT_EQ(report.checks[2].name, "network_restriction");
  // Informational: never makes the backend unavailable, never claims enforcement.
  EXPECT_EQ(report.checks[2].status, CheckStatus::kWarn);
  EXPECT_NE(report.checks[2].observed.find("not implemented"), std::string::npos);
  for (const ProbeCheck& check : report.checks)
    std::fprintf(stderr, "probe %s: %s %s\n", check.name.c_str(),
                 std::string(to_string(check.status)).c_str(), check.observed.c_str());
  EXPECT_EQ(report.available, report.checks[0].status == CheckStatus::kPass &&
                                  report.checks[1].status == CheckStatus::kPass);
  if (report.available) {
    EXPECT_EQ(report.capabilities, windows_capabilities());
    // Every privilege is gone but SeChangeNotifyPrivilege (traverse checking), which is kept.
    EXPECT_NE(report.checks[0].observed.find("privileges kept: SeChangeNotifyPrivilege"),
              std::string::npos)
        << report.checks[0].observed;
    EXPECT_TRUE(report.checks[0].observed.ends_with("SeChangeNotifyPrivilege"))
        << report.checks[0].observed;
  }
  loaded.descriptor->destroy(loaded.backend);
}

std::string system_directory() {
  wchar_t buffer[MAX_PATH];
  const UINT length = GetSystemDirectoryW(buffer, MAX_PATH);
  return *utf16_to_utf8(std::u16string(buffer, buffer + length));
}

// "C:\x\y" -> "C:/x/y": the form ResolvedPolicy paths take on Windows.
std::string generic(std::string path) {
  for (char& c : path) c = c == '\\' ? '/' : c;
  return path;
}

// A fresh directory under %TEMP%, in generic form.
std::string make_workspace() {
  wchar_t temp[MAX_PATH];
  const DWORD length = GetTempPathW(MAX_PATH, temp);
  std::string dir = *utf16_to_utf8(std::u16string(temp, temp + length));
  dir += "sbx-windows-test-" + std::to_string(GetCurrentProcessId());
  Result<std::u16string> wide = utf8_to_utf16(dir);
  CreateDirectoryW(std::wstring(wide->begin(), wide->end()).c_str(), nullptr);
  return generic(dir);
}

bool exists(const std::string& generic_path) {
  std::string path = generic_path;
  for (char& c : path) c = c == '/' ? '\\' : c;
  Result<std::u16string> wide = utf8_to_utf16(path);
  return GetFileAttributesW(std::wstring(wide->begin(), wide->end()).c_str()) !=
         INVALID_FILE_ATTRIBUTES;
}

// The number of ACEs in the DACL of `generic_path`, or -1.
int ace_count(const std::string& generic_path) {
  std::string path = generic_path;
  for (char& c : path) c = c == '/' ? '\\' : c;
  Result<std::u16string> wide = utf8_to_utf16(path);
  PACL dacl = nullptr;
  PSECURITY_DESCRIPTOR sd = nullptr;
  if (GetNamedSecurityInfoW(std::wstring(wide->begin(), wide->end()).c_str(), SE_FILE_OBJECT,
                            DACL_SECURITY_INFORMATION, nullptr, nullptr, &dacl, nullptr,
                            &sd) != ERROR_SUCCESS)
    return -1;
  const int count = dacl == nullptr ? -1 : static_cast<int>(dacl->AceCount);
  LocalFree(sd);
  return count;
}

// Runs `cmd.exe /d /c exit <code>` through the module under `request`'s policy.
Result<ExitStatus> run_exit(TransformRequest request, int code) {
  LoadedModule loaded = load_module();
  if (loaded.backend == nullptr) return Error{"module not loaded"};
  if (!loaded.backend->probe(ProbeContext{}).available) return Error{"probe: unavailable"};
  request.argv = {generic(system_directory()) + "/cmd.exe", "/d", "/c",
                  "exit " + std::to_string(code)};
  request.env = {"SystemRoot=C:\\windows"};
  Result<ExecPlan> plan = loaded.backend->transform(request);
  if (!plan.ok()) return plan.failure();
  Result<ExitStatus> status = loaded.backend->exec(*plan, RunContext(nullptr));
  loaded.descriptor->destroy(loaded.backend);
  return status;
}

TEST(Win32Exec, RunsInAJobWithTheRestrictedTokenAndReturnsTheExitCode) {
  TransformRequest request = testing::request_for({});
  request.policy.filesystem_kind = FilesystemKind::kUnrestricted;
  request.cwd = generic(system_directory());
  Result<ExitStatus> status = run_exit(request, 7);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 7);
}

std::wstring native(const std::string& generic_path) {
  std::string path = generic_path;
  for (char& c : path) c = c == '/' ? '\\' : c;
  Result<std::u16string> wide = utf8_to_utf16(path);
  return std::wstring(wide->begin(), wide->end());
}

// Runs `cmd.exe /d /c <script>` through the module under `request`'s policy.
Result<ExitStatus> run_script(TransformRequest request, const std::string& script,
                              std::vector<std::string> env = {}) {
  LoadedModule loaded = load_module();
  if (loaded.backend == nullptr) return Error{"module not loaded"};
  if (!loaded.backend->probe(ProbeContext{}).available) return Error{"probe: unavailable"};
  request.argv = {generic(system_directory()) + "/cmd.exe", "/d", "/c", script};
  request.env = std::move(env);
  request.env.push_back("SystemRoot=C:\\windows");
  Result<ExecPlan> plan = loaded.backend->transform(request);
  if (!plan.ok()) return plan.failure();
  Result<ExitStatus> status = loaded.backend->exec(*plan, RunContext(nullptr));
  loaded.descriptor->destroy(loaded.backend);
  return status;
}

TransformRequest workspace_request(const std::string& root) {
  TransformRequest request =
      testing::request_for({testing::rule("/", Access::kRead), testing::rule(root, Access::kWrite)},
                           {ProtectedPath{root + "/.codex", root, false, false}});
  request.cwd = root;
  return request;
}

TEST(Win32Exec, CreatesMissingProtectedNamesRemovesThemAndKeepsTheAcesForTheNextRun) {
  const std::string root = make_workspace() + "-acl";
  CreateDirectoryW(native(root).c_str(), nullptr);
  const TransformRequest request = workspace_request(root);
  const int aces_before = ace_count(root);
  ASSERT_GE(aces_before, 1) << "cannot read the DACL of " << root;
  module_log().clear();
  Result<ExitStatus> status = run_exit(request, 3);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 3);
  EXPECT_FALSE(exists(root + "/.codex")) << "the created protected name was not removed";
  EXPECT_TRUE(logged(SBX_LOG_DEBUG, "ACL: 3 ACE(s) written, 0 already in place"));
  const int aces_after_first = ace_count(root);
  if (aces_after_first == aces_before) {
    // Upstream Wine does not store file DACLs (it maps them to mode bits), so nothing persists
    // between runs; a real Windows run must show the second half.
    RemoveDirectoryW(native(root).c_str());
    GTEST_SKIP() << "this Windows (Wine?) does not keep the ACEs written to " << root
                 << " (ACE count " << aces_before << " before and after): the reuse of the "
                 << "ACEs by a second run cannot be observed here";
  }
  // allow-write and deny-delete on the root stay: the next run of this plan reuses them.
  EXPECT_EQ(aces_after_first, aces_before + 2);

  module_log().clear();
  status = run_exit(request, 4);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 4);
  EXPECT_EQ(ace_count(root), aces_after_first) << "the second run added ACEs again";
  // Only the re-created .codex needed its ACE again.
  EXPECT_TRUE(logged(SBX_LOG_DEBUG, "ACL: 1 ACE(s) written, 2 already in place"));
  RemoveDirectoryW(native(root).c_str());
}

TEST(Win32Exec, ThePlanDirectoriesCannotBeRenamedWhileTheCommandRuns) {
  const std::string root = make_workspace() + "-hold";
  CreateDirectoryW(native(root).c_str(), nullptr);
  {
    // Does this Windows refuse to rename a directory someone holds without FILE_SHARE_DELETE?
    const std::wstring probe_dir = native(root + "/share-probe");
    CreateDirectoryW(probe_dir.c_str(), nullptr);
    HANDLE held =
        CreateFileW(probe_dir.c_str(), FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE,
                    nullptr, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
    ASSERT_NE(held, INVALID_HANDLE_VALUE);
    const std::wstring moved_dir = native(root + "/share-probe-moved");
    const bool renamed = MoveFileW(probe_dir.c_str(), moved_dir.c_str()) != 0;
    CloseHandle(held);
    RemoveDirectoryW(probe_dir.c_str());
    RemoveDirectoryW(moved_dir.c_str());
    if (renamed) {
      RemoveDirectoryW(native(root).c_str());
      GTEST_SKIP() << "this Windows (Wine?) renames a directory held open without "
                      "FILE_SHARE_DELETE, so the hold cannot be observed here";
    }
  }
  const TransformRequest request = workspace_request(root);
  // The command itself tries to move the (created, held) protected name away.
  std::string root_text = root;
  for (char& c : root_text) c = c == '/' ? '\\' : c;
  // No quotes: cmd.exe parses its own command line, and these paths hold no spaces. The exit
  // code says whether the move happened (cmd's own errorlevel for move is unreliable on Wine).
  ASSERT_EQ(root_text.find(' '), std::string::npos) << root_text;
  Result<ExitStatus> status =
      run_script(request, "move " + root_text + "\\.codex " + root_text + "\\moved & if exist " +
                              root_text + "\\moved (exit 9) else (exit 0)");
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 0) << "the command moved a held directory away";
  EXPECT_FALSE(exists(root + "/moved"));
  RemoveDirectoryW(native(root + "/moved").c_str());
  RemoveDirectoryW(native(root).c_str());
}

TEST(Win32Exec, ConcurrentRunsOfOnePlanBothSucceed) {
  const std::string root = make_workspace() + "-concurrent";
  CreateDirectoryW(native(root).c_str(), nullptr);
  const TransformRequest request = workspace_request(root);
  // Two runs at once: their DACL updates take the same per-path mutexes in turn, and neither
  // fails on the names the other created or holds.
  Result<ExitStatus> first = Error{"not run"};
  Result<ExitStatus> second = Error{"not run"};
  std::thread other([&] { second = run_exit(request, 6); });
  first = run_exit(request, 5);
  other.join();
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(first->exit_code, 5);
  EXPECT_EQ(second->exit_code, 6);
  RemoveDirectoryW(native(root + "/.codex").c_str());
  RemoveDirectoryW(native(root).c_str());
}

TEST(Win32Exec, TheNulDeviceIsUsable) {
  TransformRequest request = testing::request_for({testing::rule("/", Access::kRead)});
  request.cwd = generic(system_directory());
  Result<ExitStatus> status = run_script(request, "echo x> NUL && echo y> \\\\.\\NUL");
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 0);
}

TEST(Win32Exec, TempPointsAtTheWritableTempDirectory) {
  const std::string root = make_workspace() + "-temp";
  CreateDirectoryW(native(root).c_str(), nullptr);
  TransformRequest request = testing::request_for(
      {testing::rule("/", Access::kRead), testing::rule(root, Access::kWrite)});
  request.cwd = root;
  std::string temp = root;
  for (char& c : temp) c = c == '/' ? '\\' : c;
  // TMP points somewhere read-only: the plan points it at TEMP, and the command writes there.
  ASSERT_EQ(temp.find(' '), std::string::npos) << temp;  // no quotes needed (see above)
  Result<ExitStatus> status = run_script(request, "echo x> %TMP%\\made-by-command.txt",
                                         {"TEMP=" + temp, "TMP=C:\\windows"});
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 0);
  EXPECT_TRUE(exists(root + "/made-by-command.txt"));
  DeleteFileW(native(root + "/made-by-command.txt").c_str());
  RemoveDirectoryW(native(root).c_str());
}

TEST(Win32Exec, EveryoneWritableAncestorIsReportedAsAWarning) {
  const std::string shared = make_workspace() + "-shared";
  const std::string root = shared + "/ws";
  CreateDirectoryW(native(shared).c_str(), nullptr);
  CreateDirectoryW(native(root).c_str(), nullptr);
  // Give Everyone write on the parent, as a careless installer would.
  SID_IDENTIFIER_AUTHORITY world = SECURITY_WORLD_SID_AUTHORITY;
  PSID everyone = nullptr;
  ASSERT_TRUE(
      AllocateAndInitializeSid(&world, 1, SECURITY_WORLD_RID, 0, 0, 0, 0, 0, 0, 0, &everyone));
  EXPLICIT_ACCESS_W entry{};
  entry.grfAccessPermissions = FILE_GENERIC_WRITE;
  entry.grfAccessMode = GRANT_ACCESS;
  entry.grfInheritance = NO_INHERITANCE;
  entry.Trustee.TrusteeForm = TRUSTEE_IS_SID;
  entry.Trustee.ptstrName = static_cast<LPWSTR>(everyone);
  PACL acl = nullptr;
  ASSERT_EQ(SetEntriesInAclW(1, &entry, nullptr, &acl), static_cast<DWORD>(ERROR_SUCCESS));
  std::wstring shared_native = native(shared);
  ASSERT_EQ(SetNamedSecurityInfoW(shared_native.data(), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION,
                                  nullptr, nullptr, acl, nullptr),
            static_cast<DWORD>(ERROR_SUCCESS));
  LocalFree(acl);
  FreeSid(everyone);
  module_log().clear();
  Result<ExitStatus> status = run_exit(workspace_request(root), 0);
  ASSERT_TRUE(status.ok()) << status.error();
  std::string shared_text = shared;
  for (char& c : shared_text) c = c == '/' ? '\\' : c;
  EXPECT_TRUE(logged(SBX_LOG_WARN, shared_text + " is writable by Everyone"));
  EXPECT_FALSE(logged(SBX_LOG_WARN, shared_text + "\\ws is writable"));
  RemoveDirectoryW(native(root).c_str());
  RemoveDirectoryW(native(shared).c_str());
}

TEST(Win32Exec, RefusesAPlanWithoutDriveLetters) {
  LoadedModule loaded = load_module();
  ASSERT_NE(loaded.backend, nullptr);
  TransformRequest request = testing::request_for({testing::rule("/", Access::kRead)});
  request.argv = {"/usr/bin/true"};
  Result<ExecPlan> plan = loaded.backend->transform(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  Result<ExitStatus> status = loaded.backend->exec(*plan, RunContext(nullptr));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("has no drive letter or server"), std::string::npos)
      << status.error();
  loaded.descriptor->destroy(loaded.backend);
}

}  // namespace
}  // namespace sbx::windows
#endif  // _WIN32
