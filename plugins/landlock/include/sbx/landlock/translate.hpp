// The landlock backend's pure parts: policy -> sbx-stage2 argv (Landlock mode) and the
// capabilities a given Landlock ABI can enforce. Nothing here touches the host.
#pragma once

#include <map>
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

// One entry of a host directory, as the module saw it when the plan was made.
struct DirEntry {
  std::string name;      // a single component, never "." or ".."
  bool symlink = false;  // a symlink (e.g. /bin -> usr/bin on merged-/usr hosts)
  friend bool operator==(const DirEntry&, const DirEntry&) = default;
};

// What the module gathers on the host for the pure translator.
struct HostFacts {
  std::string stage2_path;  // the trusted sbx-stage2 (absolute)
  // Mount points of device filesystems outside /dev (devtmpfs, devpts, or /dev's own
  // filesystem bound elsewhere, e.g. a chroot's /dev), from the mount table. Only meaningful
  // with mounts_known; the translator refuses a restricted filesystem without it.
  bool mounts_known = false;
  std::vector<std::string> device_mounts{};
  // The entries of each directory directories_to_list() named (sorted by name); a directory
  // that could not be listed is missing, and listing_error says why.
  std::map<std::string, std::vector<DirEntry>> listings{};
  std::string listing_error{};
};

// Paths no rule may reach whole: /dev and every device mount outside it. Landlock rights are
// inherited by everything beneath a rule's path, so a rule on / (`:root`) would open every
// device node: raw disks, the host's other terminals, /dev/kmsg.
std::vector<std::string> closed_paths(const std::vector<std::string>& device_mounts);

// The directories translate() needs listed for `policy`: for each read or write rule that
// covers a closed path, the rule's path and every directory below it down to the closed
// path's parent (the rule is granted entry by entry along that way). Empty: nothing to list.
std::vector<std::string> directories_to_list(const ResolvedPolicy& policy,
                                             const std::vector<std::string>& device_mounts);

// Paths readable for ":minimal" (the same set the bwrap backend binds).
const std::vector<std::string>& minimal_paths();
// Device files every sandboxed command may read, write and ioctl (what bwrap's --dev offers).
const std::vector<std::string>& device_paths();

// The first rule of `policy` Landlock cannot enforce exactly, described for a person (empty if
// none). Landlock only ever adds access beneath a path, so anything that takes access away
// inside an allowed tree is refused: write or read carve-outs, protected names, deny globs;
// also a unix-socket allow-list, and local binding (network.allow_local_binding) unless the
// network is enabled. Proxy-only network is enforced (ABI 4: TCP connect only to the
// proxy's port, on any address; see README.md) and needs network.proxy_ports from sbx exec.
std::string unenforceable_rule(const ResolvedPolicy& policy);

// Pure: the plan's argv for `request` with the host's facts. Error names the rule it cannot
// enforce (see unenforceable_rule) or a bad request (no trusted stage 2; a directory it needs
// not listed; the mount table unknown). A read or write rule that covers a closed path is
// split: a listing-only rule ("list") on its path and the same rule on each entry there, except
// symlinks (their targets are other entries, or closed), recursing into entries that still
// cover a closed path; a closed path itself is only listed. Rules beneath a closed path (e.g.
// /dev/pts named by the policy) stay as written.
Result<Translation> translate(const TransformRequest& request, const HostFacts& facts);

// What Landlock ABI `abi` lets this backend enforce (0 or less: nothing).
CapabilitySet capabilities_for_abi(int abi);

}  // namespace sbx::landlock
