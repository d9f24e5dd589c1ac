// The Landlock ruleset of Landlock mode (linux/landlock/README.md, plugins/landlock/README.md),
// built by the launcher (landlock_launch.hpp) in sbx and applied in the command's child.
//
// The kernel headers of Debian 12 stop at Landlock ABI 3, so the constants and structs of ABI
// 1..7 are spelled out here (values from the kernel's uapi/linux/landlock.h). Everything is
// used only where the running kernel's ABI has it: the ruleset handles every access right the
// ABI knows, so anything not granted by a rule below is denied.
//
//   ABI 1  filesystem rights (execute, read/write files, read dirs, make/remove entries)
//   ABI 2  REFER (renames and links across directories; without it they are always denied)
//   ABI 3  TRUNCATE (truncate(2), O_TRUNC; before ABI 3 truncation is not restricted at all)
//   ABI 4  TCP bind/connect (restricted network: no TCP bind or connect at all)
//   ABI 5  IOCTL_DEV (ioctl on device files)
//   ABI 6  scoping: abstract unix sockets and signals cannot reach outside the domain
//   ABI 7  audit-logging flags for restrict_self (defaults are kept)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/unique_fd.hpp"

namespace sbx::stage2 {

namespace ll {
constexpr std::uint64_t kExecute = 1ull << 0;
constexpr std::uint64_t kWriteFile = 1ull << 1;
constexpr std::uint64_t kReadFile = 1ull << 2;
constexpr std::uint64_t kReadDir = 1ull << 3;
constexpr std::uint64_t kRemoveDir = 1ull << 4;
constexpr std::uint64_t kRemoveFile = 1ull << 5;
constexpr std::uint64_t kMakeChar = 1ull << 6;
constexpr std::uint64_t kMakeDir = 1ull << 7;
constexpr std::uint64_t kMakeReg = 1ull << 8;
constexpr std::uint64_t kMakeSock = 1ull << 9;
constexpr std::uint64_t kMakeFifo = 1ull << 10;
constexpr std::uint64_t kMakeBlock = 1ull << 11;
constexpr std::uint64_t kMakeSym = 1ull << 12;
constexpr std::uint64_t kRefer = 1ull << 13;             // ABI 2
constexpr std::uint64_t kTruncate = 1ull << 14;          // ABI 3
constexpr std::uint64_t kIoctlDev = 1ull << 15;          // ABI 5
constexpr std::uint64_t kNetBindTcp = 1ull << 0;         // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ull << 1;      // ABI 4
constexpr std::uint64_t kScopeAbstractUnix = 1ull << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ull << 1;        // ABI 6
constexpr int kMaxKnownAbi = 7;
}  // namespace ll

// The highest ABI the kernel supports, or -errno: -ENOSYS when Landlock is not built into the
// kernel, -EOPNOTSUPP when it is built but not enabled at boot (lsm=).
int landlock_abi();
// The errata bitmask (fixed issues) of the running kernel, or -errno.
long landlock_errata();

// What to enforce. Paths are absolute; a missing path is skipped (nothing can be reached through
// a path that does not exist, so skipping only ever denies more).
struct LandlockSpec {
  bool enabled = false;             // stage2 runs in Landlock mode (no namespaces around it)
  int min_abi = 1;                  // refuse to run below this ABI
  bool restrict_filesystem = true;  // handle every filesystem right of the ABI
  // With restrict_filesystem: handle only the rights that change the filesystem
  // (writes_only_handled()); reading, listing and executing stay unrestricted. The bwrap
  // backend's write layer (write_layer.hpp), where bwrap's mounts already decide what is seen.
  bool writes_only = false;
  bool block_tcp = false;  // handle TCP bind+connect with no rule: none allowed
  // With block_tcp (ABI 4+): the TCP ports connect() may still reach, on any address (Landlock
  // port rules are not per address). Network mode proxy: the proxy's port only.
  std::vector<std::uint16_t> connect_tcp_ports;
  bool scope_abstract_unix = false;  // ABI 6+: no abstract unix socket outside the domain
  std::vector<std::string> read;     // execute, read files, list directories
  std::vector<std::string> write;    // read + create/remove/rename/truncate/write beneath
  std::vector<std::string> dev;      // device files read+write+ioctl (e.g. /dev/null, /dev/tty)
  std::vector<std::string> list;     // list directories only (READ_DIR, inherited beneath)
  // Refuse a read or write rule whose path opens the root directory or /dev itself: either
  // would grant every device node under /dev (raw disks, other terminals). The translator
  // never asks for one (it splits / into its entries); this catches a path swapped for a
  // symlink after the plan was made. Tests that confine with / readable turn it off.
  bool keep_dev_closed = true;
};

// The access rights the ruleset handles on `abi` for filesystem, network and scope.
std::uint64_t handled_fs(int abi);
std::uint64_t read_rights(int abi);
std::uint64_t write_rights(int abi);
std::uint64_t dev_rights(int abi);
std::uint64_t list_rights(int abi);
// The rights a writes_only ruleset handles: handled_fs() minus execute, read_file, read_dir and
// ioctl_dev (an ioctl is not a write; terminals need theirs).
std::uint64_t writes_only_handled(int abi);

// Consumes stage2 option `arg` with `value` into `spec`; false if `arg` is not a Landlock option.
// Error on a bad value.
Result<bool> parse_landlock_option(const std::string& arg, const std::string& value,
                                   LandlockSpec& spec);

// Creates the ruleset for the running kernel's ABI and adds the rules; checks min_abi. An empty
// descriptor when this kernel restricts nothing for `spec`. Error names the step and path. May
// allocate: the launcher calls it in sbx, before any child exists.
Result<UniqueFd> build_landlock_ruleset(const LandlockSpec& spec);

// landlock_restrict_self(ruleset) on the calling thread (and what it execs); nothing for -1.
// Requires no_new_privs. 0 or errno. Async-signal-safe.
int restrict_self(int ruleset) noexcept;

// Both of the above (for tests and callers that need no fork in between). Error names the step.
Status apply_landlock(const LandlockSpec& spec);

// Landlock mode has no user namespace to drop privileges in: clears the ambient and inheritable
// sets and the bounding set, then effective/permitted, so even uid 0 execs the command with no
// capability (Landlock does not stop e.g. init_module or reboot). Requires CAP_SETPCAP to clear
// the bounding set when any bit is set; Error names what was left. Then checks that no
// capability is left in the effective, permitted or inheritable set.
Status drop_all_capabilities();
// The same, async-signal-safe: 0 or errno, *step naming the step that failed.
int drop_all_capabilities_raw(const char** step) noexcept;

}  // namespace sbx::stage2
