// Resolved policy -> SBPL. Section order (SBPL applies the LAST matching rule, so every deny
// and guard comes after the allows it must override):
//   base, reads, writes, network, preferences, platform defaults (+ the deny rules restated
//   over them), deny globs, unlink guards.
#include "sbx/seatbelt/profile.hpp"

#include <algorithm>
#include <string>

#include "profile_internal.hpp"
#include "sbx/seatbelt/glob_regex.hpp"
#include "sections.hpp"

namespace sbx::seatbelt {
namespace {

using internal::Context;

constexpr std::string_view kPrivateAliases[] = {"/tmp", "/var", "/etc"};

std::string parent_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string_view::npos ? "/" : std::string(path.substr(0, slash));
}

// Directories strictly between `root` and `path`, nearest to `path` first.
std::vector<std::string> ancestors_below(std::string_view path, std::string_view root) {
  std::vector<std::string> out;
  for (std::string dir = parent_of(path); dir != "/" && dir != root && path_is_within(dir, root);
       dir = parent_of(dir))
    out.push_back(dir);
  return out;
}

// `(require-not (literal P)) (require-not (subpath P))`: the literal also catches creation of a
// missing P (mkdir), which is not left to the subpath filter alone.
std::string exclude_both(const std::string& ref) {
  return " (require-not (literal " + ref + ")) (require-not (subpath " + ref + "))";
}

bool restricted(const ResolvedPolicy& p) {
  return p.filesystem_kind == FilesystemKind::kRestricted;
}

// The nearest rule strictly above `path`, or nullptr.
const PathRule* nearest_ancestor_rule(const ResolvedPolicy& p, const std::string& path) {
  const PathRule* best = nullptr;
  for (const PathRule& r : p.rules) {
    if (r.path != path && path_is_within(path, r.path) &&
        (best == nullptr || r.path.size() > best->path.size()))
      best = &r;
  }
  return best;
}

std::string read_section(Context& ctx) {
  const ResolvedPolicy& p = ctx.policy;
  const bool any_deny = std::any_of(p.rules.begin(), p.rules.end(),
                                    [](const PathRule& r) { return r.access == Access::kDeny; });
  const std::string head = "; Reads.\n";
  if (!restricted(p) || (!reads_restricted(p) && !any_deny)) return head + "(allow file-read*)\n";
  // Each readable rule R allows its subtree minus every deny rule below it. A path is then
  // allowed exactly when its most specific rule is read or write (README.md has the proof).
  std::string body;
  std::size_t index = 0;
  for (const PathRule& rule : p.rules) {
    if (rule.access == Access::kDeny) continue;
    const PathRule* up = nearest_ancestor_rule(p, rule.path);
    if (up != nullptr && up->access != Access::kDeny) continue;  // `up` already covers it
    const std::string key = "READABLE_ROOT_" + std::to_string(index++);
    std::string expr = "(subpath " + ctx.params.add(key, rule.path) + ")";
    std::size_t j = 0;
    for (const PathRule& d : p.rules) {
      if (d.access != Access::kDeny || d.path == rule.path || !path_is_within(d.path, rule.path))
        continue;
      expr += exclude_both(ctx.params.add(key + "_EXCLUDED_" + std::to_string(j++), d.path));
    }
    body += j == 0 ? "  " + expr + "\n" : "  (require-all " + expr + ")\n";
  }
  if (body.empty()) return head + "; no readable roots\n";
  return head + "(allow file-read*\n" + body + ")\n";
}

// Narrower non-write rules under `root` (only for a restricted filesystem).
std::vector<std::string> carve_outs(const ResolvedPolicy& p, const std::string& root) {
  std::vector<std::string> out;
  if (!restricted(p)) return out;
  for (const PathRule& r : p.rules) {
    if (r.access != Access::kWrite && r.path != root && path_is_within(r.path, root))
      out.push_back(r.path);
  }
  return out;
}

std::vector<const ProtectedPath*> protected_under(const ResolvedPolicy& p,
                                                  const std::string& root) {
  std::vector<const ProtectedPath*> out;
  for (const ProtectedPath& pp : p.protected_paths) {
    if (path_is_within(pp.path, root)) out.push_back(&pp);
  }
  return out;
}

// One writable root: its subtree minus carve-outs and protected paths. Every directory between
// the root and a carve-out or protected path becomes an unlink guard, since renaming it would
// move the carve-out out from under its rule.
std::string write_root_expr(Context& ctx, const std::string& root, std::size_t index) {
  const std::string key = "WRITABLE_ROOT_" + std::to_string(index);
  std::string expr = "(subpath " + ctx.params.add(key, root) + ")";
  const auto excluded = carve_outs(ctx.policy, root);
  for (std::size_t j = 0; j < excluded.size(); ++j) {
    expr += exclude_both(ctx.params.add(key + "_EXCLUDED_" + std::to_string(j), excluded[j]));
    for (std::string& a : ancestors_below(excluded[j], root)) ctx.guards.push_back(std::move(a));
  }
  const auto protected_paths = protected_under(ctx.policy, root);
  std::string regexes;
  for (std::size_t k = 0; k < protected_paths.size(); ++k) {
    const std::string& path = protected_paths[k]->path;
    expr += exclude_both(ctx.params.add(key + "_PROTECTED_" + std::to_string(k), path));
    // Blocks creation even where the name does not exist yet. The only policy text derived
    // from a path: escaped so that no `"`, `\` or control byte remains (glob_regex.hpp).
    regexes +=
        " (require-not (regex #\"" + subtree_regex_for_path(macos_canonical_path(path)) + "\"))";
    for (std::string& a : ancestors_below(path, root)) ctx.guards.push_back(std::move(a));
  }
  if (excluded.empty() && protected_paths.empty()) return expr;
  return "(require-all " + expr + regexes + ")";
}

std::string write_section(Context& ctx) {
  const ResolvedPolicy& p = ctx.policy;
  // Unrestricted/external: nothing here limits writes beyond protected paths and globs.
  ctx.writable = restricted(p) ? writable_roots(p) : std::vector<std::string>{"/"};
  const std::string head = "; Writes.\n";
  if (ctx.writable.empty()) return head + "; no writable roots\n";
  if (ctx.writable.size() == 1 && ctx.writable[0] == "/" && carve_outs(p, "/").empty() &&
      p.protected_paths.empty())
    return head + "(allow file-write*)\n";
  std::string out = head + "(allow file-write*\n";
  for (std::size_t i = 0; i < ctx.writable.size(); ++i)
    out += "  " + write_root_expr(ctx, ctx.writable[i], i) + "\n";
  return out + ")\n";
}

// The regexes for one deny glob: as written, and in its /private spelling if that differs.
Result<std::vector<std::string>> glob_regexes(const std::string& glob) {
  std::vector<std::string> out;
  for (const std::string& spelling : {glob, macos_canonical_path(glob)}) {
    auto regex = glob_to_regex(spelling);
    if (!regex) return regex.failure();
    if (std::find(out.begin(), out.end(), *regex) == out.end()) out.push_back(*regex);
  }
  return out;
}

Result<std::string> glob_section(Context& ctx) {
  if (ctx.policy.deny_globs.empty()) return std::string();
  std::string out = "; Deny globs: no read or write of matching paths or anything below them.\n";
  for (const std::string& glob : ctx.policy.deny_globs) {
    auto regexes = glob_regexes(glob);
    if (!regexes) return regexes.failure();
    for (const std::string& r : *regexes)
      out += "(deny file-read* file-write* (regex #\"" + r + "\"))\n";
    // A directory on the glob's literal prefix inside a writable root could be renamed to
    // move matching files out of the pattern's reach.
    for (const std::string& dir : glob_static_ancestors(glob)) {
      const bool inside = std::any_of(ctx.writable.begin(), ctx.writable.end(),
                                      [&](const std::string& w) { return path_is_within(dir, w); });
      if (inside) ctx.guards.push_back(dir);
    }
  }
  return out;
}

// Deny rules restated after the platform defaults. ":minimal" grants reads no policy rule
// drives, so a deny rule inside one of its locations (e.g. /etc/ssh under /private/etc) would
// otherwise be reopened by it. Each deny rule D denies its subtree minus every non-deny rule
// below D: those keep what the read and write sections gave them, and a deny rule deeper down
// gets its own line here. A path whose most specific rule is a deny is then denied; any other
// path is untouched (README.md has the argument). A deny on "/" is left out: with restricted
// reads it only restates the default, and ":minimal" is the exception the policy asked for.
std::string minimal_deny_section(Context& ctx) {
  const ResolvedPolicy& p = ctx.policy;
  std::string body;
  std::size_t index = 0;
  for (const PathRule& d : p.rules) {
    if (d.access != Access::kDeny || d.path == "/") continue;
    const std::string key = "DENIED_PATH_" + std::to_string(index++);
    std::string expr = "(subpath " + ctx.params.add(key, d.path) + ")";
    std::size_t j = 0;
    for (const PathRule& r : p.rules) {
      if (r.access == Access::kDeny || r.path == d.path || !path_is_within(r.path, d.path))
        continue;
      expr += " (require-not (subpath " +
              ctx.params.add(key + "_EXCEPT_" + std::to_string(j++), r.path) + "))";
    }
    body += j == 0 ? "  " + expr + "\n" : "  (require-all " + expr + ")\n";
  }
  if (body.empty()) return "";
  return "; Deny rules over the platform defaults (after them: the last matching rule wins).\n"
         "(deny file-read* file-write* file-map-executable\n" +
         body + ")\n";
}

// Unlink/rename guards, last: writable roots, then the collected ancestors (deduplicated).
std::string guard_section(Context& ctx) {
  std::string out = "; Unlink/rename guards (last, so no allow above reopens them).\n";
  bool any = false;
  for (std::size_t i = 0; i < ctx.writable.size(); ++i) {
    if (ctx.writable[i] == "/") continue;
    out +=
        "(deny file-write-unlink (literal (param \"WRITABLE_ROOT_" + std::to_string(i) + "\")))\n";
    any = true;
  }
  std::vector<std::string> seen;
  for (const std::string& dir : ctx.guards) {
    if (std::find(seen.begin(), seen.end(), dir) != seen.end() ||
        std::find(ctx.writable.begin(), ctx.writable.end(), dir) != ctx.writable.end())
      continue;
    const std::string ref =
        ctx.params.add("PROTECTED_ANCESTOR_" + std::to_string(seen.size()), dir);
    seen.push_back(dir);
    out += "(deny file-write-unlink (literal " + ref + "))\n";
    any = true;
  }
  return any ? out : std::string();
}

std::string env_value(const std::vector<std::string>& env, std::string_view key) {
  for (const std::string& entry : env) {
    if (entry.size() > key.size() && entry.compare(0, key.size(), key) == 0 &&
        entry[key.size()] == '=')
      return entry.substr(key.size() + 1);
  }
  return "";
}

std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// `path` in the spelling `like` uses for /private aliases (/var/... or /private/var/...), so
// that it nests with the policy's rules.
std::string spelled_like(const std::string& path, const std::string& like) {
  std::string canonical = macos_canonical_path(path);  // not const: returned by move
  if (like.rfind("/private/", 0) == 0) return canonical;
  if (canonical.rfind("/private/", 0) == 0 &&
      macos_canonical_path(canonical.substr(8)) == canonical)
    return canonical.substr(8);
  return canonical;
}

// The per-user cache directory (DARWIN_USER_CACHE_DIR) writable where $TMPDIR is: macOS keeps
// both per user under /var/folders (…/T and …/C), and Apple's tools write caches there whatever
// TMPDIR says (clang's module cache, xcrun's cache, Metal's shader cache). Granted only when the
// policy makes $TMPDIR itself a writable root (the workspace-write preset's `:tmpdir`), only
// for a canonical directory under /private/var/folders, never over a policy deny, and with the
// protected names TMPDIR has. Like TMPDIR, the directory is shared with the user's other
// processes, so a command can leave files there that unsandboxed programs later read.
ResolvedPolicy with_user_cache_dir(const ResolvedPolicy& p, const std::vector<std::string>& env,
                                   const MacHostFacts& host, std::vector<std::string>& notes) {
  if (!restricted(p)) return p;
  const std::string tmpdir = without_trailing_slashes(env_value(env, "TMPDIR"));
  if (tmpdir.empty() || tmpdir.front() != '/') return p;
  const PathRule* tmp_rule = nullptr;
  for (const PathRule& r : p.rules) {
    if (r.access == Access::kWrite && macos_canonical_path(r.path) == macos_canonical_path(tmpdir))
      tmp_rule = &r;
  }
  if (tmp_rule == nullptr) return p;
  const std::string what = "per-user cache directory (DARWIN_USER_CACHE_DIR)";
  if (host.darwin_user_cache_dir.empty()) {
    notes.push_back(what +
                    ": not known on this host (read with confstr on macOS when the plan "
                    "is made there); not made writable");
    return p;
  }
  const std::string given = without_trailing_slashes(host.darwin_user_cache_dir);
  const std::string canonical = macos_canonical_path(given);
  if (!check_canonical_path(given, what).ok() ||
      !path_is_within(canonical, "/private/var/folders") || canonical == "/private/var/folders") {
    notes.push_back(what + " '" + given +
                    "' is not a canonical directory under "
                    "/private/var/folders; not made writable");
    return p;
  }
  const std::string cache = spelled_like(given, tmp_rule->path);
  const PathRule* nearest = nullptr;
  for (const PathRule& r : p.rules) {
    if (path_is_within(canonical, macos_canonical_path(r.path)) &&
        (nearest == nullptr ||
         macos_canonical_path(r.path).size() > macos_canonical_path(nearest->path).size()))
      nearest = &r;
  }
  if (nearest != nullptr && nearest->access == Access::kDeny) {
    notes.push_back(what + " " + cache + ": denied by the policy; stays denied");
    return p;
  }
  if (nearest != nullptr && nearest->access == Access::kWrite) return p;  // already writable
  if (nearest != nullptr && macos_canonical_path(nearest->path) == canonical) {
    notes.push_back(what + " " + cache + ": the policy names it read-only; stays read-only");
    return p;
  }
  ResolvedPolicy out = p;
  out.rules.push_back({cache, Access::kWrite});
  std::stable_sort(out.rules.begin(), out.rules.end(), [](const PathRule& a, const PathRule& b) {
    const auto depth = [](const std::string& s) { return std::count(s.begin(), s.end(), '/'); };
    return depth(a.path) < depth(b.path);
  });
  const std::string tmp_root = tmp_rule->path;
  for (const ProtectedPath& pp : p.protected_paths) {
    if (pp.writable_root != tmp_root || !path_is_within(pp.path, tmp_root) || pp.path == tmp_root)
      continue;
    out.protected_paths.push_back({cache + pp.path.substr(tmp_root.size()), cache, false, false});
  }
  std::sort(out.protected_paths.begin(), out.protected_paths.end(),
            [](const ProtectedPath& a, const ProtectedPath& b) { return a.path < b.path; });
  notes.push_back(what + " " + cache + " writable, as TMPDIR is");
  return out;
}

Status check_policy_paths(const ResolvedPolicy& p) {
  for (std::size_t i = 0; i < p.rules.size(); ++i) {
    const std::string what =
        std::string(p.rules[i].access == Access::kWrite ? "writable root" : "path rule");
    if (auto s = check_canonical_path(p.rules[i].path, what); !s) return s;
    for (std::size_t j = 0; j < i; ++j) {
      if (p.rules[j].path == p.rules[i].path)
        return Error{"path rule '" + p.rules[i].path +
                     "' appears twice; the policy must hold "
                     "one resolved rule per path"};
    }
  }
  for (const ProtectedPath& pp : p.protected_paths) {
    if (auto s = check_canonical_path(pp.path, "protected path"); !s) return s;
  }
  for (const std::string& sock : p.network.unix_sockets) {
    if (auto s = check_canonical_path(sock, "unix socket"); !s) return s;
  }
  return {};
}

}  // namespace

std::string macos_canonical_path(std::string_view path) {
  for (std::string_view alias : kPrivateAliases) {
    if (path_is_within(path, alias)) return "/private" + std::string(path);
  }
  return std::string(path);
}

Status check_canonical_path(std::string_view path, std::string_view what) {
  const std::string name(what);
  const std::string shown(path);
  if (path.empty() || path.front() != '/') return Error{name + " '" + shown + "' is not absolute"};
  if (path.find('\0') != std::string_view::npos)
    return Error{name + " contains a NUL byte, which cannot be passed to sandbox-exec"};
  if (path == "/") return {};
  for (std::size_t i = 1; i <= path.size();) {
    const std::size_t end = std::min(path.find('/', i), path.size());
    const std::string_view part = path.substr(i, end - i);
    if (part.empty() || part == "." || part == "..")
      return Error{name + " '" + shown +
                   "' is not canonical (empty, '.' or '..' component, or "
                   "a trailing slash); Seatbelt matches resolved paths, so resolve it first"};
    i = end + 1;
  }
  return {};
}

Result<Profile> build_profile(const ResolvedPolicy& given, const std::vector<std::string>& env,
                              const MacHostFacts& host) {
  if (auto s = check_policy_paths(given); !s) return s.failure();
  std::vector<std::string> host_notes;
  const ResolvedPolicy policy = with_user_cache_dir(given, env, host, host_notes);
  Context ctx(policy);
  ctx.notes = std::move(host_notes);
  std::string text(sections::kBase);
  text += "\n" + read_section(ctx);
  text += "\n" + write_section(ctx);
  auto network = internal::network_section(ctx, env);
  if (!network) return network.failure();
  text += "\n" + *network;
  const bool full_reads = !restricted(policy) || !reads_restricted(policy);
  if (full_reads) text += "\n" + std::string(sections::kPreferences);
  if (!full_reads && policy.platform_defaults_readable) {
    text += "\n" + std::string(sections::kPlatformDefaults);
    const std::string denies = minimal_deny_section(ctx);
    if (!denies.empty()) text += "\n" + denies;
  }
  auto globs = glob_section(ctx);
  if (!globs) return globs.failure();
  if (!globs->empty()) text += "\n" + *globs;
  const std::string guards = guard_section(ctx);
  if (!guards.empty()) text += "\n" + guards;
  if (policy.filesystem_kind == FilesystemKind::kExternal)
    ctx.notes.push_back(
        "filesystem: external (an outer sandbox limits files; Seatbelt allows all)");
  return Profile{std::move(text), ctx.params.take(), std::move(ctx.notes)};
}

std::vector<std::string> sandbox_exec_argv(const Profile& profile,
                                           const std::vector<std::string>& command) {
  std::vector<std::string> argv{std::string(kSandboxExecPath), "-p", profile.text};
  for (const Param& p : profile.params) argv.push_back("-D" + p.key + "=" + p.value);
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

Result<ExecPlan> build_exec_plan(const TransformRequest& request, const MacHostFacts& host) {
  if (request.argv.empty()) return Error{"seatbelt: no command to run"};
  if (request.argv.front().empty() || request.argv.front().front() != '/')
    return Error{"seatbelt: the command path '" + request.argv.front() + "' is not absolute"};
  auto profile = build_profile(request.policy, request.env, host);
  if (!profile) return profile.failure().prefixed("seatbelt: ");
  ExecPlan plan;
  plan.argv = sandbox_exec_argv(*profile, request.argv);
  plan.env = request.env;
  plan.cwd = request.cwd;
  plan.notes = std::move(profile->notes);
  return plan;
}

}  // namespace sbx::seatbelt
