// Could a sandbox have planted a program (sbx/core/program_trust.hpp)? Pure: the facts come from
// the walk in program_lookup.cpp.
#include "sbx/core/program_trust.hpp"

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
  if (user.uid == 0) return true;  // CAP_DAC_OVERRIDE: root writes whatever the mode says
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
  return user.uid != 0 && step.directory && (step.mode & kSticky) != 0 && step.owner != user.uid &&
         next != nullptr && next->owner != user.uid && next->path.size() > step.path.size() &&
         next->path.compare(0, step.path.size(), step.path) == 0 &&
         next->path.find('/', step.path == "/" ? 1 : step.path.size() + 1) == std::string::npos;
}

std::string host_reason(const PathStep& step, const HostUser& user) {
  if (user.uid == 0)
    return "sbx runs as root, and root can write it: any earlier sandboxed run whose policy "
           "made it writable could have changed it";
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
  if (user.uid != 0 && entry.directory && (entry.mode & kSticky) != 0 && entry.owner != user.uid)
    return std::nullopt;
  return (entry.directory ? "the directory " : "the file ") + entry.path +
         " is writable on the host (" + host_reason(entry, user) +
         "), and programs discover files upward from the working directory: git, npm, cargo...";
}

namespace {

// Variables that name code or configuration to load, or a program to run by name. Shells:
// bash(1) (exported functions are BASH_FUNC_name%%; SHELLOPTS/BASHOPTS turn on xtrace, whose PS4
// is expanded with command substitution; ENV, PROMPT_COMMAND). git(1) ENVIRONMENT VARIABLES
// (GIT_DIR, GIT_CONFIG_*, GIT_EXEC_PATH, GIT_SSH_COMMAND, GIT_PAGER, GIT_EDITOR, ...). node(1),
// python(1), perlrun(1), ruby(1), java (JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS), npm-config(7)
// (npm_config_*), cargo's environment (CARGO_HOME holds config.toml), ld.so(8).
// clang-format off
constexpr std::array<std::string_view, 36> kCodeLoadingNames = {
    "SHELLOPTS", "BASHOPTS", "PS4", "ENV", "PROMPT_COMMAND",
    "NODE_OPTIONS", "NODE_PATH",
    "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE",
    "PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYOPT", "RUBYLIB",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
    "RUSTC_WRAPPER", "RUSTC", "RUSTDOC", "GOFLAGS",
    "EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "BROWSER", "SSH_ASKPASS", "GNUPGHOME",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH"};
// clang-format on
constexpr std::array<std::string_view, 6> kCodeLoadingPrefixes = {
    "BASH_FUNC_", "GIT_", "npm_config_", "NPM_CONFIG_", "CARGO_", "RUSTUP_"};
// git(1): identity and a prompt switch only; nothing here names a file or a program.
constexpr std::array<std::string_view, 7> kHarmlessGitNames = {
    "GIT_AUTHOR_NAME",     "GIT_AUTHOR_EMAIL",   "GIT_AUTHOR_DATE",    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::string_view listed_name : names)
    if (listed_name == name) return true;
  return false;
}

bool loads_code(std::string_view name) {
  if (listed(kCodeLoadingNames, name)) return true;
  if (listed(kHarmlessGitNames, name)) return false;
  for (std::string_view prefix : kCodeLoadingPrefixes)
    if (name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

}  // namespace

std::optional<std::string> code_loading_variable(const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    if (loads_code(name)) return std::string(name);
  }
  return std::nullopt;
}

}  // namespace sbx
