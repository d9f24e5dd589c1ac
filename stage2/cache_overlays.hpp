// The toolchain caches copy-on-write (core/src/caches/README.md, plugins/bwrap/README.md,
// "Toolchain caches"): sbx-stage2, started by bwrap with CAP_SYS_ADMIN, CAP_DAC_OVERRIDE and
// CAP_SETPCAP of the sandbox's user namespace (translate.hpp kCacheCaps), mounts one overlay
// per cache at the cache's own path before anything of the command runs, then drops every
// capability and checks that none is left (drop_held_capabilities). Any failed step fails the
// run (125): it never goes on with a capability, nor without an overlay it was given.
//
// For the i-th cache (`--cache-overlay PATH`), bwrap has bound the host's directory read-only
// at kCacheLayersDir/i/lower and the project's layers at kCacheLayersDir/i/layers
// (plugins/bwrap/include/sbx/bwrap/translate.hpp). Stage 2 then:
//  1. enters a mount namespace of its own (unshare(CLONE_NEWNS)), private throughout. For an
//     ordinary user bwrap maps the user to uid 0 to mount devpts and then enters a second user
//     namespace mapping the user back (bubblewrap.c, opt_needs_devpts), so stage 2's
//     capabilities are in a user namespace that does not own bwrap's mount namespace, and
//     mounting needs CAP_SYS_ADMIN in the owner (mount_namespaces(7)). The new namespace is
//     owned by stage 2's user namespace; for such a user its copied mounts are locked to their
//     parents and their read-only flags to them (mount_namespaces(7), "Restrictions on mount
//     namespaces"): stage 2 can cover them, not undo them. For root (no second user
//     namespace) the same steps hold.
//  2. per cache, clones every mount strictly below PATH that is not below another such mount,
//     with what is below it (open_tree(2) OPEN_TREE_CLONE | AT_RECURSIVE: the policy's masks,
//     carve-outs and writable roots there), mounts the overlay at PATH (mount(2), overlayfs:
//     lowerdir the read-only bind of the host's directory, upperdir and workdir the project's;
//     "userxattr", since the mounter is in a user namespace and trusted.* xattrs need
//     CAP_SYS_ADMIN in the initial one, Linux 5.11; "index=off"; nosuid, nodev), checks that
//     the overlay is what PATH now shows, and moves each clone back to its place on the
//     overlay (move_mount(2)). The view below PATH is then the policy's, but that what the
//     command writes there goes to the upper layer. Every path is opened with
//     RESOLVE_NO_SYMLINKS (openat2(2)), the places on the overlay also RESOLVE_BENEATH and
//     RESOLVE_NO_XDEV: the upper layer is what earlier commands wrote.
//  3. covers kCacheLayersDir with an empty read-only tmpfs: the command has no path to the raw
//     lower or upper layers (umount2(2) would refuse the user's locked mounts, EINVAL). The
//     overlays keep private clones of their layers' mounts (clone_private_mount(),
//     fs/namespace.c).
#pragma once

#include <string>
#include <vector>

#include "bwrap_checks.hpp"
#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

// The mount points strictly below `target` in `mounts` (as /proc/self/mountinfo lists them)
// that lie below no other of them, each once, in their order: what step 2 clones. Pure.
std::vector<std::string> top_mounts_below(const std::vector<ActualMount>& mounts,
                                          const std::string& target);

// The overlayfs mount options of the cache at `index` (its lower and layers below
// `layers_dir`). Pure.
std::string overlay_options(const std::string& layers_dir, std::size_t index);

// Steps 1 to 3 for `targets` (absolute paths, none below another), with the layers bound below
// `layers_dir`. The error names the step and the path.
Status mount_cache_overlays(const std::vector<std::string>& targets, const std::string& layers_dir);

// Drops every capability: the bounding set (PR_CAPBSET_DROP of each one held, which needs
// CAP_SETPCAP: capabilities(7)), the ambient set (PR_CAP_AMBIENT_CLEAR_ALL), then effective,
// permitted and inheritable (capset(2), CAP_SETPCAP last among them). A process that holds none
// does nothing. Then verify_no_capabilities.
Status drop_held_capabilities();

// None held: effective, permitted, inheritable (capget(2)), bounding (PR_CAPBSET_READ of every
// capability the kernel knows) and ambient (PR_CAP_AMBIENT_IS_SET). The error names the set.
Status verify_no_capabilities();

}  // namespace sbx::stage2
