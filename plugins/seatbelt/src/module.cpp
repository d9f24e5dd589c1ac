// The sbx-backend-seatbelt plugin: probe + transform; exec is the host's spawn.
#include "sbx/sdk/plugin.hpp"
#include "sbx/seatbelt/probe.hpp"
#include "sbx/seatbelt/profile.hpp"

namespace sbx::seatbelt {
namespace {

class SeatbeltBackend final : public Backend {
 public:
  explicit SeatbeltBackend(HostServices host) : Backend(host) {}

  ProbeReport probe(const ProbeContext&) override {
    try {
      return evaluate_probe(gather_probe_facts());
    } catch (const std::exception& e) {
      ProbeReport report;
      report.summary = std::string("seatbelt probe failed: ") + e.what();
      return report;
    }
  }

  // No side effects, and the same on every host except for the per-user cache directory,
  // read on macOS only, so `sbx debug seatbelt` can show the plan anywhere.
  Result<ExecPlan> transform(const TransformRequest& request) const override {
    try {
      return build_exec_plan(request, gather_mac_host_facts());
    } catch (const std::exception& e) {
      return Error{std::string("seatbelt: transform failed: ") + e.what()};
    }
  }
};

}  // namespace
}  // namespace sbx::seatbelt

SBX_DECLARE_BACKEND(sbx::seatbelt::SeatbeltBackend, "seatbelt", "0.1.0",
                    "macOS Seatbelt (sandbox-exec) with a generated SBPL profile")
