// The state guard of a run (state_guard.hpp says why).
#include "run/state_guard.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#ifndef _WIN32
#include <fcntl.h>
#include <stdio.h>  // renameat2 (glibc 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "sbx/sdk/private_state.hpp"
#endif

namespace sbx {

namespace {

std::size_t depth_of(const std::string& path) {
  return path == "/" ? 0 : static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// `root`, then every directory below it down to `dir` (which lies within `root`).
void add_chain(const std::string& root, const std::string& dir, std::vector<std::string>& out) {
  std::string at = root;
  const auto add = [&out](const std::string& path) {
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  };
  add(at);
  std::size_t begin = root == "/" ? 1 : root.size() + 1;
  while (begin <= dir.size() && at != dir) {
    const std::size_t slash = std::min(dir.find('/', begin), dir.size());
    at = dir.substr(0, slash);
    add(at);
    begin = slash + 1;
  }
}

}  // namespace

std::vector<std::string> chmodable_state_ancestors(const ResolvedPolicy& policy,
                                                   const std::vector<std::string>& state_dirs) {
  const std::vector<std::string> roots = policy.filesystem_kind == FilesystemKind::kRestricted
                                             ? writable_roots(policy)
                                             : std::vector<std::string>{"/"};
  std::vector<std::string> out;
  for (const std::string& dir : state_dirs)
    for (const std::string& root : roots)
      if (path_is_within(dir, root)) add_chain(root, dir, out);
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return depth_of(a) < depth_of(b);
  });
  return out;
}

#ifdef _WIN32

StateModeGuard::StateModeGuard(const std::vector<std::string>& /*dirs*/,
                               const std::vector<std::string>& /*links*/) {}
StateModeGuard::~StateModeGuard() = default;
std::vector<std::string> StateModeGuard::finish() { return {}; }

#else

namespace {

std::string mode_text(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// The target of the symlink `name` in the directory `dir_fd` (or AT_FDCWD), or nullopt.
std::optional<std::string> read_link(int dir_fd, const std::string& name) {
  std::string target(PATH_MAX, '\0');
  const ssize_t n = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
  if (n < 0 || static_cast<std::size_t>(n) >= target.size()) return std::nullopt;
  target.resize(static_cast<std::size_t>(n));
  return target;
}

// chmod(2) through the O_PATH descriptor's /proc/self/fd name: the noted inode, whatever is at
// its path now (fchmod(2) refuses O_PATH descriptors).
bool set_mode(int fd, mode_t mode) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  return ::chmod(proc.c_str(), mode & 07777) == 0;
}

}  // namespace

StateModeGuard::StateModeGuard(const std::vector<std::string>& dirs,
                               const std::vector<std::string>& links) {
  const uid_t uid = ::geteuid();
  for (const std::string& path : links) {
    struct stat st {};
    // Only this user's own links: what a command of this user could have made or replaced.
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode) || st.st_uid != uid) continue;
    std::optional<std::string> target = read_link(AT_FDCWD, path);
    if (!target) continue;
    links_.push_back(NotedLink{path, std::move(*target), static_cast<unsigned long long>(st.st_dev),
                               static_cast<unsigned long long>(st.st_ino)});
  }
  for (const std::string& path : dirs) {
    const int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (fd < 0) continue;
    // Only this user's own: what a command of this user may chmod, and what sbx may set back.
    if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid) {
      ::close(fd);
      continue;
    }
    noted_.push_back(Noted{path, fd, static_cast<unsigned>(st.st_mode & 07777),
                           static_cast<unsigned long long>(st.st_dev),
                           static_cast<unsigned long long>(st.st_ino)});
  }
}

StateModeGuard::~StateModeGuard() {
  for (const Noted& n : noted_) ::close(n.fd);
}

std::vector<std::string> StateModeGuard::finish() {
  const uid_t uid = ::geteuid();
  std::vector<std::string> warnings;
  std::vector<std::string> widened;
  for (const Noted& n : noted_) {
    struct stat now {};
    if (::fstat(n.fd, &now) != 0 || now.st_uid != uid) continue;
    struct stat before {};
    before.st_uid = uid;
    before.st_mode = S_IFDIR | static_cast<mode_t>(n.mode);
    const std::optional<std::string> why = private_state::why_shared_dir(n.path, now, uid);
    if (!why || private_state::why_shared_dir(n.path, before, uid)) continue;
    widened.push_back(n.path);
    const bool reset = set_mode(n.fd, static_cast<mode_t>(n.mode));
    const int error = errno;
    warnings.push_back("the sandboxed command changed the mode of '" + n.path + "' from " +
                       mode_text(n.mode) + " to " + mode_text(static_cast<unsigned>(now.st_mode)) +
                       ": " + *why + ", and sbx's state directories lie " +
                       "below it (a later run would refuse them); " +
                       (reset ? "sbx set it back to " + mode_text(n.mode)
                              : "sbx could not set it back (" + std::string(std::strerror(error)) +
                                    "): chmod it back to " + mode_text(n.mode) + " yourself"));
  }
  // While a directory on the way was wide, another user could rename what is below it: a noted
  // directory below one that is not at its name any more is never trusted again.
  std::vector<std::string> moved;
  for (const Noted& n : noted_) {
    const bool below_widened = std::any_of(widened.begin(), widened.end(), [&](const auto& w) {
      return w != n.path && path_is_within(n.path, w);
    });
    const bool below_moved = std::any_of(moved.begin(), moved.end(),
                                         [&](const auto& m) { return path_is_within(n.path, m); });
    if (!below_widened || below_moved) continue;
    const auto [parent, name] = private_state::split_path(n.path);
    const int parent_fd = ::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat at {};
    if (parent_fd < 0) continue;
    if (::fstatat(parent_fd, name.c_str(), &at, AT_SYMLINK_NOFOLLOW) == 0 &&
        (static_cast<unsigned long long>(at.st_dev) != n.dev ||
         static_cast<unsigned long long>(at.st_ino) != n.ino)) {
      const std::string aside = name + ".replaced-" + std::to_string(at.st_ino);
      const bool renamed =
          ::renameat2(parent_fd, name.c_str(), parent_fd, aside.c_str(), RENAME_NOREPLACE) == 0;
      const int error = errno;
      moved.push_back(n.path);
      warnings.push_back("'" + n.path +
                         "' is not the directory sbx noted before the run: something was put "
                         "at its name while a directory above it was writable by others; " +
                         (renamed ? "sbx moved it to '" + parent + "/" + aside +
                                        "' and never uses it (the next run makes a fresh one)"
                                  : "sbx could not move it aside (" +
                                        std::string(std::strerror(error)) +
                                        "): remove it before the next run"));
    }
    ::close(parent_fd);
  }
  for (std::string& warning : restore_links()) warnings.push_back(std::move(warning));
  for (const std::string& warning : warnings) spdlog::warn("{}", warning);
  return warnings;
}

std::vector<std::string> StateModeGuard::restore_links() const {
  std::vector<std::string> warnings;
  for (const NotedLink& link : links_) {
    const auto [parent, name] = private_state::split_path(link.path);
    const int parent_fd = ::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent_fd < 0) continue;
    struct stat at {};
    const bool present = ::fstatat(parent_fd, name.c_str(), &at, AT_SYMLINK_NOFOLLOW) == 0;
    const std::optional<std::string> target =
        present && S_ISLNK(at.st_mode) ? read_link(parent_fd, name) : std::optional<std::string>();
    if (present && static_cast<unsigned long long>(at.st_dev) == link.dev &&
        static_cast<unsigned long long>(at.st_ino) == link.ino && target == link.target) {
      ::close(parent_fd);
      continue;
    }
    // Whatever stands at the name now is kept, aside, never used; the noted link goes back.
    std::string aside;
    bool moved = !present;
    if (present) {
      aside = name + ".replaced-" + std::to_string(at.st_ino);
      moved = ::renameat2(parent_fd, name.c_str(), parent_fd, aside.c_str(), RENAME_NOREPLACE) == 0;
    }
    const bool restored = moved && ::symlinkat(link.target.c_str(), parent_fd, name.c_str()) == 0;
    const int error = errno;
    ::close(parent_fd);
    warnings.push_back(
        "the symlink '" + link.path + "' (to '" + link.target +
        "'), on the way to sbx's state directories, was " + (present ? "replaced" : "removed") +
        " during the run (a later run would have used " + "whatever it points to now); " +
        (restored ? "sbx put it back" +
                        (present ? " and moved what was there to '" + parent + "/" + aside + "'"
                                 : std::string())
                  : "sbx could not put it back (" + std::string(std::strerror(error)) +
                        "): check it and recreate it with ln -s '" + link.target + "' '" +
                        link.path + "'"));
  }
  return warnings;
}

#endif

}  // namespace sbx
