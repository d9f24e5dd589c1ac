// See landlock_launch.hpp for the shape of a run and why each process does what it does.
//
// Why the supervisor is a fork and may still allocate: it is a copy of one thread of a
// possibly multi-threaded caller, so a lock another thread held at the fork stays held in it.
// It therefore uses no stdio, no iostreams and no logging; only raw system calls, and malloc
// (std::string, std::vector), which glibc makes usable in the child of a fork. The command's
// child goes further: it shares the supervisor's memory until execve and makes system calls
// only, on data prepared before the clone.
//
// Why the parent-death signal: without a pid namespace, a SIGKILLed sbx would leave the
// supervisor and the command running, re-parented to init. The kernel sends kParentGone when
// the thread that forked the supervisor exits; the supervisor then checks getppid() (another
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
#include <optional>

#include "metadata_notify.hpp"
#include "sbx/sdk/posix_child.hpp"
#include "seccomp_programs.hpp"

namespace sbx::stage2 {
namespace {

namespace child = sdk::posix_child;
constexpr int kExitFailure = sdk::kExitSandboxFailure;

// Blocked in the supervisor and passed on to the command when a process sent them (si_code
// SI_USER or SI_QUEUE: the caller forwarding its own signals, or kill(1) aimed at the
// supervisor). Terminal-generated ones already reached the command's process group.
constexpr int kSupervisorSignals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                                      SIGWINCH, SIGCONT, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};
// Blocked in the caller's thread while it waits and forwarded to the supervisor when a process
// sent them (si_code <= 0), like the host's own spawner (core/src/run/spawn.cpp).
constexpr int kCallerSignals[] = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                  SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};
// Not forwarded, catchable, unused by sbx and the usual commands: the parent-death signal.
constexpr int kParentGone = SIGPWR;
// The command's child's stack (it shares the supervisor's memory, not its stack).
constexpr std::size_t kChildStack = 128 * 1024;
// Without a pidfd (Linux < 5.3): how often the caller looks whether the supervisor has ended.
constexpr int kNoPidfdPollMs = 100;

// Which step failed; written by the supervisor to the caller as a Report.
enum class Step : int {
  kNone = 0,
  kSupervisor,     // the supervisor's own setup (prctl, signals)
  kClone,          // starting the command's child
  kChdir,
  kLimits,         // the host's prepare_child
  kParent,         // the supervisor was gone before the child started
  kNoNewPrivs,
  kCapabilities,
  kMetadataGuard,  // installing the guard (child) or receiving its listener (supervisor)
  kGuardReady,     // the supervisor's capability drop or the emulator's roots
  kLandlock,
  kSeccomp,
  kExec,
};

struct Report {
  Step step;
  int error;
};

const char* step_text(Step step) {
  switch (step) {
    case Step::kNone: return "nothing";
    case Step::kSupervisor: return "starting the supervisor";
    case Step::kClone: return "starting the command's process";
    case Step::kChdir: return "changing directory";
    case Step::kLimits: return "putting the command under the run's resource limits";
    case Step::kParent: return "the supervisor's parent died";
    case Step::kNoNewPrivs: return "no_new_privs";
    case Step::kCapabilities: return "dropping every capability";
    case Step::kMetadataGuard: return "metadata guard";
    case Step::kGuardReady: return "metadata guard (supervisor)";
    case Step::kLandlock: return "landlock_restrict_self";
    case Step::kSeccomp: return "seccomp filter";
    case Step::kExec: return "exec";
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
  int ruleset;       // -1: nothing to restrict on this kernel
  int guard_socket;  // -1: no metadata guard
  NetworkFilter network;
  pid_t supervisor;
  int (*body)(void*);
  void* body_arg;
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

int command_child(void* arg) {
  ChildArgs& a = *static_cast<ChildArgs*>(arg);
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
  // Before no_new_privs and the capability drop: joining the run's cgroup writes cgroup.procs,
  // which neither Landlock nor the filter would allow later.
  if (a.prepare_child != nullptr) {
    if (const int err = a.prepare_child(a.prepare_child_ctx); err != 0)
      child_failed(a, Step::kLimits, err);
  }
  // no_new_privs first: required for Landlock and an unprivileged seccomp filter, and setuid
  // binaries the command runs can no longer gain privileges.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_failed(a, Step::kNoNewPrivs, errno);
  // No user namespace took the capabilities away, so drop them here (uid 0 included).
  const char* cap_step = "";
  if (const int err = drop_all_capabilities_raw(&cap_step); err != 0)
    child_failed(a, Step::kCapabilities, err);
  // Landlock has no right for chmod/chown/utimes/xattrs: those go to the supervisor, which
  // allows them only inside the writable roots. Installed before the main filter, which need
  // not allow anything for it. Nothing below makes a call it reports: the supervisor, which
  // would answer, waits for this clone to exec.
  if (a.guard_socket >= 0) {
    if (const int err = install_metadata_guard(a.guard_socket); err != 0)
      child_failed(a, Step::kMetadataGuard, err);
  }
  if (const int err = restrict_self(a.ruleset); err != 0) child_failed(a, Step::kLandlock, err);
  if (a.ruleset >= 0) ::close(a.ruleset);
  if (const int err = load_precompiled_filter_raw(a.network); err != 0)
    child_failed(a, Step::kSeccomp, err);
  // Only stdin, stdout and stderr reach the command.
  child::close_on_exec_all_but(nullptr, 0);
  child::unblock_all_signals();
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

// ---------------------------------------------------------------------------------------------
// The supervisor.

int shell_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

// Best effort: if the caller is gone, nobody is left to tell.
void report(int fd, Step step, int error) {
  const Report r{step, error};
  [[maybe_unused]] const ssize_t n = ::write(fd, &r, sizeof r);
}

// Our direct children: /proc/self/task/<tid>/children (one thread here), else a /proc scan
// for processes whose parent is us (kernels without CONFIG_PROC_CHILDREN). Raw reads, no
// streams (see the file comment).
std::string read_small_file(const char* path) {
  std::string text;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::vector<pid_t> children() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  const std::string list_path =
      "/proc/self/task/" + std::to_string(self) + "/children";
  if (::access(list_path.c_str(), R_OK) == 0) {
    const std::string text = read_small_file(list_path.c_str());
    const char* p = text.c_str();
    char* end = nullptr;
    for (long pid = std::strtol(p, &end, 10); end != p; pid = std::strtol(p, &end, 10)) {
      if (pid > 0) out.push_back(static_cast<pid_t>(pid));
      p = end;
    }
    return out;
  }
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = ::readdir(proc)) {
    const long candidate = std::strtol(entry->d_name, nullptr, 10);
    if (candidate <= 0) continue;
    const std::string text =
        read_small_file(("/proc/" + std::string(entry->d_name) + "/stat").c_str());
    const std::size_t paren = text.rfind(')');  // the command name may contain spaces
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(text.c_str() + paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == self)
      out.push_back(static_cast<pid_t>(candidate));
  }
  ::closedir(proc);
  return out;
}

// Kills and reaps every remaining descendant. As a child subreaper, every orphaned descendant
// is re-parented to this process however it detached (setsid, double fork), so once the
// command has exited the remaining descendants are exactly our children. Each round kills our
// current children; their own children are re-parented to us as they die, so rounds repeat
// until waitpid() has none.
void kill_descendants() {
  for (;;) {
    int status = 0;
    const pid_t reaped = ::waitpid(-1, &status, WNOHANG);
    if (reaped < 0 && errno == ECHILD) return;
    if (reaped > 0) continue;
    const std::vector<pid_t> pids = children();
    if (pids.empty()) {  // an orphan is on its way to us but not listed yet: look again
      ::usleep(1000);
      continue;
    }
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    // Block until one of the killed is gone, then look again (new orphans may have arrived).
    if (::waitpid(-1, &status, 0) < 0 && errno == ECHILD) return;
  }
}

// The supervisor acts for the command (metadata_notify.hpp) and must not do so with more
// rights than it: as root it would otherwise still hold every capability (CAP_CHOWN,
// CAP_FOWNER, CAP_SETFCAP, ...). Only this thread exists, so capset covers the process.
int drop_own_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return errno;
  return 0;
}

// Closes every descriptor but the `count` in `keep` (which it sorts): whatever the caller had
// open (an embedding agent's pipes and sockets, another spawn's report pipe) must not be held
// for as long as the command runs, nor reach the command's child.
void close_all_but(int* keep, std::size_t count) {
  std::sort(keep, keep + count);
  unsigned next = 0;
  bool ranged = true;
  for (std::size_t i = 0; i < count && ranged; ++i) {
    if (keep[i] < 0 || static_cast<unsigned>(keep[i]) < next) continue;
    const unsigned fd = static_cast<unsigned>(keep[i]);
    if (fd > next) ranged = ::syscall(SYS_close_range, next, fd - 1, 0) == 0;
    next = fd + 1;
  }
  if (ranged && ::syscall(SYS_close_range, next, ~0U, 0) == 0) return;
  // No close_range (Linux < 5.9): every number below the open-files limit.
  struct rlimit limit {};
  rlim_t max_fd = 65536;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    max_fd = limit.rlim_cur;
  for (rlim_t fd = 0; fd < max_fd; ++fd) {
    if (!std::binary_search(keep, keep + count, static_cast<int>(fd))) ::close(static_cast<int>(fd));
  }
}

struct Supervision {
  const LandlockLaunch* launch;
  ChildArgs* args;
  int report_fd;       // to the caller; closed once the command runs
  int guard_socket;    // the supervisor's end; -1 without a guard
  pid_t caller;        // the process that forked us
};

// Forwards one signal; true when the command has exited or the caller is gone and the tree was
// killed (status in *code).
bool handle_signal(const signalfd_siginfo& info, pid_t command, pid_t caller, int* code) {
  if (info.ssi_signo == static_cast<std::uint32_t>(kParentGone)) {
    if (::getppid() == caller) return false;  // not a parent death: the caller is still there
    ::kill(command, SIGKILL);
    kill_descendants();
    *code = 128 + SIGKILL;
    return true;
  }
  if (info.ssi_signo != SIGCHLD) {
    if (info.ssi_code == SI_USER || info.ssi_code == SI_QUEUE)
      ::kill(command, static_cast<int>(info.ssi_signo));
    return false;
  }
  // Reap orphans that ended on their own as well, so no zombie piles up meanwhile.
  int status = 0;
  pid_t pid = 0;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid != command) continue;
    kill_descendants();
    *code = shell_code(status);
    return true;
  }
  return false;
}

// Serves signals and (while it has users) the guard's listener until the command exits.
int serve(int signals, int listener, const MetadataEmulator* emulator, pid_t command,
          pid_t caller) {
  for (;;) {
    pollfd fds[2] = {{signals, POLLIN, 0}, {listener, POLLIN, 0}};
    if (::poll(fds, listener >= 0 ? 2 : 1, -1) < 0) continue;  // EINTR
    if (listener >= 0 && (fds[1].revents & POLLIN) != 0) {
      emulator->serve_one(listener);
    } else if (listener >= 0 && fds[1].revents != 0) {
      // POLLHUP: no task uses the filter any more (or the listener broke): stop watching it.
      ::close(listener);
      listener = -1;
    }
    signalfd_siginfo info{};
    while (::read(signals, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      int code = 0;
      if (handle_signal(info, command, caller, &code)) return code;
    }
  }
}

// Ends the supervisor after a failure once the command's child may exist: nothing of it may
// run on unguarded.
[[noreturn]] void abort_run(const Supervision& s, pid_t command, Step step, int error) {
  report(s.report_fd, step, error);
  if (command > 0) ::kill(command, SIGKILL);
  kill_descendants();
  ::_exit(kExitFailure);
}

pid_t start_command(ChildArgs& args) {
  if (args.body != nullptr) {
    const pid_t pid = ::fork();
    if (pid == 0) command_child(&args);
    return pid;
  }
  void* stack = ::mmap(nullptr, kChildStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  // The stack grows down on every architecture sbx builds for.
  const pid_t pid = ::clone(command_child, static_cast<char*>(stack) + kChildStack,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  const int err = errno;
  ::munmap(stack, kChildStack);
  errno = err;
  return pid;
}

[[noreturn]] void supervise(const Supervision& s) {
  ChildArgs& args = *s.args;
  // The parent-death signal first, then the check: see the file comment.
  if (::prctl(PR_SET_PDEATHSIG, kParentGone, 0, 0, 0) != 0) {
    report(s.report_fd, Step::kSupervisor, errno);
    ::_exit(kExitFailure);
  }
  if (::getppid() != s.caller) ::_exit(128 + SIGKILL);  // nothing started, nothing to kill
  // Same uid as the command: not dumpable, or its /proc files would be the command's to open.
  // Inherited by the command's child until its execve makes the command dumpable again.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    report(s.report_fd, Step::kSupervisor, errno);
    ::_exit(kExitFailure);
  }
  ::prctl(PR_SET_NAME, "sbx-supervisor", 0, 0, 0);  // for ps and the tests; cosmetic
  int keep[] = {0, 1, 2, s.report_fd, args.ruleset, args.guard_socket, s.guard_socket};
  close_all_but(keep, sizeof keep / sizeof keep[0]);
  // The caller's handlers must never run here; SIGPIPE ignored so a gone caller cannot kill
  // the supervisor (and so orphan the tree) through the report pipe.
  // command_child() relies on this: every disposition default but SIGPIPE's, which it resets.
  child::reset_signal_dispositions();
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int sig : kSupervisorSignals) sigaddset(&blocked, sig);
  sigaddset(&blocked, SIGCHLD);
  sigaddset(&blocked, kParentGone);
  const int signals = ::sigprocmask(SIG_SETMASK, &blocked, nullptr) == 0
                          ? ::signalfd(-1, &blocked, SFD_CLOEXEC | SFD_NONBLOCK)
                          : -1;
  if (signals < 0) {
    report(s.report_fd, Step::kSupervisor, errno);
    ::_exit(kExitFailure);
  }
  args.supervisor = ::getpid();
  const pid_t command = start_command(args);
  if (command < 0) {
    report(s.report_fd, Step::kClone, errno);
    ::_exit(kExitFailure);
  }
  if (args.guard_socket >= 0) ::close(args.guard_socket);
  if (args.ruleset >= 0) ::close(args.ruleset);
  // Cloned: the child has exec'd or failed by now, and said which.
  if (args.failed_step != static_cast<int>(Step::kNone)) {
    report(s.report_fd, static_cast<Step>(args.failed_step), args.failed_error);
    int status = 0;
    while (::waitpid(command, &status, 0) < 0 && errno == EINTR) {
    }
    kill_descendants();
    ::_exit(shell_code(status));
  }
  std::optional<MetadataEmulator> emulator;
  int listener = -1;
  if (s.guard_socket >= 0) {
    Result<int> received = receive_metadata_listener(s.guard_socket);
    ::close(s.guard_socket);
    // EOF: the forked child (tests) failed before sending; its exit code says so.
    if (!received.ok()) abort_run(s, command, Step::kMetadataGuard, EPROTO);
    listener = *received;
    if (const int err = drop_own_capabilities(); err != 0)
      abort_run(s, command, Step::kGuardReady, err);
    Result<MetadataEmulator> opened = MetadataEmulator::open(s.launch->landlock.write);
    if (!opened.ok()) abort_run(s, command, Step::kGuardReady, EACCES);
    emulator.emplace(std::move(*opened));
  }
  ::close(s.report_fd);  // EOF for the caller: the command runs
  ::_exit(serve(signals, listener, emulator ? &*emulator : nullptr, command, s.caller));
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
  return std::string("sbx: landlock: ") + step_text(r.step) + ": " + reason +
         "; the command did not run";
}

// Reads one Report; false at EOF (the command runs) or error.
bool read_report(int fd, Report& r) {
  for (;;) {
    const ssize_t n = ::read(fd, &r, sizeof r);
    if (n == static_cast<ssize_t>(sizeof r)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

class BlockedSignals {
 public:
  BlockedSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kCallerSignals) sigaddset(&set, sig);
    ok_ = ::pthread_sigmask(SIG_BLOCK, &set, &previous_) == 0;
    if (ok_) fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~BlockedSignals() {
    if (fd_ >= 0) ::close(fd_);
    if (ok_) ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  int fd() const { return fd_; }

 private:
  sigset_t previous_;
  bool ok_ = false;
  int fd_ = -1;
};

// Waits for the supervisor, forwarding what a process sent us; returns its wait status, or -1
// with errno when it cannot be waited for (SIGCHLD ignored by an embedding process).
// The supervisor's end is watched through a pidfd: in a process with other threads (an agent
// embedding the C API) one that does not block SIGCHLD may take it.
// The report pipe is read once, after the supervisor has ended: it writes at most one Report
// (8 bytes, far below a pipe's capacity) and exits right after, so watching the pipe during
// the run would only wake this thread once more per run (the EOF when the command starts).
// `report_read` is non-blocking: whatever the supervisor wrote is in the pipe once it has
// exited, and a write end still held elsewhere (a fork by another thread of an embedding
// process) must not make this read wait.
int wait_supervisor(pid_t supervisor, int signals, int report_read, std::optional<Report>& failed) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, supervisor, 0));
  for (;;) {
    siginfo_t info{};
    const int waited =
        ::waitid(P_PID, static_cast<id_t>(supervisor), &info, WEXITED | WNOHANG | WNOWAIT);
    if (waited == 0 && info.si_pid == supervisor) break;
    if (waited < 0 && errno != EINTR) {
      const int err = errno;
      if (pidfd >= 0) ::close(pidfd);
      errno = err;
      return -1;
    }
    pollfd fds[2] = {{signals, POLLIN, 0}, {pidfd, POLLIN, 0}};
    ::poll(fds, 2, pidfd < 0 ? kNoPidfdPollMs : -1);
    signalfd_siginfo si{};
    while (::read(signals, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      // Terminal-generated signals (si_code > 0) reached the command's process group already.
      if (si.ssi_code > 0) continue;
      if (pidfd >= 0) {
        ::syscall(SYS_pidfd_send_signal, pidfd, si.ssi_signo, nullptr, 0);
      } else {
        ::kill(supervisor, static_cast<int>(si.ssi_signo));  // unreaped: the pid is still its
      }
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  if (Report r{}; read_report(report_read, r)) failed = r;
  int status = 0;
  for (;;) {
    if (::waitpid(supervisor, &status, 0) == supervisor) return status;
    if (errno != EINTR) return -1;
  }
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
      if (!port.ok()) return Error{port.error()};
      l.proxy_port = *port;
    } else if (arg == "--parent-pid") {
      char* end = nullptr;
      const long pid = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || pid <= 0 || pid > 4'194'304)
        return Error{"--parent-pid expects a process id, got '" + value + "'"};
      l.parent = static_cast<pid_t>(pid);
    } else {
      Result<bool> known = parse_landlock_option(arg, value, l.landlock);
      if (!known.ok()) return Error{known.error()};
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

Result<ExitStatus> run_landlock(const LandlockLaunch& launch, const LaunchOptions& options) {
  if (launch.command.empty() || launch.command.front().empty() ||
      launch.command.front().front() != '/')
    return Error{"landlock: the command must be an absolute path"};
  if (!options.cwd.empty() && options.cwd.front() != '/')
    return Error{"landlock: the working directory must be an absolute path"};
  // Everything that may allocate or fail with a good message happens here, before any child.
  Result<UniqueFd> ruleset = build_landlock_ruleset(launch.landlock);
  if (!ruleset.ok()) return Error{"landlock: " + ruleset.error()};
  // A restricted filesystem has writable roots to keep metadata changes in; an unrestricted
  // one lets the command write (and so chmod) anywhere already.
  const bool guard = launch.landlock.restrict_filesystem;
  UniqueFd guard_supervisor;
  UniqueFd guard_child;
  if (guard) {
    int sockets[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0)
      return Error{std::string("landlock: metadata guard: socketpair: ") + std::strerror(errno)};
    guard_supervisor.reset(sockets[0]);
    guard_child.reset(sockets[1]);
  }
  int report_pipe[2] = {-1, -1};
  if (!child::open_report_pipe(report_pipe))
    return Error{std::string("landlock: pipe: ") + std::strerror(errno)};
  UniqueFd report_read(report_pipe[0]);
  // Read once the supervisor has ended, never waited on (wait_supervisor).
  if (::fcntl(report_read.get(), F_SETFL, O_NONBLOCK) != 0)
    return Error{std::string("landlock: pipe: ") + std::strerror(errno)};
  UniqueFd report_write(report_pipe[1]);
  const std::vector<char*> argv = child::c_string_array(launch.command);
  const std::vector<char*> envp = child::c_string_array(options.env);
  ChildArgs args{argv.data(),
                 envp.data(),
                 options.cwd.empty() ? nullptr : options.cwd.c_str(),
                 options.prepare_child,
                 options.prepare_child_ctx,
                 ruleset->get(),
                 guard_child.get(),
                 launch.network,
                 0,
                 options.body,
                 options.body_arg,
                 static_cast<int>(Step::kNone),
                 0};
  Supervision supervision{&launch, &args, report_write.get(), guard_supervisor.get(), ::getpid()};
  // Blocked before the fork: a signal sent meanwhile stays queued for the signalfd.
  BlockedSignals signals;
  if (signals.fd() < 0)
    return Error{std::string("landlock: signalfd: ") + std::strerror(errno)};
  const pid_t supervisor = ::fork();
  if (supervisor < 0) return Error{std::string("landlock: fork: ") + std::strerror(errno)};
  if (supervisor == 0) supervise(supervision);
  report_write.reset();
  guard_child.reset();
  guard_supervisor.reset();
  ruleset->reset();
  std::optional<Report> failed;
  const int status = wait_supervisor(supervisor, signals.fd(), report_read.get(), failed);
  if (status == -1) {
    std::string text = std::string("landlock: waiting for the supervisor: ") + std::strerror(errno);
    if (errno == ECHILD) text += " (is SIGCHLD ignored in this process?)";
    return Error{text};
  }
  ExitStatus result;
  if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = shell_code(status);
  }
  if (failed) {
    const std::string message = failure_message(launch, *failed) + "\n";
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    // The supervisor exits 125 (126/127 for exec) after a report; never pass anything else
    // off as the command's status.
    if (result.signal == 0 && result.exit_code != sdk::kExitNotFound &&
        result.exit_code != sdk::kExitNotExecutable)
      result.exit_code = kExitFailure;
  }
  return result;
}

}  // namespace sbx::stage2
