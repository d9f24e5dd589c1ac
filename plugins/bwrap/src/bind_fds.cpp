// Binding checked descriptors instead of paths (see bind_fds.hpp for why).
#include "sbx/bwrap/bind_fds.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>

#include "sbx/sdk/unique_fd.hpp"

namespace sbx::bwrap {
namespace {

int openat2_no_symlinks(const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;  // a symlink anywhere, the last component included: ELOOP
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
}

// Kernels before 5.6 have no openat2: one component at a time, each opened with O_NOFOLLOW
// relative to its parent's descriptor (O_PATH|O_NOFOLLOW opens a symlink itself, so fstat
// shows it and it is refused). "." and ".." never appear in a plan's canonical paths; refused.
int walk_no_symlinks(const std::string& path) {
  int current = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  std::size_t start = 1;
  while (current >= 0 && start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string name = path.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    int next = -1;
    struct stat st {};
    if (name == "." || name == "..") {
      errno = EINVAL;
    } else if ((next = ::openat(current, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC)) >= 0 &&
               (::fstat(next, &st) != 0 || S_ISLNK(st.st_mode))) {
      if (S_ISLNK(st.st_mode)) errno = ELOOP;
      const int error = errno;
      ::close(next);
      errno = error;
      next = -1;
    }
    const int error = errno;
    ::close(current);
    errno = error;
    current = next;
  }
  return current;
}

int open_no_symlinks(const std::string& path) {
  const int fd = openat2_no_symlinks(path);
  if (fd >= 0 || errno != ENOSYS) return fd;
  return walk_no_symlinks(path);
}

// What the kernel says the descriptor is: the path it was reached by, as now seen from this
// mount namespace.
std::string path_of_fd(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::string buffer(4096, '\0');
  const ssize_t n = ::readlink(link.c_str(), buffer.data(), buffer.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= buffer.size()) return {};
  buffer.resize(static_cast<std::size_t>(n));
  return buffer;
}

bool is_bind(std::string_view option) { return option == "--bind" || option == "--ro-bind"; }

// What an option of the translator's vocabulary does to the mount list: how many values it
// takes, and whether its last value is a mount that may be writable or must be read-only
// (--remount-ro marks an earlier mount read-only).
enum class MountEffect : std::uint8_t { kNone, kWritable, kReadOnly };
struct BwrapOption {
  std::size_t values;
  MountEffect effect;
};

std::optional<BwrapOption> bwrap_option(std::string_view option) {
  static const std::map<std::string_view, BwrapOption> kOptions = {
      {"--bind", {2, MountEffect::kWritable}},       {"--bind-fd", {2, MountEffect::kWritable}},
      {"--ro-bind", {2, MountEffect::kReadOnly}},    {"--ro-bind-fd", {2, MountEffect::kReadOnly}},
      {"--tmpfs", {1, MountEffect::kWritable}},      {"--dev", {1, MountEffect::kWritable}},
      {"--proc", {1, MountEffect::kWritable}},       {"--remount-ro", {1, MountEffect::kReadOnly}},
      {"--perms", {1, MountEffect::kNone}},          {"--cap-drop", {1, MountEffect::kNone}},
      {"--cap-add", {1, MountEffect::kNone}},        {"--chdir", {1, MountEffect::kNone}},
      {"--info-fd", {1, MountEffect::kNone}},        {"--unshare-user", {0, MountEffect::kNone}},
      {"--unshare-pid", {0, MountEffect::kNone}},    {"--unshare-ipc", {0, MountEffect::kNone}},
      {"--unshare-net", {0, MountEffect::kNone}},    {"--unshare-uts", {0, MountEffect::kNone}},
      {"--unshare-cgroup", {0, MountEffect::kNone}}, {"--die-with-parent", {0, MountEffect::kNone}},
      {"--new-session", {0, MountEffect::kNone}},    {"--as-pid-1", {0, MountEffect::kNone}}};
  auto it = kOptions.find(option);
  if (it == kOptions.end()) return std::nullopt;
  return it->second;
}

}  // namespace

Result<int> open_bind_source(const std::string& path, bool allow_char_device) {
  if (path.empty() || path.front() != '/')
    return Error{"bind source '" + path + "' is not an absolute path"};
  UniqueFd fd(open_no_symlinks(path));
  if (fd.get() < 0) {
    const int error = errno;
    std::string reason = std::strerror(error);
    if (error == ELOOP || error == EXDEV)
      reason = "a component is a symlink (it may have been swapped in after the plan was made)";
    return Error{"cannot open bind source '" + path + "' safely: " + reason};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return Error{"cannot stat bind source '" + path + "': " + std::strerror(errno)};
  const bool type_ok =
      S_ISDIR(st.st_mode) || S_ISREG(st.st_mode) || (allow_char_device && S_ISCHR(st.st_mode));
  if (!type_ok) return Error{"bind source '" + path + "' is no longer a directory or regular file"};
  const std::string actual = path_of_fd(fd.get());
  if (actual != path)
    return Error{"bind source '" + path + "' resolved to '" + actual +
                 "' (the path was changed after the plan was made)"};
  const int high = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, kFirstBindFd);
  if (high < 0)
    return Error{"cannot move the descriptor of '" + path + "': " + std::strerror(errno)};
  return high;
}

Result<BoundArgv> bind_sources_by_fd(const std::vector<std::string>& argv) {
  BoundArgv out;
  auto close_all = [&out] {
    for (int fd : out.fds) ::close(fd);
    out.fds.clear();
    out.sources.clear();
  };
  std::size_t i = 0;
  for (; i < argv.size() && argv[i] != "--"; ++i) {
    if (i == 0 || !is_bind(argv[i]) || i + 2 >= argv.size()) {
      out.argv.push_back(argv[i]);
      continue;
    }
    const std::string& source = argv[i + 1];
    // /dev/null is the mask bound over denied files: a character device.
    Result<int> fd = open_bind_source(source, source == "/dev/null");
    if (!fd.ok()) {
      close_all();
      return fd.failure().prefixed("bwrap: ");
    }
    out.fds.push_back(*fd);
    out.sources.emplace_back(*fd, source);
    out.argv.push_back(argv[i] == "--bind" ? "--bind-fd" : "--ro-bind-fd");
    out.argv.push_back(std::to_string(*fd));
    out.argv.push_back(argv[i + 2]);
    i += 2;
  }
  out.argv.insert(out.argv.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
  return out;
}

Result<std::string> planned_mounts_block(const std::vector<std::string>& argv) {
  std::vector<std::string> order;
  std::map<std::string, bool> writable;
  for (std::size_t i = 1; i < argv.size() && argv[i] != "--"; ++i) {
    const std::string& option = argv[i];
    const std::optional<BwrapOption> known = bwrap_option(option);
    if (!known) return Error{"bwrap: cannot verify the mounts of option '" + option + "'"};
    if (i + known->values >= argv.size())
      return Error{"bwrap: option '" + option + "' lacks its value"};
    i += known->values;
    if (known->effect == MountEffect::kNone) continue;
    const std::string& dest = argv[i];  // the destination is always the last value
    if (writable.find(dest) == writable.end()) order.push_back(dest);
    writable[dest] = known->effect == MountEffect::kWritable;
  }
  std::string block;
  for (const std::string& dest : order) {
    block += writable[dest] ? "w " : "r ";
    block += dest;
    block.push_back('\0');
  }
  return block;
}

}  // namespace sbx::bwrap
