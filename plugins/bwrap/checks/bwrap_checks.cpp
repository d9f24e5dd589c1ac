// sbx-stage2's checks of what bwrap built (see bwrap_checks.hpp).
#include "bwrap_checks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sbx::stage2 {
namespace {

constexpr std::size_t kMaxBlock = 16u << 20;

// True if `path` is `root` or below it ("/" contains everything).
bool within(std::string_view path, std::string_view root) {
  if (root == "/") return true;
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(std::string_view field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const char a = field[i + 1], b = field[i + 2], c = field[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (start <= line.size()) {
    const std::size_t end = line.find(' ', start);
    if (end == std::string_view::npos) {
      fields.push_back(line.substr(start));
      break;
    }
    fields.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  return fields;
}

// bwrap's own mounts: a fresh /dev (tmpfs, devpts, shm, device-node binds) and /proc. They
// hold nothing of the host's filesystem, so they may be writable wherever the plan put them.
bool own_writable_tree(std::string_view path) {
  return within(path, "/dev") || within(path, "/proc");
}

}  // namespace

Result<std::vector<PlannedMount>> parse_planned_mounts(std::string_view block) {
  std::vector<PlannedMount> out;
  std::size_t start = 0;
  while (start < block.size()) {
    const std::size_t end = block.find('\0', start);
    if (end == std::string_view::npos) return Error{"the mount list ends without a NUL byte"};
    const std::string_view entry = block.substr(start, end - start);
    if (entry.size() < 3 || (entry[0] != 'w' && entry[0] != 'r') || entry[1] != ' ' ||
        entry[2] != '/')
      return Error{"malformed mount list entry '" + std::string(entry) + "'"};
    out.push_back({std::string(entry.substr(2)), entry[0] == 'w'});
    start = end + 1;
  }
  return out;
}

Result<std::vector<ActualMount>> parse_mountinfo(std::string_view text) {
  std::vector<ActualMount> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS ..." (proc(5)); OPTIONS are the per-mount
    // flags, whose first is "rw" or "ro".
    const std::vector<std::string_view> fields = split_spaces(line);
    if (fields.size() < 6 || fields[4].empty() || fields[4][0] != '/')
      return Error{"cannot read mountinfo line '" + std::string(line) + "'"};
    const std::string_view options = fields[5];
    const bool writable = options == "rw" || options.rfind("rw,", 0) == 0;
    out.push_back({unescape_octal(fields[4]), writable});
  }
  return out;
}

Status check_mounts(const std::vector<PlannedMount>& planned,
                    const std::vector<ActualMount>& actual) {
  for (const PlannedMount& p : planned) {
    const bool present = std::any_of(actual.begin(), actual.end(),
                                     [&](const ActualMount& a) { return a.path == p.path; });
    if (!present)
      return Error{"planned mount point '" + p.path +
                   "' has no mount (a path component was replaced, e.g. by a symlink, after "
                   "the plan was made)"};
  }
  // A planned read-only mount must be read-only where the command meets it: the topmost mount
  // at its path (mountinfo lists a namespace's mounts in the order they were attached, so the
  // last one there covers the others). This is what holds the kernel's interfaces under /proc
  // read-only, where a writable mount is otherwise allowed (bwrap's own procfs).
  for (const PlannedMount& p : planned) {
    if (p.writable) continue;
    const auto top = std::find_if(actual.rbegin(), actual.rend(),
                                  [&](const ActualMount& a) { return a.path == p.path; });
    if (top != actual.rend() && top->writable)
      return Error{"'" + p.path + "' must be read-only but its mount is writable"};
  }
  for (const ActualMount& a : actual) {
    if (!a.writable || own_writable_tree(a.path)) continue;
    const bool declared = std::any_of(planned.begin(), planned.end(), [&](const PlannedMount& p) {
      return p.writable && within(a.path, p.path);
    });
    if (!declared)
      return Error{"'" + a.path + "' is mounted writable but the policy does not make it writable"};
  }
  return {};
}

Result<std::string> read_and_close(int fd) {
  std::string block;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return Error{std::string("cannot read descriptor: ") + std::strerror(error)};
    }
    if (n == 0) break;
    block.append(buffer, static_cast<std::size_t>(n));
    if (block.size() > kMaxBlock) {
      ::close(fd);
      return Error{"more than 16 MiB on the descriptor"};
    }
  }
  ::close(fd);
  return block;
}

Status signal_ready(int fd) {
  const char byte = 'R';
  ssize_t n = 0;
  do {
    n = ::write(fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (n != 1) return Error{std::string("cannot write the ready byte: ") + std::strerror(error)};
  return {};
}

Status verify_mounts_from_fd(int fd) {
  Result<std::string> block = read_and_close(fd);
  if (!block.ok()) return block.failure().prefixed("--mounts-fd: ");
  Result<std::vector<PlannedMount>> planned = parse_planned_mounts(*block);
  if (!planned.ok()) return planned.failure().prefixed("--mounts-fd: ");
  const int info = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (info < 0)
    return Error{std::string("cannot open /proc/self/mountinfo: ") + std::strerror(errno)};
  Result<std::string> text = read_and_close(info);
  if (!text.ok()) return text.failure().prefixed("/proc/self/mountinfo: ");
  Result<std::vector<ActualMount>> actual = parse_mountinfo(*text);
  if (!actual.ok()) return actual.failure();
  return check_mounts(*planned, *actual);
}

}  // namespace sbx::stage2
