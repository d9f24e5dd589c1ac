// The plugin itself: a Backend over the pure plan (firejail_plan) and the probe. Links only
// the sbx SDK; exported symbol: sbx_plugin_entry_v2 (SBX_DECLARE_BACKEND).
#include <exception>
#include <new>

#include "firejail_plan.hpp"
#include "firejail_probe.hpp"
#include "sbx/sdk/plugin.hpp"

namespace firejail_backend {

class FirejailBackend final : public sbx::Backend {
 public:
  explicit FirejailBackend(sbx::HostServices host) : Backend(host) {}

  sbx::ProbeReport probe(const sbx::ProbeContext& /*context*/) override {
    // Exceptions never cross the plugin boundary: a failure becomes "unavailable".
    try {
      return probe_host();
    } catch (const std::exception& e) {
      sbx::ProbeReport report;
      report.summary = std::string("probe failed: ") + e.what();
      return report;
    }
  }

  // Pure apart from lstat(2): firejail can only cover paths that exist, so whether a path
  // exists decides between "nothing to do" and "cannot enforce".
  sbx::Result<sbx::ExecPlan> transform(const sbx::TransformRequest& request) const override {
    try {
      sbx::Result<sbx::ExecPlan> plan = build_plan(request, host_path_facts());
      if (plan.ok()) host().log(SBX_LOG_DEBUG, "firejail: plan built");
      return plan;
    } catch (const std::bad_alloc&) {
      return sbx::Error{"firejail: out of memory while building the plan"};
    } catch (const std::exception& e) {
      return sbx::Error{std::string("firejail: ") + e.what()};
    }
  }
  // exec(): the default, HostServices::spawn (absolute execve, clean fds, signals forwarded).
};

}  // namespace firejail_backend

SBX_DECLARE_BACKEND(firejail_backend::FirejailBackend, "firejail", "0.1.0",
                    "Confines commands with firejail (/usr/bin/firejail): read-only /, writable "
                    "roots, private /dev, no network, seccomp, no capabilities")
