// One request's policy, from the settings to the resolution: settings scopes -> the caller's
// policy and the command line's additions -> the administrator's locks -> resolution against
// the host. The one pipeline every front end prepares a run with: the CLI (`sbx exec`,
// `explain`, `debug`, `context`, `policy check|show`; core/cli/policy_options.cpp) and the C API
// (sbx_exec, sbx_transform, sbx_explain, sbx_context; core/src/capi/capi.cpp). Each front end
// reads its settings and builds its ResolveContext its own way, and keeps its own words.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "sbx/core/manager.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx/core/settings.hpp"
#include "sbx/sdk/result.hpp"

namespace sbx {

// What a front end asks for.
struct PolicyRequest {
  // The settings scopes read for this request (settings::load_settings); nullptr for none (a
  // C API handle made by sbx_manager_new): overrides.policy (required then), .sandbox and
  // .allow_unsandboxed apply exactly as given, and no lock applies.
  const settings::Settings* settings = nullptr;
  settings::Overrides overrides;  // the caller's policy, preset, sandbox and override flag
  // The command line's additions (--writable-root, --deny, --network), applied to the base
  // policy before the locks; empty for none. Returns the changed policy (checked again by the
  // strict parser: the additions bypass it), or its own error.
  std::function<Result<Policy>(Policy)> amend{};
  // The host facts resolution uses (cwd, home, environment, path style, policy file). Called
  // once the locks have decided, so a refusal by a lock is reported before a problem with the
  // cwd. The settings files read are added to it here.
  std::function<Result<ResolveContext>()> context{};
  // The front end's words around the core's: appended to a refusal by the locks, and around
  // a policy that cannot be resolved (the CLI says what to do; the C API adds nothing).
  std::string locks_todo{};
  std::string resolve_prefix{};
  std::string resolve_todo{};
};

// The policy ready to run: what a RunRequest, explain_run and describe_sandbox take.
struct PreparedRequest {
  Policy policy;            // the full form, after the additions and the locks
  ResolvedPolicy resolved;  // resolved against `cwd`
  std::string cwd;          // the context's cwd
  std::string policy_file;  // the context's policy file (kept read-only in the sandbox), or ""
  // The locks' answer (settings.hpp); without settings, the request's own values (the policy,
  // sandbox preference and override flag as given).
  settings::Decided decided;
  SettingsSummary settings{};  // what a run reports of the settings (settings::summarize)
  // The policy's ":caches" (resolve.hpp Resolution::caches): what a run points the tools at.
  std::optional<caches::CachePlan> caches{};
};

// Builds the policy of `request` (the settings' policy unless the caller gives one, the
// additions re-validated through the strict parser, then settings::decide's locks, which
// refuse naming the lock) and resolves it; the settings files read are kept read-only in the
// sandbox, like the policy file.
Result<PreparedRequest> prepare_request(PolicyRequest request);

// The steps of prepare_request before the resolution (`sbx policy show`): the decided policy.
Result<settings::Decided> decide_request(PolicyRequest& request);

}  // namespace sbx
