// See caller.hpp.
#include "caller.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "sbx/sdk/unique_fd.hpp"

namespace sbx::caller {
namespace {

// The whole of a small /proc or /run file ("" when it cannot be read).
std::string read_text(const char* path, std::size_t limit = 65536) {
  const UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  std::string text;
  if (!fd.valid()) return text;
  char buffer[4096];
  for (ssize_t n; text.size() < limit && (n = ::read(fd.get(), buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  return text;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The value of `field` ("CapEff:") in /proc/self/status text, or nullopt-like "".
std::string status_field(const std::string& status, std::string_view field) {
  for (std::size_t at = 0; at < status.size();) {
    std::size_t end = status.find('\n', at);
    if (end == std::string::npos) end = status.size();
    const std::string_view line(status.data() + at, end - at);
    if (line.substr(0, field.size()) == field) {
      std::string value(line.substr(field.size()));
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
    at = end + 1;
  }
  return {};
}

constexpr std::array<const char*, 41> kCapabilityNames = {"CAP_CHOWN",
                                                          "CAP_DAC_OVERRIDE",
                                                          "CAP_DAC_READ_SEARCH",
                                                          "CAP_FOWNER",
                                                          "CAP_FSETID",
                                                          "CAP_KILL",
                                                          "CAP_SETGID",
                                                          "CAP_SETUID",
                                                          "CAP_SETPCAP",
                                                          "CAP_LINUX_IMMUTABLE",
                                                          "CAP_NET_BIND_SERVICE",
                                                          "CAP_NET_BROADCAST",
                                                          "CAP_NET_ADMIN",
                                                          "CAP_NET_RAW",
                                                          "CAP_IPC_LOCK",
                                                          "CAP_IPC_OWNER",
                                                          "CAP_SYS_MODULE",
                                                          "CAP_SYS_RAWIO",
                                                          "CAP_SYS_CHROOT",
                                                          "CAP_SYS_PTRACE",
                                                          "CAP_SYS_PACCT",
                                                          "CAP_SYS_ADMIN",
                                                          "CAP_SYS_BOOT",
                                                          "CAP_SYS_NICE",
                                                          "CAP_SYS_RESOURCE",
                                                          "CAP_SYS_TIME",
                                                          "CAP_SYS_TTY_CONFIG",
                                                          "CAP_MKNOD",
                                                          "CAP_LEASE",
                                                          "CAP_AUDIT_WRITE",
                                                          "CAP_AUDIT_CONTROL",
                                                          "CAP_SETFCAP",
                                                          "CAP_MAC_OVERRIDE",
                                                          "CAP_MAC_ADMIN",
                                                          "CAP_SYSLOG",
                                                          "CAP_WAKE_ALARM",
                                                          "CAP_BLOCK_SUSPEND",
                                                          "CAP_AUDIT_READ",
                                                          "CAP_PERFMON",
                                                          "CAP_BPF",
                                                          "CAP_CHECKPOINT_RESTORE"};

// A path component a container runtime names its cgroups with (Docker: docker/<id> or
// docker-<id>.scope; Kubernetes: kubepods*; Podman: libpod-*; containerd and CRI-O; LXC;
// BuildKit).
bool runtime_component(std::string_view c) {
  for (std::string_view prefix :
       {"docker-", "kubepods", "libpod", "crio-", "cri-containerd", "lxc.payload", "buildkit"})
    if (c.substr(0, prefix.size()) == prefix) return true;
  return c == "docker" || c == "containerd" || c == "lxc";
}

std::string runtime_cgroup() {
  const std::string text = read_text("/proc/self/cgroup");
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    // hierarchy-ID:controllers:path (cgroups(7)); the path may hold ':' itself.
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second != std::string_view::npos) {
      const std::string_view path = line.substr(second + 1);
      for (std::size_t c = 0; c < path.size();) {
        std::size_t slash = path.find('/', c);
        if (slash == std::string_view::npos) slash = path.size();
        if (runtime_component(path.substr(c, slash - c))) return std::string(path);
        c = slash + 1;
      }
    }
    at = end + 1;
  }
  return {};
}

// container=<name> among the NUL-separated entries of an environ file.
std::string container_variable(const std::string& environ) {
  for (std::size_t at = 0; at < environ.size();) {
    std::size_t end = environ.find('\0', at);
    if (end == std::string::npos) end = environ.size();
    const std::string_view entry(environ.data() + at, end - at);
    if (entry.substr(0, 10) == "container=") return std::string(entry.substr(10));
    at = end + 1;
  }
  return {};
}

// The errno a raw clone(2) with `flags` gets (0: the child was created; it exits at once).
// Raw, as bwrap calls it: glibc's wrapper would need a stack. No CLONE_VM: the child is a copy
// and calls nothing but exit. Arguments: flags, stack, parent_tid, child_tid, tls on every
// architecture sbx builds for (s390 swaps the first two; the profile rule says so too).
int clone_error(unsigned long flags) {
  const long pid = ::syscall(SYS_clone, flags | SIGCHLD, 0, nullptr, nullptr, 0);
  if (pid == 0) ::syscall(SYS_exit, 0);
  if (pid < 0) return errno;
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  return 0;
}

struct CloneErrors {
  int user = -1;     // clone(CLONE_NEWUSER)
  int invalid = -1;  // clone(CLONE_NEWUSER | CLONE_FS)
  int signal = 0;    // the trial child died of this signal (a filter that kills)
};

// Both trials in a forked child: a filter whose action kills the process (SECCOMP_RET_KILL_*)
// then kills that child, not the caller. The child makes system calls only (no allocation, no
// lock), so it is safe after fork in a multi-threaded caller; all signals stay blocked in it.
CloneErrors clone_errors() {
  CloneErrors out;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return out;
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    int errors[2] = {clone_error(CLONE_NEWUSER), -1};
    (void)!::write(pipe_fds[1], errors, sizeof(int));
    // CLONE_NEWUSER with CLONE_FS is invalid: the kernel answers EINVAL before any permission
    // check (kernel/fork.c copy_process, since Linux 3.9). Any other answer came from a
    // seccomp filter, which runs before the system call does.
    errors[1] = clone_error(CLONE_NEWUSER | CLONE_FS);
    (void)!::write(pipe_fds[1], &errors[1], sizeof(int));
    ::_exit(0);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(pipe_fds[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    return out;
  }
  int errors[2] = {-1, -1};
  std::size_t got = 0;
  for (ssize_t n;
       got < sizeof errors && (n = ::read(pipe_fds[0], reinterpret_cast<char*>(errors) + got,
                                          sizeof errors - got)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got >= sizeof(int)) out.user = errors[0];
  if (got >= sizeof errors) out.invalid = errors[1];
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

// A decimal number from /proc, or `otherwise` when the text is not one.
int decimal(const std::string& text, int otherwise) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0 || value < 0 || value > 1 << 20) return otherwise;
  return static_cast<int>(value);
}

std::string errno_text(int error) {
  const char* name = ::strerrorname_np(error);
  return std::string(name != nullptr ? name : "errno " + std::to_string(error)) + " (" +
         std::strerror(error) + ")";
}

std::string filters_text(const ProcessStatus& status) {
  if (status.seccomp_filters < 0) return "a filter";
  return std::to_string(status.seccomp_filters) +
         (status.seccomp_filters == 1 ? " filter" : " filters");
}

constexpr const char* kContainerFix =
    "give the container a seccomp profile that allows clone and unshare with CLONE_NEWUSER "
    "(docker/podman run --security-opt seccomp=PROFILE.json; Kubernetes: "
    "securityContext.seccompProfile of type Localhost) rather than --privileged or CAP_SYS_ADMIN, "
    "which grant far more; or use Landlock, which sbx chooses by itself where bwrap is "
    "unavailable";

UserNamespaceTrial refused(bool by_seccomp, std::string observed, std::string fix) {
  return UserNamespaceTrial{false, by_seccomp, std::move(observed), std::move(fix)};
}

UserNamespaceTrial by_seccomp(const ProcessStatus& status, const CloneErrors& e) {
  std::string seen = e.signal != 0
                         ? "kills the caller (signal " + std::to_string(e.signal) + ")"
                         : "fails with " + errno_text(e.user) + " before the kernel sees it";
  std::string why;
  if (status.known && ((status.effective >> kCapSysAdmin) & 1u) == 0)
    why =
        "; this process has no CAP_SYS_ADMIN, which Docker's, Podman's and containerd's "
        "default profiles require for new namespaces";
  return refused(true,
                 "this process's seccomp filter refuses them (" + filters_text(status) +
                     "): clone with CLONE_NEWUSER " + seen + why,
                 kContainerFix);
}

UserNamespaceTrial by_kernel(const ProcessStatus& status, int error) {
  if (error == ENOSPC)
    return refused(false,
                   "ENOSPC: user.max_user_namespaces is 0 here, or this process is already 32 "
                   "user namespaces deep",
                   "raise the sysctl user.max_user_namespaces where it is 0 (for a container: on "
                   "its host); a sandbox around sbx that set it (bwrap --disable-userns) keeps "
                   "it so: run sbx outside it");
  const std::string apparmor =
      trimmed(read_text("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"));
  if (error == EACCES || apparmor == "1")
    return refused(false,
                   errno_text(error) + ": a security module refused it" +
                       (apparmor == "1" ? " (kernel.apparmor_restrict_unprivileged_userns=1)" : ""),
                   "an AppArmor profile with 'userns' for bwrap, or sysctl "
                   "kernel.apparmor_restrict_unprivileged_userns=0");
  const std::string clone_sysctl = trimmed(read_text("/proc/sys/kernel/unprivileged_userns_clone"));
  const bool sys_admin = status.known && ((status.effective >> kCapSysAdmin) & 1u) != 0;
  if (error == EPERM && clone_sysctl == "0" && !sys_admin)
    return refused(false,
                   "EPERM: kernel.unprivileged_userns_clone=0 lets only CAP_SYS_ADMIN create "
                   "user namespaces",
                   "sysctl kernel.unprivileged_userns_clone=1 (for a container: on its host)");
  return refused(false,
                 errno_text(error) +
                     ": the kernel refused it (no seccomp filter did; a chroot "
                     "or a security module may, see the kernel log)",
                 "allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, "
                 "kernel.unprivileged_userns_clone=1)");
}

}  // namespace

ProcessStatus read_status() {
  ProcessStatus out;
  const std::string status = read_text("/proc/self/status");
  const std::string mode = status_field(status, "Seccomp:");
  const std::string effective = status_field(status, "CapEff:");
  if (mode.empty() || effective.empty()) return out;
  out.known = true;
  out.seccomp_mode = decimal(mode, -1);
  const std::string filters = status_field(status, "Seccomp_filters:");
  if (!filters.empty()) out.seccomp_filters = decimal(filters, -1);
  out.no_new_privs = status_field(status, "NoNewPrivs:") == "1";
  out.effective = std::strtoull(effective.c_str(), nullptr, 16);
  out.permitted = std::strtoull(status_field(status, "CapPrm:").c_str(), nullptr, 16);
  out.bounding = std::strtoull(status_field(status, "CapBnd:").c_str(), nullptr, 16);
  return out;
}

int last_capability() {
  const std::string text = trimmed(read_text("/proc/sys/kernel/cap_last_cap"));
  const int last = decimal(text, -1);
  return last >= 0 && last < 64 ? last : static_cast<int>(kCapabilityNames.size()) - 1;
}

std::string capability_name(int cap) {
  if (cap >= 0 && static_cast<std::size_t>(cap) < kCapabilityNames.size())
    return kCapabilityNames[static_cast<std::size_t>(cap)];
  return "CAP_" + std::to_string(cap);
}

std::vector<std::string> capability_names(std::uint64_t set) {
  std::vector<std::string> names;
  for (int cap = 0; cap <= last_capability(); ++cap)
    if ((set >> cap) & 1u) names.push_back(capability_name(cap));
  return names;
}

std::vector<std::string> container_markers() {
  std::vector<std::string> found;
  struct stat st {};
  for (const char* file : {"/.dockerenv", "/run/.containerenv"})
    if (::lstat(file, &st) == 0) found.emplace_back(file);
  // systemd writes what it detected here; so do some runtimes.
  const std::string systemd = trimmed(read_text("/run/systemd/container", 256));
  if (!systemd.empty()) found.push_back("container=" + systemd + " (/run/systemd/container)");
  const std::string pid1 = container_variable(read_text("/proc/1/environ"));
  if (!pid1.empty()) found.push_back("container=" + pid1 + " (pid 1)");
  const std::string cgroup = runtime_cgroup();
  if (!cgroup.empty()) found.push_back("cgroup " + cgroup);
  return found;
}

UserNamespaceTrial try_user_namespace(const ProcessStatus& status) {
  const CloneErrors e = clone_errors();
  if (e.signal == 0 && e.user == 0)
    return UserNamespaceTrial{true, false, "a new user namespace was created", ""};
  // Refused before the kernel: the trial was killed, or the invalid combination was answered
  // with something other than the kernel's EINVAL, under a filter.
  const bool filtered =
      status.seccomp_mode == 2 && (e.signal != 0 || (e.invalid != EINVAL && e.invalid != -1));
  if (filtered) return by_seccomp(status, e);
  if (e.signal != 0 || e.user < 0)
    return refused(false,
                   e.signal != 0 ? "the trial died of signal " + std::to_string(e.signal)
                                 : std::string("the trial could not be run"),
                   "see the kernel log");
  return by_kernel(status, e.user);
}

}  // namespace sbx::caller
