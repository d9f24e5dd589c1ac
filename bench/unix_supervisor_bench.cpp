// What the bwrap backend's unix-socket supervisor costs (plugins/bwrap/README.md, "Unix sockets:
// the supervisor"), measured without bwrap so that nothing else is in the figures: a child runs
// the same thing three ways, rounds interleaved: unsupervised; under the supervisor's
// notification filter served by a thread started with the run (UnixSupervisor::start, how the
// spawner did it before); and served the spawner's way now (UnixSupervisor::attach: this
// thread polls the listener next to the child's end and calls serve(), a thread starts only at
// the first connect or send). Medians per operation, and the differences. Cases:
//   setup          fork, install the filter, hand its listener over, supervise, child exits
//                  (per run: what every sandboxed run pays once; parent's view);
//   spawn          vfork + filter + listener over a socket pair + execve /bin/true, supervised
//                  until reaped: the spawner's own shape (a run of a command that never
//                  connects), parent's view;
//   bwrap          the same with a real bwrap in place of /bin/true: `bwrap --unshare-all
//                  --die-with-parent --ro-bind / / --dev /dev --proc /proc -- /bin/true`, the
//                  shape of a restricted-network plan (own network namespace, so the filter is
//                  the one that also reports sends, as sbx installs it there): the added cost
//                  as a fraction of a whole bwrap run. "filter only" does not apply (bwrap's
//                  loopback set-up sends to netlink with an address: notified, it would fail
//                  with no supervisor), so that column stays empty;
//   getppid        a system call the filter lets through (every call of a run that never
//                  connects: the filter's BPF instructions only);
//   inet socket    socket(AF_INET) + close: a socket call the filter checks but never notifies;
//   unix connect   socket + connect to a unix socket the child bound itself + accept + close
//                  (a supervised connect: notification, checks, connect performed by sbx);
//   tcp connect    the same over 127.0.0.1 (an inet connect, performed by the supervisor too).
// A fifth column, "landlock", runs the per-operation cases under Landlock mode's unix connect
// guard instead (linux/landlock/unix_connect_notify.hpp: the guard's connect variant, every
// connect and bind notified, served here by UnixConnectGuard as sbx-stage2's emulator serves
// it in a run with the network enabled), so "+landlock" is the cost per supervised connect()
// under Landlock.
// Usage: sbx_bench_unix_supervisor [rounds] [case] (default 15 rounds; a case's first word,
// e.g. "spawn", runs only that case). Plain output, no Google Benchmark:
// each figure comes from a child process, which its per-iteration model does not fit.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "metadata_notify.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"
#include "unix_connect_notify.hpp"

namespace {

enum class Case { kSetup, kSpawn, kBwrap, kGetppid, kInetSocket, kUnixConnect, kTcpConnect };

// Unsupervised; served by a thread from the start; served by the owner (the spawner's way);
// and, for the per-run cases only, the filter and listener hand-over with no supervisor at all
// (the listener closed at once: a notified call would fail), which splits the per-run cost
// into the kernel's part and the supervisor's.
enum class Mode { kPlain, kFilterOnly, kThread, kOwner, kLandlock };
constexpr int kModes = 5;

struct CaseInfo {
  Case what;
  const char* name;
  int ops;  // operations per round
};

constexpr CaseInfo kCases[] = {
    {Case::kSetup, "setup (per run)", 1},
    {Case::kSpawn, "spawn /bin/true (per run)", 1},
    {Case::kBwrap, "bwrap /bin/true (per run)", 1},
    {Case::kGetppid, "getppid", 200000},
    {Case::kInetSocket, "inet socket+close", 20000},
    {Case::kUnixConnect, "unix connect+accept", 2000},
    {Case::kTcpConnect, "tcp 127.0.0.1 connect+accept", 2000},
};

double now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// One connect + accept + close against `server` (listening, of this process); false on error.
bool connect_once(int server, const sockaddr* address, socklen_t length, int family) {
  const int client = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0) return false;
  const bool ok = ::connect(client, address, length) == 0;
  if (!ok) std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
  const int accepted = ok ? ::accept4(server, nullptr, nullptr, SOCK_CLOEXEC) : -1;
  if (accepted >= 0) ::close(accepted);
  ::close(client);
  return ok && accepted >= 0;
}

// The loop of `what` in the child; its duration in ns, or a negative value on failure.
double child_loop(Case what, int ops, const std::string& dir) {
  switch (what) {
    case Case::kSetup:
    case Case::kSpawn:
    case Case::kBwrap:
      return 0;
    case Case::kGetppid: {
      const double start = now_ns();
      for (int i = 0; i < ops; ++i) (void)::getppid();
      return now_ns() - start;
    }
    case Case::kInetSocket: {
      const double start = now_ns();
      for (int i = 0; i < ops; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        ::close(fd);
      }
      return now_ns() - start;
    }
    case Case::kUnixConnect: {
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      const std::string path = dir + "/bench-" + std::to_string(::getpid()) + ".sock";
      std::memcpy(address.sun_path, path.c_str(), path.size());
      const int server = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (::bind(server, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
          ::listen(server, 64) != 0)
        return -1;
      const double start = now_ns();
      for (int i = 0; i < ops; ++i) {
        if (!connect_once(server, reinterpret_cast<const sockaddr*>(&address), sizeof address,
                          AF_UNIX))
          return -1;
      }
      const double took = now_ns() - start;
      ::unlink(path.c_str());
      return took;
    }
    case Case::kTcpConnect: {
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      socklen_t length = sizeof address;
      if (::bind(server, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
          ::listen(server, 64) != 0 ||
          ::getsockname(server, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        return -1;
      const double start = now_ns();
      for (int i = 0; i < ops; ++i) {
        if (!connect_once(server, reinterpret_cast<const sockaddr*>(&address), length, AF_INET))
          return -1;
      }
      return now_ns() - start;
    }
  }
  return -1;
}

// The supervisor of `mode` for `listener` (nullptr for kPlain or on failure, said on stderr).
std::unique_ptr<sbx::bwrap::UnixSupervisor> supervise(Mode mode, int listener) {
  if (mode == Mode::kPlain || mode == Mode::kFilterOnly) {
    ::close(listener);
    return nullptr;
  }
  auto started = mode == Mode::kThread
                     ? sbx::bwrap::UnixSupervisor::start(listener, sbx::bwrap::UnixSocketRules{})
                     : sbx::bwrap::UnixSupervisor::attach(listener, sbx::bwrap::UnixSocketRules{});
  if (!started.ok()) {
    std::fprintf(stderr, "supervisor: %s\n", started.error().c_str());
    return nullptr;
  }
  return std::move(*started);
}

// Waits until `ready` (the child's result pipe or pidfd) is readable, serving the listener
// meanwhile when the supervisor is owner-driven (as the spawner's loop does).
void wait_serving(int ready, sbx::bwrap::UnixSupervisor* supervisor) {
  for (;;) {
    const int listener = supervisor != nullptr ? supervisor->poll_fd() : -1;
    pollfd fds[2] = {{ready, POLLIN, 0}, {listener, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) supervisor->serve();
    if (fds[0].revents != 0) return;
  }
}

// vfork + (filter, listener sent) + execve argv[0] (/bin/true, or bwrap running it),
// supervised until reaped, as the spawner runs bwrap. ns for the whole, or a negative value on
// failure.
double spawn_round_ns(Mode mode, bool with_bwrap) {
  int channel[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) return -1;
  char true_path[] = "/bin/true";
  char* true_argv[] = {true_path, nullptr};
  static const char* const kBwrapArgv[] = {"/usr/bin/bwrap",
                                           "--unshare-all",
                                           "--die-with-parent",
                                           "--ro-bind",
                                           "/",
                                           "/",
                                           "--dev",
                                           "/dev",
                                           "--proc",
                                           "/proc",
                                           "--",
                                           "/bin/true",
                                           nullptr};
  char* const* argv = with_bwrap ? const_cast<char* const*>(kBwrapArgv) : true_argv;
  char* envp[] = {nullptr};
  const bool filtered = mode != Mode::kPlain;
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  const double start = now_ns();
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::vfork();
  if (pid == 0) {
    if (filtered) {
      const int listener = sbx::bwrap::install_unix_notify_filter(true);
      if (listener < 0 || !sbx::bwrap::send_descriptor(channel[1], listener)) ::_exit(1);
      ::close(listener);
    }
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv, envp);
    ::_exit(127);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  ::close(channel[1]);
  if (pid < 0) {
    ::close(channel[0]);
    return -1;
  }
  std::unique_ptr<sbx::bwrap::UnixSupervisor> supervisor;
  if (filtered) {
    supervisor = supervise(mode, sbx::bwrap::receive_descriptor(channel[0]));
    if (!supervisor && mode != Mode::kFilterOnly) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return -1;
    }
  }
  ::close(channel[0]);
  const int exited = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (exited >= 0) {
    wait_serving(exited, supervisor.get());
    ::close(exited);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (supervisor) supervisor->stop();
  const double whole = now_ns() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return whole;
}

// Serves Landlock's unix connect guard on `listener` until `ready` is readable.
void wait_serving_landlock(int ready, int listener) {
  sbx::stage2::UnixConnectGuard guard;
  for (;;) {
    pollfd fds[2] = {{ready, POLLIN, 0}, {listener, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if ((fds[1].revents & POLLIN) != 0) {
      seccomp_notif request{};
      if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &request) == 0)
        guard.answer(listener, request, -1);
    }
    if (fds[0].revents != 0) return;
  }
}

// One round in a forked child; for kSetup the parent's whole fork-to-reap time, else the
// child's loop time. ns, or a negative value on failure.
double round_ns(Case what, int ops, Mode mode, const std::string& dir) {
  if (what == Case::kSpawn || what == Case::kBwrap)
    return spawn_round_ns(mode, what == Case::kBwrap);
  const bool supervised = mode != Mode::kPlain;
  const bool landlock = mode == Mode::kLandlock;
  int channel[2];
  int result[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) return -1;
  if (::pipe2(result, O_CLOEXEC) != 0) return -1;
  const double start = now_ns();
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::close(result[0]);
    if (landlock) {
      if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
          sbx::stage2::install_metadata_guard(channel[1], false, true) != 0)
        ::_exit(1);
    } else if (supervised) {
      const int listener = sbx::bwrap::install_unix_notify_filter(false);
      if (listener < 0 || !sbx::bwrap::send_descriptor(channel[1], listener)) ::_exit(1);
      ::close(listener);
    }
    // Like a sandboxed command, both ways: no capability left (the supervisor acts with the
    // caller's privileges, and reaches a caller with more than it has not at all).
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, none) != 0) ::_exit(1);
    const double took = child_loop(what, ops, dir);
    const bool written =
        ::write(result[1], &took, sizeof took) == static_cast<ssize_t>(sizeof took);
    ::_exit(written ? 0 : 1);
  }
  ::close(channel[1]);
  ::close(result[1]);
  std::unique_ptr<sbx::bwrap::UnixSupervisor> supervisor;
  int landlock_listener = -1;
  if (landlock) {
    sbx::Result<int> listener = sbx::stage2::receive_metadata_listener(channel[0]);
    if (!listener.ok()) return -1;
    landlock_listener = *listener;
  } else if (supervised) {
    pollfd p{channel[0], POLLIN, 0};
    ::poll(&p, 1, 10000);
    supervisor = supervise(mode, sbx::bwrap::receive_descriptor(channel[0]));
    if (!supervisor && mode != Mode::kFilterOnly) return -1;
  }
  ::close(channel[0]);
  if (landlock) {
    wait_serving_landlock(result[0], landlock_listener);
    ::close(landlock_listener);
  } else {
    wait_serving(result[0], supervisor.get());
  }
  double took = -1;
  if (::read(result[0], &took, sizeof took) != static_cast<ssize_t>(sizeof took)) took = -1;
  ::close(result[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (supervisor) supervisor->stop();
  const double whole = now_ns() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || took < 0) return -1;
  return what == Case::kSetup ? whole : took;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  if (const std::string missing = sbx::bwrap::unix_supervisor_unavailable(); !missing.empty()) {
    std::fprintf(stderr, "the supervisor cannot run here: %s\n", missing.c_str());
    return 1;
  }
  char dir_template[] = "/tmp/sbx-bench-unix-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return 1;
  const std::string dir = dir_template;
  std::printf("%-28s %12s %12s %12s %12s %12s | %11s %11s %11s %11s\n", "case (median of rounds)",
              "unsupervised", "filter only", "thread", "owner", "landlock", "+filter", "+thread",
              "+owner", "+landlock");
  int failures = 0;
  const std::string only = argc > 2 ? argv[2] : "";
  for (const CaseInfo& c : kCases) {
    if (!only.empty() && std::string(c.name).rfind(only, 0) != 0) continue;
    const bool per_run = c.what == Case::kSetup || c.what == Case::kSpawn || c.what == Case::kBwrap;
    if (c.what == Case::kBwrap && ::access("/usr/bin/bwrap", X_OK) != 0) {
      std::printf("%-28s skipped: no /usr/bin/bwrap\n", c.name);
      continue;
    }
    std::vector<double> results[kModes];
    for (int r = 0; r < rounds; ++r) {
      // Interleaved, the order rotated every round: a change in load, or whatever a round
      // leaves behind for the next, hits every mode alike.
      constexpr Mode kOrder[] = {Mode::kPlain, Mode::kFilterOnly, Mode::kThread, Mode::kOwner,
                                 Mode::kLandlock};
      for (int k = 0; k < kModes; ++k) {
        const Mode mode = kOrder[(r + k) % kModes];
        if (mode == Mode::kFilterOnly && (!per_run || c.what == Case::kBwrap)) continue;
        if (mode == Mode::kLandlock && per_run) continue;  // a run's set-up is launch_test's
        const double ns = round_ns(c.what, c.ops, mode, dir);
        if (ns < 0) {
          ++failures;
          continue;
        }
        results[static_cast<int>(mode)].push_back(ns / c.ops);
      }
    }
    if (results[0].empty() || results[2].empty() || results[3].empty() ||
        (per_run && c.what != Case::kBwrap && results[1].empty())) {
      std::printf("%-28s failed\n", c.name);
      continue;
    }
    const double a = median(results[0]);
    const bool micro = a >= 10000;  // print µs for large figures, ns otherwise
    const double scale = micro ? 1000.0 : 1.0;
    const char* unit = micro ? "us" : "ns";
    char columns[kModes][32];
    char differences[kModes][32];
    for (int m = 0; m < kModes; ++m) {
      if (results[m].empty()) {
        std::snprintf(columns[m], sizeof columns[m], "-");
        std::snprintf(differences[m], sizeof differences[m], "-");
        continue;
      }
      const double v = median(results[m]);
      std::snprintf(columns[m], sizeof columns[m], "%.1f %s", v / scale, unit);
      std::snprintf(differences[m], sizeof differences[m], "%+.1f %s", (v - a) / scale, unit);
    }
    std::printf("%-28s %12s %12s %12s %12s %12s | %11s %11s %11s %11s", c.name, columns[0],
                columns[1], columns[2], columns[3], columns[4], differences[1], differences[2],
                differences[3], differences[4]);
    // Per run: the owner's (the spawner's) added cost as a share of the unsupervised run.
    if (per_run) std::printf("  (%+.1f %%)", (median(results[3]) - a) / a * 100);
    std::printf("\n");
  }
  ::rmdir(dir.c_str());
  if (failures > 0) std::fprintf(stderr, "%d rounds failed\n", failures);
  return failures > 0 ? 1 : 0;
}
