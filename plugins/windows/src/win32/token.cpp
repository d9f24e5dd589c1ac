// Restricted token construction. See plan.hpp for why these flags and SIDs.
// windows.h (through win32.hpp) must come first: sddl.h needs its types.
// clang-format off
#include "win32.hpp"
#include <sddl.h>
// clang-format on

#include "sbx/windows/command_line.hpp"

namespace sbx::windows::win32 {
namespace {

SidBytes copy_sid(PSID sid) {
  SidBytes out(GetLengthSid(sid));
  CopySid(static_cast<DWORD>(out.size()), static_cast<PSID>(out.data()), sid);
  return out;
}

// A SID from its string form ("S-1-5-21-a-b-c-d").
Result<SidBytes> sid_from_string(const std::string& text) {
  Result<std::wstring> w = wide(text);
  if (!w.ok()) return w.failure();
  PSID sid = nullptr;
  if (!ConvertStringSidToSidW(w->c_str(), &sid))
    return system_error("windows backend: ConvertStringSidToSidW('" + text + "')");
  SidBytes out = copy_sid(sid);
  LocalFree(sid);
  return out;
}

// GetTokenInformation into a buffer of the size it asks for.
Result<std::vector<unsigned char>> token_information(HANDLE token, TOKEN_INFORMATION_CLASS kind,
                                                     std::string_view what) {
  DWORD size = 0;
  GetTokenInformation(token, kind, nullptr, 0, &size);
  if (size == 0) return system_error("GetTokenInformation(" + std::string(what) + ")");
  std::vector<unsigned char> buffer(size);
  if (!GetTokenInformation(token, kind, buffer.data(), size, &size))
    return system_error("GetTokenInformation(" + std::string(what) + ")");
  return buffer;
}

Result<SidBytes> logon_sid(HANDLE token) {
  Result<std::vector<unsigned char>> buffer = token_information(token, TokenGroups, "TokenGroups");
  if (!buffer.ok()) return buffer.failure();
  const auto* groups = reinterpret_cast<const TOKEN_GROUPS*>(buffer->data());
  for (DWORD i = 0; i < groups->GroupCount; ++i) {
    if ((groups->Groups[i].Attributes & SE_GROUP_LOGON_ID) == SE_GROUP_LOGON_ID)
      return copy_sid(groups->Groups[i].Sid);
  }
  return Error{
      "windows backend: the caller's token has no logon SID (a service or batch "
      "logon?): run sbx from an interactive session"};
}

Result<SidBytes> everyone_sid() {
  SidBytes out(SECURITY_MAX_SID_SIZE);
  DWORD size = static_cast<DWORD>(out.size());
  if (!CreateWellKnownSid(WinWorldSid, nullptr, static_cast<PSID>(out.data()), &size))
    return system_error("CreateWellKnownSid(Everyone)");
  out.resize(size);
  return out;
}

// The default DACL for objects the command creates without inheritable ACEs.
Status set_default_dacl(HANDLE token, const std::vector<SidRef>& refs, RunSids& sids) {
  if (refs.empty()) return {};
  DWORD size = sizeof(ACL);
  for (SidRef ref : refs)
    size += static_cast<DWORD>(sizeof(ACCESS_ALLOWED_ACE) + GetLengthSid(sids.get(ref)));
  std::vector<unsigned char> buffer(size);
  auto* acl = reinterpret_cast<PACL>(buffer.data());
  if (!InitializeAcl(acl, size, ACL_REVISION)) return system_error("InitializeAcl");
  for (SidRef ref : refs) {
    if (!AddAccessAllowedAce(acl, ACL_REVISION, GENERIC_ALL, sids.get(ref)))
      return system_error("AddAccessAllowedAce");
  }
  TOKEN_DEFAULT_DACL dacl{acl};
  if (!SetTokenInformation(token, TokenDefaultDacl, &dacl, sizeof dacl))
    return system_error("SetTokenInformation(TokenDefaultDacl)");
  return {};
}

}  // namespace

PSID RunSids::get(SidRef ref) {
  switch (ref) {
    case SidRef::kWriteCapability:
      return sid_ptr(write_capability);
    case SidRef::kLogon:
      return sid_ptr(logon);
    case SidRef::kEveryone:
      return sid_ptr(everyone);
  }
  return nullptr;
}

Result<std::string> user_sid_string(HANDLE token) {
  Result<std::vector<unsigned char>> buffer = token_information(token, TokenUser, "TokenUser");
  if (!buffer.ok()) return buffer.failure();
  const auto* user = reinterpret_cast<const TOKEN_USER*>(buffer->data());
  wchar_t* text = nullptr;
  if (!ConvertSidToStringSidW(user->User.Sid, &text)) return system_error("ConvertSidToStringSidW");
  const std::wstring owned(text);
  LocalFree(text);
  Result<std::string> out = utf16_to_utf8(std::u16string(owned.begin(), owned.end()));
  if (!out.ok()) return Error{"windows backend: the user SID is not valid UTF-16"};
  return *out;
}

Result<std::vector<std::string>> privilege_names(HANDLE token) {
  Result<std::vector<unsigned char>> buffer =
      token_information(token, TokenPrivileges, "TokenPrivileges");
  if (!buffer.ok()) return buffer.failure();
  const auto* privileges = reinterpret_cast<const TOKEN_PRIVILEGES*>(buffer->data());
  std::vector<std::string> out;
  for (DWORD i = 0; i < privileges->PrivilegeCount; ++i) {
    LUID luid = privileges->Privileges[i].Luid;
    wchar_t name[128];
    DWORD length = 128;
    if (!LookupPrivilegeNameW(nullptr, &luid, name, &length))
      return system_error("LookupPrivilegeNameW");
    Result<std::string> text = utf16_to_utf8(std::u16string(name, name + length));
    out.push_back(text.ok() ? *text : std::string("<privilege>"));
  }
  return out;
}

Result<RunSids> make_run_sids(HANDLE base_token, const std::string& capability_sid) {
  Result<SidBytes> capability = sid_from_string(capability_sid);
  if (!capability.ok()) return capability.failure();
  Result<SidBytes> logon = logon_sid(base_token);
  if (!logon.ok()) return logon.failure();
  Result<SidBytes> everyone = everyone_sid();
  if (!everyone.ok()) return everyone.failure();
  return RunSids{std::move(*capability), std::move(*logon), std::move(*everyone)};
}

Result<UniqueHandle> open_own_token() {
  HANDLE token = nullptr;
  // TOKEN_ADJUST_DEFAULT: CreateRestrictedToken's result inherits this handle's access, and
  // the default DACL is set on it afterwards.
  const DWORD access = TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT |
                       TOKEN_ADJUST_SESSIONID;
  if (!OpenProcessToken(GetCurrentProcess(), access, &token))
    return system_error("OpenProcessToken");
  return UniqueHandle(token);
}

Result<UniqueHandle> make_restricted_token(HANDLE base, const TokenPlan& plan, RunSids& sids) {
  std::vector<SID_AND_ATTRIBUTES> restricting;
  for (SidRef ref : plan.restricting_sids) restricting.push_back({sids.get(ref), 0});
  DWORD flags = 0;
  if (plan.disable_max_privilege) flags |= DISABLE_MAX_PRIVILEGE;
  if (plan.lua_token) flags |= LUA_TOKEN;
  if (plan.write_restricted) flags |= WRITE_RESTRICTED;
  // Every privilege but SeChangeNotifyPrivilege is also named for deletion: the same result as
  // DISABLE_MAX_PRIVILEGE, on any implementation that honours either (Wine ignores the flag).
  std::vector<LUID_AND_ATTRIBUTES> deleted;
  Result<std::vector<unsigned char>> held =
      token_information(base, TokenPrivileges, "TokenPrivileges");
  if (!held.ok()) return held.failure();
  LUID change_notify{};
  if (!LookupPrivilegeValueW(nullptr, L"SeChangeNotifyPrivilege", &change_notify))
    return system_error("LookupPrivilegeValueW(SeChangeNotifyPrivilege)");
  if (plan.disable_max_privilege) {
    const auto* privileges = reinterpret_cast<const TOKEN_PRIVILEGES*>(held->data());
    for (DWORD i = 0; i < privileges->PrivilegeCount; ++i) {
      const LUID luid = privileges->Privileges[i].Luid;
      if (luid.LowPart == change_notify.LowPart && luid.HighPart == change_notify.HighPart)
        continue;
      deleted.push_back({luid, 0});
    }
  }
  HANDLE token = nullptr;
  if (!CreateRestrictedToken(base, flags, 0, nullptr, static_cast<DWORD>(deleted.size()),
                             deleted.empty() ? nullptr : deleted.data(),
                             static_cast<DWORD>(restricting.size()),
                             restricting.empty() ? nullptr : restricting.data(), &token))
    return system_error("CreateRestrictedToken");
  UniqueHandle owned(token);
  if (Status status = set_default_dacl(owned.get(), plan.default_dacl, sids); !status.ok())
    return status.failure();
  // DISABLE_MAX_PRIVILEGE removes every privilege but SeChangeNotifyPrivilege ("bypass traverse
  // checking"), which the command needs to open paths below directories it cannot list. Check
  // that the token really holds nothing more: fail closed if any other privilege survived.
  if (plan.disable_max_privilege) {
    Result<std::vector<std::string>> names = privilege_names(owned.get());
    if (!names.ok()) return names.failure();
    for (const std::string& name : *names) {
      if (name != "SeChangeNotifyPrivilege")
        return Error{"windows backend: the restricted token still holds " + name +
                     " after DISABLE_MAX_PRIVILEGE; refusing to run with it"};
    }
  }
  return owned;
}

}  // namespace sbx::windows::win32
