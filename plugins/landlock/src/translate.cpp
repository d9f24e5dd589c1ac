// See translate.hpp. Why refusal is the rule here: a Landlock ruleset is a union of "allow
// beneath PATH" grants, so the only policies it expresses exactly are those where no narrower
// rule takes away access a wider one grants. Everything else would be enforced more weakly
// than written, which the backend must never do silently (plugins/landlock/README.md).
#include "sbx/landlock/translate.hpp"

#include <algorithm>
#include <string_view>

namespace sbx::landlock {
namespace {

constexpr int kAbiTruncate = 3;  // write restriction is incomplete without TRUNCATE
constexpr int kAbiNetwork = 4;   // TCP bind/connect rules
constexpr int kAbiScope = 6;     // abstract unix socket and signal scoping

int strength(Access access) {
  switch (access) {
    case Access::kDeny:
      return 0;
    case Access::kRead:
      return 1;
    case Access::kWrite:
      return 2;
  }
  return 0;
}

std::string_view access_name(Access access) {
  switch (access) {
    case Access::kDeny:
      return "deny";
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
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

std::string rule_kind(const PathRule& rule) {
  return rule.access == Access::kWrite ? "write" : "read";
}

// True if a grant on `path` would reach a closed path (or is one).
bool covers_closed(const std::vector<std::string>& closed, const std::string& path) {
  return std::any_of(closed.begin(), closed.end(),
                     [&](const std::string& c) { return path_is_within(c, path); });
}

bool is_closed(const std::vector<std::string>& closed, const std::string& path) {
  return std::find(closed.begin(), closed.end(), path) != closed.end();
}

std::string child_of(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// Reading a terminal under /dev/pts consumes what is typed there: only an entry the policy
// names beneath /dev can grant it now (rules over /dev are split), so say so.
bool reads_host_terminals(const Translation& t) {
  for (const RuleLine& rule : t.plan.rules) {
    if (rule.kind != "read" && rule.kind != "write") continue;
    if (path_is_within(rule.path, kTerminals) || path_is_within(kTerminals, rule.path)) return true;
  }
  return false;
}

void add(Translation& t, const std::string& kind, const std::string& path) {
  t.plan.rules.push_back({kind, path});
}

// An entry that gets the split rule's right on its own. Symlinks never do: Landlock would
// attach the rule to the target, which lies in another entry of the tree (granted on its own:
// /bin -> usr/bin) or outside the rule's tree (never granted by it), possibly beneath a closed
// path (never to be granted through a link).
bool grantable_entry(const DirEntry& entry) {
  return !entry.symlink && !entry.name.empty() && entry.name != "." && entry.name != ".." &&
         entry.name.find('/') == std::string::npos;
}

// Applies read or write rules so that no closed path is reached whole (translate.hpp).
class RuleSplitter {
 public:
  RuleSplitter(const HostFacts& facts, Translation& t)
      : facts_(facts), closed_(closed_paths(facts.device_mounts)), t_(t) {}

  Status grant(const std::string& kind, const std::string& path) {
    if (!covers_closed(closed_, path)) {
      add(t_, kind, path);
      return {};
    }
    split_ = true;
    list(path);
    if (is_closed(closed_, path)) return {};  // listed, nothing opened beneath
    auto listing = facts_.listings.find(path);
    if (listing == facts_.listings.end())
      return Error{"landlock: cannot grant '" + path + "' without the device files beneath it: " +
                   (facts_.listing_error.empty() ? "it was not listed" : facts_.listing_error)};
    for (const DirEntry& entry : listing->second) {
      if (!grantable_entry(entry)) continue;
      Status s = grant(kind, child_of(path, entry.name));
      if (!s.ok()) return s;
    }
    return {};
  }
  bool split() const { return split_; }

 private:
  void list(const std::string& path) {
    if (std::find(listed_.begin(), listed_.end(), path) != listed_.end()) return;
    listed_.push_back(path);
    add(t_, "list", path);
  }
  const HostFacts& facts_;
  std::vector<std::string> closed_;
  Translation& t_;
  std::vector<std::string> listed_;
  bool split_ = false;
};

Result<bool> add_filesystem(const ResolvedPolicy& policy, const HostFacts& facts, Translation& t) {
  const bool restricted = policy.filesystem_kind == FilesystemKind::kRestricted;
  t.plan.restrict_filesystem = restricted;
  if (!restricted) return false;
  t.plan.min_abi = kAbiTruncate;
  // Without the mount table a device filesystem mounted outside /dev could be granted whole.
  if (!facts.mounts_known)
    return Error{
        "landlock: the mount table was not read: device filesystems mounted outside "
        "/dev are unknown"};
  RuleSplitter splitter(facts, t);
  // Deny rules add nothing: with no carve-out (checked), a deny rule is never inside a grant.
  for (const PathRule& rule : policy.rules) {
    if (!is_grant(rule)) continue;
    Status s = splitter.grant(rule_kind(rule), rule.path);
    if (!s.ok()) return s.failure();
  }
  if (policy.platform_defaults_readable) {
    for (const std::string& path : minimal_paths()) add(t, "read", path);
  }
  for (const std::string& path : device_paths()) add(t, "dev", path);
  return splitter.split();
}

void add_split_notes(const ResolvedPolicy& policy, const HostFacts& facts, Translation& t) {
  std::string devices;
  for (const std::string& path : device_paths()) devices += (devices.empty() ? "" : ", ") + path;
  const std::vector<std::string> closed = closed_paths(facts.device_mounts);
  std::string closed_list;
  for (const std::string& c : closed) closed_list += (closed_list.empty() ? "" : ", ") + c;
  std::string note =
      "landlock: device files are never granted whole (" + closed_list +
      "; Landlock rights reach everything beneath a rule, so a rule on / "
      "would open raw disks and the host's other terminals): a rule over it is applied to each "
      "entry of its directories instead, as listed when the plan was made (an entry added later "
      "is not reachable; a symlink is reached through its target), those directories and /dev "
      "can be listed, and the device files are " +
      devices + " plus entries beneath /dev the policy names itself";
  bool narrowed_write = false;
  for (const PathRule& rule : policy.rules) {
    if (!is_grant(rule) || !covers_closed(closed, rule.path)) continue;
    if (is_closed(closed, rule.path))
      note += "; narrower than written: the rule on " + rule.path + " only lists it";
    else if (rule.access == Access::kWrite && !narrowed_write) {
      narrowed_write = true;
      note +=
          "; narrower than written: nothing can be created, renamed or removed directly in "
          "the directories split ('" +
          rule.path + "' and those down to the device files)";
    }
  }
  t.notes.push_back(note);
}

}  // namespace

std::vector<std::string> closed_paths(const std::vector<std::string>& device_mounts) {
  std::vector<std::string> closed = {std::string(kDev)};
  for (const std::string& m : device_mounts) {
    if (m.empty() || m.front() != '/' || path_is_within(m, kDev)) continue;
    closed.push_back(m);
  }
  return closed;
}

std::vector<std::string> directories_to_list(const ResolvedPolicy& policy,
                                             const std::vector<std::string>& device_mounts) {
  std::vector<std::string> dirs;
  if (policy.filesystem_kind != FilesystemKind::kRestricted) return dirs;
  auto want = [&](const std::string& dir) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  };
  const std::vector<std::string> closed = closed_paths(device_mounts);
  for (const PathRule& rule : policy.rules) {
    if (!is_grant(rule)) continue;
    for (const std::string& c : closed) {
      if (c == rule.path || !path_is_within(c, rule.path)) continue;
      // The rule's path, then each directory on the way down to c's parent.
      std::string dir = rule.path;
      want(dir);
      for (std::size_t slash = c.find('/', dir == "/" ? 1 : dir.size() + 1);
           slash != std::string::npos; slash = c.find('/', slash + 1)) {
        want(c.substr(0, slash));
      }
    }
  }
  return dirs;
}

const std::vector<std::string>& minimal_paths() {
  static const std::vector<std::string> kPaths = {"/bin",   "/etc",    "/lib",  "/lib32",
                                                  "/lib64", "/libx32", "/sbin", "/usr"};
  return kPaths;
}

const std::vector<std::string>& device_paths() {
  // /dev/ptmx: opening it only allocates a new pseudo-terminal pair. The peer (/dev/pts/N)
  // is not granted: the run's supervisor opens it for the holder of the master
  // (ioctl TIOCGPTPEER, linux/landlock/metadata_notify.hpp), so other terminals stay closed.
  static const std::vector<std::string> kPaths = {"/dev/null",   "/dev/zero",    "/dev/full",
                                                  "/dev/random", "/dev/urandom", "/dev/tty",
                                                  "/dev/ptmx"};
  return kPaths;
}

std::string unenforceable_rule(const ResolvedPolicy& policy) {
  // With the network enabled host unix sockets stay closed by the run's unix connect guard
  // (linux/landlock/unix_connect_notify.hpp), which has no allow-list: a listed socket would
  // be refused like any other host socket.
  if (!policy.network.unix_sockets.empty())
    return "unix_socket_allowlist: unix socket '" + policy.network.unix_sockets.front() +
           "' allowed: Landlock mode offers no allow-list of host unix sockets (the seccomp "
           "filter blocks every unix socket when the network is restricted, the connect guard "
           "refuses every host one when it is enabled)";
  // Without a network namespace a listening socket would listen on the host's own loopback,
  // reachable by everything there; stage 2's filter refuses bind and listen (and every inet
  // socket when the network is restricted), so the grant would silently not hold.
  if (policy.network.mode != NetworkMode::kEnabled && policy.network.allow_local_binding)
    return "local_binding: network.allow_local_binding is set: the seccomp filter refuses bind "
           "and listen (and every inet socket when the network is restricted), and Landlock "
           "mode has no private network namespace whose loopback it could offer instead";
  return filesystem_rule(policy);
}

std::vector<std::string> plan_argv(const std::string& stage2_path, const LandlockPlan& plan) {
  std::vector<std::string> out = {stage2_path, "--landlock", std::to_string(plan.min_abi),
                                  "--ll-fs",
                                  plan.restrict_filesystem ? "restricted" : "unrestricted"};
  for (const RuleLine& rule : plan.rules) out.insert(out.end(), {"--ll-" + rule.kind, rule.path});
  out.insert(out.end(),
             {"--ll-scope-abstract-unix", plan.scope_abstract_unix ? "on" : "off", "--net"});
  switch (plan.network) {
    case Network::kBlocked:
      out.emplace_back("blocked");
      break;
    case Network::kOpen:
      out.emplace_back("open");
      break;
    case Network::kProxy:
      out.insert(out.end(), {"proxy", "--proxy-port", std::to_string(plan.proxy_port)});
      break;
  }
  out.emplace_back("--env-environ");
  out.emplace_back("--");
  out.insert(out.end(), plan.command.begin(), plan.command.end());
  return out;
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
    return Error{
        "landlock cannot enforce proxy_network: it needs exactly one proxy port in "
        "network.proxy_ports (sbx exec starts the proxy and sets it)"};
  Translation t;
  Result<bool> split = add_filesystem(request.policy, facts, t);
  if (!split.ok()) return split.failure();
  // Restricted and proxy network both need TCP rules (ABI 4); without them nothing would stop
  // a direct connection, so the launcher refuses to run below that ABI.
  const bool confined = network.mode != NetworkMode::kEnabled;
  if (confined) t.plan.min_abi = kAbiNetwork;
  // Enabled: the host's network namespace. The launcher's unix connect guard decides every
  // connect() (host pathname and abstract unix sockets refused unless the command bound them);
  // ABI 6 scoping keeps abstract names and signals in as well, for whatever the guard does not
  // perform (linux/landlock/unix_connect_notify.hpp). Below ABI 6 the launcher refuses to run.
  if (!confined) t.plan.min_abi = std::max(t.plan.min_abi, kAbiScope);
  // Restricted and proxy: seccomp already refuses AF_UNIX sockets; scoping also cuts inherited
  // sockets off from abstract unix sockets outside (ABI 6+).
  t.plan.scope_abstract_unix = true;
  if (proxy) {
    // TCP connect only to the proxy's port; no bind; the proxy-mode seccomp filter (TCP
    // sockets only, so no UDP, which Landlock does not cover).
    t.plan.network = Network::kProxy;
    t.plan.proxy_port = network.proxy_ports.front();
  } else {
    t.plan.network = confined ? Network::kBlocked : Network::kOpen;
  }
  // The command's environment is the plan's env, not arguments: arguments are world-readable
  // in /proc while the command runs, an environment holds secrets (stage2/env_block.hpp).
  // The launcher puts it only into the command's execve (sbx-stage2 run by hand: its own).
  t.env = request.env;
  t.plan.command = request.argv;
  t.argv = plan_argv(stage2_path, t.plan);
  t.notes = {
      "landlock: needs Landlock ABI " + std::to_string(t.plan.min_abi) +
          "+ (checked at run time, before the command starts); newer rights are used where the "
          "kernel has them",
      "landlock: no namespaces: /proc shows host processes; SysV IPC and POSIX message queues "
      "are refused (they would be the host's); signals to "
      "processes outside the sandbox are blocked only on ABI 6+; rlimits, priorities, CPU "
      "affinity and scheduling may be changed only for the command's own process named as "
      "pid 0 (renice -p, taskset -p, pthread_setaffinity_np get EPERM)",
      "landlock: descendants left running are killed when the command exits (subreaper)"};
  if (restricted_filesystem(request.policy))
    t.notes.push_back(
        "landlock: chmod, chown, file times and extended attributes are emulated by the run's "
        "supervisor and allowed only on files inside the writable roots (Landlock has no right "
        "for them); set-user-ID/set-group-ID modes and chattr flags are refused everywhere. "
        "A file hard-linked into a writable root before the run can still be changed through "
        "that link");
  if (*split) add_split_notes(request.policy, facts, t);
  if (!confined)
    t.notes.push_back(
        "landlock: network enabled: every connect() and bind() goes through the run's "
        "supervisor, which refuses (EACCES) the host's unix sockets, pathname and abstract, "
        "and allows those the command bound itself; a connection it makes shows the "
        "supervisor's pid to its peer (SO_PEERCRED), with the command's user and group");
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
