// Denial classification (a heuristic for agents, never a security decision). The stderr tail it
// reads is kept by the run (run_io.hpp, RunStdio).
#include "sbx/core/denial.hpp"

#include <array>
#include <boost/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/json_render.hpp"
#include "report/objects.hpp"
#include "sbx/core/exit_codes.hpp"

namespace sbx {
namespace {

struct Keyword {
  std::string_view text;
  DenialKind kind;
  std::string_view meaning;  // what the sandbox most likely refused
};

// strerror() texts of glibc (and musl) for the errors a Linux sandbox produces: Landlock and
// mount-namespace denials give EACCES/EROFS, sbx's seccomp filter answers EPERM (not SIGSYS), a
// network namespace without interfaces gives ENETUNREACH, and name resolution fails without a
// resolver.
constexpr std::array kLinuxKeywords = {
    Keyword{"Read-only file system", DenialKind::kFilesystem,
            "EROFS: a write outside the writable roots (or to a protected path)"},
    Keyword{"Permission denied", DenialKind::kFilesystem,
            "EACCES: access to a path the policy does not grant"},
    // rename(2)/link(2) EXDEV: across mounts (a protected path is a mount of its own) or out of
    // a Landlock domain's reach (LANDLOCK_ACCESS_FS_REFER); inside one writable root a move is
    // allowed, so under a sandbox this is most often the sandbox's refusal.
    Keyword{"Invalid cross-device link", DenialKind::kFilesystem,
            "EXDEV: a rename or link across the sandbox's boundary (into or out of a protected "
            "path, or out of the writable roots)"},
    Keyword{"Operation not permitted", DenialKind::kSyscallFilter,
            "EPERM: a system call the sandbox's seccomp filter refuses (ptrace, mount, new "
            "namespaces, sockets with the network off, ...)"},
    Keyword{"Network is unreachable", DenialKind::kNetwork,
            "ENETUNREACH: network access while the policy restricts the network"},
    Keyword{"Temporary failure in name resolution", DenialKind::kNetwork,
            "name resolution failed: the policy restricts the network"},
    Keyword{"Could not resolve host", DenialKind::kNetwork,
            "name resolution failed: the policy restricts the network"},
};

// macOS: Seatbelt denials surface as EPERM ("Operation not permitted"), sometimes EACCES;
// sandbox-exec's own failures are handled as setup errors.
constexpr std::array kMacOSKeywords = {
    Keyword{"Operation not permitted", DenialKind::kFilesystem,
            "EPERM: Seatbelt refused an operation the profile does not allow"},
    Keyword{"Permission denied", DenialKind::kFilesystem,
            "EACCES: access to a path the policy does not grant"},
    Keyword{"Read-only file system", DenialKind::kFilesystem,
            "EROFS: a write the policy does not allow"},
    Keyword{"Could not resolve host", DenialKind::kNetwork,
            "name resolution failed: the policy restricts the network"},
    Keyword{"nodename nor servname provided", DenialKind::kNetwork,
            "name resolution failed: the policy restricts the network"},
};

// Windows: the restricted token and ACLs give ERROR_ACCESS_DENIED; firewall rules give
// WSAEACCES.
constexpr std::array kWindowsKeywords = {
    Keyword{"Access is denied", DenialKind::kFilesystem,
            "ERROR_ACCESS_DENIED: the restricted token or an ACL refused access"},
    Keyword{"A required privilege is not held by the client", DenialKind::kFilesystem,
            "ERROR_PRIVILEGE_NOT_HELD: the restricted token lacks a privilege"},
    Keyword{"forbidden by its access permissions", DenialKind::kNetwork,
            "WSAEACCES: the network is blocked for the sandbox"},
};

// Lines with a keyword that has nothing to do with a local sandbox.
constexpr std::array kUnrelated = {
    std::string_view("Permission denied (publickey"),  // ssh authentication
    std::string_view("Permission denied, please try again"),
};

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

int sigsys_number(Platform platform) {
  // SIGSYS is 31 on Linux (x86, arm, riscv) and 12 on macOS; Windows has no signals.
  switch (platform) {
    case Platform::kLinux:
      return 31;
    case Platform::kMacOS:
      return 12;
    case Platform::kWindows:
      return 0;
  }
  return 0;
}

std::string clip(std::string_view line) {
  constexpr std::size_t kMaxEvidence = 300;
  if (line.size() <= kMaxEvidence) return std::string(line);
  return std::string(line.substr(0, kMaxEvidence)) + "...";
}

// The last line that starts with `prefix`, or nullopt.
std::optional<std::string_view> last_line_starting(const std::vector<std::string_view>& lines,
                                                   std::string_view prefix) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->substr(0, prefix.size()) == prefix) return *it;
  }
  return std::nullopt;
}

std::optional<DenialAssessment> setup_failure(const FailedCommand& command,
                                              const std::vector<std::string_view>& lines) {
  // sbx-stage2 exits 125 after printing the step that failed; the command never ran.
  if (command.status.signal == 0 && command.status.exit_code == kExitSbxFailure) {
    if (auto line = last_line_starting(lines, "sbx-stage2: ")) {
      const std::string_view rest = line->substr(12);
      const std::size_t colon = rest.find(": ");
      const std::string step(colon == std::string_view::npos ? rest : rest.substr(0, colon));
      return DenialAssessment{
          true, DenialKind::kSandboxSetup,
          "the sandbox helper sbx-stage2 failed at step '" + step + "', so the command did not run",
          clip(*line)};
    }
  }
  for (std::string_view launcher :
       {std::string_view("bwrap: "), std::string_view("sandbox-exec: ")}) {
    if (auto line = last_line_starting(lines, launcher)) {
      return DenialAssessment{true, DenialKind::kSandboxSetup,
                              "the sandbox launcher " +
                                  std::string(launcher.substr(0, launcher.size() - 2)) +
                                  " reported an error, so the command most likely did not run",
                              clip(*line)};
    }
  }
  return std::nullopt;
}

std::optional<DenialAssessment> signal_denial(const FailedCommand& command) {
  const int sigsys = sigsys_number(command.platform);
  if (sigsys == 0) return std::nullopt;
  // Only a death by SIGSYS, reported as a signal: every backend of sbx's reports a signal as a
  // signal (bwrap through sbx-stage2, its PID 1 or its direct launch's waiter; Landlock through
  // its supervisor), and a plain `exit 159` of a command is its own code. A backend that folds a
  // signal into exit code 128+N breaks the SDK's contract (ExitStatus::signal, sdk/README.md);
  // its SIGSYS then goes unnamed here, which costs an agent a hint, where reading every 159 as
  // SIGSYS would call a command's own exit code a sandbox denial.
  if (command.status.signal != sigsys) return std::nullopt;
  return DenialAssessment{true, DenialKind::kSyscallFilter,
                          "the command was killed by SIGSYS (" + std::to_string(sigsys) +
                              "): the sandbox's system-call filter trapped a call it forbids",
                          "signal " + std::to_string(sigsys)};
}

template <std::size_t N>
std::optional<DenialAssessment> keyword_denial(const std::array<Keyword, N>& table,
                                               const std::vector<std::string_view>& lines) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    bool unrelated = false;
    for (std::string_view skip : kUnrelated) unrelated = unrelated || it->find(skip) != it->npos;
    if (unrelated) continue;
    for (const Keyword& keyword : table) {
      if (it->find(keyword.text) == std::string_view::npos) continue;
      return DenialAssessment{true, keyword.kind,
                              "stderr reports \"" + std::string(keyword.text) + "\": likely " +
                                  std::string(keyword.meaning),
                              clip(*it)};
    }
  }
  return std::nullopt;
}

std::optional<DenialAssessment> message_denial(const FailedCommand& command,
                                               const std::vector<std::string_view>& lines) {
  switch (command.platform) {
    case Platform::kLinux:
      return keyword_denial(kLinuxKeywords, lines);
    case Platform::kMacOS:
      return keyword_denial(kMacOSKeywords, lines);
    case Platform::kWindows:
      return keyword_denial(kWindowsKeywords, lines);
  }
  return std::nullopt;
}

}  // namespace

Platform current_platform() {
#if defined(_WIN32)
  return Platform::kWindows;
#elif defined(__APPLE__)
  return Platform::kMacOS;
#else
  return Platform::kLinux;
#endif
}

std::string_view to_string(Platform platform) {
  switch (platform) {
    case Platform::kLinux:
      return "linux";
    case Platform::kMacOS:
      return "macos";
    case Platform::kWindows:
      return "windows";
  }
  return "unknown";
}

std::string_view to_string(DenialKind kind) {
  switch (kind) {
    case DenialKind::kNone:
      return "none";
    case DenialKind::kSyscallFilter:
      return "syscall_filter";
    case DenialKind::kFilesystem:
      return "filesystem";
    case DenialKind::kNetwork:
      return "network";
    case DenialKind::kSandboxSetup:
      return "sandbox_setup";
  }
  return "unknown";
}

DenialAssessment classify_failure(const FailedCommand& command) {
  if (command.status.signal == 0 && command.status.exit_code == 0) {
    return {false, DenialKind::kNone, "the command succeeded", ""};
  }
  if (command.backend.empty() || command.backend == "none") {
    return {false, DenialKind::kNone,
            "the command ran without a sandbox, so the sandbox cannot have denied it", ""};
  }
  const std::vector<std::string_view> lines = lines_of(command.stderr_tail);
  if (auto found = setup_failure(command, lines)) return *found;
  if (auto found = signal_denial(command)) return *found;
  if (auto found = message_denial(command, lines)) return *found;
  const std::string how = command.status.signal != 0
                              ? "signal " + std::to_string(command.status.signal)
                              : "exit code " + std::to_string(command.status.exit_code);
  return {false, DenialKind::kNone,
          "no sign of a sandbox denial (" + how +
              ", no denial message on stderr): most likely "
              "an ordinary failure of the command",
          ""};
}

std::string denial_to_json(const DenialAssessment& assessment) {
  // render_json makes every string valid UTF-8: stderr is arbitrary bytes.
  return report::render_json(report::denial_object(assessment), JsonStyle::kCompact);
}

namespace report {

boost::json::object denial_object(const DenialAssessment& assessment) {
  boost::json::object out;
  out["likely_sandbox_denial"] = assessment.likely_sandbox_denial;
  out["kind"] = std::string(to_string(assessment.kind));
  out["reason"] = assessment.reason;
  if (assessment.evidence.empty()) {
    out["evidence"] = nullptr;
  } else {
    out["evidence"] = assessment.evidence;
  }
  return out;
}

}  // namespace report

}  // namespace sbx
