// What Landlock mode's pid scope (linux/seccomp/pid_scope_filter.hpp) costs: per run, attaching it
// after the two programs every run loads (fork + no_new_privs + attach + _exit); per call, a
// call it does not name (getppid) and one it checks and lets through (setpriority on pid 0),
// each timed in a child under the two programs with and without the pid scope. Rounds
// interleaved, medians.
//
//   sbx_bench_pid_scope [ROUNDS] [CALLS]
#include <linux/filter.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "seccomp_programs.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using sbx::stage2::NetworkFilter;

bool attach(bool with_scope) {
  if (sbx::stage2::load_precompiled_filter_raw(NetworkFilter::kBlocked) != 0) return false;
  return !with_scope || sbx::stage2::load_pid_scope_program_raw() == 0;
}

// One child: no_new_privs and the programs; microseconds until it is reaped.
double fork_and_attach(bool with_scope) {
  const Clock::time_point start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !attach(with_scope)) ::_exit(2);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child failed (status %d)\n", status);
    std::exit(1);
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Nanoseconds per call of `nr` (three arguments) in a filtered child, passed back by a pipe.
double per_call(bool with_scope, long nr, long a, long b, long c, int calls) {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || !attach(with_scope)) ::_exit(2);
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < calls; ++i) ::syscall(nr, a, b, c);
    const double ns =
        std::chrono::duration<double, std::nano>(Clock::now() - start).count() / calls;
    if (::write(fds[1], &ns, sizeof ns) != sizeof ns) ::_exit(3);
    ::_exit(0);
  }
  ::close(fds[1]);
  double ns = 0;
  const bool got = ::read(fds[0], &ns, sizeof ns) == sizeof ns;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!got) std::exit(1);
  return ns;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 101;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 20000;
  if (rounds < 1 || calls < 1) {
    std::fprintf(stderr, "usage: sbx_bench_pid_scope [ROUNDS] [CALLS]\n");
    return 2;
  }
  const int nice = ::getpriority(PRIO_PROCESS, 0);
  std::vector<double> attach2, attach3, ppid2, ppid3, prio2, prio3;
  for (int i = 0; i < rounds; ++i) {
    // Which variant goes first alternates: the first fork of a round pays for what the
    // previous round's children left behind.
    for (const bool scope : {i % 2 == 0, i % 2 != 0}) {
      (scope ? attach3 : attach2).push_back(fork_and_attach(scope));
      (scope ? ppid3 : ppid2).push_back(per_call(scope, SYS_getppid, 0, 0, 0, calls));
      (scope ? prio3 : prio2)
          .push_back(per_call(scope, SYS_setpriority, PRIO_PROCESS, 0, nice, calls));
    }
  }
  std::printf("%d rounds interleaved, medians (%zu-instruction pid scope)\n", rounds,
              sbx::stage2::pid_scope_program().size());
  std::printf("fork + attach table and rules         %8.1f us\n", median(attach2));
  std::printf("  + pid scope                         %8.1f us  (+%.1f)\n", median(attach3),
              median(attach3) - median(attach2));
  std::printf("getppid per call, without / with      %8.1f / %.1f ns\n", median(ppid2),
              median(ppid3));
  std::printf("setpriority(pid 0) per call, w/o / w  %8.1f / %.1f ns\n", median(prio2),
              median(prio3));
  return 0;
}
