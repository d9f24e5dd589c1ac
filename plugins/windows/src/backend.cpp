// The sbx-backend-windows module. Built on every platform: transform() is pure and prints the
// plan anywhere (`sbx debug windows`); probe() and exec() only do real work on Windows.
#include <exception>
#include <string>

#include "sbx/sdk/plugin.hpp"
#include "sbx/windows/plan.hpp"
#include "sbx/windows/plan_text.hpp"

#ifdef _WIN32
#include "win32/win32.hpp"
#endif

namespace sbx::windows {
namespace {

#ifndef _WIN32
constexpr const char* kHostName =
#if defined(__APPLE__)
    "macOS";
#elif defined(__linux__)
    "Linux";
#else
    "not Windows";
#endif
#endif

class WindowsBackend final : public Backend {
 public:
  explicit WindowsBackend(HostServices host) : Backend(host) {}

  ProbeReport probe(const ProbeContext& /*context*/) override {
#ifdef _WIN32
    try {
      return win32::probe();
    } catch (const std::exception& e) {
      return unavailable("probe failed: " + std::string(e.what()));
    }
#else
    ProbeReport report = unavailable(std::string("the windows backend needs Windows; this host "
                                                 "is ") +
                                     kHostName + " (`sbx debug windows` still prints its plan)");
    report.checks.push_back({"host_os", CheckStatus::kFail, kHostName,
                             "run sbx on Windows 10 or later to use this backend"});
    return report;
#endif
  }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    try {
      Result<WindowsPlan> plan = build_plan(request);
      if (!plan.ok()) return plan.failure();
      return to_exec_plan(*plan);
    } catch (const std::exception& e) {
      return Error{std::string("windows backend: transform failed: ") + e.what()};
    }
  }

  Result<ExitStatus> exec(const ExecPlan& exec_plan, const RunContext& /*run*/) override {
#ifdef _WIN32
    try {
      Result<WindowsPlan> plan = from_exec_plan(exec_plan);
      if (!plan.ok()) return plan.failure();
      const HostServices& services = host();
      return win32::run(
          *plan,
          [&services](std::string_view line) {
            services.log(SBX_LOG_DEBUG, std::string("windows backend: ") + std::string(line));
          },
          [&services](std::string_view line) {
            services.log(SBX_LOG_WARN, std::string("windows backend: ") + std::string(line));
          });
    } catch (const std::exception& e) {
      return Error{std::string("windows backend: exec failed: ") + e.what()};
    }
#else
    (void)exec_plan;
    return Error{std::string("windows backend: cannot run commands on ") + kHostName +
                 ": it needs Windows (use another backend here)"};
#endif
  }

 private:
  static ProbeReport unavailable(std::string summary) {
    ProbeReport report;
    report.available = false;
    report.summary = std::move(summary);
    return report;
  }
};

}  // namespace
}  // namespace sbx::windows

SBX_DECLARE_BACKEND(sbx::windows::WindowsBackend, "windows", "0.1.0",
                    "Windows restricted token + ACLs: write restriction and protected names")
