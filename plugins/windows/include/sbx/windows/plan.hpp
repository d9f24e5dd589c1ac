// The Windows plan: what the restricted-token backend does to run one command under a
// ResolvedPolicy. Pure data plus the pure function that computes it, so every decision (which
// SIDs, which ACEs on which paths, which names are created first, the exact command line and
// environment, and what is refused) is unit-tested on any host. src/win32/ carries it out.
//
// The enforcement model, and its limits:
//  * The command runs with CreateRestrictedToken(DISABLE_MAX_PRIVILEGE | LUA_TOKEN |
//    WRITE_RESTRICTED) of the caller's own token. WRITE_RESTRICTED makes Windows check the
//    restricting SIDs for write access only: a write must be allowed both to the user and to
//    one of the restricting SIDs (a fresh random capability SID, the logon SID, Everyone).
//  * Writable roots get an inheritable allow-write ACE for the capability SID; read-only
//    carve-outs and protected names inside them get an inheritable deny-write ACE (deny ACEs
//    for a restricting SID win over any allow, including Everyone's); the roots and every
//    directory above a carve-out get a deny-delete ACE so they cannot be renamed away. The
//    allow ACE never grants FILE_DELETE_CHILD, so a parent cannot override a child's deny.
//  * Missing carve-outs are created (as directories) before the run so the command cannot
//    create them, and removed afterwards if still empty. The capability SID is derived from
//    the user and the plan's ACE list (identity.hpp): the ACEs stay after the run and the next
//    run of the same plan finds them (acl_apply.hpp); any other plan has another SID.
//  * %TEMP% and %TMP% are writable when a writable rule covers them (the workspace-write
//    preset's temp directory); if only one of them is, the other is pointed at it.
//  * Reads are the user's own: restricted reads, deny rules and deny globs are refused. Sockets
//    are not covered by file ACLs and this backend has no firewall component: any network mode
//    other than "enabled" is refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "sbx/windows/plan_types.hpp"

namespace sbx::windows {

// The token and ACL vocabulary (plan_types.hpp, with its to_string names): the plan's token and
// ACL part travels to exec() in the plan's detail (plan_text.hpp) as exactly these values.
using SidRef = WindowsSid;
using AceKind = WindowsAceKind;
using Ace = WindowsAce;
using TokenPlan = WindowsToken;

// The command's desktop. The interactive one, so console programs and any window they open
// behave as for the user; a private desktop would make every GUI prompt invisible and
// unanswerable. What the interactive desktop allows (messages to the user's other windows, the
// clipboard) is closed by the job's UI limits instead.
inline constexpr std::string_view kDesktop = "Winsta0\\Default";

struct WindowsPlan {
  TokenPlan token;
  std::vector<std::string> create_dirs;  // Windows form, parents first; created if missing
  std::vector<Ace> aces;                 // applied in order, removed in reverse order
  std::vector<std::string> argv;         // argv[0] = the application, in Windows form
  std::string command_line;              // UTF-8; what CreateProcessAsUserW receives
  std::vector<std::string> env;          // KEY=VALUE, sorted as CreateProcessW requires
  std::string cwd;                       // Windows form
  bool kill_on_job_close = true;         // the job object kills the whole tree on close
  // lpDesktop of the command: the interactive desktop, named explicitly (see kDesktop).
  std::string desktop = std::string(kDesktop);
  // The job's UI limits (JOB_OBJECT_UILIMIT_*): no window handles outside the job, no
  // clipboard, global atoms, desktop switching, display or system settings, logoff.
  bool job_ui_limits = true;
  std::vector<std::string> info;  // explanations for a person; never parsed
  friend bool operator==(const WindowsPlan&, const WindowsPlan&) = default;
};

// Computes the plan, or an Error naming the rule or input it cannot honour (see the model
// above). Never touches the host.
Result<WindowsPlan> build_plan(const TransformRequest& request);

// The token of a run with filesystem kind "restricted": every flag, and the capability SID,
// the logon SID and Everyone as restricting SIDs and default DACL (the probe tries this one).
TokenPlan write_restricted_token();

// What this backend can enforce on a Windows host (the probe reports it there).
CapabilitySet windows_capabilities();

// Checks that a plan can be carried out by the Win32 executor: every path fully qualified
// (drive or UNC). A plan printed from POSIX-style paths fails here with the path named.
Status check_runnable(const WindowsPlan& plan);

// The locations whose DACL the executor checks for write access by Everyone or the logon SID
// (a write-restricted token holds both as restricting SIDs, so it can write there whatever the
// plan says): every ancestor of the cwd, of argv[0] and of each ACE path, the drive roots, and
// %PUBLIC% and %ProgramData% from the plan's environment; minus anything inside a writable
// root (writable on purpose). Windows form, sorted, no duplicates.
std::vector<std::string> audit_locations(const WindowsPlan& plan);

// Which OS mechanism could block the network for this backend on a host, and why. The probe
// reports it (check "network_restriction"); transform refuses network.mode restricted and proxy
// whatever it says, because neither mechanism is implemented yet. Environment variables that
// point programs at a proxy are never enforcement and are never counted as one.
enum class NetworkMechanism : std::uint8_t {
  kAppContainer,   // unelevated: an AppContainer token without network capabilities
  kFirewallRules,  // elevated: Windows Firewall rules bound to a sandbox identity
  kNone,           // neither is available here
};
struct NetworkMechanismReport {
  NetworkMechanism mechanism = NetworkMechanism::kNone;
  std::string observed;  // what applies here and why, then that it is not implemented
  std::string remedy;
};
NetworkMechanismReport network_mechanism(bool elevated, bool appcontainer_api);

// Sorts and validates an environment for CreateProcessW: each entry NAME=VALUE with a non-empty
// name (a leading '=' is allowed, as in "=C:=C:\dir"), valid UTF-8, no NUL; names compared
// case-insensitively, duplicates refused. Sorted by upper-cased name, as Win32 requires.
Result<std::vector<std::string>> windows_environment(const std::vector<std::string>& env);

}  // namespace sbx::windows
