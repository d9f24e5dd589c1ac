// sbx-stage2's copy-on-write caches (stage2/cache_overlays.hpp), the parts that decide: which
// mounts below a cache move onto its overlay, and the overlay's mount options. The mounting
// itself runs for real in tests/integration/caches (ToolchainCaches.*, bwrap).
#include "cache_overlays.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using sbx::stage2::ActualMount;

// Every mount strictly below the cache, once, without those below another of them (a clone
// with AT_RECURSIVE carries them); not the cache's own mount, not a path that only starts with
// the cache's name.
TEST(CacheOverlayMounts, TheTopMountsBelowTheCacheEachOnce) {
  const std::vector<ActualMount> mounts = {
      {"/", false},
      {"/h", false},
      {"/h/.cache", false},
      {"/h/.cache/sbx", false},
      {"/h/.cache/sbx/caches/k/data", true},
      {"/h/.cache/sbx", false},
      {"/h/.cache2", true},
      {"/h/.cache/x/secret", false},
      {"/dev/.sbx-caches/0/lower", false},
  };
  EXPECT_EQ(sbx::stage2::top_mounts_below(mounts, "/h/.cache"),
            (std::vector<std::string>{"/h/.cache/sbx", "/h/.cache/x/secret"}));
  EXPECT_TRUE(sbx::stage2::top_mounts_below(mounts, "/h/.npm").empty());
}

// The i-th cache's layers where bwrap bound them; userxattr (a mounter in a user namespace),
// index off (independent of the kernel's CONFIG_OVERLAY_FS_INDEX).
TEST(CacheOverlayMounts, TheOptionsNameTheBoundLayers) {
  EXPECT_EQ(sbx::stage2::overlay_options("/dev/.sbx-caches", 2),
            "lowerdir=/dev/.sbx-caches/2/lower,upperdir=/dev/.sbx-caches/2/layers/upper,"
            "workdir=/dev/.sbx-caches/2/layers/work,userxattr,index=off");
}

}  // namespace
