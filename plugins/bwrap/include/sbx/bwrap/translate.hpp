// The bwrap translator: a pure function from a resolved policy, the command and explicit facts
// about the host to the argv that runs the command under bubblewrap and sbx-stage2.
//
// Pure means: it reads nothing but its arguments (no filesystem, no environment), so the same
// inputs always give the same argv and golden tests can pin it. Everything it needs to know
// about the host (bwrap's path and features, the stage-2 helper, which paths exist and what
// they are, what the deny globs matched) is gathered beforehand by gather_host_facts() and
// expand_deny_globs() and passed in.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::bwrap {

// What lstat() said about one path. Paths absent from HostFacts::paths count as kMissing.
enum class PathKind : std::uint8_t { kMissing, kDirectory, kFile, kSymlink, kOther };

std::string_view to_string(PathKind kind);

struct HostFacts {
  std::string bwrap_path;      // absolute, canonical, outside every writable root
  std::string stage2_path;     // absolute path of sbx-stage2
  bool can_mount_proc = true;  // false: /proc becomes an empty read-only tmpfs (reported)
  // Where exec keeps its mount-point registry; masked inside the sandbox when visible there.
  std::string state_dir;
  std::map<std::string, PathKind> paths;         // lstat of every path the translator asks about
  std::map<std::string, std::string> canonical;  // realpath of each kSymlink entry in `paths`
  // Directories among `paths` that every user may write (S_IWOTH: /tmp, /var/tmp): a mount
  // point made there stays on the host (MountRegistry says why).
  std::set<std::string> shared_directories;
  // Owner of each kSymlink entry in `paths` ("name, uid N"): for the refusal of a symlink at a
  // protected name, which only its owner or root can remove from a sticky directory.
  std::map<std::string, std::string> symlink_owners;
  std::vector<std::string> glob_matches;  // deny-glob matches found at launch (absolute)
};

// How sbx-stage2 filters the network (its --net): `private` in a network namespace of the
// sandbox's own (network restricted), `open` (enabled), `proxy` (the relay to sbx's proxy).
enum class Stage2Net : std::uint8_t { kPrivate, kOpen, kProxy };

// The plan, typed: what exec() runs. The translator fills it and prints it as stage2_form();
// it reaches exec() unchanged in the plan's detail (plan.hpp, BwrapPlanDetail), which takes the
// launch from these fields and never from the printed argv (launch_form.hpp).
struct BwrapPlan {
  std::string bwrap;  // bwrap's path (facts.bwrap_path)
  // bwrap's options as the translator planned them (mounts, then namespaces, --cap-drop ALL and
  // --as-pid-1), without --chdir; bind sources by path.
  std::vector<std::string> options;
  std::string chdir;   // the working directory inside (bwrap's --chdir, its last option)
  std::string stage2;  // sbx-stage2's path (facts.stage2_path)
  Stage2Net net = Stage2Net::kPrivate;
  std::uint16_t proxy_port = 0;  // kProxy: the port stage 2's relay listens on inside
  std::string proxy_socket;      // kProxy: the proxy's unix socket the relay forwards to
  // Writes limited to some roots: stage 2's Landlock write layer over write_roots
  // (linux/landlock/write_layer.hpp).
  bool write_layer = false;
  std::vector<std::string> write_roots;
  // Host unix sockets the command may connect to (policy network.unix_sockets), for sbx's
  // unix-socket supervisor (unix_supervisor.hpp); printed as --allow-unix-socket.
  std::vector<std::string> unix_sockets;
  // The toolchain caches stage 2 mounts copy-on-write (TransformRequest::cache_overlays), by
  // their paths, in the request's order: the i-th one's lower layer is bound at
  // cache_lower(i), its layers at cache_layers(i) (kCacheLayersDir); printed as
  // --cache-overlay PATH. Such a plan takes the stage-2 launch, whose bwrap adds kCacheCaps.
  std::vector<std::string> cache_overlays;
  std::vector<std::string> env;      // the command's environment, KEY=VALUE
  std::vector<std::string> command;  // absolute path first
  friend bool operator==(const BwrapPlan&, const BwrapPlan&) = default;
};

// Where bwrap binds each copy-on-write cache's two host directories for stage 2, which mounts
// the overlay at the cache's own path and then covers this directory with an empty read-only
// tmpfs (stage2/cache_overlays.hpp): inside bwrap's own /dev, below no rule of any policy.
inline constexpr const char* kCacheLayersDir = "/dev/.sbx-caches";
std::string cache_lower(std::size_t index);   // kCacheLayersDir/<index>/lower (read-only)
std::string cache_layers(std::size_t index);  // kCacheLayersDir/<index>/layers (upper, work)

// The capabilities bwrap leaves stage 2 (in the sandbox's user namespace) for a plan with
// copy-on-write caches, each needed to mount them and dropped by stage 2 before anything of the
// command runs: CAP_SYS_ADMIN (mount(2), open_tree(2), move_mount(2), unshare(CLONE_NEWNS));
// CAP_DAC_OVERRIDE (overlayfs makes its work directory mode 000, ovl_workdir_create(), and
// its mount-time checks then create files in it with the mounter's credentials: without it an
// unprivileged user's mount fails with EACCES); CAP_SETPCAP (PR_CAPBSET_DROP, capabilities(7):
// bwrap keeps added capabilities in the bounding set, which only it lets stage 2 empty).
inline constexpr const char* kCacheCaps[] = {"CAP_SYS_ADMIN", "CAP_DAC_OVERRIDE", "CAP_SETPCAP"};

// Stage 2's own arguments for `plan` (what it is told in every launch): "--net MODE",
// "--proxy-port P --proxy-socket S" in proxy mode, one "--cache-overlay PATH" per copy-on-write
// cache, "--write-layer" and one "--write-root R" per root with the write layer.
std::vector<std::string> stage2_arguments(const BwrapPlan& plan);

// The plan as printed (`sbx exec --dry-run`, `sbx debug`; the goldens pin it), runnable by hand:
// bwrap OPTIONS --chdir DIR -- sbx-stage2 stage2_arguments() [--allow-unix-socket S]...
// [--env KEY=VALUE]... -- COMMAND...
std::vector<std::string> stage2_form(const BwrapPlan& plan);

// The translation: the typed plan and its printed form, plus what a person should be told and
// what exec must clean up.
struct Translation {
  BwrapPlan plan;
  std::vector<std::string> argv;  // stage2_form(plan); argv[0] == facts.bwrap_path
  std::vector<std::string> notes;
  // Mount points that must be created on the host (missing protected names and other missing
  // read-only/denied paths under writable roots), each a socket inode (or an empty regular file)
  // with /dev/null bound over it. Exec makes them before the run and removes them after it.
  std::vector<std::string> synthetic_mount_points;
  // Existing sockets, FIFOs and devices under writable roots masked by /dev/null bound over
  // them: such a socket may be another run's mount point for a missing name, which that run
  // removes when it ends unless this run holds it too (the plan's host_paths.kept).
  std::vector<std::string> masked_existing;
};

// Paths the translator will look up in HostFacts::paths for this policy: every rule path and
// its ancestors, every protected path, the :minimal platform directories, the kernel interfaces,
// the state dir and the copy-on-write caches with their ancestors.
std::vector<std::string> paths_of_interest(const ResolvedPolicy& policy,
                                           const std::string& state_dir,
                                           const std::vector<CacheOverlay>& overlays = {});

// The kernel's interfaces under /proc and /sys that the sandbox gets read-only or masked, with
// Docker's default ReadonlyPaths and MaskedPaths as the anchor: host-wide state that a uid-0
// command could otherwise change or read, because those files check the uid, not a capability
// (sysctls: sysctl_perm() compares the euid with GLOBAL_ROOT_UID). bwrap 0.8 covers only
// /proc/sys, sysrq-trigger, irq and bus, and only those its access(W_OK) finds writable:
// /proc/sys itself answers EACCES to any write check (proc_sys_permission() on the directory),
// so bwrap leaves the whole tree writable. Those the host has get a mount of their own
// (MountPlanner::emit_kernel_interfaces).
struct KernelInterface {
  const char* path;
  bool directory;
  bool read_only;  // true: readable, read-only; false: masked (neither readable nor writable)
};
const std::vector<KernelInterface>& kernel_interface_paths();

// The platform directories ":minimal" makes readable (those that exist get bound read-only).
const std::vector<std::string>& minimal_platform_paths();

// Translates. Errors name the rule that cannot be enforced (never a silent drop): unsupported
// filesystem kinds, proxy network, unix-socket allow-lists, a relative command, a writable root
// that is a symlink, and so on.
Result<Translation> translate(const TransformRequest& request, const HostFacts& facts);

}  // namespace sbx::bwrap
