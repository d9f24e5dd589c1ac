// The Windows loader's trust rules over a model of owners and DACLs (plugins/trusted_acl.hpp):
// every rule that the Windows host relies on, tested here on Linux.
#include "plugins/trusted_acl.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx::plugins::acl {
namespace trusted_acl_test {

constexpr const char* kUsersSid = "S-1-5-32-545";
constexpr const char* kAuthenticatedUsersSid = "S-1-5-11";
constexpr const char* kEveryoneSid = "S-1-1-0";
constexpr const char* kInstallerSid = "S-1-5-21-1-2-3-1001";
constexpr const char* kOtherUserSid = "S-1-5-21-1-2-3-1002";
constexpr std::uint32_t kReadExecute = 0x001200a9;  // FILE_GENERIC_READ | FILE_EXECUTE

// What "C:\Program Files\sbx" looks like after an administrator's install.
SecurityModel admin_install() {
  return SecurityModel{std::string(kTrustedInstallerSid),
                       true,
                       {{AceType::kAllow, std::string(kSystemSid), 0x001f01ff, false},
                        {AceType::kAllow, std::string(kAdministratorsSid), 0x001f01ff, false},
                        {AceType::kAllow, kUsersSid, kReadExecute, false},
                        {AceType::kAllow, kEveryoneSid, kReadExecute, false}}};
}

Trustees installer() { return Trustees{std::string(kInstallerSid)}; }

std::optional<std::string> below(const SecurityModel& model) {
  return check_object(model, "C:\\Program Files\\sbx", installer(), Place::kTrustRootOrBelow);
}

TEST(TrustedAcl, AdministratorsInstallPasses) { EXPECT_EQ(below(admin_install()), std::nullopt); }

TEST(TrustedAcl, PerUserInstallByTheInstallingOwnerPasses) {
  SecurityModel model{kInstallerSid, true, {{AceType::kAllow, kInstallerSid, 0x001f01ff, false}}};
  EXPECT_EQ(below(model), std::nullopt);
  // The same tree owned by another user is refused, naming the owner.
  model.owner_sid = kOtherUserSid;
  std::optional<std::string> why = below(model);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("is owned by " + std::string(kOtherUserSid)), std::string::npos) << *why;
  // Without an installing owner, only the built-in trustees count.
  SecurityModel own{kInstallerSid, true, {}};
  EXPECT_TRUE(check_object(own, "x", Trustees{}, Place::kTrustRootOrBelow));
}

TEST(TrustedAcl, EachWriteRightForAnyoneElseIsRefusedAndNamed) {
  struct Row {
    std::uint32_t mask;
    const char* name;
  };
  const std::vector<Row> rows = {
      {kFileWriteData, "FILE_WRITE_DATA/ADD_FILE"},
      {kFileAppendData, "FILE_APPEND_DATA/ADD_SUBDIRECTORY"},
      {kFileWriteEa, "FILE_WRITE_EA"},
      {kFileDeleteChild, "FILE_DELETE_CHILD"},
      {kDelete, "DELETE"},
      {kWriteDac, "WRITE_DAC"},
      {kWriteOwner, "WRITE_OWNER"},
      {kGenericWrite, "GENERIC_WRITE"},
      {kGenericAll, "GENERIC_ALL"},
      {kMaximumAllowed, "MAXIMUM_ALLOWED"},
  };
  for (const Row& row : rows) {
    SecurityModel model = admin_install();
    model.dacl.push_back({AceType::kAllow, kUsersSid, kReadExecute | row.mask, false});
    std::optional<std::string> why = below(model);
    ASSERT_TRUE(why) << row.name;
    EXPECT_NE(why->find(std::string("can be changed by ") + kUsersSid + " (" + row.name + ")"),
              std::string::npos)
        << *why;
  }
}

TEST(TrustedAcl, WriteAttributesAloneIsNotAChange) {
  SecurityModel model = admin_install();
  model.dacl.push_back({AceType::kAllow, kUsersSid, kReadExecute | kFileWriteAttributes, false});
  EXPECT_EQ(below(model), std::nullopt);
}

TEST(TrustedAcl, InheritOnlyAcesDoNotApplyToTheObject) {
  SecurityModel model = admin_install();
  model.dacl.push_back({AceType::kAllow, "S-1-3-0", kGenericAll, true});  // CREATOR OWNER
  EXPECT_EQ(below(model), std::nullopt);
  model.dacl.back().inherit_only = false;
  EXPECT_TRUE(below(model));
}

TEST(TrustedAcl, DenyAcesAreNotCreditedAndUnknownKindsFailClosed) {
  SecurityModel model = admin_install();
  model.dacl.insert(model.dacl.begin(), {AceType::kDeny, kUsersSid, kGenericWrite, false});
  model.dacl.push_back({AceType::kAllow, kUsersSid, kGenericWrite, false});
  EXPECT_TRUE(below(model));  // the allow is refused although a deny precedes it

  SecurityModel other = admin_install();
  other.dacl.push_back({AceType::kOther, kUsersSid, kReadExecute, false});
  std::optional<std::string> why = below(other);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("of a kind sbx does not judge"), std::string::npos) << *why;
}

TEST(TrustedAcl, NullDaclAndUnknownOwnerAreRefused) {
  SecurityModel null_dacl = admin_install();
  null_dacl.dacl_present = false;
  null_dacl.dacl.clear();
  std::optional<std::string> why = below(null_dacl);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("NULL DACL"), std::string::npos) << *why;
  SecurityModel no_owner = admin_install();
  no_owner.owner_sid.clear();
  EXPECT_TRUE(below(no_owner));
}

// "C:\" as Windows installs it: Authenticated Users may create folders there.
SecurityModel drive_root() {
  SecurityModel model = admin_install();
  model.owner_sid = kSystemSid;
  model.dacl.push_back({AceType::kAllow, kAuthenticatedUsersSid, kFileAppendData, false});
  model.dacl.push_back({AceType::kAllow, kAuthenticatedUsersSid, 0x001301bf, true});  // Modify
  return model;
}

TEST(TrustedAcl, CreatingEntriesIsToleratedAboveTheTrustRootOnly) {
  EXPECT_EQ(check_object(drive_root(), "C:\\", installer(), Place::kAboveTrustRoot), std::nullopt);
  EXPECT_TRUE(check_object(drive_root(), "C:\\", installer(), Place::kTrustRootOrBelow));
  // Deleting children (renaming the trusted directory away) is never tolerated.
  SecurityModel deletable = drive_root();
  deletable.dacl.push_back({AceType::kAllow, kAuthenticatedUsersSid, kFileDeleteChild, false});
  std::optional<std::string> why =
      check_object(deletable, "C:\\", installer(), Place::kAboveTrustRoot);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("FILE_DELETE_CHILD"), std::string::npos) << *why;
}

TEST(TrustedAcl, ChainNamesTheFirstBadComponent) {
  SecurityModel user_writable = admin_install();
  user_writable.dacl.push_back({AceType::kAllow, kOtherUserSid, kFileWriteData, false});
  const std::vector<ChainEntry> chain = {
      {"C:\\", drive_root()},
      {"C:\\Program Files", admin_install()},
      {"C:\\Program Files\\sbx", admin_install()},
      {"C:\\Program Files\\sbx\\plugins", user_writable},
      {"C:\\Program Files\\sbx\\plugins\\x.dll", admin_install()}};
  std::optional<std::string> why = check_chain(chain, 2, installer());
  ASSERT_TRUE(why);
  EXPECT_EQ(
      why->rfind("C:\\Program Files\\sbx\\plugins can be changed by " + std::string(kOtherUserSid),
                 0),
      0u)
      << *why;
  std::vector<ChainEntry> good = chain;
  good[3].model = admin_install();
  EXPECT_EQ(check_chain(good, 2, installer()), std::nullopt);
  // The drive root counted as the trust root is refused (its create-folder ACE).
  EXPECT_TRUE(check_chain(good, 0, installer()));
  EXPECT_TRUE(check_chain({}, 0, installer()));
}

TEST(TrustedAcl, LoadedModuleMustBeTheCheckedFile) {
  const FileIdentity checked{7, "id-1", "\\\\?\\C:\\Program Files\\sbx\\plugins\\x.dll"};
  EXPECT_EQ(loaded_module_problem(checked, checked), std::nullopt);
  FileIdentity other_case = checked;
  other_case.final_path = "\\\\?\\c:\\program files\\SBX\\plugins\\x.dll";
  EXPECT_EQ(loaded_module_problem(checked, other_case), std::nullopt);

  FileIdentity swapped = checked;
  swapped.file_id = "id-2";
  std::optional<std::string> why = loaded_module_problem(checked, swapped);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("replaced between the check and the load"), std::string::npos) << *why;

  FileIdentity elsewhere = checked;
  elsewhere.final_path = "\\\\?\\C:\\Users\\me\\x.dll";
  why = loaded_module_problem(checked, elsewhere);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("not the checked C:/Program Files/sbx/plugins/x.dll"), std::string::npos)
      << *why;

  FileIdentity share = checked;
  share.final_path = "\\\\?\\UNC\\server\\share\\x.dll";
  EXPECT_TRUE(loaded_module_problem(checked, share));
  FileIdentity no_id = checked;
  no_id.file_id.clear();
  EXPECT_TRUE(loaded_module_problem(no_id, no_id));
}

}  // namespace trusted_acl_test
}  // namespace sbx::plugins::acl
