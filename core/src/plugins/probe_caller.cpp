// probe_caller (sbx/core/caller.hpp): the probe's container line, from linux/caller. Run by
// `sbx backends --probe` only, never by a run: the user namespace trial forks.
#include "sbx/core/caller.hpp"

#ifdef __linux__
#include "caller.hpp"
#endif

namespace sbx {

#ifdef __linux__

CallerConfinement probe_caller() {
  CallerConfinement out;
  const caller::ProcessStatus status = caller::read_status();
  out.markers = caller::container_markers();
  if (status.known) {
    out.seccomp = status.seccomp_mode == 0   ? "none"
                  : status.seccomp_mode == 1 ? "strict"
                  : status.seccomp_mode == 2 ? "filter"
                                             : "unknown";
    out.seccomp_filters = status.seccomp_filters;
    out.no_new_privs = status.no_new_privs;
    out.effective = caller::capability_names(status.effective);
    out.bounding = caller::capability_names(status.bounding);
  }
  out.capabilities_known = caller::last_capability() + 1;
  const bool bounded_admin = ((status.bounding >> caller::kCapSysAdmin) & 1u) != 0;
  out.container = !out.markers.empty()                                         ? "inside"
                  : status.known && status.seccomp_mode == 2 && !bounded_admin ? "like"
                                                                               : "none";
  const caller::UserNamespaceTrial userns = caller::try_user_namespace(status);
  out.user_namespaces = userns.allowed;
  out.user_namespaces_observed = userns.observed;
  out.user_namespaces_fix = userns.fix;
  return out;
}

#else

CallerConfinement probe_caller() { return {}; }

#endif

// Named for this file: the Windows cross build compiles libsbx in unity batches.
namespace {

std::string caller_joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool caller_holds(const std::vector<std::string>& caps, const char* name) {
  for (const std::string& cap : caps)
    if (cap == name) return true;
  return false;
}

std::string caller_seccomp_part(const CallerConfinement& c) {
  if (c.seccomp == "none") return "no filter";
  if (c.seccomp == "strict") return "strict mode";
  if (c.seccomp != "filter") return c.seccomp;
  if (c.seccomp_filters < 0) return "filter mode";
  return std::to_string(c.seccomp_filters) + (c.seccomp_filters == 1 ? " filter" : " filters");
}

}  // namespace

std::string caller_text(const CallerConfinement& c) {
  if (c.container == "unknown") return "not examined on this platform";
  std::string out = c.container == "inside"
                        ? "inside a container (" + caller_joined(c.markers) + ")"
                    : c.container == "like"
                        ? "confined like a container, no runtime marker (a seccomp filter, no "
                          "CAP_SYS_ADMIN in the bounding set)"
                        : "not inside a container (no runtime marker)";
  out += " - seccomp: " + caller_seccomp_part(c) + "; user namespaces: ";
  out += c.user_namespaces
             ? std::string("yes")
             : "no - " + c.user_namespaces_observed +
                   (c.user_namespaces_fix.empty() ? std::string()
                                                  : " (fix: " + c.user_namespaces_fix + ")");
  out += "; capabilities: " + std::to_string(c.effective.size()) + " of " +
         std::to_string(c.capabilities_known) + " effective, " + std::to_string(c.bounding.size()) +
         " in the bounding set";
  if (!caller_holds(c.bounding, "CAP_SYS_ADMIN")) out += ", no CAP_SYS_ADMIN";
  out += std::string("; no_new_privs: ") + (c.no_new_privs ? "1" : "0");
  return out;
}

}  // namespace sbx
