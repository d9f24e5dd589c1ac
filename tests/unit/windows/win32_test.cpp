// Windows-only tests (cross-built with mingw-w64 and run under Wine in CI): the quoting against
// the real CommandLineToArgvW, and the real sbx-backend-windows.dll loaded through its entry.
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#include <aclapi.h>
#include <shellapi.h>
#include <gtest/gtest.h>

#include <string>
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

struct LoadedModule {
  HMODULE module = nullptr;
  const sbx_plugin_v1* descriptor = nullptr;
  Backend* backend = nullptr;
  sbx_host_v1 host{};
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
  loaded.host.struct_size = sizeof(sbx_host_v1);
  loaded.host.abi_major = SBX_ABI_MAJOR;
  loaded.host.abi_minor = SBX_ABI_MINOR;
  loaded.host.log = [](void*, int, const char* message, size_t length) {
    std::fprintf(stderr, "[module] %.*s\n", static_cast<int>(length), message);
  };
  loaded.backend = static_cast<Backend*>(loaded.descriptor->create(&loaded.host));
  return loaded;
}

TEST(Win32Module, DllExportsTheEntryAndCreatesTheBackend) {
  LoadedModule loaded = load_module();
  ASSERT_NE(loaded.module, nullptr) << "LoadLibraryW(" << SBX_WINDOWS_MODULE_DLL << ") failed, "
                                    << GetLastError();
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
  ASSERT_EQ(report.checks.size(), 2u);
  EXPECT_EQ(report.checks[0].name, "restricted_token");
  EXPECT_EQ(report.checks[1].name, "job_object");
  for (const ProbeCheck& check : report.checks)
    std::fprintf(stderr, "probe %s: %s %s\n", check.name.c_str(),
                 std::string(to_string(check.status)).c_str(), check.observed.c_str());
  EXPECT_EQ(report.available, report.checks[0].status == CheckStatus::kPass &&
                                  report.checks[1].status == CheckStatus::kPass);
  if (report.available) {
    EXPECT_EQ(report.capabilities, windows_capabilities());
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
  if (!plan.ok()) return Error{plan.error()};
  Result<ExitStatus> status = loaded.backend->exec(*plan);
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

TEST(Win32Exec, CreatesMissingProtectedNamesAndRemovesThemAfterwards) {
  const std::string root = make_workspace();
  TransformRequest request = testing::request_for(
      {testing::rule("/", Access::kRead), testing::rule(root, Access::kWrite)},
      {ProtectedPath{root + "/.codex", root, false, false}});
  request.cwd = root;
  const int aces_before = ace_count(root);
  ASSERT_GE(aces_before, 1) << "cannot read the DACL of " << root;
  Result<ExitStatus> status = run_exit(request, 3);
  if (!status.ok() && status.error().find("SetNamedSecurityInfoW") != std::string::npos) {
    GTEST_SKIP() << "this Windows (Wine?) cannot set file ACLs: " << status.error();
  }
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 3);
  EXPECT_FALSE(exists(root + "/.codex")) << "the created protected name was not removed";
  EXPECT_EQ(ace_count(root), aces_before) << "the ACEs added for the run were not removed";
  std::string path = root;
  for (char& c : path) c = c == '/' ? '\\' : c;
  Result<std::u16string> wide = utf8_to_utf16(path);
  RemoveDirectoryW(std::wstring(wide->begin(), wide->end()).c_str());
}

TEST(Win32Exec, RefusesAPlanWithoutDriveLetters) {
  LoadedModule loaded = load_module();
  ASSERT_NE(loaded.backend, nullptr);
  TransformRequest request = testing::request_for({testing::rule("/", Access::kRead)});
  request.argv = {"/usr/bin/true"};
  Result<ExecPlan> plan = loaded.backend->transform(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  Result<ExitStatus> status = loaded.backend->exec(*plan);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("has no drive letter or server"), std::string::npos)
      << status.error();
  loaded.descriptor->destroy(loaded.backend);
}

}  // namespace
}  // namespace sbx::windows
#endif  // _WIN32
