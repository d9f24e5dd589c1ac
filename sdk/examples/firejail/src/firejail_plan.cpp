#include "firejail_plan.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

namespace firejail_backend {
namespace {

using sbx::Access;
using sbx::Error;
using sbx::PathRule;
using sbx::ResolvedPolicy;
using sbx::Status;

// Characters firejail either rejects in file names or expands (globs, ${MACROS}, ',' lists).
// A path containing one would be refused by firejail or, worse, widened by glob expansion
// (--read-write=/w* would open every match), so such a path is an error here.
constexpr std::string_view kUnsafePathChars = "\\&!?\"'<>%^(){}[];,*$~`|#";

// firejail gives the sandbox its own /dev and /proc, and private tmpfs copies of /var/log and
// /run/lock; /sys is its host's, largely masked. Writes granted there would not reach the
// host, or would reach it behind firejail's back, so a writable root there is refused.
constexpr std::string_view kPrivateAreas[] = {"/dev",     "/proc",     "/sys",
                                              "/var/log", "/run/lock", "/run/firejail"};

std::string_view access_name(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
    case Access::kDeny:
      return "deny";
  }
  return "unknown";
}

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::size_t depth_of(const std::string& path) {
  return path == "/" ? 0 : static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

bool strictly_inside(const std::string& path, const std::string& ancestor) {
  return path != ancestor && sbx::path_is_within(path, ancestor);
}

Status check_path_text(const std::string& path, std::string_view what) {
  if (path.empty() || path.front() != '/')
    return Error{std::string(what) + " '" + path + "' is not an absolute path"};
  for (char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || kUnsafePathChars.find(c) != std::string_view::npos)
      return Error{std::string(what) + " '" + path +
                   "' contains a character firejail treats specially (one of " +
                   std::string(kUnsafePathChars) +
                   " or a control character); rename it or use another backend"};
  }
  return {};
}

// The rule that decides `path` (the longest rule that is `path` or above it), or nullptr.
const PathRule* governing_rule(const ResolvedPolicy& policy, const std::string& path) {
  const PathRule* best = nullptr;
  for (const PathRule& rule : policy.rules) {
    if (sbx::path_is_within(path, rule.path) &&
        (best == nullptr || rule.path.size() > best->path.size()))
      best = &rule;
  }
  return best;
}

// Facts about the policy as it will look inside the sandbox, shared by the checks below.
class SandboxView {
 public:
  SandboxView(const ResolvedPolicy& policy, const PathFacts& facts)
      : policy_(policy), facts_(facts) {}

  bool exists(const std::string& path) const { return facts_.exists(path); }

  bool inside_existing_protected(const std::string& path) const {
    return std::any_of(
        policy_.protected_paths.begin(), policy_.protected_paths.end(),
        [&](const sbx::ProtectedPath& p) { return p.exists && sbx::path_is_within(path, p.path); });
  }

  // An existing deny rule strictly above `path`: firejail's blacklist hides everything below,
  // and nothing below can be re-opened.
  const PathRule* denied_ancestor(const std::string& path) const {
    for (const PathRule& rule : policy_.rules) {
      if (rule.access == Access::kDeny && strictly_inside(path, rule.path)) return &rule;
    }
    return nullptr;
  }

  // True if the command could create or rename entries directly inside `dir`: the deciding
  // rule is write, its root exists (firejail skips missing ones), and no protected path covers it.
  bool writable_dir(const std::string& dir) const {
    const PathRule* rule = governing_rule(policy_, dir);
    return rule != nullptr && rule->access == Access::kWrite && exists(rule->path) &&
           !inside_existing_protected(dir);
  }

 private:
  const ResolvedPolicy& policy_;
  const PathFacts& facts_;
};

// One firejail mount option, ordered parents first so a child is mounted after its parent.
struct Mount {
  std::string path;
  std::string flag;
  int order = 0;  // rules (0) before protected paths (1) on the same path: protection wins
};

std::string flag_for(Access access) {
  switch (access) {
    case Access::kWrite:
      return "--read-write=";
    case Access::kRead:
      return "--read-only=";
    case Access::kDeny:
      return "--blacklist=";
  }
  return "";
}

bool in_private_area(const std::string& path) {
  return std::any_of(std::begin(kPrivateAreas), std::end(kPrivateAreas),
                     [&](std::string_view area) { return sbx::path_is_within(path, area); });
}

// Checks one rule and, when firejail has something to do for it, adds its mount.
Status add_rule_mount(const PathRule& rule, const SandboxView& view, std::vector<Mount>& mounts,
                      std::vector<std::string>& notes) {
  const std::string what =
      "rule '" + rule.path + "' (" + std::string(access_name(rule.access)) + ")";
  if (Status s = check_path_text(rule.path, what); !s.ok()) return s;
  if (const PathRule* denied = view.denied_ancestor(rule.path)) {
    if (rule.access == Access::kDeny) return {};  // already hidden with its denied ancestor
    return Error{"firejail cannot re-open " + what + " inside the denied '" + denied->path +
                 "': its blacklist hides everything below; use a backend with full carve-outs"};
  }
  if (rule.access == Access::kWrite && in_private_area(rule.path))
    return Error{"firejail cannot grant " + what +
                 ": firejail gives the sandbox a private copy there, so writes would not reach "
                 "the host"};
  if (rule.access == Access::kWrite && view.inside_existing_protected(rule.path)) {
    notes.push_back("'" + rule.path + "' stays read-only: it lies inside a protected path");
    return {};
  }
  if (!view.exists(rule.path)) {
    if (rule.access == Access::kWrite) {
      notes.push_back("writable root '" + rule.path + "' does not exist; writes there will fail");
      return {};
    }
    // A missing path is only a problem if the command could create it.
    if (view.writable_dir(parent_of(rule.path)))
      return Error{"firejail cannot keep the missing path '" + rule.path + "' (" +
                   std::string(access_name(rule.access)) +
                   ") from being created: it only covers paths that exist when the command "
                   "starts; create it first or use a backend with full carve-outs (bwrap)"};
    return {};
  }
  mounts.push_back({rule.path, flag_for(rule.access) + rule.path, 0});
  return {};
}

// The protected path itself becomes a read-only mount point (which cannot be renamed); each
// ancestor below its writable root must be a mount point too or sit in a read-only directory,
// otherwise renaming the ancestor would move the protection away.
Status check_protected_ancestors(const sbx::ProtectedPath& protected_path,
                                 const std::set<std::string>& mount_points,
                                 const SandboxView& view) {
  for (std::string dir = parent_of(protected_path.path);
       dir != "/" && dir != protected_path.writable_root; dir = parent_of(dir)) {
    if (mount_points.count(dir) == 0 && view.writable_dir(parent_of(dir)))
      return Error{"firejail cannot keep '" + dir + "', an ancestor of the protected path '" +
                   protected_path.path +
                   "', from being renamed; use a backend with protected "
                   "names support (bwrap)"};
  }
  return {};
}

Status add_protected_mounts(const ResolvedPolicy& policy, const SandboxView& view,
                            std::vector<Mount>& mounts) {
  std::set<std::string> mount_points;
  for (const Mount& m : mounts) mount_points.insert(m.path);
  for (const sbx::ProtectedPath& p : policy.protected_paths) {
    if (p.exists) mount_points.insert(p.path);
  }
  for (const sbx::ProtectedPath& p : policy.protected_paths) {
    if (Status s = check_path_text(p.path, "protected path"); !s.ok()) return s;
    if (view.denied_ancestor(p.path) != nullptr) continue;  // hidden entirely
    if (!p.exists) {
      if (!view.writable_dir(parent_of(p.path))) continue;  // cannot be created anyway
      return Error{"firejail cannot keep the missing protected path '" + p.path +
                   "' from being created (it can only re-mount paths that exist); create it "
                   "first (mkdir '" +
                   p.path + "') or use a backend that can (bwrap)"};
    }
    if (Status s = check_protected_ancestors(p, mount_points, view); !s.ok()) return s;
    mounts.push_back({p.path, "--read-only=" + p.path, 1});
  }
  return {};
}

Status add_filesystem_flags(const ResolvedPolicy& policy, const PathFacts& facts,
                            std::vector<std::string>& flags, std::vector<std::string>& notes) {
  if (policy.filesystem_kind == sbx::FilesystemKind::kUnrestricted) {
    notes.push_back("filesystem unrestricted: no firejail filesystem options");
    return {};
  }
  if (policy.filesystem_kind == sbx::FilesystemKind::kExternal) {
    notes.push_back("filesystem owned by an outer sandbox: no firejail filesystem options");
    return {};
  }
  if (!policy.deny_globs.empty())
    return Error{"firejail cannot enforce the deny glob '" + policy.deny_globs.front() +
                 "' (its globs match only files that exist at start and know no '**'); use a "
                 "backend with deny_globs"};
  if (sbx::reads_restricted(policy))
    return Error{
        "firejail cannot restrict reads: the policy does not grant reading '/', and "
        "firejail has no read allow-list; use a backend with read_restriction"};
  const SandboxView view(policy, facts);
  if (const PathRule* cwd_rule = governing_rule(policy, policy.cwd);
      !policy.cwd.empty() && ((cwd_rule != nullptr && cwd_rule->access == Access::kDeny) ||
                              view.denied_ancestor(policy.cwd) != nullptr))
    return Error{"the working directory '" + policy.cwd + "' is denied by the policy"};
  // Read-only everything first; the rules below re-open writable roots and carve out of them.
  if (sbx::rule_access(policy, "/") == Access::kRead) flags.push_back("--read-only=/");
  std::vector<Mount> mounts;
  for (const PathRule& rule : policy.rules) {
    if (rule.path == "/") continue;
    if (Status s = add_rule_mount(rule, view, mounts, notes); !s.ok()) return s;
  }
  if (Status s = add_protected_mounts(policy, view, mounts); !s.ok()) return s;
  // firejail applies these options in command-line order: parents first, so a child's mount
  // lands on top of its parent's and is not hidden by it.
  std::stable_sort(mounts.begin(), mounts.end(), [](const Mount& a, const Mount& b) {
    return std::make_tuple(depth_of(a.path), a.path, a.order) <
           std::make_tuple(depth_of(b.path), b.path, b.order);
  });
  for (Mount& m : mounts) flags.push_back(std::move(m.flag));
  return {};
}

Status add_network_flags(const sbx::NetworkPolicy& network, std::vector<std::string>& flags,
                         std::vector<std::string>& notes) {
  switch (network.mode) {
    case sbx::NetworkMode::kProxy:
      return Error{
          "firejail cannot force traffic through a proxy (network mode proxy); use a "
          "backend with proxy_network"};
    case sbx::NetworkMode::kEnabled:
      if (!network.denied_domains.empty())
        return Error{"firejail cannot block the domain '" + network.denied_domains.front() +
                     "' while the network is enabled"};
      return {};
    case sbx::NetworkMode::kRestricted:
      if (!network.unix_sockets.empty())
        return Error{
            "firejail cannot limit unix sockets to an allow-list (network.unix_sockets "
            "'" +
            network.unix_sockets.front() + "')"};
      // A new network namespace with only loopback, and a seccomp filter that refuses every
      // socket family except AF_UNIX (so not even loopback inet sockets can be opened).
      flags.insert(flags.end(), {"--net=none", "--protocol=unix"});
      if (network.allow_local_binding)
        notes.push_back("allow_local_binding is not granted: inet sockets are refused entirely");
      return {};
  }
  return Error{"unknown network mode"};
}

// glibc drops these from a setuid program's environment (unsecvars.h) and they must never
// steer the privileged helper itself; firejail's own sanitising is no reason to pass them.
bool unsafe_for_helper(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "GCONV_PATH",  "GETCONF_DIR",  "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN",
      "LOCPATH",     "MALLOC_TRACE", "NIS_PATH",       "NLSPATH",     "RESOLV_HOST_CONF",
      "RES_OPTIONS", "TMPDIR",       "TZDIR"};
  if (name.substr(0, 3) == "LD_" || name.substr(0, 7) == "MALLOC_") return true;
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

// Splits the request's environment: what firejail itself may see, and TMPDIR handed to the
// command through --env (glibc would strip it from a setuid firejail, and :tmpdir needs it).
Status split_environment(const std::vector<std::string>& env, sbx::ExecPlan& plan,
                         std::vector<std::string>& flags) {
  std::vector<std::string> dropped;
  for (const std::string& entry : env) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0)
      return Error{"environment entry '" + entry + "' is not NAME=VALUE"};
    const std::string_view name(entry.data(), eq);
    if (!unsafe_for_helper(name)) {
      plan.env.push_back(entry);
    } else if (name == "TMPDIR") {
      flags.push_back("--env=" + entry);
    } else {
      dropped.emplace_back(name);
    }
  }
  if (!dropped.empty()) {
    std::string list;
    for (const std::string& n : dropped) list += (list.empty() ? "" : ", ") + n;
    plan.notes.push_back("not passed to the sandbox (unsafe for the setuid firejail): " + list);
  }
  return {};
}

}  // namespace

PathFacts host_path_facts() {
  return PathFacts{[](const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
  }};
}

std::vector<std::string> hardening_flags() {
  return {
      "--noprofile",  // no profile from /etc/firejail: only what this plan says applies
      "--quiet",
      "--private-dev",   // a private /dev: writes to /dev and /dev/shm never reach the host
      "--keep-var-tmp",  // the host's /var/tmp, read-only unless a rule makes it writable
      "--caps.drop=all", "--nonewprivs",
      // firejail's default list (mount, ptrace, kexec, modules, ...) plus what sbx requires.
      "--seccomp=ptrace,process_vm_readv,process_vm_writev,io_uring_setup,io_uring_enter,"
      "io_uring_register,add_key,request_key,keyctl,bpf,perf_event_open,userfaultfd,mount,"
      "umount2,pivot_root,fsopen,fsconfig,fsmount,fspick,move_mount,open_tree,mount_setattr",
      "--seccomp.block-secondary",  // no 32-bit syscall table to slip past the filter
      "--restrict-namespaces",      // no new user/mount/net/... namespaces
      "--deterministic-exit-code",
      "--deterministic-shutdown",  // orphans die with the command
  };
}

sbx::Result<std::vector<std::string>> policy_flags(const ResolvedPolicy& policy,
                                                   const PathFacts& facts,
                                                   std::vector<std::string>& notes) {
  std::vector<std::string> flags;
  if (Status s = add_filesystem_flags(policy, facts, flags, notes); !s.ok()) return s.failure();
  if (Status s = add_network_flags(policy.network, flags, notes); !s.ok()) return s.failure();
  return flags;
}

sbx::Result<sbx::ExecPlan> build_plan(const sbx::TransformRequest& request,
                                      const PathFacts& facts) {
  if (request.argv.empty() || request.argv.front().empty() || request.argv.front()[0] != '/')
    return Error{"argv[0] must be an absolute path"};
  if (request.cwd.empty() || request.cwd.front() != '/')
    return Error{"the working directory '" + request.cwd + "' is not absolute"};
  sbx::ExecPlan plan;
  std::vector<std::string> flags = hardening_flags();
  sbx::Result<std::vector<std::string>> policy = policy_flags(request.policy, facts, plan.notes);
  if (!policy.ok()) return policy.failure();
  flags.insert(flags.end(), policy->begin(), policy->end());
  if (Status s = split_environment(request.env, plan, flags); !s.ok()) return s.failure();
  plan.argv.emplace_back(kFirejailPath);
  plan.argv.insert(plan.argv.end(), flags.begin(), flags.end());
  plan.argv.emplace_back("--");
  plan.argv.emplace_back(kSetsidPath);
  plan.argv.insert(plan.argv.end(), request.argv.begin(), request.argv.end());
  plan.cwd = request.cwd;
  plan.notes.push_back(
      "firejail starts the command through /bin/bash -c with each argument quoted, and reports "
      "a command killed by signal N as exit status 128+N");
  return plan;
}

}  // namespace firejail_backend
