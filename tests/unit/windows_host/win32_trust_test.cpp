// The Windows plugin loader's Win32 side (core/src/plugins/win32_trust.hpp), cross-built with
// mingw-w64 and run under wine (core/cross). Wine keeps no real owners or ACLs on its files, so
// these tests prove the pipeline (security read, DACL model, share-mode lock, LoadLibraryExW,
// identity comparison) and the refusals that do not depend on what a real Windows would store;
// what Windows stores for an installed tree is judged by the model tests (trusted_acl_test.cpp).
#include "plugins/win32_trust.hpp"

#include <gtest/gtest.h>
#include <windows.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sbx::plugins::win32 {
namespace win32_trust_test {

namespace fs = std::filesystem;

// A scratch tree holding a copy of the cross-built windows backend.
class Win32TrustTree : public ::testing::Test {
 protected:
  void SetUp() override {
    // One tree per test: a loaded module is never unloaded, so its file cannot be removed
    // while this process lives (TearDown removes what it can).
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    root_ = fs::temp_directory_path() /
            ("sbx-win32-trust-" + std::to_string(GetCurrentProcessId()) + "-" + test);
    std::error_code error;
    fs::remove_all(root_, error);
    fs::create_directories(root_ / "plugins");
    dll_ = root_ / "plugins" / "sbx-backend-windows.dll";
    fs::copy_file(SBX_WINDOWS_MODULE_DLL, dll_);
  }
  void TearDown() override {
    std::error_code error;
    fs::remove_all(root_, error);
  }
  // Trusts whoever owns the copied DLL (under wine: the wine user), like a per-user install.
  acl::Trustees owner_trustees() const {
    Result<std::string> owner = owner_sid(dll_.string());
    EXPECT_TRUE(owner.ok()) << owner.error();
    return acl::Trustees{owner.ok() ? *owner : std::string()};
  }

  fs::path root_;
  fs::path dll_;
};

TEST_F(Win32TrustTree, SecurityOfTheChainIsRead) {
  Result<acl::SecurityModel> model = read_security(dll_.string());
  ASSERT_TRUE(model.ok()) << model.error();
  EXPECT_FALSE(model->owner_sid.empty());
  EXPECT_EQ(model->owner_sid.rfind("S-1-", 0), 0u) << model->owner_sid;
}

TEST_F(Win32TrustTree, IdentityNamesTheFileByVolumeIdAndFinalPath) {
  Result<acl::FileIdentity> first = file_identity(dll_.string());
  ASSERT_TRUE(first.ok()) << first.error();
  Result<acl::FileIdentity> again = file_identity(dll_.string());
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(acl::loaded_module_problem(*first, *again), std::nullopt);
  const fs::path other = root_ / "plugins" / "other.dll";
  fs::copy_file(dll_, other);
  Result<acl::FileIdentity> copy = file_identity(other.string());
  ASSERT_TRUE(copy.ok()) << copy.error();
  EXPECT_TRUE(acl::loaded_module_problem(*first, *copy));
}

TEST_F(Win32TrustTree, LoadsWhenTheChainPassesAndFindsTheEntry) {
  Result<acl::SecurityModel> model = read_security(dll_.string());
  ASSERT_TRUE(model.ok()) << model.error();
  Result<void*> module =
      load_trusted_module(dll_.string(), (root_ / "plugins").string(), owner_trustees());
  if (!module.ok() && module.error().find("can be changed by") != std::string::npos)
    GTEST_SKIP() << "this host's ACLs give others write access to the scratch tree (a real "
                    "Windows temp directory does); the refusal itself: "
                 << module.error();
  ASSERT_TRUE(module.ok()) << module.error();
  EXPECT_NE(GetProcAddress(static_cast<HMODULE>(*module), "sbx_plugin_entry_v2"), nullptr);
}

TEST_F(Win32TrustTree, RefusesAFileOutsideTheTrustRootAndAnUntrustedOwner) {
  Result<void*> outside =
      load_trusted_module(dll_.string(), (root_ / "elsewhere").string(), owner_trustees());
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().find("is not inside the trusted directory"), std::string::npos)
      << outside.error();
  // Nobody but the built-in administrators trusted: the owner (wine's user) is refused, by name.
  Result<void*> untrusted =
      load_trusted_module(dll_.string(), (root_ / "plugins").string(), acl::Trustees{});
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.error().find("is owned by"), std::string::npos) << untrusted.error();
}

TEST_F(Win32TrustTree, UncAndDevicePathsAreRefusedBeforeAnyLookup) {
  for (const char* path : {"\\\\server\\share\\x.dll", "\\\\?\\C:\\x.dll", "x.dll"}) {
    Result<void*> module = load_trusted_module(path, "C:\\", owner_trustees());
    EXPECT_FALSE(module.ok()) << path;
  }
}

}  // namespace win32_trust_test
}  // namespace sbx::plugins::win32
