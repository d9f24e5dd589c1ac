// The plan as ExecPlan notes. Backend::exec only receives the ExecPlan, so the token and ACL
// part of the plan travels in its notes as one line each; the command line is recomputed from
// argv, and env and cwd are the ExecPlan's own. The same lines are what `sbx debug windows`
// prints, so a person reads exactly what the executor will do.
//
// Line grammar (every line but "info:" and "command_line:" is parsed back, strictly):
//   token: flags <FLAG>[|<FLAG>...]           FLAG = DISABLE_MAX_PRIVILEGE|LUA_TOKEN|WRITE_RESTRICTED
//   token: restricting_sids <sid> ...|none    sid  = cap:write | logon | everyone
//   token: default_dacl <sid> ...|none
//   capability: cap:write = <fixed explanation>
//   create: <windows path>
//   ace: <allow-write|deny-write|deny-delete> <sid> <windows path>
//   job: kill_on_job_close
//   command_line: <printable command line>     (checked against argv on decode)
//   info: <free text>
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "sbx/windows/plan.hpp"

namespace sbx::windows {

// The note lines for a plan, in a fixed order.
std::vector<std::string> plan_to_notes(const WindowsPlan& plan);

// The ExecPlan the backend's transform() returns.
ExecPlan to_exec_plan(const WindowsPlan& plan);

// Rebuilds the plan from an ExecPlan produced by to_exec_plan(). Any unknown, malformed,
// missing or duplicated line is an Error naming it (fail closed: never run a partial plan).
Result<WindowsPlan> from_exec_plan(const ExecPlan& exec_plan);

}  // namespace sbx::windows
