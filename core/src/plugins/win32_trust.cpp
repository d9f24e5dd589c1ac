#include "plugins/win32_trust.hpp"

#ifdef _WIN32

// clang-format off
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>
// clang-format on

#include <memory>
#include <vector>

#include "platform/windows_host.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx::plugins::win32 {
namespace {

std::string last_error_text(DWORD code) { return "Win32 error " + std::to_string(code); }

Result<std::wstring> wide_path(const std::string& path) {
  Result<std::string> generic = policy::winpath::normalize(path);
  if (!generic.ok()) return generic.failure();
  std::string native = *generic;
  for (char& c : native) c = c == '/' ? '\\' : c;
  std::optional<std::wstring> wide = platform::to_wide(native);
  if (!wide) return Error{"path '" + path + "' is not valid UTF-8"};
  return *wide;
}

std::string sid_text(PSID sid) {
  LPWSTR text = nullptr;
  if (sid == nullptr || !ConvertSidToStringSidW(sid, &text)) return std::string();
  std::string out = platform::to_utf8(text).value_or(std::string());
  LocalFree(text);
  return out;
}

struct LocalFreer {
  void operator()(void* p) const { LocalFree(p); }
};

struct HandleCloser {
  void operator()(HANDLE h) const {
    if (h != nullptr && h != INVALID_HANDLE_VALUE) CloseHandle(h);
  }
};
using UniqueHandle = std::unique_ptr<void, HandleCloser>;

Result<acl::FileIdentity> identity_of(HANDLE handle, const std::string& what) {
  BY_HANDLE_FILE_INFORMATION info{};
  if (!GetFileInformationByHandle(handle, &info))
    return Error{what + ": cannot read its file id (" + last_error_text(GetLastError()) + ")"};
  acl::FileIdentity id;
  id.volume = info.dwVolumeSerialNumber;
  const std::uint64_t index =
      (static_cast<std::uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
  id.file_id = std::to_string(index);
  std::wstring buffer(MAX_PATH, L'\0');
  DWORD size = GetFinalPathNameByHandleW(handle, buffer.data(), static_cast<DWORD>(buffer.size()),
                                         FILE_NAME_NORMALIZED);
  if (size >= buffer.size()) {
    buffer.resize(size + 1);
    size = GetFinalPathNameByHandleW(handle, buffer.data(), static_cast<DWORD>(buffer.size()),
                                     FILE_NAME_NORMALIZED);
  }
  if (size == 0 || size >= buffer.size())
    return Error{what + ": cannot read its final path (" + last_error_text(GetLastError()) + ")"};
  buffer.resize(size);
  id.final_path = platform::to_utf8(buffer).value_or(std::string());
  return id;
}

// Opens `path` for reading attributes; share mode read only, so that while the handle lives
// nobody can write, delete or rename the file.
Result<UniqueHandle> open_locked(const std::wstring& path, const std::string& what) {
  HANDLE handle = CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                              FILE_ATTRIBUTE_NORMAL, nullptr);
  if (handle == INVALID_HANDLE_VALUE)
    return Error{what + ": cannot open it (" + last_error_text(GetLastError()) + ")"};
  return UniqueHandle(handle);
}

}  // namespace

Result<acl::SecurityModel> read_security(const std::string& path) {
  Result<std::wstring> wide = wide_path(path);
  if (!wide.ok()) return wide.failure();
  PSID owner = nullptr;
  PACL dacl = nullptr;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  const DWORD status = GetNamedSecurityInfoW(wide->c_str(), SE_FILE_OBJECT,
                                             OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                             &owner, nullptr, &dacl, nullptr, &descriptor);
  if (status != ERROR_SUCCESS)
    return Error{path + ": cannot read its owner and ACL (" + last_error_text(status) + ")"};
  std::unique_ptr<void, LocalFreer> keep(descriptor);
  acl::SecurityModel model;
  model.owner_sid = sid_text(owner);
  model.dacl_present = dacl != nullptr;
  if (dacl == nullptr) return model;
  for (DWORD i = 0; i < dacl->AceCount; ++i) {
    void* raw = nullptr;
    if (!GetAce(dacl, i, &raw))
      return Error{path + ": cannot read access entry " + std::to_string(i)};
    const auto* header = static_cast<const ACE_HEADER*>(raw);
    acl::Ace ace;
    ace.inherit_only = (header->AceFlags & INHERIT_ONLY_ACE) != 0;
    if (header->AceType == ACCESS_ALLOWED_ACE_TYPE) {
      const auto* allowed = static_cast<const ACCESS_ALLOWED_ACE*>(raw);
      ace.type = acl::AceType::kAllow;
      ace.mask = allowed->Mask;
      ace.sid = sid_text(const_cast<DWORD*>(&allowed->SidStart));
    } else if (header->AceType == ACCESS_DENIED_ACE_TYPE) {
      const auto* denied = static_cast<const ACCESS_DENIED_ACE*>(raw);
      ace.type = acl::AceType::kDeny;
      ace.mask = denied->Mask;
      ace.sid = sid_text(const_cast<DWORD*>(&denied->SidStart));
    } else {
      ace.type = acl::AceType::kOther;
      ace.sid = "an ACE of type " + std::to_string(header->AceType);
    }
    model.dacl.push_back(std::move(ace));
  }
  return model;
}

Result<std::string> owner_sid(const std::string& path) {
  Result<acl::SecurityModel> model = read_security(path);
  if (!model.ok()) return model.failure();
  if (model->owner_sid.empty()) return Error{path + ": its owner cannot be read"};
  return model->owner_sid;
}

Result<acl::FileIdentity> file_identity(const std::string& path) {
  Result<std::wstring> wide = wide_path(path);
  if (!wide.ok()) return wide.failure();
  Result<UniqueHandle> handle = open_locked(*wide, path);
  if (!handle.ok()) return handle.failure();
  return identity_of(handle->get(), path);
}

Result<void*> load_trusted_module(const std::string& path, const std::string& trust_root,
                                  const acl::Trustees& trustees) {
  Result<std::string> file = policy::winpath::normalize(path);
  if (!file.ok()) return file.failure().as(ErrorKind::refused);
  Result<std::string> root = policy::winpath::normalize(trust_root);
  if (!root.ok()) return root.failure().prefixed("trust root: ").as(ErrorKind::refused);
  if (!policy::winpath::within(*file, *root) || policy::winpath::equal(*file, *root))
    return Error{*file + " is not inside the trusted directory " + *root, ErrorKind::refused};
  // The chain: "C:/", each directory below it, the file.
  std::vector<acl::ChainEntry> chain;
  std::size_t trust_root_index = 0;
  std::string prefix = file->substr(0, 3);
  std::size_t start = 3;
  while (true) {
    if (policy::winpath::equal(prefix, *root)) trust_root_index = chain.size();
    Result<acl::SecurityModel> model = read_security(prefix);
    if (!model.ok()) return model.failure().as(ErrorKind::refused);
    chain.push_back({prefix, std::move(*model)});
    if (start >= file->size()) break;
    std::size_t end = file->find('/', start);
    if (end == std::string::npos) end = file->size();
    prefix = file->substr(0, end);
    start = end + 1;
  }
  if (std::optional<std::string> bad = acl::check_chain(chain, trust_root_index, trustees))
    return Error{*bad, ErrorKind::refused};
  Result<std::wstring> wide = wide_path(*file);
  if (!wide.ok()) return wide.failure().as(ErrorKind::refused);
  // Held until the module is mapped and compared: nobody can write, delete or rename it.
  Result<UniqueHandle> held = open_locked(*wide, *file);
  if (!held.ok()) return held.failure().as(ErrorKind::refused);
  Result<acl::FileIdentity> checked = identity_of(held->get(), *file);
  if (!checked.ok()) return checked.failure().as(ErrorKind::refused);
  HMODULE module = LoadLibraryExW(wide->c_str(), nullptr,
                                  LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_SYSTEM32);
  if (module == nullptr)
    return Error{*file + ": LoadLibraryExW failed (" + last_error_text(GetLastError()) + ")",
                 ErrorKind::host_failure};
  std::wstring loaded_name(32768, L'\0');
  const DWORD size =
      GetModuleFileNameW(module, loaded_name.data(), static_cast<DWORD>(loaded_name.size()));
  if (size == 0 || size >= loaded_name.size())
    return Error{*file + ": the loaded module's file name cannot be read; it is not used"};
  loaded_name.resize(size);
  HANDLE again = CreateFileW(loaded_name.c_str(), FILE_READ_ATTRIBUTES,
                             FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                             OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (again == INVALID_HANDLE_VALUE)
    return Error{*file + ": the loaded module's file cannot be opened again (" +
                     last_error_text(GetLastError()) + "); it is not used",
                 ErrorKind::refused};
  UniqueHandle again_handle(again);
  Result<acl::FileIdentity> loaded = identity_of(again, *file);
  if (!loaded.ok()) return loaded.failure().as(ErrorKind::refused);
  if (std::optional<std::string> problem = acl::loaded_module_problem(*checked, *loaded))
    return Error{*file + ": " + *problem + "; it is not used", ErrorKind::refused};
  return static_cast<void*>(module);
}

}  // namespace sbx::plugins::win32

#endif  // _WIN32
