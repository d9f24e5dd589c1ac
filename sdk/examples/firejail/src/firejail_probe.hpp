// The honest probe: is firejail at its fixed path, is it a version this plan was written for,
// and does a sandbox with exactly the plan's flags actually start here?
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "sbx/sdk/types.hpp"

namespace firejail_backend {

// The oldest firejail the plan's flags were verified with (Debian 12).
inline constexpr int kMinVersion[3] = {0, 9, 72};

// Parses "firejail version 0.9.72" (first line of `firejail --version`) into {0, 9, 72}.
std::optional<std::array<int, 3>> parse_version(std::string_view version_output);

// What the backend can enforce whenever the probe passes. Deliberately absent: read
// restriction and deny globs (firejail has no read allow-list and no '**'), proxy network and
// unix-socket allow-lists. Carve-outs and protected names hold for paths that exist when the
// command starts; transform() refuses a policy that needs a missing one kept uncreatable.
sbx::CapabilitySet enforced_capabilities();

// Runs every check. Takes well under a second on a normal host; each helper run is bounded.
sbx::ProbeReport probe_host();

}  // namespace firejail_backend
