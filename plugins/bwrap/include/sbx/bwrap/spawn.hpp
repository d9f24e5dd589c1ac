// The bwrap backend's own spawner (the plugin may not link libsbx, whose spawner it replaces).
//
// Two launches. The direct one (direct.hpp: sbx -> bwrap -> command, no sbx-stage2) for plans
// in network modes restricted and enabled whose environment has PWD at the working directory;
// the stage-2 launch below for every other plan (network mode proxy, the relay) and on kernels
// without pidfds or openat2. The stage-2 launch:
//
// Same contract as core's host spawn (absolute execve, exactly plan.env, every fd but 0-2
// closed, plan.cwd, 125/126/127 for sbx/exec failures), plus what core cannot do for bwrap:
// bwrap is started with "--info-fd 3" and the command's environment on fd 4
// (stage2_launch_argv, launch_form.hpp), bind sources as checked descriptors (bind_fds.hpp),
// stage 2's ready pipe on fd 5 and its mount list on fd 6; the pid of the sandbox's PID 1
// (sbx-stage2 --as-pid-1) is read from bwrap's JSON, and signals sent to sbx are forwarded to that
// process instead of to bwrap (which would die of them and take the sandbox down with
// --die-with-parent). When bwrap ends before stage 2 wrote its ready byte, the result is 125
// (bwrap's own failure).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/bwrap/unix_supervisor.hpp"
#include "sbx/sdk/backend.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::bwrap {

// The descriptor number bwrap's --info-fd names in the bwrap process.
inline constexpr int kInfoFd = 3;
// The descriptor holding the command's environment for sbx-stage2 (--env-fd): bwrap passes it
// on into the sandbox, stage 2 reads and closes it before anything else runs.
inline constexpr int kEnvFd = 4;
// The write end of the ready pipe for sbx-stage2 (--ready-fd): stage 2 writes one byte as its
// first act, so sbx can tell bwrap's own failures (no byte) from the command's exit status.
inline constexpr int kReadyFd = 5;
// The planned mounts for sbx-stage2 to verify (--mounts-fd; plugins/bwrap/checks/bwrap_checks.hpp).
inline constexpr int kMountsFd = 6;

// The "child-pid" member of bwrap's --info-fd JSON, or nullopt if absent or malformed.
std::optional<pid_t> parse_child_pid(std::string_view info);

// Runs bwrap per the plan and waits for it; see the file comment. The launch comes from the
// plan's typed detail (plan.hpp, BwrapPlanDetail; launch_form.hpp), never from its printed argv:
// a plan without it is refused. The run's child hook (its resource limits) runs in bwrap's
// process right before execve; if it fails, bwrap does not run and the result is 125 with a
// message. `refusals`, when given, receives what the unix-socket supervisor refused during the
// run, once the sandbox has ended. `launched`, when given, receives what was started
// (launch_json with the bind sources), before bwrap runs. The run is told run_started() once
// bwrap runs and the unix-socket supervisor is attached, before sbx waits for the sandbox (its
// work alongside the run then overlaps bwrap's set-up).
Result<ExitStatus> spawn_bwrap(const ExecPlan& plan, const RunContext& run = RunContext(nullptr),
                               std::vector<UnixRefusal>* refusals = nullptr,
                               std::string* launched = nullptr);

}  // namespace sbx::bwrap
