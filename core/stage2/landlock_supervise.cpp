// The Landlock-mode supervisor of sbx-stage2 (see supervise() in landlock_ruleset.hpp).
//
// Why a supervisor at all: without a pid namespace nothing kills what the command leaves
// running (bwrap mode gets that from PID 1). As a child subreaper, every orphaned descendant is
// re-parented to this process, however it detached (setsid, double fork), so once the command
// has exited the remaining descendants are exactly our children: kill and reap them until
// waitpid() reports none. The supervisor stays outside the Landlock domain (only the child
// applies it), so with signal scoping (ABI 6+) the command cannot kill its supervisor either.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "landlock_ruleset.hpp"

namespace sbx::stage2 {
namespace {

constexpr int kExitFailure = 125;
constexpr int kForwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                              SIGWINCH, SIGCONT, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU};

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

}  // namespace

int supervise(void (*child_body)(void*), void* arg) {
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
  if (::sigprocmask(SIG_BLOCK, &all, &previous) != 0) return kExitFailure;
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "sbx-stage2: fork: %s\n", std::strerror(errno));
    return kExitFailure;
  }
  if (child == 0) {
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    // If the supervisor is killed, the command goes with it rather than running on unwatched.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != parent) ::_exit(125);
    child_body(arg);
    ::_exit(kExitFailure);  // child_body must not return
  }
  for (;;) {
    siginfo_t info{};
    if (::sigwaitinfo(&all, &info) < 0) continue;  // EINTR
    if (info.si_signo != SIGCHLD) {
      // Terminal-generated signals (SI_KERNEL) already reached the command's process group;
      // forward only what a process sent to us (e.g. sbx forwarding its own signals).
      if (info.si_code == SI_USER || info.si_code == SI_QUEUE) ::kill(child, info.si_signo);
      continue;
    }
    // Reap orphans that ended on their own as well, so no zombie piles up meanwhile.
    int status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid != child) continue;
      kill_descendants();
      return shell_code(status);
    }
  }
}

}  // namespace sbx::stage2
