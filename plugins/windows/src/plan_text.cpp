#include "sbx/windows/plan_text.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sbx/sdk/plan_json.hpp"
#include "sbx/windows/command_line.hpp"

namespace sbx::windows {
namespace {

std::string flags_text(const TokenPlan& token) {
  std::string out;
  const auto add = [&](bool on, std::string_view name) {
    if (!on) return;
    if (!out.empty()) out += '|';
    out += name;
  };
  add(token.disable_max_privilege, "DISABLE_MAX_PRIVILEGE");
  add(token.lua_token, "LUA_TOKEN");
  add(token.write_restricted, "WRITE_RESTRICTED");
  return out.empty() ? "none" : out;
}

std::string sids_text(const std::vector<SidRef>& sids) {
  if (sids.empty()) return "none";
  std::string out;
  for (SidRef sid : sids) {
    if (!out.empty()) out += ' ';
    out += to_string(sid);
  }
  return out;
}

std::string json_sids(const std::vector<SidRef>& sids) {
  std::string out = "[";
  for (std::size_t i = 0; i < sids.size(); ++i)
    out += (i != 0 ? "," : "") + plan_json::string(to_string(sids[i]));
  return out + "]";
}

Error not_from_transform(std::string_view why) {
  return Error{"windows backend: " + std::string(why) +
               " (the plan must come from this backend's transform)"};
}

}  // namespace

std::vector<std::string> plan_to_notes(const WindowsPlan& plan) {
  std::vector<std::string> notes;
  notes.push_back("token: flags " + flags_text(plan.token));
  notes.push_back("token: restricting_sids " + sids_text(plan.token.restricting_sids));
  notes.push_back("token: default_dacl " + sids_text(plan.token.default_dacl));
  notes.emplace_back(
      "capability: cap:write = S-1-5-21-a-b-c-d derived from the user's SID and "
      "the ACEs below; runs of the same plan reuse it and find its ACEs in place");
  for (const std::string& dir : plan.create_dirs) notes.push_back("create: " + dir);
  for (const Ace& ace : plan.aces) {
    notes.push_back("ace: " + std::string(to_string(ace.kind)) + " " +
                    std::string(to_string(ace.sid)) + " " + ace.path);
  }
  if (plan.kill_on_job_close) notes.emplace_back("job: kill_on_job_close");
  if (plan.job_ui_limits)
    notes.emplace_back(
        "job: ui_limits handles clipboard globalatoms desktop displaysettings "
        "systemparameters exitwindows");
  notes.push_back("desktop: " + printable(plan.desktop));
  notes.push_back("command_line: " + printable(plan.command_line));
  for (const std::string& line : plan.info) notes.push_back("info: " + line);
  return notes;
}

std::string WindowsPlanDetail::report_json() const {
  const TokenPlan& token = windows_.token;
  std::string aces = "[";
  for (std::size_t i = 0; i < windows_.aces.size(); ++i) {
    const Ace& ace = windows_.aces[i];
    aces += std::string(i != 0 ? "," : "") + "{\"kind\":" + plan_json::string(to_string(ace.kind)) +
            ",\"sid\":" + plan_json::string(to_string(ace.sid)) +
            ",\"path\":" + plan_json::string(ace.path) + "}";
  }
  aces += "]";
  return "{\"windows\":{\"token\":{\"disable_max_privilege\":" +
         plan_json::boolean(token.disable_max_privilege) +
         ",\"lua_token\":" + plan_json::boolean(token.lua_token) +
         ",\"write_restricted\":" + plan_json::boolean(token.write_restricted) +
         ",\"restricting_sids\":" + json_sids(token.restricting_sids) +
         ",\"default_dacl\":" + json_sids(token.default_dacl) +
         "},\"create_dirs\":" + plan_json::strings(windows_.create_dirs) + ",\"aces\":" + aces +
         ",\"kill_on_job_close\":" + plan_json::boolean(windows_.kill_on_job_close) + "}}";
}

const PlanWindows* windows_part(const ExecPlan& exec_plan) {
  // Only this backend's own detail class: a plan made elsewhere has none (fail closed).
  const auto* detail = dynamic_cast<const WindowsPlanDetail*>(exec_plan.detail.get());
  return detail != nullptr ? &detail->windows() : nullptr;
}

ExecPlan to_exec_plan(const WindowsPlan& plan) {
  ExecPlan out;
  out.argv = plan.argv;
  out.env = plan.env;
  out.cwd = plan.cwd;
  out.notes = plan_to_notes(plan);
  PlanWindows windows;
  windows.token = plan.token;
  windows.create_dirs = plan.create_dirs;
  windows.aces = plan.aces;
  windows.kill_on_job_close = plan.kill_on_job_close;
  out.detail = std::make_shared<const WindowsPlanDetail>(std::move(windows));
  return out;
}

Result<WindowsPlan> from_exec_plan(const ExecPlan& exec_plan) {
  const PlanWindows* part = windows_part(exec_plan);
  // Every plan this backend makes drops privileges, so a missing or empty Windows part means
  // the plan was made elsewhere (another backend).
  if (part == nullptr || *part == PlanWindows{})
    return not_from_transform("the plan has no Windows part");
  const PlanWindows& typed = *part;
  // The job is what takes the whole process tree down with the run; never run without it.
  if (!typed.kill_on_job_close)
    return not_from_transform("the plan's job does not kill the process tree on close");
  WindowsPlan plan;
  plan.token = typed.token;
  plan.create_dirs = typed.create_dirs;
  plan.aces = typed.aces;
  plan.kill_on_job_close = typed.kill_on_job_close;
  // The backend always sets these two; they are not in PlanWindows.
  plan.desktop = std::string(kDesktop);
  plan.job_ui_limits = true;
  plan.argv = exec_plan.argv;
  plan.env = exec_plan.env;
  plan.cwd = exec_plan.cwd;
  Result<std::string> line = build_command_line(plan.argv);
  if (!line.ok()) return line.failure().prefixed("windows backend: ");
  plan.command_line = std::move(*line);
  return plan;
}

}  // namespace sbx::windows
