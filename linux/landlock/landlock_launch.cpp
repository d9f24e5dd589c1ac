// See landlock_launch.hpp for the shape of a run and why each process does what it does.
//
// Why the supervisor makes raw system calls only: it is clone(CLONE_VM) of the caller's thread,
// so it runs in the caller's memory with that thread's thread-local storage (errno, malloc's
// per-thread cache) while the caller goes on. So it allocates nothing, calls no libc function
// that sets errno or takes a lock, and reads only what the caller prepared before the clone
// (sys() below returns -errno instead). The caller for its part keeps every signal blocked on
// its thread (no handler may run there meanwhile) and waits with raw calls too, until the
// pidfd says the supervisor has ended. The command's child, clone(CLONE_VM | CLONE_VFORK) of
// the supervisor, does use libc's system call wrappers (and errno) until its execve: the
// supervisor is suspended by CLONE_VFORK meanwhile and the caller makes no call that sets
// errno, so that storage is the child's alone. The metadata guard's emulator needs memory of
// its own (it allocates): it is a separate program, exec'd only when first needed.
//
// Why the parent-death signal: without a pid namespace, a SIGKILLed sbx would leave the
// supervisor and the command running, re-parented to init. The kernel sends kParentGone when
// the thread that cloned the supervisor exits; the supervisor then checks getppid() (another
// sender changes nothing) and kills the whole tree. The check right after arming the signal
// closes the race with a caller that died before the supervisor got that far.
#include "landlock_launch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "metadata_notify.hpp"
#include "sbx/sdk/inherited_sockets.hpp"
#include "sbx/sdk/posix_child.hpp"
#include "seccomp_programs.hpp"
#include "steps.hpp"

namespace sbx::stage2 {
namespace {

namespace child = sdk::posix_child;
constexpr int kExitFailure = sdk::kExitSandboxFailure;

// Blocked in the supervisor and passed on to the command when a process sent them (si_code
// SI_USER or SI_QUEUE: the caller forwarding its own signals, or kill(1) aimed at the
// supervisor). Terminal-generated ones already reached the command's process group.
constexpr int kSupervisorSignals[] = {SIGHUP,   SIGINT,  SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                                      SIGWINCH, SIGCONT, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};
// Blocked in the caller's thread while it waits and forwarded to the supervisor when a process
// sent them (si_code <= 0), like the host's own spawner (core/src/run/spawn.cpp).
constexpr int kCallerSignals[] = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                  SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};
// Not forwarded, catchable, unused by sbx and the usual commands: the parent-death signal.
constexpr int kParentGone = SIGPWR;
// The command's child's stack (it shares the supervisor's memory, not its stack).
constexpr std::size_t kChildStack = 128 * 1024;

// Which step failed; written by the supervisor to the caller as a Report.
enum class Step : int {
  kNone = 0,
  kSupervisor,  // the supervisor's own setup (prctl, signals)
  kClone,       // starting the command's child
  kChdir,
  kLimits,  // the host's prepare_child
  kParent,  // the supervisor was gone before the child started
  kNoNewPrivs,
  kCapabilities,
  kMetadataGuard,  // installing the guard (child) or receiving its listener (supervisor)
  kGuardStart,     // starting the metadata guard's emulator (the command was running)
  kLandlock,
  kSeccomp,
  kExec,
  kOrder,  // a step out of the confinement order (checked builds, linux/confine/steps.hpp)
};

struct Report {
  Step step;
  int error;
};

const char* step_text(Step step) {
  switch (step) {
    case Step::kNone:
      return "nothing";
    case Step::kSupervisor:
      return "starting the supervisor";
    case Step::kClone:
      return "starting the command's process";
    case Step::kChdir:
      return "changing directory";
    case Step::kLimits:
      return "putting the command under the run's resource limits";
    case Step::kParent:
      return "the supervisor's parent died";
    case Step::kNoNewPrivs:
      return "no_new_privs";
    case Step::kCapabilities:
      return "dropping every capability";
    case Step::kMetadataGuard:
      return "metadata guard";
    case Step::kGuardStart:
      return "metadata guard: starting its emulator";
    case Step::kLandlock:
      return "landlock_restrict_self";
    case Step::kSeccomp:
      return "seccomp filter";
    case Step::kExec:
      return "exec";
    case Step::kOrder:
      return "confinement order";
  }
  return "unknown step";
}

// ---------------------------------------------------------------------------------------------
// The command's child: system calls only (see the file comment).

struct ChildArgs {
  char* const* argv;
  char* const* envp;
  const char* cwd;  // nullptr: stay
  int (*prepare_child)(void*);
  void* prepare_child_ctx;
  int ruleset;          // -1: nothing to restrict on this kernel
  int guard_socket;     // -1: no metadata guard
  bool metadata_guard;  // the guard's program: the metadata guard, or the unix datagram guard
  bool connect_guard;   // its connect variant (the network enabled: unix_connect_notify.hpp)
  NetworkFilter network;
  pid_t supervisor;
  int (*body)(void*);
  void* body_arg;
  const confine::Order* order;  // the launch's confinement order (linux/confine/order.hpp)
  int trace_fd;                 // -1, or its trace (steps.hpp)
  // Written by the child on failure, read by the supervisor once the clone has returned
  // (CLONE_VFORK: the child has exec'd or exited by then).
  volatile int failed_step;
  volatile int failed_error;
};

[[noreturn]] void child_failed(ChildArgs& a, Step step, int error, int code = kExitFailure) {
  a.failed_step = static_cast<int>(step);
  a.failed_error = error;
  ::_exit(code);
}

// Each step, once performed, against the launch's confinement order (confine::ConfinementSteps:
// checked builds only); out of order, the command does not run.
void step_done(ChildArgs& a, confine::ConfinementSteps& steps, confine::Step step) {
  if (!steps.done(step)) child_failed(a, Step::kOrder, EPROTO);
}

int command_child(void* arg) {
  ChildArgs& a = *static_cast<ChildArgs*>(arg);
  confine::ConfinementSteps steps(*a.order, confine::Actor::kLauncher, a.trace_fd);
  // Default dispositions (SIG_IGN would survive execve). The supervisor reset every one before
  // starting this child and has since changed only SIGPIPE (ignored: see supervise()), so
  // that one is all there is to reset here: one system call instead of one per signal, on the
  // path every run waits for. The mask stays as the supervisor's, every forwarded signal
  // blocked, until right before execve.
  ::signal(SIGPIPE, SIG_DFL);
  // If the supervisor dies, the command goes with it rather than running on unwatched.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_failed(a, Step::kSupervisor, errno);
  if (::getppid() != a.supervisor) child_failed(a, Step::kParent, ESRCH);
  if (a.cwd != nullptr && ::chdir(a.cwd) != 0) child_failed(a, Step::kChdir, errno);
  // Before no_new_privs and the capability drop: joining the run's cgroup writes to its files,
  // which neither Landlock nor the filter would allow later.
  if (a.prepare_child != nullptr) {
    if (const int err = a.prepare_child(a.prepare_child_ctx); err != 0)
      child_failed(a, Step::kLimits, err);
  }
  step_done(a, steps, confine::Step::kLimits);
  // no_new_privs first: required for Landlock and an unprivileged seccomp filter, and setuid
  // binaries the command runs can no longer gain privileges.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_failed(a, Step::kNoNewPrivs, errno);
  step_done(a, steps, confine::Step::kNoNewPrivs);
  // No user namespace took the capabilities away, so drop them here (uid 0 included).
  const char* cap_step = "";
  if (const int err = drop_all_capabilities_raw(&cap_step); err != 0)
    child_failed(a, Step::kCapabilities, err);
  step_done(a, steps, confine::Step::kCapabilities);
  // Landlock has no right for chmod/chown/utimes/xattrs: those go to the supervisor, which
  // allows them only inside the writable roots. Installed before the main filter, which need
  // not allow anything for it. Nothing below makes a call it reports: the supervisor, which
  // would answer, waits for this clone to exec.
  if (a.guard_socket >= 0) {
    if (const int err = install_metadata_guard(a.guard_socket, a.metadata_guard, a.connect_guard);
        err != 0)
      child_failed(a, Step::kMetadataGuard, err);
    step_done(a, steps, confine::Step::kNotifyFilter);
  }
  if (const int err = restrict_self(a.ruleset); err != 0) child_failed(a, Step::kLandlock, err);
  if (a.ruleset >= 0) {
    ::close(a.ruleset);
    step_done(a, steps, confine::Step::kLandlockRuleset);
  }
  if (const int err = load_precompiled_filter_raw(a.network); err != 0)
    child_failed(a, Step::kSeccomp, err);
  // No pid namespace here: the calls that change another process with only a uid check
  // (prlimit64, setpriority, sched_set*, ioprio_set) may name the caller only
  // (pid_scope_filter.hpp), and the host's SysV IPC and POSIX message queues are refused (no
  // IPC namespace either). The guard's program (metadata or unix datagram guard, which every
  // run has) carries the same refusals; without a guard the pid scope's own program is loaded.
  if (a.guard_socket < 0) {
    if (const int err = load_pid_scope_program_raw(); err != 0)
      child_failed(a, Step::kSeccomp, err);
  }
  step_done(a, steps, confine::Step::kSeccomp);
  // Only stdin, stdout and stderr reach the command.
  child::close_on_exec_all_but(nullptr, 0);
  step_done(a, steps, confine::Step::kDescriptors);
  child::unblock_all_signals();
  step_done(a, steps, confine::Step::kExec);
  if (a.body != nullptr) {
    // What execve would do for the command: it is dumpable again (the supervisor reads its
    // memory to answer the guard), the supervisor is not.
    ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    ::_exit(a.body(a.body_arg));
  }
  ::execve(a.argv[0], a.argv, a.envp);
  const int err = errno;
  child_failed(a, Step::kExec, err, sdk::exit_code_for_exec_error(err));
}

// The metadata guard's emulator acts for the command (metadata_notify.hpp) and must not do so
// with more rights than it: as root it would otherwise still hold every capability (CAP_CHOWN,
// CAP_FOWNER, CAP_SETFCAP, ...). Only one thread exists there, so capset covers the process.
int drop_own_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return errno;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Raw system calls: no errno, no thread-local storage (see the file comment). The result is the
// kernel's: >= 0, or -errno.

#if defined(__x86_64__)
long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#elif defined(__riscv) && __riscv_xlen == 64
long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  register long a7 __asm__("a7") = nr;
  register long a0 __asm__("a0") = a;
  register long a1 __asm__("a1") = b;
  register long a2 __asm__("a2") = c;
  register long a3 __asm__("a3") = d;
  register long a4 __asm__("a4") = e;
  register long a5 __asm__("a5") = f;
  __asm__ volatile("ecall"
                   : "+r"(a0)
                   : "r"(a7), "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5)
                   : "memory");
  return a0;
}
#else
#error "landlock_launch.cpp: add a raw system call for this architecture"
#endif

template <typename T>
long arg(T* pointer) {
  return reinterpret_cast<long>(pointer);
}

constexpr long kSigsetBytes = 8;  // the kernel's sigset (_NSIG / 8)

[[noreturn]] void sys_exit(int code) {
  for (;;) sys(SYS_exit_group, code);
}

// Decimal digits of `value` into `out` (>= 12 bytes), NUL-terminated.
void format_int(long value, char* out) {
  char digits[24];
  int n = 0;
  const bool negative = value < 0;
  unsigned long v =
      negative ? static_cast<unsigned long>(-value) : static_cast<unsigned long>(value);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  int i = 0;
  if (negative) out[i++] = '-';
  while (n > 0) out[i++] = digits[--n];
  out[i] = '\0';
}

// ---------------------------------------------------------------------------------------------
// The supervisor: clone(CLONE_VM) of the caller's thread, on its own stack. It shares the
// caller's memory and thread-local storage, so it makes raw system calls only, allocates
// nothing and keeps to data the caller prepared (see the file comment).

int shell_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

// Best effort: if the caller is gone, nobody is left to tell.
void report(int fd, Step step, int error) {
  const Report r{step, error};
  sys(SYS_write, fd, arg(&r), sizeof r);
}

// Our direct children's pids, parsed from /proc/self/task/<tid>/children (one thread here)
// into `out`; the count, or -1 when the file is not there (kernels without
// CONFIG_PROC_CHILDREN). At most `max` (the rest is found in the next round).
int list_children(pid_t self, pid_t* out, int max) {
  char path[64] = "/proc/self/task/";
  format_int(self, path + std::strlen(path));
  std::strcat(path, "/children");
  const long fd = sys(SYS_openat, AT_FDCWD, arg(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buffer[8192];
  long used = 0;
  for (;;) {
    const long n =
        sys(SYS_read, fd, arg(buffer + used), static_cast<long>(sizeof buffer) - 1 - used);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    used += n;
    if (used >= static_cast<long>(sizeof buffer) - 1) break;
  }
  sys(SYS_close, fd);
  buffer[used] = '\0';
  int count = 0;
  long value = -1;
  for (long i = 0; i <= used && count < max; ++i) {
    const char c = buffer[i];
    if (c >= '0' && c <= '9') {
      value = (value < 0 ? 0 : value * 10) + (c - '0');
    } else {
      // A number cut at the end of a full buffer is left for the next round.
      if (value > 0 && !(i == used && used >= static_cast<long>(sizeof buffer) - 1))
        out[count++] = static_cast<pid_t>(value);
      value = -1;
    }
  }
  return count;
}

// The same from a /proc scan: processes whose parent is us.
int scan_children(pid_t self, pid_t* out, int max) {
  const long dir = sys(SYS_openat, AT_FDCWD, arg("/proc"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int count = 0;
  alignas(8) char entries[4096];
  for (;;) {
    const long n = sys(SYS_getdents64, dir, arg(entries), sizeof entries);
    if (n <= 0) break;
    for (long at = 0; at < n && count < max;) {
      const auto* entry = reinterpret_cast<const dirent64*>(entries + at);
      at += entry->d_reclen;
      long pid = 0;
      const char* name = entry->d_name;
      if (*name == '\0') continue;
      for (; *name >= '0' && *name <= '9'; ++name) pid = pid * 10 + (*name - '0');
      if (*name != '\0' || pid <= 0) continue;
      char path[48] = "/proc/";
      format_int(pid, path + 6);
      std::strcat(path, "/stat");
      const long fd = sys(SYS_openat, AT_FDCWD, arg(path), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char stat[512];
      const long got = sys(SYS_read, fd, arg(stat), sizeof stat - 1);
      sys(SYS_close, fd);
      if (got <= 0) continue;
      stat[got] = '\0';
      // "PID (NAME) STATE PPID ...": the name may hold spaces and parentheses.
      const char* paren = std::strrchr(stat, ')');
      if (paren == nullptr || paren[1] == '\0' || paren[2] == '\0' || paren[3] != ' ') continue;
      long ppid = 0;
      for (const char* p = paren + 4; *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
      if (ppid == self) out[count++] = static_cast<pid_t>(pid);
    }
  }
  sys(SYS_close, dir);
  return count;
}

// Kills and reaps every remaining descendant. As a child subreaper, every orphaned descendant
// is re-parented to this process however it detached (setsid, double fork), so once the
// command has exited the remaining descendants are exactly our children. Each round kills our
// current children; their own children are re-parented to us as they die, so rounds repeat
// until wait4() has none.
void kill_descendants() {
  const pid_t self = static_cast<pid_t>(sys(SYS_getpid));
  pid_t pids[512];
  for (;;) {
    int status = 0;
    const long reaped = sys(SYS_wait4, -1, arg(&status), WNOHANG, 0);
    if (reaped == -ECHILD) return;
    if (reaped > 0) continue;
    int count = list_children(self, pids, 512);
    if (count < 0) count = scan_children(self, pids, 512);
    if (count == 0) {  // an orphan is on its way to us but not listed yet: look again
      const timespec pause{0, 1'000'000};
      sys(SYS_nanosleep, arg(&pause), 0);
      continue;
    }
    for (int i = 0; i < count; ++i) sys(SYS_kill, pids[i], SIGKILL);
    // Block until one of the killed is gone, then look again (new orphans may have arrived).
    if (sys(SYS_wait4, -1, arg(&status), 0, 0) == -ECHILD) return;
  }
}

// Closes every descriptor but the `count` in `keep` (sorted, the caller made it so): whatever
// the caller had open (an embedding agent's pipes and sockets, another spawn's report pipe)
// must not be held for as long as the command runs, nor reach the command's child.
void close_all_but(const int* keep, std::size_t count) {
  unsigned next = 0;
  bool ranged = true;
  for (std::size_t i = 0; i < count && ranged; ++i) {
    if (keep[i] < 0 || static_cast<unsigned>(keep[i]) < next) continue;
    const unsigned fd = static_cast<unsigned>(keep[i]);
    if (fd > next) ranged = sys(SYS_close_range, next, fd - 1, 0) == 0;
    next = fd + 1;
  }
  if (ranged && sys(SYS_close_range, next, ~0U, 0) == 0) return;
  // No close_range (Linux < 5.9; Landlock needs 5.13, so only a filter that refuses it): every
  // number below the open-files limit.
  struct rlimit limit {};
  long max_fd = 65536;
  if (sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, arg(&limit)) == 0 && limit.rlim_cur != RLIM_INFINITY)
    max_fd = static_cast<long>(limit.rlim_cur);
  std::size_t k = 0;
  for (long fd = 0; fd < max_fd; ++fd) {
    while (k < count && keep[k] < fd) ++k;
    if (k < count && keep[k] == fd) continue;
    sys(SYS_close, fd);
  }
}

// The metadata guard's emulator, started when the command first makes a call the guard
// reports: sbx-stage2 --metadata-guard (run_metadata_guard), the listener at descriptor 3, the
// writable roots opened when the run started at 4, 5, ..., and after them the write end of the
// pipe its refusals go to the caller through (unix datagram sockets, for the run's report).
struct GuardLaunch {
  const char* program;  // trusted sbx-stage2; nullptr: no guard
  char* const* argv;    // {program, "--metadata-guard", parent, count, nullptr}
  char* parent;         // argv's slot for the supervisor's pid (>= 24 bytes)
  const int* roots;
  int root_count;
  int refusals;        // the refusal pipe's write end
  int listener;        // set by the supervisor
  volatile int error;  // written by the child when execve failed
};

// At most this many writable roots reach the emulator (the launcher refuses more).
constexpr int kMaxGuardRoots = 1024;

int guard_child(void* arg_pointer) {
  GuardLaunch& g = *static_cast<GuardLaunch*>(arg_pointer);
  // Every source is moved above the targets first: a source may be one of the target numbers.
  const int first_free = 5 + g.root_count;
  const long listener = sys(SYS_fcntl, g.listener, F_DUPFD_CLOEXEC, first_free);
  if (listener < 0) {
    g.error = static_cast<int>(-listener);
    sys(SYS_exit, 125);
  }
  int moved[kMaxGuardRoots];
  for (int i = 0; i < g.root_count; ++i) {
    const long fd = sys(SYS_fcntl, g.roots[i], F_DUPFD_CLOEXEC, first_free);
    if (fd < 0) {
      g.error = static_cast<int>(-fd);
      sys(SYS_exit, 125);
    }
    moved[i] = static_cast<int>(fd);
  }
  // Then placed: every source is now above every target.
  for (int i = 0; i < g.root_count; ++i) {
    if (const long placed = sys(SYS_dup3, moved[i], 4 + i, 0); placed < 0) {
      g.error = static_cast<int>(-placed);
      sys(SYS_exit, 125);
    }
  }
  const long refusals = sys(SYS_fcntl, g.refusals, F_DUPFD_CLOEXEC, first_free);
  if (refusals < 0) {
    g.error = static_cast<int>(-refusals);
    sys(SYS_exit, 125);
  }
  if (const long placed = sys(SYS_dup3, refusals, 4 + g.root_count, 0); placed < 0) {
    g.error = static_cast<int>(-placed);
    sys(SYS_exit, 125);
  }
  if (const long placed = sys(SYS_dup3, listener, 3, 0); placed < 0) {
    g.error = static_cast<int>(-placed);
    sys(SYS_exit, 125);
  }
  sys(SYS_close_range, first_free, ~0U, 0);
  const std::uint64_t none = 0;
  sys(SYS_rt_sigprocmask, SIG_SETMASK, arg(&none), 0, kSigsetBytes);
  char* const empty_env[] = {nullptr};
  const long err = sys(SYS_execve, arg(g.program), arg(g.argv), arg(empty_env));
  g.error = static_cast<int>(-err);
  sys(SYS_exit, 125);
  return 125;
}

// 0, or the errno of starting the emulator.
int start_guard(GuardLaunch& g, int listener) {
  g.listener = listener;
  g.error = 0;
  format_int(sys(SYS_getpid), g.parent);
  constexpr long kGuardStack = 64 * 1024;  // guard_child's moved[] takes 4 KiB of it
  const long stack = sys(SYS_mmap, 0, kGuardStack, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack < 0 && stack > -4096) return static_cast<int>(-stack);
  // CLONE_VFORK: back here once the emulator has exec'd (or failed to).
  const pid_t pid = ::clone(guard_child, reinterpret_cast<char*>(stack) + kGuardStack,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, &g);
  sys(SYS_munmap, stack, kGuardStack);
  if (pid < 0) return EAGAIN;
  if (g.error != 0) {
    int status = 0;
    sys(SYS_wait4, pid, arg(&status), 0, 0);
    return g.error;
  }
  return 0;
}

struct Supervision {
  ChildArgs* args;
  int report_fd;     // to the caller, read once the supervisor has ended
  int guard_socket;  // the supervisor's end; -1 without a guard
  pid_t caller;      // the process that cloned us
  const int* keep;   // descriptors to keep, sorted
  std::size_t keep_count;
  GuardLaunch* guard;  // nullptr without a guard
  // The caller's memory (CLONE_VM): the signal that killed the command, 0 if it exited. The
  // supervisor's own exit status cannot say it: it exits 128+N, as a shell would.
  int* command_signal;
  const int* stdio;  // the command's 0-2 (LaunchOptions::stdio; -1: none)
  int cancel_fd;     // LaunchOptions::cancel_fd, -1 for none
};

// Forwards one signal; true when the command has exited or the caller is gone and the tree was
// killed (status in *code).
bool handle_signal(const signalfd_siginfo& info, pid_t command, pid_t caller, int* code,
                   int* command_signal) {
  if (info.ssi_signo == static_cast<std::uint32_t>(kParentGone)) {
    if (sys(SYS_getppid) == caller) return false;  // not a parent death: the caller is still there
    sys(SYS_kill, command, SIGKILL);
    kill_descendants();
    *code = 128 + SIGKILL;
    return true;
  }
  if (info.ssi_signo != SIGCHLD) {
    if (info.ssi_code == SI_USER || info.ssi_code == SI_QUEUE)
      sys(SYS_kill, command, static_cast<long>(info.ssi_signo));
    return false;
  }
  // Reap orphans (and an emulator) that ended on their own as well, so no zombie piles up.
  int status = 0;
  long pid = 0;
  while ((pid = sys(SYS_wait4, -1, arg(&status), WNOHANG, 0)) > 0) {
    if (pid != command) continue;
    kill_descendants();
    *code = shell_code(status);
    if (WIFSIGNALED(status)) *command_signal = WTERMSIG(status);
    return true;
  }
  return false;
}

// Ends the supervisor after a failure once the command's child may exist: nothing of it may
// run on unguarded.
[[noreturn]] void abort_run(const Supervision& s, pid_t command, Step step, int error) {
  report(s.report_fd, step, error);
  if (command > 0) sys(SYS_kill, command, SIGKILL);
  kill_descendants();
  sys_exit(kExitFailure);
}

// Serves signals, and hands the guard's listener to the emulator on its first report, until
// the command exits or the run's cancel_fd says to end it (then the whole tree is killed, as
// when the caller dies).
int serve(const Supervision& s, int signals, int listener, pid_t command) {
  for (;;) {
    // A negative descriptor is skipped by poll: the listener once handed on, no cancel_fd.
    pollfd fds[3] = {{signals, POLLIN, 0}, {listener, POLLIN, 0}, {s.cancel_fd, POLLIN, 0}};
    if (sys(SYS_ppoll, arg(fds), 3, 0, 0, kSigsetBytes) < 0) continue;
    if ((fds[2].revents & POLLIN) != 0) {
      sys(SYS_kill, command, SIGKILL);
      kill_descendants();
      return 128 + SIGKILL;
    }
    if (listener >= 0 && (fds[1].revents & POLLIN) != 0) {
      if (const int err = start_guard(*s.guard, listener); err != 0)
        abort_run(s, command, Step::kGuardStart, err);
      sys(SYS_close, listener);
      listener = -1;
      for (int i = 0; i < s.guard->root_count; ++i) sys(SYS_close, s.guard->roots[i]);
    } else if (listener >= 0 && fds[1].revents != 0) {
      // POLLHUP: no task uses the filter any more (or the listener broke): stop watching it.
      sys(SYS_close, listener);
      listener = -1;
    }
    signalfd_siginfo info{};
    while (sys(SYS_read, signals, arg(&info), sizeof info) == static_cast<long>(sizeof info)) {
      int code = 0;
      if (handle_signal(info, command, s.caller, &code, s.command_signal)) return code;
    }
  }
}

// A parameterless receive of the listener the command's child sends (install_metadata_guard):
// -errno, or the descriptor.
long receive_listener(int socket) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  long n = 0;
  do n = sys(SYS_recvmsg, socket, arg(&msg), MSG_CMSG_CLOEXEC);
  while (n == -EINTR);
  if (n != 1) return n < 0 ? n : -EPROTO;
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int)))
    return -EPROTO;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

pid_t start_command(ChildArgs& args) {
  if (args.body != nullptr) {
    // Tests: a copy of this memory, so the body may allocate and make calls the supervisor
    // answers meanwhile.
    const long pid = sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) command_child(&args);
    return static_cast<pid_t>(pid < 0 ? -1 : pid);
  }
  const long stack = sys(SYS_mmap, 0, kChildStack, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack < 0 && stack > -4096) return -1;
  // The stack grows down on every architecture sbx builds for.
  const pid_t pid = ::clone(command_child, reinterpret_cast<char*>(stack) + kChildStack,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  sys(SYS_munmap, stack, kChildStack);
  return pid;
}

// Makes stdio[i] this process's descriptor i (-1 closes i); every source is moved above 2 first,
// since any may be one of 0-2. 0, or an errno value. The caller made sure that none of the
// supervisor's own descriptors is one of 0-2 (run_landlock).
int place_stdio(const int* stdio) {
  long moved[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    if (stdio[i] < 0) continue;
    moved[i] = sys(SYS_fcntl, stdio[i], F_DUPFD_CLOEXEC, 3);
    if (moved[i] < 0) return static_cast<int>(-moved[i]);
  }
  for (int i = 0; i < 3; ++i) {
    if (moved[i] < 0) {
      sys(SYS_close, i);
      continue;
    }
    if (const long placed = sys(SYS_dup3, moved[i], i, 0); placed < 0)
      return static_cast<int>(-placed);
    sys(SYS_close, moved[i]);
  }
  return 0;
}

int supervise(void* arg_pointer) {
  const Supervision& s = *static_cast<const Supervision*>(arg_pointer);
  ChildArgs& args = *s.args;
  // The parent-death signal first, then the check: see the file comment.
  if (const long r = sys(SYS_prctl, PR_SET_PDEATHSIG, kParentGone); r < 0) {
    report(s.report_fd, Step::kSupervisor, static_cast<int>(-r));
    sys_exit(kExitFailure);
  }
  if (sys(SYS_getppid) != s.caller) sys_exit(128 + SIGKILL);  // nothing started, nothing to kill
  // Same uid as the command: not dumpable, or /proc/PID/mem and the like would be the
  // command's to open. The flag belongs to the memory, which is the caller's: the caller is
  // not dumpable either until the run ends (run_landlock restores it). Inherited by the
  // command's child until its execve makes the command dumpable again.
  if (long r = sys(SYS_prctl, PR_SET_DUMPABLE, 0);
      r < 0 || (r = sys(SYS_prctl, PR_SET_CHILD_SUBREAPER, 1)) < 0) {
    report(s.report_fd, Step::kSupervisor, static_cast<int>(-r));
    sys_exit(kExitFailure);
  }
  sys(SYS_prctl, PR_SET_NAME, arg("sbx-supervisor"));  // for ps and the tests; cosmetic
  // The command's stdin, stdout and stderr become the supervisor's own 0-2, which the command's
  // child and the guard's emulator inherit: inheritable whatever flags they carry in the caller
  // (dup3 without O_CLOEXEC clears it on the copy; Node marks its own 0-2 close-on-exec).
  if (const int err = place_stdio(s.stdio); err != 0) {
    report(s.report_fd, Step::kSupervisor, err);
    sys_exit(kExitFailure);
  }
  close_all_but(s.keep, s.keep_count);
  // The caller's handlers must never run here (its dispositions were copied, not shared);
  // SIGPIPE ignored so a gone caller cannot kill the supervisor (and so orphan the tree)
  // through the report pipe. glibc's own two real-time signals are left as they are, as
  // sigaction() would.
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == 32 || sig == 33) continue;
    struct {
      void (*handler)(int);
      unsigned long flags;
      void (*restorer)();
      std::uint64_t mask;
    } action{sig == SIGPIPE ? SIG_IGN : SIG_DFL, 0, nullptr, 0};
    sys(SYS_rt_sigaction, sig, arg(&action), 0, kSigsetBytes);
  }
  std::uint64_t blocked = 0;
  for (int sig : kSupervisorSignals) blocked |= 1ull << (sig - 1);
  blocked |= 1ull << (SIGCHLD - 1);
  blocked |= 1ull << (kParentGone - 1);
  long signals = sys(SYS_rt_sigprocmask, SIG_SETMASK, arg(&blocked), 0, kSigsetBytes);
  if (signals == 0)
    signals = sys(SYS_signalfd4, -1, arg(&blocked), kSigsetBytes, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) {
    report(s.report_fd, Step::kSupervisor, static_cast<int>(-signals));
    sys_exit(kExitFailure);
  }
  args.supervisor = static_cast<pid_t>(sys(SYS_getpid));
  const pid_t command = start_command(args);
  if (command < 0) {
    report(s.report_fd, Step::kClone, EAGAIN);
    sys_exit(kExitFailure);
  }
  if (args.guard_socket >= 0) sys(SYS_close, args.guard_socket);
  if (args.ruleset >= 0) sys(SYS_close, args.ruleset);
  // Cloned: the child has exec'd or failed by now, and said which.
  if (args.failed_step != static_cast<int>(Step::kNone)) {
    report(s.report_fd, static_cast<Step>(args.failed_step), args.failed_error);
    int status = 0;
    while (sys(SYS_wait4, command, arg(&status), 0, 0) == -EINTR) {
    }
    kill_descendants();
    sys_exit(shell_code(status));
  }
  long listener = -1;
  if (s.guard_socket >= 0) {
    listener = receive_listener(s.guard_socket);
    sys(SYS_close, s.guard_socket);
    // EOF: the forked child (tests) failed before sending; its exit code says so.
    if (listener < 0) abort_run(s, command, Step::kMetadataGuard, EPROTO);
  }
  sys_exit(serve(s, static_cast<int>(signals), static_cast<int>(listener), command));
}

// ---------------------------------------------------------------------------------------------
// The caller.

std::string failure_message(const LandlockLaunch& launch, const Report& r) {
  const std::string reason = std::strerror(r.error);
  if (r.step == Step::kExec) {
    if (sdk::exit_code_for_exec_error(r.error) == sdk::kExitNotFound)
      return "sbx: " + launch.command.front() + ": command not found";
    return "sbx: " + launch.command.front() + ": not executable: " + reason;
  }
  if (r.step == Step::kGuardStart)
    return std::string("sbx: landlock: ") + step_text(r.step) + ": " + reason +
           "; the run was ended";
  return std::string("sbx: landlock: ") + step_text(r.step) + ": " + reason +
         "; the command did not run";
}

// Reads one Report; false at EOF (the command ran) or error.
bool read_report(int fd, Report& r) {
  for (;;) {
    const ssize_t n = ::read(fd, &r, sizeof r);
    if (n == static_cast<ssize_t>(sizeof r)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// The calling thread's signal mask for the supervisor's lifetime: every signal blocked (the
// supervisor and the command's child share this thread's storage, errno included, so no
// handler may run on it meanwhile), the forwarded ones taken from a signalfd when `forward`.
// Without it no signalfd: one would take a process-directed signal from the shared queue ahead
// of the embedding program's thread that the kernel chose for it (signalfd(2) reads the
// process's pending signals too), so its own handler would never run.
class BlockedSignals {
 public:
  explicit BlockedSignals(bool forward) {
    sigset_t all;
    sigfillset(&all);
    ok_ = ::pthread_sigmask(SIG_BLOCK, &all, &previous_) == 0;
    forward_ = forward;
    if (!forward) return;
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kCallerSignals) sigaddset(&set, sig);
    if (ok_) fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~BlockedSignals() {
    if (fd_ >= 0) ::close(fd_);
    if (ok_) ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  int fd() const { return fd_; }
  // Set up as asked: blocked, and the signalfd open when forwarding.
  bool ok() const { return ok_ && (!forward_ || fd_ >= 0); }

 private:
  sigset_t previous_;
  bool ok_ = false;
  bool forward_ = true;
  int fd_ = -1;
};

// The caller's memory is not dumpable while any run's supervisor shares it (supervise());
// once the last one has ended, what it was before comes back.
class UndumpableWhileSupervised {
 public:
  UndumpableWhileSupervised() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (runs_++ == 0) before_ = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  }
  ~UndumpableWhileSupervised() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--runs_ == 0 && before_ == 1) ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  }
  UndumpableWhileSupervised(const UndumpableWhileSupervised&) = delete;
  UndumpableWhileSupervised& operator=(const UndumpableWhileSupervised&) = delete;

 private:
  static inline std::mutex mutex_;
  static inline int runs_ = 0;
  static inline int before_ = 0;
};

// Waits for the supervisor, forwarding what a process sent us (`signals`: -1 when the run does
// not forward), with raw system calls only (the supervisor shares this thread's errno); returns
// once the pidfd says it has ended.
void wait_supervisor(int pidfd, int signals) {
  for (;;) {
    pollfd fds[2] = {{signals, POLLIN, 0}, {pidfd, POLLIN, 0}};
    sys(SYS_ppoll, arg(fds), 2, 0, 0, kSigsetBytes);
    signalfd_siginfo si{};
    while (signals >= 0 &&
           sys(SYS_read, signals, arg(&si), sizeof si) == static_cast<long>(sizeof si)) {
      // Terminal-generated signals (si_code > 0) reached the command's process group already.
      if (si.ssi_code > 0) continue;
      sys(SYS_pidfd_send_signal, pidfd, si.ssi_signo, 0, 0);
    }
    if (fds[1].revents != 0) return;
  }
}

// The command inherits descriptors 0-2 (LaunchOptions::stdio) and nothing else (every other one
// is close-on-exec). A socket among them that is not a connected stream socket could reach host
// sockets or addresses (by the path in each sendmsg, which neither seccomp nor Landlock up to
// ABI 7 sees, or by connecting it): the run is refused instead, as under bwrap.
Status check_inherited_descriptors(const std::array<int, 3>& stdio) {
  // sbx/sdk/inherited_sockets.hpp says which sockets may go into the sandbox, and why.
  if (std::optional<std::string> why = inherited::check_descriptors("landlock", stdio.data()))
    return Error{*why};
  return {};
}

// A descriptor of sbx's at 0, 1 or 2 is replaced by a close-on-exec copy at 3 or above (the
// original closed). False (errno set) when it cannot be.
bool lift_above_stdio(UniqueFd& fd) {
  if (fd.get() < 0 || fd.get() > 2) return true;
  const int copy = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (copy < 0) return false;
  fd.reset(copy);
  return true;
}

// A descriptor of the caller's (never closed here): itself, or when it is one of 0-2 a
// close-on-exec copy at 3 or above held in `copy`. -1 when there is none or it cannot be copied
// (errno set).
int above_stdio(int fd, UniqueFd& copy) {
  if (fd < 0 || fd > 2) return fd;
  copy.reset(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
  return copy.get();
}

// sbx's own message about the run, on the command's stderr (-1: none).
void print_message(int err_fd, const std::string& message) {
  if (err_fd < 0) return;
  if (err_fd == 2) std::fflush(stderr);
  (void)child::write_all(err_fd, message);
}

Result<std::uint16_t> parse_port(const std::string& value) {
  char* end = nullptr;
  const long port = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || port < 1 || port > 65535)
    return Error{"--proxy-port expects a port 1..65535, got '" + value + "'"};
  return static_cast<std::uint16_t>(port);
}

}  // namespace

bool is_landlock_argv(const std::vector<std::string>& argv) {
  for (std::size_t i = 1; i < argv.size() && argv[i] != "--"; ++i) {
    if (argv[i] == "--landlock") return true;
  }
  return false;
}

Result<LandlockLaunch> parse_landlock_argv(const std::vector<std::string>& argv) {
  LandlockLaunch l;
  bool network_given = false;
  std::size_t i = 1;
  for (; i < argv.size() && argv[i] != "--"; ++i) {
    const std::string& arg = argv[i];
    if (arg == "--env-environ") {
      l.env_environ = true;
      continue;
    }
    if (i + 1 >= argv.size()) return Error{"'" + arg + "' needs a value"};
    const std::string& value = argv[++i];
    if (arg == "--net") {
      // Not "private": the Landlock backend shares the host's network namespace, whose
      // loopback is the host's. (parse_network_filter is libseccomp's side; this library
      // links none of it.)
      if (value == "blocked") {
        l.network = NetworkFilter::kBlocked;
      } else if (value == "open") {
        l.network = NetworkFilter::kOpen;
      } else if (value == "proxy") {
        l.network = NetworkFilter::kProxy;
      } else if (value == "private") {
        return Error{"--net private needs a private network namespace, not Landlock mode"};
      } else {
        return Error{"--net expects 'blocked', 'open' or 'proxy', got '" + value + "'"};
      }
      network_given = true;
    } else if (arg == "--proxy-port") {
      Result<std::uint16_t> port = parse_port(value);
      if (!port.ok()) return port.failure();
      l.proxy_port = *port;
    } else if (arg == "--parent-pid") {
      char* end = nullptr;
      const long pid = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || pid <= 0 || pid > 4'194'304)
        return Error{"--parent-pid expects a process id, got '" + value + "'"};
      l.parent = static_cast<pid_t>(pid);
    } else {
      Result<bool> known = parse_landlock_option(arg, value, l.landlock);
      if (!known.ok()) return known.failure();
      if (!*known) return Error{"unknown option '" + arg + "' in Landlock mode"};
    }
  }
  if (!l.landlock.enabled) return Error{"--landlock MIN_ABI is required"};
  if (!network_given) return Error{"--net blocked|open|proxy is required"};
  if ((l.network == NetworkFilter::kProxy) != (l.proxy_port != 0))
    return Error{"--net proxy and --proxy-port go together"};
  for (++i; i < argv.size(); ++i) l.command.push_back(argv[i]);
  if (l.command.empty()) return Error{"no command after '--'"};
  if (l.command.front().empty() || l.command.front().front() != '/')
    return Error{"the command must be an absolute path, got '" + l.command.front() + "'"};
  // Restricted: no TCP at all. Proxy: connect() only to the proxy's port.
  l.landlock.block_tcp = l.network != NetworkFilter::kOpen;
  if (l.network == NetworkFilter::kProxy) l.landlock.connect_tcp_ports = {l.proxy_port};
  return l;
}

namespace {

// The lines the emulator wrote to the refusal pipe (each one refusal, metadata_notify.hpp),
// read until the pipe is empty: the emulator writes a refusal before it answers the call, so
// every refusal of a command that has ended is already there.
std::vector<std::string> read_refusal_lines(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // a torn line: not written whole, not reported
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The guard's descriptors (metadata_notify.hpp), made before any child exists.
struct GuardSetup {
  UniqueFd supervisor_end;  // the socket the command's child sends the listener over
  UniqueFd child_end;
  std::vector<UniqueFd> roots;  // the writable roots (the metadata guard's only)
  UniqueFd refusal_read;        // the emulator's refusals, one line each
  UniqueFd refusal_write;
};

Result<GuardSetup> prepare_guard(const LandlockLaunch& launch, const LaunchOptions& options,
                                 bool metadata_guard) {
  GuardSetup g;
  if (options.guard_program.empty() || options.guard_program.front() != '/')
    return Error{"landlock: metadata guard: no sbx-stage2 to run its emulator"};
  int sockets[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0)
    return Error{std::string("landlock: metadata guard: socketpair: ") + std::strerror(errno)};
  g.supervisor_end.reset(sockets[0]);
  g.child_end.reset(sockets[1]);
  // The writable roots as they are when the run starts (the ruleset's objects), so a root
  // renamed or replaced later is followed, never re-read by name. As the ruleset: a missing
  // root is skipped (nothing beneath it can exist to change). None for the unix datagram
  // guard, which reports no metadata change (one reported anyway would be refused).
  if (metadata_guard) {
    for (const std::string& root : launch.landlock.write) {
      UniqueFd fd(::open(root.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
      if (fd.get() < 0 && errno == ENOENT) continue;
      if (fd.get() < 0)
        return Error{"landlock: metadata guard: open '" + root + "': " + std::strerror(errno)};
      g.roots.push_back(std::move(fd));
    }
  }
  if (g.roots.size() > static_cast<std::size_t>(kMaxGuardRoots))
    return Error{"landlock: metadata guard: more than " + std::to_string(kMaxGuardRoots) +
                 " writable roots"};
  // Read once the run ended. Non-blocking both ways: a full pipe loses a line, never stalls
  // the emulator.
  int refusal_pipe[2] = {-1, -1};
  if (::pipe2(refusal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return Error{std::string("landlock: pipe: ") + std::strerror(errno)};
  g.refusal_read.reset(refusal_pipe[0]);
  g.refusal_write.reset(refusal_pipe[1]);
  return g;
}

}  // namespace

Result<ExitStatus> run_landlock(const LandlockLaunch& launch, const LaunchOptions& options) {
  if (launch.command.empty() || launch.command.front().empty() ||
      launch.command.front().front() != '/')
    return Error{"landlock: the command must be an absolute path"};
  if (!options.cwd.empty() && options.cwd.front() != '/')
    return Error{"landlock: the working directory must be an absolute path"};
  // Everything that may allocate or fail with a good message happens here, before any child.
  if (Status inherited = check_inherited_descriptors(options.stdio); !inherited.ok())
    return inherited.failure();
  Result<UniqueFd> ruleset = build_landlock_ruleset(launch.landlock);
  if (!ruleset.ok()) return ruleset.failure().prefixed("landlock: ");
  // A restricted filesystem has writable roots to keep metadata changes in; an unrestricted
  // one lets the command write (and so chmod) anywhere already, so its guard is the unix
  // datagram guard (metadata_filter.hpp): every run has a guard, for unix datagram sockets.
  const bool metadata_guard = launch.landlock.restrict_filesystem;
  // With the network enabled the command shares the host's network namespace: every connect()
  // and bind() goes to the guard too, which keeps host pathname unix sockets closed
  // (unix_connect_notify.hpp). Tied to the network mode, not to a flag of its own, so no plan
  // can open the network without it.
  const bool connect_guard = launch.network == NetworkFilter::kOpen;
  Result<GuardSetup> guard = prepare_guard(launch, options, metadata_guard);
  if (!guard.ok()) return guard.failure();
  int report_pipe[2] = {-1, -1};
  if (!child::open_report_pipe(report_pipe))
    return Error{std::string("landlock: pipe: ") + std::strerror(errno)};
  UniqueFd report_read(report_pipe[0]);
  UniqueFd report_write(report_pipe[1]);
  // Read once the supervisor has ended, never waited on.
  if (::fcntl(report_read.get(), F_SETFL, O_NONBLOCK) != 0)
    return Error{std::string("landlock: pipe: ") + std::strerror(errno)};
  // The supervisor makes the command's stdio its own 0-2 (place_stdio), over whatever is there,
  // so none of the descriptors it keeps may be one of 0-2: they are when this process runs with
  // one of them closed. Such a one is moved up first; the caller's own (cancel_fd, the trace)
  // are copied up instead.
  UniqueFd cancel_copy;
  UniqueFd trace_copy;
  const int cancel_fd = above_stdio(options.cancel_fd, cancel_copy);
  const int trace_fd = above_stdio(options.trace_fd, trace_copy);
  bool lifted =
      (cancel_fd >= 0 || options.cancel_fd < 0) && (trace_fd >= 0 || options.trace_fd < 0);
  for (UniqueFd* fd :
       {&*ruleset, &guard->child_end, &guard->supervisor_end, &guard->refusal_write, &report_write})
    lifted = lift_above_stdio(*fd) && lifted;
  for (UniqueFd& root : guard->roots) lifted = lift_above_stdio(root) && lifted;
  if (!lifted)
    return Error{std::string("landlock: cannot move a descriptor above 2: ") +
                 std::strerror(errno)};
  const std::vector<char*> argv = child::c_string_array(launch.command);
  const std::vector<char*> envp = child::c_string_array(options.env);
  // Unix datagram sockets are the guard's to take (seccomp_filter.hpp): the guarded variant.
  const NetworkFilter network = guarded_variant(launch.network);
  // The child follows this order (linux/confine/order.hpp); it reads it from this memory.
  confine::Shape shape;
  shape.route = confine::Route::kLandlock;
  shape.landlock_ruleset = ruleset->get() >= 0;
  const confine::Order order = confine::confinement_order(shape);
  ChildArgs args{argv.data(),
                 envp.data(),
                 options.cwd.empty() ? nullptr : options.cwd.c_str(),
                 options.prepare_child,
                 options.prepare_child_ctx,
                 ruleset->get(),
                 guard->child_end.get(),
                 metadata_guard,
                 connect_guard,
                 network,
                 0,
                 options.body,
                 options.body_arg,
                 &order,
                 trace_fd,
                 static_cast<int>(Step::kNone),
                 0};
  // The emulator's command line and descriptors, prepared here: the supervisor allocates
  // nothing.
  std::vector<int> root_fds;
  for (const UniqueFd& fd : guard->roots) root_fds.push_back(fd.get());
  std::string root_count = std::to_string(root_fds.size());
  std::array<char, 24> parent_slot{};
  std::string guard_mode = "--metadata-guard";
  std::string program = options.guard_program;
  std::array<char*, 5> guard_argv{program.data(), guard_mode.data(), parent_slot.data(),
                                  root_count.data(), nullptr};
  GuardLaunch guard_launch{program.c_str(),
                           guard_argv.data(),
                           parent_slot.data(),
                           root_fds.data(),
                           static_cast<int>(root_fds.size()),
                           guard->refusal_write.get(),
                           -1,
                           0};
  std::vector<int> own = {report_write.get(),
                          ruleset->get(),
                          guard->child_end.get(),
                          guard->supervisor_end.get(),
                          guard->refusal_write.get(),
                          cancel_fd,
                          trace_fd};
  own.insert(own.end(), root_fds.begin(), root_fds.end());
  std::vector<int> keep = {0, 1, 2};
  for (int fd : own) {
    if (fd >= 0) keep.push_back(fd);
  }
  std::sort(keep.begin(), keep.end());
  int command_signal = 0;
  Supervision supervision{&args,         report_write.get(), guard->supervisor_end.get(),
                          ::getpid(),    keep.data(),        keep.size(),
                          &guard_launch, &command_signal,    options.stdio.data(),
                          cancel_fd};
  constexpr std::size_t kSupervisorStack = 256 * 1024;
  void* stack = ::mmap(nullptr, kSupervisorStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return Error{std::string("landlock: mmap: ") + std::strerror(errno)};
  struct StackUnmap {
    void* stack;
    ~StackUnmap() { ::munmap(stack, kSupervisorStack); }
  } unmap{stack};
  const UndumpableWhileSupervised undumpable;
  // Blocked before the clone: a signal sent meanwhile stays queued for the signalfd.
  BlockedSignals signals(options.forward_signals);
  if (!signals.ok()) return Error{std::string("landlock: signalfd: ") + std::strerror(errno)};
  // CLONE_VM: no copy of this process's page tables (the fork it replaces copied them, and
  // that was most of a run's cost); the supervisor lives with that (see the file comment).
  // CLONE_PIDFD: the supervisor is waited for through a pidfd, which SIGCHLD's disposition in
  // an embedding process cannot affect.
  int pidfd = -1;
  const pid_t supervisor = ::clone(supervise, static_cast<char*>(stack) + kSupervisorStack,
                                   CLONE_VM | CLONE_PIDFD | SIGCHLD, &supervision, &pidfd);
  if (supervisor < 0) return Error{std::string("landlock: clone: ") + std::strerror(errno)};
  wait_supervisor(pidfd, signals.fd());
  // The supervisor has ended: this thread's storage is its own again.
  ::close(pidfd);
  report_write.reset();
  guard->refusal_write.reset();
  if (options.unix_refusals != nullptr)
    *options.unix_refusals = read_refusal_lines(guard->refusal_read.get());
  int status = 0;
  pid_t waited = -1;
  do waited = ::waitpid(supervisor, &status, 0);
  while (waited < 0 && errno == EINTR);
  if (waited != supervisor) {
    std::string text = std::string("landlock: waiting for the supervisor: ") + std::strerror(errno);
    if (errno == ECHILD) text += " (is SIGCHLD ignored in this process?)";
    return Error{text};
  }
  std::optional<Report> failed;
  if (Report r{}; read_report(report_read.get(), r)) failed = r;
  ExitStatus result;
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else if (command_signal != 0 && !failed && WEXITSTATUS(status) == 128 + command_signal) {
    // The command died of a signal: reported as one, as a direct child's would be.
    result.signal = command_signal;
  } else {
    result.exit_code = shell_code(status);
  }
  if (failed) {
    print_message(options.stdio[2], failure_message(launch, *failed) + "\n");
    // The supervisor exits 125 (126/127 for exec) after a report; never pass anything else
    // off as the command's status.
    if (result.signal == 0 && result.exit_code != sdk::kExitNotFound &&
        result.exit_code != sdk::kExitNotExecutable)
      result.exit_code = kExitFailure;
  }
  return result;
}

int run_metadata_guard(int argc, char** argv) {
  // argv: PROGRAM --metadata-guard SUPERVISOR-PID ROOT-COUNT; listener 3, roots 4..., then the
  // refusal pipe.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (argc != 4) return kExitFailure;
  char* end = nullptr;
  const long parent = std::strtol(argv[2], &end, 10);
  if (*end != '\0' || parent <= 0) return kExitFailure;
  const long count = std::strtol(argv[3], &end, 10);
  if (*end != '\0' || count < 0 || count > kMaxGuardRoots) return kExitFailure;
  // Ends with the supervisor (an exec may have cleared what the supervisor's child set).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != parent)
    return 128 + SIGKILL;
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // It acts for the command and must not do so with more rights than it (metadata_notify.hpp).
  if (const int err = drop_own_capabilities(); err != 0) {
    std::fprintf(stderr, "sbx-stage2: metadata guard: dropping capabilities: %s\n",
                 std::strerror(err));
    return kExitFailure;
  }
  std::vector<int> roots;
  for (long i = 0; i < count; ++i) roots.push_back(4 + static_cast<int>(i));
  MetadataEmulator emulator = MetadataEmulator::adopt(std::move(roots));
  emulator.report_refusals_to(4 + static_cast<int>(count));
  constexpr int kListener = 3;
  for (;;) {
    pollfd fd{kListener, POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return kExitFailure;
    }
    if ((fd.revents & POLLIN) != 0) {
      emulator.serve_one(kListener);
    } else if (fd.revents != 0) {
      return 0;  // POLLHUP: no task uses the filter any more
    }
  }
}

}  // namespace sbx::stage2
