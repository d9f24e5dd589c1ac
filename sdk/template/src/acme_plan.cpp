// The template backend's mapping (acme_plan.hpp). Each refusal names the rule and what this
// backend lacks: a backend never runs a command under less than the policy asks for.
#include "acme_plan.hpp"

#include <algorithm>

namespace acme {
namespace {

using sbx::Access;
using sbx::Error;
using sbx::Result;

sbx::Status check_filesystem(const sbx::ResolvedPolicy& policy) {
  if (policy.filesystem_kind != sbx::FilesystemKind::kRestricted)
    return Error{
        "acme enforces a restricted filesystem only; this policy's filesystem is "
        "unrestricted or external"};
  if (sbx::rule_access(policy, "/") == Access::kDeny)
    return Error{"acme cannot restrict reads (read_restriction): no rule grants reading '/'"};
  const std::vector<std::string> roots = sbx::writable_roots(policy);
  for (const sbx::PathRule& rule : policy.rules) {
    if (rule.access == Access::kDeny)
      return Error{"acme cannot deny a path (read_carveouts): '" + rule.path + "' is denied"};
    if (rule.access != Access::kRead) continue;
    for (const std::string& root : roots) {
      if (rule.path != root && sbx::path_is_within(rule.path, root))
        return Error{"acme cannot keep '" + rule.path + "' read-only inside the writable root '" +
                     root + "' (write_carveouts)"};
    }
  }
  if (!policy.protected_paths.empty())
    return Error{"acme cannot keep protected names (protected_names): '" +
                 policy.protected_paths.front().path + "'"};
  if (!policy.deny_globs.empty())
    return Error{"acme cannot deny globs (deny_globs): '" + policy.deny_globs.front() + "'"};
  return {};
}

sbx::Status check_network(const sbx::NetworkPolicy& network) {
  if (network.mode != sbx::NetworkMode::kRestricted)
    return Error{std::string("acme blocks the network and nothing else (network_block); this ") +
                 "policy's network mode is " +
                 (network.mode == sbx::NetworkMode::kProxy ? "proxy" : "enabled")};
  if (!network.unix_sockets.empty())
    return Error{"acme cannot allow a host unix socket (unix_socket_allowlist): '" +
                 network.unix_sockets.front() + "'"};
  if (network.allow_local_binding)
    return Error{"acme cannot let a command listen on local ports (local_binding)"};
  return {};
}

}  // namespace

Result<sbx::ExecPlan> make_plan(const sbx::TransformRequest& request, std::string_view stage2,
                                const std::vector<std::string>& root_entries) {
  if (stage2.empty() || stage2.front() != '/')
    return Error{"acme needs the host's sbx-stage2, and this host offers none"};
  if (request.argv.empty() || request.argv.front().empty() || request.argv.front()[0] != '/')
    return Error{"acme: the command must be an absolute path"};
  if (!request.cache_overlays.empty())
    return Error{"acme does not mount toolchain caches copy-on-write"};
  if (sbx::Status fs = check_filesystem(request.policy); !fs.ok()) return fs.failure();
  if (sbx::Status net = check_network(request.policy.network); !net.ok()) return net.failure();

  sbx::ExecPlan plan;
  // Landlock ABI 1 (Linux 5.13) has every right this mapping uses; sbx-stage2 handles all the
  // rights the running kernel knows, so a newer kernel only restricts more.
  plan.argv = {std::string(stage2), "--landlock", "1", "--ll-fs", "restricted", "--ll-list", "/"};
  std::vector<std::string> entries = root_entries;
  std::sort(entries.begin(), entries.end());  // the same plan from both transform() calls
  for (const std::string& name : entries) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
      continue;
    if (name == "dev") {
      plan.argv.insert(plan.argv.end(), {"--ll-list", "/dev"});
      continue;
    }
    plan.argv.insert(plan.argv.end(), {"--ll-read", "/" + name});
  }
  for (const std::string& device : kDevices)
    plan.argv.insert(plan.argv.end(), {"--ll-dev", device});
  for (const std::string& root : sbx::writable_roots(request.policy))
    plan.argv.insert(plan.argv.end(), {"--ll-write", root});
  plan.argv.insert(plan.argv.end(), {"--net", "blocked", "--"});
  plan.argv.insert(plan.argv.end(), request.argv.begin(), request.argv.end());
  plan.env = request.env;
  plan.cwd = request.cwd;
  plan.notes.push_back("acme: Landlock and sbx's syscall filter through sbx-stage2; no network");
  return plan;
}

}  // namespace acme
