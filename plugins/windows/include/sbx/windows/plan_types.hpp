// The token and ACL part of the Windows plan (plan.hpp): the token the backend builds and the
// ACL changes it makes for one run, which its exec() carries out. transform() puts it in the
// plan's detail (plan_text.hpp, WindowsPlanDetail); reports print it (JSON "windows"). Empty
// (all flags false, no SIDs, no paths) never stands for a runnable Windows plan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::windows {

// Symbolic SIDs; the executor maps them to real SIDs at run time.
enum class WindowsSid : std::uint8_t {
  kWriteCapability,  // "cap:write": an S-1-5-21-a-b-c-d SID derived from the user and the plan
  kLogon,            // the logon session SID of the caller's token
  kEveryone,         // S-1-1-0
};

enum class WindowsAceKind : std::uint8_t {
  kAllowWrite,  // inheritable (OI|CI): write data, append, add file/dir, attributes, EA, DELETE
  kDenyWrite,   // inheritable (OI|CI): the above plus FILE_DELETE_CHILD, WRITE_DAC, WRITE_OWNER
  kDenyDelete,  // this object only: DELETE (no rename or removal of the directory itself)
};

// Stable names, used in plans printed for people and in JSON.
constexpr std::string_view to_string(WindowsSid sid) {
  switch (sid) {
    case WindowsSid::kWriteCapability:
      return "cap:write";
    case WindowsSid::kLogon:
      return "logon";
    case WindowsSid::kEveryone:
      return "everyone";
  }
  return "unknown";
}

constexpr std::string_view to_string(WindowsAceKind kind) {
  switch (kind) {
    case WindowsAceKind::kAllowWrite:
      return "allow-write";
    case WindowsAceKind::kDenyWrite:
      return "deny-write";
    case WindowsAceKind::kDenyDelete:
      return "deny-delete";
  }
  return "unknown";
}

struct WindowsAce {
  WindowsAceKind kind = WindowsAceKind::kDenyWrite;
  WindowsSid sid = WindowsSid::kWriteCapability;
  std::string path;  // Windows form
  friend bool operator==(const WindowsAce&, const WindowsAce&) = default;
};

// The CreateRestrictedToken call: its flags, restricting SIDs (in order) and the default DACL
// (GENERIC_ALL for each SID; empty leaves the token's default).
struct WindowsToken {
  bool disable_max_privilege = false;
  bool lua_token = false;
  bool write_restricted = false;
  std::vector<WindowsSid> restricting_sids;
  std::vector<WindowsSid> default_dacl;
  friend bool operator==(const WindowsToken&, const WindowsToken&) = default;
};

struct PlanWindows {
  WindowsToken token;
  std::vector<std::string> create_dirs;  // Windows form, parents first; created if missing
  std::vector<WindowsAce> aces;          // applied in order, removed in reverse order
  bool kill_on_job_close = false;        // the job object kills the whole tree on close
  friend bool operator==(const PlanWindows&, const PlanWindows&) = default;
};

}  // namespace sbx::windows
