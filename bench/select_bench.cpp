// Selection cost for a 200-entry policy: should_sandbox (question 1), required_capabilities,
// and Manager::available_backend (question 2) over four in-process fake backends, three of
// which are passed over (not loaded, unavailable, missing a capability) before the last is
// chosen. Fake probes return at once, so this measures the manager itself, not real probes.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "sbx/core/manager.hpp"

namespace {

constexpr int kEntries = 200;

sbx::Policy make_policy() {
  sbx::Policy policy;
  policy.filesystem.kind = sbx::FilesystemKind::kRestricted;
  policy.network.mode = sbx::NetworkMode::kEnabled;
  policy.filesystem.entries.push_back({":root", "", sbx::Access::kRead});
  for (int i = 1; i < kEntries; ++i) {
    const sbx::Access access = i % 3 == 0 ? sbx::Access::kWrite : sbx::Access::kRead;
    policy.filesystem.entries.push_back({"/srv/p" + std::to_string(i), "", access});
  }
  return policy;
}

// 200 rules: "/" read, 66 writable roots each with a read-only and a denied child, the rest
// plain readable paths; plus protected names and a deny glob. Sorted parents first.
sbx::ResolvedPolicy make_resolved() {
  sbx::ResolvedPolicy policy;
  policy.cwd = "/w";
  policy.rules.push_back({"/", sbx::Access::kRead});
  std::vector<sbx::PathRule> children;
  for (int i = 0; static_cast<int>(policy.rules.size() + children.size()) < kEntries; ++i) {
    const std::string root = "/w" + std::to_string(i);
    if (i % 3 == 0) {
      policy.rules.push_back({root, sbx::Access::kWrite});
      children.push_back({root + "/vendor", sbx::Access::kRead});
      children.push_back({root + "/.env", sbx::Access::kDeny});
      policy.protected_paths.push_back({root + "/.git", root, true, true});
    } else {
      policy.rules.push_back({root, sbx::Access::kRead});
    }
  }
  policy.rules.insert(policy.rules.end(), children.begin(), children.end());
  policy.rules.resize(kEntries);
  policy.deny_globs = {"/**/*.pem"};
  return policy;
}

class FakeBackend final : public sbx::Backend {
 public:
  FakeBackend(bool available, sbx::CapabilitySet capabilities)
      : Backend(sbx::HostServices(nullptr)), available_(available), capabilities_(capabilities) {}
  sbx::ProbeReport probe(const sbx::ProbeContext&) override {
    sbx::ProbeReport report;
    report.available = available_;
    report.summary = available_ ? "ready" : "kernel feature missing";
    report.capabilities = capabilities_;
    report.checks.push_back({"feature",
                             available_ ? sbx::CheckStatus::kPass : sbx::CheckStatus::kFail,
                             "observed", ""});
    return report;
  }
  sbx::Result<sbx::ExecPlan> transform(const sbx::TransformRequest&) const override {
    return sbx::Error{"not used in this benchmark"};
  }

 private:
  bool available_;
  sbx::CapabilitySet capabilities_;
};

sbx::CapabilitySet everything() {
  sbx::CapabilitySet all;
  for (sbx::Capability c : sbx::kAllCapabilities) all.add(c);
  return all;
}

sbx::PluginRegistry make_registry() {
  sbx::CapabilitySet weak = everything();
  weak.remove(sbx::Capability::kWriteCarveouts);
  std::vector<sbx::LoadedPlugin> plugins;
  plugins.push_back(
      {"down", "1", "", "/fake/down.so", std::make_shared<FakeBackend>(false, everything())});
  plugins.push_back({"weak", "1", "", "/fake/weak.so", std::make_shared<FakeBackend>(true, weak)});
  plugins.push_back(
      {"good", "1", "", "/fake/good.so", std::make_shared<FakeBackend>(true, everything())});
  return sbx::PluginRegistry::from_plugins(std::move(plugins));
}

void BM_ShouldSandbox(benchmark::State& state) {
  const sbx::Policy policy = make_policy();
  for (auto _ : state) {
    auto decision = sbx::should_sandbox(policy, sbx::SandboxPreference::kAuto);
    benchmark::DoNotOptimize(decision);
  }
}
BENCHMARK(BM_ShouldSandbox);

void BM_RequiredCapabilities(benchmark::State& state) {
  const sbx::ResolvedPolicy policy = make_resolved();
  for (auto _ : state) benchmark::DoNotOptimize(sbx::required_capabilities(policy));
}
BENCHMARK(BM_RequiredCapabilities);

void BM_AvailableBackend(benchmark::State& state) {
  const sbx::ResolvedPolicy policy = make_resolved();
  const sbx::PluginRegistry registry = make_registry();
  const sbx::Manager manager(registry, {"missing", "down", "weak", "good"});
  for (auto _ : state) {
    sbx::BackendChoice choice = manager.available_backend(policy);
    if (!choice.backend) state.SkipWithError("no backend chosen");
    benchmark::DoNotOptimize(choice);
  }
}
BENCHMARK(BM_AvailableBackend);

// Both questions together, as `sbx exec` asks them.
void BM_SelectEndToEnd(benchmark::State& state) {
  const sbx::Policy policy = make_policy();
  const sbx::ResolvedPolicy resolved = make_resolved();
  const sbx::PluginRegistry registry = make_registry();
  const sbx::Manager manager(registry, {"missing", "down", "weak", "good"});
  for (auto _ : state) {
    auto decision = sbx::should_sandbox(policy, sbx::SandboxPreference::kAuto);
    sbx::BackendChoice choice = manager.available_backend(resolved);
    benchmark::DoNotOptimize(decision);
    benchmark::DoNotOptimize(choice);
  }
}
BENCHMARK(BM_SelectEndToEnd);

}  // namespace

BENCHMARK_MAIN();
