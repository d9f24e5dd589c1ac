// Pieces of policy resolution shared between its translation units. Private to libsbx.
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/types.hpp"

namespace sbx::resolution {

// For every write rule R and protected name N: R/N (existing or not). A .git regular file under
// R adds the gitdir it names and that gitdir's commondir (where hooks and config live).
// Sorted by path, one per path.
std::vector<ProtectedPath> protected_paths(const std::vector<PathRule>& rules,
                                           const std::vector<std::string>& names,
                                           std::vector<std::string>& notes);

}  // namespace sbx::resolution
