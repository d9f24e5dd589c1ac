// Resolved policy -> Seatbelt profile (SBPL text + parameters) -> sandbox-exec argv. Pure: no
// file system access, no environment access beyond the request, same output on every host.
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
  std::string text;             // the SBPL program for `sandbox-exec -p`
  std::vector<Param> params;    // in the order they are passed
  std::vector<std::string> notes;  // for `sbx explain` / `sbx debug`
};

// macOS's /tmp, /var and /etc are root-owned symlinks into /private, and Seatbelt matches the
// resolved vnode path, so paths below them are rewritten to the /private spelling. Pure string
// rewrite; leaves every other path unchanged.
std::string macos_canonical_path(std::string_view path);

// Errors unless `path` is absolute and normalised (no empty, "." or ".." component, no trailing
// slash, no NUL). `what` names the field in the message.
Status check_canonical_path(std::string_view path, std::string_view what);

// Builds the profile. `env` is the command's environment (read only for *_PROXY variables in
// proxy mode).
Result<Profile> build_profile(const ResolvedPolicy& policy, const std::vector<std::string>& env);

// `sandbox-exec -p TEXT -DKEY=VALUE... -- COMMAND...`
std::vector<std::string> sandbox_exec_argv(const Profile& profile,
                                           const std::vector<std::string>& command);

// The whole transform: profile + argv; env and cwd pass through unchanged.
Result<ExecPlan> build_exec_plan(const TransformRequest& request);

}  // namespace sbx::seatbelt
