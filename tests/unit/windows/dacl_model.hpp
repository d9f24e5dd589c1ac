// A model of a Windows file system's DACLs for the plan-side ACL tests and the ACL benchmark
// (bench/windows_acl_bench.cpp): a tree of directories and files, the explicit ACEs of the
// plan's capability SID on each, and a count of DACL writes the way SetNamedSecurityInfoW does
// them (an inheritable ACE on a directory rewrites the DACL of that directory and of every
// object below it). Not a stand-in for Windows' access checks: it counts and records only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sbx/windows/acl_apply.hpp"

namespace sbx::windows::model {

class DaclModel final : public DaclHost {
 public:
  // Paths in Windows form; parents must be added before children.
  void add_directory(const std::string& path) { nodes_[path].directory = true; }
  void add_file(const std::string& path) { nodes_[path].directory = false; }

  Result<bool> exists(const std::string& path) override { return nodes_.contains(path); }
  Result<bool> create_directory(const std::string& path) override {
    if (nodes_.contains(path)) return false;
    nodes_[path].directory = true;
    return true;
  }
  Status lock(const std::string& path) override {
    if (!locked_.insert(path).second) return Error{"model: " + path + " locked twice"};
    ++locks_taken;
    return {};
  }
  void unlock(const std::string& path) override { locked_.erase(path); }
  Result<bool> has_ace(const Ace& ace) override {
    if (!locked_.contains(ace.path)) return Error{"model: DACL of " + ace.path + " read unlocked"};
    auto it = nodes_.find(ace.path);
    if (it == nodes_.end()) return Error{"model: " + ace.path + " does not exist"};
    return it->second.aces.contains(ace.kind);
  }
  Status add_ace(const Ace& ace) override {
    if (!locked_.contains(ace.path))
      return Error{"model: DACL of " + ace.path + " written unlocked"};
    auto it = nodes_.find(ace.path);
    if (it == nodes_.end()) return Error{"model: " + ace.path + " does not exist"};
    it->second.aces.insert(ace.kind);
    dacl_writes += 1;
    // Inheritable kinds on a directory: Windows rewrites every object below it too.
    if (it->second.directory && ace.kind != AceKind::kDenyDelete)
      dacl_writes += descendants(ace.path);
    return {};
  }
  bool remove_if_empty(const std::string& path) override {
    if (held.contains(path) || descendants(path) != 0) return false;
    return nodes_.erase(path) == 1;
  }
  // Removes every explicit ACE of the SID from `path` (the per-run model's revert): one DACL
  // write, propagated below like the add.
  void remove_aces(const std::string& path) {
    auto it = nodes_.find(path);
    if (it == nodes_.end() || it->second.aces.empty()) return;
    const bool inheritable = it->second.directory &&
                             std::any_of(it->second.aces.begin(), it->second.aces.end(),
                                         [](AceKind kind) { return kind != AceKind::kDenyDelete; });
    it->second.aces.clear();
    dacl_writes += 1 + (inheritable ? descendants(path) : 0);
  }
  std::size_t descendants(const std::string& path) const {
    const std::string prefix = path + "\\";
    std::size_t count = 0;
    for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && it->first.starts_with(prefix);
         ++it)
      ++count;
    return count;
  }
  bool contains(const std::string& path) const { return nodes_.contains(path); }
  std::size_t size() const { return nodes_.size(); }
  bool any_locked() const { return !locked_.empty(); }

  std::size_t dacl_writes = 0;  // DACLs rewritten, propagation included
  std::size_t locks_taken = 0;
  std::set<std::string> held;  // paths another run holds open (remove_if_empty leaves them)

 private:
  struct Node {
    bool directory = false;
    std::set<AceKind> aces;
  };
  std::map<std::string, Node> nodes_;
  std::set<std::string> locked_;
};

}  // namespace sbx::windows::model
