// Windows-only tests (cross-built with mingw-w64 and run under Wine in CI): the quoting against
// the real CommandLineToArgvW, and the real sbx-backend-windows.dll loaded through its entry.
#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
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

}  // namespace
}  // namespace sbx::windows
#endif  // _WIN32
