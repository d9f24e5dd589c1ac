#include "sbx/windows/plan.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "sbx/windows/command_line.hpp"
#include "sbx/windows/identity.hpp"
#include "sbx/windows/win_path.hpp"

namespace sbx::windows {
namespace {

constexpr std::string_view kWho = "windows backend: ";

std::string rule_text(const PathRule& rule) {
  const char* access = rule.access == Access::kRead    ? "read"
                       : rule.access == Access::kWrite ? "write"
                                                       : "deny";
  return "{\"path\": \"" + rule.path + "\", \"access\": \"" + access + "\"}";
}

std::size_t depth(std::string_view path) {
  return static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

// The parent of a normalised absolute path ("/" and "X:/" have none: returns them unchanged).
std::string parent_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || path.size() <= 1) return std::string(path);
  if (slash == 0) return "/";
  if (slash == 2 && path[1] == ':') return std::string(path.substr(0, 3));
  return std::string(path.substr(0, slash));
}

// True for "/", "X:/" and "//server/share": granting write there rewrites a whole volume.
bool is_volume_root(std::string_view path) {
  if (path == "/") return true;
  if (path.size() == 3 && path[1] == ':' && path[2] == '/') return true;
  return path.starts_with("//") && std::count(path.begin() + 2, path.end(), '/') <= 1;
}

// The most specific rule for `path`, excluding a rule on `path` itself when `strict`.
const PathRule* nearest_rule(const ResolvedPolicy& policy, std::string_view path, bool strict) {
  const PathRule* best = nullptr;
  for (const PathRule& rule : policy.rules) {
    if (strict && rule.path == path) continue;
    if (path_is_within(path, rule.path) &&
        (best == nullptr || rule.path.size() > best->path.size()))
      best = &rule;
  }
  return best;
}

// The least specific write rule that covers `path`: every directory from it down can be
// renamed by the command unless we say otherwise.
const PathRule* outermost_write_rule(const ResolvedPolicy& policy, std::string_view path) {
  const PathRule* best = nullptr;
  for (const PathRule& rule : policy.rules) {
    if (rule.access == Access::kWrite && path_is_within(path, rule.path) &&
        (best == nullptr || rule.path.size() < best->path.size()))
      best = &rule;
  }
  return best;
}

// Refuses, naming the rule, everything a write-restricted token cannot enforce.
Status check_enforceable(const ResolvedPolicy& policy) {
  if (policy.network.mode != NetworkMode::kEnabled) {
    const char* mode = policy.network.mode == NetworkMode::kProxy ? "proxy" : "restricted";
    return Error{std::string(kWho) + "cannot enforce network.mode=" + mode +
                 ": a restricted token does not limit sockets and this backend has no firewall "
                 "component and no AppContainer yet (the probe's network_restriction check says "
                 "which would apply here); use --network enabled, or a backend that blocks the "
                 "network"};
  }
  if (policy.filesystem_kind != FilesystemKind::kRestricted) return {};
  if (reads_restricted(policy))
    return Error{std::string(kWho) +
                 "cannot enforce restricted reads (no rule grants read on "
                 "'/'): a write-restricted token reads with the user's own rights; grant ':root' "
                 "read, or use a backend with read restriction"};
  for (const PathRule& rule : policy.rules) {
    if (rule.access == Access::kDeny)
      return Error{std::string(kWho) + "cannot enforce rule " + rule_text(rule) +
                   ": a write-restricted token cannot deny reading; remove the rule, or use a "
                   "backend with read carve-outs"};
    if (rule.access == Access::kWrite && is_volume_root(rule.path))
      return Error{std::string(kWho) + "refusing rule " + rule_text(rule) +
                   ": it would rewrite "
                   "the ACL of a whole volume; use filesystem kind 'unrestricted' instead"};
  }
  if (!policy.deny_globs.empty())
    return Error{std::string(kWho) + "cannot enforce deny glob '" + policy.deny_globs.front() +
                 "': a write-restricted token cannot deny reading; remove it, or use a backend "
                 "with deny globs"};
  return {};
}

// Accumulates the filesystem part of the plan in generic (forward-slash) paths.
class FilesystemPlanner {
 public:
  explicit FilesystemPlanner(const ResolvedPolicy& policy) : policy_(policy) {}

  void plan() {
    for (const ProtectedPath& item : policy_.protected_paths) plan_protected(item);
    for (const PathRule& rule : policy_.rules) {
      if (rule.access == Access::kRead) plan_read_carveout(rule);
    }
    for (const PathRule& rule : policy_.rules) {
      if (rule.access == Access::kWrite) plan_writable_root(rule);
    }
  }

  std::vector<std::string> info;
  std::set<std::string> creates;
  std::map<AceKind, std::set<std::string>> aces;

 private:
  // A protected name must stay read-only and, when missing, must not become creatable.
  void plan_protected(const ProtectedPath& item) {
    if (rule_access(policy_, item.path) != Access::kWrite) {
      info.push_back("protected path " + item.path + " is not writable under the rules: no ACE");
      return;
    }
    protected_.push_back(item.path);
    if (!item.exists) creates.insert(item.path);
    deny_write_with_ancestors(item.path);
  }

  // A read rule directly inside a writable area is a read-only carve-out.
  void plan_read_carveout(const PathRule& rule) {
    const PathRule* parent = nearest_rule(policy_, rule.path, /*strict=*/true);
    if (parent == nullptr || parent->access != Access::kWrite) return;
    creates.insert(rule.path);  // existence is unknown here: the executor creates it if missing
    deny_write_with_ancestors(rule.path);
  }

  void plan_writable_root(const PathRule& rule) {
    for (const std::string& item : protected_) {
      if (path_is_within(rule.path, item)) {
        info.push_back("writable root " + rule.path + " lies inside protected path " + item +
                       ": protected paths override write access, so it stays read-only");
        return;
      }
    }
    const PathRule* parent = nearest_rule(policy_, rule.path, /*strict=*/true);
    // Inside another writable root the inherited allow already applies.
    if (parent == nullptr || parent->access != Access::kWrite)
      aces[AceKind::kAllowWrite].insert(rule.path);
    // The root itself must not be renamed or removed.
    aces[AceKind::kDenyDelete].insert(rule.path);
  }

  // Denies writing `target` and renaming any directory between its writable root and it
  // (moving an ancestor away would let the command recreate the path unprotected).
  void deny_write_with_ancestors(const std::string& target) {
    aces[AceKind::kDenyWrite].insert(target);
    const PathRule* root = outermost_write_rule(policy_, target);
    if (root == nullptr) return;
    for (std::string dir = parent_of(target); path_is_within(dir, root->path);
         dir = parent_of(dir)) {
      aces[AceKind::kDenyDelete].insert(dir);
      if (dir == root->path) break;
    }
  }

  const ResolvedPolicy& policy_;
  std::vector<std::string> protected_;
};

bool by_depth(const std::string& a, const std::string& b) {
  return std::make_pair(depth(a), a) < std::make_pair(depth(b), b);
}

std::vector<std::string> sorted_by_depth(const std::set<std::string>& paths) {
  std::vector<std::string> out(paths.begin(), paths.end());
  std::sort(out.begin(), out.end(), by_depth);
  return out;
}

// Converts the planner's generic paths to Windows form, in the plan's fixed order.
Status emit_filesystem(FilesystemPlanner& planner, WindowsPlan& plan, bool& drive_relative) {
  const auto convert = [&](const std::string& path) -> Result<std::string> {
    Result<WindowsPath> converted = to_windows_path(path);
    if (!converted.ok()) return converted.failure().prefixed(kWho);
    drive_relative = drive_relative || !converted->fully_qualified;
    return converted->path;
  };
  for (const std::string& path : sorted_by_depth(planner.creates)) {
    Result<std::string> converted = convert(path);
    if (!converted.ok()) return converted.status();
    plan.create_dirs.push_back(*converted);
  }
  for (AceKind kind : {AceKind::kAllowWrite, AceKind::kDenyWrite, AceKind::kDenyDelete}) {
    for (const std::string& path : sorted_by_depth(planner.aces[kind])) {
      // A deny-write ACE already includes DELETE.
      if (kind == AceKind::kDenyDelete && planner.aces[AceKind::kDenyWrite].contains(path))
        continue;
      Result<std::string> converted = convert(path);
      if (!converted.ok()) return converted.status();
      plan.aces.push_back(Ace{kind, SidRef::kWriteCapability, *converted});
    }
  }
  plan.info.insert(plan.info.end(), planner.info.begin(), planner.info.end());
  return {};
}

std::string lower(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// argv[0] in Windows form; batch files are refused (see the message).
Status plan_command(const TransformRequest& request, WindowsPlan& plan, bool& drive_relative) {
  if (request.argv.empty()) return Error{std::string(kWho) + "argv is empty: nothing to run"};
  Result<WindowsPath> program = to_windows_path(request.argv[0]);
  if (!program.ok()) return program.failure().prefixed(std::string(kWho) + "argv[0]: ");
  drive_relative = drive_relative || !program->fully_qualified;
  const std::string name = lower(program->path.substr(program->path.rfind('\\') + 1));
  if (name.ends_with(".bat") || name.ends_with(".cmd"))
    return Error{std::string(kWho) + "argv[0] '" + program->path +
                 "' is a batch file: "
                 "CreateProcess runs it through cmd.exe, which re-parses every argument with its "
                 "own rules (& | < > ^ %), so arguments cannot be passed safely; run cmd.exe "
                 "explicitly if that is really intended"};
  if (name == "cmd.exe")
    plan.info.push_back(
        "cmd.exe parses its command line itself, not with CommandLineToArgvW: "
        "the quoting above is exact for other programs only");
  plan.argv = request.argv;
  plan.argv[0] = program->path;
  Result<std::string> line = build_command_line(plan.argv);
  if (!line.ok()) return line.failure().prefixed(kWho);
  plan.command_line = std::move(*line);
  Result<WindowsPath> cwd = to_windows_path(request.cwd);
  if (!cwd.ok()) return cwd.failure().prefixed(std::string(kWho) + "cwd: ");
  drive_relative = drive_relative || !cwd->fully_qualified;
  plan.cwd = cwd->path;
  return {};
}

TokenPlan token_for(FilesystemKind kind) {
  if (kind == FilesystemKind::kRestricted) return write_restricted_token();
  // No write restriction: the token only drops privileges and administrator rights.
  TokenPlan token;
  token.disable_max_privilege = true;
  token.lua_token = true;
  return token;
}

void add_general_info(const ResolvedPolicy& policy, bool drive_relative, WindowsPlan& plan) {
  if (policy.filesystem_kind != FilesystemKind::kRestricted) {
    plan.info.insert(plan.info.begin(),
                     "filesystem kind is not 'restricted': no write restriction; the token only "
                     "drops administrator rights and privileges");
  } else {
    plan.info.insert(plan.info.begin(),
                     {"reads are not restricted: the command reads what the user can read",
                      "writes must pass both the user's and the restricting SIDs' check: "
                      "locations where Everyone or the logon session may write stay writable",
                      "after the run the ACEs stay (only a token for this same plan holds "
                      "their SID) and directories this plan created are removed if empty"});
  }
  if (drive_relative)
    plan.info.push_back(
        "some paths have no drive letter (a POSIX-style policy): this plan can be "
        "printed but the Windows executor refuses to run it");
}

// "C:\\x\\y" -> "C:/x/y" (drive letter upper-cased), the form of ResolvedPolicy paths; "" for
// anything that is not a drive path.
std::string generic_drive_path(std::string_view value) {
  if (value.size() < 3 || value[1] != ':' || (value[2] != '\\' && value[2] != '/')) return {};
  const char drive = static_cast<char>(std::toupper(static_cast<unsigned char>(value[0])));
  if (drive < 'A' || drive > 'Z') return {};
  std::string out(value);
  out[0] = drive;
  for (char& c : out) c = c == '\\' ? '/' : c;
  while (out.size() > 3 && out.back() == '/') out.pop_back();
  return out;
}

// The entry of `name` in `env` (case-insensitive), or nullptr.
std::string* env_entry(std::vector<std::string>& env, std::string_view name) {
  for (std::string& entry : env) {
    if (entry.size() > name.size() && entry[name.size()] == '=' &&
        lower(entry.substr(0, name.size())) == lower(name))
      return &entry;
  }
  return nullptr;
}

// rule_access() with names compared as Windows compares them (case-insensitively): an
// environment variable's spelling need not match the resolver's.
Access folded_rule_access(const ResolvedPolicy& policy, std::string_view path) {
  const std::string folded = ascii_upper(path);
  const PathRule* best = nullptr;
  for (const PathRule& rule : policy.rules) {
    if (path_is_within(folded, ascii_upper(rule.path)) &&
        (best == nullptr || rule.path.size() > best->path.size()))
      best = &rule;
  }
  return best == nullptr ? Access::kDeny : best->access;
}

// %TEMP% and %TMP% as TMPDIR is on POSIX: writable when a write rule covers them. GetTempPathW
// reads TMP first and TEMP second, other programs read either: if only one is writable, the
// other is pointed at it so every reader gets a temp directory it can use.
void plan_temp(const ResolvedPolicy& policy, std::vector<std::string>& env, WindowsPlan& plan) {
  struct Var {
    std::string_view name;
    std::string* entry;
    bool writable;
  };
  Var vars[2] = {{"TEMP", env_entry(env, "TEMP"), false}, {"TMP", env_entry(env, "TMP"), false}};
  for (Var& var : vars) {
    if (var.entry == nullptr) continue;
    const std::string value = var.entry->substr(var.name.size() + 1);
    const std::string generic = generic_drive_path(value);
    var.writable = !generic.empty() && folded_rule_access(policy, generic) == Access::kWrite;
    plan.info.push_back(std::string(var.name) + "=" + printable(value) +
                        (var.writable ? " is writable (as TMPDIR is on POSIX)"
                                      : " is not writable under the rules"));
  }
  for (int i = 0; i < 2; ++i) {
    Var& self = vars[i];
    const Var& other = vars[1 - i];
    if (self.writable || !other.writable) continue;
    const std::string value = other.entry->substr(other.name.size() + 1);
    const std::string line = std::string(self.name) + "=" + value;
    plan.info.push_back(std::string(self.name) + " set to " + std::string(other.name) +
                        "'s writable " + printable(value) +
                        " so every program finds a writable "
                        "temp directory");
    if (self.entry != nullptr) {
      *self.entry = line;
    } else {
      env.push_back(line);
    }
  }
  if (!vars[0].writable && !vars[1].writable &&
      (vars[0].entry != nullptr || vars[1].entry != nullptr))
    plan.info.push_back(
        "neither TEMP nor TMP is writable: programs that make temporary files "
        "will fail; grant write on the temp directory (the workspace-write "
        "preset does)");
}

}  // namespace

TokenPlan write_restricted_token() {
  TokenPlan token;
  token.disable_max_privilege = true;
  token.lua_token = true;
  token.write_restricted = true;
  // The capability SID first (it carries every allow and deny ACE of the plan); the logon SID
  // and Everyone because the console, pipes, NUL and the process's own objects are granted to
  // them, and a write-restricted token without them cannot even start.
  token.restricting_sids = {SidRef::kWriteCapability, SidRef::kLogon, SidRef::kEveryone};
  // Objects the command creates without an inheritable ACL (its pipes, events, threads) must be
  // writable by the restricted half of its own access check.
  token.default_dacl = {SidRef::kWriteCapability, SidRef::kLogon, SidRef::kEveryone};
  return token;
}

CapabilitySet windows_capabilities() {
  return {Capability::kWriteRestriction, Capability::kWriteCarveouts, Capability::kProtectedNames};
}

Result<WindowsPlan> build_plan(const TransformRequest& request) {
  const ResolvedPolicy& policy = request.policy;
  if (Status status = check_enforceable(policy); !status.ok()) return status.failure();
  WindowsPlan plan;
  plan.token = token_for(policy.filesystem_kind);
  bool drive_relative = false;
  if (policy.filesystem_kind == FilesystemKind::kRestricted) {
    FilesystemPlanner planner(policy);
    planner.plan();
    if (Status status = emit_filesystem(planner, plan, drive_relative); !status.ok())
      return status.failure();
  }
  if (Status status = plan_command(request, plan, drive_relative); !status.ok())
    return status.failure();
  std::vector<std::string> env_in = request.env;
  if (policy.filesystem_kind == FilesystemKind::kRestricted) plan_temp(policy, env_in, plan);
  Result<std::vector<std::string>> env = windows_environment(env_in);
  if (!env.ok()) return env.failure().prefixed(kWho);
  plan.env = std::move(*env);
  add_general_info(policy, drive_relative, plan);
  return plan;
}

Status check_runnable(const WindowsPlan& plan) {
  const auto check = [](const std::string& path, std::string_view what) -> Status {
    const bool drive = path.size() >= 3 && path[1] == ':' && path[2] == '\\';
    if (drive || path.starts_with("\\\\")) return {};
    return Error{std::string(kWho) + std::string(what) + " '" + path +
                 "' has no drive letter or "
                 "server: Windows would resolve it against the current drive; refusing to run"};
  };
  if (plan.argv.empty()) return Error{std::string(kWho) + "the plan has no argv"};
  // Privileges and administrator rights are always dropped; a write restriction needs SIDs.
  if (!plan.token.disable_max_privilege || !plan.token.lua_token)
    return Error{std::string(kWho) +
                 "the plan keeps privileges (DISABLE_MAX_PRIVILEGE and "
                 "LUA_TOKEN are required)"};
  if (plan.token.write_restricted && plan.token.restricting_sids.empty())
    return Error{std::string(kWho) + "WRITE_RESTRICTED without restricting SIDs"};
  if (Status s = check(plan.argv[0], "argv[0]"); !s.ok()) return s;
  if (Status s = check(plan.cwd, "cwd"); !s.ok()) return s;
  for (const std::string& dir : plan.create_dirs) {
    if (Status s = check(dir, "directory to create"); !s.ok()) return s;
  }
  for (const Ace& ace : plan.aces) {
    if (Status s = check(ace.path, "ACE path"); !s.ok()) return s;
  }
  return {};
}

NetworkMechanismReport network_mechanism(bool elevated, bool appcontainer_api) {
  NetworkMechanismReport report;
  const std::string refused =
      "; not implemented by this backend yet, so network.mode "
      "restricted and proxy are refused (proxy variables alone are not "
      "enforcement)";
  if (elevated) {
    report.mechanism = NetworkMechanism::kFirewallRules;
    report.observed =
        "administrator: outbound-block Windows Firewall rules bound to a sandbox "
        "identity (a dedicated local account or the capability SID) would apply" +
        refused;
    report.remedy = "use --network enabled, or a backend that blocks the network";
  } else if (appcontainer_api) {
    report.mechanism = NetworkMechanism::kAppContainer;
    report.observed =
        "not an administrator: an AppContainer token without network "
        "capabilities (CreateAppContainerProfile, PROC_THREAD_ATTRIBUTE_SECURITY_"
        "CAPABILITIES) would apply; it also limits reads to what its SID may read" +
        refused;
    report.remedy = "use --network enabled, or a backend that blocks the network";
  } else {
    report.observed =
        "not an administrator and no AppContainer API (userenv.dll "
        "CreateAppContainerProfile): no mechanism here" +
        refused;
    report.remedy =
        "Windows 8 or later offers AppContainers; an administrator can use "
        "firewall rules";
  }
  return report;
}

std::vector<std::string> audit_locations(const WindowsPlan& plan) {
  const auto inside = [](std::string_view path, std::string_view root) {
    const std::string p = ascii_upper(path), r = ascii_upper(root);
    return p == r || (p.starts_with(r) && (r.ends_with("\\") || p[r.size()] == '\\'));
  };
  std::set<std::string> out;
  const auto add_with_ancestors = [&](std::string path) {
    while (path.size() >= 3 && path[1] == ':') {
      out.insert(path);
      const std::size_t slash = path.find_last_of('\\');
      if (path.size() == 3 || slash == std::string::npos) break;
      path = slash == 2 ? path.substr(0, 3) : path.substr(0, slash);
    }
  };
  const auto parent = [](const std::string& path) {
    const std::size_t slash = path.find_last_of('\\');
    if (slash == std::string::npos) return path;
    return slash == 2 ? path.substr(0, 3) : path.substr(0, slash);
  };
  add_with_ancestors(plan.cwd);
  if (!plan.argv.empty()) add_with_ancestors(parent(plan.argv[0]));
  for (const Ace& ace : plan.aces) add_with_ancestors(parent(ace.path));
  for (const std::string& entry : plan.env) {
    const std::size_t equals = entry.find('=', 1);
    if (equals == std::string::npos) continue;
    const std::string name = lower(entry.substr(0, equals));
    if (name != "public" && name != "programdata") continue;
    const std::string value = entry.substr(equals + 1);
    if (value.size() >= 3 && value[1] == ':' && value[2] == '\\') out.insert(value);
  }
  std::vector<std::string> result;
  for (const std::string& path : out) {
    const bool writable = std::any_of(plan.aces.begin(), plan.aces.end(), [&](const Ace& ace) {
      return ace.kind == AceKind::kAllowWrite && inside(path, ace.path);
    });
    if (!writable) result.push_back(path);
  }
  return result;
}

Result<std::vector<std::string>> windows_environment(const std::vector<std::string>& env) {
  std::map<std::string, std::string> by_upper_name;  // upper-cased name -> entry
  for (const std::string& entry : env) {
    // A leading '=' belongs to the name ("=C:=C:\dir" is the per-drive current directory).
    const std::size_t equals = entry.find('=', 1);
    if (entry.empty() || equals == std::string::npos)
      return Error{"environment entry '" + printable(entry) + "' is not NAME=VALUE"};
    if (entry.find('\0') != std::string::npos)
      return Error{"environment entry '" + printable(entry) + "' contains a NUL byte"};
    if (!utf8_to_utf16(entry).ok())
      return Error{"environment entry '" + printable(entry) + "' is not valid UTF-8"};
    std::string name = entry.substr(0, equals);
    std::string upper_name;
    for (char c : name)
      upper_name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // Windows names are case-insensitive: two spellings would leave the winner to chance.
    auto [it, inserted] = by_upper_name.emplace(upper_name, entry);
    if (!inserted)
      return Error{"environment names '" + it->second.substr(0, it->second.find('=', 1)) +
                   "' and '" + name + "' are the same variable on Windows; pass only one"};
  }
  std::vector<std::string> out;
  out.reserve(by_upper_name.size());
  for (auto& [name, entry] : by_upper_name) out.push_back(std::move(entry));
  return out;
}

}  // namespace sbx::windows
