#include "plugins/abi_compat.hpp"

#include <utility>

#include "sbx/core/runtime.hpp"

namespace sbx::plugins {

// The Backend interface exactly as a plugin built for an older minor ABI compiled it: the same
// virtual functions in the same order (hence the same vtable slots), with the ExecPlan of that
// time (`OldPlan`). Calling an old plugin's object through this declaration is what the
// toolchain fingerprint makes sound: both sides agree on the C++ ABI, and only the plan type
// differs. External linkage on purpose: in an anonymous namespace the compiler would see that
// no class derives from it and devirtualize every call to the pure declaration (a crash).
template <typename OldPlan>
class BackendWithOldPlan {
 public:
  BackendWithOldPlan(const BackendWithOldPlan&) = delete;
  BackendWithOldPlan& operator=(const BackendWithOldPlan&) = delete;
  virtual ~BackendWithOldPlan() = default;
  virtual ProbeReport probe(const ProbeContext& context) = 0;
  virtual Result<OldPlan> transform(const TransformRequest& request) const = 0;
  virtual Result<ExitStatus> exec(const OldPlan& plan) = 0;
};

namespace {

// Conversions between today's ExecPlan and an older layout: the fields the old layout has are
// copied; the others stay empty on the way in (an old plugin cannot have filled them) and are
// dropped on the way out (it would misread them).
ExecPlan from_old(ExecPlanAbi1_2 old) {
  ExecPlan plan;
  plan.argv = std::move(old.argv);
  plan.env = std::move(old.env);
  plan.cwd = std::move(old.cwd);
  plan.notes = std::move(old.notes);
  return plan;
}

ExecPlan from_old(ExecPlanAbi1_3 old) {
  ExecPlan plan = from_old(ExecPlanAbi1_2{std::move(old.argv), std::move(old.env),
                                          std::move(old.cwd), std::move(old.notes)});
  plan.host_paths = std::move(old.host_paths);
  return plan;
}

template <typename OldPlan>
OldPlan to_old(const ExecPlan& plan);

template <>
ExecPlanAbi1_2 to_old<ExecPlanAbi1_2>(const ExecPlan& plan) {
  return ExecPlanAbi1_2{plan.argv, plan.env, plan.cwd, plan.notes};
}

template <>
ExecPlanAbi1_3 to_old<ExecPlanAbi1_3>(const ExecPlan& plan) {
  return ExecPlanAbi1_3{plan.argv, plan.env, plan.cwd, plan.notes, plan.host_paths};
}

template <typename OldPlan>
class OldAbiAdapter final : public Backend {
 public:
  explicit OldAbiAdapter(std::shared_ptr<Backend> plugin)
      : Backend(HostServices(nullptr)), plugin_(std::move(plugin)) {}

  ProbeReport probe(const ProbeContext& context) override { return old().probe(context); }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    Result<OldPlan> plan = old().transform(request);
    if (!plan.ok()) return plan.failure();
    return from_old(std::move(*plan));
  }

  Result<ExitStatus> exec(const ExecPlan& plan) override {
    return old().exec(to_old<OldPlan>(plan));
  }

 private:
  BackendWithOldPlan<OldPlan>& old() const {
    return *reinterpret_cast<BackendWithOldPlan<OldPlan>*>(plugin_.get());
  }

  std::shared_ptr<Backend> plugin_;
};

// A plugin built before ABI 1.6 never says when its run's first process exists
// (sbx_host_v1::run_started), so the host's work alongside the run (the created-names scan)
// starts right before its exec(), where it started before 1.6. Without this such a plugin's
// runs would do all of that work after the command (correct, but none of it overlapped).
// Core's own spawner (the default exec) says it again after its vfork; only the first call
// counts.
class StartsRunBeforeExec final : public Backend {
 public:
  explicit StartsRunBeforeExec(std::shared_ptr<Backend> plugin)
      : Backend(HostServices(nullptr)), plugin_(std::move(plugin)) {}

  ProbeReport probe(const ProbeContext& context) override { return plugin_->probe(context); }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    return plugin_->transform(request);
  }

  Result<ExitStatus> exec(const ExecPlan& plan) override {
    notify_run_started();
    return plugin_->exec(plan);
  }

 private:
  std::shared_ptr<Backend> plugin_;
};

std::shared_ptr<Backend> adapt_plan_layout(std::shared_ptr<Backend> plugin,
                                           std::uint16_t abi_minor) {
  if (abi_minor >= kAbiMinorPlanWindows) return plugin;
  if (abi_minor >= kAbiMinorPlanHostPaths)
    return std::make_shared<OldAbiAdapter<ExecPlanAbi1_3>>(std::move(plugin));
  return std::make_shared<OldAbiAdapter<ExecPlanAbi1_2>>(std::move(plugin));
}

}  // namespace

std::shared_ptr<Backend> adapt_to_current_abi(std::shared_ptr<Backend> plugin,
                                              std::uint16_t abi_minor) {
  std::shared_ptr<Backend> current = adapt_plan_layout(std::move(plugin), abi_minor);
  if (abi_minor >= kAbiMinorRunStarted) return current;
  return std::make_shared<StartsRunBeforeExec>(std::move(current));
}

}  // namespace sbx::plugins
