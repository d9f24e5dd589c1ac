// See landlock_ruleset.hpp for what each ABI adds and why every right is handled.
#include "landlock_ruleset.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sbx/sdk/unique_fd.hpp"

namespace sbx::stage2 {
namespace {

// uapi struct landlock_ruleset_attr as of ABI 6; older kernels accept the larger size as long
// as the fields they do not know are zero.
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};

// uapi struct landlock_path_beneath_attr (packed).
struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

// uapi struct landlock_net_port_attr (packed), rule type LANDLOCK_RULE_NET_PORT (ABI 4).
struct __attribute__((packed)) NetPortAttr {
  std::uint64_t allowed_access;
  std::uint64_t port;
};
constexpr int kRuleNetPort = 2;

constexpr unsigned kCreateRulesetVersion = 1u << 0;
constexpr unsigned kCreateRulesetErrata = 1u << 1;
constexpr int kRulePathBeneath = 1;

// Rights that make sense on a non-directory; the kernel rejects the others there (EINVAL).
constexpr std::uint64_t kFileRights =
    ll::kExecute | ll::kWriteFile | ll::kReadFile | ll::kTruncate | ll::kIoctlDev;

std::string errno_text(int err) { return std::strerror(err); }

// The root directory and /dev as this process sees them, looked up once per ruleset rather than
// once per rule (a ruleset has some thirty rules). Both are root-owned names no caller can swap
// while the ruleset is built; a name that cannot be looked up matches nothing, as before.
struct DevClosed {
  bool root_known = false;
  bool dev_known = false;
  struct stat root {};
  struct stat dev {};

  static DevClosed look_up() {
    DevClosed d;
    d.root_known = ::stat("/", &d.root) == 0;
    d.dev_known = ::stat("/dev", &d.dev) == 0;
    return d;
  }
  // Only a directory can be either (a file never shares a directory's device and inode).
  bool names_root_or_dev(const struct stat& st) const {
    if (!S_ISDIR(st.st_mode)) return false;
    return (root_known && root.st_dev == st.st_dev && root.st_ino == st.st_ino) ||
           (dev_known && dev.st_dev == st.st_dev && dev.st_ino == st.st_ino);
  }
};

// How a rule's path is opened and checked.
struct RuleKind {
  std::uint64_t rights;
  bool writable;                // opened without following a final symlink
  const DevClosed* dev_closed;  // refuse the root directory and /dev themselves; nullptr: off
};

// Adds one path rule. A missing path is skipped: no rule means no access, which only denies
// more. The rule is attached to what the path names now (symlinks followed for read and dev
// rules); a writable path must not be a symlink (core rejects those; fail closed anyway).
Status add_path_rule(int ruleset, const std::string& path, RuleKind kind) {
  const int flags = O_PATH | O_CLOEXEC | (kind.writable ? O_NOFOLLOW : 0);
  UniqueFd fd(::open(path.c_str(), flags));
  if (fd.get() < 0) {
    if (errno == ENOENT) return {};
    return Error{"open '" + path + "': " + errno_text(errno)};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error{"fstat '" + path + "': " + errno_text(errno)};
  if (S_ISLNK(st.st_mode)) return Error{"writable path '" + path + "' is a symlink"};
  // Decided on the opened object, so a path that became a symlink to / or /dev since the plan
  // was made is caught too: such a rule would open every device node (raw disks, terminals).
  if (kind.dev_closed != nullptr && kind.dev_closed->names_root_or_dev(st))
    return Error{"rule for '" + path + "' would open the whole of /dev (it names / or /dev)"};
  std::uint64_t rights = kind.rights;
  if (!S_ISDIR(st.st_mode)) rights &= kFileRights;
  if (rights == 0) return {};
  PathBeneathAttr attr{rights, fd.get()};
  if (::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &attr, 0) != 0)
    return Error{"add rule for '" + path + "': " + errno_text(errno)};
  return {};
}

Status add_rules(int ruleset, const std::vector<std::string>& paths, RuleKind kind) {
  for (const std::string& path : paths) {
    Status s = add_path_rule(ruleset, path, kind);
    if (!s.ok()) return s;
  }
  return {};
}

Result<int> parse_abi(const std::string& value) {
  if (value.size() != 1 || value[0] < '1' || value[0] > '0' + ll::kMaxKnownAbi)
    return Error{"--landlock expects a minimum ABI 1.." + std::to_string(ll::kMaxKnownAbi) +
                 ", got '" + value + "'"};
  return value[0] - '0';
}

Result<bool> parse_bool(const std::string& arg, const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  return Error{arg + " expects on|off, got '" + value + "'"};
}

}  // namespace

int landlock_abi() {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? -errno : static_cast<int>(abi);
}

long landlock_errata() {
  const long errata = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetErrata);
  return errata < 0 ? -errno : errata;
}

std::uint64_t handled_fs(int abi) {
  std::uint64_t fs = (ll::kMakeSym << 1) - 1;  // the 13 rights of ABI 1
  if (abi >= 2) fs |= ll::kRefer;
  if (abi >= 3) fs |= ll::kTruncate;
  if (abi >= 5) fs |= ll::kIoctlDev;
  return fs;
}

std::uint64_t read_rights(int abi) {
  return (ll::kExecute | ll::kReadFile | ll::kReadDir) & handled_fs(abi);
}

// Everything but creating device nodes (which needs CAP_MKNOD, never held in the sandbox).
std::uint64_t write_rights(int abi) { return handled_fs(abi) & ~(ll::kMakeChar | ll::kMakeBlock); }

std::uint64_t dev_rights(int abi) {
  return (ll::kReadFile | ll::kWriteFile | ll::kTruncate | ll::kIoctlDev) & handled_fs(abi);
}

// Listing only: READ_DIR is inherited beneath the path, but lets nothing be opened for reading.
std::uint64_t list_rights(int abi) { return ll::kReadDir & handled_fs(abi); }

std::uint64_t writes_only_handled(int abi) {
  return handled_fs(abi) & ~(ll::kExecute | ll::kReadFile | ll::kReadDir | ll::kIoctlDev);
}

Result<bool> parse_landlock_option(const std::string& arg, const std::string& value,
                                   LandlockSpec& spec) {
  if (arg == "--landlock") {
    Result<int> abi = parse_abi(value);
    if (!abi.ok()) return abi.failure();
    spec.enabled = true;
    spec.min_abi = *abi;
  } else if (arg == "--ll-fs") {
    if (value != "restricted" && value != "unrestricted")
      return Error{"--ll-fs expects restricted|unrestricted, got '" + value + "'"};
    spec.restrict_filesystem = value == "restricted";
  } else if (arg == "--ll-scope-abstract-unix") {
    Result<bool> on = parse_bool(arg, value);
    if (!on.ok()) return on.failure();
    spec.scope_abstract_unix = *on;
  } else if (arg == "--ll-read" || arg == "--ll-write" || arg == "--ll-dev" || arg == "--ll-list") {
    if (value.empty() || value.front() != '/')
      return Error{arg + " expects an absolute path, got '" + value + "'"};
    (arg == "--ll-read"    ? spec.read
     : arg == "--ll-write" ? spec.write
     : arg == "--ll-dev"   ? spec.dev
                           : spec.list)
        .push_back(value);
  } else {
    return false;
  }
  return true;
}

Result<UniqueFd> build_landlock_ruleset(const LandlockSpec& spec) {
  const int abi = landlock_abi();
  if (abi == -ENOSYS) return Error{"abi: Landlock is not built into this kernel"};
  if (abi == -EOPNOTSUPP) return Error{"abi: Landlock is built but not enabled (boot lsm=)"};
  if (abi < 0) return Error{"abi: " + errno_text(-abi)};
  if (abi < spec.min_abi)
    return Error{"abi: the policy needs Landlock ABI " + std::to_string(spec.min_abi) +
                 ", the kernel has " + std::to_string(abi)};
  // A port allow-list is only meaningful where TCP is handled at all; fail closed otherwise.
  if (!spec.connect_tcp_ports.empty() && (abi < 4 || !spec.block_tcp))
    return Error{
        "abi: a TCP connect port rule needs Landlock ABI 4 with TCP handled, the kernel "
        "has " +
        std::to_string(abi)};
  RulesetAttr attr{};
  const std::uint64_t handled = !spec.restrict_filesystem ? 0
                                : spec.writes_only        ? writes_only_handled(abi)
                                                          : handled_fs(abi);
  attr.handled_access_fs = handled;
  if (abi >= 4 && spec.block_tcp) attr.handled_access_net = ll::kNetBindTcp | ll::kNetConnectTcp;
  if (abi >= 6)
    attr.scoped = ll::kScopeSignal | (spec.scope_abstract_unix ? ll::kScopeAbstractUnix : 0);
  if (attr.handled_access_fs == 0 && attr.handled_access_net == 0 && attr.scoped == 0)
    return UniqueFd();  // nothing this kernel could restrict for this policy (checked by min_abi)
  const std::size_t size = abi >= 6   ? sizeof attr
                           : abi >= 4 ? 2 * sizeof(std::uint64_t)
                                      : sizeof(std::uint64_t);
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0)));
  if (ruleset.get() < 0) return Error{"create_ruleset: " + errno_text(errno)};
  if (spec.restrict_filesystem) {
    const DevClosed dev_closed = DevClosed::look_up();
    const DevClosed* closed = spec.keep_dev_closed ? &dev_closed : nullptr;
    // A rule may grant only handled rights (the kernel refuses others with EINVAL).
    Status s = add_rules(ruleset.get(), spec.read, {read_rights(abi) & handled, false, closed});
    if (s.ok())
      s = add_rules(ruleset.get(), spec.write, {write_rights(abi) & handled, true, closed});
    // Device files and listings are meant for /dev and / themselves.
    if (s.ok()) s = add_rules(ruleset.get(), spec.dev, {dev_rights(abi) & handled, false, nullptr});
    if (s.ok())
      s = add_rules(ruleset.get(), spec.list, {list_rights(abi) & handled, false, nullptr});
    if (!s.ok()) return s.failure();
  }
  // TCP: handled, so every bind and connect is denied except connect() to the listed ports.
  if (abi >= 4 && spec.block_tcp) {
    for (std::uint16_t port : spec.connect_tcp_ports) {
      NetPortAttr rule{ll::kNetConnectTcp, port};
      if (::syscall(SYS_landlock_add_rule, ruleset.get(), kRuleNetPort, &rule, 0) != 0)
        return Error{"add rule for TCP port " + std::to_string(port) + ": " + errno_text(errno)};
    }
  }
  return ruleset;
}

int restrict_self(int ruleset) noexcept {
  if (ruleset < 0) return 0;
  return ::syscall(SYS_landlock_restrict_self, ruleset, 0) == 0 ? 0 : errno;
}

Status apply_landlock(const LandlockSpec& spec) {
  Result<UniqueFd> ruleset = build_landlock_ruleset(spec);
  if (!ruleset.ok()) return ruleset.failure();
  if (const int err = restrict_self(ruleset->get()); err != 0)
    return Error{"restrict_self: " + errno_text(err)};
  return {};
}

int drop_all_capabilities_raw(const char** step) noexcept {
  // Ambient first (they would be re-granted at exec), then the bounding set (so a uid-0 exec
  // cannot regain anything), then the three sets of this process.
  *step = "clear ambient";
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return errno;
  *step = "drop bounding capabilities";
  // One PR_CAPBSET_DROP per capability, no PR_CAPBSET_READ first: dropping one that is not in
  // the set succeeds too, and EINVAL marks the end of what this kernel knows. (Half the system
  // calls of reading each bit first; this runs in every command's child.)
  for (unsigned long cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0) continue;
    if (errno == EINVAL) break;  // past the last capability this kernel knows
    // Without CAP_SETPCAP a non-root user cannot shrink the set, and needs not: under
    // no_new_privs a non-root exec gains no capability (no setuid, no file capabilities).
    if (errno == EPERM && ::geteuid() != 0 && ::getuid() != 0) break;
    // Root without CAP_SETPCAP: only a capability still in the set is a failure.
    if (errno == EPERM && ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 0) continue;
    return errno;
  }
  *step = "capset";
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  // Verified, not assumed: a capability left in any set could undo the confinement.
  *step = "verify capabilities";
  if (::syscall(SYS_capget, &header, data) != 0) return errno;
  for (const auto& d : data) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) return EPERM;
  }
  return 0;
}

Status drop_all_capabilities() {
  const char* step = "";
  const int err = drop_all_capabilities_raw(&step);
  if (err != 0) return Error{std::string(step) + ": " + errno_text(err)};
  return {};
}

}  // namespace sbx::stage2
