// sbx-backend-landlock: the thin module around the pure translator. probe() asks the kernel;
// transform() is the translator with the host's trusted stage-2 path; exec() is the host spawn
// (stage 2 is the whole sandbox: no launcher, no host state to clean up) with sbx's pid added.
#include <unistd.h>

#include <exception>
#include <string>

#include "sbx/landlock/probe.hpp"
#include "sbx/landlock/translate.hpp"
#include "sbx/sdk/plugin.hpp"

namespace sbx::landlock {
namespace {

class LandlockBackend final : public Backend {
 public:
  explicit LandlockBackend(HostServices host) : Backend(host) {}

  ProbeReport probe(const ProbeContext& /*context*/) override {
    return run_probe(std::string(host().stage2_path()));
  }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    try {
      Result<Translation> t = translate(request, std::string(host().stage2_path()));
      if (!t.ok()) return Error{t.error()};
      ExecPlan plan;
      plan.argv = std::move(t->argv);
      plan.cwd = request.cwd;
      // Stage 2 (static: no LD_* acts on it) runs with the command's environment and hands it
      // on (--env-environ); as arguments it would be world-readable in /proc.
      plan.env = std::move(t->env);
      plan.notes = std::move(t->notes);
      return plan;
    } catch (const std::exception& e) {
      return Error{std::string("landlock: transform failed: ") + e.what()};
    }
  }

  // Stage 2 learns which process started it, so that it can kill the command's whole tree when
  // that process dies (no pid namespace does it here). Added at exec, not in the plan: a plan
  // run by someone else has no such parent, and stage 2 then uses the parent it finds.
  Result<ExitStatus> exec(const ExecPlan& plan) override {
    ExecPlan tied = plan;
    if (!tied.argv.empty())
      tied.argv.insert(tied.argv.begin() + 1, {"--parent-pid", std::to_string(::getpid())});
    return host().spawn(tied);
  }
};

}  // namespace
}  // namespace sbx::landlock

SBX_DECLARE_BACKEND(sbx::landlock::LandlockBackend, "landlock", "0.1.0",
                    "Landlock + seccomp via sbx-stage2, no namespaces (Linux)")
