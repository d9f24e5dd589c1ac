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
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "sbx/windows/acl_apply.hpp"
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
  SidBytes write_capability;  // derived from the user and the plan's ACEs (identity.hpp)
  SidBytes logon;
  SidBytes everyone;
  PSID get(SidRef ref);
};

// token.cpp
// `capability_sid` in string form ("S-1-5-21-a-b-c-d", identity.hpp capability_sid_for).
Result<RunSids> make_run_sids(HANDLE base_token, const std::string& capability_sid);
// The user SID of a token as "S-1-5-...".
Result<std::string> user_sid_string(HANDLE token);
// The names of the privileges a token holds (e.g. "SeChangeNotifyPrivilege").
Result<std::vector<std::string>> privilege_names(HANDLE token);
Result<UniqueHandle> open_own_token();
Result<UniqueHandle> make_restricted_token(HANDLE base, const TokenPlan& plan, RunSids& sids);

// acl.cpp: the real DaclHost (acl_apply.hpp) for the plan's capability SID.
class Win32DaclHost final : public DaclHost {
 public:
  // How long lock() waits for another run's DACL update on the same path.
  static constexpr DWORD kLockTimeoutMs = 60'000;
  Win32DaclHost(PSID capability, Logger log) : capability_(capability), log_(std::move(log)) {}
  ~Win32DaclHost() override;
  Win32DaclHost(const Win32DaclHost&) = delete;
  Win32DaclHost& operator=(const Win32DaclHost&) = delete;

  Result<bool> exists(const std::string& path) override;
  Result<bool> create_directory(const std::string& path) override;
  Status lock(const std::string& path) override;
  void unlock(const std::string& path) override;
  Result<bool> has_ace(const Ace& ace) override;
  Status add_ace(const Ace& ace) override;
  bool remove_if_empty(const std::string& path) override;

 private:
  PSID capability_;
  Logger log_;
  std::map<std::string, UniqueHandle> locks_;
};

// Directories held open without FILE_SHARE_DELETE for the length of a run: nobody can rename or
// remove them meanwhile (not the command, not another run's cleanup of a name it created).
class PathHolds {
 public:
  Status hold(const std::string& path);
  void release() { handles_.clear(); }

 private:
  std::vector<UniqueHandle> handles_;
};

// Everyone-writable locations (ancestors of the plan's paths, and well-known shared ones) where
// the restricted token can write anyway, because Everyone and the logon SID are among its
// restricting SIDs. Returns one warning line per such location.
std::vector<std::string> everyone_writable_warnings(const WindowsPlan& plan, PSID logon);
// True if the DACL of `path` lets `sid` (or Everyone) write or add files.
Result<bool> writable_by(const std::wstring& path, PSID sid, PSID everyone);

// process.cpp
Result<ExitStatus> run_in_job(HANDLE token, const WindowsPlan& plan);
Result<UniqueHandle> make_kill_on_close_job();
Status limit_job_ui(HANDLE job);

// Runs a whole plan: token, ACLs, process in a job, restoration.
Result<ExitStatus> run(const WindowsPlan& plan, const Logger& log, const Logger& warn);

// probe.cpp
ProbeReport probe();

}  // namespace sbx::windows::win32
