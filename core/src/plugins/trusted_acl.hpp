// The Windows counterpart of trusted_fs.hpp's owner-and-mode check: may a file or directory
// that sbx loads plugin code from be changed by anyone but the administrators? Private to
// libsbx. Pure: it judges a model of an object's owner and DACL, so the rules are unit-tested
// on every host; on Windows the loader fills the model from GetNamedSecurityInfoW
// (core/cross/README.md).
//
// Trusted trustees: SYSTEM (S-1-5-18), BUILTIN\Administrators (S-1-5-32-544), TrustedInstaller
// (S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464) and the installing owner (the
// SID that owns sbx.exe, for a per-user install). Everyone else may read and execute, nothing
// more: an allow ACE (effective on the object itself, not inherit-only) that gives any other
// SID a right that changes the object or its name is a refusal naming the SID and the rights.
// Deny ACEs are not credited (an allow for an untrusted SID is refused whatever precedes it),
// a NULL DACL (everyone has full access) is refused, and so is any ACE type the model does not
// know (object and callback ACEs may grant what a plain reading misses): fail closed.
//
// The rights that count ("write" below): FILE_WRITE_DATA / FILE_ADD_FILE, FILE_APPEND_DATA /
// FILE_ADD_SUBDIRECTORY, FILE_WRITE_EA, FILE_DELETE_CHILD, DELETE, WRITE_DAC, WRITE_OWNER,
// GENERIC_WRITE, GENERIC_ALL and MAXIMUM_ALLOWED. FILE_WRITE_ATTRIBUTES (read-only flag,
// timestamps) changes neither content nor name and is not counted.
//
// Above the trust root (the drive root "C:\", "C:\Program Files"), like a sticky /tmp on POSIX,
// the right to create entries (FILE_ADD_FILE, FILE_ADD_SUBDIRECTORY: what Authenticated Users
// have on "C:\") is tolerated: it adds names, and renaming or removing the trusted directory
// below needs DELETE on it or FILE_DELETE_CHILD here, which are still refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::plugins::acl {

// Access mask bits, with their Win32 values (winnt.h), so the model compiles on every host.
inline constexpr std::uint32_t kFileWriteData = 0x0002;   // FILE_ADD_FILE on a directory
inline constexpr std::uint32_t kFileAppendData = 0x0004;  // FILE_ADD_SUBDIRECTORY
inline constexpr std::uint32_t kFileWriteEa = 0x0010;
inline constexpr std::uint32_t kFileDeleteChild = 0x0040;
inline constexpr std::uint32_t kFileWriteAttributes = 0x0100;
inline constexpr std::uint32_t kDelete = 0x00010000;
inline constexpr std::uint32_t kWriteDac = 0x00040000;
inline constexpr std::uint32_t kWriteOwner = 0x00080000;
inline constexpr std::uint32_t kMaximumAllowed = 0x02000000;
inline constexpr std::uint32_t kGenericAll = 0x10000000;
inline constexpr std::uint32_t kGenericWrite = 0x40000000;

// Every right that changes an object or its name (see above).
inline constexpr std::uint32_t kWriteRights = kFileWriteData | kFileAppendData | kFileWriteEa |
                                              kFileDeleteChild | kDelete | kWriteDac | kWriteOwner |
                                              kMaximumAllowed | kGenericAll | kGenericWrite;
// What others may hold on a directory above the trust root: creating entries only.
inline constexpr std::uint32_t kCreateEntryRights = kFileWriteData | kFileAppendData;

inline constexpr std::string_view kSystemSid = "S-1-5-18";
inline constexpr std::string_view kAdministratorsSid = "S-1-5-32-544";
inline constexpr std::string_view kTrustedInstallerSid =
    "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464";

enum class AceType { kAllow, kDeny, kOther };

struct Ace {
  AceType type = AceType::kAllow;
  std::string sid;  // string form, "S-1-5-18"
  std::uint32_t mask = 0;
  bool inherit_only = false;  // INHERIT_ONLY_ACE: applies to children, not to this object
};

struct SecurityModel {
  std::string owner_sid;     // empty when the owner could not be read
  bool dacl_present = true;  // false: a NULL DACL, everyone has full access
  std::vector<Ace> dacl;
};

// The trustees that may write: the three built-in ones, plus `installing_owner` when given.
struct Trustees {
  std::optional<std::string> installing_owner;
  bool trusts(std::string_view sid) const;
};

// Where the object sits relative to the trust root (the directory plugins are loaded from).
enum class Place { kAboveTrustRoot, kTrustRootOrBelow };

// "WRITE_DAC|DELETE": the names of the rights of `mask` that kWriteRights holds.
std::string rights_text(std::uint32_t mask);

// Why `model` (of the object named `what`) may not be trusted, or nullopt if it passes.
std::optional<std::string> check_object(const SecurityModel& model, const std::string& what,
                                        const Trustees& trustees, Place place);

// One directory of the chain from the drive root down to the plugin directory, or the file.
struct ChainEntry {
  std::string path;  // for messages
  SecurityModel model;
};

// check_object for each entry of `chain` (drive root first, the file last): entries before
// `trust_root_index` are above the trust root. The first refusal, or nullopt.
std::optional<std::string> check_chain(const std::vector<ChainEntry>& chain,
                                       std::size_t trust_root_index, const Trustees& trustees);

// The identity of an opened file: GetFileInformationByHandle's volume serial number and file
// index (FILE_ID_INFO's 128-bit id where available), and GetFinalPathNameByHandleW's path.
struct FileIdentity {
  std::uint64_t volume = 0;
  std::string file_id;  // bytes of the id, compared as they are
  std::string final_path;
};

// "\\?\C:\dir\x.dll" (what GetFinalPathNameByHandleW returns) as "C:/dir/x.dll"; nullopt for
// anything but a drive path (a UNC or volume-GUID path is never trusted).
std::optional<std::string> final_path_as_generic(std::string_view final_path);

// After LoadLibraryExW: nullopt if the module's file (`loaded`, read from the module's own
// path once it is mapped) is the file that was checked (`checked`): same volume, same file id,
// and the same final drive path (compared without case). Else why not.
std::optional<std::string> loaded_module_problem(const FileIdentity& checked,
                                                 const FileIdentity& loaded);

}  // namespace sbx::plugins::acl
