// Terminal injection through a terminal the sandboxed command inherits: the test gives `sbx`
// a pseudo-terminal as its standard input, and the command tries the ioctls that would put
// input into it or re-route it (TIOCSETD with N_TTY, which needs no privilege; TIOCSTI; TIOCSPGRP;
// TIOCCONS). Every one must fail with EPERM, while ordinary terminal requests still work.
// Run by an unprivileged user, TIOCSTI and TIOCCONS fail without any sandbox too
// (drivers/tty/tty_io.c: tiocsti() needs the caller's controlling terminal or CAP_SYS_ADMIN,
// tioccons() CAP_SYS_ADMIN; this terminal is no one's controlling terminal): for that identity
// only TIOCSETD shows the sandbox's filter.
// Shared by the bwrap and the landlock suites.
#pragma once

#include <fcntl.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx::test {

// Prints "<request>=<errno or 0>" for each attempt on standard input.
inline std::string terminal_script() {
  return "/usr/bin/python3 -c '\n"
         "import fcntl, os, struct, termios\n"
         "def attempt(name, request, arg):\n"
         "    try:\n"
         "        fcntl.ioctl(0, request, arg)\n"
         "        print(name + \"=0\")\n"
         "    except OSError as e:\n"
         "        print(name + \"=\" + str(e.errno))\n"
         "attempt(\"TIOCSETD\", 0x5423, struct.pack(\"i\", 0))\n"
         "attempt(\"TIOCSTI\", 0x5412, b\"x\")\n"
         "attempt(\"TIOCCONS\", 0x541D, 0)\n"
         "attempt(\"TIOCSPGRP\", 0x5410, struct.pack(\"i\", os.getpgrp()))\n"
         "attempt(\"TIOCGWINSZ\", termios.TIOCGWINSZ, b\"\\0\" * 8)\n"
         "termios.tcsetattr(0, termios.TCSANOW, termios.tcgetattr(0))\n"
         "print(\"tcsetattr=0\")\n"
         "'";
}

// Runs argv with a fresh pseudo-terminal as standard input (stdout and stderr collected), in
// `env` (base_env() when empty).
inline RunResult run_with_terminal_stdin(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env_entries = {}) {
  RunResult r;
  int controller = -1;
  int terminal = -1;
  if (::openpty(&controller, &terminal, nullptr, nullptr, nullptr) != 0) return r;
  TempDir io;
  const std::string out = io / "out";
  const std::string err = io / "err";
  std::vector<std::string> base = env_entries.empty() ? base_env() : env_entries;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0) ::_exit(126);
    ::dup2(terminal, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> a;
    std::vector<char*> env;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (auto& s : base) env.push_back(s.data());
    env.push_back(nullptr);
    ::execve(a[0], a.data(), env.data());
    ::_exit(127);
  }
  ::close(terminal);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(controller);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// The verdict: each injection request refused with EPERM (1), ordinary requests working.
inline void expect_terminal_injection_refused(const RunResult& r) {
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* refused : {"TIOCSETD=1\n", "TIOCSTI=1\n", "TIOCCONS=1\n", "TIOCSPGRP=1\n"})
    EXPECT_NE(r.out.find(refused), std::string::npos) << refused << describe(r);
  EXPECT_NE(r.out.find("TIOCGWINSZ=0\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("tcsetattr=0\n"), std::string::npos) << describe(r);
}

}  // namespace sbx::test
