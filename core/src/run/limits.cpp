// Resource limits of one run (see run_limits.hpp for what holds and how).
#include <algorithm>
#include <string>

#include "sbx/core/run_limits.hpp"

namespace sbx {
namespace {

constexpr std::string_view kNotLimited = "not limited by sbx: the caller's own limit is inherited";

std::string seconds(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " second" : " seconds");
}

LimitEnforcement processes_enforcement(std::optional<std::uint64_t> value,
                                       const CgroupSupport& cgroups, bool root) {
  LimitEnforcement out{"processes", value, false, false, std::string(kNotLimited)};
  if (!value) return out;
  if (cgroups.available) {
    out.enforced = true;
    out.how = "cgroup pids.max (" + cgroups.kind + "): every task of the run counts, root's too";
    if (!root) out.how += "; also RLIMIT_NPROC";
    return out;
  }
  if (root) {
    // The kernel skips the RLIMIT_NPROC check for root (and CAP_SYS_RESOURCE/CAP_SYS_ADMIN):
    // setting it would be a limit on paper only.
    out.how =
        "NOT ENFORCED: sbx runs as root, whom RLIMIT_NPROC does not bind, and no cgroup "
        "is available (" +
        cgroups.reason + "); a fork bomb can use every PID of the host";
    return out;
  }
  out.enforced = true;
  out.how =
      "RLIMIT_NPROC only: it counts every process of your user on the host, not just "
      "this run's (no cgroup: " +
      cgroups.reason + ")";
  return out;
}

LimitEnforcement rlimit_enforcement(std::string name, std::optional<std::uint64_t> value,
                                    std::string how) {
  LimitEnforcement out{std::move(name), value, value.has_value(), false, std::move(how)};
  if (!value) out.how = std::string(kNotLimited);
  return out;
}

LimitEnforcement memory_enforcement(std::optional<std::uint64_t> value,
                                    const CgroupSupport& cgroups) {
  LimitEnforcement out{"memory_bytes", value, false, false, std::string(kNotLimited)};
  if (!value) return out;
  if (cgroups.available && cgroups.memory) {
    out.enforced = true;
    out.how =
        "cgroup memory.max: the memory of the whole run (the kernel's OOM killer acts "
        "inside the run at the limit)";
    return out;
  }
  out.how = std::string("NOT ENFORCED: no cgroup v2 memory controller for sbx here (") +
            (cgroups.available ? "only " + cgroups.kind : cgroups.reason) +
            "); address_space_bytes bounds each process instead";
  return out;
}

LimitEnforcement timeout_enforcement(const Limits& limits, const CgroupSupport& cgroups,
                                     bool run_only) {
  // There is no caller's limit to inherit for wall-clock time: unset means the run may take as
  // long as the command does.
  LimitEnforcement out{"timeout_seconds", limits.timeout_seconds, false, false,
                       "not limited: the run may take as long as the command does"};
  if (!limits.timeout_seconds) return out;
  if (run_only && !cgroups.available) {
    // LimitedRun::Signals::kRunOnly: a signal to the embedding process would reach its other
    // commands, and without a cgroup there is nothing else that ends exactly this run.
    out.how =
        "NOT ENFORCED: an embedding process's run is ended only through its cgroup, and "
        "none is available (" +
        cgroups.reason + ")";
    return out;
  }
  out.enforced = true;
  out.how = "sbx's watchdog: SIGTERM to the command after " + seconds(*limits.timeout_seconds) +
            ", SIGKILL " + seconds(limits.timeout_grace_seconds) + " later to " +
            (cgroups.available ? "every process of the run (its cgroup)"
                               : "the sandbox's first process, which takes the sandbox with it");
  return out;
}

std::vector<LimitEnforcement> plan_on_linux(const Limits& limits, const CgroupSupport& cgroups,
                                            bool root, bool run_only) {
  std::vector<LimitEnforcement> out;
  out.push_back(processes_enforcement(limits.processes, cgroups, root));
  out.push_back(rlimit_enforcement("open_files", limits.open_files,
                                   "RLIMIT_NOFILE: descriptors per process"));
  out.push_back(rlimit_enforcement(
      "file_size_bytes", limits.file_size_bytes,
      "RLIMIT_FSIZE: writing past it fails with EFBIG after SIGXFSZ (per file)"));
  out.push_back(rlimit_enforcement("address_space_bytes", limits.address_space_bytes,
                                   "RLIMIT_AS: virtual memory per process"));
  out.push_back(memory_enforcement(limits.memory_bytes, cgroups));
  out.push_back(rlimit_enforcement(
      "cpu_seconds", limits.cpu_seconds,
      "RLIMIT_CPU: CPU time per process (SIGXCPU at the limit, SIGKILL a second later)"));
  out.push_back(timeout_enforcement(limits, cgroups, run_only));
  return out;
}

}  // namespace

std::vector<LimitEnforcement> plan_limits(const Limits& limits, const CgroupSupport& cgroups,
                                          bool root, bool run_only) {
  std::vector<LimitEnforcement> out = plan_on_linux(limits, cgroups, root, run_only);
#ifndef __linux__
  // Elsewhere sbx sets neither rlimits nor a cgroup yet (limits_os.cpp).
  for (LimitEnforcement& limit : out) {
    limit.enforced = false;
    if (limit.value) limit.how = "NOT ENFORCED: sbx applies resource limits on Linux only";
  }
#endif
  for (LimitEnforcement& limit : out) {
    limit.best_effort = std::find(limits.best_effort.begin(), limits.best_effort.end(),
                                  limit.name) != limits.best_effort.end();
    if (!limit.value || limit.enforced) continue;
    limit.how += limit.best_effort ? "; best-effort: the run goes ahead without it"
                                   : "; the run is refused (exit 125) unless the policy lists "
                                     "it in limits.best_effort";
  }
  return out;
}

Status check_limits_hold(const std::vector<LimitEnforcement>& planned) {
  std::string names;
  std::string why;
  for (const LimitEnforcement& limit : planned) {
    if (!limit.value || limit.enforced || limit.best_effort) continue;
    names += (names.empty() ? "" : ", ") + limit.name;
    std::string how = limit.how.substr(0, limit.how.find("; the run is refused"));
    constexpr std::string_view kPrefix = "NOT ENFORCED: ";
    if (how.rfind(kPrefix, 0) == 0) how.erase(0, kPrefix.size());
    why += "; " + limit.name + ": " + how;
  }
  if (names.empty()) return {};
  return Error{"the policy's limit" + std::string(names.find(',') == std::string::npos ? "" : "s") +
                   " " + names + " cannot be enforced on this host" + why +
                   ". Remove it, or list it in \"limits\": {\"best_effort\": [...]} to run without "
                   "it where it cannot hold (`sbx explain` shows how each limit holds here)",
               ErrorKind::unavailable};
}

}  // namespace sbx
