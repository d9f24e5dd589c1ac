// transform() learns whether procfs mounts from the probe's cache (probes run in another
// process, so the probe's own answer never reaches the plugin object): no cache or a cache of
// another boot/binary gives nullopt (transform then tries bwrap itself), a cache a passing probe
// wrote gives true. The cache is reused only from a directory and a file this user owns that
// nobody else can write, and only while its key matches; a valid one means the probe starts no
// process at all (checked under a filter that kills the process if it tries).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sbx/bwrap/host.hpp"
#include "sbx_test/files.hpp"
#include "sbx_test/no_new_process.hpp"
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

// A cache a passing probe wrote in a fresh private directory; skips when bwrap's trials fail.
class BwrapProbeCacheTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    sbx::Result<std::string> bwrap = find_trusted_bwrap({});
    if (!bwrap.ok()) GTEST_SKIP() << "no trusted bwrap here: " << bwrap.error();
    bwrap_ = *bwrap;
    cache_ = dir_.path() + "/probe.cache";
    run_probe("", cache_);
    sbx::Result<std::vector<sbx::ProbeCheck>> loaded = load_probe_cache(bwrap_, cache_);
    if (!loaded.ok()) GTEST_SKIP() << "bwrap's throwaway sandboxes fail here: " << loaded.error();
  }
  std::string refusal() const {
    sbx::Result<std::vector<sbx::ProbeCheck>> loaded = load_probe_cache(bwrap_, cache_);
    EXPECT_FALSE(cached_proc_mount(bwrap_, cache_).has_value());
    return loaded.ok() ? std::string("(accepted)") : loaded.error();
  }
  // The cache as this process would have written it: its checks under this process's key.
  void rekey_cache_for_this_process() const {
    std::string text = sbx::test::read_file(cache_);
    text.replace(0, text.find('\n'), probe_cache_key(bwrap_));
    sbx::test::write_file(cache_, text);
    ::chmod(cache_.c_str(), 0600);
  }
  CacheDir dir_;
  std::string bwrap_;
  std::string cache_;
};

TEST_F(BwrapProbeCacheTrust, AValidCacheIsAccepted) {
  sbx::Result<std::vector<sbx::ProbeCheck>> loaded = load_probe_cache(bwrap_, cache_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->size(), 5u);
  EXPECT_EQ(cached_proc_mount(bwrap_, cache_), std::optional<bool>(true));
}

TEST_F(BwrapProbeCacheTrust, AFileOfAnotherOwnerIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another uid needs root";
  ASSERT_EQ(::chown(cache_.c_str(), 4242, 4242), 0);
  EXPECT_NE(refusal().find("is owned by uid 4242, not by this user"), std::string::npos)
      << refusal();
}

TEST_F(BwrapProbeCacheTrust, ADirectoryOfAnotherOwnerIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another uid needs root";
  ASSERT_EQ(::chown(dir_.path().c_str(), 4242, 4242), 0);
  EXPECT_NE(refusal().find("cache directory '" + dir_.path() + "' is owned by uid 4242"),
            std::string::npos)
      << refusal();
}

TEST_F(BwrapProbeCacheTrust, AWritableDirectoryOrFileIsRefused) {
  for (const mode_t mode : {mode_t{0770}, mode_t{0707}, mode_t{01777}}) {
    ASSERT_EQ(::chmod(dir_.path().c_str(), mode), 0);
    const std::string expected =
        "cache directory '" + dir_.path() + "' is writable by group or others";
    EXPECT_NE(refusal().find(expected), std::string::npos) << std::oct << mode << ": " << refusal();
  }
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0700), 0);
  ASSERT_EQ(::chmod(cache_.c_str(), 0622), 0);
  EXPECT_NE(refusal().find("cache file '" + cache_ + "' is writable by group or others"),
            std::string::npos)
      << refusal();
}

TEST_F(BwrapProbeCacheTrust, ASymlinkIsRefused) {
  const std::string real = dir_.path() + "/real.cache";
  ASSERT_EQ(::rename(cache_.c_str(), real.c_str()), 0);
  ASSERT_EQ(::symlink(real.c_str(), cache_.c_str()), 0);
  EXPECT_NE(refusal().find("cache file '" + cache_ + "'"), std::string::npos) << refusal();
}

TEST_F(BwrapProbeCacheTrust, AStaleKeyIsRefused) {
  std::string text = sbx::test::read_file(cache_);
  ASSERT_EQ(text.rfind(probe_cache_key(bwrap_) + "\n", 0), 0u) << text;
  text.insert(text.find('\n'), "0");  // e.g. another sysctl value at the end of the key
  sbx::test::write_file(cache_, text);
  ::chmod(cache_.c_str(), 0600);
  EXPECT_NE(refusal().find("stale"), std::string::npos) << refusal();
}

// The key changes with everything the trials depend on that can change without a reboot: here,
// the binary's identity (its ctime and mtime move with a chmod or a rewrite).
TEST(BwrapProbeCacheKey, ChangesWhenTheBinaryChanges) {
  CacheDir dir;
  const std::string binary = dir.write("bwrap", "#!/bin/sh\n", 0755);
  const std::string before = probe_cache_key(binary);
  EXPECT_EQ(probe_cache_key(binary), before);
  struct timespec times[2] = {{1, 0}, {1, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, binary.c_str(), times, 0), 0);
  const std::string touched = probe_cache_key(binary);
  EXPECT_NE(touched, before);
  ASSERT_EQ(::chmod(binary.c_str(), 04755), 0);
  EXPECT_NE(probe_cache_key(binary), touched);
  const std::string copy = dir.write("bwrap2", "#!/bin/sh\n", 0755);
  EXPECT_NE(probe_cache_key(copy), probe_cache_key(binary));
}

// Runs `probe` in a child that the kernel kills if it starts a process or thread; its status.
template <typename Probe>
int status_without_new_processes(Probe probe) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (sbx::test::forbid_new_processes() != 0) ::_exit(3);
    ::_exit(probe() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_F(BwrapProbeCacheTrust, AValidCacheMeansNoTrialSandbox) {
  const int cached = status_without_new_processes([this] {
    // The filter that forbids new processes is part of the key (caller_confinement): the cache
    // written outside it is stale in here, so it is re-keyed as if written under it.
    rekey_cache_for_this_process();
    const sbx::ProbeReport report = run_probe("", cache_);
    int from_cache = 0;
    for (const sbx::ProbeCheck& c : report.checks)
      from_cache += c.observed.find("(tried earlier this boot; cached)") != std::string::npos;
    return from_cache == 5 && cached_proc_mount(bwrap_, cache_) == std::optional<bool>(true);
  });
  EXPECT_TRUE(WIFEXITED(cached) && WEXITSTATUS(cached) == 0)
      << "status " << cached << (WIFSIGNALED(cached) ? " (killed: it started a process)" : "");
  // The control: without a valid cache the same probe starts bwrap and is killed for it.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  const int uncached = status_without_new_processes([this] {
    run_probe("", cache_);
    return true;
  });
  EXPECT_TRUE(WIFSIGNALED(uncached) && WTERMSIG(uncached) == SIGSYS) << "status " << uncached;
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0700), 0);
}

}  // namespace
