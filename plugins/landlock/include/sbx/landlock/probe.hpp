// The landlock backend's probe: what this kernel offers, tried rather than guessed.
#pragma once

#include <string>

#include "sbx/sdk/types.hpp"

namespace sbx::landlock {

// Checks, in order: landlock_abi (ENOSYS = not built, EOPNOTSUPP = not enabled at boot),
// landlock_errata, restrict_self (a ruleset handling every right of the ABI applied in a forked
// child; E2BIG = already 16 domains deep), seccomp_user_notify (the same child installs a filter
// with a listener, as stage 2's metadata guard does), landlock_domain (what can and cannot be
// known about an outer domain), per-ABI rule checks (truncate, tcp, ioctl_dev, scoping),
// seccomp, and the stage-2 helper. Capabilities: capabilities_for_abi() when everything needed
// passes.
ProbeReport run_probe(const std::string& stage2_path);

}  // namespace sbx::landlock
