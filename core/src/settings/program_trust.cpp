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

// The policy lets the sandbox write `path`: a filesystem it does not restrict (or one an outer
// sandbox owns: not known, so taken as writable), or a write rule covering it.
bool policy_writes(const ResolvedPolicy& policy, const std::string& path) {
  if (policy.filesystem_kind != FilesystemKind::kRestricted) return true;
  return rule_access(policy, path) == Access::kWrite;
}

// The host lets `user` write the step (see plantable in the header for the ACL mask).
bool host_writes(const PathStep& step, const HostUser& user) {
  if (user.uid == 0) return true;  // CAP_DAC_OVERRIDE: root writes whatever the mode says
  // chmod(2): the owner may change the mode of what it owns at any time, so a sandboxed run
  // that cleared the write bits (chmod 555) can set them again: the bits say nothing.
  if (step.owner == user.uid) return true;
  return (step.mode & (kGroupWrite | kOtherWrite)) != 0;
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
                                     const HostUser& user) {
  if (!policy_writes(policy, step.path) || !host_writes(step, user)) return std::nullopt;
  const std::string what =
      step.directory ? "the directory " + step.path : "the program " + step.path;
  return what + " is writable by the sandbox (" + writable_root_of(policy, step.path) + ")";
}

std::optional<std::string> first_plantable(const std::vector<PathStep>& steps,
                                           const ResolvedPolicy& policy, const HostUser& user) {
  for (const PathStep& step : steps) {
    if (std::optional<std::string> why = plantable(step, policy, user)) return why;
  }
  return std::nullopt;
}

}  // namespace sbx
