// See translate.hpp. Why refusal is the rule here: a Landlock ruleset is a union of "allow
// beneath PATH" grants, so the only policies it expresses exactly are those where no narrower
// rule takes away access a wider one grants. Everything else would be enforced more weakly
// than written, which the backend must never do silently (plugins/landlock/README.md).
#include "sbx/landlock/translate.hpp"

#include <string_view>

namespace sbx::landlock {
namespace {

constexpr int kAbiTruncate = 3;  // write restriction is incomplete without TRUNCATE
constexpr int kAbiNetwork = 4;   // TCP bind/connect rules

int strength(Access access) {
  switch (access) {
    case Access::kDeny: return 0;
    case Access::kRead: return 1;
    case Access::kWrite: return 2;
  }
  return 0;
}

std::string_view access_name(Access access) {
  switch (access) {
    case Access::kDeny: return "deny";
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
  }
  return "unknown";
}

// The nearest rule strictly above `path`, or nullptr.
const PathRule* nearest_ancestor(const ResolvedPolicy& policy, const std::string& path) {
  const PathRule* best = nullptr;
  for (const PathRule& rule : policy.rules) {
    if (rule.path == path || !path_is_within(path, rule.path)) continue;
    if (best == nullptr || rule.path.size() > best->path.size()) best = &rule;
  }
  return best;
}

std::string carveout(const ResolvedPolicy& policy) {
  for (const PathRule& inner : policy.rules) {
    const PathRule* outer = nearest_ancestor(policy, inner.path);
    if (outer == nullptr || strength(inner.access) >= strength(outer->access)) continue;
    const char* what = outer->access == Access::kWrite ? "write_carveouts" : "read_carveouts";
    return std::string(what) + ": '" + inner.path + "' (" + std::string(access_name(inner.access)) +
           ") inside '" + outer->path + "' (" + std::string(access_name(outer->access)) +
           "): Landlock cannot take access away inside a tree it allows";
  }
  return {};
}

std::string filesystem_rule(const ResolvedPolicy& policy) {
  if (policy.filesystem_kind != FilesystemKind::kRestricted) return {};
  if (!policy.protected_paths.empty()) {
    const ProtectedPath& p = policy.protected_paths.front();
    return "protected_names: protected path '" + p.path + "' (" +
           (p.exists ? "exists" : "missing") + ") under writable root '" + p.writable_root +
           "': Landlock cannot keep a path inside a writable root read-only or uncreatable";
  }
  if (!policy.deny_globs.empty())
    return "deny_globs: deny glob '" + policy.deny_globs.front() +
           "': Landlock cannot deny paths inside a tree it allows";
  return carveout(policy);
}

bool restricted_filesystem(const ResolvedPolicy& policy) {
  return policy.filesystem_kind == FilesystemKind::kRestricted;
}

// Landlock cannot take /dev/pts out of a read rule that covers it (e.g. `:root`).
bool reads_host_terminals(const ResolvedPolicy& policy) {
  if (!restricted_filesystem(policy)) return false;  // everything is open: nothing to add
  for (const PathRule& rule : policy.rules) {
    if (rule.access != Access::kDeny && path_is_within("/dev/pts", rule.path)) return true;
  }
  return false;
}

void add(Translation& t, const std::string& kind, const std::string& path) {
  t.argv.push_back("--ll-" + kind);
  t.argv.push_back(path);
  t.rules.push_back({kind, path});
}

void add_filesystem(const ResolvedPolicy& policy, Translation& t) {
  const bool restricted = policy.filesystem_kind == FilesystemKind::kRestricted;
  t.argv.insert(t.argv.end(), {"--ll-fs", restricted ? "restricted" : "unrestricted"});
  if (!restricted) return;
  t.min_abi = kAbiTruncate;
  // Deny rules add nothing: with no carve-out (checked), a deny rule is never inside a grant.
  for (const PathRule& rule : policy.rules) {
    if (rule.access != Access::kDeny) add(t, rule.access == Access::kWrite ? "write" : "read", rule.path);
  }
  if (policy.platform_defaults_readable) {
    for (const std::string& path : minimal_paths()) add(t, "read", path);
  }
  for (const std::string& path : device_paths()) add(t, "dev", path);
}

}  // namespace

const std::vector<std::string>& minimal_paths() {
  static const std::vector<std::string> kPaths = {"/bin",   "/etc",    "/lib", "/lib32",
                                                  "/lib64", "/libx32", "/sbin", "/usr"};
  return kPaths;
}

const std::vector<std::string>& device_paths() {
  // /dev/ptmx: opening it only allocates a new pseudo-terminal pair. The peer (/dev/pts/N)
  // is not granted: stage 2's supervisor opens it for the holder of the master
  // (ioctl TIOCGPTPEER, core/stage2/metadata_notify.hpp), so other terminals stay closed.
  static const std::vector<std::string> kPaths = {"/dev/null",   "/dev/zero",    "/dev/full",
                                                  "/dev/random", "/dev/urandom", "/dev/tty",
                                                  "/dev/ptmx"};
  return kPaths;
}

std::string unenforceable_rule(const ResolvedPolicy& policy) {
  if (policy.network.mode != NetworkMode::kEnabled && !policy.network.unix_sockets.empty())
    return "unix_socket_allowlist: unix socket '" + policy.network.unix_sockets.front() +
           "' allowed: the seccomp filter blocks every socket when the network is restricted";
  return filesystem_rule(policy);
}

Result<Translation> translate(const TransformRequest& request, const std::string& stage2_path) {
  if (stage2_path.empty() || stage2_path.front() != '/')
    return Error{"landlock: no trusted sbx-stage2 helper (see `sbx backends --probe`)"};
  if (request.argv.empty() || request.argv.front().empty() || request.argv.front()[0] != '/')
    return Error{"landlock: the command must be an absolute path"};
  const std::string rule = unenforceable_rule(request.policy);
  if (!rule.empty()) return Error{"landlock cannot enforce " + rule};
  const NetworkPolicy& network = request.policy.network;
  const bool proxy = network.mode == NetworkMode::kProxy;
  if (proxy && (network.proxy_ports.size() != 1 || network.proxy_ports.front() == 0))
    return Error{"landlock cannot enforce proxy_network: it needs exactly one proxy port in "
                 "network.proxy_ports (sbx exec starts the proxy and sets it)"};
  Translation t;
  t.argv = {stage2_path, "--landlock", "1"};
  add_filesystem(request.policy, t);
  // Restricted and proxy network both need TCP rules (ABI 4); without them nothing would stop
  // a direct connection, so stage 2 refuses to run below that ABI.
  const bool confined = network.mode != NetworkMode::kEnabled;
  if (confined) t.min_abi = kAbiNetwork;
  t.argv[2] = std::to_string(t.min_abi);
  // Restricted and proxy: seccomp already refuses AF_UNIX sockets; scoping also cuts inherited
  // sockets off from abstract unix sockets outside (ABI 6+). Enabled network keeps them.
  t.argv.insert(t.argv.end(), {"--ll-scope-abstract-unix", confined ? "on" : "off", "--net"});
  if (proxy) {
    // TCP connect only to the proxy's port; no bind; the proxy-mode seccomp filter (TCP
    // sockets only, so no UDP, which Landlock does not cover).
    t.argv.insert(t.argv.end(),
                  {"proxy", "--proxy-port", std::to_string(network.proxy_ports.front())});
  } else {
    t.argv.push_back(confined ? "blocked" : "open");
  }
  // The command's environment is stage 2's own, not arguments: arguments are world-readable
  // in /proc while the command runs, an environment holds secrets (core/stage2/env_block.hpp).
  t.argv.push_back("--env-environ");
  t.env = request.env;
  t.argv.push_back("--");
  t.argv.insert(t.argv.end(), request.argv.begin(), request.argv.end());
  t.notes = {
      "landlock: needs Landlock ABI " + std::to_string(t.min_abi) +
          "+ (checked by sbx-stage2 at run time); newer rights are used where the kernel has them",
      "landlock: no namespaces: /proc shows host processes, SysV IPC is shared; signals to "
      "processes outside the sandbox are blocked only on ABI 6+",
      "landlock: descendants left running are killed when the command exits (subreaper)"};
  if (restricted_filesystem(request.policy))
    t.notes.push_back(
        "landlock: chmod, chown, file times and extended attributes are emulated by sbx-stage2's "
        "supervisor and allowed only on files inside the writable roots (Landlock has no right "
        "for them); set-user-ID/set-group-ID modes and chattr flags are refused everywhere. "
        "A file hard-linked into a writable root before the run can still be changed through "
        "that link");
  if (reads_host_terminals(request.policy))
    t.notes.push_back(
        "landlock: a read rule covers /dev/pts, so the command can read (not write) the host's "
        "other terminals of the same user; its own pseudo-terminals come from openpty() "
        "(/dev/ptmx, the peer opened by the supervisor), not from /dev/pts");
  if (proxy)
    t.notes.push_back(
        "landlock: network only through sbx's filtering proxy: TCP connect is allowed to port " +
        std::to_string(network.proxy_ports.front()) +
        " only, but on ANY address (Landlock port rules are not per address): a service "
        "listening on that port elsewhere (another host, or another local address) is "
        "reachable directly. The port is the proxy's ephemeral loopback port, new for each run; "
        "UDP and every non-TCP socket are refused by seccomp. bwrap (an empty network "
        "namespace) has no such gap");
  return t;
}

CapabilitySet capabilities_for_abi(int abi) {
  CapabilitySet caps;
  if (abi < 1) return caps;
  caps.add(Capability::kSyscallFilter);
  if (abi >= kAbiTruncate) {
    caps.add(Capability::kWriteRestriction);
    caps.add(Capability::kReadRestriction);
  }
  if (abi >= kAbiNetwork) {
    caps.add(Capability::kNetworkBlock);
    // TCP connect to the proxy's port only (with the residual gap of translate's note).
    caps.add(Capability::kProxyNetwork);
  }
  return caps;
}

}  // namespace sbx::landlock
