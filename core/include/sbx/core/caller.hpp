// What confines the process running sbx, for every backend alike (issue #38): whether it runs
// inside a container, and what the runtime allowed it (seccomp, user namespaces, capabilities).
// `sbx backends --probe` prints it as its `container` line and, with --json, as "container".
#pragma once

#include <string>
#include <vector>

namespace sbx {

struct CallerConfinement {
  // "inside": a container runtime's marker was found (markers); "like": none, but the process
  // is confined as a container's is (a seccomp filter and no CAP_SYS_ADMIN in its bounding
  // set); "none": neither; "unknown": not examined on this platform.
  std::string container = "unknown";
  std::vector<std::string> markers;  // "/.dockerenv", "cgroup /docker/<id>", ...
  std::string seccomp = "unknown";   // "none", "strict", "filter" (proc(5) Seccomp)
  int seccomp_filters = -1;          // Seccomp_filters; -1 when the kernel does not say
  bool no_new_privs = false;
  bool user_namespaces = false;          // a new user namespace could be created
  std::string user_namespaces_observed;  // what the trial saw; when refused, the cause first
  std::string user_namespaces_fix;       // "" when allowed
  std::vector<std::string> effective;    // capability names, by number
  std::vector<std::string> bounding;
  int capabilities_known = 0;  // how many capabilities this kernel has (cap_last_cap + 1)
};

// Reads /proc and tries a user namespace in a child (linux/caller). Changes nothing. On other
// platforms the fields stay "unknown".
CallerConfinement probe_caller();

// The text of the probe's line after its label: "inside a container (/.dockerenv) - seccomp: 1
// filter; user namespaces: no - <cause> (fix: ...); capabilities: 14 of 41 effective, 14 in the
// bounding set, no CAP_SYS_ADMIN; no_new_privs: 0".
std::string caller_text(const CallerConfinement& caller);

}  // namespace sbx
