// sbx-stage2: the last trusted step before the command (stage2/README.md).
//
//   sbx-stage2 --net blocked|open|private [--env KEY=VALUE]... [--env-fd N | --env-environ]
//              [--ready-fd N] [--mounts-fd N] -- /abs/command [ARG]...
//   sbx-stage2 --net proxy --proxy-port PORT --proxy-socket PATH [--env KEY=VALUE]... -- ...
//              (bwrap mode, either form: [--cache-overlay PATH]...
//              [--write-layer [--write-root PATH]...])
//   sbx-stage2 --waiter [--write-layer [--write-root PATH]...] [--status-fd N]
//              -- /abs/command [ARG]...
//              (bwrap mode and --waiter, in builds with tests only: [--trace-fd N], the
//              confinement order's trace, linux/confine/steps.hpp)
//   sbx-stage2 --landlock MIN_ABI [--ll-fs restricted|unrestricted] [--ll-read PATH]...
//              [--ll-write PATH]... [--ll-dev PATH]... [--ll-list PATH]...
//              [--ll-scope-abstract-unix on|off] [--parent-pid PID]
//              --net blocked|open|proxy [--proxy-port PORT] [--env KEY=VALUE]... -- ...
//   sbx-stage2 --proxy-connect HOST PORT
//              (inside the sandbox, network mode proxy: ssh's ProxyCommand through sbx's
//              proxy, the GIT_SSH_COMMAND core sets; proxy_connect.hpp)
//
// Network proxy (network.mode proxy): under bwrap (an empty network namespace) stage 2 first
// starts the relay of proxy_relay.hpp on 127.0.0.1:PORT to the proxy's unix socket PATH; in
// Landlock mode the ruleset allows TCP connect to PORT only. Under bwrap the command then gets
// the private-namespace seccomp filter (loopback TCP/UDP of its own), in Landlock mode the
// proxy-mode filter (seccomp_filter.hpp). Under bwrap, in every network mode, abstract unix
// sockets and signals are scoped to a Landlock domain when the kernel has ABI 6: the write
// layer's, or without one a domain of the scope alone.
//
// Write layer (--write-layer, bwrap mode with restricted filesystem writes): right before the
// command, a Landlock domain that lets it write only beneath the --write-root paths and the
// sandbox's own /dev and /proc entries (write_layer.hpp says why read-only mounts do not stop
// writes to host FIFOs).
//
// Waiter (--waiter, the direct bwrap launch: bwrap itself starts it in place of the command, as
// pid 2 of the sandbox under bwrap's own init): enters the write layer when given one, then
// runs the command as its child and waits for it, passing the forwarded signals on, and exits
// with its status like PID 1 below. Why: bwrap 0.8 folds a death by signal N into exit code
// 128+N, in its own exit status and in --json-status-fd alike (bubblewrap.c
// propagate_exit_status), and its init reaps the command at once, so nothing outside can learn
// the signal; the waiter writes N as one byte on --status-fd (a pipe only sbx reads) before it
// exits with 128+N. It is in the command's confinement: bwrap's seccomp programs,
// no_new_privs, no capability, the same namespaces and Landlock domain (the layer is entered
// before the fork), and undumpable (make_undumpable).
//
// Landlock mode (--landlock, the landlock backend's plan): a thin wrapper over the launcher of
// landlock_launch.hpp, which the landlock plugin runs inside sbx itself; this entry point is for
// a plan run by hand (the plan's argv names sbx-stage2). --parent-pid ties it to the process
// that started it: when that dies, so does this one, and with it the whole run.
//
// Copy-on-write caches (--cache-overlay PATH, cache_overlays.hpp): bwrap leaves stage 2
// CAP_SYS_ADMIN, CAP_DAC_OVERRIDE and CAP_SETPCAP of the sandbox's user namespace; right after
// the mount check it mounts one overlay per cache at PATH (the host's directory the read-only
// lower layer, the project's layer the upper one), then drops every capability before the
// check below.
//
// bwrap mode, in the order of linux/confine/order.hpp (stage 2's rows; confine_command): checks
// bwrap's mounts, [mounts the cache overlays,] sets no_new_privs, drops the capabilities it was
// left or verifies it holds none and, in a private network
// namespace, that it holds only `lo`, starts the proxy relay, enters the write layer (or without
// one the Landlock scope alone), installs the seccomp filter (precompiled at build time,
// seccomp_programs.hpp: building it with libseccomp cost every run several milliseconds, loading
// the data costs microseconds), then runs the command by absolute path with exactly the --env
// environment (plus the entries read from --env-fd, or stage 2's own environment with
// --env-environ: env_block.hpp says why secrets do not travel as arguments). Any failed step prints
// "sbx-stage2: <step>: <reason>" and exits 125; the command never runs. Exec failures: 127 (not
// found), 126 (not executable).
//
// PID 1: bwrap runs it with --as-pid-1, so it is the init of the sandbox's pid namespace. It
// then forks the command, forwards the usual terminal and job-control signals to it, reaps every
// orphan re-parented to it, and exits with the command's status (128+N if it died of signal N;
// init cannot re-raise a fatal signal on itself, and bwrap folds one into 128+N anyway). So that
// sbx can report a signal as a signal, PID 1 then writes N as one byte after the ready byte on
// --ready-fd (sbx trusts it only when bwrap's exit code is 128+N). When it exits, the kernel
// kills whatever else is left in the namespace, so no grandchild outlives the command. The
// waiter (above) runs the same loop (run_and_wait).
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bwrap_checks.hpp"
#include "cache_overlays.hpp"
#include "env_block.hpp"
#include "landlock_launch.hpp"
#include "landlock_ruleset.hpp"
#include "proxy_connect.hpp"
#include "proxy_relay.hpp"
#include "sbx/sdk/abi.h"
#include "sbx/sdk/posix_child.hpp"
#include "seccomp_filter.hpp"
#include "seccomp_programs.hpp"
#include "steps.hpp"
#include "unix_connect_notify.hpp"
#include "write_layer.hpp"

namespace {

namespace child = sbx::sdk::posix_child;
namespace confine = sbx::confine;

constexpr int kExitFailure = sbx::sdk::kExitSandboxFailure;
// Where bwrap binds the copy-on-write caches' layers (plugins/bwrap translate.hpp, the same
// value: stage 2 does not link the plugin).
constexpr const char* kCacheLayersDir = "/dev/.sbx-caches";
constexpr int kForwarded[] = {SIGHUP,   SIGINT,  SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                              SIGWINCH, SIGCONT, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};

[[noreturn]] void fail(const std::string& step, const std::string& reason) {
  std::fprintf(stderr, "sbx-stage2: %s: %s\n", step.c_str(), reason.c_str());
  std::fflush(stderr);
  ::_exit(kExitFailure);
}

struct Options {
  sbx::stage2::NetworkFilter network = sbx::stage2::NetworkFilter::kBlocked;
  bool network_given = false;
  // bwrap mode: sbx's unix-socket supervisor watches every connect and bind of the sandbox.
  bool unix_supervised = false;
  std::vector<std::string> env;
  std::vector<std::string> command;
  sbx::stage2::RelaySpec relay;  // --net proxy: the proxy's port (and socket under bwrap)
  int ready_fd = -1;             // bwrap mode: told "bwrap's setup worked" (bwrap_checks.hpp)
  int mounts_fd = -1;            // bwrap mode: the planned mounts to verify (bwrap_checks.hpp)
  bool write_layer = false;      // --write-layer: enter it before the command
  std::vector<std::string> writable_roots;  // --write-root: what the layer lets be written
  // --cache-overlay: the toolchain caches to mount copy-on-write (cache_overlays.hpp)
  std::vector<std::string> cache_overlays;
  int trace_fd = -1;  // --trace-fd (checked builds): the confinement order's trace (steps.hpp)
  // command and env as execve takes them, pointing into those two; built once parsing is
  // done (prepare_exec), before any fork: a forked child may not allocate.
  std::vector<char*> exec_argv;
  std::vector<char*> exec_envp;
};

void prepare_exec(Options& o) {
  o.exec_argv = child::c_string_array(o.command);
  o.exec_envp = child::c_string_array(o.env);
}

int parse_fd(const std::string& option, const std::string& value) {
  char* end = nullptr;
  const long fd = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || fd < 3 || fd > 1'000'000)
    fail("arguments", option + " expects a descriptor number >= 3, got '" + value + "'");
  return static_cast<int>(fd);
}

// --net proxy needs the port and the socket of the proxy; the other modes take neither.
void check_proxy_options(const Options& o) {
  const bool proxy = o.network == sbx::stage2::NetworkFilter::kProxy;
  if (!proxy) {
    if (o.relay.port != 0 || !o.relay.socket_path.empty())
      fail("arguments", "--proxy-port/--proxy-socket need --net proxy");
    return;
  }
  if (o.relay.port == 0) fail("arguments", "--net proxy needs --proxy-port");
  if (o.relay.socket_path.empty()) fail("arguments", "--net proxy needs --proxy-socket");
}

// Reads the --env-fd block to EOF and closes the descriptor, so that neither the relay nor
// the command inherits it.
std::vector<std::string> read_env_fd(const std::string& value) {
  char* end = nullptr;
  const long fd = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || fd < 3 || fd > 1'000'000)
    fail("arguments", "--env-fd expects a descriptor number >= 3, got '" + value + "'");
  std::string block;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(static_cast<int>(fd), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("environment", "cannot read --env-fd " + value + ": " + std::strerror(errno));
    if (n == 0) break;
    block.append(buffer, static_cast<std::size_t>(n));
    if (block.size() > sbx::stage2::kMaxEnvBlock)
      fail("environment", "--env-fd holds more than 16 MiB");
  }
  ::close(static_cast<int>(fd));
  sbx::Result<std::vector<std::string>> entries = sbx::stage2::parse_env_block(block);
  if (!entries.ok()) fail("environment", entries.error());
  return std::move(*entries);
}

std::vector<std::string> own_environment() {
  std::vector<std::string> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (sbx::stage2::valid_env_entry(*e)) entries.emplace_back(*e);
  }
  return entries;
}

// --trace-fd, checked builds only (linux/confine/steps.hpp): sbx hands its trace on; made
// close-on-exec here, so the command never holds it.
int parse_trace_fd(const std::string& value) {
  const int fd = confine::adopt_trace_fd(parse_fd("--trace-fd", value));
  if (fd < 0) fail("arguments", "--trace-fd " + value + " is not an open descriptor");
  return fd;
}

// Each step, once performed, against the confinement order (checked builds; steps.hpp):
// out of order, the command does not run.
void step_done(confine::ConfinementSteps& steps, confine::Step step) {
  if (!steps.done(step)) fail("confinement order", "a step out of order (see above)");
}

std::string parse_write_root(const std::string& value) {
  if (value.empty() || value.front() != '/')
    fail("arguments", "--write-root expects an absolute path, got '" + value + "'");
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg == "--unix-supervised") {
      o.unix_supervised = true;
      continue;
    }
    if (arg == "--write-layer") {
      o.write_layer = true;
      continue;
    }
    if (arg == "--env-environ") {
      const std::vector<std::string> own = own_environment();
      o.env.insert(o.env.end(), own.begin(), own.end());
      continue;
    }
    if (i + 1 >= argc) fail("arguments", "'" + arg + "' needs a value");
    const std::string value = argv[++i];
    if (arg == "--net") {
      auto net = sbx::stage2::parse_network_filter(value);
      if (!net.ok()) fail("arguments", net.error());
      o.network = *net;
      o.network_given = true;
    } else if (arg == "--proxy-port") {
      sbx::Result<std::uint16_t> port = sbx::stage2::parse_port(value);
      if (!port.ok()) fail("arguments", "--proxy-port: " + port.error());
      o.relay.port = *port;
    } else if (arg == "--proxy-socket") {
      if (value.empty() || value.front() != '/')
        fail("arguments", "--proxy-socket expects an absolute path, got '" + value + "'");
      o.relay.socket_path = value;
    } else if (arg == "--env") {
      if (value.find('=') == std::string::npos || value.front() == '=')
        fail("arguments", "--env expects KEY=VALUE, got '" + value + "'");
      o.env.push_back(value);
    } else if (arg == "--ready-fd") {
      o.ready_fd = parse_fd(arg, value);
    } else if (arg == "--mounts-fd") {
      o.mounts_fd = parse_fd(arg, value);
    } else if (arg == "--env-fd") {
      const std::vector<std::string> block = read_env_fd(value);
      o.env.insert(o.env.end(), block.begin(), block.end());
    } else if (arg == "--write-root") {
      o.writable_roots.push_back(parse_write_root(value));
    } else if (arg == "--cache-overlay") {
      if (value.size() < 2 || value.front() != '/')
        fail("arguments", "--cache-overlay expects an absolute path, got '" + value + "'");
      o.cache_overlays.push_back(value);
    } else if (confine::kChecked && arg == "--trace-fd") {
      o.trace_fd = parse_trace_fd(value);
    } else {
      fail("arguments", "unknown option '" + arg + "'");
    }
  }
  if (!o.network_given) fail("arguments", "--net blocked|open|proxy|private is required");
  if (!o.write_layer && !o.writable_roots.empty())
    fail("arguments", "--write-root needs --write-layer");
  check_proxy_options(o);
  for (++i; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.command.empty()) fail("arguments", "no command after '--'");
  if (o.command.front().empty() || o.command.front()[0] != '/')
    fail("arguments", "the command must be an absolute path, got '" + o.command.front() + "'");
  return o;
}

// Why: a sandbox that still holds a capability (bwrap misconfigured, setuid bwrap without
// --cap-drop) could undo the filesystem view; refuse rather than run the command in it. With
// copy-on-write caches bwrap left stage 2 three on purpose (cache_overlays.hpp): dropped here,
// every set, before the same check. Effective, permitted, inheritable, bounding and ambient.
void drop_and_verify_capabilities(bool cache_overlays) {
  const sbx::Status none = cache_overlays ? sbx::stage2::drop_held_capabilities()
                                          : sbx::stage2::verify_no_capabilities();
  if (!none.ok()) fail("capabilities", none.error() + "; refusing to run");
}

// Only stdin, stdout and stderr reach the command: whatever bwrap or a step of stage 2 may have
// left open without close-on-exec (a ruleset, a listener) is closed at execve. Then execve, and
// if it fails, 127 (not found) or 126 (not executable) with the reason on stderr.
[[noreturn]] void exec_command(const Options& o, confine::ConfinementSteps& steps) {
  child::close_on_exec_all_but(nullptr, 0);
  step_done(steps, confine::Step::kDescriptors);
  step_done(steps, confine::Step::kExec);
  ::execve(o.exec_argv[0], o.exec_argv.data(), o.exec_envp.data());
  const int err = errno;
  std::fprintf(stderr, "sbx-stage2: exec: %s: %s\n", o.exec_argv[0], std::strerror(err));
  ::_exit(sbx::sdk::exit_code_for_exec_error(err));
}

int status_to_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

void ignore_caught_signal(int /*sig*/) {}

// Why handlers although every forwarded signal is blocked and taken with sigwaitinfo: while
// sigwaitinfo sleeps, the kernel shows the waited-for signals as unblocked (/proc SigBlk 0), and
// sbx (plugins/bwrap/src/launch.cpp) holds a signal until /proc/<pid>/status shows that this
// PID 1 will not drop it (a namespace init drops a signal from outside whose disposition is
// SIG_DFL). A caught signal (SigCgt) is never dropped, so the handler is that visible promise.
// It never runs: the signals stay blocked here, and the child resets them before unblocking.
void catch_forwarded_signals() {
  struct sigaction action {};
  action.sa_handler = ignore_caught_signal;
  sigemptyset(&action.sa_mask);
  for (int sig : kForwarded) {
    if (::sigaction(sig, &action, nullptr) != 0) fail("signals", std::strerror(errno));
  }
}

// How run_and_wait starts the command: argv and environment ready before the fork (a forked
// child may not allocate), and whether the child leads a session of its own.
struct CommandChild {
  char* const* argv;
  char* const* envp;
  // The waiter's child: setsid() makes the command lead a session and process group of its own
  // (pid = process group = session, as bwrap's --new-session makes bwrap's own command), which
  // keeps the waiter out of the command's process group, where `kill 0` or `kill -9 0` would
  // reach it. Stage 2 as PID 1 needs none of it: an init receives no signal from its namespace
  // that it has no handler for, SIGKILL included (pid_namespaces(7)).
  bool own_session;
};

// The command's child of PID 1 or of the waiter: async-signal-safe only (the toolkit's child
// side). Default dispositions again before the mask is emptied, so a signal arriving before
// execve acts on the command, not on the no-op handler; a failed execve goes to the parent over
// `report_fd`. A step out of the confinement order (its message is printed) ends it with 125.
[[noreturn]] void exec_command_child(const CommandChild& c, int report_fd,
                                     confine::ConfinementSteps& steps) {
  child::reset_signal_dispositions();
  // Cannot fail in a child just forked (not a process group leader); fail closed if it does.
  if (c.own_session && ::setsid() < 0) child::fail(report_fd, child::Step::kSetup, kExitFailure);
  child::close_on_exec_all_but(nullptr, 0);
  if (!steps.done(confine::Step::kDescriptors)) ::_exit(kExitFailure);
  child::unblock_all_signals();
  if (!steps.done(confine::Step::kExec)) ::_exit(kExitFailure);
  child::exec_or_fail(report_fd, c.argv, c.envp);
}

// vfork + the command's child, kept apart so that no local of the caller lives across vfork.
// Why vfork: the parent (PID 1 or the waiter) has nothing to do until the command's execve, and
// sharing its memory until then spares copying its page tables and the copy-on-write faults
// that would follow. Safe because the child side writes nothing of the parent's but the steps'
// position, which the parent no longer reads, and every signal with a handler of the parent's
// is blocked until the child resets the dispositions.
[[gnu::noinline]] pid_t vfork_command(const CommandChild& c, int report_fd,
                                      confine::ConfinementSteps& steps) {
  const pid_t pid = ::vfork();
  if (pid == 0) exec_command_child(c, report_fd, steps);
  return pid;
}

// The parent's side of a failed step in its child: the message the child could not print safely.
void report_exec_failure(const CommandChild& c, int report_read) {
  child::Failure failure{};
  if (!child::read_failure(report_read, failure)) return;  // EOF: the command runs
  const char* step = failure.step == child::Step::kExec ? "exec" : "session";
  std::fprintf(stderr, "sbx-stage2: %s: %s: %s\n", step, c.argv[0], std::strerror(failure.error));
  std::fflush(stderr);
}

// The command reaped: the signal that killed it, one byte on `status_fd` (PID 1: the ready pipe
// after the ready byte; the waiter: --status-fd), read by sbx once bwrap has ended
// (plugins/bwrap/src/launch.cpp, with_command_signal). Best effort: without it sbx reports
// 128+N as an exit code.
void tell_signal(int status_fd, int status) {
  if (status_fd < 0 || !WIFSIGNALED(status)) return;
  const char byte = static_cast<char>(WTERMSIG(status));
  while (::write(status_fd, &byte, 1) < 0 && errno == EINTR) {
  }
}

// PID 1 and the waiter: run the command as a child; forward signals; reap everything (PID 1's
// orphans; the waiter has no other child); exit with its status (and tell sbx a signal on
// `status_fd`, -1 for none).
[[noreturn]] void run_and_wait(const CommandChild& c, confine::ConfinementSteps& steps,
                               int status_fd) {
  sigset_t all;
  sigemptyset(&all);
  for (int sig : kForwarded) sigaddset(&all, sig);
  sigaddset(&all, SIGCHLD);
  if (::sigprocmask(SIG_BLOCK, &all, nullptr) != 0) fail("signals", std::strerror(errno));
  catch_forwarded_signals();
  int report[2];
  if (!child::open_report_pipe(report)) fail("pipe", std::strerror(errno));
  const pid_t command = vfork_command(c, report[1], steps);
  if (command < 0) fail("fork", std::strerror(errno));
  ::close(report[1]);
  report_exec_failure(c, report[0]);
  ::close(report[0]);
  for (;;) {
    siginfo_t info{};
    if (::sigwaitinfo(&all, &info) < 0) continue;  // EINTR
    if (info.si_signo != SIGCHLD) {
      ::kill(command, info.si_signo);
      continue;
    }
    int status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == command) {
        tell_signal(status_fd, status);
        ::_exit(status_to_code(status));
      }
    }
  }
}

}  // namespace

// bwrap mode, before anything else: tell sbx that bwrap's setup worked, then verify the
// mounts bwrap made against the plan (bwrap_checks.hpp says why both). Returns a close-on-exec
// copy of the ready pipe for PID 1's last word (tell_signal), -1 without one.
int check_bwrap_setup(const Options& o, confine::ConfinementSteps& steps) {
  int status_fd = -1;
  if (o.ready_fd >= 0) {
    status_fd = ::fcntl(o.ready_fd, F_DUPFD_CLOEXEC, 3);  // -1 on failure: no last word
    sbx::Status ready = sbx::stage2::signal_ready(o.ready_fd);
    if (!ready.ok()) fail("ready", ready.error());
  }
  if (o.mounts_fd >= 0) {
    sbx::Status mounts = sbx::stage2::verify_mounts_from_fd(o.mounts_fd);
    if (!mounts.ok()) fail("mounts", mounts.error());
    step_done(steps, confine::Step::kMountCheck);
  }
  return status_fd;
}

// Every role of stage 2 that outlives the start of the command (PID 1 under bwrap, the proxy
// relay it forks, the Landlock-mode wrapper) shares the command's uid. Dumpable, its /proc files
// would be the command's to open: /proc/PID/mem read-write, environ, fd/N to reopen its
// descriptors, and ptrace access checks such as pidfd_getfd's would pass. Not dumpable, each of
// them needs CAP_SYS_PTRACE, which the command never has. Inherited by every fork; the command's
// execve makes the command itself dumpable again, which is intended.
void make_undumpable() {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) fail("dumpable", std::strerror(errno));
}

// bwrap mode: proxy means bwrap's empty network namespace with the relay in it, so the command
// gets the private-namespace filter (loopback TCP/UDP of its own; the relay is the only way
// out). The relay binds its port before the filter and the command exist, so the command cannot
// take that port: its bind() answers EADDRINUSE.
sbx::stage2::NetworkFilter bwrap_filter(const Options& o) {
  using sbx::stage2::NetworkFilter;
  const NetworkFilter network =
      o.network == NetworkFilter::kProxy ? NetworkFilter::kPrivate : o.network;
  // Unix sockets made inside the private namespace are safe only with the supervisor deciding
  // what each connect() reaches; sbx passes --unix-supervised only when it runs one.
  if (network == NetworkFilter::kPrivate && o.unix_supervised)
    return NetworkFilter::kPrivateUnixSupervised;
  return network;
}

// Why: the private-namespace filter lets the command bind, listen and connect on loopback,
// which is harmless only when that loopback is not the host's. bwrap's --unshare-net leaves
// exactly one interface, `lo`; any other interface means the namespace is shared (or something
// was added to it), so refuse to run rather than open the host's loopback.
void verify_private_network() {
  struct if_nameindex* names = ::if_nameindex();
  if (names == nullptr) fail("network namespace", std::strerror(errno));
  std::string other;
  for (struct if_nameindex* n = names; n->if_index != 0; ++n) {
    if (std::strcmp(n->if_name, "lo") != 0) other = n->if_name;
  }
  ::if_freenameindex(names);
  if (!other.empty())
    fail("network namespace", "interface '" + other + "' present; not a private namespace");
}

// bwrap mode, every network mode: with the network enabled the command shares the host's
// network namespace, where abstract unix sockets (no file, so no mount hides them) of host
// services (D-Bus, X11, tmux-like tools) would be reachable. A Landlock domain that handles no
// filesystem or network right and scopes abstract unix sockets (ABI 6+) keeps connect() and
// sendto() to an abstract socket bound outside the domain from working, while sockets bound
// inside it work. It also scopes signals, so nothing in the sandbox can signal a process outside
// the domain (the proxy relay, forked before, included). Below ABI 6 there is nothing to scope
// with (stage2_shape leaves the step out); sbx's plan says so (plugins/bwrap/README.md). With a
// write layer this domain is not entered: the layer scopes the same (write_layer.hpp says why
// the command must be in one Landlock domain only).
void scope_abstract_unix_sockets() {
  sbx::stage2::LandlockSpec scope;
  scope.restrict_filesystem = false;
  scope.scope_abstract_unix = true;
  sbx::Status scoped = sbx::stage2::apply_landlock(scope);
  if (!scoped.ok()) fail("landlock scope", scoped.error());
}

void enter_write_layer(const std::vector<std::string>& writable_roots) {
  sbx::Status layered = sbx::stage2::apply_write_layer(writable_roots);
  if (!layered.ok()) fail("write layer", layered.error());
}

// --waiter's arguments: [--write-layer [--write-root PATH]...] [--status-fd N] [--trace-fd N]
// -- COMMAND...
struct Waiter {
  bool write_layer = false;
  std::vector<std::string> roots;
  int status_fd = -1;
  int trace_fd = -1;
  char** command = nullptr;
};

// --status-fd: the pipe sbx reads the signal from, made close-on-exec so that the command never
// holds it.
int adopt_status_fd(const std::string& value) {
  const int fd = parse_fd("--status-fd", value);
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
    fail("arguments", "--status-fd " + value + " is not an open descriptor");
  return fd;
}

Waiter parse_waiter(int argc, char** argv) {
  Waiter w;
  int i = 2;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) {
    const std::string option = argv[i];
    if (option == "--write-layer") {
      w.write_layer = true;
    } else if (i + 1 < argc && option == "--write-root") {
      w.roots.push_back(parse_write_root(argv[++i]));
    } else if (i + 1 < argc && option == "--status-fd") {
      w.status_fd = adopt_status_fd(argv[++i]);
    } else if (i + 1 < argc && confine::kChecked && option == "--trace-fd") {
      w.trace_fd = parse_trace_fd(argv[++i]);
    } else {
      fail("arguments",
           "--waiter takes only --write-layer, --write-root PATH and --status-fd N, got '" +
               option + "'");
    }
  }
  if (!w.write_layer && !w.roots.empty()) fail("arguments", "--write-root needs --write-layer");
  if (i + 1 >= argc) fail("arguments", "no command after '--'");
  w.command = argv + i + 1;
  if (w.command[0][0] != '/')
    fail("arguments",
         "the command must be an absolute path, got '" + std::string(w.command[0]) + "'");
  return w;
}

// --waiter: exec'd by bwrap as the command in the direct launch, after bwrap's mounts, seccomp
// programs, capability drop and no_new_privs; it enters the write layer when the plan has one
// (which is also the run's Landlock scope: sbx entered none before bwrap), then runs the command
// with the environment bwrap gave it and waits for it (linux/confine/order.hpp, the waiter's
// rows). The layer is entered before the fork, so the waiter keeps no write access the command
// lacks and shares its Landlock domain (signals between the two stay within it).
[[noreturn]] void waiter_main(int argc, char** argv) {
  const Waiter w = parse_waiter(argc, argv);
  confine::Shape shape;
  shape.route = confine::Route::kBwrapDirect;
  shape.write_layer = w.write_layer;
  const confine::Order order = confine::confinement_order(shape);
  confine::ConfinementSteps steps(order, confine::Actor::kWaiter, w.trace_fd);
  // Already set by bwrap with its seccomp programs; Landlock requires it (landlock(7)).
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs", std::strerror(errno));
  step_done(steps, confine::Step::kNoNewPrivs);
  if (w.write_layer) {
    enter_write_layer(w.roots);
    step_done(steps, confine::Step::kWriteLayer);
  }
  run_and_wait({w.command, environ, /*own_session=*/true}, steps, w.status_fd);
}

// Landlock mode: see the file comment. The environment is this process's own
// (--env-environ), never an argument.
[[noreturn]] void landlock_main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  sbx::Result<sbx::stage2::LandlockLaunch> launch = sbx::stage2::parse_landlock_argv(args);
  if (!launch.ok()) fail("arguments", launch.error());
  if (launch->parent != 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
      fail("parent-death signal", std::strerror(errno));
    if (::getppid() != launch->parent) ::_exit(128 + SIGKILL);  // already gone: nothing ran
  }
  sbx::stage2::LaunchOptions options;
  if (launch->env_environ) options.env = own_environment();
  // The emulator is this very program (--metadata-guard).
  options.guard_program = "/proc/self/exe";
  sbx::Result<sbx::ExitStatus> status = sbx::stage2::run_landlock(*launch, options);
  if (!status.ok()) fail("landlock", status.error());
  ::_exit(status->shell_code());
}

// bwrap mode's conditional steps (linux/confine/order.hpp, Shape), from stage 2's options and
// the kernel's Landlock ABI.
confine::Shape stage2_shape(const Options& o) {
  using sbx::stage2::NetworkFilter;
  confine::Shape shape;
  shape.route = confine::Route::kBwrapStage2;
  const NetworkFilter filter = bwrap_filter(o);
  shape.private_network =
      filter == NetworkFilter::kPrivate || filter == NetworkFilter::kPrivateUnixSupervised;
  shape.proxy_relay = o.network == NetworkFilter::kProxy;
  shape.landlock_scope = sbx::stage2::landlock_abi() >= 6;
  shape.write_layer = o.write_layer;
  shape.mount_check = o.mounts_fd >= 0;
  shape.cache_overlays = !o.cache_overlays.empty();
  return shape;
}

// bwrap mode, stage 2's rows of the confinement order in their order (order.cpp bwrap_stage2
// says why this order); then the command's child marks the descriptors and execs. Returns
// check_bwrap_setup's descriptor.
int confine_command(const Options& o, const confine::Shape& shape,
                    confine::ConfinementSteps& steps) {
  const int status_fd = check_bwrap_setup(o, steps);
  // The copy-on-write caches, right after the check of bwrap's mounts (which they then cover):
  // the only step that needs the capabilities bwrap left, before anything else runs.
  if (shape.cache_overlays) {
    sbx::Status mounted = sbx::stage2::mount_cache_overlays(o.cache_overlays, kCacheLayersDir);
    if (!mounted.ok()) fail("cache overlay", mounted.error());
    step_done(steps, confine::Step::kCacheOverlays);
  }
  // no_new_privs first: required for an unprivileged seccomp filter and Landlock, and setuid
  // binaries the command runs can no longer gain privileges.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs", std::strerror(errno));
  step_done(steps, confine::Step::kNoNewPrivs);
  drop_and_verify_capabilities(shape.cache_overlays);
  step_done(steps, confine::Step::kCapabilities);
  if (shape.private_network) {
    verify_private_network();
    step_done(steps, confine::Step::kNetworkCheck);
  }
  // The relay is forked before the filter: it needs the unix socket the command must not get.
  // It is a child of this PID 1 and dies with it, i.e. with the command.
  if (shape.proxy_relay) {
    sbx::Result<pid_t> relay = sbx::stage2::start_relay(o.relay);
    if (!relay.ok()) fail("proxy relay", relay.error());
    step_done(steps, confine::Step::kProxyRelay);
  }
  // One Landlock domain: the scope alone, or the write layer, which scopes too (a scope-only
  // domain beneath it would make every cross-directory rename and link EXDEV, write_layer.hpp).
  if (shape.landlock_scope && !shape.write_layer) {
    scope_abstract_unix_sockets();
    step_done(steps, confine::Step::kLandlockScope);
  }
  // Last before the filter: every mount is made, and the relay (forked above) needs no write.
  if (shape.write_layer) {
    enter_write_layer(o.writable_roots);
    step_done(steps, confine::Step::kWriteLayer);
  }
  sbx::Status filtered = sbx::stage2::load_precompiled_filter(bwrap_filter(o));
  if (!filtered.ok()) fail("seccomp", filtered.error());
  step_done(steps, confine::Step::kSeccomp);
  return status_fd;
}

// `sbx-stage2 --help`: the command lines a backend outside sbx may build (sdk/REFERENCE.md,
// "sbx-stage2"); the forms only sbx's own backends use are named as such, not described.
constexpr std::string_view kHelp = R"(Usage:
  sbx-stage2 --landlock MIN_ABI [--ll-fs restricted|unrestricted] [--ll-read PATH]...
             [--ll-write PATH]... [--ll-dev PATH]... [--ll-list PATH]...
             [--ll-scope-abstract-unix on|off] [--parent-pid PID]
             --net blocked|open|proxy [--proxy-port PORT]
             [--env KEY=VALUE]... [--env-environ] -- /abs/command [ARG]...
  sbx-stage2 --net blocked|open|private|proxy [--proxy-port PORT --proxy-socket PATH]
             [--env KEY=VALUE]... [--env-fd N | --env-environ] [--ready-fd N]
             [--mounts-fd N] [--write-layer [--write-root PATH]...] -- /abs/command [ARG]...
  sbx-stage2 --proxy-connect HOST PORT
  sbx-stage2 --help | --version

The last trusted step before a sandboxed command (supported for backends built with the sbx SDK;
sdk/REFERENCE.md). It never widens what its caller set up: each step that fails prints
"sbx-stage2: <step>: <reason>" and exits 125 without running the command; otherwise the command
runs by its absolute path with exactly the environment given (--env, --env-fd N: NUL-separated
KEY=VALUE read to its end, --env-environ: stage 2's own), and its exit status is the command's
(127 not found, 126 not executable).

Landlock mode (--landlock): on the host, no namespace needed. Sets no_new_privs, enters a
Landlock domain (refused below kernel ABI MIN_ABI) that executes and reads beneath each
--ll-read, also writes beneath each --ll-write, reads, writes and ioctls the devices --ll-dev,
only lists --ll-list (--ll-fs unrestricted: no filesystem rule) and, with
--ll-scope-abstract-unix on (ABI 6+), reaches no abstract unix socket outside it; installs the
seccomp filter of --net (blocked: no network; open: any; proxy: TCP connect to --proxy-port
only) and execs the command. --parent-pid PID: the command dies with that process.

Init mode (--net without --landlock): inside a sandbox another tool made (bubblewrap), as PID 1
of its pid namespace. Compares the mount table with --mounts-fd N (NUL-ended "w PATH" and
"r PATH" entries: what must be mounted, and whether it may be writable), writes one byte on
--ready-fd N once that is checked (after it, the number of the signal that killed the command),
verifies it holds no capability in any set, sets no_new_privs, starts the relay from
127.0.0.1:--proxy-port to the unix socket --proxy-socket (--net proxy), enters a Landlock write
layer with --write-layer (writes only beneath each --write-root), installs the seccomp filter of
--net (private: the namespace's own loopback only) and runs the command, forwarding signals to
it, reaping orphans and exiting with its status.

Proxy connect (--proxy-connect): ssh's ProxyCommand inside a sandbox in network mode proxy
(sbx sets GIT_SSH_COMMAND to use it): asks the proxy in HTTPS_PROXY
(http://USER:TOKEN@127.0.0.1:PORT) for a CONNECT tunnel to HOST:PORT, then copies stdin to it
and it to stdout; exit 1 with the proxy's status line when refused.

Forms used only by sbx's own backends, not a stable interface: --waiter, --metadata-guard,
--unix-connect-trial, --unix-supervised, --cache-overlay, --status-fd and --trace-fd.
)";

// --help and --version only as the first argument: anything else is a command line to run,
// whose own words are never options of stage 2.
void answer_help_or_version(int argc, char** argv) {
  if (argc != 2) return;
  const std::string_view arg = argv[1];
  if (arg == "--help" || arg == "-h") {
    std::fwrite(kHelp.data(), 1, kHelp.size(), stdout);
    std::fflush(stdout);
    ::_exit(0);
  }
  if (arg == "--version") {
    std::printf("sbx-stage2 %s (plugin ABI %d.%d)\n", SBX_STAGE2_VERSION, SBX_ABI_MAJOR,
                SBX_ABI_MINOR);
    std::fflush(stdout);
    ::_exit(0);
  }
}

int main(int argc, char** argv) {
  make_undumpable();
  answer_help_or_version(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "--metadata-guard")
    ::_exit(sbx::stage2::run_metadata_guard(argc, argv));
  if (argc >= 2 && std::string(argv[1]) == "--unix-connect-trial")
    ::_exit(sbx::stage2::run_unix_connect_trial(argc, argv));
  if (argc >= 2 && std::string(argv[1]) == "--waiter") waiter_main(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "--proxy-connect")
    ::_exit(sbx::stage2::run_proxy_connect(argc, argv));
  if (sbx::stage2::is_landlock_argv(std::vector<std::string>(argv, argv + argc)))
    landlock_main(argc, argv);
  Options options = parse(argc, argv);
  prepare_exec(options);
  const confine::Shape shape = stage2_shape(options);
  const confine::Order order = confine::confinement_order(shape);
  confine::ConfinementSteps steps(order, confine::Actor::kStage2, options.trace_fd);
  const int status_fd = confine_command(options, shape, steps);
  if (::getpid() == 1)
    run_and_wait({options.exec_argv.data(), options.exec_envp.data(), /*own_session=*/false}, steps,
                 status_fd);
  exec_command(options, steps);
}
