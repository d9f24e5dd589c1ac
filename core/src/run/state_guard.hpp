// Keeps a sandboxed run from switching sbx's per-user state off for later runs, or from letting
// one be planted, by widening the mode of a directory on the way to it (issue #32 B2).
//
// Why a run has to: sbx keeps state only where no one but this user (and root) can rename what
// is on the way (sbx/sdk/private_state.hpp why_shared_dir). The state directories themselves
// are read-only in every sandbox, but a command with a writable root above one (HOME as the
// workspace, ~/.cache/sbx below it) can still chmod every directory between the two: chmod(2)
// needs only ownership of the inode, not write access to it or its parent, and a read-only bind
// of the state directory stops nothing above it. No mount can stop it without making that
// directory read-only (~/.cache, or HOME itself), and neither seccomp nor Landlock can tell one
// path's chmod from another's. `chmod 1777 ~/.cache` then made every later run refuse its state
// directory (mount points left unrecorded, the proxy refused): a widened mode is never repaired
// by a later run, which cannot tell who widened it — the user, on purpose, or a sandbox — and
// another user may have renamed entries while it was wide.
//
// The run that gave the command that power can tell: before the command starts it notes each
// such directory of this user (open, mode); when the command has ended, a mode widened to one
// that a state location may not have is set back to the one noted (what the user could do:
// chmod(2), the owner may; narrowed modes are left to the next run, which repairs them,
// private_state.hpp repair_narrowed_dir), with a warning. While the mode was wide another user
// could have renamed a state directory away and put one of this user's own directories in its
// place: a state directory found at its name afterwards that is not the one noted is renamed
// aside (`<name>.replaced-<inode>`) and never used, and the next run makes a fresh one.
// A symlink on the way (a symlinked ~/.cache, common) is the same case one step earlier: sbx
// keeps the directory it points to read-only, but a command with the directory holding the
// link writable can point the link elsewhere, at a state directory it made, which a later run
// would find private (its own, 0700) and trust. So the guard notes each such symlink of this
// user (its inode and target) too, and after the command puts back a link that was replaced,
// changed or removed, moving what stands at its name aside (`<name>.replaced-<inode>`).
// Not covered: a run killed before its end (SIGKILL) leaves the widened mode or the swapped
// link; for a mode the next run refuses the state directory with the reason and what to do
// (chmod), it never trusts it; a swapped link to a private directory it cannot tell apart.
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/types.hpp"

namespace sbx {

// The directories a sandboxed command of `policy` may chmod on the way to each of `state_dirs`:
// from each writable root that holds a state directory (every directory from "/" when the
// filesystem is not restricted) down to it, both included, each once, shallowest first. Pure.
std::vector<std::string> chmodable_state_ancestors(const ResolvedPolicy& policy,
                                                   const std::vector<std::string>& state_dirs);

// The guard of one run (see the top of this file). Nothing is noted on Windows.
class StateModeGuard {
 public:
  // Notes each of `dirs` (chmodable_state_ancestors) that is a directory of this process's
  // effective user, on an O_PATH descriptor (close-on-exec) with its mode, and each of `links`
  // (chmodable_state_ancestors of the state directories' names) that is a symlink of this user,
  // with its inode and target.
  explicit StateModeGuard(const std::vector<std::string>& dirs,
                          const std::vector<std::string>& links = {});
  ~StateModeGuard();
  StateModeGuard(const StateModeGuard&) = delete;
  StateModeGuard& operator=(const StateModeGuard&) = delete;

  // After the command: sets back every noted directory whose mode it widened (group or other
  // write where the noted mode had none that private_state::why_shared_dir refuses), and moves
  // aside a directory found at a noted name below one that is not the noted one, and puts
  // back every noted symlink that is not at its name any more. Logs a warning for each and
  // returns them.
  std::vector<std::string> finish();

 private:
  struct Noted {
    std::string path;
    int fd = -1;
    unsigned mode = 0;  // the permission bits (07777)
    unsigned long long dev = 0;
    unsigned long long ino = 0;
  };
  struct NotedLink {
    std::string path;
    std::string target;
    unsigned long long dev = 0;
    unsigned long long ino = 0;
  };
  std::vector<std::string> restore_links() const;
  std::vector<Noted> noted_;
  std::vector<NotedLink> links_;
};

}  // namespace sbx
