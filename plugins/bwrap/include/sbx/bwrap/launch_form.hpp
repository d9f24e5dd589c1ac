// Which of the two launches exec() takes for a typed plan (translate.hpp, BwrapPlan), and what
// it then starts, in one place: the plan's JSON member "launch" (`sbx exec --dry-run`, `sbx
// debug`, sbx_transform; BwrapPlanDetail, plan.hpp) and the launchers (spawn.hpp) both build
// bwrap's argv and its --args block with these functions, from the typed plan and never from the
// printed argv; exec() only puts the bind sources on descriptors (bind_fds.hpp) in between. So
// what is printed is what runs, and exec() logs what it started (launch_json, at debug level)
// for anyone, the tests included, to compare.
//
//  * the direct launch (direct.hpp): network restricted or enabled, PWD at the working directory
//    in the plan's environment, and a kernel with pidfds and openat2: bwrap --args 4 -- COMMAND,
//    every bwrap option and the environment (--setenv) in the sealed --args block;
//  * the stage-2 launch (spawn.hpp) otherwise: bwrap --info-fd 3 OPTIONS -- sbx-stage2
//    --ready-fd 5 --unix-supervised [--mounts-fd 6] [--env-fd 4] ARGUMENTS -- COMMAND, the
//    environment on descriptor 4.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sbx/bwrap/direct.hpp"
#include "sbx/bwrap/translate.hpp"
#include "sbx/bwrap/unix_supervisor.hpp"

namespace sbx::bwrap {

// What the running kernel offers the launches. transform() looks it up (running_launch_host)
// and keeps it with the plan, so that the launch the plan shows is the one exec() takes.
struct LaunchHost {
  bool direct_supported = false;       // pidfds and openat2 (launch::direct_launch_supported)
  bool write_layer_supported = false;  // Landlock ABI >= stage2::kWriteLayerMinAbi
  friend bool operator==(const LaunchHost&, const LaunchHost&) = default;
};
LaunchHost running_launch_host();

enum class LaunchForm : std::uint8_t { kDirect, kStage2 };

// The direct form of `plan` on `host` (direct_plan, direct.hpp), or nullopt: the stage-2 launch.
std::optional<DirectPlan> direct_launch_of(const BwrapPlan& plan, const LaunchHost& host);

// The unix-socket supervisor's rules for `plan`: a private network namespace unless the network
// is open, the plan's unix sockets (and in proxy mode the proxy's socket first), bwrap as the
// launcher.
UnixSocketRules unix_socket_rules(const BwrapPlan& plan);

// bwrap's options in the stage-2 launch: the plan's, then "--chdir DIR".
std::vector<std::string> stage2_launch_options(const BwrapPlan& plan);

// True if bwrap's `options` mount a procfs (stage 2 can then check the mounts: --mounts-fd).
bool has_proc_mount(const std::vector<std::string>& options);

// The stage-2 launch's argv for `plan` with bwrap's `options` as they are passed (bind sources by
// path, or by descriptor at exec): {bwrap, "--info-fd", "3", options..., "--", stage2,
// "--ready-fd", "5", "--unix-supervised", ["--mounts-fd", "6" with a procfs], ["--env-fd", "4"
// with an environment], stage2_arguments(plan)..., "--", command...}. The unix sockets and the
// environment are not in it: the supervisor and descriptor 4 carry them.
std::vector<std::string> stage2_launch_argv(const BwrapPlan& plan,
                                            const std::vector<std::string>& options);

// One launch as it is started: bwrap's argv, the items of its --args block (direct launch; empty
// for the stage-2 launch) and the environment handed over (KEY=VALUE: --setenv in the block, or
// the entries on descriptor 4).
struct Launch {
  LaunchForm form = LaunchForm::kStage2;
  std::vector<std::string> argv;
  std::vector<std::string> args;
  std::vector<std::string> env;
};

// The launch exec() takes for `plan` on `host`, bind sources by path. Error only when the direct
// launch's --args block cannot hold the environment (direct_args_block); exec() then fails the
// same way.
Result<Launch> planned_launch(const BwrapPlan& plan, const LaunchHost& host);

// A launch as one JSON object's text: {"form": "direct"|"stage2", "argv": [...], "args": [...],
// "environment": [NAME...]}. The environment's values are left out (the plan's "env" and argv
// show them; a log line must not, the proxy's credential is one), and so are the --setenv
// triples of the --args block, whose names "environment" lists in order. With `bind_sources`
// (exec's record) one more member, "bind_sources": {"FD": "PATH", ...}, names the path each
// --bind-fd/--ro-bind-fd descriptor was opened from.
std::string launch_json(const Launch& launch,
                        const std::vector<std::pair<int, std::string>>& bind_sources = {});

}  // namespace sbx::bwrap
