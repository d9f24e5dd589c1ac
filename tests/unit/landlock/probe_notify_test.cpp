// The landlock probe tries the metadata guard's seccomp user-notification listener: without it
// sbx-stage2 cannot keep metadata changes inside the writable roots, so the backend must not
// be offered.
#include <gtest/gtest.h>

#include <algorithm>

#include "landlock_ruleset.hpp"
#include "sbx/landlock/probe.hpp"

namespace {

TEST(LandlockProbe, ReportsTheMetadataGuardsListener) {
  if (sbx::stage2::landlock_abi() < 1) GTEST_SKIP() << "no Landlock on this kernel: not probed";
  const sbx::ProbeReport report = sbx::landlock::run_probe("/bin/true");
  const auto it =
      std::find_if(report.checks.begin(), report.checks.end(),
                   [](const sbx::ProbeCheck& c) { return c.name == "seccomp_user_notify"; });
  ASSERT_NE(it, report.checks.end()) << "no seccomp_user_notify check";
  EXPECT_EQ(it->status, sbx::CheckStatus::kPass) << it->observed;
  EXPECT_TRUE(report.available) << report.summary;
}

}  // namespace
