// The bwrap backend's write layer: a Landlock domain, entered right before the command's execve
// (by stage 2 as PID 1, or by stage 2's waiter in the direct launch, before it forks), that
// lets the command write only beneath the policy's writable roots and the sandbox's own device
// and proc entries (plugins/bwrap/README.md, "Host FIFOs and sockets").
//
// Why bwrap's read-only mounts are not enough: a read-only mount refuses only writes to what
// lives *in* the filesystem. Opening a FIFO for writing on one works: fs/open.c
// do_dentry_open() takes write access to the mount (mnt_want_write(), EROFS) only when
// !special_file(mode), and fs/inode.c sb_permission() returns EROFS for regular files,
// directories and symlinks only; `nodev` covers device nodes only. So a host FIFO (/run/initctl, a
// daemon's control pipe, a user's `mkfifo`) in the sandbox's read-only view takes writes.
// Landlock's LANDLOCK_ACCESS_FS_WRITE_FILE is checked in hook_file_open() for any file opened for
// writing, FIFOs included (Documentation/userspace-api/landlock.rst), so a domain that handles it
// and grants it beneath the writable roots only closes that. Reads, listing and execution are not
// handled: the mounts decide what is visible.
//
// Landlock refuses mount(2) to a process whose domain handles a filesystem right
// (security/landlock/fs.c hook_sb_mount()), so the layer can only be entered after bwrap made
// every mount: never by sbx before it execs bwrap.
//
// The layer is also the run's Landlock scope (ABI 6+: abstract unix sockets and signals), and
// the run's only Landlock domain: no scope-only domain may lie beneath it. Landlock denies
// reparenting (a rename(2) or link(2) into another directory) in every layer that does not
// grant LANDLOCK_ACCESS_FS_REFER, whether the layer handles that right or not
// (Documentation/userspace-api/landlock.rst: REFER "is the only access right which is always
// considered handled by any ruleset"; security/landlock/access.h
// _LANDLOCK_ACCESS_FS_INITIALLY_DENIED, since "landlock: Fix file reparenting without explicit
// LANDLOCK_ACCESS_FS_REFER", Linux 6.0), and it refuses with EXDEV. A scope-only layer handles
// no filesystem right, so no rule of it can grant REFER: stacked under this layer it turned
// every cross-directory rename and link inside the writable roots into EXDEV, which rename(2)
// documents as "oldpath and newpath are not on the same mounted filesystem" (tools that fall
// back to copying hid it; rustc's rename of its rmeta cannot, so `cargo build` failed). Alone,
// such a layer costs nothing: a domain that handles no filesystem right is never consulted for
// paths. (A real EXDEV stays: rename(2) does not work across mount points "even if the same
// filesystem is mounted on both", and each bind mount of the plan is one: /tmp and the
// workspace, the masks of protected names.)
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

// Below ABI 2 (Linux < 5.19) a domain handling filesystem rights refuses every rename or link
// across directories (LANDLOCK_ACCESS_FS_REFER did not exist yet), which would break ordinary
// `mv` inside the workspace; the layer is then left out and the plan says so.
inline constexpr int kWriteLayerMinAbi = 2;

// What the layer grants besides the writable roots: the device files bwrap's --dev binds from
// the host (write_file, truncate), the sandbox's own /dev/pts and /dev/shm (every write right),
// the sandbox's own /proc (write_file, truncate: /proc/self/* files; host-wide ones are
// read-only or masked by mounts), and the files behind descriptors 0-2 the command already
// holds open for writing (a caller's terminal or output file, reopened as /dev/stdout).
const std::vector<std::string>& write_layer_device_files();
const std::vector<std::string>& write_layer_sandbox_dirs();

// Enters the layer: writes only beneath `writable_roots` and the entries above, and (ABI 6+)
// abstract unix sockets and signals scoped to the domain, so the caller enters no scope of its
// own (above). Nothing when the kernel's Landlock ABI is below kWriteLayerMinAbi (or Landlock is
// off). Requires no_new_privs. Error names the step and path; the caller must not run the
// command then.
Status apply_write_layer(const std::vector<std::string>& writable_roots);

}  // namespace sbx::stage2
