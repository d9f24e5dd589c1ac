#include "sbx/windows/plan_text.hpp"

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "sbx/windows/command_line.hpp"

namespace sbx::windows {
namespace {

constexpr std::string_view kCapabilityLine =
    "capability: cap:write = a random S-1-5-21-a-b-c-d SID, new for each run";
constexpr std::string_view kJobLine = "job: kill_on_job_close";

constexpr std::array<std::pair<std::string_view, SidRef>, 3> kSids = {{
    {"cap:write", SidRef::kWriteCapability},
    {"logon", SidRef::kLogon},
    {"everyone", SidRef::kEveryone},
}};
constexpr std::array<std::pair<std::string_view, AceKind>, 3> kAceKinds = {{
    {"allow-write", AceKind::kAllowWrite},
    {"deny-write", AceKind::kDenyWrite},
    {"deny-delete", AceKind::kDenyDelete},
}};

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

Error bad_line(std::string_view line, std::string_view why) {
  return Error{"windows backend: plan note '" + printable(line) + "': " + std::string(why) +
               " (the plan must come from this backend's transform)"};
}

// Splits on single spaces; "none" is the empty list.
Result<std::vector<SidRef>> parse_sids(std::string_view text, std::string_view line) {
  std::vector<SidRef> out;
  if (text == "none") return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    bool found = false;
    for (const auto& [name, sid] : kSids) {
      if (word == name) out.push_back(sid), found = true;
    }
    if (!found) return bad_line(line, "unknown SID '" + std::string(word) + "'");
    start = end + 1;
  }
  return out;
}

Status parse_flags(std::string_view text, std::string_view line, TokenPlan& token) {
  token.disable_max_privilege = token.lua_token = token.write_restricted = false;
  if (text == "none") return {};
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('|', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view flag = text.substr(start, end - start);
    if (flag == "DISABLE_MAX_PRIVILEGE") token.disable_max_privilege = true;
    else if (flag == "LUA_TOKEN") token.lua_token = true;
    else if (flag == "WRITE_RESTRICTED") token.write_restricted = true;
    else return bad_line(line, "unknown token flag '" + std::string(flag) + "'");
    start = end + 1;
  }
  return {};
}

Result<Ace> parse_ace(std::string_view text, std::string_view line) {
  const std::size_t first = text.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : text.find(' ', first + 1);
  if (second == std::string_view::npos || second + 1 >= text.size())
    return bad_line(line, "expected '<kind> <sid> <path>'");
  Ace ace;
  bool found = false;
  for (const auto& [name, kind] : kAceKinds) {
    if (text.substr(0, first) == name) ace.kind = kind, found = true;
  }
  if (!found) return bad_line(line, "unknown ACE kind");
  Result<std::vector<SidRef>> sid = parse_sids(text.substr(first + 1, second - first - 1), line);
  if (!sid.ok()) return Error{sid.error()};
  if (sid->size() != 1) return bad_line(line, "expected exactly one SID");
  ace.sid = sid->front();
  ace.path = std::string(text.substr(second + 1));
  return ace;
}

// Decodes one line into `plan`; `seen` tracks the lines that must appear exactly once.
Status decode_line(std::string_view line, WindowsPlan& plan, std::array<int, 5>& seen) {
  const auto rest = [&](std::string_view prefix) { return line.substr(prefix.size()); };
  if (line.starts_with("info: ") || line.starts_with("command_line: ")) return {};
  if (line.starts_with("token: flags ")) {
    ++seen[0];
    return parse_flags(rest("token: flags "), line, plan.token);
  }
  if (line.starts_with("token: restricting_sids ")) {
    ++seen[1];
    Result<std::vector<SidRef>> sids = parse_sids(rest("token: restricting_sids "), line);
    if (!sids.ok()) return Error{sids.error()};
    plan.token.restricting_sids = std::move(*sids);
    return {};
  }
  if (line.starts_with("token: default_dacl ")) {
    ++seen[2];
    Result<std::vector<SidRef>> sids = parse_sids(rest("token: default_dacl "), line);
    if (!sids.ok()) return Error{sids.error()};
    plan.token.default_dacl = std::move(*sids);
    return {};
  }
  if (line == kCapabilityLine) return ++seen[3], Status{};
  if (line == kJobLine) return ++seen[4], Status{};
  if (line.starts_with("create: ") && line.size() > 8) {
    plan.create_dirs.emplace_back(rest("create: "));
    return {};
  }
  if (line.starts_with("ace: ")) {
    Result<Ace> ace = parse_ace(rest("ace: "), line);
    if (!ace.ok()) return Error{ace.error()};
    plan.aces.push_back(std::move(*ace));
    return {};
  }
  return bad_line(line, "not a line this backend writes");
}

}  // namespace

std::vector<std::string> plan_to_notes(const WindowsPlan& plan) {
  std::vector<std::string> notes;
  notes.push_back("token: flags " + flags_text(plan.token));
  notes.push_back("token: restricting_sids " + sids_text(plan.token.restricting_sids));
  notes.push_back("token: default_dacl " + sids_text(plan.token.default_dacl));
  notes.emplace_back(kCapabilityLine);
  for (const std::string& dir : plan.create_dirs) notes.push_back("create: " + dir);
  for (const Ace& ace : plan.aces) {
    notes.push_back("ace: " + std::string(to_string(ace.kind)) + " " +
                    std::string(to_string(ace.sid)) + " " + ace.path);
  }
  if (plan.kill_on_job_close) notes.emplace_back(kJobLine);
  notes.push_back("command_line: " + printable(plan.command_line));
  for (const std::string& line : plan.info) notes.push_back("info: " + line);
  return notes;
}

ExecPlan to_exec_plan(const WindowsPlan& plan) {
  ExecPlan out;
  out.argv = plan.argv;
  out.env = plan.env;
  out.cwd = plan.cwd;
  out.notes = plan_to_notes(plan);
  return out;
}

Result<WindowsPlan> from_exec_plan(const ExecPlan& exec_plan) {
  WindowsPlan plan;
  plan.kill_on_job_close = false;
  std::array<int, 5> seen = {0, 0, 0, 0, 0};
  for (const std::string& line : exec_plan.notes) {
    if (Status status = decode_line(line, plan, seen); !status.ok()) return Error{status.error()};
  }
  static constexpr std::array<std::string_view, 5> kRequired = {
      "token: flags", "token: restricting_sids", "token: default_dacl", "capability:", "job:"};
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] != 1)
      return Error{"windows backend: the plan needs exactly one '" + std::string(kRequired[i]) +
                   "' note, found " + std::to_string(seen[i])};
  }
  plan.kill_on_job_close = true;
  plan.argv = exec_plan.argv;
  plan.env = exec_plan.env;
  plan.cwd = exec_plan.cwd;
  Result<std::string> line = build_command_line(plan.argv);
  if (!line.ok()) return Error{"windows backend: " + line.error()};
  plan.command_line = std::move(*line);
  // The printed command line must be the one that will run: a mismatch means tampering.
  for (const std::string& note : exec_plan.notes) {
    if (note.starts_with("command_line: ") && note != "command_line: " + printable(plan.command_line))
      return bad_line(note, "does not match the command line built from argv");
  }
  return plan;
}

}  // namespace sbx::windows
