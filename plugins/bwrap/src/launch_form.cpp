// Which launch exec() takes and what it starts (launch_form.hpp).
#include "sbx/bwrap/launch_form.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "launch.hpp"
#include "sbx/bwrap/spawn.hpp"
#include "sbx/sdk/plan_json.hpp"
#include "write_layer.hpp"

namespace sbx::bwrap {
namespace {

std::string name_of(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// The --args block's items without the --setenv triples (bwrap's own options never hold
// --setenv: the environment is set only right after --clearenv, direct_args_block).
std::vector<std::string> without_environment(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--setenv" && i + 2 < args.size()) {
      i += 2;
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

}  // namespace

LaunchHost running_launch_host() {
  // landlock_create_ruleset(2) with LANDLOCK_CREATE_RULESET_VERSION: the ABI, or -1 without it.
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u << 0);
  return {launch::direct_launch_supported(), abi >= stage2::kWriteLayerMinAbi};
}

std::optional<DirectPlan> direct_launch_of(const BwrapPlan& plan, const LaunchHost& host) {
  if (!host.direct_supported) return std::nullopt;
  return direct_plan(plan, host.write_layer_supported);
}

UnixSocketRules unix_socket_rules(const BwrapPlan& plan) {
  UnixSocketRules rules;
  // bwrap gets --unshare-net exactly when stage 2's filter is not the open one (translate.cpp).
  rules.private_network = plan.net != Stage2Net::kOpen;
  if (plan.net == Stage2Net::kProxy) rules.allowed_paths.push_back(plan.proxy_socket);
  rules.allowed_paths.insert(rules.allowed_paths.end(), plan.unix_sockets.begin(),
                             plan.unix_sockets.end());
  rules.launcher = plan.bwrap;
  return rules;
}

std::vector<std::string> stage2_launch_options(const BwrapPlan& plan) {
  std::vector<std::string> out = plan.options;
  out.insert(out.end(), {"--chdir", plan.chdir});
  return out;
}

bool has_proc_mount(const std::vector<std::string>& options) {
  return std::find(options.begin(), options.end(), "--proc") != options.end();
}

std::vector<std::string> stage2_launch_argv(const BwrapPlan& plan,
                                            const std::vector<std::string>& options) {
  std::vector<std::string> out = {plan.bwrap, "--info-fd", std::to_string(kInfoFd)};
  out.insert(out.end(), options.begin(), options.end());
  out.insert(out.end(),
             {"--", plan.stage2, "--ready-fd", std::to_string(kReadyFd), kUnixSupervisedOption});
  // The mount list needs a procfs inside (stage 2 reads /proc/self/mountinfo); with the
  // empty-/proc fallback there is none, and only the descriptors guard the binds.
  if (has_proc_mount(options)) out.insert(out.end(), {"--mounts-fd", std::to_string(kMountsFd)});
  if (!plan.env.empty()) out.insert(out.end(), {"--env-fd", std::to_string(kEnvFd)});
  const std::vector<std::string> arguments = stage2_arguments(plan);
  out.insert(out.end(), arguments.begin(), arguments.end());
  out.emplace_back("--");
  out.insert(out.end(), plan.command.begin(), plan.command.end());
  return out;
}

Result<Launch> planned_launch(const BwrapPlan& plan, const LaunchHost& host) {
  Launch launch;
  launch.env = plan.env;
  if (const std::optional<DirectPlan> direct = direct_launch_of(plan, host)) {
    Result<std::string> block = direct_args_block(*direct);
    if (!block.ok()) return block.failure();
    launch.form = LaunchForm::kDirect;
    launch.argv = direct_argv(*direct);
    launch.args = split_args_block(*block);
    return launch;
  }
  launch.argv = stage2_launch_argv(plan, stage2_launch_options(plan));
  return launch;
}

std::string launch_json(const Launch& launch,
                        const std::vector<std::pair<int, std::string>>& bind_sources) {
  std::vector<std::string> names;
  names.reserve(launch.env.size());
  for (const std::string& entry : launch.env) names.push_back(name_of(entry));
  std::string out = "{\"form\":";
  out += plan_json::string(launch.form == LaunchForm::kDirect ? "direct" : "stage2");
  out += ",\"argv\":" + plan_json::strings(launch.argv);
  out += ",\"args\":" + plan_json::strings(without_environment(launch.args));
  out += ",\"environment\":" + plan_json::strings(names);
  if (!bind_sources.empty()) {
    out += ",\"bind_sources\":{";
    for (std::size_t i = 0; i < bind_sources.size(); ++i)
      out += (i != 0 ? "," : "") + plan_json::string(std::to_string(bind_sources[i].first)) + ":" +
             plan_json::string(bind_sources[i].second);
    out += "}";
  }
  return out + "}";
}

}  // namespace sbx::bwrap
