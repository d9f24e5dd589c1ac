// The typed plan's way to exec() (plan.hpp).
#include "sbx/landlock/plan.hpp"

#include <string_view>

#include "sbx/sdk/plan_json.hpp"

namespace sbx::landlock {
namespace {

std::string_view network_name(stage2::NetworkFilter network) {
  switch (network) {
    case stage2::NetworkFilter::kBlocked:
      return "blocked";
    case stage2::NetworkFilter::kOpen:
      return "open";
    case stage2::NetworkFilter::kProxy:
      return "proxy";
    default:
      return "other";  // never made by launch_of (nor by parse_landlock_argv)
  }
}

}  // namespace

const LandlockPlan* landlock_plan_of(const ExecPlan& plan) {
  // Only this backend's own detail class: a plan made elsewhere has none (fail closed).
  const auto* detail = dynamic_cast<const LandlockPlanDetail*>(plan.detail.get());
  return detail != nullptr ? &detail->plan() : nullptr;
}

Result<stage2::LandlockLaunch> launch_of(const LandlockPlan& plan) {
  stage2::LandlockLaunch launch;
  stage2::LandlockSpec& spec = launch.landlock;
  spec.enabled = true;
  spec.min_abi = plan.min_abi;
  spec.restrict_filesystem = plan.restrict_filesystem;
  spec.scope_abstract_unix = plan.scope_abstract_unix;
  for (const RuleLine& rule : plan.rules) {
    if (rule.path.empty() || rule.path.front() != '/')
      return Error{"--ll-" + rule.kind + " expects an absolute path, got '" + rule.path + "'"};
    if (rule.kind == "read") {
      spec.read.push_back(rule.path);
    } else if (rule.kind == "write") {
      spec.write.push_back(rule.path);
    } else if (rule.kind == "dev") {
      spec.dev.push_back(rule.path);
    } else if (rule.kind == "list") {
      spec.list.push_back(rule.path);
    } else {
      return Error{"unknown rule kind '" + rule.kind + "' in Landlock mode"};
    }
  }
  switch (plan.network) {
    case Network::kBlocked:
      launch.network = stage2::NetworkFilter::kBlocked;
      break;
    case Network::kOpen:
      launch.network = stage2::NetworkFilter::kOpen;
      break;
    case Network::kProxy:
      launch.network = stage2::NetworkFilter::kProxy;
      break;
  }
  if ((plan.network == Network::kProxy) != (plan.proxy_port != 0))
    return Error{"--net proxy and --proxy-port go together"};
  launch.proxy_port = plan.proxy_port;
  // The command's environment is the caller's (exec() passes the plan's env to the launcher).
  launch.env_environ = true;
  if (plan.command.empty()) return Error{"no command after '--'"};
  if (plan.command.front().empty() || plan.command.front().front() != '/')
    return Error{"the command must be an absolute path, got '" + plan.command.front() + "'"};
  launch.command = plan.command;
  // Restricted: no TCP at all. Proxy: connect() only to the proxy's port (as
  // parse_landlock_argv sets them from --net and --proxy-port).
  spec.block_tcp = launch.network != stage2::NetworkFilter::kOpen;
  if (launch.network == stage2::NetworkFilter::kProxy) spec.connect_tcp_ports = {plan.proxy_port};
  return launch;
}

std::string launch_record_json(const std::string& stage2_path, const LandlockPlan& plan,
                               const stage2::LandlockLaunch& launch,
                               const std::vector<std::string>& env) {
  const stage2::LandlockSpec& spec = launch.landlock;
  std::vector<std::string> ports;
  for (const std::uint16_t port : spec.connect_tcp_ports) ports.push_back(std::to_string(port));
  std::string ports_json = "[";
  for (std::size_t i = 0; i < ports.size(); ++i) ports_json += (i != 0 ? "," : "") + ports[i];
  ports_json += "]";
  std::vector<std::string> names;
  names.reserve(env.size());
  for (const std::string& entry : env) names.push_back(entry.substr(0, entry.find('=')));
  return "{\"argv\":" + plan_json::strings(plan_argv(stage2_path, plan)) +
         ",\"launch\":{\"min_abi\":" + std::to_string(spec.min_abi) +
         ",\"restrict_filesystem\":" + plan_json::boolean(spec.restrict_filesystem) +
         ",\"read\":" + plan_json::strings(spec.read) +
         ",\"write\":" + plan_json::strings(spec.write) +
         ",\"dev\":" + plan_json::strings(spec.dev) + ",\"list\":" + plan_json::strings(spec.list) +
         ",\"scope_abstract_unix\":" + plan_json::boolean(spec.scope_abstract_unix) +
         ",\"block_tcp\":" + plan_json::boolean(spec.block_tcp) +
         ",\"connect_tcp_ports\":" + ports_json +
         ",\"network\":" + plan_json::string(network_name(launch.network)) +
         ",\"proxy_port\":" + std::to_string(launch.proxy_port) +
         ",\"env_environ\":" + plan_json::boolean(launch.env_environ) +
         ",\"command\":" + plan_json::strings(launch.command) +
         "},\"environment\":" + plan_json::strings(names) + "}";
}

}  // namespace sbx::landlock
