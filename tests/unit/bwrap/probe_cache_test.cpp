// transform() learns whether procfs mounts from the probe's cache (probes run in another
// process, so the probe's own answer never reaches the plugin object): no cache or a cache of
// another boot/binary gives nullopt (transform then tries bwrap itself), a cache a passing probe
// wrote gives true.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sbx/bwrap/host.hpp"

#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace sbx::bwrap;

using CacheDir = sbx::test::TempDir;

TEST(BwrapProbeCache, WithoutAValidCacheTheAnswerIsUnknown) {
  CacheDir dir;
  const std::string cache = dir.path() + "/probe.cache";
  EXPECT_FALSE(cached_proc_mount("/usr/bin/bwrap", cache).has_value());
  EXPECT_FALSE(cached_proc_mount("/usr/bin/bwrap", "").has_value());
  std::ofstream(cache) << "another-boot|/usr/bin/bwrap|1|2|0|user:[1]\n"
                       << "bwrap_version\t0.8.0\nuser_namespaces\tok\napparmor_userns\tok\n"
                       << "proc_mount\tok\nnetwork_namespace\tok\n";
  EXPECT_FALSE(cached_proc_mount("/usr/bin/bwrap", cache).has_value());
}

TEST(BwrapProbeCache, APassingProbeLeavesTheAnswerInItsCache) {
  sbx::Result<std::string> bwrap = find_trusted_bwrap({});
  if (!bwrap.ok()) GTEST_SKIP() << "no trusted bwrap here: " << bwrap.error();
  CacheDir dir;
  const std::string cache = dir.path() + "/probe.cache";
  const sbx::ProbeReport report = run_probe("", cache);
  bool sandbox_checks_pass = true;
  for (const sbx::ProbeCheck& c : report.checks) {
    for (const char* name : {"bwrap_version", "user_namespaces", "apparmor_userns", "proc_mount",
                             "network_namespace"}) {
      if (c.name == name && c.status != sbx::CheckStatus::kPass) sandbox_checks_pass = false;
    }
  }
  if (!sandbox_checks_pass) GTEST_SKIP() << "bwrap's throwaway sandboxes fail here: nothing cached";
  const std::optional<bool> proc = cached_proc_mount(*bwrap, cache);
  ASSERT_TRUE(proc.has_value());
  EXPECT_TRUE(*proc);
}

}  // namespace
