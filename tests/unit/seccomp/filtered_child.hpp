// Runs one probe under the stage-2 seccomp filter in a forked child (the filter cannot be
// removed once installed) and reports what the probe's system call answered.
#pragma once

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>

#include "seccomp_filter.hpp"

namespace sbx_seccomp_test {

// "ok" when the probe's call failed with `expected_errno` (or succeeded when it is 0),
// otherwise a readable verdict: "succeeded", "errno N (name)", "filter not installed", or the
// signal that killed the child. `install` installs the filter in the child (after
// no_new_privs) and returns whether it did.
inline std::string run_in_filtered_child(const std::function<bool()>& install,
                                         const std::function<long()>& probe, int expected_errno) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(254);
    if (!install()) ::_exit(254);
    errno = 0;
    const long rc = probe();
    const int err = rc < 0 ? errno : 0;
    if (err == expected_errno) ::_exit(0);
    ::_exit(err == 0 ? 255 : (err > 0 && err < 254 ? err : 253));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died of signal " + std::to_string(WTERMSIG(status));
  const int code = WEXITSTATUS(status);
  switch (code) {
    case 0:
      return "ok";
    case 254:
      return "filter not installed";
    case 255:
      return "succeeded";
    case 253:
      return "failed with an unexpected errno";
    default:
      return "errno " + std::to_string(code) + " (" + std::strerror(code) + ")";
  }
}

// The filter as stage 2 builds and installs it with libseccomp.
inline std::string run_filtered(sbx::stage2::NetworkFilter net, const std::function<long()>& probe,
                                int expected_errno) {
  return run_in_filtered_child([net] { return sbx::stage2::install_filter(net).ok(); }, probe,
                               expected_errno);
}

inline long raw(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  return ::syscall(nr, a, b, c, d, e);
}

}  // namespace sbx_seccomp_test
