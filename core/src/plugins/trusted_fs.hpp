// File-descriptor based trust checks for plugin files and helper binaries
// (core/src/plugins/README.md). Private to libsbx.
//
// Every check works on an open descriptor, never on a path that is looked up again later: a
// directory chain is walked one component at a time with openat(O_PATH|O_NOFOLLOW) + fstat, and
// a file is opened with O_NOFOLLOW relative to the checked directory. What is checked is what
// the caller then uses (for a plugin: /proc/self/fd/N), so renaming or swapping a path after the
// check cannot change what is loaded or executed. Where /proc/self/fd is not usable (macOS, a
// Linux without procfs at /proc) a plugin can only be loaded by its path: then the whole chain
// from "/" must be unwritable by anyone but root and the trusted owner
// (open_trusted_directory_chain; above the trust root a root- or owner-owned sticky directory
// such as /tmp also passes), so nobody else can make the path name another file.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

#include "sbx/core/platform_types.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/unique_fd.hpp"

namespace sbx::plugins {

using sbx::UniqueFd;  // owns a file descriptor (sbx/sdk/unique_fd.hpp)

// Who may own a trusted file or directory: root always, and optionally one more uid (the owner
// of libsbx, so a per-user or build-tree install works without root).
struct Owners {
  std::optional<uid_t> trusted_owner;
};

// "0755", "1777": the permission bits of `mode` as chmod(1) writes them.
std::string mode_string(mode_t mode);

// Why `st` (of the object named `what`) may not be trusted: owned by someone other than root or
// the trusted owner, or writable by group or others. nullopt if it passes. A sticky
// world-writable directory (/tmp) is rejected too: anyone could create entries in it.
std::optional<std::string> check_owner_and_mode(const struct stat& st, const std::string& what,
                                                const Owners& owners);

// The outcome of walking a directory chain.
struct DirectoryWalk {
  UniqueFd fd;           // O_PATH descriptor of the final directory, when trusted
  std::string error;     // why not, naming the component (empty on success)
  bool missing = false;  // a component does not exist: nothing there to load
};

// Walks from `trust_root` (absolute; "/" in production) down to `directory` (absolute, inside
// the trust root), opening each component with O_PATH|O_DIRECTORY|O_NOFOLLOW relative to the
// previous one. The trust root itself and every component below it must be a real directory
// (a symlinked component is named and refused, never followed), owned by root or the trusted
// owner, and not writable by group or others. "." and ".." components are refused because they
// would let a lexical prefix check disagree with what is opened.
DirectoryWalk open_trusted_directory(const std::string& directory, const std::string& trust_root,
                                     const Owners& owners);

// open_trusted_directory, but the walk starts at "/" whatever the trust root, so every directory
// above the trust root is checked too (the trust root still bounds where `directory` may be).
// For a caller that will look the path up again by name (loading by path): any directory in
// the chain that someone else can write would let them swap what that later lookup finds.
// Above the trust root (never at or below it) a sticky directory owned by root or the trusted
// owner passes although others may write it: the kernel lets nobody else rename or remove the
// root- or owner-owned entry below it, so the path keeps naming the checked directories.
DirectoryWalk open_trusted_directory_chain(const std::string& directory,
                                           const std::string& trust_root, const Owners& owners);

// A file that passed the checks, held open.
struct TrustedFile {
  UniqueFd fd;        // O_RDONLY|O_CLOEXEC descriptor of the checked inode
  struct stat st {};  // fstat of fd
  std::string path;   // <directory>/<name>, for messages and logs
  Owners owners;      // who the checks trusted: the same rule applies to its dependencies
};

// Opens `name` in the trusted directory `dir_fd` (whose path is `dir_path`) with
// O_RDONLY|O_CLOEXEC|O_NOFOLLOW|O_NONBLOCK (a symlink fails with ELOOP and is reported as one;
// O_NONBLOCK keeps a FIFO from blocking the open) and checks the open inode: a regular file,
// owned by root or the trusted owner, not writable by group or others, not empty. Error text
// does not repeat the path (the caller prefixes it).
Result<TrustedFile> open_trusted_file(int dir_fd, const std::string& dir_path,
                                      const std::string& name, const Owners& owners);

// open_trusted_directory(dirname(path)) + open_trusted_file(basename(path)). Error text names
// the offending path.
Result<TrustedFile> open_trusted_path(const std::string& path, const std::string& trust_root,
                                      const Owners& owners);

// Every entry name in the directory behind `dir_fd` (an O_PATH descriptor is fine), except "."
// and "..", sorted bytewise.
Result<std::vector<std::string>> list_directory(int dir_fd);

// "/proc/self/fd/<fd>" after verifying that it names the same inode as `st` (fstat of fd). Error
// when /proc is not mounted or disagrees: callers fail closed rather than fall back to a path.
Result<std::string> proc_fd_path(int fd, const struct stat& st);

// Whether a checked descriptor can be named as /proc/self/fd/N here: /proc/self/fd must be on a
// procfs (statfs says PROC_SUPER_MAGIC; a directory that is merely named /proc proves nothing,
// anyone who can mount can put files there) and must lead to the inode of a descriptor opened
// for the probe. `reason` says what was found, for `sbx backends --probe`.
struct DescriptorNaming {
  bool usable = false;
  std::string reason;
};
DescriptorNaming probe_descriptor_naming();

}  // namespace sbx::plugins
