// What confines the process that runs sbx, seen from inside it (issue #38): the signs of a
// container runtime, the seccomp state and capabilities the runtime left it, and whether it may
// create a user namespace, with the real cause and its fix when it may not. Read by the bwrap
// probe (its user_namespaces check) and by libsbx (the probe's "container" line).
//
// Everything here reads /proc or tries the thing itself in a child; nothing is guessed from a
// version string. A marker file proves little (any image may carry /.dockerenv): the line
// reports what it found and what the process is allowed, and decisions are taken on the latter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sbx::caller {

// proc(5) /proc/self/status, the fields the kernel confines a process with.
struct ProcessStatus {
  bool known = false;         // the file was read and had Seccomp: and CapEff:
  int seccomp_mode = -1;      // Seccomp: 0 none, 1 strict, 2 filter
  int seccomp_filters = -1;   // Seccomp_filters: (Linux 5.9); -1 when the kernel shows none
  bool no_new_privs = false;  // NoNewPrivs:
  std::uint64_t effective = 0;
  std::uint64_t permitted = 0;
  std::uint64_t bounding = 0;
};
ProcessStatus read_status();

inline constexpr int kCapSysAdmin = 21;  // linux/capability.h CAP_SYS_ADMIN

// The highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap, Linux 3.2).
int last_capability();
// "CAP_SYS_ADMIN"; "CAP_<n>" for a number newer than this build's table.
std::string capability_name(int cap);
// The names of the capabilities in `set` up to last_capability(), by number.
std::vector<std::string> capability_names(std::uint64_t set);

// The signs a container runtime leaves, each as it was found: "/.dockerenv" (Docker),
// "/run/.containerenv" (Podman), "container=<name> (/run/systemd/container)",
// "container=<name> (pid 1)" (systemd-nspawn, LXC, Podman; pid 1's environment is readable
// only with the rights to trace it), "cgroup <path>" (a runtime's cgroup naming: docker,
// kubepods, libpod, containerd, crio, lxc). Empty when none is found.
std::vector<std::string> container_markers();

// Whether this process may create a user namespace, tried in a child (clone(2) with
// CLONE_NEWUSER, as bwrap makes its namespaces), and when it may not, why and what to do.
struct UserNamespaceTrial {
  bool allowed = false;
  bool by_seccomp = false;  // this process's seccomp filter refused it (the kernel never saw it)
  std::string observed;     // what was seen, the cause first
  std::string fix;          // "" when allowed
};
UserNamespaceTrial try_user_namespace(const ProcessStatus& status);

}  // namespace sbx::caller
