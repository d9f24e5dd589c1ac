#include "plugins/abi_compat.hpp"

#include <utility>

namespace sbx::plugins {

// The Backend interface exactly as a plugin built for ABI 1.0-1.2 compiled it: the same
// virtual functions in the same order (hence the same vtable slots), with the ExecPlan of that
// time. Calling an old plugin's object through this declaration is what the toolchain
// fingerprint makes sound: both sides agree on the C++ ABI, and only the plan type differs.
// External linkage on purpose: in an anonymous namespace the compiler would see that no class
// derives from it and devirtualize every call to the pure declaration (a crash).
class BackendAbi1_2 {
 public:
  BackendAbi1_2(const BackendAbi1_2&) = delete;
  BackendAbi1_2& operator=(const BackendAbi1_2&) = delete;
  virtual ~BackendAbi1_2() = default;
  virtual ProbeReport probe(const ProbeContext& context) = 0;
  virtual Result<ExecPlanAbi1_2> transform(const TransformRequest& request) const = 0;
  virtual Result<ExitStatus> exec(const ExecPlanAbi1_2& plan) = 0;
};

namespace {

ExecPlan from_abi1_2(ExecPlanAbi1_2 old) {
  ExecPlan plan;
  plan.argv = std::move(old.argv);
  plan.env = std::move(old.env);
  plan.cwd = std::move(old.cwd);
  plan.notes = std::move(old.notes);
  return plan;  // host_paths stays empty: an old plugin cannot have filled it
}

ExecPlanAbi1_2 to_abi1_2(const ExecPlan& plan) {
  return ExecPlanAbi1_2{plan.argv, plan.env, plan.cwd, plan.notes};
}

class Abi1_2Adapter final : public Backend {
 public:
  explicit Abi1_2Adapter(std::shared_ptr<Backend> plugin)
      : Backend(HostServices(nullptr)), plugin_(std::move(plugin)) {}

  ProbeReport probe(const ProbeContext& context) override { return old().probe(context); }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    Result<ExecPlanAbi1_2> plan = old().transform(request);
    if (!plan.ok()) return Error{plan.error()};
    return from_abi1_2(std::move(*plan));
  }

  Result<ExitStatus> exec(const ExecPlan& plan) override { return old().exec(to_abi1_2(plan)); }

 private:
  BackendAbi1_2& old() const { return *reinterpret_cast<BackendAbi1_2*>(plugin_.get()); }

  std::shared_ptr<Backend> plugin_;
};

}  // namespace

std::shared_ptr<Backend> adapt_to_current_abi(std::shared_ptr<Backend> plugin,
                                              std::uint16_t abi_minor) {
  if (abi_minor >= kAbiMinorPlanHostPaths) return plugin;
  return std::make_shared<Abi1_2Adapter>(std::move(plugin));
}

}  // namespace sbx::plugins
