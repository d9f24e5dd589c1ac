// See cache_overlays.hpp.
#include "cache_overlays.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "sbx/sdk/types.hpp"
#include "sbx/sdk/unique_fd.hpp"

namespace sbx::stage2 {
namespace {

std::string errno_text(int error) { return std::strerror(error); }

// `path` (relative to `dir`, or absolute with AT_FDCWD) opened O_PATH without following any
// symlink on the way (openat2(2), Linux 5.6; overlayfs in a user namespace needs 5.11 anyway),
// with `extra` resolve flags; -1 and errno on failure.
int open_path(int dir, const std::string& path, unsigned long long extra) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | extra;
  return static_cast<int>(::syscall(SYS_openat2, dir, path.c_str(), &how, sizeof how));
}

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// Step 1: a mount namespace of stage 2's own user namespace, where nothing stage 2 mounts
// propagates to another namespace.
Status own_mount_namespace() {
  if (::unshare(CLONE_NEWNS) != 0)
    return Error{"unshare(CLONE_NEWNS): " + errno_text(errno) +
                 " (bwrap did not leave CAP_SYS_ADMIN)"};
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return Error{"making the mount namespace private: " + errno_text(errno)};
  return {};
}

// One mount below a cache, cloned with what is below it (step 2): the clone's descriptor and
// where it goes back, relative to the cache.
struct Kept {
  UniqueFd clone;
  std::string relative;
};

Result<std::vector<Kept>> clone_mounts_below(const std::vector<ActualMount>& mounts,
                                             const std::string& target) {
  std::vector<Kept> out;
  for (const std::string& path : top_mounts_below(mounts, target)) {
    const UniqueFd at(open_path(AT_FDCWD, path, 0));
    if (!at.valid())
      return Error{"the mount at '" + path + "' below '" + target + "': " + errno_text(errno)};
    const int clone = static_cast<int>(
        ::syscall(SYS_open_tree, at.get(), "",
                  AT_EMPTY_PATH | OPEN_TREE_CLONE | AT_RECURSIVE | OPEN_TREE_CLOEXEC));
    if (clone < 0) return Error{"open_tree of the mount at '" + path + "': " + errno_text(errno)};
    out.push_back({UniqueFd(clone), path.substr(target.size() + 1)});
  }
  return out;
}

// The overlay at `target` (an open directory of the sandbox's view), then checked to be what
// the path shows.
Result<UniqueFd> mount_overlay(const std::string& target, const std::string& options) {
  const UniqueFd below(open_path(AT_FDCWD, target, 0));
  struct stat st {};
  if (!below.valid() || ::fstat(below.get(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Error{"'" + target + "' is not a directory the sandbox shows: " + errno_text(errno)};
  if (::mount("overlay", fd_path(below.get()).c_str(), "overlay", MS_NOSUID | MS_NODEV,
              options.c_str()) != 0)
    return Error{"mount -t overlay -o " + options + " on '" + target + "': " + errno_text(errno)};
  UniqueFd root(open_path(AT_FDCWD, target, 0));
  struct statfs fs {};
  if (!root.valid() || ::fstatfs(root.get(), &fs) != 0 ||
      static_cast<unsigned long>(fs.f_type) != OVERLAYFS_SUPER_MAGIC)
    return Error{"'" + target + "' does not show the overlay just mounted there"};
  // overlayfs mounts read-only, rather than failing, when it cannot make its work directory
  // ("mounting read-only", fs/overlayfs/super.c ovl_make_workdir): a cache the tools could not
  // write is no copy-on-write cache, and the run would fail later and less clearly.
  if ((fs.f_flags & ST_RDONLY) != 0)
    return Error{"the overlay at '" + target +
                 "' came up read-only (overlayfs could not use its work directory " + options +
                 "; the kernel log says why)"};
  return root;
}

// The clones back in their places on the overlay `root` of `target`.
Status move_back(std::vector<Kept>& kept, int root, const std::string& target) {
  for (Kept& k : kept) {
    const UniqueFd place(open_path(root, k.relative, RESOLVE_BENEATH | RESOLVE_NO_XDEV));
    if (!place.valid())
      return Error{"'" + target + "/" + k.relative +
                   "' (a mount below the cache) has no place on the overlay: " + errno_text(errno) +
                   "; the project's layer replaced it (`sbx cache clear --project` removes it)"};
    if (::syscall(SYS_move_mount, k.clone.get(), "", place.get(), "",
                  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
      return Error{"move_mount onto '" + target + "/" + k.relative + "': " + errno_text(errno)};
  }
  return {};
}

// Step 3: no path left to the layers' own mounts.
Status cover(const std::string& layers_dir) {
  if (::mount("tmpfs", layers_dir.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0") != 0)
    return Error{"covering '" + layers_dir + "': " + errno_text(errno)};
  return {};
}

// Every capability number the kernel knows: PR_CAPBSET_READ answers EINVAL past the last.
template <typename F>
Status each_capability(F&& f) {
  for (int cap = 0; cap < 64; ++cap) {
    const int held = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (held < 0 && errno == EINVAL) return {};
    if (held < 0) return Error{"PR_CAPBSET_READ: " + errno_text(errno)};
    if (Status s = f(cap, held == 1); !s.ok()) return s;
  }
  return {};
}

}  // namespace

std::vector<std::string> top_mounts_below(const std::vector<ActualMount>& mounts,
                                          const std::string& target) {
  std::vector<std::string> below;
  for (const ActualMount& m : mounts) {
    if (m.path == target || !path_is_within(m.path, target)) continue;
    bool seen = false;
    for (const std::string& b : below) seen = seen || b == m.path;
    if (!seen) below.push_back(m.path);
  }
  std::vector<std::string> out;
  for (const std::string& b : below) {
    bool nested = false;
    for (const std::string& other : below)
      nested = nested || (other != b && path_is_within(b, other));
    if (!nested) out.push_back(b);
  }
  return out;
}

std::string overlay_options(const std::string& layers_dir, std::size_t index) {
  const std::string at = layers_dir + "/" + std::to_string(index);
  return "lowerdir=" + at + "/lower,upperdir=" + at + "/layers/upper,workdir=" + at +
         "/layers/work,userxattr,index=off";
}

Status mount_cache_overlays(const std::vector<std::string>& targets,
                            const std::string& layers_dir) {
  if (Status own = own_mount_namespace(); !own.ok()) return own;
  Result<std::string> text = read_and_close(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!text.ok()) return Error{"/proc/self/mountinfo: " + text.error()};
  Result<std::vector<ActualMount>> mounts = parse_mountinfo(*text);
  if (!mounts.ok()) return Error{"/proc/self/mountinfo: " + mounts.error()};
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::string& target = targets[i];
    Result<std::vector<Kept>> kept = clone_mounts_below(*mounts, target);
    if (!kept.ok()) return kept.failure();
    Result<UniqueFd> root = mount_overlay(target, overlay_options(layers_dir, i));
    if (!root.ok()) return root.failure();
    if (Status moved = move_back(*kept, root->get(), target); !moved.ok()) return moved;
  }
  return cover(layers_dir);
}

Status drop_held_capabilities() {
  // The bounding set first: dropping from it needs CAP_SETPCAP, which capset drops below.
  Status bounding = each_capability([](int cap, bool held) -> Status {
    if (held && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      return Error{"PR_CAPBSET_DROP of capability " + std::to_string(cap) + ": " +
                   errno_text(errno)};
    return {};
  });
  if (!bounding.ok()) return bounding;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    return Error{"PR_CAP_AMBIENT_CLEAR_ALL: " + errno_text(errno)};
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return Error{"capset: " + errno_text(errno)};
  return verify_no_capabilities();
}

Status verify_no_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return Error{"capget: " + errno_text(errno)};
  for (const auto& d : data) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0)
      return Error{"the sandbox still holds capabilities (effective, permitted or inheritable)"};
  }
  return each_capability([](int cap, bool held) -> Status {
    if (held) return Error{"capability " + std::to_string(cap) + " is still in the bounding set"};
    // EINVAL: a kernel without ambient capabilities (before Linux 4.3) holds none.
    const int ambient = ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
    if (ambient > 0 || (ambient < 0 && errno != EINVAL))
      return Error{"capability " + std::to_string(cap) + " is still ambient (or unreadable)"};
    return {};
  });
}

}  // namespace sbx::stage2
