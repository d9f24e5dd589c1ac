// The Win32 half of the backend (compiled only for Windows): carries out a WindowsPlan with a
// restricted token, ACL changes that are undone afterwards, and a job object.
#pragma once

#ifndef _WIN32
#error "src/win32/ is Windows-only"
#endif

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "sbx/windows/plan.hpp"

namespace sbx::windows::win32 {

using Logger = std::function<void(std::string_view)>;

// Owns a HANDLE; closes it once.
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(HANDLE handle) : handle_(handle) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(other.release()) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  HANDLE get() const { return handle_; }
  HANDLE release() {
    HANDLE h = handle_;
    handle_ = nullptr;
    return h;
  }
  void reset(HANDLE handle = nullptr) {
    if (handle_ != nullptr && handle_ != INVALID_HANDLE_VALUE) CloseHandle(handle_);
    handle_ = handle;
  }
  explicit operator bool() const { return handle_ != nullptr && handle_ != INVALID_HANDLE_VALUE; }

 private:
  HANDLE handle_ = nullptr;
};

// A SID in owned memory.
using SidBytes = std::vector<unsigned char>;
inline PSID sid_ptr(SidBytes& sid) { return static_cast<PSID>(sid.data()); }

// "what: <system message> (error N)" for GetLastError() or an explicit code.
Error system_error(std::string_view what, DWORD code = GetLastError());

// UTF-8 to a NUL-terminated UTF-16 string for Win32.
Result<std::wstring> wide(std::string_view text);

// The SIDs a plan refers to, made real for one run.
struct RunSids {
  SidBytes write_capability;  // random S-1-5-21-a-b-c-d, never reused
  SidBytes logon;
  SidBytes everyone;
  PSID get(SidRef ref);
};

// token.cpp
Result<RunSids> make_run_sids(HANDLE base_token);
Result<UniqueHandle> open_own_token();
Result<UniqueHandle> make_restricted_token(HANDLE base, const TokenPlan& plan, RunSids& sids);

// acl.cpp: applies the plan's directories and ACEs; undoes them when destroyed.
class AclSession {
 public:
  AclSession(PSID capability, Logger log) : capability_(capability), log_(std::move(log)) {}
  ~AclSession() { restore(); }
  AclSession(const AclSession&) = delete;
  AclSession& operator=(const AclSession&) = delete;

  Status apply(const WindowsPlan& plan);
  // Removes every ACE for the capability SID that this session added (by SID, so concurrent
  // changes by others survive), then the directories it created if they are still empty.
  void restore();

 private:
  Status ensure_directory(const std::wstring& path);
  Status add_ace(const Ace& ace);

  PSID capability_;
  Logger log_;
  std::vector<std::wstring> created_;  // in creation order
  std::vector<std::wstring> touched_;  // paths whose DACL gained an ACE, in order
};

// process.cpp
Result<ExitStatus> run_in_job(HANDLE token, const WindowsPlan& plan);
Result<UniqueHandle> make_kill_on_close_job();

// Runs a whole plan: token, ACLs, process in a job, restoration.
Result<ExitStatus> run(const WindowsPlan& plan, const Logger& log);

// probe.cpp
ProbeReport probe();

}  // namespace sbx::windows::win32
