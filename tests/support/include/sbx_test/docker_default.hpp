// Docker's default confinement without a daemon: `sbx_docker_default_exec [--user UID:GID] --
// PROGRAM [ARG...]` (tests/support/src/docker_default_exec.cpp) runs PROGRAM with the capability
// sets and the seccomp profile a `docker run` container gets by default, as root or as the given
// user. What a test needs to use it and to check what the program saw.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sbx::test {

// moby oci/caps/defaults.go DefaultCapabilities(), by number (linux/capability.h).
inline const std::vector<std::pair<int, const char*>>& docker_default_capabilities() {
  static const std::vector<std::pair<int, const char*>> caps = {
      {0, "CAP_CHOWN"},        {1, "CAP_DAC_OVERRIDE"}, {3, "CAP_FOWNER"},
      {4, "CAP_FSETID"},       {5, "CAP_KILL"},         {6, "CAP_SETGID"},
      {7, "CAP_SETUID"},       {8, "CAP_SETPCAP"},      {10, "CAP_NET_BIND_SERVICE"},
      {13, "CAP_NET_RAW"},     {18, "CAP_SYS_CHROOT"},  {27, "CAP_MKNOD"},
      {29, "CAP_AUDIT_WRITE"}, {31, "CAP_SETFCAP"}};
  return caps;
}

// The same as a capability mask (0xa80425fb: what /proc/self/status shows as CapBnd in a
// default container, and as CapEff/CapPrm for its root).
inline unsigned long long docker_default_capability_mask() {
  unsigned long long mask = 0;
  for (const auto& [number, name] : docker_default_capabilities()) mask |= 1ull << number;
  return mask;
}

}  // namespace sbx::test
