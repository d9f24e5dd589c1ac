// Parse and resolve a 200-entry policy against a real directory tree; resolve workspace-write
// without and with the toolchain caches (":caches") against this process's own context.
// The tree lives in a fresh mkdtemp directory and is removed at exit (with the project cache
// the ":caches" case made for it).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "sbx/core/caches.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/resolve.hpp"

namespace {

namespace fs = std::filesystem;

constexpr int kEntries = 200;

// A temp tree: cwd/, home/, and d<i>/ for the writable entries, each with a .git directory, so
// resolution does the realpath, symlink-walk and protected-name work of a realistic policy.
struct BenchTree {
  BenchTree() {
    std::string pattern = (fs::temp_directory_path() / "sbx-bench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    root = fs::canonical(pattern).string();
    fs::create_directories(root + "/cwd/.git");
    fs::create_directories(root + "/home");
    context = sbx::ResolveContext{root + "/cwd", root + "/home", {{"TMPDIR", root + "/home"}}};
    json = R"({"version": 1, "filesystem": {"entries": [)"
           R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"})";
    for (int i = 2; i < kEntries; ++i) {
      std::string dir = root + "/d" + std::to_string(i);
      switch (i % 4) {
        case 0:
          fs::create_directories(dir + "/.git");
          json += R"(, {"path": ")" + dir + R"(", "access": "write"})";
          break;
        case 1:
          json += R"(, {"path": ")" + dir + R"(/missing", "access": "deny"})";
          break;
        case 2:
          json += R"(, {"glob": "**/*.ext)" + std::to_string(i) + R"(", "access": "deny"})";
          break;
        default:
          json += R"(, {"path": "~/p)" + std::to_string(i) + R"(", "access": "read"})";
          break;
      }
    }
    json += "]}}";
  }
  ~BenchTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  std::string root;
  std::string json;
  sbx::ResolveContext context;
};

BenchTree& tree() {
  static BenchTree instance;
  return instance;
}

void BM_ParsePolicy200(benchmark::State& state) {
  const std::string& json = tree().json;
  for (auto _ : state) {
    sbx::Result<sbx::Policy> policy = sbx::parse_policy(json);
    if (!policy.ok()) state.SkipWithError(policy.error().c_str());
    benchmark::DoNotOptimize(policy);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(json.size()));
}
BENCHMARK(BM_ParsePolicy200);

void BM_ResolvePolicy200(benchmark::State& state) {
  sbx::Result<sbx::Policy> policy = sbx::parse_policy(tree().json);
  if (!policy.ok()) {
    state.SkipWithError(policy.error().c_str());
    return;
  }
  for (auto _ : state) {
    sbx::Result<sbx::ResolvedPolicy> resolved = sbx::resolve_policy(*policy, tree().context);
    if (!resolved.ok()) state.SkipWithError(resolved.error().c_str());
    benchmark::DoNotOptimize(resolved);
  }
}
BENCHMARK(BM_ResolvePolicy200);

void BM_ParseAndResolvePolicy200(benchmark::State& state) {
  for (auto _ : state) {
    sbx::Result<sbx::Policy> policy = sbx::parse_policy(tree().json);
    if (!policy.ok()) {
      state.SkipWithError(policy.error().c_str());
      break;
    }
    sbx::Result<sbx::ResolvedPolicy> resolved = sbx::resolve_policy(*policy, tree().context);
    if (!resolved.ok()) state.SkipWithError(resolved.error().c_str());
    benchmark::DoNotOptimize(resolved);
  }
}
BENCHMARK(BM_ParseAndResolvePolicy200);

void BM_PolicyToJson200(benchmark::State& state) {
  sbx::Result<sbx::Policy> policy = sbx::parse_policy(tree().json);
  if (!policy.ok()) {
    state.SkipWithError(policy.error().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(sbx::policy_to_json(*policy));
}
BENCHMARK(BM_PolicyToJson200);

// workspace-write in the tree's cwd, resolved against this process's context (its HOME, its
// caches, sbx's state and install directories), without and with ":caches": what the entry adds
// to a run's resolution (finding the tools' caches, the project's cache, the credentials).
void BM_ResolveWorkspaceWrite(benchmark::State& state, bool caches) {
  sbx::Result<sbx::Policy> policy = sbx::parse_policy(
      caches ? R"({"version": 1, "preset": "workspace-write", "writable_roots": [":caches"]})"
             : R"({"version": 1, "preset": "workspace-write"})");
  sbx::Result<sbx::ResolveContext> context = sbx::current_resolve_context();
  if (!policy.ok() || !context.ok()) {
    state.SkipWithError("cannot make the policy or the context");
    return;
  }
  context->cwd = tree().root + "/cwd";
  for (auto _ : state) {
    sbx::Result<sbx::Resolution> resolved = sbx::resolve_policy_with_notes(*policy, *context);
    if (!resolved.ok()) state.SkipWithError(resolved.error().c_str());
    benchmark::DoNotOptimize(resolved);
  }
  if (caches) {
    sbx::Result<std::string> base = sbx::caches::caches_base();
    if (base.ok()) (void)sbx::caches::clear_project(*base, sbx::caches::project_key(context->cwd));
  }
}
BENCHMARK_CAPTURE(BM_ResolveWorkspaceWrite, plain, false);
BENCHMARK_CAPTURE(BM_ResolveWorkspaceWrite, caches, true);

}  // namespace

BENCHMARK_MAIN();
