// Win32 helpers and the whole run: token, ACLs, process, restoration.
#include "sbx/windows/command_line.hpp"
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
  if (!units.ok()) return Error{"windows backend: '" + printable(text) + "': " + units.error()};
  return std::wstring(units->begin(), units->end());
}

Result<ExitStatus> run(const WindowsPlan& plan, const Logger& log) {
  if (Status status = check_runnable(plan); !status.ok()) return Error{status.error()};
  Result<UniqueHandle> base = open_own_token();
  if (!base.ok()) return Error{base.error()};
  Result<RunSids> sids = make_run_sids(base->get());
  if (!sids.ok()) return Error{sids.error()};
  Result<UniqueHandle> token = make_restricted_token(base->get(), plan.token, *sids);
  if (!token.ok()) return Error{token.error()};
  // Declared before the process runs and destroyed after it ends: the ACEs exist exactly
  // while the command may use them, and are removed on every return path.
  AclSession acls(sids->get(SidRef::kWriteCapability), log);
  if (Status status = acls.apply(plan); !status.ok()) return Error{status.error()};
  return run_in_job(token->get(), plan);
}

}  // namespace sbx::windows::win32
