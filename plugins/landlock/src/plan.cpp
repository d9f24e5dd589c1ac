// The typed plan's way to exec() (plan.hpp).
#include "sbx/landlock/plan.hpp"

#include <string_view>

namespace sbx::landlock {
namespace {

// A JSON string literal: quotes, backslashes and control characters escaped (RFC 8259, 7).
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i != 0 ? "," : "") + json_string(items[i]);
  return out + "]";
}

std::string json_bool(bool value) { return value ? "true" : "false"; }

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
  return "{\"argv\":" + json_strings(plan_argv(stage2_path, plan)) +
         ",\"launch\":{\"min_abi\":" + std::to_string(spec.min_abi) +
         ",\"restrict_filesystem\":" + json_bool(spec.restrict_filesystem) +
         ",\"read\":" + json_strings(spec.read) + ",\"write\":" + json_strings(spec.write) +
         ",\"dev\":" + json_strings(spec.dev) + ",\"list\":" + json_strings(spec.list) +
         ",\"scope_abstract_unix\":" + json_bool(spec.scope_abstract_unix) +
         ",\"block_tcp\":" + json_bool(spec.block_tcp) + ",\"connect_tcp_ports\":" + ports_json +
         ",\"network\":" + json_string(network_name(launch.network)) +
         ",\"proxy_port\":" + std::to_string(launch.proxy_port) +
         ",\"env_environ\":" + json_bool(launch.env_environ) +
         ",\"command\":" + json_strings(launch.command) +
         "},\"environment\":" + json_strings(names) + "}";
}

}  // namespace sbx::landlock
