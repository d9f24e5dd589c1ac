// The C API (sbx/sbx.h): thin wrappers over the C++ core. Every entry point catches every
// exception (nothing may unwind into C), turns a Result error into an sbx_error, and returns
// JSON built by the same renderers as the CLI, so both front ends report the same shapes.
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "report/json_render.hpp"
#include "sbx/core/context.hpp"
#include "sbx/core/created_names.hpp"
#include "sbx/core/denial.hpp"
#include "sbx/core/environment.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/permissions.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx/core/run_limits.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/spawn.hpp"
#include "sbx/sbx.h"


struct sbx_error {
  std::string message;
};

struct sbx_manager {
  sbx::PluginRegistry registry;
  std::unique_ptr<sbx::Manager> manager;
  // Backends are called from one thread at a time (sbx/sdk/backend.hpp): every call that
  // reaches a backend holds this.
  std::mutex mutex;
};

namespace sbx {
namespace {

void set_error(sbx_error** error, std::string message) {
  if (error == nullptr) return;
  *error = new (std::nothrow) sbx_error{std::move(message)};
}

// A malloc'd copy the caller frees with sbx_string_free (plain free, so any allocator-agnostic
// binding can release it).
char* to_c(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// Runs `body` (which returns Result<std::string>) and converts the outcome for C.
template <typename Body>
char* guarded(sbx_error** error, Body&& body) noexcept {
  try {
    Result<std::string> result = body();
    if (!result.ok()) {
      set_error(error, result.error());
      return nullptr;
    }
    char* out = to_c(*result);
    if (out == nullptr) set_error(error, "out of memory");
    return out;
  } catch (const std::exception& e) {
    set_error(error, std::string("internal error in libsbx: ") + e.what() +
                         "; please report this as a bug");
  } catch (...) {
    set_error(error, "internal error in libsbx (unknown exception); please report this as a bug");
  }
  return nullptr;
}

Result<std::string> need(const char* value, const char* name) {
  if (value == nullptr) return Error{std::string(name) + " is NULL; pass a value"};
  return std::string(value);
}

Result<Policy> policy_from(const char* policy_json) {
  Result<std::string> text = need(policy_json, "policy_json");
  if (!text.ok()) return Error{text.error()};
  Result<Policy> policy = parse_policy(*text);
  if (!policy.ok()) return Error{"invalid policy: " + policy.error()};
  return policy;
}

struct Prepared {
  Policy policy;
  ResolvedPolicy resolved;
};

Result<Prepared> prepare(const char* policy_json, const char* cwd) {
  Result<Policy> policy = policy_from(policy_json);
  if (!policy.ok()) return Error{policy.error()};
  Result<ResolveContext> context = current_resolve_context();
  if (!context.ok()) return Error{context.error()};
  if (cwd != nullptr) {
    if (cwd[0] != '/')
      return Error{"cwd '" + std::string(cwd) +
                   "' is not absolute; pass an "
                   "absolute path or NULL for the current directory"};
    context->cwd = cwd;
  }
  Result<ResolvedPolicy> resolved = resolve_policy(*policy, *context);
  if (!resolved.ok()) return Error{resolved.error()};
  return Prepared{std::move(*policy), std::move(*resolved)};
}

Result<SandboxPreference> preference_from(const char* preference) {
  if (preference == nullptr || preference[0] == '\0') return SandboxPreference::kAuto;
  return parse_sandbox_preference(preference);
}

std::vector<std::string> split_names(const char* backends) {
  std::vector<std::string> names;
  if (backends == nullptr) return names;
  std::string current;
  for (const char* c = backends;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!current.empty()) names.push_back(current);
      current.clear();
      if (*c == '\0') break;
    } else {
      current += *c;
    }
  }
  return names;
}

// The command's environment: this process's, under the policy's /environment (the same
// function as `sbx exec`; the proxy's variables are added later, by plan_run).
std::vector<std::string> environment(const Policy& policy) {
  return filter_environment(policy.environment, process_environment()).env;
}

Result<std::vector<std::string>> argv_from(const char* const* argv, const std::string& cwd,
                                           const std::vector<std::string>& env) {
  if (argv == nullptr || argv[0] == nullptr) return Error{"argv is empty; pass the command"};
  std::vector<std::string> out;
  for (const char* const* arg = argv; *arg != nullptr; ++arg) out.emplace_back(*arg);
  Result<std::string> path = resolve_command(out[0], cwd, env);
  if (!path.ok()) return Error{out[0] + ": " + path.error()};
  out[0] = *path;
  return out;
}

boost::json::value parsed(const std::string& json) { return boost::json::parse(json); }

// The decision and the plan for one command, shared by transform and exec.
struct Planned {
  Prepared input;
  SandboxDecision decision;
  BackendChoice choice;
  std::optional<ExecPlan> plan;        // nullopt: a sandbox is wanted but none is available
  std::optional<std::string> backend;  // the backend of the plan; nullopt = unsandboxed
  // Network mode proxy: sbx's proxy for this run (Manager::plan_run); it must outlive the
  // command, and its credential is redacted from a plan that is only printed.
  std::unique_ptr<proxy::RunProxy> proxy;
};

Result<Planned> plan_command(const sbx_manager& manager, const char* policy_json, const char* cwd,
                             const char* const* argv, const char* preference) {
  Result<Prepared> input = prepare(policy_json, cwd);
  if (!input.ok()) return Error{input.error()};
  Result<SandboxPreference> pref = preference_from(preference);
  if (!pref.ok()) return Error{pref.error()};
  Result<SandboxDecision> decision = should_sandbox(input->policy, *pref);
  if (!decision.ok()) return Error{decision.error()};
  const std::vector<std::string> env = environment(input->policy);
  Result<std::vector<std::string>> args = argv_from(argv, input->resolved.cwd, env);
  if (!args.ok()) return Error{args.error()};
  Planned planned{std::move(*input), *decision, {}, std::nullopt, std::nullopt, nullptr};
  if (!decision->sandbox) {
    planned.plan =
        ExecPlan{*args, env, planned.input.resolved.cwd, {"not sandboxed: " + decision->reason}};
    return planned;
  }
  planned.choice = manager.manager->available_backend(planned.input.resolved);
  if (!planned.choice.backend) return planned;
  TransformRequest request{*args, planned.input.resolved.cwd, env, planned.input.resolved};
  Result<SandboxedRun> run = manager.manager->plan_run(*planned.choice.backend, std::move(request));
  if (!run.ok()) return Error{run.error()};
  planned.plan = std::move(run->plan);
  planned.proxy = std::move(run->proxy);
  planned.backend = planned.choice.backend;
  return planned;
}

std::string none_available_message(const Planned& planned) {
  return "a sandbox is wanted (" + planned.decision.reason +
         ") but no backend is available here: " + planned.choice.reason +
         "; make one available (see sbx_backends_json with probe) or choose others";
}

// A policy that only a sandbox can honour: deny entries, or network only through the proxy.
bool never_unsandboxed(const Policy& policy) {
  return has_deny_entries(policy) || policy.network.mode == NetworkMode::kProxy;
}

struct ExecOutcome {
  RunReport report;
  std::optional<std::string> tail;
  proxy::RefusalLog refusals;  // what sbx's proxy refused during the run (bounded)
};

// Runs the plan, or records the refusal when there is none.
Status run_planned(const sbx_manager& manager, Planned& planned, unsigned flags, ExecOutcome& out) {
  if (!planned.plan) {
    // Wanted but none available, and no accepted override (exec_command already built the
    // direct plan when the caller allowed it and the policy has no deny entries).
    out.report.error = none_available_message(planned) +
                       (never_unsandboxed(planned.input.policy)
                            ? " (the policy has deny entries or network mode proxy, so it never "
                              "runs unsandboxed)"
                            : " (or pass SBX_EXEC_ALLOW_UNSANDBOXED)");
    return {};
  }
  std::unique_ptr<StderrCapture> capture;
  if ((flags & SBX_EXEC_CAPTURE_STDERR) != 0) {
    Result<std::unique_ptr<StderrCapture>> started = StderrCapture::start();
    if (!started.ok()) return Error{started.error()};
    capture = std::move(*started);
  }
  out.report.final = planned.backend.value_or("none");
  // Only a sandboxed run is watched for protected names created deep in its writable roots.
  const CreatedNamesWatch watch =
      planned.backend ? created_names_watch(planned.input.policy, planned.input.resolved)
                      : CreatedNamesWatch{};
  const std::int64_t started = created_names_clock();
  // The policy's resource limits; a timeout ends only this run's cgroup (never a signal to the
  // embedding process, whose other commands would get it too).
  Result<std::unique_ptr<LimitedRun>> limited =
      LimitedRun::start(planned.input.policy.limits, LimitedRun::Signals::kRunOnly);
  if (!limited.ok()) return Error{"cannot set up the run's resource limits: " + limited.error()};
  Result<ExitStatus> status = planned.backend
                                  ? manager.manager->exec(*planned.backend, *planned.plan)
                                  : spawn_and_wait(*planned.plan);
  out.report.limit_hit = (*limited)->finish(status.ok() ? status->shell_code() : -1);
  if (capture) out.tail = capture->stop();
  CreatedNames created = find_created_names(watch, started);
  out.report.protected_names_created = std::move(created.paths);
  out.report.protected_names_truncated = created.truncated;
  if (planned.proxy) out.refusals = planned.proxy->proxy().refusal_log();
  if (!status.ok()) {
    out.report.error = status.error();
    return {};
  }
  out.report.status = *status;
  return {};
}

std::string exec_report(const ExecOutcome& outcome) {
  boost::json::value report = parsed(run_to_json(outcome.report, JsonStyle::kCompact));
  boost::json::object& object = report.as_object();
  if (outcome.report.status) {
    // A named string: FailedCommand holds a view of it.
    const std::string tail = outcome.tail.value_or("");
    const FailedCommand failed{*outcome.report.status, tail, outcome.report.final};
    object["denial"] = parsed(denial_to_json(classify_failure(failed)));
  } else {
    object["denial"] = nullptr;
  }
  if (outcome.tail) {
    object["stderr_tail"] = *outcome.tail;
  } else {
    object["stderr_tail"] = nullptr;
  }
  object["network_refusals"] = parsed(proxy::refusals_to_json(outcome.refusals.entries));
  object["network_refusals_total"] = outcome.refusals.total;
  // render_json makes stderr bytes valid UTF-8.
  return report::render_json(std::move(report), JsonStyle::kCompact);
}

Result<std::string> exec_command(sbx_manager* manager, const char* policy_json, const char* cwd,
                                 const char* const* argv, const char* preference, unsigned flags) {
  if (manager == nullptr) return Error{"manager is NULL; create one with sbx_manager_new"};
  const std::lock_guard<std::mutex> lock(manager->mutex);
  Result<Planned> planned = plan_command(*manager, policy_json, cwd, argv, preference);
  if (!planned.ok()) return Error{planned.error()};
  ExecOutcome outcome;
  outcome.report.should_sandbox = planned->decision.sandbox;
  outcome.report.reason = planned->decision.reason;
  outcome.report.backend = planned->choice.backend;
  outcome.report.final = "none";
  if (!planned->plan && (flags & SBX_EXEC_ALLOW_UNSANDBOXED) != 0 &&
      !never_unsandboxed(planned->input.policy)) {
    // The caller accepted running without a sandbox: the direct plan, clearly reported. Never
    // for a deny policy (only a sandbox could keep the command away from what it denies) nor
    // for network mode proxy (unsandboxed, the domain rules would not apply).
    Result<std::vector<std::string>> args =
        argv_from(argv, planned->input.resolved.cwd, environment(planned->input.policy));
    if (!args.ok()) return Error{args.error()};
    planned->plan = ExecPlan{*args,
                             environment(planned->input.policy),
                             planned->input.resolved.cwd,
                             {"not sandboxed: SBX_EXEC_ALLOW_UNSANDBOXED"}};
    outcome.report.ran_unsandboxed_by_override = true;
  }
  Status status = run_planned(*manager, *planned, flags, outcome);
  if (!status.ok()) return Error{status.error()};
  return exec_report(outcome);
}

Result<std::string> approve_json(const char* requested_json, const char* granted_json) {
  Result<Policy> requested = policy_from(requested_json);
  if (!requested.ok()) return Error{"requested: " + requested.error()};
  Result<Policy> granted = policy_from(granted_json);
  if (!granted.ok()) return Error{"granted: " + granted.error()};
  Result<Approval> approval = approve(*requested, *granted);
  if (!approval.ok()) return Error{approval.error()};
  return approval_to_json(*approval);
}

Result<std::string> explain_json(sbx_manager* manager, const char* policy_json, const char* cwd,
                                 const char* preference) {
  if (manager == nullptr) return Error{"manager is NULL; create one with sbx_manager_new"};
  Result<Prepared> input = prepare(policy_json, cwd);
  if (!input.ok()) return Error{input.error()};
  Result<SandboxPreference> pref = preference_from(preference);
  if (!pref.ok()) return Error{pref.error()};
  ExplainReport report;
  report.preference = *pref;
  Result<SandboxDecision> decision = should_sandbox(input->policy, *pref);
  if (decision.ok()) {
    report.decision = *decision;
  } else {
    report.decision_error = decision.error();
  }
  report.required = required_capabilities(input->resolved);
  const std::lock_guard<std::mutex> lock(manager->mutex);
  report.choice = manager->manager->available_backend(input->resolved);
  report.policy = input->resolved;
  report.environment = input->policy.environment;
  report.environment_removed =
      filter_environment(input->policy.environment, process_environment()).removed;
  return explain_to_json(report, JsonStyle::kPretty);
}

Result<std::unique_ptr<sbx_manager>> make_manager(const char* backends) {
  Result<InstallLayout> layout = install_layout();
  if (!layout.ok()) return Error{"cannot locate the sbx installation: " + layout.error()};
  LoaderOptions loader;
  loader.directories.push_back(layout->plugin_dir);
  loader.trusted_owner = layout->libsbx_owner;
  loader.host = host_services(*layout);
  auto manager = std::make_unique<sbx_manager>();
  manager->registry = PluginRegistry::load(loader);
  manager->manager = std::make_unique<Manager>(manager->registry, split_names(backends));
  return manager;
}

}  // namespace
}  // namespace sbx

using sbx::Error;
using sbx::Result;

extern "C" {

const char* sbx_error_message(const sbx_error* error) {
  return error != nullptr ? error->message.c_str() : "";
}

void sbx_error_free(sbx_error* error) { delete error; }

void sbx_string_free(char* text) { std::free(text); }

const char* sbx_version(void) { return sbx::sbx_version(); }

sbx_manager* sbx_manager_new(const char* backends, sbx_error** error) {
  try {
    Result<std::unique_ptr<sbx_manager>> manager = sbx::make_manager(backends);
    if (!manager.ok()) {
      sbx::set_error(error, manager.error());
      return nullptr;
    }
    return manager->release();
  } catch (const std::exception& e) {
    sbx::set_error(error, std::string("internal error in libsbx: ") + e.what());
  } catch (...) {
    sbx::set_error(error, "internal error in libsbx (unknown exception)");
  }
  return nullptr;
}

void sbx_manager_free(sbx_manager* manager) { delete manager; }

char* sbx_backends_json(sbx_manager* manager, int probe, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    if (manager == nullptr) return Error{"manager is NULL; create one with sbx_manager_new"};
    const std::lock_guard<std::mutex> lock(manager->mutex);
    std::vector<sbx::BackendListing> listings;
    for (const sbx::LoadedPlugin& plugin : manager->registry.plugins()) {
      sbx::BackendListing listing{plugin.name, plugin.version, plugin.description, plugin.path,
                                  std::nullopt};
      if (probe != 0) listing.probe = sbx::guarded_probe(*plugin.backend);
      listings.push_back(std::move(listing));
    }
    return sbx::backends_to_json(listings, manager->registry.rejected(), sbx::JsonStyle::kPretty);
  });
}

char* sbx_should_sandbox(const char* policy_json, const char* preference, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    Result<sbx::Policy> policy = sbx::policy_from(policy_json);
    if (!policy.ok()) return Error{policy.error()};
    Result<sbx::SandboxPreference> pref = sbx::preference_from(preference);
    if (!pref.ok()) return Error{pref.error()};
    Result<sbx::SandboxDecision> decision = sbx::should_sandbox(*policy, *pref);
    if (!decision.ok()) return Error{decision.error()};
    boost::json::object out;
    out["sandbox"] = decision->sandbox;
    out["reason"] = decision->reason;
    return sbx::report::render_json(std::move(out), sbx::JsonStyle::kCompact);
  });
}

char* sbx_explain(sbx_manager* manager, const char* policy_json, const char* cwd,
                  const char* preference, sbx_error** error) {
  return sbx::guarded(error,
                      [&] { return sbx::explain_json(manager, policy_json, cwd, preference); });
}

char* sbx_transform(sbx_manager* manager, const char* policy_json, const char* cwd,
                    const char* const* argv, const char* preference, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    if (manager == nullptr) return Error{"manager is NULL; create one with sbx_manager_new"};
    const std::lock_guard<std::mutex> lock(manager->mutex);
    Result<sbx::Planned> planned = sbx::plan_command(*manager, policy_json, cwd, argv, preference);
    if (!planned.ok()) return Error{planned.error()};
    if (!planned->plan) return Error{sbx::none_available_message(*planned)};
    return sbx::plan_to_json(planned->backend,
                             sbx::proxy::redact_plan(*planned->plan, planned->proxy.get()),
                             sbx::JsonStyle::kPretty);
  });
}

char* sbx_exec(sbx_manager* manager, const char* policy_json, const char* cwd,
               const char* const* argv, const char* preference, unsigned flags, sbx_error** error) {
  return sbx::guarded(
      error, [&] { return sbx::exec_command(manager, policy_json, cwd, argv, preference, flags); });
}

char* sbx_policy_widen(const char* base_json, const char* extra_json, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    Result<sbx::Policy> base = sbx::policy_from(base_json);
    if (!base.ok()) return Error{"base: " + base.error()};
    Result<sbx::Policy> extra = sbx::policy_from(extra_json);
    if (!extra.ok()) return Error{"extra: " + extra.error()};
    Result<sbx::Policy> wide = sbx::widen(*base, *extra);
    if (!wide.ok()) return Error{wide.error()};
    return sbx::policy_to_json(*wide);
  });
}

char* sbx_policy_approve(const char* requested_json, const char* granted_json, sbx_error** error) {
  return sbx::guarded(error, [&] { return sbx::approve_json(requested_json, granted_json); });
}

char* sbx_context(const char* policy_json, const char* cwd, int as_json, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    Result<sbx::Prepared> input = sbx::prepare(policy_json, cwd);
    if (!input.ok()) return Error{input.error()};
    const sbx::SandboxContext context = sbx::describe_sandbox(input->resolved);
    return as_json != 0 ? sbx::context_to_json(context, sbx::JsonStyle::kPretty)
                        : sbx::context_to_text(context);
  });
}

char* sbx_classify_failure(int exit_code, int signal, const char* stderr_text, size_t stderr_len,
                           const char* backend, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    if (stderr_text == nullptr && stderr_len != 0)
      return Error{"stderr_text is NULL but stderr_len is not 0"};
    const std::string_view tail =
        stderr_text != nullptr ? std::string_view(stderr_text, stderr_len) : std::string_view();
    const sbx::FailedCommand failed{sbx::ExitStatus{exit_code, signal}, tail,
                                    backend != nullptr ? backend : ""};
    return sbx::denial_to_json(sbx::classify_failure(failed));
  });
}

}  // extern "C"
