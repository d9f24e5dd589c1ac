// Windows parity (issue 18 point 3), plan side: the derived capability identity, idempotent
// and locked ACL application against a model file system, %TEMP%/%TMP%, the desktop and the job's
// UI limits, and the locations audited for Everyone-writable ACLs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dacl_model.hpp"
#include "sbx/windows/acl_apply.hpp"
#include "sbx/windows/identity.hpp"
#include "sbx/windows/plan.hpp"
#include "sbx/windows/plan_text.hpp"
#include "windows_test_support.hpp"

namespace sbx::windows {
namespace parity_tests {

using testing::request_for;
using testing::rule;

std::string hex_of(const std::array<std::uint8_t, 32>& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t byte : digest) {
    out += kDigits[byte >> 4];
    out += kDigits[byte & 0xf];
  }
  return out;
}

TEST(WindowsIdentity, Sha256MatchesFipsVectors) {
  EXPECT_EQ(hex_of(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_of(sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks (56 bytes: the padding does not fit in the first).
  EXPECT_EQ(hex_of(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex_of(sha256(std::string(1000000, 'a'))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::vector<Ace> sample_aces() {
  return {Ace{AceKind::kAllowWrite, SidRef::kWriteCapability, "C:\\work\\proj"},
          Ace{AceKind::kDenyWrite, SidRef::kWriteCapability, "C:\\work\\proj\\.git"},
          Ace{AceKind::kDenyDelete, SidRef::kWriteCapability, "C:\\work\\proj"}};
}

TEST(WindowsIdentity, SamePlanSameUserGivesTheSameSid) {
  const std::string a = capability_sid_for("S-1-5-21-1-2-3-1001", sample_aces());
  EXPECT_EQ(a, capability_sid_for("S-1-5-21-1-2-3-1001", sample_aces()));
  EXPECT_TRUE(a.starts_with("S-1-5-21-")) << a;
  EXPECT_EQ(std::count(a.begin(), a.end(), '-'), 7) << a;  // S-1-5-21 + four parts
}

TEST(WindowsIdentity, PathCaseDoesNotChangeTheSid) {
  std::vector<Ace> lower_case = sample_aces();
  for (Ace& ace : lower_case) {
    for (char& c : ace.path) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  EXPECT_EQ(capability_sid_for("S-1-5-21-1-2-3-1001", lower_case),
            capability_sid_for("S-1-5-21-1-2-3-1001", sample_aces()));
}

TEST(WindowsIdentity, AnyOtherPlanOrUserGetsAnotherSid) {
  const std::string base = capability_sid_for("S-1-5-21-1-2-3-1001", sample_aces());
  EXPECT_NE(base, capability_sid_for("S-1-5-21-1-2-3-1002", sample_aces()));
  std::vector<Ace> fewer = sample_aces();
  fewer.erase(fewer.begin() + 1);  // one protected name less: .git would become writable
  EXPECT_NE(base, capability_sid_for("S-1-5-21-1-2-3-1001", fewer));
  std::vector<Ace> other_root = sample_aces();
  other_root[0].path = "C:\\work\\other";
  EXPECT_NE(base, capability_sid_for("S-1-5-21-1-2-3-1001", other_root));
  std::vector<Ace> other_kind = sample_aces();
  other_kind[1].kind = AceKind::kDenyDelete;
  EXPECT_NE(base, capability_sid_for("S-1-5-21-1-2-3-1001", other_kind));
}

TEST(WindowsIdentity, LockNamesFoldCaseAndHoldNoBackslashAfterTheNamespace) {
  const std::string name = acl_lock_name("C:\\Work\\Proj");
  EXPECT_EQ(name, acl_lock_name("c:\\work\\proj"));
  EXPECT_NE(name, acl_lock_name("C:\\work\\proj2"));
  ASSERT_TRUE(name.starts_with("Local\\sbx-windows-acl-")) << name;
  EXPECT_EQ(name.find('\\', 6), std::string::npos) << name;
  EXPECT_EQ(name.size(), std::string("Local\\sbx-windows-acl-").size() + 16);
}

// A workspace in the model: C:\work\proj with a .git of `git_files` files and `files` others.
model::DaclModel model_workspace(int files, int git_files) {
  model::DaclModel fs;
  fs.add_directory("C:\\work");
  fs.add_directory("C:\\work\\proj");
  fs.add_directory("C:\\work\\proj\\.git");
  for (int i = 0; i < git_files; ++i) fs.add_file("C:\\work\\proj\\.git\\o" + std::to_string(i));
  fs.add_directory("C:\\work\\proj\\src");
  for (int i = 0; i < files; ++i) fs.add_file("C:\\work\\proj\\src\\f" + std::to_string(i));
  return fs;
}

WindowsPlan workspace_plan() {
  TransformRequest request =
      request_for({rule("/", Access::kRead), rule("C:/work/proj", Access::kWrite)},
                  {ProtectedPath{"C:/work/proj/.git", "C:/work/proj", true, true},
                   ProtectedPath{"C:/work/proj/.codex", "C:/work/proj", false, false}});
  Result<WindowsPlan> plan = build_plan(request);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return plan.ok() ? *plan : WindowsPlan{};
}

TEST(WindowsAclApply, FirstRunWritesEveryAceTheSecondWritesNone) {
  model::DaclModel fs = model_workspace(100, 10);
  const WindowsPlan plan = workspace_plan();
  std::vector<std::string> created;
  Result<AclApplyStats> first = apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_EQ(first->written, plan.aces.size());
  EXPECT_EQ(first->skipped, 0u);
  EXPECT_EQ(first->created, 1u);  // .codex
  EXPECT_EQ(created, std::vector<std::string>{"C:\\work\\proj\\.codex"});
  EXPECT_TRUE(remove_created(created, fs).empty());
  EXPECT_FALSE(fs.contains("C:\\work\\proj\\.codex"));

  const std::size_t writes_after_first = fs.dacl_writes;
  created.clear();
  Result<AclApplyStats> second = apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
  ASSERT_TRUE(second.ok()) << second.error();
  // Only the re-created (empty) .codex needs its deny ACE again: one DACL write, no
  // propagation through the tree.
  EXPECT_EQ(second->written, 1u);
  EXPECT_EQ(second->skipped, plan.aces.size() - 1);
  EXPECT_EQ(fs.dacl_writes - writes_after_first, 1u);
  EXPECT_FALSE(fs.any_locked());
}

TEST(WindowsAclApply, EveryDaclReadAndWriteHappensUnderThePathLock) {
  model::DaclModel fs = model_workspace(3, 3);
  const WindowsPlan plan = workspace_plan();
  std::vector<std::string> created;
  // The model fails any has_ace/add_ace on a path that is not locked, and a double lock.
  Result<AclApplyStats> stats = apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(fs.locks_taken, plan.aces.size());
  EXPECT_FALSE(fs.any_locked());
}

// A host whose lock always fails (another run holds it past the timeout).
class LockedOutHost final : public DaclHost {
 public:
  Result<bool> exists(const std::string&) override { return true; }
  Result<bool> create_directory(const std::string&) override { return true; }
  Status lock(const std::string& path) override { return Error{"lock of " + path + " timed out"}; }
  void unlock(const std::string&) override { ++unlocks; }
  Result<bool> has_ace(const Ace&) override {
    ++reads;
    return false;
  }
  Status add_ace(const Ace&) override {
    ++writes;
    return {};
  }
  bool remove_if_empty(const std::string&) override { return true; }
  int reads = 0, writes = 0, unlocks = 0;
};

TEST(WindowsAclApply, NoLockNoWriteAndTheErrorSaysWhy) {
  LockedOutHost host;
  const WindowsPlan plan = workspace_plan();
  std::vector<std::string> created;
  Result<AclApplyStats> stats = apply_acl_plan({}, plan.aces, host, created);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().find("timed out"), std::string::npos) << stats.error();
  EXPECT_EQ(host.reads, 0);
  EXPECT_EQ(host.writes, 0);
  EXPECT_EQ(host.unlocks, 0);
}

TEST(WindowsAclApply, MissingParentsAreCreatedFirstAndRemovedNewestFirst) {
  model::DaclModel fs;
  fs.add_directory("C:\\w");
  std::vector<std::string> created;
  Result<AclApplyStats> stats = apply_acl_plan({"C:\\w\\ro\\rw\\.codex"}, {}, fs, created);
  ASSERT_TRUE(stats.ok()) << stats.error();
  const std::vector<std::string> expected = {"C:\\w\\ro", "C:\\w\\ro\\rw", "C:\\w\\ro\\rw\\.codex"};
  EXPECT_EQ(created, expected);
  EXPECT_TRUE(remove_created(created, fs).empty());
  EXPECT_FALSE(fs.contains("C:\\w\\ro"));
  EXPECT_TRUE(fs.contains("C:\\w"));
}

TEST(WindowsAclApply, ACreatedNameAnotherRunHoldsStaysInPlace) {
  model::DaclModel fs;
  fs.add_directory("C:\\w");
  std::vector<std::string> created;
  ASSERT_TRUE(apply_acl_plan({"C:\\w\\.codex"}, {}, fs, created).ok());
  fs.held.insert("C:\\w\\.codex");  // a concurrent run relies on it
  EXPECT_EQ(remove_created(created, fs), std::vector<std::string>{"C:\\w\\.codex"});
  EXPECT_TRUE(fs.contains("C:\\w\\.codex"));
}

TEST(WindowsAclApply, AnAceThatVanishedIsWrittenAgain) {
  model::DaclModel fs = model_workspace(5, 5);
  const WindowsPlan plan = workspace_plan();
  std::vector<std::string> created;
  ASSERT_TRUE(apply_acl_plan(plan.create_dirs, plan.aces, fs, created).ok());
  fs.remove_aces("C:\\work\\proj\\.git");  // e.g. the user re-cloned .git
  created.clear();
  Result<AclApplyStats> again = apply_acl_plan(plan.create_dirs, plan.aces, fs, created);
  ASSERT_TRUE(again.ok()) << again.error();
  // Only .git's deny-write: .codex (not removed here) still has its own.
  EXPECT_EQ(again->written, 1u);
  EXPECT_EQ(again->skipped, plan.aces.size() - 1);
}

// A host where another run creates every directory between exists() and create_directory().
class RacingHost final : public DaclHost {
 public:
  Result<bool> exists(const std::string&) override { return false; }
  Result<bool> create_directory(const std::string&) override { return false; }
  Status lock(const std::string&) override { return {}; }
  void unlock(const std::string&) override {}
  Result<bool> has_ace(const Ace&) override { return true; }
  Status add_ace(const Ace&) override { return {}; }
  bool remove_if_empty(const std::string& path) override {
    removed.push_back(path);
    return true;
  }
  std::vector<std::string> removed;
};

TEST(WindowsAclApply, ANameAConcurrentRunCreatedFirstIsNotThisRunsToRemove) {
  RacingHost host;
  std::vector<std::string> created;
  Result<AclApplyStats> stats = apply_acl_plan({"C:\\w\\.codex"}, {}, host, created);
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->created, 0u);
  EXPECT_TRUE(created.empty());
  EXPECT_TRUE(remove_created(created, host).empty());
  EXPECT_TRUE(host.removed.empty());
}

// ---- %TEMP% / %TMP% ----

TransformRequest temp_request(std::vector<std::string> env) {
  TransformRequest request =
      request_for({rule("/", Access::kRead), rule("C:/Users/me/AppData/Local/Temp", Access::kWrite),
                   rule("C:/work/proj", Access::kWrite)});
  request.env = std::move(env);
  return request;
}

std::string env_value(const WindowsPlan& plan, std::string_view name) {
  for (const std::string& entry : plan.env) {
    if (entry.starts_with(std::string(name) + "=")) return entry.substr(name.size() + 1);
  }
  return "<unset>";
}

bool info_has(const WindowsPlan& plan, std::string_view fragment) {
  return std::any_of(plan.info.begin(), plan.info.end(), [&](const std::string& line) {
    return line.find(fragment) != std::string::npos;
  });
}

TEST(WindowsTemp, TempAndTmpUnderAWritableRuleAreWritableAndUnchanged) {
  Result<WindowsPlan> plan = build_plan(temp_request(
      {"TEMP=C:\\Users\\me\\AppData\\Local\\Temp", "TMP=c:\\users\\me\\AppData\\Local\\Temp\\"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(env_value(*plan, "TEMP"), "C:\\Users\\me\\AppData\\Local\\Temp");
  EXPECT_EQ(env_value(*plan, "TMP"), "c:\\users\\me\\AppData\\Local\\Temp\\");
  EXPECT_TRUE(info_has(*plan, "TEMP=C:\\Users\\me\\AppData\\Local\\Temp is writable"));
  // The ACE that makes it writable.
  EXPECT_NE(std::find(plan->aces.begin(), plan->aces.end(),
                      Ace{AceKind::kAllowWrite, SidRef::kWriteCapability,
                          "C:\\Users\\me\\AppData\\Local\\Temp"}),
            plan->aces.end());
}

TEST(WindowsTemp, AReadOnlyTmpIsPointedAtTheWritableTemp) {
  Result<WindowsPlan> plan = build_plan(
      temp_request({"TEMP=C:\\Users\\me\\AppData\\Local\\Temp", "TMP=C:\\Windows\\Temp"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(env_value(*plan, "TMP"), "C:\\Users\\me\\AppData\\Local\\Temp");
  EXPECT_TRUE(info_has(*plan, "TMP=C:\\Windows\\Temp is not writable"));
  EXPECT_TRUE(info_has(*plan, "TMP set to TEMP's writable"));
}

TEST(WindowsTemp, AMissingTempIsSetFromTheWritableTmp) {
  Result<WindowsPlan> plan =
      build_plan(temp_request({"TMP=C:\\work\\proj\\tmp", "PATH=C:\\Windows"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(env_value(*plan, "TEMP"), "C:\\work\\proj\\tmp");
  // Still sorted the way CreateProcessW requires.
  EXPECT_TRUE(std::is_sorted(plan->env.begin(), plan->env.end()));
}

TEST(WindowsTemp, NeitherWritableIsSaidAndNothingIsInvented) {
  Result<WindowsPlan> plan = build_plan(temp_request({"TEMP=D:\\t", "TMP=D:\\t2"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(env_value(*plan, "TEMP"), "D:\\t");
  EXPECT_EQ(env_value(*plan, "TMP"), "D:\\t2");
  EXPECT_TRUE(info_has(*plan, "neither TEMP nor TMP is writable"));
}

// ---- desktop and the job's UI limits ----

TEST(WindowsDesktop, EveryPlanNamesTheInteractiveDesktopAndLimitsTheJobUi) {
  Result<WindowsPlan> plan = build_plan(temp_request({}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->desktop, "Winsta0\\Default");
  EXPECT_TRUE(plan->job_ui_limits);
  const ExecPlan exec_plan = to_exec_plan(*plan);
  EXPECT_NE(std::find(exec_plan.notes.begin(), exec_plan.notes.end(), "desktop: Winsta0\\Default"),
            exec_plan.notes.end());
  // exec() gets both back (they are not in PlanWindows, and never optional).
  Result<WindowsPlan> back = from_exec_plan(exec_plan);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->desktop, "Winsta0\\Default");
  EXPECT_TRUE(back->job_ui_limits);
}

// ---- audited locations ----

TEST(WindowsAudit, AncestorsOutsideWritableRootsAndSharedLocationsAreAudited) {
  TransformRequest request =
      temp_request({"PUBLIC=C:\\Users\\Public", "ProgramData=C:\\ProgramData"});
  request.cwd = "C:/work/proj/src";
  request.argv = {"C:/tools/bin/tool.exe"};
  Result<WindowsPlan> plan = build_plan(request);
  ASSERT_TRUE(plan.ok()) << plan.error();
  const std::vector<std::string> audited = audit_locations(*plan);
  for (const char* expected : {"C:\\", "C:\\work", "C:\\tools", "C:\\tools\\bin", "C:\\Users",
                               "C:\\Users\\me\\AppData", "C:\\Users\\Public", "C:\\ProgramData"}) {
    EXPECT_NE(std::find(audited.begin(), audited.end(), expected), audited.end()) << expected;
  }
  // Writable on purpose: not audited.
  for (const char* skipped :
       {"C:\\work\\proj", "C:\\work\\proj\\src", "C:\\Users\\me\\AppData\\Local\\Temp"}) {
    EXPECT_EQ(std::find(audited.begin(), audited.end(), skipped), audited.end()) << skipped;
  }
  EXPECT_TRUE(std::is_sorted(audited.begin(), audited.end()));
}

// ---- the network ----

TEST(WindowsNetwork, TheMechanismFollowsElevationAndTheApiAndNeverClaimsEnforcement) {
  const NetworkMechanismReport admin = network_mechanism(true, true);
  EXPECT_EQ(admin.mechanism, NetworkMechanism::kFirewallRules);
  const NetworkMechanismReport user = network_mechanism(false, true);
  EXPECT_EQ(user.mechanism, NetworkMechanism::kAppContainer);
  EXPECT_NE(user.observed.find("AppContainer"), std::string::npos);
  const NetworkMechanismReport none = network_mechanism(false, false);
  EXPECT_EQ(none.mechanism, NetworkMechanism::kNone);
  for (const NetworkMechanismReport* report : {&admin, &user, &none}) {
    EXPECT_NE(report->observed.find("not implemented"), std::string::npos) << report->observed;
    EXPECT_NE(report->observed.find("refused"), std::string::npos) << report->observed;
    EXPECT_FALSE(report->remedy.empty());
  }
}

TEST(WindowsNetwork, RestrictedAndProxyAreStillRefusedWithTheReason) {
  for (NetworkMode mode : {NetworkMode::kRestricted, NetworkMode::kProxy}) {
    TransformRequest request = temp_request({});
    request.policy.network.mode = mode;
    Result<WindowsPlan> plan = build_plan(request);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().find("cannot enforce network.mode="), std::string::npos) << plan.error();
    EXPECT_NE(plan.error().find("no firewall component"), std::string::npos) << plan.error();
  }
}

}  // namespace parity_tests
}  // namespace sbx::windows
