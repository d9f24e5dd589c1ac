// The Win32 DaclHost (see acl_apply.hpp): DACL reads and writes, per-path mutexes, created
// directories, and handles that keep directories from being renamed during a run.
#include <aclapi.h>

#include "sbx/windows/command_line.hpp"
#include "sbx/windows/identity.hpp"
#include "win32.hpp"

namespace sbx::windows::win32 {
namespace {

// Rights that count as writing a file or directory (FILE_ADD_FILE and FILE_ADD_SUBDIRECTORY
// share bits with FILE_WRITE_DATA and FILE_APPEND_DATA).
constexpr DWORD kWriteRights =
    FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA | FILE_WRITE_ATTRIBUTES | DELETE;
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
    return Error{"windows backend: '" + narrow(path) +
                 "' is a symbolic link or junction: "
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
  const DWORD rc = GetNamedSecurityInfoW(path.c_str(), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION,
                                         nullptr, nullptr, &dacl, nullptr, &sd);
  if (rc != ERROR_SUCCESS)
    return system_error("windows backend: GetNamedSecurityInfoW('" + narrow(path) + "')", rc);
  descriptor.reset(sd);
  return dacl;
}

Status write_dacl(const std::wstring& path, PACL dacl) {
  // SetNamedSecurityInfoW also propagates inheritable ACEs to existing children.
  const DWORD rc =
      SetNamedSecurityInfoW(const_cast<LPWSTR>(path.c_str()), SE_FILE_OBJECT,
                            DACL_SECURITY_INFORMATION, nullptr, nullptr, dacl, nullptr);
  if (rc != ERROR_SUCCESS)
    return system_error("windows backend: SetNamedSecurityInfoW('" + narrow(path) + "')", rc);
  return {};
}

DWORD mask_for(AceKind kind) {
  return kind == AceKind::kAllowWrite  ? kAllowWriteMask
         : kind == AceKind::kDenyWrite ? kDenyWriteMask
                                       : kDenyDeleteMask;
}

EXPLICIT_ACCESS_W access_for(const Ace& ace, PSID sid, bool directory) {
  EXPLICIT_ACCESS_W entry{};
  const bool inheritable = ace.kind != AceKind::kDenyDelete && directory;
  entry.grfAccessPermissions = mask_for(ace.kind);
  entry.grfAccessMode = ace.kind == AceKind::kAllowWrite ? GRANT_ACCESS : DENY_ACCESS;
  entry.grfInheritance = inheritable ? SUB_CONTAINERS_AND_OBJECTS_INHERIT : NO_INHERITANCE;
  entry.Trustee.TrusteeForm = TRUSTEE_IS_SID;
  entry.Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN;
  entry.Trustee.ptstrName = static_cast<LPWSTR>(sid);
  return entry;
}

// The inheritance flags add_ace writes for `ace` on an object of that kind.
BYTE inheritance_for(const Ace& ace, bool directory) {
  return ace.kind != AceKind::kDenyDelete && directory
             ? static_cast<BYTE>(OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE)
             : BYTE{0};
}

// True if `header` is an explicit ACE of the given type for `sid` with exactly `mask` and
// `flags` (inherited copies do not count: they vanish when the tree is moved).
bool is_exact_ace(const ACE_HEADER* header, BYTE type, PSID sid, DWORD mask, BYTE flags) {
  constexpr BYTE kFlagBits =
      OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE | NO_PROPAGATE_INHERIT_ACE | INHERIT_ONLY_ACE;
  if (header->AceType != type || (header->AceFlags & INHERITED_ACE) != 0) return false;
  if ((header->AceFlags & kFlagBits) != flags) return false;
  // ACCESS_ALLOWED_ACE and ACCESS_DENIED_ACE share one layout.
  const auto* ace = reinterpret_cast<const ACCESS_ALLOWED_ACE*>(header);
  return ace->Mask == mask && EqualSid(const_cast<DWORD*>(&ace->SidStart), sid) != 0;
}

}  // namespace

Win32DaclHost::~Win32DaclHost() {
  for (auto& [path, mutex] : locks_) ReleaseMutex(mutex.get());
}

Result<bool> Win32DaclHost::exists(const std::string& path) {
  Result<std::wstring> w = wide(path);
  if (!w.ok()) return w.failure();
  if (GetFileAttributesW(w->c_str()) != INVALID_FILE_ATTRIBUTES) return true;
  const DWORD code = GetLastError();
  if (code == ERROR_FILE_NOT_FOUND || code == ERROR_PATH_NOT_FOUND) return false;
  return system_error("windows backend: GetFileAttributesW('" + path + "')", code);
}

Result<bool> Win32DaclHost::create_directory(const std::string& path) {
  Result<std::wstring> w = wide(path);
  if (!w.ok()) return w.failure();
  if (!CreateDirectoryW(w->c_str(), nullptr)) {
    // A concurrent run created it first: it exists, and it is that run's to remove.
    if (GetLastError() == ERROR_ALREADY_EXISTS) return false;
    return system_error("windows backend: CreateDirectoryW('" + path + "')");
  }
  log_("created " + path + " so the command cannot create it");
  return true;
}

Status Win32DaclHost::lock(const std::string& path) {
  const std::string name = acl_lock_name(path);
  Result<std::wstring> w = wide(name);
  if (!w.ok()) return w.failure();
  UniqueHandle mutex(CreateMutexW(nullptr, FALSE, w->c_str()));
  if (!mutex) return system_error("windows backend: CreateMutexW('" + name + "')");
  const DWORD waited = WaitForSingleObject(mutex.get(), kLockTimeoutMs);
  // WAIT_ABANDONED: the previous holder died. Its write either happened or not; has_ace()
  // reads the DACL again, so taking the lock over is safe.
  if (waited != WAIT_OBJECT_0 && waited != WAIT_ABANDONED) {
    if (waited == WAIT_TIMEOUT)
      return Error{"windows backend: the ACL lock of '" + path + "' (" + name +
                   ") was held by "
                   "another process for " +
                   std::to_string(kLockTimeoutMs / 1000) +
                   " s; refusing to change its DACL without it"};
    return system_error("windows backend: WaitForSingleObject('" + name + "')");
  }
  locks_[path] = std::move(mutex);
  return {};
}

void Win32DaclHost::unlock(const std::string& path) {
  auto it = locks_.find(path);
  if (it == locks_.end()) return;
  ReleaseMutex(it->second.get());
  locks_.erase(it);
}

Result<bool> Win32DaclHost::has_ace(const Ace& ace) {
  Result<std::wstring> path = wide(ace.path);
  if (!path.ok()) return path.failure();
  Result<DWORD> attributes = attributes_of(*path);
  if (!attributes.ok()) return attributes.failure();
  LocalPtr descriptor;
  Result<PACL> dacl = read_dacl(*path, descriptor);
  if (!dacl.ok()) return dacl.failure();
  if (*dacl == nullptr)
    return Error{"windows backend: '" + ace.path +
                 "' has a NULL DACL (anyone may write it); "
                 "give it a real ACL first"};
  const BYTE type = ace.kind == AceKind::kAllowWrite ? BYTE{ACCESS_ALLOWED_ACE_TYPE}
                                                     : BYTE{ACCESS_DENIED_ACE_TYPE};
  const BYTE flags = inheritance_for(ace, (*attributes & FILE_ATTRIBUTE_DIRECTORY) != 0);
  for (DWORD i = 0; i < (*dacl)->AceCount; ++i) {
    void* entry = nullptr;
    if (!GetAce(*dacl, i, &entry)) return system_error("GetAce");
    if (is_exact_ace(static_cast<const ACE_HEADER*>(entry), type, capability_, mask_for(ace.kind),
                     flags))
      return true;
  }
  return false;
}

Status Win32DaclHost::add_ace(const Ace& ace) {
  Result<std::wstring> path = wide(ace.path);
  if (!path.ok()) return path.failure();
  Result<DWORD> attributes = attributes_of(*path);
  if (!attributes.ok()) return attributes.failure();
  LocalPtr descriptor;
  Result<PACL> dacl = read_dacl(*path, descriptor);
  if (!dacl.ok()) return dacl.failure();
  // A NULL DACL grants everyone everything; merging into it would replace it with our one ACE
  // and lock the owner out. Refuse instead of guessing.
  if (*dacl == nullptr)
    return Error{"windows backend: '" + ace.path +
                 "' has a NULL DACL (anyone may write it); "
                 "give it a real ACL first"};
  EXPLICIT_ACCESS_W entry =
      access_for(ace, capability_, (*attributes & FILE_ATTRIBUTE_DIRECTORY) != 0);
  PACL merged = nullptr;
  const DWORD rc = SetEntriesInAclW(1, &entry, *dacl, &merged);
  if (rc != ERROR_SUCCESS) return system_error("windows backend: SetEntriesInAclW", rc);
  LocalPtr merged_owner(merged);
  if (Status status = write_dacl(*path, merged); !status.ok()) return status;
  log_("ACE " + std::string(to_string(ace.kind)) + " written on " + ace.path);
  return {};
}

bool Win32DaclHost::remove_if_empty(const std::string& path) {
  Result<std::wstring> w = wide(path);
  if (!w.ok()) return false;
  // Fails if the directory is not empty, or another run holds it open without FILE_SHARE_DELETE.
  return RemoveDirectoryW(w->c_str()) != 0;
}

Result<bool> writable_by(const std::wstring& path, PSID sid, PSID everyone) {
  LocalPtr descriptor;
  Result<PACL> dacl = read_dacl(path, descriptor);
  if (!dacl.ok()) return dacl.failure();
  if (*dacl == nullptr) return true;  // a NULL DACL lets anyone do anything
  constexpr DWORD kWriting = FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA |
                             FILE_WRITE_ATTRIBUTES | DELETE | WRITE_DAC | WRITE_OWNER |
                             GENERIC_WRITE | GENERIC_ALL;
  for (DWORD i = 0; i < (*dacl)->AceCount; ++i) {
    void* entry = nullptr;
    if (!GetAce(*dacl, i, &entry)) return system_error("GetAce");
    const auto* header = static_cast<const ACE_HEADER*>(entry);
    // Deny ACEs are ignored: this is a warning, and it errs on the side of saying too much.
    if (header->AceType != ACCESS_ALLOWED_ACE_TYPE || (header->AceFlags & INHERIT_ONLY_ACE) != 0)
      continue;
    const auto* ace = reinterpret_cast<const ACCESS_ALLOWED_ACE*>(header);
    PSID ace_sid = const_cast<DWORD*>(&ace->SidStart);
    if ((ace->Mask & kWriting) != 0 && (EqualSid(ace_sid, sid) || EqualSid(ace_sid, everyone)))
      return true;
  }
  return false;
}

Status PathHolds::hold(const std::string& path) {
  Result<std::wstring> w = wide(path);
  if (!w.ok()) return w.failure();
  // No FILE_SHARE_DELETE: while this handle is open nobody (the command, another run's
  // cleanup) can rename or remove the directory. Reparse points are opened as themselves.
  UniqueHandle handle(CreateFileW(
      w->c_str(), FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr, OPEN_EXISTING,
      FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!handle) return system_error("windows backend: holding '" + path + "' open failed");
  handles_.push_back(std::move(handle));
  return {};
}

}  // namespace sbx::windows::win32
