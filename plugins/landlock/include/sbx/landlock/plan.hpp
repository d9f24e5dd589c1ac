// From the typed plan (translate.hpp, LandlockPlan) to what exec() runs: the plan's detail that
// carries it from transform() to exec() unchanged, and the launcher's launch
// (linux/landlock/landlock_launch.hpp) made from its fields, never from the printed argv. The
// printed argv (plan_argv) is what `sbx-stage2 --landlock` runs by hand with the same launcher;
// launch_of(plan) is, field for field, what that parses it into (tested), so the plan printed is
// the plan run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "landlock_launch.hpp"
#include "sbx/landlock/translate.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::landlock {

// The backend's plan detail (sbx/sdk/types.hpp, PlanDetail): the typed plan. Adds nothing to the
// plan's JSON: its argv shows the whole launch already.
class LandlockPlanDetail final : public PlanDetail {
 public:
  explicit LandlockPlanDetail(LandlockPlan plan) : plan_(std::move(plan)) {}
  const LandlockPlan& plan() const { return plan_; }

 private:
  LandlockPlan plan_;
};

// The typed plan of `plan`, or nullptr when it has none (a plan this backend did not make).
const LandlockPlan* landlock_plan_of(const ExecPlan& plan);

// The launcher's launch for `plan`: the rules by kind, the network filter and its TCP rules,
// the command, the environment passed to the command (--env-environ). Error, as
// parse_landlock_argv gives one, for a rule of an unknown kind, a relative command or a proxy
// without its port.
Result<stage2::LandlockLaunch> launch_of(const LandlockPlan& plan);

// What exec() started, as one JSON object's text, for its debug log line: {"argv":
// plan_argv(stage2, plan), "launch": {the launch's fields}, "environment": [NAME...]}. The
// environment's values are left out (the plan's "env" shows them; a log line must not, the
// proxy's credential is one).
std::string launch_record_json(const std::string& stage2_path, const LandlockPlan& plan,
                               const stage2::LandlockLaunch& launch,
                               const std::vector<std::string>& env);

}  // namespace sbx::landlock
