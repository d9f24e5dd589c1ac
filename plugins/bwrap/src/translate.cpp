// The bwrap translator. See translate.hpp for the contract and README.md for the mount order
// and why each step is there.
#include "sbx/bwrap/translate.hpp"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include "sbx/bwrap/unix_supervisor.hpp"

namespace sbx::bwrap {
namespace {

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

std::size_t depth_of(const std::string& path) {
  return path == "/" ? 0 : static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// "/a/b/c" -> {"/a", "/a/b"} (strict ancestors, "/" excluded, shallowest first).
std::vector<std::string> strict_ancestors(const std::string& path) {
  std::vector<std::string> out;
  for (std::size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1))
    out.push_back(path.substr(0, pos));
  return out;
}

std::string_view access_word(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
    case Access::kDeny:
      return "deny";
  }
  return "deny";
}

// Everything the mount planner needs, with the host facts and policy side by side.
class MountPlanner {
 public:
  MountPlanner(const ResolvedPolicy& policy, const HostFacts& facts,
               const std::string& proxy_socket, const std::vector<CacheOverlay>& overlays)
      : policy_(policy), facts_(facts), proxy_socket_(proxy_socket), overlays_(overlays) {}

  Status plan(Translation& out);

 private:
  PathKind kind(const std::string& path) const {
    auto it = facts_.paths.find(path);
    return it == facts_.paths.end() ? PathKind::kMissing : it->second;
  }
  bool inside_protected(const std::string& path) const;
  std::string protected_symlink_advice(const std::string& path) const;
  bool inside_glob_match(const std::string& path) const;
  Access visible_access(const std::string& path) const;
  std::vector<std::string> items() const;
  Status emit_base(Translation& out);
  Status emit_read_only_bind(const std::string& path, Translation& out);
  Status emit_item(const std::string& path, Translation& out);
  Status emit_missing(const std::string& path, Access desired, Translation& out);
  void emit_deny_existing(const std::string& path, PathKind path_kind, Translation& out);
  bool has_visible_descendant(const std::string& path) const;
  bool strictly_below_writable_root(const std::string& path) const;
  bool below_cache_overlay(const std::string& path) const;
  Status check_cache_overlays() const;
  void emit_cache_layers(Translation& out);
  void pin_carve_out_ancestors();
  void mask_dir(const std::string& path, const char* perms, Translation& out);

  void emit_proxy_socket(Translation& out);
  void emit_proc(Translation& out);
  void emit_kernel_interfaces(Translation& out);
  void emit_stage2(Translation& out);

  const ResolvedPolicy& policy_;
  const HostFacts& facts_;
  const std::string& proxy_socket_;  // network.mode proxy: the proxy's unix socket, else ""
  const std::vector<CacheOverlay>& overlays_;  // the caches stage 2 mounts copy-on-write
  std::set<std::string> pins_;  // ancestors of carve-outs, bound so they cannot be renamed
  std::vector<std::string> deferred_remounts_;
  std::set<std::string> done_synthetic_;
};

bool MountPlanner::inside_protected(const std::string& path) const {
  return std::any_of(policy_.protected_paths.begin(), policy_.protected_paths.end(),
                     [&](const ProtectedPath& p) { return path_is_within(path, p.path); });
}

// What to do about a symlink at a protected name (.git, .codex, .agents at the top of a writable
// root): a mask there would follow it (a mount resolves its destination), so the run is refused
// until the symlink is gone. In a sticky directory every user may write (/tmp) only its owner or
// root can remove it (unlink(2), EPERM for others), and it stays until then: name both, and the
// way around it (that directory not writable). "" for any other path.
std::string MountPlanner::protected_symlink_advice(const std::string& path) const {
  const auto p = std::find_if(policy_.protected_paths.begin(), policy_.protected_paths.end(),
                              [&](const ProtectedPath& q) { return q.path == path; });
  if (p == policy_.protected_paths.end()) return "";
  const auto owner = facts_.symlink_owners.find(path);
  const std::string who =
      owner == facts_.symlink_owners.end() ? "Its owner" : "Its owner (" + owner->second + ")";
  const std::string root = p->writable_root.empty() ? parent_of(path) : p->writable_root;
  return ". It is a protected name, and a symlink there is never followed. " + who +
         " or root must remove it (rm '" + path + "'" +
         (facts_.shared_directories.count(parent_of(path)) != 0
              ? "; in a directory every user may write nobody else can"
              : "") +
         "), or run with '" + root +
         "' not writable (e.g. TMPDIR set to a private directory "
         "when it is $TMPDIR or /tmp)";
}

bool MountPlanner::inside_glob_match(const std::string& path) const {
  for (const std::string& match : facts_.glob_matches) {
    if (path_is_within(path, match)) return true;
    auto canon = facts_.canonical.find(match);
    if (canon != facts_.canonical.end() && path_is_within(path, canon->second)) return true;
  }
  return false;
}

// The access the sandbox must give `path`: the rules, narrowed by protected paths (write
// becomes read), deny-glob matches and sbx's own state directory (both deny).
Access MountPlanner::visible_access(const std::string& path) const {
  if (inside_glob_match(path)) return Access::kDeny;
  if (!facts_.state_dir.empty() && path_is_within(path, facts_.state_dir)) return Access::kDeny;
  const Access access = rule_access(policy_, path);
  if (access == Access::kWrite && inside_protected(path)) return Access::kRead;
  return access;
}

// Every path where the access may change, shallowest first (a parent's mount must exist before
// a child is mounted over it; a child mounted first would be hidden by the parent's mount).
std::vector<std::string> MountPlanner::items() const {
  std::set<std::string> all;
  for (const PathRule& rule : policy_.rules) {
    if (rule.path != "/") all.insert(rule.path);
  }
  for (const ProtectedPath& p : policy_.protected_paths) all.insert(p.path);
  for (const std::string& match : facts_.glob_matches) {
    all.insert(match);
    auto canon = facts_.canonical.find(match);
    if (canon != facts_.canonical.end()) all.insert(canon->second);
  }
  if (!facts_.state_dir.empty()) all.insert(facts_.state_dir);
  for (const std::string& pin : pins_) all.insert(pin);
  std::vector<std::string> out(all.begin(), all.end());
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return depth_of(a) < depth_of(b);
  });
  return out;
}

Status MountPlanner::emit_base(Translation& out) {
  std::vector<std::string>& a = out.plan.options;
  const bool whole_fs = policy_.filesystem_kind != FilesystemKind::kRestricted;
  const Access root = whole_fs ? Access::kWrite : visible_access("/");
  if (root == Access::kWrite) {
    a.insert(a.end(), {"--bind", "/", "/"});
  } else if (root == Access::kRead) {
    // Read-only view of the whole host; bwrap's ro-bind is recursive and read-only throughout.
    a.insert(a.end(), {"--ro-bind", "/", "/"});
  } else {
    // Reads restricted: start from an empty root; only granted roots are bound in below.
    a.insert(a.end(), {"--tmpfs", "/"});
    deferred_remounts_.push_back("/");
    if (policy_.platform_defaults_readable) {
      for (const std::string& dir : minimal_platform_paths()) {
        if (kind(dir) == PathKind::kMissing) continue;
        Status bound = emit_read_only_bind(dir, out);
        if (!bound.ok()) return bound;
      }
    }
  }
  // A fresh minimal /dev (null, zero, random, tty, pts, shm) rather than the host's devices.
  a.insert(a.end(), {"--dev", "/dev"});
  return {};
}

// A read-only bind of `path`. Bind sources are opened at exec time by a walk that refuses
// symlinks (bind_fds.hpp), so a symlink (e.g. /bin -> usr/bin on merged-/usr systems) is bound
// from the target it resolved to when the plan was made: the same view bwrap gave before.
Status MountPlanner::emit_read_only_bind(const std::string& path, Translation& out) {
  std::string source = path;
  if (kind(path) == PathKind::kSymlink) {
    auto canon = facts_.canonical.find(path);
    if (canon == facts_.canonical.end() || canon->second.empty() || canon->second.front() != '/')
      return Error{"cannot bind '" + path + "': it is a symlink whose target is unknown"};
    source = canon->second;
  }
  out.plan.options.insert(out.plan.options.end(), {"--ro-bind", source, path});
  return {};
}

void MountPlanner::mask_dir(const std::string& path, const char* perms, Translation& out) {
  out.plan.options.insert(out.plan.options.end(), {"--perms", perms, "--tmpfs", path});
  // Remounted read-only only after everything nested was mounted: bwrap creates the nested
  // mount points inside this tmpfs, and --remount-ro is not recursive, so nested writable binds
  // stay writable.
  deferred_remounts_.push_back(path);
}

bool MountPlanner::has_visible_descendant(const std::string& path) const {
  for (const std::string& item : items()) {
    if (item != path && path_is_within(item, path) && visible_access(item) != Access::kDeny)
      return true;
  }
  return false;
}

void MountPlanner::emit_deny_existing(const std::string& path, PathKind path_kind,
                                      Translation& out) {
  if (path_kind == PathKind::kDirectory) {
    // An empty directory; traversable only (0111) when something below is granted again.
    mask_dir(path, has_visible_descendant(path) ? "0111" : "0555", out);
    return;
  }
  // A file (or socket, fifo, device): /dev/null bound over it. bwrap binds with nodev, so
  // opening it fails with EACCES, and the read-only bind keeps it from being replaced.
  out.plan.options.insert(out.plan.options.end(), {"--ro-bind", "/dev/null", path});
}

// A path that must not be writable (read or deny) does not exist. If its parent directory is
// writable in the sandbox, the command could create it, so the first missing component is
// masked: /dev/null bound read-only at that name, the same mask emit_deny_existing gives a file.
// Inside the sandbox the name is then a character device that cannot be opened (bwrap binds
// with nodev: EACCES), mkdir or creat of the name fails (EEXIST), nothing can be made below it
// (ENOTDIR), and as a mount point it cannot be removed or renamed (EBUSY).
//
// Why a device and not an empty directory (a read-only tmpfs): the mount point must exist on
// the host for the run (the parent is a writable bind of a host directory), and removing an
// empty directory frees its data block, which on a filesystem mounted with `discard` is a
// synchronous discard of milliseconds per run; a socket inode (or an empty file) has no data
// block. The host object is only the mount point: what the command sees is the device. That
// matters for git: repository discovery treats a `.git` that is neither a directory nor a
// regular file as "not a repository here" and goes on upward, as it did for the empty
// directory, whereas an empty regular `.git` would make git stop with "invalid gitfile format".
//
// sbx makes the mount point before bwrap runs (MountRegistry, host.hpp: a socket inode, which
// git on the host ignores too) and removes it after the run (synthetic_mount_points); bwrap
// itself would create an empty 0444 file.
Status MountPlanner::emit_missing(const std::string& path, Access desired, Translation& out) {
  std::string first_missing = path;
  for (const std::string& ancestor : strict_ancestors(path)) {
    if (kind(ancestor) == PathKind::kMissing) {
      first_missing = ancestor;
      break;
    }
  }
  if (visible_access(parent_of(first_missing)) != Access::kWrite) return {};
  if (!done_synthetic_.insert(first_missing).second) return {};
  out.plan.options.insert(out.plan.options.end(), {"--ro-bind", "/dev/null", first_missing});
  out.synthetic_mount_points.push_back(first_missing);
  const std::string parent = parent_of(first_missing);
  const std::string afterwards =
      facts_.shared_directories.count(parent) != 0
          ? std::string(
                "is created on the host and removed once no run of any user relies "
                "on it: every user may write '") +
                parent +
                "', so runs of all users there share a lock on the directory (a run that "
                "cannot take it leaves its socket there)"
          : "is created on the host for the run and removed afterwards";
  out.notes.push_back("'" + path + "' (" + std::string(access_word(desired)) +
                      ") does not exist: '" + first_missing +
                      "' is masked by /dev/null bound read-only (a device that cannot be "
                      "opened); its mount point (a socket inode, or an empty file) " +
                      afterwards);
  return {};
}

Status MountPlanner::emit_item(const std::string& path, Translation& out) {
  const Access desired = visible_access(path);
  const Access inherited = visible_access(parent_of(path));
  const PathKind path_kind = kind(path);
  const bool is_write_rule = desired == Access::kWrite &&
                             rule_access(policy_, path) == Access::kWrite &&
                             std::any_of(policy_.rules.begin(), policy_.rules.end(),
                                         [&](const PathRule& r) { return r.path == path; });
  // Writable roots (and the pinned ancestors of carve-outs) are always bind-mounted, even inside
  // another writable root: a mount point cannot be renamed or removed from inside the sandbox.
  // So is a read rule below a copy-on-write cache: the overlay makes its parent writable (into
  // the project's layer), and stage 2 moves every mount below the cache onto the overlay, so
  // the path stays read-only as the rule says (sbx's own state in ~/.cache, caches.hpp
  // CopyOnWrite::read_only).
  const bool read_rule_in_overlay = desired == Access::kRead && below_cache_overlay(path) &&
                                    std::any_of(policy_.rules.begin(), policy_.rules.end(),
                                                [&](const PathRule& r) { return r.path == path; });
  const bool force_bind = (desired == Access::kWrite && (is_write_rule || pins_.count(path) > 0)) ||
                          read_rule_in_overlay;
  if (desired == inherited && !force_bind) return {};
  if (path_kind == PathKind::kSymlink) {
    if (desired == Access::kDeny) {
      // Mounting over a symlink mounts over its target; the target is an item of its own.
      return {};
    }
    if (inherited == Access::kWrite || desired == Access::kWrite)
      return Error{"cannot enforce '" + path + "' (" + std::string(access_word(desired)) +
                   "): it is a symlink inside a writable root, which the command could replace" +
                   protected_symlink_advice(path)};
  }
  if (path_kind == PathKind::kMissing) {
    if (desired == Access::kWrite) {
      out.notes.push_back("writable root '" + path + "' does not exist; it is not mounted");
      return {};
    }
    return emit_missing(path, desired, out);
  }
  // A socket, FIFO or device inside a writable directory that must stay read-only. It cannot
  // be bound onto itself (bind sources are opened and checked at exec: directories and regular
  // files only, bind_fds.hpp), and what a read-only carve-out keeps, that it is not replaced,
  // removed or renamed, /dev/null bound over it keeps too (a mount point). This is what a
  // missing name's mask is on the host while another run holds it (a socket inode,
  // mount_registry.cpp): a run that starts then finds the name existing and masks it the same
  // way. Elsewhere (a read-only socket under an unreadable parent) the bind is still tried and
  // refused at exec, as before: hiding the socket would not be what the rule asks.
  if (desired == Access::kRead && inherited == Access::kWrite && path_kind == PathKind::kOther) {
    out.plan.options.insert(out.plan.options.end(), {"--ro-bind", "/dev/null", path});
    out.masked_existing.push_back(path);
    out.notes.push_back("'" + path +
                        "' (read) is neither a directory nor a regular file (a "
                        "socket, FIFO or device, e.g. another run's mount point): masked by "
                        "/dev/null bound read-only");
    return {};
  }
  switch (desired) {
    case Access::kWrite:
      out.plan.options.insert(out.plan.options.end(), {"--bind", path, path});
      break;
    case Access::kRead:
      return emit_read_only_bind(path, out);
    case Access::kDeny:
      emit_deny_existing(path, path_kind, out);
      break;
  }
  return {};
}

// Network mode proxy: the directory holding the proxy's unix socket (private to the user,
// created by core for this run) is bound read-only at the same path, after every other mount
// so no rule can hide it, and before the deferred read-only remounts (bwrap may have to create
// its mount point). Read-only and a mount point: the command can neither replace the socket
// nor rename the directory, so sbx-stage2's relay reaches exactly the proxy.
void MountPlanner::emit_proxy_socket(Translation& out) {
  if (proxy_socket_.empty()) return;
  const std::string directory = parent_of(proxy_socket_);
  out.plan.options.insert(out.plan.options.end(), {"--ro-bind", directory, directory});
}

// sbx-stage2 is what bwrap runs: when the policy leaves it unreadable (restricted reads such as
// :minimal, or a denied install prefix) the file alone is bound read-only at its path, after
// every rule's mount (none can hide it) and before the read-only remounts (bwrap may have to
// create its mount point in a tmpfs).
void MountPlanner::emit_stage2(Translation& out) {
  if (policy_.filesystem_kind != FilesystemKind::kRestricted) return;  // all of / is visible
  if (visible_access(facts_.stage2_path) != Access::kDeny) return;
  out.plan.options.insert(out.plan.options.end(),
                          {"--ro-bind", facts_.stage2_path, facts_.stage2_path});
}

// /proc is mounted after every other mount but before the deferred read-only remounts: with
// restricted reads the root is an empty tmpfs, and bwrap must still be able to create the /proc
// mount point in it (after `--remount-ro /` it fails with "Can't mkdir /proc").
void MountPlanner::emit_proc(Translation& out) {
  if (facts_.can_mount_proc) {
    out.plan.options.insert(out.plan.options.end(), {"--proc", "/proc"});
    return;
  }
  // Fallback, reported: the host cannot mount a fresh procfs here (e.g. a container with a
  // masked /proc). The host's /proc is never shown; the sandbox gets an empty read-only one.
  out.plan.options.insert(out.plan.options.end(), {"--perms", "0555", "--tmpfs", "/proc"});
  deferred_remounts_.push_back("/proc");
  out.notes.push_back(
      "this host cannot mount proc in a new pid namespace: /proc is empty "
      "inside the sandbox (programs that read /proc may fail)");
}

// The kernel's own interfaces under /proc and /sys that hold host-wide state, after --proc
// (kernel_interface_paths(), translate.hpp, has the list and why each is there). A read-only
// entry is the host's path bound read-only over the sandbox's: bwrap 0.8 can only bind from the
// host, and the file is the same kernel object in both procfs instances (sysctls resolve the
// namespaces of the process that opens them, proc_sys_lookup/sysctl_perm). A masked file gets
// /dev/null bound read-only (bwrap binds nodev: open fails with EACCES), a masked directory an
// empty read-only tmpfs, as Docker masks them. Only paths the host has are touched (bwrap would
// have to create a mount point in procfs, which fails); a read-only entry the host shows as
// something else than expected (e.g. a container runtime's /dev/null mask) is masked instead.
void MountPlanner::emit_kernel_interfaces(Translation& out) {
  for (const KernelInterface& entry : kernel_interface_paths()) {
    const PathKind host_kind = kind(entry.path);
    if (host_kind == PathKind::kMissing) continue;
    const bool under_proc = path_is_within(entry.path, "/proc");
    if (under_proc && !facts_.can_mount_proc) continue;  // an empty read-only tmpfs already
    const bool whole_fs = policy_.filesystem_kind != FilesystemKind::kRestricted;
    if (!under_proc && !whole_fs && visible_access(entry.path) == Access::kDeny)
      continue;  // not in the sandbox's view at all
    const PathKind expected = entry.directory ? PathKind::kDirectory : PathKind::kFile;
    if (entry.read_only && host_kind == expected) {
      out.plan.options.insert(out.plan.options.end(), {"--ro-bind", entry.path, entry.path});
    } else if (entry.directory) {
      mask_dir(entry.path, "0555", out);
    } else {
      out.plan.options.insert(out.plan.options.end(), {"--ro-bind", "/dev/null", entry.path});
    }
  }
}

bool MountPlanner::strictly_below_writable_root(const std::string& path) const {
  return std::any_of(policy_.rules.begin(), policy_.rules.end(), [&](const PathRule& r) {
    return r.access == Access::kWrite && r.path != path && path_is_within(path, r.path);
  });
}

// A carve-out (a denied or read-only path, a protected name, a deny-glob match, sbx's state
// directory) below a writable root is a mount point, so it cannot be renamed itself; but an
// ancestor between it and the writable root could be (`mv config cfg2` moves config/secrets
// out from under the path the next run will mask). So every existing writable directory
// strictly between a writable root and a carve-out is pinned: bound onto itself (keeping its
// access), shallowest first, before the carve-outs below it. A mount point cannot be renamed or
// removed from inside the sandbox (EBUSY).
void MountPlanner::pin_carve_out_ancestors() {
  std::vector<std::string> carve_outs;
  for (const PathRule& rule : policy_.rules) {
    if (rule.access != Access::kWrite) carve_outs.push_back(rule.path);
  }
  for (const ProtectedPath& p : policy_.protected_paths) carve_outs.push_back(p.path);
  for (const std::string& match : facts_.glob_matches) {
    carve_outs.push_back(match);
    auto canon = facts_.canonical.find(match);
    if (canon != facts_.canonical.end()) carve_outs.push_back(canon->second);
  }
  if (!facts_.state_dir.empty()) carve_outs.push_back(facts_.state_dir);
  for (const std::string& carve_out : carve_outs) {
    for (const std::string& a : strict_ancestors(carve_out)) {
      if (kind(a) == PathKind::kDirectory && strictly_below_writable_root(a) &&
          visible_access(a) == Access::kWrite)
        pins_.insert(a);
    }
  }
}

bool MountPlanner::below_cache_overlay(const std::string& path) const {
  return std::any_of(overlays_.begin(), overlays_.end(), [&](const CacheOverlay& o) {
    return o.path != path && path_is_within(path, o.path);
  });
}

// A copy-on-write cache (TransformRequest::cache_overlays) must be an existing directory the
// sandbox shows read-only: its own view is the overlay's lower layer. Writable, the command's
// writes there are meant for the host; denied (a rule, a deny-glob match, sbx's state), it is
// not the command's to read; below another one, the outer overlay shows it already; holding the
// working directory, it would hide the workspace the policy lets be written. Its path
// must be one overlayfs takes in its mount options (no ',', ':', '\\': fs/overlayfs/params.c).
Status MountPlanner::check_cache_overlays() const {
  for (const CacheOverlay& o : overlays_) {
    const auto refuse = [&o](const std::string& why) {
      return Error{"cannot mount the toolchain cache '" + o.path + "' copy-on-write: " + why};
    };
    if (o.path.size() < 2 || o.path.front() != '/' ||
        o.path.find_first_of(std::string(",:\\\n\0", 5)) != std::string::npos)
      return refuse("not an absolute path overlayfs can take");
    if (o.layers.empty() || o.layers.front() != '/') return refuse("its layers are not absolute");
    if (kind(o.path) != PathKind::kDirectory) return refuse("it is not a directory");
    if (visible_access(o.path) != Access::kRead)
      return refuse(std::string("the sandbox does not show it read-only (") +
                    std::string(access_word(visible_access(o.path))) + ")");
    if (below_cache_overlay(o.path)) return refuse("it lies below another copy-on-write cache");
    // The working directory stays the host's: stage 2's own would be left below the overlay.
    if (path_is_within(policy_.cwd, o.path)) return refuse("it holds the working directory");
  }
  return {};
}

// Each copy-on-write cache's lower layer (the host's directory, read-only) and its layers (the
// project's upper and work directories) bound where stage 2 finds them (cache_lower,
// cache_layers) and nothing of the sandbox lies: bwrap's own /dev. A separate bind, not the
// cache's own view: that one has the policy's mounts below it, which in a mount namespace a
// user namespace owns are locked to it, and overlayfs refuses a layer with locked mounts below
// (clone_private_mount(), fs/namespace.c). Stage 2 covers the directory once it has mounted
// the overlays.
void MountPlanner::emit_cache_layers(Translation& out) {
  for (std::size_t i = 0; i < overlays_.size(); ++i) {
    out.plan.options.insert(out.plan.options.end(),
                            {"--ro-bind", overlays_[i].path, cache_lower(i), "--bind",
                             overlays_[i].layers, cache_layers(i)});
  }
}

Status MountPlanner::plan(Translation& out) {
  pin_carve_out_ancestors();
  Status status = check_cache_overlays();
  if (!status.ok()) return status;
  status = emit_base(out);
  if (!status.ok()) return status;
  if (policy_.filesystem_kind == FilesystemKind::kRestricted) {
    for (const std::string& path : items()) {
      status = emit_item(path, out);
      if (!status.ok()) return status;
    }
  }
  emit_proxy_socket(out);
  emit_stage2(out);
  emit_proc(out);
  emit_kernel_interfaces(out);
  emit_cache_layers(out);
  for (const std::string& path : deferred_remounts_)
    out.plan.options.insert(out.plan.options.end(), {"--remount-ro", path});
  return {};
}

// Network mode proxy needs the running proxy: its port (the relay listens on it inside the
// namespace) and its unix socket (what the relay forwards to). `sbx exec` starts the proxy and
// fills both in; without them the mode cannot be enforced.
Status check_proxy(const TransformRequest& request) {
  const NetworkPolicy& network = request.policy.network;
  if (network.proxy_ports.size() != 1 || network.proxy_ports.front() == 0)
    return Error{
        "network.mode 'proxy': the bwrap backend needs exactly one proxy port in "
        "network.proxy_ports (sbx exec starts the proxy and sets it)"};
  const std::string& socket = request.proxy_socket;
  if (socket.empty() || socket.front() != '/' || socket.back() == '/' ||
      socket.find("/../") != std::string::npos || socket.rfind('/') == 0)
    return Error{
        "network.mode 'proxy': the bwrap backend needs the proxy's unix socket as an "
        "absolute path inside a private directory (TransformRequest::proxy_socket, set "
        "by sbx exec), got '" +
        socket + "'"};
  return {};
}

Status check_supported(const TransformRequest& request, const HostFacts& facts) {
  const ResolvedPolicy& policy = request.policy;
  if (facts.bwrap_path.empty() || facts.bwrap_path.front() != '/')
    return Error{"bwrap: no trusted bubblewrap binary (install the 'bubblewrap' package)"};
  if (facts.stage2_path.empty() || facts.stage2_path.front() != '/')
    return Error{"bwrap: the host gave no sbx-stage2 helper path; reinstall sbx"};
  if (request.argv.empty() || request.argv.front().empty() || request.argv.front()[0] != '/')
    return Error{"bwrap: argv[0] must be an absolute path"};
  if (request.cwd.empty() || request.cwd.front() != '/')
    return Error{"bwrap: the working directory must be absolute"};
  if (policy.network.mode == NetworkMode::kProxy) {
    Status proxy = check_proxy(request);
    if (!proxy.ok()) return proxy;
  }
  for (const std::string& entry : request.env) {
    if (entry.find('=') == std::string::npos)
      return Error{"bwrap: environment entry '" + entry + "' has no '='"};
  }
  return {};
}

void append_namespaces(const TransformRequest& request, Translation& out) {
  const ResolvedPolicy& policy = request.policy;
  std::vector<std::string>& a = out.plan.options;
  // New user, pid, ipc and UTS namespaces always (explicit: bwrap skips the user namespace for
  // uid 0 otherwise); a new network namespace (only loopback) unless the network is enabled.
  // UTS: /proc/sys/kernel/hostname and domainname are the UTS namespace's (proc_do_uts_string);
  // /proc/sys is read-only inside, but a namespace of the run's own keeps the host's names out
  // of reach whatever else is wrong (sethostname needs CAP_SYS_ADMIN, which the command never has).
  a.insert(a.end(), {"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"});
  if (policy.network.mode != NetworkMode::kEnabled) a.push_back("--unshare-net");
  // The command dies with sbx, cannot reach the caller's terminal (TIOCSTI), keeps no
  // capability, and sbx-stage2 is PID 1 of the namespace (it reaps and forwards signals).
  a.insert(a.end(), {"--die-with-parent", "--new-session", "--cap-drop", "ALL"});
  // Copy-on-write caches: stage 2 mounts them, with these capabilities of the sandbox's user
  // namespace only, and drops every capability before anything of the command runs
  // (kCacheCaps says why each; stage2/cache_overlays.hpp).
  if (!request.cache_overlays.empty()) {
    for (const char* cap : kCacheCaps) a.insert(a.end(), {"--cap-add", cap});
  }
  a.emplace_back("--as-pid-1");
}

// True when the sandbox may not write everywhere: a restricted filesystem whose root is not
// writable (else bwrap binds / read-write and there is nothing for a write layer to hold).
bool writes_restricted(const ResolvedPolicy& policy) {
  return policy.filesystem_kind == FilesystemKind::kRestricted &&
         rule_access(policy, "/") != Access::kWrite;
}

void append_stage2(const TransformRequest& request, const HostFacts& facts, Translation& out) {
  BwrapPlan& plan = out.plan;
  plan.chdir = request.cwd;
  plan.stage2 = facts.stage2_path;
  // open: every socket (network enabled); private (restricted, inside --unshare-net's empty
  // namespace): TCP/UDP over IPv4/IPv6 on the namespace's own loopback, no unix socket() but
  // socketpair(AF_UNIX); proxy: the same filter plus the relay to the proxy's socket.
  switch (request.policy.network.mode) {
    case NetworkMode::kEnabled:
      plan.net = Stage2Net::kOpen;
      break;
    case NetworkMode::kRestricted:
      plan.net = Stage2Net::kPrivate;
      break;
    case NetworkMode::kProxy:
      plan.net = Stage2Net::kProxy;
      plan.proxy_port = request.policy.network.proxy_ports.front();
      plan.proxy_socket = request.proxy_socket;
      break;
  }
  // Writes limited to some roots: sbx-stage2 enters its Landlock write layer before the command
  // (linux/landlock/write_layer.hpp: read-only mounts do not stop writes to host FIFOs).
  // The copy-on-write caches take writes too (into the project's layer): the layer grants them
  // beneath the overlay, which stage 2 mounts before it enters the layer.
  for (const CacheOverlay& overlay : request.cache_overlays)
    plan.cache_overlays.push_back(overlay.path);
  if (writes_restricted(request.policy)) {
    plan.write_layer = true;
    plan.write_roots = writable_roots(request.policy);
    plan.write_roots.insert(plan.write_roots.end(), plan.cache_overlays.begin(),
                            plan.cache_overlays.end());
  }
  // The host unix sockets the command may connect to, for sbx's unix-socket supervisor
  // (unix_supervisor.hpp).
  plan.unix_sockets = request.policy.network.unix_sockets;
  // The command's environment goes to stage 2 or (direct launch) to bwrap's --setenv, never
  // into bwrap's own environment: bwrap and stage 2 run with an empty one, so LD_PRELOAD and
  // friends cannot act before the filter is on. Printed as --env pairs; exec hands it over on a
  // descriptor (launch_form.hpp) so that it is not world-readable in /proc while the command
  // runs.
  plan.env = request.env;
  plan.command = request.argv;
}

}  // namespace

std::string_view to_string(PathKind kind) {
  switch (kind) {
    case PathKind::kMissing:
      return "missing";
    case PathKind::kDirectory:
      return "dir";
    case PathKind::kFile:
      return "file";
    case PathKind::kSymlink:
      return "symlink";
    case PathKind::kOther:
      return "other";
  }
  return "missing";
}

std::vector<std::string> stage2_arguments(const BwrapPlan& plan) {
  std::vector<std::string> out = {"--net"};
  switch (plan.net) {
    case Stage2Net::kOpen:
      out.emplace_back("open");
      break;
    case Stage2Net::kPrivate:
      out.emplace_back("private");
      break;
    case Stage2Net::kProxy:
      out.insert(out.end(), {"proxy", "--proxy-port", std::to_string(plan.proxy_port),
                             "--proxy-socket", plan.proxy_socket});
      break;
  }
  for (const std::string& path : plan.cache_overlays)
    out.insert(out.end(), {"--cache-overlay", path});
  if (plan.write_layer) {
    out.emplace_back("--write-layer");
    for (const std::string& root : plan.write_roots) out.insert(out.end(), {"--write-root", root});
  }
  return out;
}

std::vector<std::string> stage2_form(const BwrapPlan& plan) {
  std::vector<std::string> out = {plan.bwrap};
  out.insert(out.end(), plan.options.begin(), plan.options.end());
  out.insert(out.end(), {"--chdir", plan.chdir, "--", plan.stage2});
  const std::vector<std::string> arguments = stage2_arguments(plan);
  out.insert(out.end(), arguments.begin(), arguments.end());
  for (const std::string& socket : plan.unix_sockets)
    out.insert(out.end(), {kAllowUnixSocketOption, socket});
  for (const std::string& entry : plan.env) out.insert(out.end(), {"--env", entry});
  out.emplace_back("--");
  out.insert(out.end(), plan.command.begin(), plan.command.end());
  return out;
}

std::string cache_lower(std::size_t index) {
  return std::string(kCacheLayersDir) + "/" + std::to_string(index) + "/lower";
}

std::string cache_layers(std::size_t index) {
  return std::string(kCacheLayersDir) + "/" + std::to_string(index) + "/layers";
}

const std::vector<std::string>& minimal_platform_paths() {
  static const std::vector<std::string> paths = {"/bin",   "/etc",    "/lib",  "/lib32",
                                                 "/lib64", "/libx32", "/sbin", "/usr"};
  return paths;
}

const std::vector<KernelInterface>& kernel_interface_paths() {
  // Docker's (moby oci/defaults.go) ReadonlyPaths and MaskedPaths; plugins/bwrap/README.md,
  // "Root in the sandbox", says where sbx differs and why.
  static const std::vector<KernelInterface> paths = {
      {"/proc/bus", true, true},
      {"/proc/fs", true, true},
      {"/proc/irq", true, true},
      {"/proc/sys", true, true},
      {"/proc/sysrq-trigger", false, true},
      {"/proc/acpi", true, false},
      {"/proc/asound", true, false},
      {"/proc/interrupts", false, false},
      {"/proc/kcore", false, false},
      {"/proc/keys", false, false},
      // Not Docker's: the flags, map count and memory cgroup of every physical page frame, 0400
      // root (fs/proc/page.c; kernel Documentation/admin-guide/mm/pagemap.rst), which tell root a
      // physical memory layout to aim at (Rowhammer-style attacks).
      {"/proc/kpagecgroup", false, false},
      {"/proc/kpagecount", false, false},
      {"/proc/kpageflags", false, false},
      {"/proc/latency_stats", false, false},
      {"/proc/sched_debug", false, false},
      {"/proc/scsi", true, false},
      {"/proc/timer_list", false, false},
      {"/proc/timer_stats", false, false},
      {"/sys/devices/virtual/powercap", true, false},
      {"/sys/firmware", true, false},
  };
  return paths;
}

std::vector<std::string> paths_of_interest(const ResolvedPolicy& policy,
                                           const std::string& state_dir,
                                           const std::vector<CacheOverlay>& overlays) {
  std::set<std::string> out;
  auto add_with_ancestors = [&out](const std::string& path) {
    for (const std::string& a : strict_ancestors(path)) out.insert(a);
    out.insert(path);
  };
  for (const PathRule& rule : policy.rules) add_with_ancestors(rule.path);
  for (const ProtectedPath& p : policy.protected_paths) add_with_ancestors(p.path);
  for (const std::string& dir : minimal_platform_paths()) out.insert(dir);
  for (const KernelInterface& entry : kernel_interface_paths()) out.insert(entry.path);
  if (!state_dir.empty()) out.insert(state_dir);
  for (const CacheOverlay& overlay : overlays) add_with_ancestors(overlay.path);
  out.erase("/");
  return {out.begin(), out.end()};
}

Result<Translation> translate(const TransformRequest& request, const HostFacts& facts) {
  Status status = check_supported(request, facts);
  if (!status.ok()) return status.failure();
  Translation out;
  out.plan.bwrap = facts.bwrap_path;
  const std::string no_socket;
  MountPlanner planner(
      request.policy, facts,
      request.policy.network.mode == NetworkMode::kProxy ? request.proxy_socket : no_socket,
      request.cache_overlays);
  status = planner.plan(out);
  if (!status.ok()) return status.failure();
  append_namespaces(request, out);
  append_stage2(request, facts, out);
  out.argv = stage2_form(out.plan);
  if (request.policy.network.mode == NetworkMode::kProxy)
    out.notes.push_back(
        "network only through sbx's filtering proxy: the sandbox has an empty network namespace; "
        "sbx-stage2 relays 127.0.0.1:" +
        std::to_string(request.policy.network.proxy_ports.front()) +
        " inside it to the proxy's unix socket " + request.proxy_socket +
        " (its directory bound read-only), a port the command cannot take; the command may use "
        "TCP/UDP on the namespace's own loopback (IPv4/IPv6), no unix sockets");
  if (!request.cache_overlays.empty()) {
    std::string paths;
    for (const std::string& path : out.plan.cache_overlays)
      paths += (paths.empty() ? "'" : ", '") + path + "'";
    out.notes.push_back(
        "toolchain caches copy-on-write: " + paths +
        " (the host's directory the overlay's read-only lower layer, the project's layer in "
        "sbx's state its upper one; every mount below it kept on top). sbx-stage2 mounts them "
        "with CAP_SYS_ADMIN, CAP_DAC_OVERRIDE and CAP_SETPCAP of the sandbox's user namespace "
        "and drops every capability before the command runs (the stage-2 launch)");
  }
  if (!request.policy.deny_globs.empty())
    out.notes.push_back("deny globs were expanded at launch (" +
                        std::to_string(facts.glob_matches.size()) +
                        " matches); files created later are not covered");
  return out;
}

}  // namespace sbx::bwrap
