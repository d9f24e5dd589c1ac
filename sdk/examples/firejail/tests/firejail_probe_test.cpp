// The probe's pure parts, and what it promises (and refuses to promise).
#include "firejail_probe.hpp"

#include <gtest/gtest.h>

namespace firejail_backend {
namespace {

using sbx::Capability;

TEST(FirejailProbe, ParsesTheVersionLine) {
  const auto version = parse_version("firejail version 0.9.72\n\nCompile time support:\n");
  ASSERT_TRUE(version.has_value());
  EXPECT_EQ(*version, (std::array<int, 3>{0, 9, 72}));
}

TEST(FirejailProbe, RejectsOtherOutput) {
  EXPECT_FALSE(parse_version("").has_value());
  EXPECT_FALSE(parse_version("firejail version\n").has_value());
  EXPECT_FALSE(parse_version("firejail version 0.9\n").has_value());
  EXPECT_FALSE(parse_version("Error: not allowed\n").has_value());
}

TEST(FirejailProbe, NeverClaimsWhatFirejailCannotDo) {
  const sbx::CapabilitySet caps = enforced_capabilities();
  EXPECT_FALSE(caps.has(Capability::kReadRestriction));
  EXPECT_FALSE(caps.has(Capability::kDenyGlobs));
  EXPECT_FALSE(caps.has(Capability::kProxyNetwork));
  EXPECT_FALSE(caps.has(Capability::kUnixSocketAllowlist));
  EXPECT_TRUE(caps.has(Capability::kWriteRestriction));
  EXPECT_TRUE(caps.has(Capability::kNetworkBlock));
  EXPECT_TRUE(caps.has(Capability::kSyscallFilter));
}

// On this host, for real: every check carries an observation, every failure a remedy, and an
// unavailable report says why in its summary.
TEST(FirejailProbe, ReportIsComplete) {
  const sbx::ProbeReport report = probe_host();
  ASSERT_FALSE(report.checks.empty());
  for (const sbx::ProbeCheck& check : report.checks) {
    EXPECT_FALSE(check.observed.empty()) << check.name;
    if (check.status != sbx::CheckStatus::kPass) {
      EXPECT_FALSE(check.remedy.empty()) << check.name;
    }
  }
  EXPECT_FALSE(report.summary.empty());
  if (report.available) {
    EXPECT_EQ(report.capabilities, enforced_capabilities());
  } else {
    EXPECT_TRUE(report.capabilities.empty());
  }
}

}  // namespace
}  // namespace firejail_backend
