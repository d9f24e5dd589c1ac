// Could a sandbox have planted a program (sbx/core/program_trust.hpp)? Pure: the facts come from
// the walk in program_lookup.cpp.
#include "sbx/core/program_trust.hpp"

#include <optional>
#include <string>
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

}  // namespace sbx
