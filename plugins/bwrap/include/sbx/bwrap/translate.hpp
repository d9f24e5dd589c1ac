// The bwrap translator: a pure function from a resolved policy, the command and explicit facts
// about the host to the argv that runs the command under bubblewrap and sbx-stage2.
//
// Pure means: it reads nothing but its arguments (no filesystem, no environment), so the same
// inputs always give the same argv and golden tests can pin it. Everything it needs to know
// about the host (bwrap's path and features, the stage-2 helper, which paths exist and what
// they are, what the deny globs matched) is gathered beforehand by gather_host_facts() and
// expand_deny_globs() and passed in.
#pragma once

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

// The plan: bwrap argv, plus what a person should be told and what exec must clean up.
struct Translation {
  std::vector<std::string> argv;  // argv[0] == facts.bwrap_path
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
// its ancestors, every protected path, the :minimal platform directories, the kernel interfaces
// and the state dir.
std::vector<std::string> paths_of_interest(const ResolvedPolicy& policy,
                                           const std::string& state_dir);

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
