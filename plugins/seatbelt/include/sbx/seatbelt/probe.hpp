// Whether Seatbelt can be used here. The decision (evaluate_probe) is pure and unit-tested on
// any host; gathering the facts touches the OS.
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::seatbelt {

struct ProbeFacts {
  bool is_macos = false;
  bool launcher_ok = false;       // /usr/bin/sandbox-exec is a regular executable file
  std::string launcher_observed;  // e.g. "regular file, mode 0755" or "not found"
  bool nesting_ok = false;        // a trivial profile could be applied (not already sandboxed)
  std::string nesting_observed;   // e.g. "exit 0" or "exit 71"
};

// What this backend enforces wherever it is available (everything but a syscall filter).
CapabilitySet seatbelt_capabilities();

// Available only on macOS, with the launcher, and when a profile can be applied here.
ProbeReport evaluate_probe(const ProbeFacts& facts);

// Looks at this host. On anything but macOS it stops after the platform check.
ProbeFacts gather_probe_facts();

// Runs an absolute argv with an empty environment, stdin/stdout/stderr on /dev/null, and
// returns its exit code (128+N when killed by signal N). Errors when it cannot be started.
Result<int> run_quietly(const std::vector<std::string>& argv);

}  // namespace sbx::seatbelt
