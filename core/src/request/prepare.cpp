// One request's policy, from the settings to the resolution (see sbx/core/request.hpp).
#include <optional>
#include <string>
#include <utility>

#include "sbx/core/request.hpp"

namespace sbx {
namespace {

// A C API handle without settings: the caller's policy and choices, as given.
settings::Decided as_given(const settings::Overrides& overrides, Policy policy) {
  settings::Decided decided;
  decided.policy = std::move(policy);
  decided.policy_scope = settings::Scope::kCommandLine;
  if (overrides.sandbox) decided.sandbox = {*overrides.sandbox, settings::Scope::kCommandLine};
  decided.allow_unsandboxed = overrides.allow_unsandboxed;
  return decided;
}

// Every settings file read, and those a run must not create or rewrite, are kept read-only in
// the sandbox: a command that could rewrite one would choose the sandbox (or the locks) of the
// next run.
void guard_settings_files(const settings::Settings& loaded, ResolveContext& context) {
  for (const auto& file : loaded.files) context.settings_files.push_back(file.value);
  for (const auto& file : loaded.guarded_files) context.settings_files.push_back(file);
  context.settings_dirs = loaded.guarded_dirs;
  context.absent_settings_files = loaded.absent_files;
}

}  // namespace

Result<settings::Decided> decide_request(PolicyRequest& request) {
  if (request.settings == nullptr) {
    if (!request.overrides.policy)
      return Error{"internal error: a request without settings has no policy"};
    return as_given(request.overrides, *request.overrides.policy);
  }
  const settings::Settings& loaded = *request.settings;
  Policy policy = settings::base_policy(loaded, request.overrides).value;
  if (request.amend) {
    request.overrides.policy_changed = true;
    Result<Policy> amended = request.amend(std::move(policy));
    if (!amended.ok()) return amended.failure();
    policy = std::move(*amended);
  }
  Result<settings::Decided> decided =
      settings::decide(loaded, request.overrides, std::move(policy));
  if (!decided.ok()) return Error{decided.error() + request.locks_todo, decided.kind()};
  return decided;
}

Result<PreparedRequest> prepare_request(PolicyRequest request) {
  Result<settings::Decided> decided = decide_request(request);
  if (!decided.ok()) return decided.failure();
  Result<ResolveContext> context =
      request.context ? request.context() : Result<ResolveContext>(current_resolve_context());
  if (!context.ok()) return context.failure();
  if (request.settings != nullptr) guard_settings_files(*request.settings, *context);
  Result<Resolution> resolved = resolve_policy_with_notes(decided->policy, *context);
  if (!resolved.ok())
    return Error{request.resolve_prefix + resolved.error() + request.resolve_todo, resolved.kind()};
  PreparedRequest out{decided->policy,      std::move(resolved->policy), context->cwd,
                      context->policy_file, std::move(*decided),         {}};
  out.caches = std::move(resolved->caches);
  if (request.settings != nullptr)
    out.settings = settings::summarize(*request.settings, out.decided);
  return out;
}

}  // namespace sbx
