// Runs a program to completion with its stdin fed and its stdout and stderr captured.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace sbx::test {

struct RunResult {
  int code = -1;       // the shell's view: the exit code, or 128 + the signal that ended it
  int exit_code = -1;  // the exit code when it exited, else 0
  int signal = 0;      // the signal that ended it, else 0
  std::string out;
  std::string err;
};

struct RunOptions {
  std::optional<std::vector<std::string>> env;  // the environment; the test's own when unset
  std::string input;                            // fed on stdin, then stdin is closed
  std::string cwd;                              // the working directory; unchanged when empty
};

// Runs argv (argv[0] is a path, not searched in PATH). A child that cannot start exits 127.
RunResult run(const std::vector<std::string>& argv, const RunOptions& options = {});
// The same with an explicit environment.
RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
              const std::string& input = "");

// Starts argv (a path, not searched) in the background with exactly `env`, stdin from
// /dev/null and stdout and stderr to the file `log`; returns its pid (the caller waits).
pid_t start_in_background(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const std::string& log);

// "exit N / stdout / stderr" (truncated) for assertion messages.
std::string describe(const RunResult& result);

}  // namespace sbx::test
