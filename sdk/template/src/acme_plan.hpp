// The template backend's pure mapping: a resolved policy becomes the sbx-stage2 command line
// that enforces it with Landlock (`sbx-stage2 --help`, Landlock mode), or an Error naming the
// rule it cannot enforce. No I/O here: what it needs of the host comes in as arguments, so every
// rule is unit-tested (tests/acme_plan_test.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace acme {

// What this backend enforces when its probe passes, and nothing more: sbx passes it over for a
// policy that needs anything else, and transform() refuses such a policy on its own too.
// syscall_filter is required for every sandboxed run (sdk/REFERENCE.md): sbx-stage2 installs
// sbx's filter in every mode.
inline constexpr sbx::CapabilitySet kCapabilities{sbx::Capability::kWriteRestriction,
                                                  sbx::Capability::kNetworkBlock,
                                                  sbx::Capability::kSyscallFilter};

// The device files a command may open for writing (everything else under /dev stays closed:
// reading "/" must not open raw disks).
inline const std::vector<std::string> kDevices = {"/dev/null", "/dev/zero", "/dev/full",
                                                  "/dev/random", "/dev/urandom"};

// `stage2`: HostServices::stage2_path() (absolute; empty where the host has none).
// `root_entries`: the names directly in "/" (the backend reads them once per plan), so that
// every one but "dev" is readable and /dev is only listed.
sbx::Result<sbx::ExecPlan> make_plan(const sbx::TransformRequest& request, std::string_view stage2,
                                     const std::vector<std::string>& root_entries);

}  // namespace acme
