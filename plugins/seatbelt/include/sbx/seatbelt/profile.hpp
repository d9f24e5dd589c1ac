// Resolved policy -> Seatbelt profile (SBPL text + parameters) -> sandbox-exec argv. Pure: no
// file system access, no environment access beyond the request and the MacHostFacts passed in,
// same output on every host for the same inputs.
//
// Invariants the tests pin:
//  - paths, socket paths and other caller strings reach sandbox-exec only as `-DKEY=VALUE`
//    parameters referenced by `(param "KEY")`; the one exception is the protected-name regex
//    (`^<escaped path>(/.*)?$`, see glob_regex.hpp), whose escaping leaves no `"`, `\` or control
//    character in the text; the text is printable ASCII and newlines only (no byte >= 0x80);
//  - deny rules and unlink guards come after every allow (SBPL: the last matching rule wins);
//  - a policy this generator cannot express exactly is an Error, never a quietly weaker profile.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::seatbelt {

// The launcher, never looked up in PATH.
inline constexpr std::string_view kSandboxExecPath = "/usr/bin/sandbox-exec";

struct Param {
  std::string key;    // [A-Z0-9_]+, ours
  std::string value;  // a path as given by the policy (after the /private rewrite)
  friend bool operator==(const Param&, const Param&) = default;
};

struct Profile {
  std::string text;                // the SBPL program for `sandbox-exec -p`
  std::vector<Param> params;       // in the order they are passed
  std::vector<std::string> notes;  // for `sbx explain` / `sbx debug`
};

// macOS's /tmp, /var and /etc are root-owned symlinks into /private, and Seatbelt matches the
// resolved vnode path, so paths below them are rewritten to the /private spelling. Pure string
// rewrite; leaves every other path unchanged.
std::string macos_canonical_path(std::string_view path);

// Errors unless `path` is absolute and normalised (no empty, "." or ".." component, no trailing
// slash, no NUL). `what` names the field in the message.
Status check_canonical_path(std::string_view path, std::string_view what);

// Facts of the Mac the command will run on, read when the plan is made (transform time).
// Empty when the plan is only shown on another OS (`sbx debug seatbelt` on Linux).
struct MacHostFacts {
  // confstr(_CS_DARWIN_USER_CACHE_DIR) (`getconf DARWIN_USER_CACHE_DIR`), the per-user cache
  // directory next to the per-user TMPDIR, e.g. "/var/folders/ab/xyz/C/"; empty if unknown.
  std::string darwin_user_cache_dir;
};

// On macOS reads the facts above; elsewhere returns them empty. No side effects.
MacHostFacts gather_mac_host_facts();

// Builds the profile. `env` is the command's environment (read for *_PROXY variables in proxy
// mode and for TMPDIR). When the policy makes $TMPDIR a writable root (the workspace-write
// preset's `:tmpdir`) and `host` names the per-user cache directory, that directory is
// writable too, with the protected names TMPDIR has (unless a policy rule denies it).
Result<Profile> build_profile(const ResolvedPolicy& policy, const std::vector<std::string>& env,
                              const MacHostFacts& host = {});

// `sandbox-exec -p TEXT -DKEY=VALUE... -- COMMAND...`
std::vector<std::string> sandbox_exec_argv(const Profile& profile,
                                           const std::vector<std::string>& command);

// The whole transform: profile + argv; env and cwd pass through unchanged.
Result<ExecPlan> build_exec_plan(const TransformRequest& request, const MacHostFacts& host = {});

}  // namespace sbx::seatbelt
