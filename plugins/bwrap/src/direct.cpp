// The direct bwrap launch's pieces (direct.hpp).
#include "sbx/bwrap/direct.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace sbx::bwrap {
namespace {

constexpr std::string_view kNewRoot = "/newroot";

std::string errno_text(int error) { return std::strerror(error); }

void append_arg(std::string& block, std::string_view arg) {
  block.append(arg);
  block.push_back('\0');
}

// Reads a small file under `dir` (a /proc/<pid> directory) whole; nullopt on error (errno set).
std::optional<std::string> read_at(int dir, const char* name) {
  const int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      errno = error;
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > (std::size_t{16} << 20)) {
      close(fd);
      errno = EFBIG;
      return std::nullopt;
    }
  }
  close(fd);
  return text;
}

// The value of "Key:" in a /proc status text, or "".
std::string status_field(std::string_view status, std::string_view key) {
  std::size_t at = 0;
  while (at < status.size()) {
    const std::size_t end = std::min(status.find('\n', at), status.size());
    const std::string_view line = status.substr(at, end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      std::string_view value = line.substr(key.size() + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
      return std::string(value);
    }
    at = end + 1;
  }
  return {};
}

bool is_sandbox_waiter(pid_t pid, pid_t init) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  const int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  const std::optional<std::string> status = read_at(dir, path.c_str() + 1);
  close(dir);
  if (!status) return false;
  if (status_field(*status, "PPid") != std::to_string(init)) return false;
  const std::string nspid = status_field(*status, "NSpid");
  const std::size_t last = nspid.find_last_of(" \t");
  return last != std::string::npos && nspid.substr(last + 1) == "2";
}

PauseVerdict refuse(std::string message) { return {125, std::move(message)}; }

// The command inside the new root (RESOLVE_IN_ROOT: its symlinks resolve as they will inside):
// missing -> 127, not an executable regular file -> 126.
PauseVerdict check_command(int proc_dir, const std::string& command) {
  const int root = openat(proc_dir, "root/newroot", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    return refuse("cannot open the sandbox's new root to check the command: " + errno_text(errno));
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const int fd = static_cast<int>(syscall(SYS_openat2, root, command.c_str(), &how, sizeof how));
  const int open_error = errno;
  close(root);
  if (fd < 0) {
    if (open_error == ENOENT || open_error == ENOTDIR || open_error == ELOOP)
      return {127, "cannot run " + command + ": " + errno_text(open_error)};
    if (open_error == ENOSYS) return {};  // no openat2 (< 5.6): bwrap's execvp decides (125)
    return {126, "cannot run " + command + ": " + errno_text(open_error)};
  }
  struct stat st {};
  int problem = 0;
  // Two failures keep their own errno: the same statement, different causes.
  if (fstat(fd, &st) != 0) {  // NOLINT(bugprone-branch-clone)
    problem = errno;
  } else if (!S_ISREG(st.st_mode)) {
    problem = EACCES;
  } else if (syscall(SYS_faccessat2, fd, "", X_OK, AT_EMPTY_PATH) != 0 && errno != ENOSYS) {
    problem = errno;
  }
  close(fd);
  if (problem != 0) return {126, "cannot run " + command + ": " + errno_text(problem)};
  return {};
}

// Restricted network: the namespace must be a new one (not sbx's) holding nothing but `lo`,
// or the private-namespace filter would open the host's loopback to the command.
PauseVerdict check_private_network(int proc_dir) {
  struct stat mine {};
  struct stat theirs {};
  if (stat("/proc/self/ns/net", &mine) != 0 || fstatat(proc_dir, "ns/net", &theirs, 0) != 0)
    return refuse("cannot compare the sandbox's network namespace: " + errno_text(errno));
  if (mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev)
    return refuse("the sandbox shares sbx's network namespace; refusing to run");
  const std::optional<std::string> dev = read_at(proc_dir, "net/dev");
  if (!dev) return refuse("cannot read the sandbox's network interfaces: " + errno_text(errno));
  for (const std::string& name : net_dev_interfaces(*dev)) {
    if (name != "lo")
      return refuse("interface '" + name +
                    "' in the sandbox's network namespace; not a private "
                    "namespace");
  }
  return {};
}

}  // namespace

std::optional<DirectPlan> direct_plan(const BwrapPlan& plan, bool write_layer_supported) {
  if (plan.net == Stage2Net::kProxy) return {};  // the relay runs inside: stage 2
  // Copy-on-write caches: only stage 2 can mount them, holding capabilities before the command;
  // the waiter runs after bwrap's seccomp programs, which refuse mount(2).
  if (!plan.cache_overlays.empty()) return {};
  if (plan.command.empty() || plan.command.front().empty() || plan.command.front().front() != '/')
    return {};
  if (plan.stage2.empty() || plan.stage2.front() != '/') return {};  // no waiter to run
  if (!plan.write_layer && !plan.write_roots.empty()) return {};     // stage 2 refuses it
  // bwrap 0.8 sets PWD to its --chdir directory after applying --clearenv/--setenv, and nothing
  // unsets it: the command's environment is exactly the plan's only when the plan already has
  // that PWD. Otherwise (a policy with `inherit: none`, a caller whose PWD is elsewhere) stage 2
  // runs, which execs with exactly the plan's environment.
  if (std::find(plan.env.begin(), plan.env.end(), "PWD=" + plan.chdir) == plan.env.end()) return {};
  DirectPlan out;
  out.bwrap = plan.bwrap;
  for (auto it = plan.options.begin(); it != plan.options.end(); ++it) {
    if (*it == "--as-pid-1") continue;
    out.options.push_back(*it);
    if (*it == "--proc" && std::next(it) != plan.options.end() && *std::next(it) == "/proc") {
      out.options.push_back(*++it);
      out.options.insert(out.options.end(), std::begin(kPidOneMask), std::end(kPidOneMask));
    }
  }
  out.options.insert(out.options.end(), {"--chdir", plan.chdir});
  // The spawner always runs the unix-socket supervisor (unix_supervisor.hpp).
  out.filter = plan.net == Stage2Net::kOpen ? stage2::NetworkFilter::kOpen
                                            : stage2::NetworkFilter::kPrivateUnixSupervised;
  out.env = plan.env;
  out.command = plan.command;
  out.stage2 = plan.stage2;
  out.write_layer = plan.write_layer && write_layer_supported;
  out.writable_roots = plan.write_roots;
  return out;
}

Result<std::string> direct_args_block(const DirectPlan& plan) {
  std::string block;
  for (const char* arg :
       {"--json-status-fd", "3", "--add-seccomp-fd", "5", "--add-seccomp-fd", "6", "--clearenv"})
    append_arg(block, arg);
  static_assert(kStatusFd == 3 && kSeccompTableFd == 5 && kSeccompRulesFd == 6 && kPauseFd == 7);
  for (const std::string& entry : plan.env) {
    const std::size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0)
      return Error{"bwrap: environment entry '" + entry.substr(0, equals) + "' has no name"};
    append_arg(block, "--setenv");
    append_arg(block, std::string_view(entry).substr(0, equals));
    append_arg(block, std::string_view(entry).substr(equals + 1));
  }
  for (const std::string& option : plan.options) append_arg(block, option);
  for (const char* arg : {"--ro-bind-data", "7", kPauseFile}) append_arg(block, arg);
  // An argument holding a NUL would split into two inside the block.
  std::size_t expected = 7 + 3 * plan.env.size() + plan.options.size() + 3;
  if (static_cast<std::size_t>(std::count(block.begin(), block.end(), '\0')) != expected)
    return Error{"bwrap: an argument or environment value holds a NUL byte"};
  return block;
}

std::vector<std::string> split_args_block(const std::string& block) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t end = block.find('\0'); end != std::string::npos;
       end = block.find('\0', start)) {
    out.push_back(block.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> direct_argv(const DirectPlan& plan) {
  std::vector<std::string> out = {plan.bwrap, "--args",    std::to_string(kArgsFd),
                                  "--",       plan.stage2, "--waiter"};
  if (plan.write_layer) {
    out.emplace_back("--write-layer");
    for (const std::string& root : plan.writable_roots)
      out.insert(out.end(), {"--write-root", root});
  }
  out.insert(out.end(), {"--status-fd", std::to_string(kWaiterStatusFd), "--"});
  out.insert(out.end(), plan.command.begin(), plan.command.end());
  return out;
}

std::vector<stage2::ActualMount> mounts_in_new_root(const std::vector<stage2::ActualMount>& seen) {
  std::vector<stage2::ActualMount> out;
  bool own_bind_seen = false;
  for (const stage2::ActualMount& mount : seen) {
    if (mount.path == kNewRoot) {
      // The first mount at /newroot is bwrap's own bind of that directory of its setup tmpfs,
      // made before any operation of the plan (mountinfo lists a namespace's mounts in the
      // order they were attached); the plan's root mount goes on top of it, and bwrap's second
      // pivot_root detaches it with the setup tmpfs.
      if (!own_bind_seen) {
        own_bind_seen = true;
        continue;
      }
      out.push_back({"/", mount.writable});
    } else if (mount.path.size() > kNewRoot.size() &&
               mount.path.compare(0, kNewRoot.size(), kNewRoot) == 0 &&
               mount.path[kNewRoot.size()] == '/') {
      out.push_back({mount.path.substr(kNewRoot.size()), mount.writable});
    }
  }
  return out;
}

JsonStatus parse_json_status(std::string_view text) {
  JsonStatus out;
  auto number_after = [&text](std::string_view key) -> std::optional<long> {
    const std::size_t at = text.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    std::size_t i = at + key.size();
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    if (i >= text.size() || text[i] != ':') return std::nullopt;
    ++i;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    long value = 0;
    const auto parsed = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (parsed.ec != std::errc()) return std::nullopt;
    return value;
  };
  if (std::optional<long> pid = number_after("\"child-pid\""); pid && *pid > 0)
    out.child_pid = static_cast<pid_t>(*pid);
  if (std::optional<long> code = number_after("\"exit-code\""); code && *code >= 0 && *code < 256)
    out.exit_code = static_cast<int>(*code);
  return out;
}

std::vector<std::string> net_dev_interfaces(std::string_view text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  int line_number = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line_number++ < 2) continue;  // two header lines
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    out.emplace_back(name);
  }
  return out;
}

PauseVerdict check_paused_sandbox(pid_t pid, int pidfd,
                                  const std::vector<stage2::PlannedMount>& planned,
                                  bool private_network, const std::string& command) {
  const std::string path = "/proc/" + std::to_string(pid);
  const int proc_dir = open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (proc_dir < 0) return refuse("cannot open " + path + ": " + errno_text(errno));
  // The directory was opened while the pinned process lived: it is that process's.
  if (syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) != 0) {
    close(proc_dir);
    return refuse("the sandbox ended during its setup");
  }
  PauseVerdict verdict;
  const std::optional<std::string> mountinfo = read_at(proc_dir, "mountinfo");
  if (!mountinfo) {
    verdict = refuse("cannot read the sandbox's mount table: " + errno_text(errno));
  } else {
    Result<std::vector<stage2::ActualMount>> seen = stage2::parse_mountinfo(*mountinfo);
    if (!seen.ok()) {
      verdict = refuse("mount check: " + seen.error());
    } else if (Status checked = stage2::check_mounts(planned, mounts_in_new_root(*seen));
               !checked.ok()) {
      verdict = refuse("mount check: " + checked.error());
    }
  }
  if (verdict.exit_code == 0 && private_network) verdict = check_private_network(proc_dir);
  if (verdict.exit_code == 0) verdict = check_command(proc_dir, command);
  close(proc_dir);
  return verdict;
}

namespace {

// The pids in /proc, space-separated like a children file: the fallback for kernels built
// without CONFIG_PROC_CHILDREN (is_sandbox_waiter then picks PID 1's child by its status).
std::optional<std::string> every_pid() {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::string out;
  while (const dirent* entry = readdir(proc)) {
    if (entry->d_name[0] >= '1' && entry->d_name[0] <= '9') {
      out += entry->d_name;
      out.push_back(' ');
    }
  }
  closedir(proc);
  return out;
}

}  // namespace

std::optional<pid_t> find_sandbox_waiter(pid_t init, int& pidfd) {
  const std::string path =
      "/proc/" + std::to_string(init) + "/task/" + std::to_string(init) + "/children";
  const int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return std::nullopt;
  std::optional<std::string> children = read_at(root, path.c_str() + 1);
  const int error = errno;
  close(root);
  if (!children && error == ENOENT) children = every_pid();
  if (!children) return std::nullopt;
  std::size_t at = 0;
  while (at < children->size()) {
    const std::size_t end = std::min(children->find(' ', at), children->size());
    pid_t child = 0;
    const auto parsed = std::from_chars(children->data() + at, children->data() + end, child);
    at = end + 1;
    if (parsed.ec != std::errc() || child <= 0 || !is_sandbox_waiter(child, init)) continue;
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
    if (fd < 0) continue;
    // Checked again with the pidfd held: the pid was not reused in between.
    if (!is_sandbox_waiter(child, init)) {
      close(fd);
      continue;
    }
    pidfd = fd;
    return child;
  }
  return std::nullopt;
}

Result<int> open_scope_ruleset() {
  constexpr unsigned kVersion = 1u << 0;
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kVersion);
  if (abi < 6) return -1;
  struct {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;
    std::uint64_t scoped;
  } attr{0, 0, (1u << 0) | (1u << 1)};  // LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | _SIGNAL
  const int fd = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (fd < 0)
    return Error{"bwrap: cannot create the Landlock scope of abstract unix sockets and signals: " +
                 errno_text(errno)};
  return fd;
}

}  // namespace sbx::bwrap
