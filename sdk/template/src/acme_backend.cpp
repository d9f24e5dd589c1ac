// sbx-backend-acme: the Backend (probe, transform; exec is the SDK's default, the host's spawn)
// and its descriptor. The one exported symbol is sbx_plugin_entry_v2 (SBX_DECLARE_BACKEND).
#include <dirent.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "acme_plan.hpp"
#include "sbx/sdk/plugin.hpp"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444  // the same number on every architecture
#endif

namespace acme {
namespace {

// The kernel's Landlock ABI, or 0 when Landlock is missing or disabled (landlock(7)).
int landlock_abi() {
  const long abi =
      ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

std::vector<std::string> root_entries() {
  std::vector<std::string> names;
  if (DIR* dir = ::opendir("/")) {
    while (const dirent* entry = ::readdir(dir)) names.emplace_back(entry->d_name);
    ::closedir(dir);
  }
  return names;
}

class AcmeBackend final : public sbx::Backend {
 public:
  explicit AcmeBackend(sbx::HostServices host) : Backend(host) {}

  // Answers within sbx's probe deadline (10 s; sdk/REFERENCE.md): two cheap checks. A real
  // backend also runs a trial sandbox here and reports what it saw.
  sbx::ProbeReport probe(const sbx::ProbeContext&) override {
    sbx::ProbeReport report;
    const std::string stage2(host().stage2_path());
    const bool stage2_ok = !stage2.empty() && ::access(stage2.c_str(), X_OK) == 0;
    report.checks.push_back({"stage2",
                             stage2_ok ? sbx::CheckStatus::kPass : sbx::CheckStatus::kFail,
                             stage2.empty() ? "none offered by the host" : stage2,
                             stage2_ok ? "" : "install sbx with its sbx-stage2 (libexec/sbx)"});
    const int abi = landlock_abi();
    report.checks.push_back(
        {"landlock", abi > 0 ? sbx::CheckStatus::kPass : sbx::CheckStatus::kFail,
         abi > 0 ? "ABI " + std::to_string(abi) : "not available",
         abi > 0 ? "" : "boot a kernel with Landlock enabled (5.13 or later, lsm=...,landlock)"});
    report.available = stage2_ok && abi > 0;
    report.summary = report.available
                         ? "Landlock ABI " + std::to_string(abi) + " through sbx-stage2"
                         : "needs Landlock and sbx-stage2";
    if (report.available) report.capabilities = kCapabilities;
    return report;
  }

  sbx::Result<sbx::ExecPlan> transform(const sbx::TransformRequest& request) const override {
    return make_plan(request, host().stage2_path(), root_entries());
  }
};

}  // namespace
}  // namespace acme

SBX_DECLARE_BACKEND(acme::AcmeBackend, "acme", "0.1.0",
                    "Template backend: Landlock and sbx's syscall filter through sbx-stage2")
