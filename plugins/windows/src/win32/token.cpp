// Restricted token construction. See plan.hpp for why these flags and SIDs.
#include "win32.hpp"  // windows.h first: bcrypt.h needs its types

#include <bcrypt.h>

namespace sbx::windows::win32 {
namespace {

SidBytes copy_sid(PSID sid) {
  SidBytes out(GetLengthSid(sid));
  CopySid(static_cast<DWORD>(out.size()), static_cast<PSID>(out.data()), sid);
  return out;
}

// A fresh S-1-5-21-a-b-c-d. Nobody else holds it, so an ACE naming it that outlives the run
// (after a crash) grants nothing; being new each run also keeps concurrent runs apart.
Result<SidBytes> random_capability_sid() {
  ULONG parts[4] = {0, 0, 0, 0};
  if (BCryptGenRandom(nullptr, reinterpret_cast<PUCHAR>(parts), sizeof parts,
                      BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
    return Error{"windows backend: BCryptGenRandom failed: cannot make a capability SID"};
  SID_IDENTIFIER_AUTHORITY nt = SECURITY_NT_AUTHORITY;
  PSID sid = nullptr;
  if (!AllocateAndInitializeSid(&nt, 5, SECURITY_NT_NON_UNIQUE, parts[0], parts[1], parts[2],
                                parts[3], 0, 0, 0, &sid))
    return system_error("AllocateAndInitializeSid");
  SidBytes out = copy_sid(sid);
  FreeSid(sid);
  return out;
}

Result<SidBytes> logon_sid(HANDLE token) {
  DWORD size = 0;
  GetTokenInformation(token, TokenGroups, nullptr, 0, &size);
  if (size == 0) return system_error("GetTokenInformation(TokenGroups)");
  std::vector<unsigned char> buffer(size);
  if (!GetTokenInformation(token, TokenGroups, buffer.data(), size, &size))
    return system_error("GetTokenInformation(TokenGroups)");
  const auto* groups = reinterpret_cast<const TOKEN_GROUPS*>(buffer.data());
  for (DWORD i = 0; i < groups->GroupCount; ++i) {
    if ((groups->Groups[i].Attributes & SE_GROUP_LOGON_ID) == SE_GROUP_LOGON_ID)
      return copy_sid(groups->Groups[i].Sid);
  }
  return Error{"windows backend: the caller's token has no logon SID (a service or batch "
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
    case SidRef::kWriteCapability: return sid_ptr(write_capability);
    case SidRef::kLogon: return sid_ptr(logon);
    case SidRef::kEveryone: return sid_ptr(everyone);
  }
  return nullptr;
}

Result<RunSids> make_run_sids(HANDLE base_token) {
  Result<SidBytes> capability = random_capability_sid();
  if (!capability.ok()) return Error{capability.error()};
  Result<SidBytes> logon = logon_sid(base_token);
  if (!logon.ok()) return Error{logon.error()};
  Result<SidBytes> everyone = everyone_sid();
  if (!everyone.ok()) return Error{everyone.error()};
  return RunSids{std::move(*capability), std::move(*logon), std::move(*everyone)};
}

Result<UniqueHandle> open_own_token() {
  HANDLE token = nullptr;
  // TOKEN_ADJUST_DEFAULT: CreateRestrictedToken's result inherits this handle's access, and
  // the default DACL is set on it afterwards.
  const DWORD access = TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ASSIGN_PRIMARY |
                       TOKEN_ADJUST_DEFAULT | TOKEN_ADJUST_SESSIONID;
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
  HANDLE token = nullptr;
  if (!CreateRestrictedToken(base, flags, 0, nullptr, 0, nullptr,
                             static_cast<DWORD>(restricting.size()),
                             restricting.empty() ? nullptr : restricting.data(), &token))
    return system_error("CreateRestrictedToken");
  UniqueHandle owned(token);
  if (Status status = set_default_dacl(owned.get(), plan.default_dacl, sids); !status.ok())
    return Error{status.error()};
  return owned;
}

}  // namespace sbx::windows::win32
