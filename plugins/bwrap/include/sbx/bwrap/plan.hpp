// From a translation to the ExecPlan transform() returns, and from a plan's typed host paths to
// what exec() must do about them. Pure: what touches the host (the Landlock ABI, the state
// directory) is looked up by the module and passed in, so tests can pin both directions.
// hold_host_paths() is the one step that touches the host: it is exec()'s use of the plan.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sbx/bwrap/host.hpp"
#include "sbx/bwrap/launch_form.hpp"
#include "sbx/bwrap/translate.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::bwrap {

// What transform() knows about the host besides the translation.
struct PlanContext {
  // The private state directory, or "" when there is none (then `no_state_dir_reason` says why).
  std::string state_dir;
  std::string no_state_dir_reason;
  // A note on what the kernel cannot scope with the network enabled, if anything.
  std::optional<std::string> network_note;
  // A note on what stays writable without sbx-stage2's write layer (Landlock ABI < 2), if so.
  std::optional<std::string> write_layer_note;
  // What the kernel offers the launches (running_launch_host): decides the launch exec() takes.
  LaunchHost launch_host;
};

// The backend's plan detail (sbx/sdk/types.hpp, PlanDetail): the typed plan and the host it was
// made for, handed back unchanged to exec(), which launches from them (launch_form.hpp). Its
// report_json() gives the plan's JSON the member "launch": what exec() will start
// (planned_launch, launch_json).
class BwrapPlanDetail final : public PlanDetail {
 public:
  BwrapPlanDetail(BwrapPlan plan, LaunchHost host) : plan_(std::move(plan)), host_(host) {}
  const BwrapPlan& plan() const { return plan_; }
  const LaunchHost& host() const { return host_; }
  std::string report_json() const override;

 private:
  BwrapPlan plan_;
  LaunchHost host_;
};

// The bwrap detail of `plan`, or nullptr when it has none (a plan this backend did not make).
const BwrapPlanDetail* bwrap_detail_of(const ExecPlan& plan);

// The ExecPlan of a typed plan: the printed argv (stage2_form), an empty environment (bwrap's
// own: the command's travels in the typed plan), `cwd` (where bwrap starts), the detail.
ExecPlan exec_plan_of(BwrapPlan plan, const LaunchHost& host, std::string cwd);

// The plan for a translation: exec_plan_of() for its typed plan on context.launch_host, the notes
// for people, and in host_paths the mount points bwrap will create (created), the existing
// protected paths the run relies on (kept) and the state directory.
ExecPlan make_plan(const TransformRequest& request, Translation translation,
                   const PlanContext& context);

// True if exec() must take the mount-point registry before the run: there is a state
// directory to keep it in and the plan creates or keeps a host path. Without a state directory
// nothing is recorded, so nothing is removed afterwards (a created path stays on the host).
bool needs_mount_registry(const PlanHostPaths& paths);

// What exec() does with a plan's host paths before the run: when needs_mount_registry(), takes
// the registry's locks on every created and kept path and makes the created ones (recorded, so
// registry.release_and_cleanup() removes them after the run); otherwise does nothing.
// Without a state directory it makes the created ones unrecorded and lists those it made in
// `unrecorded` (they stay on the host: exec() warns, see unrecorded_mount_points_warning).
Status hold_host_paths(MountRegistry& registry, const PlanHostPaths& paths,
                       std::vector<std::string>* unrecorded = nullptr);

// The one stderr warning of a run that made mount points it could not record (no usable state
// directory: `plan`'s note says why, e.g. a sandboxed `chmod 777 ~/.cache`), naming them and
// what to do; "" when `made` is empty.
std::string unrecorded_mount_points_warning(const ExecPlan& plan,
                                            const std::vector<std::string>& made);

}  // namespace sbx::bwrap
