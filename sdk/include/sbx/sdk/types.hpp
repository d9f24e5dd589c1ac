// Plain data that crosses the plugin boundary: the resolved policy a backend must enforce, the
// capabilities it declares, its probe report, and the plan it hands back. No behaviour beyond
// small pure helpers; everything here is copyable and owns its data.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sbx {

enum class Access : std::uint8_t { kRead, kWrite, kDeny };
enum class FilesystemKind : std::uint8_t {
  kRestricted,    // the entries below decide every path
  kUnrestricted,  // no filesystem restriction at all
  kExternal,      // an outer sandbox owns the filesystem; network is still ours
};
enum class NetworkMode : std::uint8_t { kRestricted, kEnabled, kProxy };

// One filesystem rule after resolution: an absolute, normalised path (no trailing slash except
// "/", no "." or ".." components, symlinks in writable roots already rejected).
struct PathRule {
  std::string path;
  Access access = Access::kDeny;
  friend bool operator==(const PathRule&, const PathRule&) = default;
};

// A protected name under a writable root (e.g. <root>/.git), or the gitdir a .git file points
// to. Existing ones must stay read-only; missing ones must not be creatable. The writable root
// and every ancestor of a protected path below it must not be renamed or removed.
struct ProtectedPath {
  std::string path;
  std::string writable_root;  // the writable root it protects
  bool exists = false;
  bool is_directory = false;  // meaningful only when exists
  friend bool operator==(const ProtectedPath&, const ProtectedPath&) = default;
};

struct NetworkPolicy {
  NetworkMode mode = NetworkMode::kRestricted;
  std::vector<std::uint16_t> proxy_ports;
  std::vector<std::string> allowed_domains;
  std::vector<std::string> denied_domains;
  std::vector<std::string> unix_sockets;  // absolute paths the command may connect to
  bool allow_local_binding = false;
  friend bool operator==(const NetworkPolicy&, const NetworkPolicy&) = default;
};

// The effective policy a backend enforces. Produced by core from a Policy, a cwd and an
// environment; backends never re-resolve it.
//
// Filesystem semantics (kind == kRestricted): for a path P, the rule with the longest path that
// is P or an ancestor of P decides; rules hold one entry per path (ties already settled as
// deny > write > read); no matching rule means deny. Protected paths override write access.
// Deny globs are absolute gitignore-style patterns ("**", "*", "?", "[...]", "{a,b}") that
// deny reading and writing of every matching path.
struct ResolvedPolicy {
  FilesystemKind filesystem_kind = FilesystemKind::kRestricted;
  std::vector<PathRule> rules;                 // sorted by (depth, path): parents before children
  bool platform_defaults_readable = false;     // ":minimal" was granted
  std::vector<ProtectedPath> protected_paths;  // sorted by path
  std::vector<std::string> deny_globs;
  NetworkPolicy network;
  std::string cwd;  // absolute
  friend bool operator==(const ResolvedPolicy&, const ResolvedPolicy&) = default;
};

// What a backend can enforce on this host. The manager matches a policy's needs against it.
enum class Capability : std::uint32_t {
  kWriteRestriction = 1u << 0,     // writes only inside writable roots
  kReadRestriction = 1u << 1,      // reads only inside readable roots (+ :minimal)
  kWriteCarveouts = 1u << 2,       // read-only or denied paths inside writable roots
  kReadCarveouts = 1u << 3,        // denied paths inside readable roots
  kProtectedNames = 1u << 4,       // protected names read-only, missing ones uncreatable
  kDenyGlobs = 1u << 5,            // deny-read globs
  kNetworkBlock = 1u << 6,         // no network at all (restricted mode)
  kProxyNetwork = 1u << 7,         // network only through a local proxy
  kUnixSocketAllowlist = 1u << 8,  // host unix sockets only from network.unix_sockets
  kSyscallFilter = 1u << 9,        // the seccomp-style dangerous-syscall filter
  // Listening on local ports (bind/listen on loopback) while the network is
  // restricted or proxied (network.allow_local_binding). Plugins built for older ABIs never
  // declare it, so the manager passes them over for such policies.
  kLocalBinding = 1u << 10,
  // Host unix sockets closed unless network.unix_sockets lists them, pathname and
  // abstract, whatever the network mode (with the network enabled too: "enabled" means the
  // internet, not the host's local services such as docker, ssh-agent, D-Bus or tmux). The
  // manager needs it whenever the network is enabled; plugins built for older ABIs never
  // declare it.
  kUnixSocketBlock = 1u << 11,
};

class CapabilitySet {
 public:
  constexpr CapabilitySet() = default;
  constexpr CapabilitySet(std::initializer_list<Capability> caps) {
    for (Capability c : caps) bits_ |= static_cast<std::uint32_t>(c);
  }
  constexpr bool has(Capability c) const { return (bits_ & static_cast<std::uint32_t>(c)) != 0; }
  constexpr void add(Capability c) { bits_ |= static_cast<std::uint32_t>(c); }
  constexpr void remove(Capability c) { bits_ &= ~static_cast<std::uint32_t>(c); }
  constexpr bool covers(CapabilitySet needed) const { return (needed.bits_ & ~bits_) == 0; }
  constexpr CapabilitySet missing_from(CapabilitySet needed) const {
    CapabilitySet out;
    out.bits_ = needed.bits_ & ~bits_;
    return out;
  }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr std::uint32_t bits() const { return bits_; }
  friend constexpr bool operator==(CapabilitySet, CapabilitySet) = default;

 private:
  std::uint32_t bits_ = 0;
};

// Every capability, in declaration order (for printing and iteration).
inline constexpr Capability kAllCapabilities[] = {
    Capability::kWriteRestriction, Capability::kReadRestriction, Capability::kWriteCarveouts,
    Capability::kReadCarveouts,    Capability::kProtectedNames,  Capability::kDenyGlobs,
    Capability::kNetworkBlock,     Capability::kProxyNetwork,    Capability::kUnixSocketAllowlist,
    Capability::kSyscallFilter,    Capability::kLocalBinding,    Capability::kUnixSocketBlock,
};

// Stable snake_case name, used in JSON output and messages.
constexpr std::string_view to_string(Capability c) {
  switch (c) {
    case Capability::kWriteRestriction:
      return "write_restriction";
    case Capability::kReadRestriction:
      return "read_restriction";
    case Capability::kWriteCarveouts:
      return "write_carveouts";
    case Capability::kReadCarveouts:
      return "read_carveouts";
    case Capability::kProtectedNames:
      return "protected_names";
    case Capability::kDenyGlobs:
      return "deny_globs";
    case Capability::kNetworkBlock:
      return "network_block";
    case Capability::kProxyNetwork:
      return "proxy_network";
    case Capability::kUnixSocketAllowlist:
      return "unix_socket_allowlist";
    case Capability::kSyscallFilter:
      return "syscall_filter";
    case Capability::kLocalBinding:
      return "local_binding";
    case Capability::kUnixSocketBlock:
      return "unix_socket_block";
  }
  return "unknown";
}

inline std::vector<std::string> capability_names(CapabilitySet set) {
  std::vector<std::string> out;
  for (Capability c : kAllCapabilities) {
    if (set.has(c)) out.emplace_back(to_string(c));
  }
  return out;
}

enum class CheckStatus : std::uint8_t { kPass, kWarn, kFail };

constexpr std::string_view to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
  }
  return "unknown";
}

// One diagnostic a probe ran: what it observed and, unless it passed, one line saying what to do.
struct ProbeCheck {
  std::string name;  // short id, e.g. "bwrap_found"
  CheckStatus status = CheckStatus::kFail;
  std::string observed;  // the value seen, e.g. "/usr/bin/bwrap 0.8.0"
  std::string remedy;    // empty when status == kPass
};

struct ProbeContext {
  // Reserved for options (e.g. a deadline); probes must be safe to call repeatedly.
  bool thorough = true;
};

struct ProbeReport {
  bool available = false;
  std::string summary;  // one line: why available or not
  std::vector<ProbeCheck> checks;
  CapabilitySet capabilities;  // what it can enforce here; meaningful when available
};

// ABI 2.3. One toolchain cache of the host that the run shows copy-on-write (the policy's
// ":caches", core/src/caches/README.md): `path`, the host's cache directory (absolute,
// canonical), is the lower layer of an overlay mounted at `path` itself inside the sandbox;
// what the command writes there goes to `layers`/upper (its overlayfs work directory:
// `layers`/work), a directory of sbx's private per-user, per-project state that core made
// (owned by the user, mode 0700). The host's directory is never written. Only a backend whose
// probe passes kCacheOverlayCheck (backend.hpp) is given any.
struct CacheOverlay {
  std::string path;
  std::string layers;
  friend bool operator==(const CacheOverlay&, const CacheOverlay&) = default;
};

// What the manager asks a backend to wrap.
struct TransformRequest {
  std::vector<std::string> argv;  // argv[0] is an absolute path
  std::string cwd;                // absolute
  std::vector<std::string> env;   // KEY=VALUE, exactly what the command should see
  ResolvedPolicy policy;
  // With network.mode == proxy, the filtering proxy's unix socket on the host (absolute, alone in a
  // private 0700 directory created by core), for backends that reach the proxy through a bridge
  // from inside a network namespace; empty otherwise. The proxy's TCP port is in
  // policy.network.proxy_ports. (Default member initializer: partial aggregate initialisers stay
  // warning-free.)
  std::string proxy_socket{};
  // ABI 2.3: the toolchain caches to mount copy-on-write (CacheOverlay), none of them below
  // another; empty for a backend without kCacheOverlayCheck (and for a plugin built for 2.2,
  // which never reads it).
  std::vector<CacheOverlay> cache_overlays{};
};

// Host state a plan changes outside the sandbox, which the backend's exec() must manage around
// the run. transform() fills it; exec() acts on it; reports print it (JSON "host_paths").
// Empty for a backend that leaves the host as it is.
struct PlanHostPaths {
  // Paths that do not exist on the host and that the run creates there (e.g. mount points a
  // namespace tool must make before it can mount over a missing name), absolute and
  // normalised. exec() removes them after the run, once no concurrent run still relies on them.
  std::vector<std::string> created;
  // Existing host paths the run relies on staying in place (e.g. protected paths it mounts
  // over, which may be another run's created path). exec() holds them so that a concurrent
  // run's cleanup does not remove them while this run needs them.
  std::vector<std::string> kept;
  // The backend's private directory where runs record what they created (so a killed run's
  // leftovers can be found and removed). Empty: no record can be kept, and exec() removes
  // nothing it did not record, so created paths stay on the host.
  std::string state_dir;
  friend bool operator==(const PlanHostPaths&, const PlanHostPaths&) = default;
};

// The backend's own part of a plan. transform() makes it (an object of the backend's own class,
// derived from this one); core keeps it with the plan and hands it back, unchanged, to the same
// backend's exec(), which downcasts it. Core never looks inside but through report_json(). What
// exec() needs that a person need not read (a typed launch description, descriptors to come)
// lives here, so that exec() never parses the displayable fields back.
class PlanDetail {
 public:
  PlanDetail() = default;
  PlanDetail(const PlanDetail&) = delete;
  PlanDetail& operator=(const PlanDetail&) = delete;
  virtual ~PlanDetail() = default;
  // Members the plan's JSON (`sbx debug`, `--dry-run --json`) gains: the text of one JSON
  // object whose members are added to the plan's, or "" for none. Names of core's own members
  // ("argv", "env", ...) are not allowed.
  virtual std::string report_json() const { return {}; }
};

// What a backend hands back: the exact process to start.
// Everything exec() needs from transform() travels in typed fields and in `detail`; `notes` are
// for people only and no code parses them.
struct ExecPlan {
  std::vector<std::string> argv;  // argv[0] is an absolute path
  std::vector<std::string> env;   // KEY=VALUE, the full environment of argv[0]
  std::string cwd;
  std::vector<std::string> notes;  // things `explain`/`debug` should tell a person
  // (Default member initializers: partial aggregate initialisers stay warning-free.)
  PlanHostPaths host_paths{};
  // The backend's own part (PlanDetail), or null. Shared, immutable: copies of a plan share it.
  std::shared_ptr<const PlanDetail> detail{};
};

// How the command ended.
struct ExitStatus {
  int exit_code = 0;  // valid when signal == 0
  int signal = 0;     // the signal that killed it, or 0
  // The shell convention: the exit code, or 128 + signal.
  int shell_code() const { return signal != 0 ? 128 + signal : exit_code; }
  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;
};

// Pure helpers over a ResolvedPolicy, usable by any backend.

// True if `ancestor` is `path` or a directory above it (both absolute and normalised).
inline bool path_is_within(std::string_view path, std::string_view ancestor) {
  if (ancestor == "/") return !path.empty() && path.front() == '/';
  if (path.size() < ancestor.size() || path.substr(0, ancestor.size()) != ancestor) return false;
  return path.size() == ancestor.size() || path[ancestor.size()] == '/';
}

// The access the rules grant for `path` (most specific wins; no match = deny). Ignores globs
// and protected paths. Only meaningful for FilesystemKind::kRestricted.
inline Access rule_access(const ResolvedPolicy& policy, std::string_view path) {
  const PathRule* best = nullptr;
  for (const PathRule& rule : policy.rules) {
    if (path_is_within(path, rule.path) &&
        (best == nullptr || rule.path.size() > best->path.size()))
      best = &rule;
  }
  return best != nullptr ? best->access : Access::kDeny;
}

// True if reading is limited to some roots (the rules do not grant "/" read or write).
inline bool reads_restricted(const ResolvedPolicy& policy) {
  return policy.filesystem_kind == FilesystemKind::kRestricted &&
         rule_access(policy, "/") == Access::kDeny;
}

// Paths whose rule is write, parents before children.
inline std::vector<std::string> writable_roots(const ResolvedPolicy& policy) {
  std::vector<std::string> out;
  for (const PathRule& rule : policy.rules) {
    if (rule.access == Access::kWrite) out.push_back(rule.path);
  }
  return out;
}

}  // namespace sbx
