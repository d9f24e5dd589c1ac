// The landlock backend's pure parts: policy -> sbx-stage2 argv (Landlock mode) and the
// capabilities a given Landlock ABI can enforce. Nothing here touches the host.
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::landlock {

// One Landlock rule stage 2 will add ("read", "write", "dev" or "list" rights beneath `path`).
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

// One entry of the host's root directory, as the module saw it when the plan was made.
struct RootEntry {
  std::string name;      // a single component, never "." or ".."
  bool symlink = false;  // lstat says symlink (e.g. /bin -> usr/bin on merged-/usr hosts)
  friend bool operator==(const RootEntry&, const RootEntry&) = default;
};

// What the module gathers on the host for the pure translator.
struct HostFacts {
  std::string stage2_path;  // the trusted sbx-stage2 (absolute)
  // The entries of /, gathered only when a rule covers /dev (needs_root_entries); otherwise
  // root_listed stays false and root_error empty.
  bool root_listed = false;
  std::vector<RootEntry> root_entries{};
  std::string root_error{};  // why / could not be listed
};

// True when a read or write rule of `policy` names / or /dev itself. Landlock rights are
// inherited by everything beneath a rule's path, so such a rule would open every device node
// (raw disks, the host's other terminals, /dev/kmsg); the translator grants the entries of /
// one by one instead and needs them from the host.
bool needs_root_entries(const ResolvedPolicy& policy);

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

// Pure: the plan's argv for `request` with the host's facts. Error names the rule it cannot
// enforce (see unenforceable_rule) or a bad request (no trusted stage 2; / needed but not
// listed). A read or write rule on / becomes: the same rule on every entry of / except /dev and
// symlinks, and a listing-only rule on / ("list"); a rule on /dev itself becomes a listing-only
// rule on /dev. Entries beneath /dev the policy names stay as written.
Result<Translation> translate(const TransformRequest& request, const HostFacts& facts);

// What Landlock ABI `abi` lets this backend enforce (0 or less: nothing).
CapabilitySet capabilities_for_abi(int abi);

}  // namespace sbx::landlock
