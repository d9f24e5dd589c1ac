// Resolution of a Policy against a cwd, a home directory and an environment into the
// ResolvedPolicy backends enforce. Reads the filesystem (existence, symlinks, .git files) but
// changes nothing.
#pragma once

#include <map>
#include <string>

#include "sbx/core/policy.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

struct ResolveContext {
  std::string cwd;   // absolute; ":cwd"
  std::string home;  // absolute; "~/"
  std::map<std::string, std::string> env;  // TMPDIR for ":tmpdir"
};

// Builds the context of this process (getcwd, $HOME or the passwd entry, environ).
Result<ResolveContext> current_resolve_context();

// Resolves special paths and "~", normalises, applies most-specific-wins with deny > write >
// read on ties, finds protected names under every writable root (a .git file adds the gitdir it
// names), and rejects a writable root that crosses a symlink, naming the symlink.
Result<ResolvedPolicy> resolve_policy(const Policy& policy, const ResolveContext& context);

}  // namespace sbx
