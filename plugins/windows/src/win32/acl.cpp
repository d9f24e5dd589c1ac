// ACL changes for one run, undone afterwards. See plan.hpp for the model.
#include <aclapi.h>

#include "sbx/windows/command_line.hpp"
#include "win32.hpp"

namespace sbx::windows::win32 {
namespace {

// Rights that count as writing a file or directory (FILE_ADD_FILE and FILE_ADD_SUBDIRECTORY
// share bits with FILE_WRITE_DATA and FILE_APPEND_DATA).
constexpr DWORD kWriteRights = FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA |
                               FILE_WRITE_ATTRIBUTES | DELETE;
// Never FILE_DELETE_CHILD: with it a parent would let the command delete (and so rename away)
// a child whose own ACL denies DELETE.
constexpr DWORD kAllowWriteMask = kWriteRights | FILE_GENERIC_READ | FILE_GENERIC_EXECUTE;
constexpr DWORD kDenyWriteMask = kWriteRights | FILE_DELETE_CHILD | WRITE_DAC | WRITE_OWNER;
constexpr DWORD kDenyDeleteMask = DELETE;

std::string narrow(const std::wstring& text) {
  std::u16string units(text.begin(), text.end());
  Result<std::string> out = utf16_to_utf8(units);
  return out.ok() ? *out : std::string("<path>");
}

// Attributes of an existing path; refuses reparse points, whose ACL would be the target's.
Result<DWORD> attributes_of(const std::wstring& path) {
  const DWORD attributes = GetFileAttributesW(path.c_str());
  if (attributes == INVALID_FILE_ATTRIBUTES)
    return system_error("windows backend: GetFileAttributesW('" + narrow(path) + "')");
  if ((attributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0)
    return Error{"windows backend: '" + narrow(path) + "' is a symbolic link or junction: "
                 "an ACE there would land on its target; refusing"};
  return attributes;
}

// Owns memory from LocalAlloc (security descriptors and ACLs from the Win32 ACL functions).
struct LocalDeleter {
  void operator()(void* p) const { LocalFree(p); }
};
using LocalPtr = std::unique_ptr<void, LocalDeleter>;

Result<PACL> read_dacl(const std::wstring& path, LocalPtr& descriptor) {
  PACL dacl = nullptr;
  PSECURITY_DESCRIPTOR sd = nullptr;
  const DWORD rc = GetNamedSecurityInfoW(path.c_str(), SE_FILE_OBJECT,
                                         DACL_SECURITY_INFORMATION, nullptr, nullptr, &dacl,
                                         nullptr, &sd);
  if (rc != ERROR_SUCCESS)
    return system_error("windows backend: GetNamedSecurityInfoW('" + narrow(path) + "')", rc);
  descriptor.reset(sd);
  return dacl;
}

Status write_dacl(const std::wstring& path, PACL dacl) {
  // SetNamedSecurityInfoW also propagates inheritable ACEs to existing children.
  const DWORD rc = SetNamedSecurityInfoW(const_cast<LPWSTR>(path.c_str()), SE_FILE_OBJECT,
                                         DACL_SECURITY_INFORMATION, nullptr, nullptr, dacl,
                                         nullptr);
  if (rc != ERROR_SUCCESS)
    return system_error("windows backend: SetNamedSecurityInfoW('" + narrow(path) + "')", rc);
  return {};
}

EXPLICIT_ACCESS_W access_for(const Ace& ace, PSID sid, bool directory) {
  EXPLICIT_ACCESS_W entry{};
  const bool inheritable = ace.kind != AceKind::kDenyDelete && directory;
  entry.grfAccessPermissions = ace.kind == AceKind::kAllowWrite  ? kAllowWriteMask
                               : ace.kind == AceKind::kDenyWrite ? kDenyWriteMask
                                                                 : kDenyDeleteMask;
  entry.grfAccessMode = ace.kind == AceKind::kAllowWrite ? GRANT_ACCESS : DENY_ACCESS;
  entry.grfInheritance = inheritable ? SUB_CONTAINERS_AND_OBJECTS_INHERIT : NO_INHERITANCE;
  entry.Trustee.TrusteeForm = TRUSTEE_IS_SID;
  entry.Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN;
  entry.Trustee.ptstrName = static_cast<LPWSTR>(sid);
  return entry;
}

bool names_sid(const ACE_HEADER* header, PSID sid) {
  if ((header->AceFlags & INHERITED_ACE) != 0) return false;
  if (header->AceType == ACCESS_ALLOWED_ACE_TYPE)
    return EqualSid(const_cast<DWORD*>(&reinterpret_cast<const ACCESS_ALLOWED_ACE*>(header)->SidStart), sid) != 0;
  if (header->AceType == ACCESS_DENIED_ACE_TYPE)
    return EqualSid(const_cast<DWORD*>(&reinterpret_cast<const ACCESS_DENIED_ACE*>(header)->SidStart), sid) != 0;
  return false;
}

// Rewrites the DACL of `path` without the explicit ACEs that name `sid`.
Status remove_sid_aces(const std::wstring& path, PSID sid) {
  LocalPtr descriptor;
  Result<PACL> dacl = read_dacl(path, descriptor);
  if (!dacl.ok()) return Error{dacl.error()};
  if (*dacl == nullptr) return {};
  std::vector<unsigned char> buffer((*dacl)->AclSize);
  auto* kept = reinterpret_cast<PACL>(buffer.data());
  if (!InitializeAcl(kept, static_cast<DWORD>(buffer.size()), ACL_REVISION))
    return system_error("InitializeAcl");
  bool removed = false;
  for (DWORD i = 0; i < (*dacl)->AceCount; ++i) {
    void* ace = nullptr;
    if (!GetAce(*dacl, i, &ace)) return system_error("GetAce");
    const auto* header = static_cast<const ACE_HEADER*>(ace);
    if (names_sid(header, sid)) {
      removed = true;
      continue;
    }
    if (!AddAce(kept, ACL_REVISION, MAXDWORD, ace, header->AceSize))
      return system_error("AddAce");
  }
  return removed ? write_dacl(path, kept) : Status{};
}

}  // namespace

Status AclSession::ensure_directory(const std::wstring& path) {
  if (GetFileAttributesW(path.c_str()) != INVALID_FILE_ATTRIBUTES) return {};
  // Create missing parents first, so the protected name cannot be created by the command.
  const std::size_t slash = path.find_last_of(L'\\');
  if (slash != std::wstring::npos && slash > 2) {
    if (Status status = ensure_directory(path.substr(0, slash)); !status.ok()) return status;
  }
  if (!CreateDirectoryW(path.c_str(), nullptr))
    return system_error("windows backend: CreateDirectoryW('" + narrow(path) + "')");
  created_.push_back(path);
  log_("created " + narrow(path) + " so the command cannot create it");
  return {};
}

Status AclSession::add_ace(const Ace& ace) {
  Result<std::wstring> path = wide(ace.path);
  if (!path.ok()) return Error{path.error()};
  Result<DWORD> attributes = attributes_of(*path);
  if (!attributes.ok()) return Error{attributes.error()};
  LocalPtr descriptor;
  Result<PACL> dacl = read_dacl(*path, descriptor);
  if (!dacl.ok()) return Error{dacl.error()};
  // A NULL DACL grants everyone everything; merging into it would replace it with our one ACE
  // and lock the owner out. Refuse instead of guessing.
  if (*dacl == nullptr)
    return Error{"windows backend: '" + ace.path + "' has a NULL DACL (anyone may write it); "
                 "give it a real ACL first"};
  EXPLICIT_ACCESS_W entry =
      access_for(ace, capability_, (*attributes & FILE_ATTRIBUTE_DIRECTORY) != 0);
  PACL merged = nullptr;
  const DWORD rc = SetEntriesInAclW(1, &entry, *dacl, &merged);
  if (rc != ERROR_SUCCESS) return system_error("windows backend: SetEntriesInAclW", rc);
  LocalPtr merged_owner(merged);
  touched_.push_back(*path);  // recorded first: a partial write is still cleaned up
  return write_dacl(*path, merged);
}

Status AclSession::apply(const WindowsPlan& plan) {
  for (const std::string& dir : plan.create_dirs) {
    Result<std::wstring> path = wide(dir);
    if (!path.ok()) return Error{path.error()};
    if (Status status = ensure_directory(*path); !status.ok()) return status;
  }
  for (const Ace& ace : plan.aces) {
    if (Status status = add_ace(ace); !status.ok()) return status;
  }
  return {};
}

void AclSession::restore() {
  for (auto it = touched_.rbegin(); it != touched_.rend(); ++it) {
    if (Status status = remove_sid_aces(*it, capability_); !status.ok())
      log_("restoring the ACL of " + narrow(*it) + " failed: " + status.error() +
           " (the leftover ACE names a SID nobody holds)");
  }
  touched_.clear();
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    if (!RemoveDirectoryW(it->c_str()))
      log_("left " + narrow(*it) + " in place (not empty or in use)");
  }
  created_.clear();
}

}  // namespace sbx::windows::win32
