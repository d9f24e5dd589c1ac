// Plugin discovery and loading: what `sbx` pays at start to find, check and
// load its backends.
//
//   sbx_bench_loader [--fixture-dir=DIR] [benchmark flags]
//
// BM_LoadInstalledPlugins  the real plugin directory next to libsbx (trust walk from "/").
// BM_LoadFixturePlugins    <build>/fixture-plugins: one good plugin and a dozen rejected ones
//                          (every stage of the loader runs).
// BM_ScanEmptyDirectory    the fixed cost: walk from "/" and list a directory with no plugin.
// BM_FirstLoadOfAPlugin    a plugin file never seen before (a fresh copy, so a real dlopen).
//
// After the first iteration the first three re-scan files whose inode is already loaded: that
// is the cost of a repeated scan in one process; BM_FirstLoadOfAPlugin is a cold load.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/logging.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/runtime.hpp"

namespace {

namespace fs = std::filesystem;

std::string g_fixture_dir;  // set in main()

const sbx::InstallLayout& layout() {
  static const sbx::InstallLayout value = [] {
    sbx::Result<sbx::InstallLayout> result = sbx::install_layout();
    if (!result) {
      std::cerr << "install_layout: " << result.error() << "\n";
      std::exit(1);
    }
    return *result;
  }();
  return value;
}

sbx::LoaderOptions options_for(const std::string& dir) {
  sbx::LoaderOptions options;
  options.directories = {dir};
  options.trusted_owner = layout().libsbx_owner;
  options.host = sbx::host_services(layout());
  return options;
}

void run_scans(benchmark::State& state, const sbx::LoaderOptions& options) {
  std::size_t loaded = 0;
  std::size_t rejected = 0;
  for (auto _ : state) {
    sbx::PluginRegistry registry = sbx::PluginRegistry::load(options);
    loaded = registry.plugins().size();
    rejected = registry.rejected().size();
    benchmark::DoNotOptimize(registry);
  }
  state.counters["loaded"] = static_cast<double>(loaded);
  state.counters["rejected"] = static_cast<double>(rejected);
  state.counters["candidates/s"] = benchmark::Counter(
      static_cast<double>(loaded + rejected), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LoadInstalledPlugins(benchmark::State& state) {
  run_scans(state, options_for(layout().plugin_dir));
}
BENCHMARK(BM_LoadInstalledPlugins)->Unit(benchmark::kMicrosecond);

void BM_LoadFixturePlugins(benchmark::State& state) {
  if (!fs::is_directory(g_fixture_dir)) {
    state.SkipWithError(("no fixture directory " + g_fixture_dir).c_str());
    return;
  }
  run_scans(state, options_for(g_fixture_dir));
}
BENCHMARK(BM_LoadFixturePlugins)->Unit(benchmark::kMicrosecond);

// A scratch directory next to the fixtures (inside the build tree, whose chain is trusted when
// the build lives in a root- or user-owned tree outside /tmp).
fs::path scratch_dir(const std::string& name) {
  const fs::path dir = fs::path(g_fixture_dir).parent_path() / "bench-loader-tmp" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (fs::path p = dir; p != fs::path(g_fixture_dir).parent_path(); p = p.parent_path())
    fs::permissions(p, fs::perms(0755));
  return dir;
}

void BM_ScanEmptyDirectory(benchmark::State& state) {
  run_scans(state, options_for(scratch_dir("empty").string()));
}
BENCHMARK(BM_ScanEmptyDirectory)->Unit(benchmark::kMicrosecond);

void BM_FirstLoadOfAPlugin(benchmark::State& state) {
  const fs::path good = fs::path(g_fixture_dir) / "sbx-backend-fixture-good.so";
  if (!fs::exists(good)) {
    state.SkipWithError(("no fixture plugin " + good.string()).c_str());
    return;
  }
  const fs::path dir = scratch_dir("cold");
  int round = 0;
  std::size_t loaded = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // A new directory and a new inode each round: nothing is cached by the loader or ld.so.
    const fs::path round_dir = dir / std::to_string(round++);
    fs::create_directory(round_dir);
    fs::permissions(round_dir, fs::perms(0755));
    fs::copy_file(good, round_dir / good.filename());
    fs::permissions(round_dir / good.filename(), fs::perms(0644));
    const sbx::LoaderOptions options = options_for(round_dir.string());
    state.ResumeTiming();
    sbx::PluginRegistry registry = sbx::PluginRegistry::load(options);
    loaded += registry.plugins().size();
    benchmark::DoNotOptimize(registry);
  }
  state.counters["loaded"] =
      benchmark::Counter(static_cast<double>(loaded), benchmark::Counter::kAvgIterations);
}
// Every round leaves one more library mapped (plugins are never unloaded): a fixed count.
BENCHMARK(BM_FirstLoadOfAPlugin)->Unit(benchmark::kMicrosecond)->Iterations(200);

}  // namespace

int main(int argc, char** argv) {
  // Rejections are logged at warn; writing them to a terminal would be most of what is timed.
  if (sbx::Status logging = sbx::configure_logging("off", sbx::LogFormat::kText); !logging.ok()) {
    std::cerr << logging.error() << "\n";
    return 1;
  }
  // Default: the fixture directory of the build tree that holds this libsbx
  // (<build>/tree/<libdir>/libsbx.so, the prefix <build>/tree -> <build>/fixture-plugins).
  g_fixture_dir = (fs::path(layout().prefix).parent_path() / "fixture-plugins").string();
  std::vector<char*> rest;
  constexpr std::string_view kFlag = "--fixture-dir=";
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kFlag.size()) == kFlag) {
      g_fixture_dir = std::string(arg.substr(kFlag.size()));
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
  std::cerr << "plugin dir: " << layout().plugin_dir << "\nfixture dir: " << g_fixture_dir << "\n";
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
