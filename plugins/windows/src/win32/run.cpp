// Win32 helpers and the whole run: token, ACLs, process, restoration.
#include <set>

#include "sbx/windows/command_line.hpp"
#include "sbx/windows/identity.hpp"
#include "win32.hpp"

namespace sbx::windows::win32 {

Error system_error(std::string_view what, DWORD code) {
  wchar_t* buffer = nullptr;
  const DWORD length = FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
      nullptr, code, 0, reinterpret_cast<LPWSTR>(&buffer), 0, nullptr);
  std::string message;
  if (length > 0 && buffer != nullptr) {
    Result<std::string> text = utf16_to_utf8(std::u16string(buffer, buffer + length));
    if (text.ok()) message = *text;
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r'))
      message.pop_back();
  }
  if (buffer != nullptr) LocalFree(buffer);
  return Error{std::string(what) + ": " + message + " (error " + std::to_string(code) + ")"};
}

Result<std::wstring> wide(std::string_view text) {
  Result<std::u16string> units = utf8_to_utf16(text);
  if (!units.ok()) return units.failure().prefixed("windows backend: '" + printable(text) + "': ");
  return std::wstring(units->begin(), units->end());
}

std::vector<std::string> everyone_writable_warnings(const WindowsPlan& plan, PSID logon) {
  std::vector<std::string> out;
  SidBytes everyone(SECURITY_MAX_SID_SIZE);
  DWORD size = static_cast<DWORD>(everyone.size());
  if (!CreateWellKnownSid(WinWorldSid, nullptr, sid_ptr(everyone), &size)) return out;
  for (const std::string& location : audit_locations(plan)) {
    Result<std::wstring> path = wide(location);
    if (!path.ok()) continue;
    Result<bool> writable = writable_by(*path, logon, sid_ptr(everyone));
    if (writable.ok() && *writable)
      out.push_back(location +
                    " is writable by Everyone or the logon session: the command can "
                    "write there too (the restricted token needs both SIDs to run); tighten its "
                    "ACL if that matters");
  }
  return out;
}

Result<ExitStatus> run(const WindowsPlan& plan, const Logger& log, const Logger& warn) {
  if (Status status = check_runnable(plan); !status.ok()) return status.failure();
  Result<UniqueHandle> base = open_own_token();
  if (!base.ok()) return base.failure();
  Result<std::string> user = user_sid_string(base->get());
  if (!user.ok()) return user.failure();
  // The same plan of the same user gets the same capability SID on every run, so the ACEs of
  // an earlier run are found in place (identity.hpp, acl_apply.hpp).
  const std::string capability = capability_sid_for(*user, plan.aces);
  Result<RunSids> sids = make_run_sids(base->get(), capability);
  if (!sids.ok()) return sids.failure();
  Result<UniqueHandle> token = make_restricted_token(base->get(), plan.token, *sids);
  if (!token.ok()) return token.failure();
  log("capability SID " + capability);
  if (plan.token.write_restricted) {
    for (const std::string& line : everyone_writable_warnings(plan, sids->get(SidRef::kLogon)))
      warn(line);
  }

  Win32DaclHost host(sids->get(SidRef::kWriteCapability), log);
  std::vector<std::string> created;
  PathHolds holds;
  // On every return path: let go of the held directories, then remove the ones this run
  // created if they are empty and no other run holds them.
  struct Cleanup {
    PathHolds& holds;
    Win32DaclHost& host;
    std::vector<std::string>& created;
    const Logger& log;
    ~Cleanup() {
      holds.release();
      for (const std::string& left : remove_created(created, host))
        log("left " + left + " in place (not empty, or another run holds it)");
    }
  } cleanup{holds, host, created, log};

  Result<AclApplyStats> stats = apply_acl_plan(plan.create_dirs, plan.aces, host, created);
  if (!stats.ok()) return stats.failure();
  log("ACL: " + std::to_string(stats->written) + " ACE(s) written, " +
      std::to_string(stats->skipped) + " already in place, " + std::to_string(stats->created) +
      " directorie(s) created");
  // Directories the plan relies on stay where they are while the command runs.
  std::set<std::string> to_hold(plan.create_dirs.begin(), plan.create_dirs.end());
  for (const Ace& ace : plan.aces) {
    Result<std::wstring> path = wide(ace.path);
    if (!path.ok()) return path.failure();
    const DWORD attributes = GetFileAttributesW(path->c_str());
    if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) != 0)
      to_hold.insert(ace.path);
  }
  for (const std::string& dir : to_hold) {
    if (Status status = holds.hold(dir); !status.ok()) return status.failure();
  }
  return run_in_job(token->get(), plan);
}

}  // namespace sbx::windows::win32
