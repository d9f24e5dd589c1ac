#include "sbx/windows/acl_apply.hpp"

namespace sbx::windows {
namespace {

// The parent of a Windows path, or "" at a root ("C:\" or "\\server\share").
std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.find_last_of('\\');
  if (slash == std::string::npos || slash <= 2) return {};
  if (path.starts_with("\\\\") && path.find('\\', path.find('\\', 2) + 1) >= slash) return {};
  return path.substr(0, slash);
}

Status ensure_directory(const std::string& path, DaclHost& host, std::vector<std::string>& created,
                        AclApplyStats& stats) {
  Result<bool> present = host.exists(path);
  if (!present.ok()) return present.failure();
  if (*present) return {};
  // Missing parents first, so the protected name cannot be created by the command either.
  if (const std::string parent = parent_dir(path); !parent.empty()) {
    if (Status status = ensure_directory(parent, host, created, stats); !status.ok()) return status;
  }
  Result<bool> made = host.create_directory(path);
  if (!made.ok()) return made.failure();
  if (*made) {
    created.push_back(path);
    ++stats.created;
  }
  return {};
}

// One ACE under its path's lock: read, compare, write only if missing.
Status apply_one(const Ace& ace, DaclHost& host, AclApplyStats& stats) {
  if (Status status = host.lock(ace.path); !status.ok()) return status;
  Status result;
  Result<bool> present = host.has_ace(ace);
  if (!present.ok()) {
    result = present.failure();
  } else if (*present) {
    ++stats.skipped;
  } else {
    result = host.add_ace(ace);
    if (result.ok()) ++stats.written;
  }
  host.unlock(ace.path);
  return result;
}

}  // namespace

Result<AclApplyStats> apply_acl_plan(const std::vector<std::string>& create_dirs,
                                     const std::vector<Ace>& aces, DaclHost& host,
                                     std::vector<std::string>& created) {
  AclApplyStats stats;
  for (const std::string& dir : create_dirs) {
    if (Status status = ensure_directory(dir, host, created, stats); !status.ok())
      return status.failure();
  }
  for (const Ace& ace : aces) {
    if (Status status = apply_one(ace, host, stats); !status.ok()) return status.failure();
  }
  return stats;
}

std::vector<std::string> remove_created(const std::vector<std::string>& created, DaclHost& host) {
  std::vector<std::string> left;
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    if (!host.remove_if_empty(*it)) left.push_back(*it);
  }
  return left;
}

}  // namespace sbx::windows
