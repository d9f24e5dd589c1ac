// The windows backend's ACL work on a 20,000-file workspace, plan side (runs on any host): the
// plan itself, and the DACL writes of one run counted on a model of the tree
// (tests/unit/windows/dacl_model.hpp), where an inheritable ACE on a directory costs one DACL
// write for the directory and one for every object below it, as SetNamedSecurityInfoW
// propagates it. Three ways to run the same plan:
//   per_run_apply_revert  the previous model: a fresh SID each run, ACEs added then removed
//   derived_first_run     the derived SID, first run of a plan on the tree
//   derived_next_run      the derived SID, every later run of the same plan
// Counters: dacl_writes and aces_written per run (exact, not timed), and the time of the
// model's bookkeeping (not of Windows).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "dacl_model.hpp"
#include "sbx/windows/acl_apply.hpp"
#include "sbx/windows/plan.hpp"

namespace {

using sbx::windows::AclApplyStats;
using sbx::windows::WindowsPlan;
using sbx::windows::model::DaclModel;

constexpr int kSourceDirs = 180;
constexpr int kFilesPerDir = 100;  // 18,000 source files
constexpr int kGitObjects = 2000;  // + 2,000 in .git = 20,000 files

DaclModel make_tree() {
  DaclModel fs;
  fs.add_directory("C:\\work");
  fs.add_directory("C:\\work\\proj");
  fs.add_directory("C:\\work\\proj\\.git");
  for (int i = 0; i < kGitObjects; ++i) fs.add_file("C:\\work\\proj\\.git\\o" + std::to_string(i));
  for (int d = 0; d < kSourceDirs; ++d) {
    const std::string dir = "C:\\work\\proj\\src" + std::to_string(d);
    fs.add_directory(dir);
    for (int f = 0; f < kFilesPerDir; ++f) fs.add_file(dir + "\\f" + std::to_string(f));
  }
  fs.add_directory("C:\\Users");
  fs.add_directory("C:\\Users\\me");
  fs.add_directory("C:\\Users\\me\\Temp");
  return fs;
}

sbx::TransformRequest workspace_write() {
  sbx::TransformRequest request;
  request.argv = {"C:/Windows/System32/cmd.exe"};
  request.cwd = "C:/work/proj";
  request.policy.filesystem_kind = sbx::FilesystemKind::kRestricted;
  request.policy.network.mode = sbx::NetworkMode::kEnabled;
  request.policy.rules = {{"/", sbx::Access::kRead},
                          {"C:/Users/me/Temp", sbx::Access::kWrite},
                          {"C:/work/proj", sbx::Access::kWrite}};
  request.policy.protected_paths = {{"C:/work/proj/.agents", "C:/work/proj", false, false},
                                    {"C:/work/proj/.codex", "C:/work/proj", false, false},
                                    {"C:/work/proj/.git", "C:/work/proj", true, true}};
  request.policy.cwd = "C:/work/proj";
  return request;
}

WindowsPlan the_plan() { return *sbx::windows::build_plan(workspace_write()); }

void report(benchmark::State& state, std::size_t writes, std::size_t aces, std::size_t files) {
  state.counters["dacl_writes"] = static_cast<double>(writes);
  state.counters["aces_written"] = static_cast<double>(aces);
  state.counters["files"] = static_cast<double>(files);
}

void BM_BuildPlan(benchmark::State& state) {
  const sbx::TransformRequest request = workspace_write();
  for (auto _ : state) benchmark::DoNotOptimize(sbx::windows::build_plan(request));
}
BENCHMARK(BM_BuildPlan);

void BM_PerRunApplyRevert(benchmark::State& state) {
  const WindowsPlan plan = the_plan();
  const DaclModel tree = make_tree();
  std::size_t writes = 0, aces = 0;
  for (auto _ : state) {
    state.PauseTiming();
    DaclModel fs = tree;
    state.ResumeTiming();
    std::vector<std::string> created;
    const AclApplyStats stats =
        *sbx::windows::apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
    for (auto it = plan.aces.rbegin(); it != plan.aces.rend(); ++it) fs.remove_aces(it->path);
    sbx::windows::remove_created(created, fs);
    writes = fs.dacl_writes;
    aces = stats.written;
  }
  report(state, writes, aces, tree.size());
}
BENCHMARK(BM_PerRunApplyRevert)->Unit(benchmark::kMillisecond);

void BM_DerivedFirstRun(benchmark::State& state) {
  const WindowsPlan plan = the_plan();
  const DaclModel tree = make_tree();
  std::size_t writes = 0, aces = 0;
  for (auto _ : state) {
    state.PauseTiming();
    DaclModel fs = tree;
    state.ResumeTiming();
    std::vector<std::string> created;
    const AclApplyStats stats =
        *sbx::windows::apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
    sbx::windows::remove_created(created, fs);
    writes = fs.dacl_writes;
    aces = stats.written;
  }
  report(state, writes, aces, tree.size());
}
BENCHMARK(BM_DerivedFirstRun)->Unit(benchmark::kMillisecond);

void BM_DerivedNextRun(benchmark::State& state) {
  const WindowsPlan plan = the_plan();
  DaclModel fs = make_tree();
  std::vector<std::string> created;
  (void)sbx::windows::apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
  sbx::windows::remove_created(created, fs);
  std::size_t writes = 0, aces = 0;
  for (auto _ : state) {
    const std::size_t before = fs.dacl_writes;
    created.clear();
    const AclApplyStats stats =
        *sbx::windows::apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
    sbx::windows::remove_created(created, fs);
    writes = fs.dacl_writes - before;
    aces = stats.written;
  }
  report(state, writes, aces, fs.size());
}
BENCHMARK(BM_DerivedNextRun)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
