// The landlock backend's pure parts: policy -> the typed plan and its printed form, the
// sbx-stage2 argv (Landlock mode), and the capabilities a given Landlock ABI can enforce.
// Nothing here touches the host.
#pragma once

#include <cstdint>
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

// How the command may use the network (stage 2's --net in Landlock mode): no TCP at all and
// the restricted seccomp filter (blocked), every socket (open), TCP connect to the proxy's port
// only and the proxy-mode filter (proxy).
enum class Network : std::uint8_t { kBlocked, kOpen, kProxy };

// The plan, typed: what exec() runs. The translator fills it and prints it as plan_argv(); it
// reaches exec() unchanged in the plan's detail (plan.hpp), which turns it into the launcher's
// launch (launch_of) without reading the printed argv back.
struct LandlockPlan {
  int min_abi = 1;                  // the launcher refuses to run on a lower ABI
  bool restrict_filesystem = true;  // --ll-fs restricted (else unrestricted: no rule at all)
  std::vector<RuleLine> rules;      // the path rules, in order
  bool scope_abstract_unix = false;
  Network network = Network::kBlocked;
  std::uint16_t proxy_port = 0;  // kProxy: the only TCP port connect() reaches
  std::vector<std::string> command;
  friend bool operator==(const LandlockPlan&, const LandlockPlan&) = default;
};

// The printed plan (`sbx exec --dry-run`, `sbx debug`), which `sbx-stage2` runs by hand with the
// same launcher: STAGE2 --landlock MIN_ABI --ll-fs restricted|unrestricted [--ll-KIND PATH]...
// --ll-scope-abstract-unix on|off --net blocked|open|proxy [--proxy-port P] --env-environ --
// COMMAND...
std::vector<std::string> plan_argv(const std::string& stage2_path, const LandlockPlan& plan);

struct Translation {
  LandlockPlan plan;
  std::vector<std::string> argv;  // plan_argv(facts.stage2_path, plan)
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
