// Runs a program under a seccomp filter the test writes: a forked child redirects its stdout
// and stderr to a file, sets no_new_privs, installs `filter` and execs the program with exactly
// `env`. The filter lives and dies with that child. Used to make the kernel refuse what a host
// without some feature would refuse (no Landlock, no user namespaces) or to kill a program that
// does what it must not (grow its heap). Linux only.
#pragma once

#if defined(__linux__)
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

namespace sbx::test {

// The raw wait status of the program (-1 when it could not be waited for). A failure before the
// exec exits the child with 120 (output file), 121 (filter) or 127 (exec).
inline int wait_status_under_filter(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env, const std::string& out,
                                    std::vector<sock_filter> filter) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(120);
    sock_fprog program{static_cast<unsigned short>(filter.size()), filter.data()};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0)
      ::_exit(121);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

// The same, as an exit code: -1 when the program did not exit (a signal ended it).
inline int exit_code_under_filter(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, const std::string& out,
                                  std::vector<sock_filter> filter) {
  const int status = wait_status_under_filter(argv, env, out, std::move(filter));
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace sbx::test
#endif
