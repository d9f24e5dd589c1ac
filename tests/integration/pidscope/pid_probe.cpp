// sbx_pid_probe OP PID: makes one call that names process PID (0: the caller) and reports it:
// "OP SUCCEEDED" (exit 0) or "OP BLOCKED: <errno>" (exit 1). `all PID` makes every call in turn
// (exit 0 when all succeeded). Run inside the sandbox by the pid scope suite.
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kIoprioWhoProcess = 1;  // linux/ioprio.h
constexpr int kIoprioClassBestEffort = 2;
constexpr int kIoprioClassShift = 13;

bool report(const char* op, long rc) {
  if (rc >= 0) {
    std::printf("%s SUCCEEDED\n", op);
    return true;
  }
  std::printf("%s BLOCKED: %s\n", op, std::strerror(errno));
  return false;
}

// RLIMIT_CPU (1, 1): the target gets SIGKILL after one second of CPU time.
long kill_by_limit(pid_t pid) {
  const rlimit one{1, 1};
  if (pid == 0) return 0;  // not on the probe itself: it would die
  return ::prlimit(pid, RLIMIT_CPU, &one, nullptr);
}

// RLIMIT_CORE unlimited and a CPU soft limit of one second: SIGXCPU dumps the target's core.
// On the caller itself only the core limit is lowered (the probe must live).
long dump_by_limit(pid_t pid) {
  if (pid == 0) {
    const rlimit none{0, 0};
    return ::prlimit(0, RLIMIT_CORE, &none, nullptr);
  }
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  if (::prlimit(pid, RLIMIT_CORE, &unlimited, nullptr) != 0) return -1;
  const rlimit soft{1, RLIM_INFINITY};
  return ::prlimit(pid, RLIMIT_CPU, &soft, nullptr);
}

long lower_priority(pid_t pid) { return ::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), 19); }

long idle_io(pid_t pid) {
  // Best effort, lowest level (7): allowed for the caller itself without privilege.
  return ::syscall(SYS_ioprio_set, kIoprioWhoProcess, pid,
                   (kIoprioClassBestEffort << kIoprioClassShift) | 7);
}

// CPU 0 only, where the target may run at all; on the caller its own current mask.
long pin_cpu(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pid == 0) {
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  } else {
    CPU_SET(0, &set);
  }
  return ::sched_setaffinity(pid, sizeof set, &set);
}

long batch_scheduler(pid_t pid) {
  const sched_param param{};
  return ::sched_setscheduler(pid, SCHED_BATCH, &param);
}

struct Op {
  const char* name;
  long (*call)(pid_t);
};

constexpr Op kOps[] = {{"kill-by-limit", kill_by_limit}, {"dump-by-limit", dump_by_limit},
                       {"setpriority", lower_priority},  {"ioprio_set", idle_io},
                       {"sched_setaffinity", pin_cpu},   {"sched_setscheduler", batch_scheduler}};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sbx_pid_probe OP|all PID\n");
    return 2;
  }
  const std::string op = argv[1];
  const pid_t pid = static_cast<pid_t>(std::atoi(argv[2]));
  bool all_succeeded = true;
  bool known = false;
  for (const Op& o : kOps) {
    if (op != "all" && op != o.name) continue;
    known = true;
    all_succeeded = report(o.name, o.call(pid)) && all_succeeded;
  }
  if (!known) {
    std::fprintf(stderr, "sbx_pid_probe: unknown operation %s\n", op.c_str());
    return 2;
  }
  return all_succeeded ? 0 : 1;
}
