// The fixed sections against what real programs need on macOS (parity with Codex's Seatbelt
// base policy and restricted read-only platform defaults), evaluated with sbpl_eval.hpp:
// the sysctls the Go runtime and others read, and what the developer-tool shims need under
// ":minimal" -- and nothing next to those grants.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sbpl_eval.hpp"
#include "sbx/seatbelt/profile.hpp"
#include "sexpr.hpp"

namespace {

using namespace sbx;
using seatbelt::testing::Node;
using seatbelt::testing::SbplEvaluator;

// Reads limited to the workspace, optionally with ":minimal".
ResolvedPolicy restricted_reads(bool minimal) {
  ResolvedPolicy policy;
  policy.rules = {{"/Users/me/proj", Access::kWrite}};
  policy.platform_defaults_readable = minimal;
  policy.cwd = "/Users/me/proj";
  return policy;
}

SbplEvaluator evaluator_for(const ResolvedPolicy& policy) {
  Result<seatbelt::Profile> profile = seatbelt::build_profile(policy, {});
  if (!profile.ok()) throw std::runtime_error(profile.error());
  std::vector<Node> forms;
  seatbelt::testing::SexprReader reader(profile->text);
  if (!reader.read_all(forms)) throw std::runtime_error(reader.error());
  std::map<std::string, std::string> params;
  for (const auto& param : profile->params) params[param.key] = param.value;
  return SbplEvaluator(std::move(forms), std::move(params));
}

TEST(SeatbeltParity, RuntimeSysctlsAreReadableUnderEveryPolicy) {
  for (bool minimal : {false, true}) {
    SbplEvaluator eval = evaluator_for(restricted_reads(minimal));
    // Go's runtime aborts at start without hw.pagesize (gh, go, terraform, kubectl).
    for (const char* name : {"hw.pagesize", "hw.cpufrequency", "kern.proc.pgrp.4242",
                             "hw.pagesize_compat", "kern.proc.pid.4242", "hw.ncpu"}) {
      EXPECT_TRUE(eval.allows("sysctl-read", name)) << name << " minimal=" << minimal;
    }
    // The base grants names, not families.
    for (const char* name : {"kern.proc.all", "kern.proc.pgrpx", "hw.pagesizes", "kern.boottime"})
      EXPECT_FALSE(eval.allows("sysctl-read", name)) << name << " minimal=" << minimal;
    EXPECT_FALSE(eval.allows("sysctl-write", "hw.pagesize"));
  }
}

TEST(SeatbeltParity, MinimalLetsTheDeveloperToolShimsFindXcode) {
  SbplEvaluator eval = evaluator_for(restricted_reads(true));
  for (const char* path :
       {"/private/var/db/xcode_select_link", "/Library/Developer/CommandLineTools/usr/bin/git",
        "/Applications/Xcode.app/Contents/Developer/usr/bin/xcodebuild",
        "/Applications/Xcode-beta.app/Contents/Developer/usr/lib/libxcrun.dylib",
        "/Applications/Xcode_15.4.app"}) {
    EXPECT_TRUE(eval.allows("file-read-data", path)) << path;
  }
  EXPECT_TRUE(eval.allows("file-read-metadata", "/Applications"));
  EXPECT_TRUE(eval.allows("file-read-metadata", "/private/var/db"));
  EXPECT_TRUE(eval.allows("file-map-executable",
                          "/Library/Developer/CommandLineTools/usr/lib/libclang.dylib"));
  EXPECT_TRUE(eval.allows("file-map-executable",
                          "/Applications/Xcode.app/Contents/Frameworks/IDEFoundation.framework/x"));
  // Only those: other applications, look-alike names and the rest of /private/var/db stay
  // unreadable, and nothing there becomes writable.
  for (const char* path :
       {"/Applications/Safari.app/Contents/Info.plist", "/Applications/Xcode.appx/secret",
        "/Applications/NotXcode.app/x", "/private/var/db/sudo/ts/me", "/Applications/secret"}) {
    EXPECT_FALSE(eval.allows("file-read-data", path)) << path;
  }
  EXPECT_FALSE(eval.allows("file-write-create", "/Library/Developer/CommandLineTools/x"));
  EXPECT_FALSE(eval.allows("file-write-create", "/Applications/Xcode.app/x"));
}

TEST(SeatbeltParity, WithoutMinimalNoDeveloperToolPathIsReadable) {
  SbplEvaluator eval = evaluator_for(restricted_reads(false));
  for (const char* path :
       {"/private/var/db/xcode_select_link", "/Library/Developer/CommandLineTools/usr/bin/git",
        "/Applications/Xcode.app/Contents/Developer/usr/bin/xcodebuild"}) {
    EXPECT_FALSE(eval.allows("file-read-data", path)) << path;
  }
}

}  // namespace
