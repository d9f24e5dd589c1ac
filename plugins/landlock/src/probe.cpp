// See probe.hpp. The ABI is asked of the kernel (landlock_create_ruleset with the VERSION
// flag); restrict_self is really tried in a vforked child, so a kernel that reports an ABI but
// refuses the domain (nesting limit, an LSM stacking problem) is seen before a command runs.
#include "sbx/landlock/probe.hpp"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "metadata_notify.hpp"
#include "sbx/landlock/translate.hpp"
#include "sbx/sdk/backend.hpp"
#include "sbx/sdk/unique_fd.hpp"
#include "seccomp_programs.hpp"
#include "unix_connect_notify.hpp"

namespace sbx::landlock {
namespace {

constexpr int kNotifyStep = 0x80;  // exit-code bit: the user-notification filter failed
constexpr unsigned kVersion = 1u << 0;
constexpr unsigned kErrata = 1u << 1;

ProbeCheck check(std::string name, CheckStatus status, std::string observed,
                 std::string remedy = {}) {
  return ProbeCheck{std::move(name), status, std::move(observed),
                    status == CheckStatus::kPass ? std::string() : std::move(remedy)};
}

int query_abi() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kVersion);
  return abi < 0 ? -errno : static_cast<int>(abi);
}

ProbeCheck abi_check(int abi) {
  if (abi == -ENOSYS)
    return check("landlock_abi", CheckStatus::kFail,
                 "ENOSYS: Landlock is not built into this kernel",
                 "use a kernel built with CONFIG_SECURITY_LANDLOCK=y (Linux 5.13+)");
  if (abi == -EOPNOTSUPP)
    return check("landlock_abi", CheckStatus::kFail,
                 "EOPNOTSUPP: Landlock is built in but not enabled",
                 "add 'landlock' to the lsm= kernel boot parameter (or CONFIG_LSM)");
  if (abi < 0)
    return check("landlock_abi", CheckStatus::kFail, std::strerror(-abi),
                 "check the kernel log; a seccomp profile may block landlock_* syscalls");
  return check("landlock_abi", abi >= 3 ? CheckStatus::kPass : CheckStatus::kWarn,
               "ABI " + std::to_string(abi),
               "ABI < 3 cannot restrict truncate(2): writes are not enforced; use Linux 6.2+");
}

ProbeCheck errata_check() {
  const long errata = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kErrata);
  if (errata < 0)
    return check("landlock_errata", CheckStatus::kPass,
                 std::string("not reported by this kernel (") + std::strerror(errno) + ")");
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(errata));
  return check("landlock_errata", CheckStatus::kPass, std::string("fixed-issue mask ") + hex);
}

// Applies a ruleset that handles every filesystem right of `abi` in a vforked child. Returns 0
// or the errno of the step that failed. vfork, not fork: the probe runs before every command,
// and copying the page tables of sbx costs milliseconds on a VM. The child shares our memory
// but only makes syscalls and writes its own stack; no_new_privs and the Landlock domain
// belong to the child's task and vanish with it. All signals stay blocked in the child so
// that no handler of the host process runs on the shared memory.
int try_restrict_self(int abi) {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::vfork();
  const int vfork_errno = errno;
  if (pid != 0) pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return vfork_errno;
  if (pid == 0) {
    std::uint64_t handled = (1ull << 13) - 1;
    if (abi >= 2) handled |= 1ull << 13;
    if (abi >= 3) handled |= 1ull << 14;
    if (abi >= 5) handled |= 1ull << 15;
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(errno & 0x7f);
    const long fd = ::syscall(SYS_landlock_create_ruleset, &handled, sizeof handled, 0);
    if (fd < 0) ::_exit(errno & 0x7f);
    if (::syscall(SYS_landlock_restrict_self, fd, 0) != 0) ::_exit(errno & 0x7f);
    // Stage 2's metadata guard needs a filter with a user-notification listener: try one
    // (allowing everything) in the same child; its failure is reported apart (kNotifyStep).
    sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    sock_fprog program{1, &allow};
    if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                  &program) < 0)
      ::_exit(kNotifyStep | (errno & 0x7f));
    ::_exit(0);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return errno;
  return WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
}

ProbeCheck restrict_check(int err) {
  if ((err & kNotifyStep) != 0 || err == 0)
    return check("restrict_self", CheckStatus::kPass, "a new domain was applied in a child");
  if (err == E2BIG)
    return check("restrict_self", CheckStatus::kFail,
                 "E2BIG: this process is already inside 16 nested Landlock domains",
                 "run sbx from a less deeply sandboxed parent");
  return check("restrict_self", CheckStatus::kFail, std::strerror(err),
               "a seccomp profile or LSM may block landlock_restrict_self");
}

// The metadata guard's listener (linux/landlock/metadata_notify.hpp), tried by the same child.
ProbeCheck notify_check(int err) {
  if ((err & kNotifyStep) == 0)
    return check("seccomp_user_notify", CheckStatus::kPass,
                 "a filter with a user-notification listener was installed in a child");
  return check("seccomp_user_notify", CheckStatus::kFail, std::strerror(err & 0x7f),
               "sbx-stage2 needs SECCOMP_FILTER_FLAG_NEW_LISTENER (Linux 5.0) to keep chmod, "
               "chown, utimes and xattrs inside the writable roots and to take unix datagram "
               "sockets; a seccomp profile may block it");
}

// Honest limits: Landlock exposes no per-process domain state (nothing in /proc/self/status),
// so an outer domain cannot be detected; restrict_self only ever stacks a new domain on it, so
// an outer domain can make the command see fewer accesses, never more.
ProbeCheck domain_check() {
  return check("landlock_domain", CheckStatus::kPass,
               "not detectable from inside (the kernel exposes no domain state); a new domain "
               "stacks on any outer one and can only remove access");
}

std::vector<ProbeCheck> abi_rule_checks(int abi) {
  auto rule = [abi](const char* name, int need, const char* given, const char* missing,
                    const char* remedy) {
    return abi >= need ? check(name, CheckStatus::kPass, given)
                       : check(name, CheckStatus::kWarn, missing, remedy);
  };
  return {
      rule("refer", 2, "renames and links across directories only within writable roots",
           "ABI < 2: renames and links across directories are always denied", "use Linux 5.19+"),
      rule("truncate", 3, "truncate restricted to writable roots",
           "ABI < 3: truncate(2) is not restricted: write_restriction not offered",
           "use Linux 6.2+"),
      rule("tcp", 4, "restricted network denies every TCP bind and connect",
           "ABI < 4: no TCP rules: network_block not offered", "use Linux 6.7+"),
      rule("ioctl_dev", 5, "ioctl on devices only for /dev/null, /dev/tty and writable roots",
           "ABI < 5: ioctl on device files opened read-only is not restricted", "use Linux 6.10+"),
      rule("scoping", 6, "signals and abstract unix sockets cannot reach outside the sandbox",
           "ABI < 6: the command can signal host processes of the same user",
           "use Linux 6.12+ (or the bwrap backend, whose pid namespace isolates processes)"),
  };
}

// ---- the unix connect guard, tried ----

constexpr int kAbiScope = 6;  // the scope translate() asks of a run with the network enabled

// A listening pathname socket at `path` (non-blocking); its descriptor, or -1.
int listen_at(const std::string& path) {
  UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (!socket.valid() || path.size() >= sizeof address.sun_path) return -1;
  std::memcpy(address.sun_path, path.c_str(), path.size());
  if (::bind(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(socket.get(), 4) != 0)
    return -1;
  return socket.release();
}

// The forked child of the trial: the guard's connect variant (its listener sent to the probe),
// then sbx-stage2 --unix-connect-trial (run_unix_connect_trial: a clean, dumpable image, as a
// command is after its execve; sbx and its children are not dumpable), its stdout the results
// pipe. A step that fails writes {-errno, 0} there instead. Async-signal-safe.
[[noreturn]] void trial_child(int channel, int results, char* const* argv) {
  const auto failed = [results](int err) {
    const int errors[2] = {-err, 0};
    (void)!::write(results, errors, sizeof errors);
    ::_exit(kNotifyStep);
  };
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) failed(errno);
  if (const int err = stage2::install_metadata_guard(channel, false, true); err != 0) failed(err);
  if (::dup2(results, 1) != 1) failed(errno);
  char* const no_environment[] = {nullptr};
  ::execve(argv[0], argv, no_environment);
  failed(errno);
  ::_exit(kNotifyStep);
}

// Answers the trial command's notifications until its results are in (or its end: the pipe
// then reads EOF) or 5 s passed. Its exit status is not waited for: this process may reap its
// children elsewhere (SIGCHLD ignored, a reaper thread of an embedding program). True when the
// results came in time.
bool serve_trial(int listener, int results) {
  stage2::UnixConnectGuard guard;
  for (int rounds = 0; rounds < 50; ++rounds) {
    std::array<pollfd, 2> fds{{{listener, POLLIN, 0}, {results, POLLIN, 0}}};
    if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return false;
    if ((fds[0].revents & POLLIN) != 0) {
      seccomp_notif request{};
      if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &request) == 0)
        guard.answer(listener, request, -1);
      continue;
    }
    if ((fds[1].revents & (POLLIN | POLLHUP)) != 0) return true;
  }
  return false;
}

// What the trial's results say: empty when the guard held.
std::string judge_trial(bool in_time, bool read_all, const int errors[2], bool host_reached) {
  if (!in_time) return "the trial command did not end in 5 s";
  if (!read_all) return "sbx-stage2 --unix-connect-trial gave no result";
  if (errors[0] < 0) return std::string("setting up the trial: ") + std::strerror(-errors[0]);
  if (host_reached) return "a host socket's connect reached its listener";
  // Both refused alike: the supervisor could not take the caller's socket.
  if (errors[0] == EPERM && errors[1] == EPERM)
    return "every connect failed with EPERM: the supervisor needs pidfd_getfd, which Docker's "
           "default seccomp profile allows only with CAP_SYS_PTRACE: docker run --cap-add "
           "SYS_PTRACE";
  if (errors[0] != EACCES)
    return std::string("a host socket's connect was not refused with EACCES (") +
           (errors[0] == 0 ? "connected" : std::strerror(errors[0])) + ")";
  if (errors[1] != 0)
    return std::string("a socket the trial command bound itself was not reachable (") +
           std::strerror(errors[1]) + ")";
  return {};
}

// Ends the trial child if it still runs and reaps it unless someone else already did: through
// its pidfd (waitid P_PIDFD, Linux 5.4), so a number reused by another child is never reaped.
void end_trial_child(int pidfd, pid_t child) {
  if (pidfd < 0) {
    ::waitpid(child, nullptr, 0);
    return;
  }
  ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  siginfo_t info{};
  ::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED);
}

// /proc/sys/kernel/yama/ptrace_scope, or 0 without Yama.
int yama_ptrace_scope() {
  const UniqueFd file(::open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC));
  char text[8] = {};
  if (!file.valid() || ::read(file.get(), text, sizeof text - 1) <= 0) return 0;
  return static_cast<int>(std::strtol(text, nullptr, 10));
}

// The unix connect guard (linux/landlock/unix_connect_notify.hpp) really holding here: a child
// under the guard's connect variant connects to a host socket listening in a temporary
// directory, which the guard, served by the probe, must refuse (EACCES) with the listener
// seeing nothing, and to a socket it binds itself, which must connect. Empty when it held,
// else why not.
std::string unix_connect_trial(const std::string& stage2_path) {
  // Yama's relational ptrace scope (1 and above) lets a process without CAP_SYS_PTRACE take
  // another's descriptors (pidfd_getfd: a ptrace attach check) only from its descendants. The
  // guard's emulator is the command's sibling, not its ancestor, and holds no capability,
  // while this trial's server is the trial command's parent: the trial would hold where a run
  // cannot. Read first, so the answer is the run's.
  if (const int scope = yama_ptrace_scope(); scope >= 1)
    return "Yama ptrace_scope is " + std::to_string(scope) +
           " (/proc/sys/kernel/yama/ptrace_scope): the guard's emulator, not an ancestor of the "
           "command, may not take its sockets (pidfd_getfd)";
  char dir[] = "/tmp/sbx-landlock-probe-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return std::string("mkdtemp: ") + std::strerror(errno);
  const std::string host_path = std::string(dir) + "/host";
  const std::string own_path = std::string(dir) + "/own";
  std::string why;
  UniqueFd host(listen_at(host_path));
  int channel[2] = {-1, -1};
  int results[2] = {-1, -1};
  if (!host.valid()) {
    why = std::string("listening socket: ") + std::strerror(errno);
  } else if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    why = std::string("socketpair: ") + std::strerror(errno);
  } else if (::pipe2(results, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(channel[0]);
    ::close(channel[1]);
    why = std::string("pipe: ") + std::strerror(errno);
  } else {
    UniqueFd ours(channel[0]);
    UniqueFd theirs(channel[1]);
    UniqueFd read_end(results[0]);
    UniqueFd write_end(results[1]);
    std::string program = stage2_path;
    std::string mode = "--unix-connect-trial";
    std::string host_arg = host_path;
    std::string own_arg = own_path;
    char* const argv[] = {program.data(), mode.data(), host_arg.data(), own_arg.data(), nullptr};
    const pid_t child = ::fork();
    if (child == 0) trial_child(theirs.get(), write_end.get(), argv);
    theirs.reset();
    write_end.reset();
    if (child < 0) {
      why = std::string("fork: ") + std::strerror(errno);
    } else {
      const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
      Result<int> listener = stage2::receive_metadata_listener(ours.get());
      bool in_time = true;
      if (listener.ok()) {
        const UniqueFd owned(*listener);
        in_time = serve_trial(owned.get(), read_end.get());
      }
      int errors[2] = {-1, -1};
      const bool read_all =
          ::read(read_end.get(), errors, sizeof errors) == static_cast<ssize_t>(sizeof errors);
      end_trial_child(pidfd.get(), child);
      const UniqueFd reached(::accept4(host.get(), nullptr, nullptr, SOCK_CLOEXEC));
      why = judge_trial(in_time, read_all, errors, reached.valid());
    }
  }
  host.reset();
  ::unlink(host_path.c_str());
  ::unlink(own_path.c_str());
  ::rmdir(dir);
  return why;
}

// unix_socket_block: declared only once the trial held (ABI 6 scoping too, which translate()
// asks of a run with the network enabled).
ProbeCheck unix_socket_check(int abi, const std::string& trial) {
  if (abi < kAbiScope)
    return check("unix_socket_block", CheckStatus::kWarn,
                 "ABI < 6: no abstract unix socket and signal scoping: the network enabled is "
                 "not offered (unix_socket_block)",
                 "use Linux 6.12+, or run policies with the network enabled under bwrap");
  if (!trial.empty())
    return check("unix_socket_block", CheckStatus::kWarn,
                 "the unix connect guard did not hold in a trial: " + trial +
                     ": unix_socket_block not offered",
                 "policies with the network enabled run under bwrap");
  return check("unix_socket_block", CheckStatus::kPass,
               "with the network enabled every connect() goes through the run's supervisor: "
               "host pathname and abstract unix sockets refused (tried: a host socket's connect "
               "refused); no allow-list (unix_socket_allowlist not offered)");
}

ProbeCheck seccomp_check() {
  const int mode = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  if (mode < 0 && errno == EINVAL)
    return check("seccomp", CheckStatus::kFail, "seccomp is not built into this kernel",
                 "use a kernel with CONFIG_SECCOMP_FILTER=y");
  return check("seccomp", CheckStatus::kPass,
               mode == 2 ? "available (this process already runs under a filter)" : "available");
}

ProbeCheck stage2_check(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return check("stage2", CheckStatus::kFail, path.empty() ? "no helper path" : path + ": missing",
                 "reinstall sbx: libexec/sbx/sbx-stage2 must sit next to libsbx");
  return check("stage2", CheckStatus::kPass, path);
}

// This answer depends only on the kernel (the ABI, whether restrict_self and a listener filter
// work), the process (its seccomp state and, undetectably, any outer Landlock domain) and
// sbx-stage2: what sbx's kept answers are keyed on (sbx/sdk/backend.hpp). A kept answer that
// no longer holds cannot widen a run: transform() refuses every policy part Landlock cannot
// enforce whatever the probe said, the plan names the minimum ABI the policy needs, and the
// launcher asks the kernel for its ABI and refuses (exit 125) below it; restrict_self or the
// filter failing there fails the run too.
ProbeCheck keepable_check() {
  return check(std::string(kKeepableProbeCheck), CheckStatus::kPass,
               "this answer may be kept for later runs of this boot (same kernel, user, "
               "seccomp state, plugin and sbx-stage2)");
}

}  // namespace

ProbeReport run_probe(const std::string& stage2_path) {
  ProbeReport report;
  const int abi = query_abi();
  report.checks.push_back(abi_check(abi));
  if (abi > 0) {
    report.checks.push_back(errata_check());
    const int restricted = try_restrict_self(abi);
    report.checks.push_back(restrict_check(restricted));
    if (restricted == 0 || (restricted & kNotifyStep) != 0)
      report.checks.push_back(notify_check(restricted));
    report.checks.push_back(domain_check());
    for (ProbeCheck& c : abi_rule_checks(abi)) report.checks.push_back(std::move(c));
    report.checks.push_back(
        unix_socket_check(abi, abi >= kAbiScope ? unix_connect_trial(stage2_path) : std::string()));
  }
  report.checks.push_back(seccomp_check());
  report.checks.push_back(stage2_check(stage2_path));
  for (const ProbeCheck& c : report.checks) {
    if (c.status != CheckStatus::kFail) continue;
    report.summary = c.name + ": " + c.observed;
    return report;
  }
  report.checks.push_back(keepable_check());
  report.available = true;
  report.capabilities = capabilities_for_abi(abi);
  for (const ProbeCheck& c : report.checks) {
    if (c.name == "unix_socket_block" && c.status == CheckStatus::kPass)
      report.capabilities.add(Capability::kUnixSocketBlock);
  }
  report.summary = "Landlock ABI " + std::to_string(abi) +
                   " with seccomp; cannot enforce carve-outs, protected names or deny globs";
  return report;
}

}  // namespace sbx::landlock
