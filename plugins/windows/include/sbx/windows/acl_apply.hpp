// Applying a plan's directories and ACEs, separated from Win32 so that the decisions (what is
// created, which ACE is already there and skipped, what is locked while it is read and written,
// what is removed afterwards) are unit-tested and benchmarked on any host against a model of a
// file system (tests/unit/windows/dacl_model.hpp). src/win32/acl.cpp implements DaclHost with
// the real Win32 calls.
//
// The rules:
//  * ACEs are never removed after a run. They name the plan's derived capability SID
//    (identity.hpp), which only a token built for exactly the same plan holds; the next run of
//    that plan finds them and writes nothing. This is what makes big trees cheap: writing an
//    inheritable ACE makes Windows rewrite the ACL of every file below it.
//  * An ACE counts as present only as an explicit (not inherited) ACE for that SID with the same
//    type, rights and inheritance. Anything else (missing, different rights, only inherited) is
//    written again, so a tree the user moved or recreated heals on the next run.
//  * Each read-check-write of one path's DACL happens under that path's lock (acl_lock_name),
//    so concurrent runs never lose each other's update. A lock that cannot be taken in time is
//    an error (fail closed), never a write without it.
//  * Missing directories of the plan are created (parents first) and, after the run, removed
//    again in reverse order if they are empty and nobody holds them (the host decides).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/windows/plan.hpp"

namespace sbx::windows {

// What the apply logic needs from a file system, for the plan's capability SID. Paths are in
// Windows form, as in the plan.
class DaclHost {
 public:
  virtual ~DaclHost() = default;
  virtual Result<bool> exists(const std::string& path) = 0;
  // True if this call created it; false if it exists already (a concurrent run made it between
  // exists() and this call: then it is not this run's to remove).
  virtual Result<bool> create_directory(const std::string& path) = 0;
  // Serialises DACL updates on `path` with every other run; unlock() follows every successful
  // lock().
  virtual Status lock(const std::string& path) = 0;
  virtual void unlock(const std::string& path) = 0;
  // True if the DACL of `path` already holds `ace` explicitly (same type, rights, inheritance).
  virtual Result<bool> has_ace(const Ace& ace) = 0;
  // Merges `ace` into the DACL of `path` (one DACL write; Windows propagates it below).
  virtual Status add_ace(const Ace& ace) = 0;
  // Removes an empty directory this run created; false (and no error) if it is not empty or
  // someone else holds it.
  virtual bool remove_if_empty(const std::string& path) = 0;
};

struct AclApplyStats {
  std::size_t created = 0;  // directories created
  std::size_t written = 0;  // ACEs written (DACL writes)
  std::size_t skipped = 0;  // ACEs already present
  friend bool operator==(const AclApplyStats&, const AclApplyStats&) = default;
};

// Applies a plan's create_dirs and aces in order. `created` receives every directory this call
// created, in creation order (also when it fails part-way, so the caller can clean up).
Result<AclApplyStats> apply_acl_plan(const std::vector<std::string>& create_dirs,
                                     const std::vector<Ace>& aces, DaclHost& host,
                                     std::vector<std::string>& created);

// After the run: removes the directories apply_acl_plan created, newest first, if empty and
// unheld. Returns the ones left in place.
std::vector<std::string> remove_created(const std::vector<std::string>& created, DaclHost& host);

}  // namespace sbx::windows
