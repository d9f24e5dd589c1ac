// RunReport: how one run went (run.hpp fills it; exec_report_to_json in report_json.hpp writes
// it for `sbx exec --json` and sbx_exec). Each member is named like its JSON key, so the report
// reads the same in C++ and in the contract (core/cli/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sbx/core/proxy.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// One connection the backend's sandbox refused, as the backend reported it (the run's
// sbx_run_v2.report_network_refusal): kind "unix" with the socket's path or "@name" as the
// command gave it, kind "ip" with "ADDRESS:PORT".
struct BackendRefusal {
  std::string kind;
  std::string address;
  friend bool operator==(const BackendRefusal&, const BackendRefusal&) = default;
};

// Every such refusal of one run in bounded memory: the first kMaxEntries, and the count.
struct BackendRefusalLog {
  static constexpr std::size_t kMaxEntries = 100;
  std::vector<BackendRefusal> entries;
  std::uint64_t total = 0;  // every refusal reported, kept or not
};

// The connections refused during a run, by whom. JSON: "network_refusals" lists the proxy's
// entries then the backend's, "network_refusals_total" counts both.
struct NetworkRefusals {
  // What sbx's proxy refused (network mode proxy; empty without one).
  proxy::RefusalLog proxy{};
  // What the backend's sandbox refused (host unix sockets, addresses with no route out of a
  // private network namespace); empty for backends that report nothing.
  BackendRefusalLog backend{};
};

// How one `sbx exec` (or sbx_exec) went.
struct RunReport {
  std::optional<bool> should_sandbox;  // nullopt: the decision itself failed
  std::string reason;                  // why sandboxed or not
  std::optional<std::string> backend;  // the available backend, if any
  // The backend that ran (or, for a plan, would run) the command; nullopt when it ran without
  // a sandbox or did not get that far. JSON: the name, or "none".
  std::optional<std::string> final{};
  bool allow_unsandboxed_used = false;  // ran without a sandbox by --allow-unsandboxed
  bool dry_run = false;
  std::optional<ExitStatus> exit{};  // nullopt when the command did not run
  std::string error;                 // sbx's own failure, empty when none (JSON null)
  // What sort of failure `error` is (result.hpp): JSON "error_kind", null when no error.
  ErrorKind error_kind = kDefaultErrorKind;
  // Protected names created or changed under the writable roots during a sandboxed run
  // (created_names.hpp); empty when nothing was, or the command did not run sandboxed.
  std::vector<std::string> protected_names_created{};
  bool protected_names_truncated = false;  // the walk hit its bounds: the list may be short
  // Directories the walk could not read (each also sets protected_names_truncated).
  std::vector<std::string> protected_names_unreadable{};
  // The resource limit that ended the run: "timeout", "memory", "processes", "cpu_seconds",
  // "file_size_bytes"; nullopt when none did (or it could not be told: run_limits.hpp).
  std::optional<std::string> limit_hit{};
  // The excluded-command pattern each part of the command matched when it ran without a
  // sandbox for that reason (command_patterns.hpp); empty otherwise.
  std::vector<std::string> excluded_by{};
  // The environment variables of the caller that run did not get, by name (never a value):
  // what its reset dropped (program_trust.hpp reset_environment) and what the policy's
  // /environment removed before (environment.hpp filter_environment: secrets, the LD_* names
  // the CLI withheld, "(empty name)"); empty when it was not excluded.
  std::vector<std::string> environment_dropped{};
  // The last 64 KiB of the command's stderr when it was captured (for the denial
  // classification); nullopt when it was not. A JSON key of sbx_exec's report only.
  std::optional<std::string> stderr_tail{};
  // What a capture of stdout and stderr kept and dropped (run_io.hpp; the bytes stay with the
  // run's RunStdio); nullopt for a stream that was not captured.
  struct Capture {
    std::uint64_t bytes = 0;          // kept
    std::uint64_t dropped_bytes = 0;  // read after the cap and thrown away
  };
  std::optional<Capture> stdout_capture{};
  std::optional<Capture> stderr_capture{};
  NetworkRefusals network_refusals{};
};

}  // namespace sbx
