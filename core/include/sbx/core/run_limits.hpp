// Resource limits of one run (policy /limits): how each holds on this host, and the OS work that
// makes it hold.
//
// Two mechanisms, both set up by core so that every backend gets the same:
//  - rlimits (RLIMIT_NPROC, NOFILE, FSIZE, AS, CPU), set in the child that becomes the sandbox
//    (bwrap or sbx-stage2) right before its execve, and so inherited by the command and all it
//    starts. Per process (NPROC: per user), and RLIMIT_NPROC does not bind root at all: the
//    kernel exempts root and CAP_SYS_RESOURCE/CAP_SYS_ADMIN holders.
//  - a cgroup created per run where the host lets sbx create one: cgroup v2 with the pids
//    controller (pids.max, and memory.max where the memory controller is there too), or else a
//    cgroup v1 pids hierarchy. The same child joins it before execve, so nothing of the run
//    starts outside it; it counts every task of the run, root's included. After the run every
//    process left in it is killed and the cgroup removed.
// The wall-clock timeout is a watchdog thread in sbx: SIGTERM to the command (through the
// spawner's signal forwarding), then after the grace period SIGKILL to everything of the run.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sbx/core/policy.hpp"
#include "sbx/sdk/result.hpp"

namespace sbx {

// What the host offers for per-run cgroups. Filled by probe_cgroups().
struct CgroupSupport {
  bool available = false;  // a run cgroup with a pids limit can be made
  std::string kind;        // "cgroup2" or "cgroup1 pids"
  std::string parent;      // directory the run cgroups are created in
  bool memory = false;     // memory.max can be set too (cgroup2 with the memory controller)
  std::string reason;      // available: what was found; otherwise why not
};

// Looks at the mounted cgroup hierarchies and what this user may create in them. Creates the
// shared parent directory ("sbx.runs") when it is missing; changes nothing else.
CgroupSupport probe_cgroups();

// How one limit of the policy holds for a run on this host.
struct LimitEnforcement {
  std::string name;                    // the /limits key, e.g. "processes"
  std::optional<std::uint64_t> value;  // nullopt: the policy sets no limit
  bool enforced = false;
  bool best_effort = false;  // listed in /limits/best_effort: a run may go without it
  std::string how;  // e.g. "cgroup pids.max (every task of the run)"; or why it does not hold
};

// Pure: which of `limits` hold, and how, given the host's cgroup support, whether the caller
// is root (RLIMIT_NPROC does not bind root) and whether the run is an embedding process's
// (`run_only`: its timeout can end the run only through the run's cgroup). One entry per
// /limits key, in policy order.
std::vector<LimitEnforcement> plan_limits(const Limits& limits, const CgroupSupport& cgroups,
                                          bool root, bool run_only = false);

// Pure: an error naming every limit of `planned` that has a value, does not hold and is not
// best-effort (a run must not go ahead without a limit the policy relies on), or success.
Status check_limits_hold(const std::vector<LimitEnforcement>& planned);

// One run under limits. start() creates the run's cgroup (when the host has one and a limit
// needs it): until the run is destroyed, prepare_child() in a child joins the cgroup and sets
// the rlimits (core's spawner and backends reach it through the run's RunServices). It also starts
// the timeout watchdog. finish() is called once the command has exited: it stops the watchdog,
// kills what is left of the run and removes the cgroup, and says which limit, if any, ended the
// run.
class LimitedRun {
 public:
  // How the timeout may end the command.
  enum class Signals {
    // sbx's own process: the watchdog sends SIGTERM to sbx itself, which the spawner forwards
    // to the command, and SIGKILL after the grace period. For the CLI only: in a library every
    // concurrent command of the process would get the SIGTERM.
    kProcessWide,
    // An embedding process: at the timeout the run's cgroup is killed (SIGKILL, no grace);
    // without a cgroup the timeout is not enforced.
    kRunOnly,
  };
  // Refuses (check_limits_hold) when a limit that is not best-effort cannot hold here.
  // `cgroups`: the host's support as probed for this run (probe_cgroups()), so a run probes
  // once; without it start() probes.
  static Result<std::unique_ptr<LimitedRun>> start(
      const Limits& limits, Signals signals = Signals::kProcessWide,
      std::optional<CgroupSupport> cgroups = std::nullopt);
  virtual ~LimitedRun() = default;
  // "timeout", "memory", "processes", "cpu_seconds", "file_size_bytes", or nullopt.
  // `shell_code` is how the command ended (ExitStatus::shell_code, -1 if unknown): 128+SIGXCPU
  // and 128+SIGXFSZ name their rlimit (a sandbox's PID 1 reports a signal as that exit code).
  virtual std::optional<std::string> finish(int shell_code) = 0;
  virtual const CgroupSupport& cgroups() const = 0;
  // For a child between fork/vfork and execve: joins the run's cgroup and sets its rlimits.
  // Async-signal-safe; no memory written but the stack. 0 on success, else an errno value.
  virtual int prepare_child() const noexcept = 0;
};

}  // namespace sbx
