// Denial classification: when a command fails, was it likely stopped by the sandbox, and why?
// The answer is advice for an agent (retry with a wider policy, ask a person, or treat it as an
// ordinary failure). It is a heuristic over the exit status and the end of stderr, never a
// security decision.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

enum class Platform { kLinux, kMacOS, kWindows };
Platform current_platform();
std::string_view to_string(Platform platform);

enum class DenialKind {
  kNone,           // no sign of the sandbox
  kSyscallFilter,  // SIGSYS, or (Linux) EPERM: a seccomp-style filter refused a system call
  kFilesystem,     // EACCES/EROFS-style message (EPERM too on macOS, where Seatbelt uses it)
  kNetwork,        // the network was unreachable or name resolution failed
  kSandboxSetup,   // the sandbox itself failed (sbx-stage2, bwrap, sandbox-exec): nothing ran
};
std::string_view to_string(DenialKind kind);

// What is known about one finished command.
struct FailedCommand {
  ExitStatus status;
  std::string_view stderr_tail;  // the end of what it wrote to stderr (may be empty)
  std::string backend;           // the backend it ran under; "" or "none" = no sandbox
  Platform platform = current_platform();
};

struct DenialAssessment {
  bool likely_sandbox_denial = false;
  DenialKind kind = DenialKind::kNone;
  std::string reason;    // one sentence for a person or a model
  std::string evidence;  // the stderr line (or signal) that decided it; "" when none
};

// Decides in this order: success (never a denial); no sandbox (never a denial: an EACCES from
// an unsandboxed command is the host's own permission); an `sbx-stage2: <step>: <reason>` line
// with exit 125; a launcher's own error line (bwrap:, sandbox-exec:); death by the platform's
// SIGSYS (31 on Linux, 12 on macOS; a signal, never an exit code 128+SIGSYS); the last
// stderr line matching the platform's keyword table (filesystem, then network). Lines known to
// be unrelated ("Permission denied (publickey)") are skipped.
DenialAssessment classify_failure(const FailedCommand& command);

// {"likely_sandbox_denial","kind","reason","evidence"} (evidence null when empty).
std::string denial_to_json(const DenialAssessment& assessment);

}  // namespace sbx
