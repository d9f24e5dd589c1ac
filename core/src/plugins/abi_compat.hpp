// Plugins built for an older minor ABI, seen through today's Backend interface.
//
// ABI 1.3 appended ExecPlan::host_paths and 1.4 appended ExecPlan::windows. A plugin built for
// an older minor returns the ExecPlan of its time from transform() and reads that layout in
// exec(); handing it today's would have it write a Result<ExecPlan> of the wrong size. The
// loader therefore wraps such a plugin's Backend in an adapter that calls it through its own
// layout and converts plans at the boundary: the fields an old plugin cannot know come back
// empty, and its exec() gets the fields it knows. Later appended fields get the same treatment
// here. ABI 1.5 changed no layout a plugin returns or takes (it appended to the host table and
// the capabilities), so a 1.4 plugin is used as it is. ABI 1.6 appended run_started to the host
// table: a plugin built before it never calls it, so the host calls it right before that
// plugin's exec() (where its work alongside the run started before 1.6).
#pragma once

#include <cstdint>
#include <memory>

#include "sbx/sdk/backend.hpp"

namespace sbx::plugins {

// The first minor ABI whose ExecPlan has host_paths.
inline constexpr std::uint16_t kAbiMinorPlanHostPaths = 3;
// The first minor ABI whose ExecPlan has windows (today's layout, unchanged by 1.5 and 1.6).
inline constexpr std::uint16_t kAbiMinorPlanWindows = 4;
// The first minor ABI whose host table has run_started, which a plugin calls when its run's
// first process exists; an older plugin's exec() is preceded by that call instead.
inline constexpr std::uint16_t kAbiMinorRunStarted = 6;

// `plugin` is the Backend the plugin's create() returned (owned through its destroy()). Returns
// it unchanged for a plugin built for ABI minor >= kAbiMinorRunStarted, an adapter otherwise.
std::shared_ptr<Backend> adapt_to_current_abi(std::shared_ptr<Backend> plugin,
                                              std::uint16_t abi_minor);

}  // namespace sbx::plugins
