// Could a sandbox have planted a program (sbx/core/program_trust.hpp)? Pure: the facts come from
// the walk in program_lookup.cpp.
#include "sbx/core/program_trust.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx {
namespace {

// POSIX permission bits (sys/stat.h), spelled out so that this file needs no OS header.
constexpr std::uint32_t kGroupWrite = 0020;
constexpr std::uint32_t kOtherWrite = 0002;
constexpr std::uint32_t kSticky = 01000;

// The policy lets the sandbox write `path`: a filesystem it does not restrict (or one an outer
// sandbox owns: not known, so taken as writable), or a write rule covering it.
bool policy_writes(const ResolvedPolicy& policy, const std::string& path) {
  if (policy.filesystem_kind != FilesystemKind::kRestricted) return true;
  return rule_access(policy, path) == Access::kWrite;
}

// The host lets `user` change the step (see plantable in the header).
bool host_writes(const PathStep& step, const HostUser& user) {
  // CAP_DAC_OVERRIDE: root, or a user holding capabilities, writes whatever the mode says.
  if (user.uid == 0 || user.capable) return true;
  // chmod(2): the owner may change the mode of what it owns at any time, so a sandboxed run
  // that cleared the write bits (chmod 555) can set them again: the bits say nothing.
  if (step.owner == user.uid) return true;
  return (step.mode & (kGroupWrite | kOtherWrite)) != 0;
}

// A sticky directory (/tmp) the user may write but does not own: unlink(2) and rename(2) fail
// with EPERM for an entry the user does not own, so the entry the walk goes on through (`next`,
// owned by someone else) cannot be replaced; a new name could still be created there, which is
// why the last step of a walk is never spared this way.
bool sticky_keeps(const PathStep& step, const PathStep* next, const HostUser& user) {
  // `next` must be the entry itself, not what a symlink there leads to (the symlink's own
  // owner is not known here).
  return user.uid != 0 && !user.capable && step.directory && (step.mode & kSticky) != 0 &&
         step.owner != user.uid && next != nullptr && next->owner != user.uid &&
         next->path.size() > step.path.size() &&
         next->path.compare(0, step.path.size(), step.path) == 0 &&
         next->path.find('/', step.path == "/" ? 1 : step.path.size() + 1) == std::string::npos;
}

std::string host_reason(const PathStep& step, const HostUser& user) {
  if (user.uid == 0)
    return "sbx runs as root, and root can write it: any earlier sandboxed run whose policy "
           "made it writable could have changed it";
  if (user.capable)
    return "sbx runs with effective capabilities, which can write it whatever its mode: any "
           "earlier sandboxed run whose policy made it writable could have changed it";
  if (step.owner == user.uid)
    return "the user owns it: any earlier sandboxed run whose policy made it writable could "
           "have changed it";
  return "the user may write it (group or other write bit): any earlier sandboxed run whose "
         "policy made it writable could have changed it";
}

std::string writable_root_of(const ResolvedPolicy& policy, const std::string& path) {
  if (policy.filesystem_kind != FilesystemKind::kRestricted)
    return "the policy does not restrict the filesystem";
  const PathRule* best = nullptr;
  for (const PathRule& rule : policy.rules) {
    if (path_is_within(path, rule.path) &&
        (best == nullptr || rule.path.size() > best->path.size()))
      best = &rule;
  }
  return best == nullptr ? "a write rule" : "writable root " + best->path;
}

}  // namespace

std::optional<std::string> plantable(const PathStep& step, const ResolvedPolicy& policy,
                                     const HostUser& user, const PathStep* next) {
  const std::string what = step.directory ? "the directory " + step.path : "the file " + step.path;
  if (policy_writes(policy, step.path))
    return what + " is writable by the sandbox (" + writable_root_of(policy, step.path) + ")";
  if (host_writes(step, user) && !sticky_keeps(step, next, user))
    return what + " is writable on the host (" + host_reason(step, user) + ")";
  return std::nullopt;
}

std::optional<std::string> first_plantable(const std::vector<PathStep>& steps,
                                           const ResolvedPolicy& policy, const HostUser& user) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PathStep* next = i + 1 < steps.size() ? &steps[i + 1] : nullptr;
    if (std::optional<std::string> why = plantable(steps[i], policy, user, next)) return why;
  }
  return std::nullopt;
}

std::optional<std::string> first_plantable_directory(const std::vector<PathStep>& steps,
                                                     const ResolvedPolicy& policy,
                                                     const HostUser& user) {
  for (const PathStep& step : steps) {
    if (std::optional<std::string> why = plantable(step, policy, user)) {
      if ((step.mode & kSticky) != 0 && step.directory)
        return *why +
               "; the user may add entries there (sticky or not), and programs discover "
               "files upward: git, npm, cargo...";
      return why;
    }
  }
  return std::nullopt;
}

std::optional<std::string> plantable_beside(const PathStep& entry, const HostUser& user) {
  if (!host_writes(entry, user)) return std::nullopt;
  if (user.uid != 0 && !user.capable && entry.directory && (entry.mode & kSticky) != 0 &&
      entry.owner != user.uid)
    return std::nullopt;
  return (entry.directory ? "the directory " : "the file ") + entry.path +
         " is writable on the host (" + host_reason(entry, user) +
         "), and programs discover files upward from the working directory: git, npm, cargo...";
}

namespace {

// What a variable's value may be for it to pass the reset (reset_environment in the header).
enum class Value {
  kAny,               // names no file, or one the run judges itself
  kAbsolute,          // an absolute path the run judges (else programs resolve it elsewhere)
  kNoPathNoPercent,   // sudoers(5) env_check: no '/' (a path) and no '%' (a format)
  kTimeZone,          // tz_is_safe
  kDigits,            // a number
  kWorkingDirectory,  // replaced by the verified working directory
};

struct Allowed {
  std::string_view name;
  Value value;
};

// The allowlist, each with why it loads no code or configuration:
// - PATH: the run replaces it with the entries find_trusted_program searched.
// - HOME: the run judges it (configuration_refusal, entries_below_refusal) and refuses a
//   relative one; what programs read there was verified.
// - XDG_CONFIG_HOME: judged the same way when absolute; a relative one is not judged (git
//   takes it relative to the cwd, path.c xdg_config_home), so it is dropped and the programs
//   use ~/.config, which is judged.
// - USER, LOGNAME: a name, no path (sudoers(5) keeps both).
// - TERM: names a terminfo entry; ncurses refuses a name with '/' (read_entry.c), and the
//   TERMINFO/TERMINFO_DIRS that would move the database are dropped.
// - LANG, LANGUAGE, LC_*: glibc takes a locale name with '/' as a path to open
//   (locale/findlocale.c), gettext looks message catalogs up under LANGUAGE's entries, and a
//   catalog's strings are printf formats; without '/' every file comes from the system's
//   directories (LOCPATH, NLSPATH dropped). The '%' rule is sudo's too.
// - TZ: tzset(3): TZ=:file or a name is read below TZDIR (dropped, so the system's
//   zoneinfo), an absolute path anywhere: only TZ values naming no path pass (tz_is_safe).
// - COLUMNS, LINES: a terminal size.
// - NO_COLOR: a switch (no-color.org).
// - PWD: shells trust it as the working directory when it names it: set to the verified cwd.
// Not passed: SHELL (names the program shell escapes and script(1), tmux, vi's :sh run),
// TMPDIR, DISPLAY, XAUTHORITY, SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS (sockets and files the
// program would trust), every XDG_* but XDG_CONFIG_HOME, GIT_* identity (harmless, but a
// command that needs them is no read-only one): a program that needs more runs sandboxed, or
// with `sbx exec --sandbox forbid`.
// clang-format off
constexpr std::array<Allowed, 25> kAllowed = {{
    {"PATH", Value::kAny}, {"HOME", Value::kAny}, {"XDG_CONFIG_HOME", Value::kAbsolute},
    {"USER", Value::kNoPathNoPercent}, {"LOGNAME", Value::kNoPathNoPercent},
    {"TERM", Value::kNoPathNoPercent}, {"LANG", Value::kNoPathNoPercent},
    {"LANGUAGE", Value::kNoPathNoPercent},
    // locale(7): the categories glibc reads.
    {"LC_ALL", Value::kNoPathNoPercent}, {"LC_ADDRESS", Value::kNoPathNoPercent},
    {"LC_COLLATE", Value::kNoPathNoPercent}, {"LC_CTYPE", Value::kNoPathNoPercent},
    {"LC_IDENTIFICATION", Value::kNoPathNoPercent}, {"LC_MEASUREMENT", Value::kNoPathNoPercent},
    {"LC_MESSAGES", Value::kNoPathNoPercent}, {"LC_MONETARY", Value::kNoPathNoPercent},
    {"LC_NAME", Value::kNoPathNoPercent}, {"LC_NUMERIC", Value::kNoPathNoPercent},
    {"LC_PAPER", Value::kNoPathNoPercent}, {"LC_TELEPHONE", Value::kNoPathNoPercent},
    {"LC_TIME", Value::kNoPathNoPercent},
    {"TZ", Value::kTimeZone}, {"COLUMNS", Value::kDigits}, {"LINES", Value::kDigits},
    {"NO_COLOR", Value::kAny}}};
// clang-format on
constexpr Allowed kPwd{"PWD", Value::kWorkingDirectory};

// sudo's tz_is_safe (plugins/sudoers/env.c), stricter: tzset(3) reads TZ=:name and TZ=name
// (glibc tries any TZ as a file first, time/tzfile.c) below TZDIR, and an absolute path as it
// is, so no absolute path (sudo accepts one inside its zoneinfo directory), no ".." element,
// printable ASCII without spaces, shorter than 256.
bool tz_is_safe(std::string_view value) {
  if (!value.empty() && value.front() == ':') value.remove_prefix(1);
  if (value.empty() || value.front() == '/' || value.size() >= 256) return false;
  char last = '/';
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c <= ' ' || c > '~') return false;
    if (last == '/' && value.substr(i, 2) == ".." && (i + 2 == value.size() || value[i + 2] == '/'))
      return false;
    last = c;
  }
  return true;
}

bool value_passes(Value rule, std::string_view value) {
  switch (rule) {
    case Value::kAny:
    case Value::kWorkingDirectory:
      return true;
    case Value::kAbsolute:
      return !value.empty() && value.front() == '/';
    case Value::kNoPathNoPercent:
      return value.find_first_of("/%") == std::string_view::npos;
    case Value::kTimeZone:
      return tz_is_safe(value);
    case Value::kDigits:
      return !value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos;
  }
  return false;
}

const Allowed* allowed(std::string_view name) {
  if (name == kPwd.name) return &kPwd;
  for (const Allowed& entry : kAllowed)
    if (entry.name == name) return &entry;
  return nullptr;
}

}  // namespace

ResetEnvironment reset_environment(const std::vector<std::string>& env, const std::string& cwd) {
  ResetEnvironment out;
  std::vector<std::string_view> kept_names;
  for (const std::string& entry : env) {
    const std::size_t equals = entry.find('=');
    const std::string_view name = std::string_view(entry).substr(0, equals);
    const std::string_view value = equals == std::string::npos
                                       ? std::string_view()
                                       : std::string_view(entry).substr(equals + 1);
    const Allowed* rule = allowed(name);
    // The first entry of a name is the one getenv(3) returns; a second one is dropped.
    const bool repeated = std::find(kept_names.begin(), kept_names.end(), name) != kept_names.end();
    if (rule == nullptr || equals == std::string::npos || repeated ||
        !value_passes(rule->value, value)) {
      if (std::find(out.dropped.begin(), out.dropped.end(), name) == out.dropped.end())
        out.dropped.emplace_back(name);
      continue;
    }
    kept_names.push_back(name);
    out.env.push_back(rule->value == Value::kWorkingDirectory ? "PWD=" + cwd : entry);
  }
  return out;
}

}  // namespace sbx
