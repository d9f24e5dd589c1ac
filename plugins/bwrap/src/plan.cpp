#include "sbx/bwrap/plan.hpp"

#include <algorithm>
#include <utility>

namespace sbx::bwrap {

std::string BwrapPlanDetail::report_json() const {
  Result<Launch> launch = planned_launch(plan_, host_);
  // An environment the --args block cannot hold: exec() refuses the plan with that error, and
  // the plan shows no launch.
  if (!launch.ok()) return {};
  return "{\"launch\":" + launch_json(*launch) + "}";
}

const BwrapPlanDetail* bwrap_detail_of(const ExecPlan& plan) {
  // Only this backend's own detail class: a plan made elsewhere has none (fail closed).
  return dynamic_cast<const BwrapPlanDetail*>(plan.detail.get());
}

ExecPlan exec_plan_of(BwrapPlan plan, const LaunchHost& host, std::string cwd) {
  ExecPlan out;
  out.argv = stage2_form(plan);
  out.cwd = std::move(cwd);
  // bwrap and sbx-stage2 run with an empty environment; the command's is in the typed plan.
  out.env = {};
  out.detail = std::make_shared<const BwrapPlanDetail>(std::move(plan), host);
  return out;
}

ExecPlan make_plan(const TransformRequest& request, Translation translation,
                   const PlanContext& context) {
  ExecPlan plan = exec_plan_of(std::move(translation.plan), context.launch_host, request.cwd);
  plan.notes = std::move(translation.notes);
  plan.host_paths.created = std::move(translation.synthetic_mount_points);
  // An existing protected path may be another run's mount point: holding it keeps that run's
  // cleanup from removing it while this sandbox has it mounted over. Removing it would detach
  // this sandbox's mask (the pause-point check then fails the run) or, before bwrap ran, leave
  // bwrap to make an unrecorded empty file. Whether it exists is what the policy's resolution
  // saw, and the translation looked again later: a socket that appeared in between (another
  // run's mount point, made meanwhile) is masked by the translation and held too.
  for (const ProtectedPath& p : request.policy.protected_paths) {
    if (p.exists) plan.host_paths.kept.push_back(p.path);
  }
  for (std::string& path : translation.masked_existing) {
    if (std::find(plan.host_paths.kept.begin(), plan.host_paths.kept.end(), path) ==
        plan.host_paths.kept.end())
      plan.host_paths.kept.push_back(std::move(path));
  }
  plan.host_paths.state_dir = context.state_dir;
  if (context.network_note) plan.notes.push_back(*context.network_note);
  if (context.write_layer_note) plan.notes.push_back(*context.write_layer_note);
  if (context.state_dir.empty() && !plan.host_paths.created.empty()) {
    plan.notes.push_back("no private state directory (" + context.no_state_dir_reason +
                         "): mount points made for missing protected names stay on the host");
  }
  return plan;
}

bool needs_mount_registry(const PlanHostPaths& paths) {
  return !paths.state_dir.empty() && (!paths.created.empty() || !paths.kept.empty());
}

Status hold_host_paths(MountRegistry& registry, const PlanHostPaths& paths,
                       std::vector<std::string>* unrecorded) {
  if (paths.state_dir.empty()) {
    for (const std::string& path : paths.created) {
      if (make_unrecorded_mount_point(path) && unrecorded) unrecorded->push_back(path);
    }
    return {};
  }
  if (!needs_mount_registry(paths)) return {};
  return registry.acquire(paths.state_dir, paths.created, paths.kept);
}

std::string unrecorded_mount_points_warning(const ExecPlan& plan,
                                            const std::vector<std::string>& made) {
  if (made.empty()) return "";
  // make_plan's note carries the state directory's error (ensure_state_dir).
  const std::string prefix = "no private state directory (";
  std::string why = "no private state directory";
  for (const std::string& note : plan.notes) {
    if (note.rfind(prefix, 0) == 0) why = note.substr(0, note.find("): ") + 1);
  }
  std::string names;
  for (const std::string& path : made) names += (names.empty() ? "'" : ", '") + path + "'";
  return why +
         ": the mount points this run made for missing protected names cannot be recorded "
         "and stay on the host: " +
         names +
         ". Repair the state directory as its error says (a sandboxed command with the home "
         "directory writable may have changed its mode: chmod 700 ~/.cache ~/.cache/sbx "
         "~/.cache/sbx/bwrap, or set XDG_RUNTIME_DIR to a private directory of this user), then "
         "remove them (rm)";
}

}  // namespace sbx::bwrap
