#include "plugins/trusted_fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/magic.h>
#include <sys/vfs.h>
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace sbx::plugins {
namespace {

#ifdef O_PATH
// O_PATH: the descriptor only names the directory (no read permission needed, no side effects).
constexpr int kDirectoryFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#else
constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#endif
// O_NOFOLLOW: a symlink fails with ELOOP instead of being followed. O_NONBLOCK: opening a FIFO
// planted under a candidate's name returns at once (and fstat then refuses it).
constexpr int kFileFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;

std::string errno_text(int error) { return std::strerror(error); }

// Splits an absolute path into its components. "." and ".." are refused: the walk compares
// components lexically against the trust root, and ".." would make that comparison lie.
Result<std::vector<std::string>> split_absolute(const std::string& path) {
  if (path.empty() || path.front() != '/') return Error{"'" + path + "' is not an absolute path"};
  if (path.find('\0') != std::string::npos) return Error{"path contains a NUL byte"};
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part == "." || part == "..")
      return Error{"'" + path + "' contains a '" + part + "' component"};
    if (!part.empty()) parts.push_back(std::move(part));
    start = end + 1;
  }
  return parts;
}

std::string join_parts(const std::vector<std::string>& parts, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += "/" + parts[i];
  return out.empty() ? "/" : out;
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string symlink_target(int dir_fd, const std::string& name) {
  std::array<char, 4096> buffer{};
  const ssize_t length = readlinkat(dir_fd, name.c_str(), buffer.data(), buffer.size() - 1);
  if (length < 0) return "?";
  return std::string(buffer.data(), static_cast<std::size_t>(length));
}

std::string file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// Explains why openat(dir_fd, name, kDirectoryFlags) failed with `error`. ENOTDIR/ELOOP are
// what O_NOFOLLOW|O_DIRECTORY give for a symlink, so look at the entry itself to name it.
std::string describe_directory_failure(int dir_fd, const std::string& name, const std::string& path,
                                       int error) {
  if (error == ENOENT) return path + " does not exist";
  if (error == ENOTDIR || error == ELOOP) {
    struct stat st {};
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      return path + " is a symlink (to " + symlink_target(dir_fd, name) +
             "); expected a real directory: symlinked components are never followed";
    }
    return path + " is not a directory";
  }
  return "cannot open " + path + ": " + errno_text(error);
}

// Which owner/mode rule a directory of a walk must pass.
enum class DirectoryRule {
  kStrict,          // the trust root and everything below it: nobody else may add entries
  kAboveTrustRoot,  // a directory above the trust root, walked only for loading by path
};

// A sticky directory above the trust root (/tmp holding a checkout) is no risk for loading by
// path: the kernel lets only an entry's owner, the directory's owner or a CAP_FOWNER process
// rename or remove an entry there, and the next component must itself be owned by root or the
// trusted owner, so nobody else can make the path name another directory. Others may add
// entries of their own, which is harmless above the trust root. The directory itself must
// still be owned by root or the trusted owner.
bool sticky_ancestor_passes(const struct stat& st, const Owners& owners) {
  const bool owner_ok =
      st.st_uid == 0 || (owners.trusted_owner && st.st_uid == *owners.trusted_owner);
  return owner_ok && (st.st_mode & S_ISVTX) != 0;
}

// Opens `name` below dir_fd as a directory and applies the owner/mode rule to it.
DirectoryWalk open_checked_directory(int dir_fd, const std::string& name, const std::string& path,
                                     const Owners& owners,
                                     DirectoryRule rule = DirectoryRule::kStrict) {
  DirectoryWalk walk;
  UniqueFd fd(openat(dir_fd, name.c_str(), kDirectoryFlags));
  if (!fd.valid()) {
    const int error = errno;
    walk.error = describe_directory_failure(dir_fd, name, path, error);
    walk.missing = error == ENOENT;
    return walk;
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    walk.error = "cannot stat " + path + ": " + errno_text(errno);
    return walk;
  }
  const bool sticky_pass =
      rule == DirectoryRule::kAboveTrustRoot && sticky_ancestor_passes(st, owners);
  if (!sticky_pass) {
    if (std::optional<std::string> why = check_owner_and_mode(st, path, owners)) {
      walk.error = *why;
      return walk;
    }
  }
  walk.fd = std::move(fd);
  return walk;
}

bool is_prefix(const std::vector<std::string>& prefix, const std::vector<std::string>& parts) {
  return prefix.size() <= parts.size() && std::equal(prefix.begin(), prefix.end(), parts.begin());
}

}  // namespace

std::string mode_string(mode_t mode) {
  std::string out(4, '0');
  unsigned bits = static_cast<unsigned>(mode) & 07777u;
  for (std::size_t i = 4; i-- > 0; bits >>= 3u) out[i] = static_cast<char>('0' + (bits & 7u));
  return out;
}

std::optional<std::string> check_owner_and_mode(const struct stat& st, const std::string& what,
                                                const Owners& owners) {
  // Whoever owns a plugin or a directory above it can replace the code sbx runs; only root and
  // the owner of libsbx itself (who could replace libsbx anyway) are no escalation.
  const bool owner_ok =
      st.st_uid == 0 || (owners.trusted_owner && st.st_uid == *owners.trusted_owner);
  if (!owner_ok) {
    std::string expected = "root (uid 0)";
    if (owners.trusted_owner && *owners.trusted_owner != 0)
      expected += " or uid " + std::to_string(*owners.trusted_owner) + " (the owner of libsbx)";
    return what + " is owned by uid " + std::to_string(st.st_uid) + "; expected " + expected;
  }
  // Group or world write on a directory lets others add or rename entries (the sticky bit only
  // limits deleting other users' files, so /tmp is refused too); on a file, lets them rewrite it.
  const bool group = (st.st_mode & S_IWGRP) != 0;
  const bool others = (st.st_mode & S_IWOTH) != 0;
  if (group || others) {
    const char* who = group && others ? "group and others" : group ? "group" : "others";
    const std::string found =
        what + " is writable by " + who + " (mode " + mode_string(st.st_mode) + ")";
    // A sticky directory that others may write is a shared one (/tmp, /var/tmp: sticky(7)):
    // removing its write bits would break every other user of it, so "chmod go-w" is the wrong
    // fix; the plugins belong somewhere else.
    if (S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0 && others)
      return found +
             ": a shared directory (sticky, like /tmp) where anyone can add entries never holds, "
             "nor lies above, trusted plugins; install them below a directory only root or the "
             "owner of libsbx can write (the install's <libdir>/sbx/backends, or a directory "
             "in your home for an sbx you installed yourself)";
    return found + "; expected no write permission for group or others (chmod go-w)";
  }
  return std::nullopt;
}

DirectoryWalk open_trusted_directory(const std::string& directory, const std::string& trust_root,
                                     const Owners& owners) {
  DirectoryWalk walk;
  Result<std::vector<std::string>> root_parts = split_absolute(trust_root);
  Result<std::vector<std::string>> parts = split_absolute(directory);
  if (!root_parts || !parts) {
    walk.error = !root_parts ? "trust root " + root_parts.error() : parts.error();
    return walk;
  }
  if (!is_prefix(*root_parts, *parts)) {
    walk.error = directory + " is outside the trust root " + trust_root;
    return walk;
  }
  // The trust root is the caller's statement of what is trusted above it; it is still checked
  // itself. AT_FDCWD is irrelevant for an absolute path.
  const std::string root_path = join_parts(*root_parts, root_parts->size());
  walk = open_checked_directory(AT_FDCWD, root_path, root_path, owners);
  for (std::size_t i = root_parts->size(); i < parts->size() && walk.fd.valid(); ++i) {
    DirectoryWalk next =
        open_checked_directory(walk.fd.get(), (*parts)[i], join_parts(*parts, i + 1), owners);
    walk = std::move(next);
  }
  return walk;
}

DirectoryWalk open_trusted_directory_chain(const std::string& directory,
                                           const std::string& trust_root, const Owners& owners) {
  Result<std::vector<std::string>> root_parts = split_absolute(trust_root);
  Result<std::vector<std::string>> parts = split_absolute(directory);
  if (!root_parts || !parts || !is_prefix(*root_parts, *parts)) {
    // The same refusals, with the same words, as the walk from the trust root.
    return open_trusted_directory(directory, trust_root, owners);
  }
  // From "/" down: directories strictly above the trust root may be sticky (see
  // sticky_ancestor_passes); the trust root and everything below it get the strict rule.
  const std::size_t root_depth = root_parts->size();
  auto rule_at = [root_depth](std::size_t depth) {
    return depth < root_depth ? DirectoryRule::kAboveTrustRoot : DirectoryRule::kStrict;
  };
  DirectoryWalk walk = open_checked_directory(AT_FDCWD, "/", "/", owners, rule_at(0));
  for (std::size_t i = 0; i < parts->size() && walk.fd.valid(); ++i) {
    DirectoryWalk next = open_checked_directory(walk.fd.get(), (*parts)[i],
                                                join_parts(*parts, i + 1), owners, rule_at(i + 1));
    walk = std::move(next);
  }
  return walk;
}

Result<TrustedFile> open_trusted_file(int dir_fd, const std::string& dir_path,
                                      const std::string& name, const Owners& owners) {
  TrustedFile file;
  file.path = join(dir_path, name);
  file.owners = owners;
  file.fd = UniqueFd(openat(dir_fd, name.c_str(), kFileFlags));
  if (!file.fd.valid()) {
    const int error = errno;
    if (error == ELOOP) {
      return Error{"the file is a symlink (to " + symlink_target(dir_fd, name) +
                   "); expected a regular file: symlinks are never followed"};
    }
    return Error{"cannot open the file: " + errno_text(error)};
  }
  if (fstat(file.fd.get(), &file.st) != 0)
    return Error{"cannot stat the file: " + errno_text(errno)};
  if (!S_ISREG(file.st.st_mode))
    return Error{"the file is " + file_type(file.st.st_mode) + "; expected a regular file"};
  if (std::optional<std::string> why = check_owner_and_mode(file.st, "the file", owners))
    return Error{*why};
  if (file.st.st_size == 0) return Error{"the file is empty (0 bytes); expected a shared object"};
  return file;
}

Result<TrustedFile> open_trusted_path(const std::string& path, const std::string& trust_root,
                                      const Owners& owners) {
  const std::size_t slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash + 1 == path.size())
    return Error{"'" + path + "' is not an absolute file path"};
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = path.substr(slash + 1);
  DirectoryWalk walk = open_trusted_directory(dir, trust_root, owners);
  if (!walk.fd.valid()) return Error{path + ": " + walk.error};
  Result<TrustedFile> file = open_trusted_file(walk.fd.get(), dir, name, owners);
  if (!file) return file.failure().prefixed(path + ": ");
  return file;
}

Result<std::vector<std::string>> list_directory(int dir_fd) {
  // A readable descriptor of the same directory: O_PATH descriptors cannot be read, but "."
  // relative to one is the very directory that was checked (no path is looked up again).
  const int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot read the directory: " + errno_text(errno)};
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    const int error = errno;
    close(fd);
    return Error{"cannot read the directory: " + errno_text(error)};
  }
  std::vector<std::string> names;
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> proc_fd_path(int fd, const struct stat& st) {
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  struct stat seen {};
  // stat() follows the magic link to the open file. If /proc is missing (or something else is
  // mounted there) the inode differs and the caller must not load by any other name.
  if (stat(path.c_str(), &seen) != 0) {
    return Error{"cannot reach the open file through " + path +
                 " (is /proc mounted?): " + errno_text(errno) + "; refusing to load by path"};
  }
  if (seen.st_dev != st.st_dev || seen.st_ino != st.st_ino) {
    return Error{path + " does not lead to the checked file (is /proc mounted?); refusing to load"};
  }
  return path;
}

DescriptorNaming probe_descriptor_naming() {
#if defined(__linux__)
  constexpr const char* kFdDir = "/proc/self/fd";
  struct statfs fs {};
  if (statfs(kFdDir, &fs) != 0) {
    return {false, std::string(kFdDir) + " is not reachable (" + errno_text(errno) +
                       "): /proc is not mounted here"};
  }
  // Only the kernel's procfs resolves /proc/self/fd/N to the open file; anything else mounted
  // at /proc (a tmpfs, a bind mount) could hold links to files of someone else's choosing.
  if (fs.f_type != PROC_SUPER_MAGIC) {
    std::array<char, 32> type{};
    std::snprintf(type.data(), type.size(), "0x%lx", static_cast<unsigned long>(fs.f_type));
    return {false, std::string(kFdDir) + " is not on a procfs (filesystem type " + type.data() +
                       "): /proc is hidden or replaced here"};
  }
  UniqueFd probe(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  if (!probe.valid() || fstat(probe.get(), &st) != 0)
    return {false, "cannot open / to probe " + std::string(kFdDir) + ": " + errno_text(errno)};
  const std::string named = std::string(kFdDir) + "/" + std::to_string(probe.get());
  struct stat seen {};
  if (stat(named.c_str(), &seen) != 0 || seen.st_dev != st.st_dev || seen.st_ino != st.st_ino)
    return {false, named + " does not lead to the open descriptor: /proc/self/fd is unusable"};
  return {true, "/proc/self/fd is a procfs that names open descriptors"};
#else
  return {false, "this platform has no /proc/self/fd"};
#endif
}

}  // namespace sbx::plugins
