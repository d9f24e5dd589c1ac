// Property tests for the permission algebra (widen, approve) over policies from a
// deterministic generator (fixed seed, so a failure reproduces exactly). Each property is
// checked pointwise on a fixed universe of probe paths, with granted_access() as the meaning
// of a policy, and over the network and deny parts.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sbx/core/manager.hpp"
#include "sbx/core/permissions.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

constexpr int kIterations = 600;

const std::vector<std::string> kEntryPaths = {":root",     ":cwd",     ":cwd/src",   ":cwd/src/gen",
                                              ":cwd/docs", "~/.cache", "~/.ssh",     "/srv",
                                              "/srv/data", ":tmpdir",  ":slash_tmp", "/etc"};
// Entry paths plus paths below them and paths no entry names.
const std::vector<std::string> kProbePaths = {":root",
                                              ":cwd",
                                              ":cwd/src",
                                              ":cwd/src/gen",
                                              ":cwd/src/gen/x.c",
                                              ":cwd/src/main.c",
                                              ":cwd/docs",
                                              ":cwd/docs/a.md",
                                              ":cwd/other",
                                              "~/.cache",
                                              "~/.cache/pip",
                                              "~/.ssh",
                                              "~/.ssh/id_rsa",
                                              "~/notes",
                                              "/srv",
                                              "/srv/data",
                                              "/srv/data/f",
                                              "/srv/www",
                                              ":tmpdir",
                                              ":slash_tmp",
                                              "/etc",
                                              "/etc/passwd",
                                              "/usr/bin/env"};
const std::vector<std::string> kGlobs = {"**/*.pem", "**/.env", "/srv/**/secret"};
const std::vector<std::uint16_t> kPorts = {3128, 8080};
const std::vector<std::string> kDomains = {"example.com", "*.github.com", "pypi.org"};
const std::vector<std::string> kSockets = {"/run/a.sock", "/run/b.sock"};

int rank(Access access) { return access == Access::kWrite ? 2 : access == Access::kRead ? 1 : 0; }

struct GeneratorOptions {
  bool allow_denies = true;       // deny entries, deny globs, denied domains
  bool allow_other_kinds = true;  // unrestricted / external filesystems
  std::vector<std::string> protected_names = default_protected_names();
};

class Generator {
 public:
  explicit Generator(std::uint32_t seed) : rng_(seed) {}

  Policy policy(const GeneratorOptions& options) {
    Policy policy;
    policy.filesystem.protected_names = options.protected_names;
    if (options.allow_other_kinds && chance(1, 8)) {
      policy.filesystem.kind =
          chance(1, 2) ? FilesystemKind::kUnrestricted : FilesystemKind::kExternal;
    } else {
      add_entries(policy, options);
    }
    policy.network = network(options);
    Result<Policy> valid = validate_policy(policy);
    EXPECT_TRUE(valid.ok()) << valid.error();
    return valid.ok() ? *valid : Policy{};
  }

 private:
  bool chance(int numerator, int denominator) {
    return std::uniform_int_distribution<int>(1, denominator)(rng_) <= numerator;
  }
  template <typename T>
  std::vector<T> subset(const std::vector<T>& items) {
    std::vector<T> out;
    for (const T& item : items) {
      if (chance(1, 2)) out.push_back(item);
    }
    return out;
  }

  void add_entries(Policy& policy, const GeneratorOptions& options) {
    for (const std::string& path : kEntryPaths) {
      if (!chance(1, 3)) continue;
      Access access = chance(1, 2) ? Access::kRead : Access::kWrite;
      if (options.allow_denies && chance(1, 5)) access = Access::kDeny;
      policy.filesystem.entries.push_back(PolicyEntry{path, "", access});
    }
    if (!options.allow_denies) return;
    for (const std::string& glob : kGlobs) {
      if (chance(1, 6)) policy.filesystem.entries.push_back(PolicyEntry{"", glob, Access::kDeny});
    }
  }

  NetworkPolicy network(const GeneratorOptions& options) {
    NetworkPolicy network;
    const int mode = std::uniform_int_distribution<int>(0, 2)(rng_);
    network.mode = mode == 0   ? NetworkMode::kRestricted
                   : mode == 1 ? NetworkMode::kProxy
                               : NetworkMode::kEnabled;
    if (network.mode == NetworkMode::kProxy) {
      network.proxy_ports = subset(kPorts);
      network.allowed_domains = subset(kDomains);
      if (options.allow_denies && chance(1, 3)) network.denied_domains = {"evil.example"};
    }
    network.unix_sockets = subset(kSockets);
    network.allow_local_binding = chance(1, 3);
    return network;
  }

  std::mt19937 rng_;
};

GeneratorOptions grants_only() {
  GeneratorOptions options;
  options.allow_denies = false;
  return options;
}

// The entry that decides `path` is a deny (not merely: no entry grants it).
bool explicitly_denied(const Policy& policy, const std::string& path) {
  if (granted_access(policy, path) != Access::kDeny) return false;
  for (const PolicyEntry& entry : policy.filesystem.entries) {
    if (entry.access == Access::kDeny && !entry.path.empty() && lexically_within(path, entry.path))
      return true;
  }
  return false;
}

int network_rank(NetworkMode mode) {
  return mode == NetworkMode::kEnabled ? 2 : mode == NetworkMode::kProxy ? 1 : 0;
}

TEST(PermissionProperties, WidenNeverNarrowsAndKeepsEveryDeny) {
  Generator gen(0x5b1d);
  for (int i = 0; i < kIterations; ++i) {
    const Policy base = gen.policy({});
    const Policy extra = gen.policy({});
    Result<Policy> wide = widen(base, extra);
    ASSERT_TRUE(wide.ok()) << wide.error();
    SCOPED_TRACE("iteration " + std::to_string(i) + "\n" + policy_to_json(base) + "\n" +
                 policy_to_json(extra) + "\n" + policy_to_json(*wide));
    for (const std::string& path : kProbePaths) {
      SCOPED_TRACE(path);
      const int got = rank(granted_access(*wide, path));
      if (explicitly_denied(base, path) || explicitly_denied(extra, path)) {
        EXPECT_EQ(got, 0) << "a deny was lifted by widening";
      } else {
        EXPECT_GE(got, rank(granted_access(base, path)));
        EXPECT_GE(got, rank(granted_access(extra, path)));
      }
    }
    EXPECT_EQ(network_rank(wide->network.mode),
              std::max(network_rank(base.network.mode), network_rank(extra.network.mode)));
    EXPECT_EQ(has_deny_entries(*wide), has_deny_entries(base) || has_deny_entries(extra));
  }
}

TEST(PermissionProperties, WidenIsMonotoneInItsBase) {
  // base <= base2 (base2 = base widened by grants only) implies widen(base, x) <= widen(base2, x).
  Generator gen(0xa11ce);
  for (int i = 0; i < kIterations; ++i) {
    const Policy base = gen.policy({});
    Result<Policy> base2 = widen(base, gen.policy(grants_only()));
    ASSERT_TRUE(base2.ok()) << base2.error();
    const Policy extra = gen.policy({});
    Result<Policy> left = widen(base, extra);
    Result<Policy> right = widen(*base2, extra);
    ASSERT_TRUE(left.ok() && right.ok());
    for (const std::string& path : kProbePaths) {
      EXPECT_LE(rank(granted_access(*left, path)), rank(granted_access(*right, path)))
          << "iteration " << i << ", path " << path;
    }
  }
}

TEST(PermissionProperties, ApproveIsTheIntersectionAndLiesWithinBoth) {
  Generator gen(0xbee5);
  int recorded = 0;
  int nothing = 0;
  for (int i = 0; i < kIterations; ++i) {
    const Policy requested = gen.policy({});
    const Policy granted = gen.policy({});
    Result<Approval> approval = approve(requested, granted);
    ASSERT_TRUE(approval.ok()) << approval.error();
    SCOPED_TRACE("iteration " + std::to_string(i) + "\n" + policy_to_json(requested) + "\n" +
                 policy_to_json(granted));
    if (!approval->policy) {
      ++nothing;
      // "Nothing recorded" must not hide a grant: both sides share no access at all.
      for (const std::string& path : kProbePaths) {
        EXPECT_EQ(
            std::min(rank(granted_access(requested, path)), rank(granted_access(granted, path))), 0)
            << path;
      }
      continue;
    }
    ++recorded;
    const Policy& result = *approval->policy;
    EXPECT_TRUE(within(result, requested)) << policy_to_json(result);
    EXPECT_TRUE(within(result, granted)) << policy_to_json(result);
    for (const std::string& path : kProbePaths) {
      EXPECT_EQ(rank(granted_access(result, path)), std::min(rank(granted_access(requested, path)),
                                                             rank(granted_access(granted, path))))
          << path;
    }
    EXPECT_EQ(network_rank(result.network.mode),
              std::min(network_rank(requested.network.mode), network_rank(granted.network.mode)));
    if (has_deny_entries(requested) || has_deny_entries(granted)) {
      EXPECT_TRUE(has_deny_entries(result)) << "approve dropped a deny";
    }
  }
  // The generator must exercise both outcomes, or the test proves little.
  EXPECT_GT(recorded, kIterations / 4);
  EXPECT_GT(nothing, 5);
}

TEST(PermissionProperties, ApprovingAWiderGrantGivesExactlyTheRequest) {
  // approve(r, widen(r, x)) = r for an x that only adds (no denies, no new protected names).
  Generator gen(0xc0ffee);
  for (int i = 0; i < kIterations; ++i) {
    const Policy requested = gen.policy({});
    const Policy extra = gen.policy(grants_only());
    Result<Policy> wide = widen(requested, extra);
    ASSERT_TRUE(wide.ok()) << wide.error();
    Result<Approval> approval = approve(requested, *wide);
    ASSERT_TRUE(approval.ok()) << approval.error();
    SCOPED_TRACE("iteration " + std::to_string(i) + "\n" + policy_to_json(requested) + "\n" +
                 policy_to_json(extra));
    if (!approval->policy) {
      // Only when the request itself grants nothing.
      for (const std::string& path : kProbePaths)
        EXPECT_EQ(granted_access(requested, path), Access::kDeny);
      EXPECT_EQ(requested.network.mode, NetworkMode::kRestricted);
      continue;
    }
    EXPECT_TRUE(equivalent(*approval->policy, requested)) << policy_to_json(*approval->policy);
  }
}

TEST(PermissionProperties, EmptyApprovalLeavesEarlierGrantsIntact) {
  Generator gen(0xfeed);
  int empties = 0;
  for (int i = 0; i < kIterations * 2; ++i) {
    const Policy session = gen.policy({});
    const Policy requested = gen.policy({});
    const Policy granted = gen.policy({});
    Result<Approval> approval = approve(requested, granted);
    ASSERT_TRUE(approval.ok()) << approval.error();
    Result<Policy> after = record_approval(session, *approval);
    ASSERT_TRUE(after.ok()) << after.error();
    if (!approval->policy) {
      ++empties;
      EXPECT_EQ(*after, session) << "an empty approval changed the session";
    } else {
      // A real approval only adds: every earlier grant is still there.
      for (const std::string& path : kProbePaths) {
        if (!explicitly_denied(*approval->policy, path)) {
          EXPECT_GE(rank(granted_access(*after, path)), rank(granted_access(session, path)));
        }
      }
    }
  }
  EXPECT_GT(empties, 5);
}

TEST(PermissionProperties, ADenyNeverRunsUnsandboxedWhateverTheEscalation) {
  Generator gen(0xde17);
  Result<Policy> full = preset_policy("danger-full-access");
  ASSERT_TRUE(full.ok());
  int checked = 0;
  for (int i = 0; i < kIterations; ++i) {
    const Policy policy = gen.policy({});
    if (!has_deny_entries(policy)) continue;
    ++checked;
    for (const Policy& escalation : {gen.policy({}), *full}) {
      Result<Policy> wide = widen(policy, escalation);
      ASSERT_TRUE(wide.ok()) << wide.error();
      EXPECT_TRUE(has_deny_entries(*wide));
      EXPECT_FALSE(should_sandbox(*wide, SandboxPreference::kForbid).ok()) << policy_to_json(*wide);
      Result<Approval> approval = approve(policy, escalation);
      ASSERT_TRUE(approval.ok());
      if (approval->policy) {
        EXPECT_FALSE(should_sandbox(*approval->policy, SandboxPreference::kForbid).ok());
      }
    }
  }
  EXPECT_GT(checked, kIterations / 4);
}

}  // namespace
}  // namespace sbx
