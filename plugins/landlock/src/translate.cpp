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

constexpr std::string_view kDev = "/dev";
constexpr std::string_view kTerminals = "/dev/pts";

bool is_grant(const PathRule& rule) { return rule.access != Access::kDeny; }

// A grant on / or /dev itself: inherited beneath, it would open every device node.
bool covers_dev(const PathRule& rule) { return is_grant(rule) && path_is_within(kDev, rule.path); }

// Reading a terminal under /dev/pts consumes what is typed there: only an entry the policy
// names beneath /dev can grant it now (rules on / and /dev are split), so say so.
bool reads_host_terminals(const Translation& t) {
  for (const RuleLine& rule : t.rules) {
    if (rule.kind != "read" && rule.kind != "write") continue;
    if (path_is_within(rule.path, kTerminals) || path_is_within(kTerminals, rule.path)) return true;
  }
  return false;
}

void add(Translation& t, const std::string& kind, const std::string& path) {
  t.argv.push_back("--ll-" + kind);
  t.argv.push_back(path);
  t.rules.push_back({kind, path});
}

// An entry of / that gets the root rule's right. /dev never does (that is the point). Symlinks
// are skipped: Landlock would attach the rule to the target, which lies either in another entry
// of / (granted on its own: /bin -> usr/bin) or beneath /dev (never to be granted through it).
bool granted_root_entry(const RootEntry& entry) {
  if (entry.symlink) return false;
  if (entry.name.empty() || entry.name == "." || entry.name == ".." ||
      entry.name.find('/') != std::string::npos)
    return false;
  return "/" + entry.name != kDev;
}

// The rule on / as Landlock may grant it: its right on each entry but /dev, listing on /.
void add_root_split(const std::string& kind, const HostFacts& facts, Translation& t) {
  add(t, "list", "/");
  for (const RootEntry& entry : facts.root_entries) {
    if (granted_root_entry(entry)) add(t, kind, "/" + entry.name);
  }
}

std::string rule_kind(const PathRule& rule) {
  return rule.access == Access::kWrite ? "write" : "read";
}

Status add_filesystem(const ResolvedPolicy& policy, const HostFacts& facts, Translation& t) {
  const bool restricted = policy.filesystem_kind == FilesystemKind::kRestricted;
  t.argv.insert(t.argv.end(), {"--ll-fs", restricted ? "restricted" : "unrestricted"});
  if (!restricted) return {};
  t.min_abi = kAbiTruncate;
  if (needs_root_entries(policy) && !facts.root_listed)
    return Error{"landlock: cannot grant / without /dev: listing / failed: " + facts.root_error};
  bool dev_split = false;
  // Deny rules add nothing: with no carve-out (checked), a deny rule is never inside a grant.
  for (const PathRule& rule : policy.rules) {
    if (!is_grant(rule)) continue;
    if (!covers_dev(rule)) {
      add(t, rule_kind(rule), rule.path);
      continue;
    }
    dev_split = true;
    // A rule on /dev itself only lists it (below): its device files are the allow-list's.
    if (rule.path == "/") add_root_split(rule_kind(rule), facts, t);
  }
  if (dev_split) add(t, "list", std::string(kDev));
  if (policy.platform_defaults_readable) {
    for (const std::string& path : minimal_paths()) add(t, "read", path);
  }
  for (const std::string& path : device_paths()) add(t, "dev", path);
  return {};
}

void add_dev_notes(const ResolvedPolicy& policy, Translation& t) {
  if (!needs_root_entries(policy)) return;
  std::string devices;
  for (const std::string& path : device_paths()) devices += (devices.empty() ? "" : ", ") + path;
  std::string note =
      "landlock: /dev is never granted whole (Landlock rights reach everything beneath a rule, "
      "so a rule on / would open raw disks and the host's other terminals): a rule on / is "
      "applied to each entry of / except /dev, as listed when the plan was made (an entry "
      "added to / later is not reachable; a top-level symlink is reached through its target), "
      "/ and /dev can be listed, and the device files are " +
      devices + " plus entries beneath /dev the policy names itself";
  for (const PathRule& rule : policy.rules) {
    if (!covers_dev(rule)) continue;
    if (rule.path == "/" && rule.access == Access::kWrite)
      note += "; narrower than written: nothing can be created, renamed or removed directly in /";
    if (rule.path == kDev) note += "; narrower than written: the rule on /dev only lists it";
  }
  t.notes.push_back(note);
}

}  // namespace

bool needs_root_entries(const ResolvedPolicy& policy) {
  if (policy.filesystem_kind != FilesystemKind::kRestricted) return false;
  for (const PathRule& rule : policy.rules) {
    if (covers_dev(rule)) return true;
  }
  return false;
}

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

Result<Translation> translate(const TransformRequest& request, const HostFacts& facts) {
  const std::string& stage2_path = facts.stage2_path;
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
  Status filesystem = add_filesystem(request.policy, facts, t);
  if (!filesystem.ok()) return Error{filesystem.error()};
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
  add_dev_notes(request.policy, t);
  if (reads_host_terminals(t))
    t.notes.push_back(
        "landlock: the policy names /dev/pts itself, so the command can read (with a write "
        "entry also type into) the host's other terminals of the same user (as root: every "
        "terminal), consuming what is typed there; "
        "its own pseudo-terminals come from openpty() (/dev/ptmx, the peer opened by the "
        "supervisor) and need no such entry");
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
