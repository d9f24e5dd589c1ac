// The Landlock-mode supervisor of sbx-stage2 (see supervise() in landlock_ruleset.hpp).
//
// Why a supervisor at all: without a pid namespace nothing kills what the command leaves
// running (bwrap mode gets that from PID 1). As a child subreaper, every orphaned descendant is
// re-parented to this process, however it detached (setsid, double fork), so once the command
// has exited the remaining descendants are exactly our children: kill and reap them until
// waitpid() reports none. The supervisor stays outside the Landlock domain (only the child
// applies it), so with signal scoping (ABI 6+) the command cannot kill its supervisor either.
// With the metadata guard it also answers the guard's notifications (metadata_notify.hpp); one
// poll() over a signalfd and the listener serves both, and the supervisor then holds no
// capability, since it acts for the command.
//
// Why a parent-death signal: without a pid namespace, a SIGKILLed sbx would leave the
// supervisor and the command running, re-parented to init (bwrap mode has --die-with-parent).
// The kernel sends kParentGone when the thread that started stage 2 exits; the supervisor then
// checks getppid() against sbx's pid (another sender, or an exiting non-main thread of sbx,
// changes nothing) and kills the whole tree. The check right after arming the signal closes
// the race with an sbx that died before stage 2 got that far.
#include <dirent.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "landlock_ruleset.hpp"
#include "metadata_notify.hpp"
#include "sbx/sdk/posix_child.hpp"

namespace sbx::stage2 {
namespace {

constexpr int kExitFailure = sdk::kExitSandboxFailure;
constexpr int kForwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                              SIGWINCH, SIGCONT, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};
// Not forwarded, catchable, unused by sbx and the usual commands: the parent-death signal.
constexpr int kParentGone = SIGPWR;

int shell_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitFailure;
}

// Our direct children: /proc/self/task/<tid>/children (one thread here), else a /proc scan
// for processes whose parent is us (kernels without CONFIG_PROC_CHILDREN).
std::vector<pid_t> children() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  std::ifstream in("/proc/self/task/" + std::to_string(self) + "/children");
  long pid = 0;
  while (in >> pid) out.push_back(static_cast<pid_t>(pid));
  if (!out.empty() || in.is_open()) return out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = ::readdir(proc)) {
    const long candidate = std::strtol(entry->d_name, nullptr, 10);
    if (candidate <= 0) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
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

// Kills and reaps every remaining descendant. Each round kills our current children; their
// own children are re-parented to us as they die, so rounds repeat until waitpid() has none.
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
Status drop_own_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0)
    return Error{std::string("capset: ") + std::strerror(errno)};
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return Error{std::string("clear ambient: ") + std::strerror(errno)};
  return {};
}

// Takes the listener from the child and gets ready to answer it. On failure the child is
// killed (it must not run unguarded) and Error says why (empty when the child reported it).
Result<int> start_guard(int socket, const SuperviseOptions& options,
                        std::optional<MetadataEmulator>& emulator) {
  Result<int> listener = receive_metadata_listener(socket);
  ::close(socket);
  // EOF: the child failed before sending and said so itself (or died).
  if (!listener.ok()) return Error{""};
  Status dropped = drop_own_capabilities();
  Result<MetadataEmulator> opened = dropped.ok()
                                        ? MetadataEmulator::open(options.writable_roots)
                                        : Result<MetadataEmulator>(Error{dropped.error()});
  if (!opened.ok()) {
    ::close(*listener);
    return Error{opened.error()};
  }
  emulator.emplace(std::move(*opened));
  return *listener;
}

// Forwards one signal the supervisor received; true when the command has exited or sbx is
// gone and the tree was killed (status in *code).
bool handle_signal(const signalfd_siginfo& info, pid_t child, pid_t parent, int* code) {
  if (info.ssi_signo == static_cast<std::uint32_t>(kParentGone)) {
    if (::getppid() == parent) return false;  // not a parent death: sbx is still there
    ::kill(child, SIGKILL);
    kill_descendants();
    *code = 128 + SIGKILL;
    return true;
  }
  if (info.ssi_signo != SIGCHLD) {
    // Terminal-generated signals (SI_KERNEL) already reached the command's process group;
    // forward only what a process sent to us (e.g. sbx forwarding its own signals).
    if (info.ssi_code == SI_USER || info.ssi_code == SI_QUEUE)
      ::kill(child, static_cast<int>(info.ssi_signo));
    return false;
  }
  // Reap orphans that ended on their own as well, so no zombie piles up meanwhile.
  int status = 0;
  pid_t pid = 0;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid != child) continue;
    kill_descendants();
    *code = shell_code(status);
    return true;
  }
  return false;
}

// Serves signals and (while it has users) the guard's listener until the command exits;
// returns its status. Closes the listener.
int serve(int signals, int listener, const MetadataEmulator* emulator, pid_t child,
          pid_t parent) {
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
      if (!handle_signal(info, child, parent, &code)) continue;
      if (listener >= 0) ::close(listener);
      return code;
    }
  }
}

}  // namespace

int supervise(void (*child_body)(void*, int), void* arg, const SuperviseOptions& options) {
  // Orphans come to us, not to init, so none escapes kill_descendants().
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    std::fprintf(stderr, "sbx-stage2: subreaper: %s\n", std::strerror(errno));
    return kExitFailure;
  }
  sigset_t all;
  sigset_t previous;
  sigemptyset(&all);
  for (int sig : kForwarded) sigaddset(&all, sig);
  sigaddset(&all, SIGCHLD);
  sigaddset(&all, kParentGone);
  if (::sigprocmask(SIG_BLOCK, &all, &previous) != 0) return kExitFailure;
  const pid_t sbx = options.parent != 0 ? options.parent : ::getppid();
  if (::prctl(PR_SET_PDEATHSIG, kParentGone, 0, 0, 0) != 0) {
    std::fprintf(stderr, "sbx-stage2: parent-death signal: %s\n", std::strerror(errno));
    return kExitFailure;
  }
  // sbx died before the signal was armed: nothing was started, nothing to kill.
  if (::getppid() != sbx) return 128 + SIGKILL;
  int sockets[2] = {-1, -1};
  if (options.guard_metadata &&
      ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) {
    std::fprintf(stderr, "sbx-stage2: metadata guard: socketpair: %s\n", std::strerror(errno));
    return kExitFailure;
  }
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "sbx-stage2: fork: %s\n", std::strerror(errno));
    return kExitFailure;
  }
  // The child may allocate (child_body builds the Landlock ruleset): the supervisor has a single
  // thread, so no lock can be held across this fork. In sbx-stage2 the body ends in
  // exec_command, which leaves only stdin, stdout and stderr to the command.
  if (child == 0) {
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    // If the supervisor is killed, the command goes with it rather than running on unwatched.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != parent)
      ::_exit(kExitFailure);
    if (sockets[0] >= 0) ::close(sockets[0]);
    child_body(arg, sockets[1]);
    ::_exit(kExitFailure);  // child_body must not return
  }
  std::optional<MetadataEmulator> emulator;
  int listener = -1;
  if (options.guard_metadata) {
    ::close(sockets[1]);
    Result<int> started = start_guard(sockets[0], options, emulator);
    if (!started.ok()) {
      if (!started.error().empty())
        std::fprintf(stderr, "sbx-stage2: metadata guard: %s\n", started.error().c_str());
      ::kill(child, SIGKILL);
      kill_descendants();
      return kExitFailure;
    }
    listener = *started;
  }
  // Signals stay blocked and are read from a signalfd, so that one poll() serves them and
  // the guard's notifications alike; nothing here blocks on a single caller.
  const int signals = ::signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) {
    std::fprintf(stderr, "sbx-stage2: signalfd: %s\n", std::strerror(errno));
    if (listener >= 0) ::close(listener);
    ::kill(child, SIGKILL);
    kill_descendants();
    return kExitFailure;
  }
  const int code = serve(signals, listener, emulator ? &*emulator : nullptr, child, sbx);
  ::close(signals);
  return code;
}

}  // namespace sbx::stage2
