// The plan inside an ExecPlan. Backend::exec only receives the ExecPlan, so the token and ACL
// part of the plan travels in its typed field ExecPlan::windows; argv, env and cwd are the
// ExecPlan's own, and the command line is recomputed from argv. The notes describe the plan
// for a person (`sbx debug windows` prints them), one line per step; no code reads them back:
//   token: flags <FLAG>[|<FLAG>...]|none      FLAG = DISABLE_MAX_PRIVILEGE|LUA_TOKEN|WRITE_RESTRICTED
//   token: restricting_sids <sid> ...|none    sid  = cap:write | logon | everyone
//   token: default_dacl <sid> ...|none
//   capability: cap:write = <fixed explanation>
//   create: <windows path>
//   ace: <allow-write|deny-write|deny-delete> <sid> <windows path>
//   job: kill_on_job_close
//   job: ui_limits <limit> ...
//   desktop: <window station>\<desktop>
//   command_line: <printable command line>
//   info: <free text>
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "sbx/windows/plan.hpp"

namespace sbx::windows {

// The note lines for a plan, in a fixed order (text for people).
std::vector<std::string> plan_to_notes(const WindowsPlan& plan);

// The ExecPlan the backend's transform() returns: the plan in ExecPlan::windows, its
// description in the notes.
ExecPlan to_exec_plan(const WindowsPlan& plan);

// Rebuilds the plan from the typed fields of an ExecPlan produced by to_exec_plan(); the
// notes are ignored. A plan without a Windows part, or one whose job would not kill the process
// tree, is an Error (fail closed: never run a partial plan). check_runnable() checks the rest
// before anything runs.
Result<WindowsPlan> from_exec_plan(const ExecPlan& exec_plan);

}  // namespace sbx::windows
