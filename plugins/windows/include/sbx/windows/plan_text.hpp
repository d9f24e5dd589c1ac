// The plan inside an ExecPlan. The token and ACL part of the plan travels to exec() in the
// plan's detail, a WindowsPlanDetail that only this backend reads (core hands it back
// unchanged); argv, env and cwd are the ExecPlan's own, and the command line is recomputed from
// argv. The notes describe the plan
// for a person (`sbx debug windows` prints them), one line per step; no code reads them back:
//   token: flags <FLAG>[|<FLAG>...]|none      FLAG =
//   DISABLE_MAX_PRIVILEGE|LUA_TOKEN|WRITE_RESTRICTED token: restricting_sids <sid> ...|none    sid
//   = cap:write | logon | everyone token: default_dacl <sid> ...|none capability: cap:write =
//   <fixed explanation> create: <windows path> ace: <allow-write|deny-write|deny-delete> <sid>
//   <windows path> job: kill_on_job_close job: ui_limits <limit> ... desktop: <window
//   station>\<desktop> command_line: <printable command line> info: <free text>
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "sbx/windows/plan.hpp"
#include "sbx/windows/plan_types.hpp"

namespace sbx::windows {

// The note lines for a plan, in a fixed order (text for people).
std::vector<std::string> plan_to_notes(const WindowsPlan& plan);

// The backend's plan detail: the token and ACL part, typed. report_json() gives the plan's JSON
// its "windows" member (token, create_dirs, aces, kill_on_job_close).
class WindowsPlanDetail final : public PlanDetail {
 public:
  explicit WindowsPlanDetail(PlanWindows windows) : windows_(std::move(windows)) {}
  const PlanWindows& windows() const { return windows_; }
  std::string report_json() const override;

 private:
  PlanWindows windows_;
};

// The Windows part of `exec_plan` (its WindowsPlanDetail), or nullptr when it has none.
const PlanWindows* windows_part(const ExecPlan& exec_plan);

// The ExecPlan the backend's transform() returns: the token and ACL part in its detail, its
// description in the notes.
ExecPlan to_exec_plan(const WindowsPlan& plan);

// Rebuilds the plan from the typed fields of an ExecPlan produced by to_exec_plan(); the
// notes are ignored. A plan without a Windows part, or one whose job would not kill the process
// tree, is an Error (fail closed: never run a partial plan). check_runnable() checks the rest
// before anything runs.
Result<WindowsPlan> from_exec_plan(const ExecPlan& exec_plan);

}  // namespace sbx::windows
