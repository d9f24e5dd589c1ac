// The landlock backend's pure parts: policy -> sbx-stage2 argv (Landlock mode) and the
// capabilities a given Landlock ABI can enforce. Nothing here touches the host.
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::landlock {

// One Landlock rule stage 2 will add ("read", "write" or "dev" rights beneath `path`).
struct RuleLine {
  std::string kind;
  std::string path;
  friend bool operator==(const RuleLine&, const RuleLine&) = default;
};

struct Translation {
  std::vector<std::string> argv;  // sbx-stage2 --landlock ... -- command...
  std::vector<RuleLine> rules;    // exactly the path rules in argv, in order
  int min_abi = 1;                // stage 2 refuses to run on a lower ABI
  std::vector<std::string> env;   // stage 2's environment = the command's (--env-environ)
  std::vector<std::string> notes;
};

// Paths readable for ":minimal" (the same set the bwrap backend binds).
const std::vector<std::string>& minimal_paths();
// Device files every sandboxed command may read, write and ioctl (what bwrap's --dev offers).
const std::vector<std::string>& device_paths();

// The first rule of `policy` Landlock cannot enforce exactly, described for a person (empty if
// none). Landlock only ever adds access beneath a path, so anything that takes access away
// inside an allowed tree is refused: write or read carve-outs, protected names, deny globs;
// also a unix-socket allow-list. Proxy-only network is enforced (ABI 4: TCP connect only to the
// proxy's port, on any address; see README.md) and needs network.proxy_ports from sbx exec.
std::string unenforceable_rule(const ResolvedPolicy& policy);

// Pure: the plan's argv for `request` with the trusted stage-2 path. Error names the rule it
// cannot enforce (see unenforceable_rule) or a bad request.
Result<Translation> translate(const TransformRequest& request, const std::string& stage2_path);

// What Landlock ABI `abi` lets this backend enforce (0 or less: nothing).
CapabilitySet capabilities_for_abi(int abi);

}  // namespace sbx::landlock
