// Runs a short helper command for the probe and captures its output. Not for the sandboxed
// command itself: that goes through the host's spawn service (HostServices::spawn).
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace firejail_backend {

struct Captured {
  int exit_code = -1;    // valid when signal == 0 and !timed_out
  int signal = 0;        // the signal that ended it, or 0
  bool timed_out = false;
  std::string output;    // stdout and stderr interleaved, at most 64 KiB
};

// Runs argv (argv[0] absolute; never searched in PATH) with exactly `env`, in "/", stdin from
// /dev/null, every other fd closed; kills it after `timeout_ms`. Error only if it could not start.
sbx::Result<Captured> run_capture(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& env, int timeout_ms);

}  // namespace firejail_backend
