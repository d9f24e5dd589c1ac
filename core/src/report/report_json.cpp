// JSON rendering of reports (see report_json.hpp for the shapes). Boost.JSON objects keep
// insertion order, so the key order written here is the order users see.
#include "sbx/core/report_json.hpp"

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/internal.hpp"
#include "report/json_render.hpp"
#include "report/objects.hpp"
#include "sbx/core/context.hpp"
#include "sbx/core/denial.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

namespace json = boost::json;
using report::string_array;

// The members a backend's plan detail adds to the plan's JSON (PlanDetail::report_json): a JSON
// object's text, parsed and checked here, so that whatever the plugin writes, the plan's JSON
// stays valid and core's own members stay core's.
void add_detail_members(const ExecPlan& plan, json::object& out) {
  if (!plan.detail) return;
  std::string text;
  try {
    text = plan.detail->report_json();
  } catch (...) {
    return;  // described by argv, env and notes alone
  }
  if (text.empty()) return;
  boost::system::error_code error;
  // Paths are arbitrary bytes and a plugin writes them as they are (sdk/plan_json.hpp): invalid
  // UTF-8 is let through here and repaired by the report writer like every other path.
  json::parse_options options;
  options.allow_invalid_utf8 = true;
  json::value parsed = json::parse(text, error, {}, options);
  if (error || !parsed.is_object()) {
    out["detail_error"] = "the backend's plan detail is not a JSON object";
    return;
  }
  for (json::key_value_pair& member : parsed.as_object()) {
    const auto found = out.find(member.key());
    if (found != out.end() && !found->value().is_null()) continue;  // never over core's members
    out[member.key()] = std::move(member.value());
  }
}

json::value optional_string(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  return json::value(*text);
}

json::object check_json(const ProbeCheck& check) {
  json::object out;
  out["name"] = check.name;
  out["status"] = std::string(to_string(check.status));
  out["observed"] = check.observed;
  out["remedy"] = check.remedy;
  return out;
}

json::object probe_json(const ProbeReport& report) {
  json::object out;
  out["available"] = report.available;
  out["summary"] = report.summary;
  json::array checks;
  for (const ProbeCheck& check : report.checks) checks.emplace_back(check_json(check));
  out["checks"] = std::move(checks);
  out["capabilities"] = string_array(capability_names(report.capabilities));
  return out;
}

json::object listing_json(const BackendListing& listing) {
  json::object out;
  out["name"] = listing.name;
  out["version"] = listing.version;
  out["abi"] = listing.abi;
  out["description"] = listing.description;
  out["path"] = listing.path;
  if (listing.probe) {
    for (auto& member : probe_json(*listing.probe)) out[member.key()] = member.value();
  } else {
    // Not probed: the keys stay so the shape is the same with and without --probe.
    for (std::string_view key : {"available", "summary", "checks", "capabilities"})
      out[key] = nullptr;
  }
  return out;
}

json::object network_json(const NetworkPolicy& network) {
  json::object out;
  out["mode"] = std::string(to_string(network.mode));
  json::array ports;
  for (std::uint16_t port : network.proxy_ports) ports.emplace_back(port);
  out["proxy_ports"] = std::move(ports);
  out["allowed_domains"] = string_array(network.allowed_domains);
  out["denied_domains"] = string_array(network.denied_domains);
  out["unix_sockets"] = string_array(network.unix_sockets);
  out["allow_local_binding"] = network.allow_local_binding;
  return out;
}

json::array protected_paths_json(const std::vector<ProtectedPath>& paths) {
  json::array out;
  for (const ProtectedPath& path : paths) {
    json::object item;
    item["path"] = path.path;
    item["writable_root"] = path.writable_root;
    item["exists"] = path.exists;
    item["is_directory"] = path.is_directory;
    out.emplace_back(std::move(item));
  }
  return out;
}

json::object resolved_json(const ResolvedPolicy& policy) {
  json::object out;
  out["filesystem_kind"] = std::string(to_string(policy.filesystem_kind));
  json::array rules;
  for (const PathRule& rule : policy.rules) {
    json::object item;
    item["path"] = rule.path;
    item["access"] = std::string(to_string(rule.access));
    rules.emplace_back(std::move(item));
  }
  out["rules"] = std::move(rules);
  out["platform_defaults_readable"] = policy.platform_defaults_readable;
  out["protected_paths"] = protected_paths_json(policy.protected_paths);
  out["deny_globs"] = string_array(policy.deny_globs);
  out["network"] = network_json(policy.network);
  out["cwd"] = policy.cwd;
  return out;
}

json::value exit_json(const std::optional<ExitStatus>& status) {
  if (!status) return nullptr;
  json::object out;
  out["code"] = status->signal != 0 ? json::value(nullptr) : json::value(status->exit_code);
  out["signal"] = status->signal != 0 ? json::value(status->signal) : json::value(nullptr);
  out["shell_code"] = status->shell_code();
  return out;
}

json::object caller_json(const CallerConfinement& caller) {
  json::object userns;
  userns["allowed"] = caller.user_namespaces;
  userns["observed"] = caller.user_namespaces_observed;
  userns["fix"] = caller.user_namespaces_fix;
  json::object caps;
  caps["effective"] = string_array(caller.effective);
  caps["bounding"] = string_array(caller.bounding);
  caps["known"] = caller.capabilities_known;
  json::object out;
  out["verdict"] = caller.container;
  out["markers"] = string_array(caller.markers);
  out["seccomp"] = caller.seccomp;
  out["seccomp_filters"] =
      caller.seccomp_filters < 0 ? json::value(nullptr) : json::value(caller.seccomp_filters);
  out["no_new_privs"] = caller.no_new_privs;
  out["user_namespaces"] = std::move(userns);
  out["capabilities"] = std::move(caps);
  return out;
}

json::object cgroups_json(const CgroupSupport& cgroups) {
  json::object out;
  out["available"] = cgroups.available;
  out["kind"] = cgroups.kind;
  out["parent"] = cgroups.parent;
  out["reason"] = cgroups.reason;
  return out;
}

}  // namespace

std::string backends_to_json(const std::vector<BackendListing>& backends,
                             const std::vector<RejectedPlugin>& rejected, JsonStyle style,
                             const std::optional<CgroupSupport>& cgroups,
                             const std::optional<PluginLoading>& loading,
                             const std::optional<CallerConfinement>& caller) {
  json::array loaded;
  for (const BackendListing& listing : backends) loaded.emplace_back(listing_json(listing));
  json::array failed;
  for (const RejectedPlugin& plugin : rejected) {
    json::object item;
    item["path"] = plugin.path;
    item["stage"] = std::string(to_string(plugin.stage));
    item["message"] = plugin.message;
    failed.emplace_back(std::move(item));
  }
  json::object out;
  // The plugin ABI of this libsbx: a plugin built for the same major and at most this minor loads.
  out["abi"] = host_plugin_abi();
  out["backends"] = std::move(loaded);
  out["rejected"] = std::move(failed);
  if (cgroups) out["cgroups"] = cgroups_json(*cgroups);
  if (loading) {
    json::object mode;
    mode["mode"] = std::string(to_string(loading->mode));
    mode["reason"] = loading->reason;
    out["plugin_loading"] = std::move(mode);
  }
  if (caller) out["container"] = caller_json(*caller);
  return report::render_json(out, style);
}

std::string probe_report_to_json(const ProbeReport& report, JsonStyle style) {
  return report::render_json(probe_json(report), style);
}

std::string final_backend(const ExplainReport& report) {
  if (report.decision && report.decision->sandbox && report.choice.backend)
    return *report.choice.backend;
  return "none";
}

std::string explained_backend(const ExplainReport& report) {
  return report.choice.backend ? *report.choice.backend : std::string();
}

std::vector<std::string> explained_network_limits(const ExplainReport& report) {
  std::vector<std::string> considered;
  if (!report.choice.backend)
    for (const PassedOver& item : report.choice.passed_over) considered.push_back(item.backend);
  return network_limits(report.policy.network, explained_backend(report), considered);
}

namespace {

// The policy's ":caches" for `explain`: null without one.
json::value caches_json(const std::optional<caches::CachePlan>& plan,
                        const std::optional<caches::CopyOnWrite>& cow) {
  if (!plan) return nullptr;
  json::object out;
  out["project"] = plan->project;
  out["directory"] = plan->directory;
  out["writable"] = plan->data;
  out["how"] = std::string(caches::how_text(cow.has_value()));
  json::array overlays;
  if (cow) {
    for (const CacheOverlay& overlay : cow->overlays)
      overlays.emplace_back(json::object{{"path", overlay.path}, {"layers", overlay.layers}});
  }
  out["copy_on_write"] = std::move(overlays);
  json::array tools;
  for (const caches::ToolCache& cache : plan->caches) {
    json::object entry;
    entry["tool"] = cache.tool;
    entry["host_path"] = cache.host_path;
    entry["exists"] = cache.exists;
    entry["source"] = cache.source;
    entry["variable"] = cache.variable.empty() ? json::value(nullptr) : json::value(cache.variable);
    entry["value"] = cache.variable.empty()
                         ? json::value(nullptr)
                         : json::value(caches::value_of(*plan, cache, cow ? &*cow : nullptr));
    tools.emplace_back(std::move(entry));
  }
  out["tools"] = std::move(tools);
  out["credentials_denied"] = string_array(plan->credentials_denied);
  out["notes"] = string_array(plan->notes);
  return out;
}

}  // namespace

std::string cache_list_to_json(const std::string& base,
                               const std::vector<caches::ProjectCache>& projects) {
  json::array list;
  for (const caches::ProjectCache& one : projects) {
    json::object entry;
    entry["project"] = one.project.empty() ? json::value(nullptr) : json::value(one.project);
    entry["project_exists"] = one.project_exists;
    entry["key"] = one.key;
    entry["directory"] = one.directory;
    entry["bytes"] = one.bytes;
    entry["files"] = one.files;
    list.emplace_back(std::move(entry));
  }
  json::object out;
  out["base"] = base;
  out["projects"] = std::move(list);
  return report::render_json(out, JsonStyle::kPretty);
}

std::string_view to_string(AttackResult result) {
  switch (result) {
    case AttackResult::kPass:
      return "pass";
    case AttackResult::kFail:
      return "fail";
    case AttackResult::kInconclusive:
      return "inconclusive";
  }
  return "fail";
}

std::string_view to_string(VerifyStatus status) {
  switch (status) {
    case VerifyStatus::kVerified:
      return "verified";
    case VerifyStatus::kFailed:
      return "failed";
    case VerifyStatus::kInconclusive:
      return "inconclusive";
    case VerifyStatus::kNotDeclared:
      return "not_declared";
  }
  return "failed";
}

std::string verify_report_to_json(const VerifyReport& report) {
  json::array capabilities;
  for (const VerifyCapability& one : report.capabilities) {
    json::array attacks;
    for (const VerifyAttack& attack : one.attacks) {
      json::object item;
      item["attack"] = attack.name;
      item["command"] = attack.command;
      item["expected"] = attack.expected;
      item["observed"] = attack.observed;
      item["result"] = std::string(to_string(attack.result));
      attacks.emplace_back(std::move(item));
    }
    json::object entry;
    entry["capability"] = std::string(to_string(one.capability));
    entry["status"] = std::string(to_string(one.status));
    entry["policy"] = one.policy.empty() ? json::value(nullptr) : json::value(one.policy);
    entry["attacks"] = std::move(attacks);
    capabilities.emplace_back(std::move(entry));
  }
  json::object out;
  out["backend"] = report.backend;
  out["version"] = report.version;
  out["available"] = report.available;
  out["summary"] = report.summary;
  out["declared"] = string_array(capability_names(report.declared));
  out["verified"] = report.verified;
  out["capabilities"] = std::move(capabilities);
  return report::render_json(out, JsonStyle::kPretty);
}

std::string explain_to_json(const ExplainReport& report, JsonStyle style) {
  json::object out;
  out["preference"] = std::string(to_string(report.preference));
  out["should_sandbox"] =
      report.decision ? json::value(report.decision->sandbox) : json::value(nullptr);
  out["reason"] = report.decision ? report.decision->reason : report.decision_error;
  out["required_capabilities"] = string_array(capability_names(report.required));
  out["available_backend"] = optional_string(report.choice.backend);
  out["available_reason"] = report.choice.reason;
  out["final"] = final_backend(report);
  json::array passed;
  for (const PassedOver& item : report.choice.passed_over) {
    json::object entry;
    entry["backend"] = item.backend;
    entry["reason"] = item.reason;
    passed.emplace_back(std::move(entry));
  }
  out["passed_over"] = std::move(passed);
  out["policy"] = resolved_json(report.policy);
  out["network_limits"] = string_array(explained_network_limits(report));
  out["cgroups"] = cgroups_json(report.cgroups);
  json::array limits;
  for (const LimitEnforcement& limit : report.limits) {
    json::object entry;
    entry["name"] = limit.name;
    entry["value"] = limit.value ? json::value(*limit.value) : json::value(nullptr);
    entry["enforced"] = limit.enforced;
    entry["best_effort"] = limit.best_effort;
    entry["how"] = limit.how;
    limits.emplace_back(std::move(entry));
  }
  out["limits"] = std::move(limits);
  json::object environment;
  environment["inherit"] = std::string(to_string(report.environment.inherit));
  environment["keep"] = string_array(report.environment.keep);
  environment["exclude"] = string_array(report.environment.exclude);
  environment["include_only"] = string_array(report.environment.include_only);
  std::vector<std::string> set_names;
  for (const auto& [name, value] : report.environment.set) set_names.push_back(name);
  environment["set"] = string_array(set_names);
  environment["removed"] = string_array(report.environment_removed);
  out["environment"] = std::move(environment);
  json::object settings;
  settings["policy_scope"] = report.settings.policy_scope;
  settings["sandbox_scope"] = report.settings.sandbox_scope;
  settings["unsandboxed_permitted"] = report.settings.unsandboxed_permitted;
  settings["escape_hatch_locked"] = report.settings.escape_hatch_locked;
  settings["require_backend_available"] = report.settings.require_backend_available;
  settings["excluded_commands"] = string_array(report.settings.excluded_commands);
  settings["notes"] = string_array(report.settings.notes);
  settings["ignored_project_files"] = string_array(report.settings.ignored_project_files);
  settings["backend_order"] = string_array(report.settings.backend_order);
  settings["backend_order_scope"] = report.settings.backend_order_scope;
  settings["plugin_dirs"] = string_array(report.settings.plugin_dirs);
  out["settings"] = std::move(settings);
  out["excluded_by"] = string_array(report.excluded_by);
  out["environment_dropped"] = string_array(report.environment_dropped);
  out["caches"] = caches_json(report.caches, report.copy_on_write);
  return report::render_json(out, style);
}

std::string plan_to_json(const std::optional<std::string>& backend, const ExecPlan& plan,
                         JsonStyle style) {
  json::object out;
  out["backend"] = optional_string(backend);
  out["argv"] = string_array(plan.argv);
  out["env"] = string_array(plan.env);
  out["cwd"] = plan.cwd;
  out["notes"] = string_array(plan.notes);
  json::object host_paths;
  host_paths["created"] = string_array(plan.host_paths.created);
  host_paths["kept"] = string_array(plan.host_paths.kept);
  host_paths["state_dir"] = plan.host_paths.state_dir;
  out["host_paths"] = std::move(host_paths);
  // Null unless the backend's detail gives it (the windows backend's token and ACL plan): the
  // key stays for readers of the plan JSON of ABI 1.x, where it was a shared field.
  out["windows"] = nullptr;
  add_detail_members(plan, out);
  return report::render_json(out, style);
}

std::string run_to_json(const RunReport& report, JsonStyle style) {
  return report::render_json(report::run_object(report), style);
}

std::string exec_report_to_json(const RunReport& report, ExecReportKeys keys) {
  json::object out = report::run_object(report);
  if (report.exit) {
    // A named string: FailedCommand holds a view of it.
    const std::string tail = report.stderr_tail.value_or("");
    out["denial"] = report::denial_object(
        classify_failure(FailedCommand{*report.exit, tail, report.final.value_or("none")}));
  } else {
    out["denial"] = nullptr;
  }
  if (keys == ExecReportKeys::kWithStderrTail) {
    out["stderr_tail"] = optional_string(report.stderr_tail);
    // What a capture kept and dropped (the bytes themselves are the C API's: sbx_run_output).
    const auto capture = [](const std::optional<RunReport::Capture>& captured) -> json::value {
      if (!captured) return nullptr;
      json::object item;
      item["bytes"] = captured->bytes;
      item["dropped_bytes"] = captured->dropped_bytes;
      item["truncated"] = captured->dropped_bytes > 0;
      return item;
    };
    out["stdout_capture"] = capture(report.stdout_capture);
    out["stderr_capture"] = capture(report.stderr_capture);
  }
  json::array refusals = report::refusals_array(report.network_refusals.proxy.entries);
  for (const BackendRefusal& refusal : report.network_refusals.backend.entries) {
    json::object item;
    item["kind"] = refusal.kind;
    // The path or address came from the command: render_json escapes it like the host names.
    item[refusal.kind == "unix" ? "path" : "address"] = refusal.address;
    refusals.push_back(std::move(item));
  }
  out["network_refusals"] = std::move(refusals);
  out["network_refusals_total"] =
      report.network_refusals.proxy.total + report.network_refusals.backend.total;
  // render_json makes every string valid UTF-8: the stderr tail and refused host names came
  // from the command.
  return report::render_json(std::move(out), JsonStyle::kCompact);
}

std::string resolved_policy_to_json(const ResolvedPolicy& policy, JsonStyle style) {
  return report::render_json(resolved_json(policy), style);
}

namespace report {

boost::json::object run_object(const RunReport& report) {
  json::object out;
  out["should_sandbox"] =
      report.should_sandbox ? json::value(*report.should_sandbox) : json::value(nullptr);
  out["reason"] = report.reason;
  out["backend"] = optional_string(report.backend);
  out["final"] = report.final.value_or("none");
  out["allow_unsandboxed_used"] = report.allow_unsandboxed_used;
  out["dry_run"] = report.dry_run;
  out["exit"] = exit_json(report.exit);
  out["error"] = report.error.empty() ? json::value(nullptr) : json::value(report.error);
  out["error_kind"] = report.error.empty()
                          ? json::value(nullptr)
                          : json::value(std::string(error_kind_name(report.error_kind)));
  json::array created;
  for (const std::string& path : report.protected_names_created) created.emplace_back(path);
  out["protected_names_created"] = std::move(created);
  out["protected_names_truncated"] = report.protected_names_truncated;
  out["protected_names_unreadable"] = string_array(report.protected_names_unreadable);
  out["limit_hit"] = optional_string(report.limit_hit);
  out["excluded_by"] = string_array(report.excluded_by);
  out["environment_dropped"] = string_array(report.environment_dropped);
  return out;
}

boost::json::array refusals_array(const std::vector<proxy::Refusal>& refusals) {
  json::array out;
  for (const proxy::Refusal& refusal : refusals) {
    json::object item;
    item["kind"] = "proxy";
    // The host came from the sandboxed command; render_json makes every string valid UTF-8 and
    // escapes what could break a line.
    item["host"] = refusal.host.empty() ? json::value(nullptr) : json::value(refusal.host);
    item["port"] = refusal.port;
    item["protocol"] = refusal.protocol;
    item["rule"] = refusal.rule;
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace report

std::string approval_to_json(const Approval& approval) {
  json::object out;
  out["recorded"] = approval.policy.has_value();
  out["policy"] =
      approval.policy ? json::value(policy::policy_json(*approval.policy)) : json::value(nullptr);
  json::array dropped;
  // The dropped lines quote policy paths: render_json escapes them like every report.
  for (const std::string& line : approval.dropped) dropped.emplace_back(line);
  out["dropped"] = std::move(dropped);
  return report::render_json_short_inline(std::move(out));
}

}  // namespace sbx
