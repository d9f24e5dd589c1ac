// libsbx as a whole on Windows (core/cross/libsbx.cmake), cross-built with mingw-w64 and run
// under wine: PluginRegistry::load loads the cross-built windows backend through the Win32
// trusted loader, a Manager plans a run of a Windows policy with it, and network mode proxy is
// refused with the reason. Wine keeps no real owners or ACLs: this proves the pipeline, not
// Windows' enforcement (core/cross/README.md).
#include <gtest/gtest.h>
#include <windows.h>

#include <filesystem>
#include <string>
#include <vector>

#include "plugins/win32_trust.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx {
namespace libsbx_windows_test {

namespace fs = std::filesystem;

// A trusted plugin directory holding a copy of the cross-built windows backend, and a
// workspace to run in.
class LibsbxOnWindows : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    root_ = fs::temp_directory_path() /
            ("sbx-libsbx-" + std::to_string(GetCurrentProcessId()) + "-" + test);
    std::error_code error;
    fs::remove_all(root_, error);
    fs::create_directories(root_ / "backends");
    fs::create_directories(root_ / "work");
    fs::copy_file(SBX_WINDOWS_MODULE_DLL, root_ / "backends" / "sbx-backend-windows.dll");
  }
  void TearDown() override {
    std::error_code error;
    fs::remove_all(root_, error);  // the loaded DLL stays (never unloaded): best effort
  }

  std::string generic(const fs::path& path) const {
    Result<std::string> normal = policy::winpath::normalize(path.string());
    EXPECT_TRUE(normal.ok()) << normal.error();
    return normal.ok() ? *normal : std::string();
  }

  // The registry of the trusted directory, trusting whoever owns the copy (under wine: the
  // wine user), like a per-user install of sbx.exe.
  PluginRegistry load_registry() const {
    const std::string dll = (root_ / "backends" / "sbx-backend-windows.dll").string();
    Result<std::string> owner = plugins::win32::owner_sid(dll);
    EXPECT_TRUE(owner.ok()) << owner.error();
    LoaderOptions options;
    options.directories = {generic(root_ / "backends")};
    options.trusted_owner_sid = owner.ok() ? *owner : std::string();
    Result<InstallLayout> layout = install_layout();
    EXPECT_TRUE(layout.ok()) << layout.error();
    if (layout.ok()) options.host = host_services(*layout);
    return PluginRegistry::load(options);
  }

  // A Windows policy resolved with PathStyle::kWindows in the workspace.
  ResolvedPolicy resolve(const std::string& network_json) const {
    Result<Policy> policy = parse_policy(
        R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [)"
        R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},)"
        R"( "network": )" +
        network_json + "}");
    EXPECT_TRUE(policy.ok()) << policy.error();
    ResolveContext context;
    context.style = PathStyle::kWindows;
    context.cwd = generic(root_ / "work");
    context.home = context.cwd;
    Result<ResolvedPolicy> resolved = resolve_policy(*policy, context);
    EXPECT_TRUE(resolved.ok()) << resolved.error();
    return resolved.ok() ? *resolved : ResolvedPolicy{};
  }

  TransformRequest request(ResolvedPolicy policy) const {
    TransformRequest out;
    out.argv = {"C:/windows/system32/cmd.exe", "/c", "exit", "3"};
    out.cwd = generic(root_ / "work");
    out.env = {"SYSTEMROOT=C:\\windows"};
    out.policy = std::move(policy);
    return out;
  }

  fs::path root_;
};

TEST_F(LibsbxOnWindows, TheRegistryLoadsTheWindowsBackendFromATrustedDirectory) {
  const PluginRegistry registry = load_registry();
  for (const RejectedPlugin& rejected : registry.rejected()) ADD_FAILURE() << rejected.message;
  if (!registry.rejected().empty() &&
      registry.rejected().front().message.find("can be changed by") != std::string::npos)
    GTEST_SKIP() << "this host's ACLs give others write access to the scratch tree";
  const LoadedPlugin* windows = registry.find("windows");
  ASSERT_NE(windows, nullptr);
  EXPECT_EQ(registry.loading().mode, LoadingMode::kPath);
  EXPECT_NE(windows->path.find("sbx-backend-windows.dll"), std::string::npos) << windows->path;
  EXPECT_FALSE(windows->version.empty());
}

TEST_F(LibsbxOnWindows, AFileThatIsNotACandidateIsNotOpened) {
  fs::copy_file(root_ / "backends" / "sbx-backend-windows.dll",
                root_ / "backends" / "sbx-backend-other.so");
  const PluginRegistry registry = load_registry();
  EXPECT_EQ(registry.plugins().size(), 1u);
  EXPECT_TRUE(registry.rejected().empty());
}

TEST_F(LibsbxOnWindows, AnUntrustedOwnerIsRefusedWithTheReason) {
  LoaderOptions options;
  options.directories = {generic(root_ / "backends")};  // no trusted_owner_sid: only admins
  const PluginRegistry registry = PluginRegistry::load(options);
  EXPECT_EQ(registry.find("windows"), nullptr);
  ASSERT_EQ(registry.rejected().size(), 1u);
  EXPECT_EQ(registry.rejected().front().stage, LoadStage::kTrust);
  EXPECT_NE(registry.rejected().front().message.find("is owned by"), std::string::npos)
      << registry.rejected().front().message;
}

TEST_F(LibsbxOnWindows, TheManagerPlansAWindowsPolicyWithTheLoadedBackend) {
  const PluginRegistry registry = load_registry();
  ASSERT_NE(registry.find("windows"), nullptr);
  const Manager manager(registry, {"windows"});
  const ResolvedPolicy policy = resolve(R"({"mode": "enabled"})");
  // The Windows resolution: a drive-path cwd, :root as every drive.
  EXPECT_TRUE(policy::winpath::equal(policy.cwd, generic(root_ / "work"))) << policy.cwd;
  Result<SandboxedRun> run = manager.plan_run("windows", request(policy));
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_FALSE(run->plan.argv.empty());
  EXPECT_NE(run->plan.argv.front().find("cmd.exe"), std::string::npos) << run->plan.argv.front();
  EXPECT_EQ(run->proxy, nullptr);
}

TEST_F(LibsbxOnWindows, NetworkModeProxyIsRefusedWithTheReason) {
  const PluginRegistry registry = load_registry();
  ASSERT_NE(registry.find("windows"), nullptr);
  const Manager manager(registry, {"windows"});
  const ResolvedPolicy policy = resolve(R"({"mode": "proxy", "allowed_domains": ["example.com"]})");
  Result<SandboxedRun> run = manager.plan_run("windows", request(policy));
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().find("network mode proxy is not available on Windows"), std::string::npos)
      << run.error();
}

TEST_F(LibsbxOnWindows, TheInstallLayoutIsFoundFromTheExecutable) {
  Result<InstallLayout> layout = install_layout();
  ASSERT_TRUE(layout.ok()) << layout.error();
  EXPECT_NE(layout->libsbx_path.find(".exe"), std::string::npos) << layout->libsbx_path;
  EXPECT_FALSE(layout->libsbx_owner_sid.empty());
  EXPECT_TRUE(policy::winpath::within(layout->plugin_dir, layout->lib_dir)) << layout->plugin_dir;
  EXPECT_EQ(layout->plugin_dir.substr(layout->plugin_dir.size() - 12), "sbx/backends");
}

}  // namespace libsbx_windows_test
}  // namespace sbx
