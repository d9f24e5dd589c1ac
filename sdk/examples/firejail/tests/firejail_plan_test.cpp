// The policy -> firejail mapping, on a described host (no firejail needed).
#include "firejail_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace firejail_backend {
namespace {

using sbx::Access;

// A host where exactly `existing` exist.
PathFacts facts_with(std::set<std::string> existing) {
  return PathFacts{[existing](const std::string& p) { return existing.count(p) != 0; }};
}

// The shape of workspace-write for cwd /ws: / read, /tmp and /ws write, .git protected.
sbx::TransformRequest workspace_request() {
  sbx::TransformRequest request;
  request.argv = {"/bin/echo", "hi there"};
  request.cwd = "/ws";
  request.env = {"PATH=/usr/bin:/bin", "HOME=/root"};
  sbx::ResolvedPolicy& policy = request.policy;
  policy.rules = {{"/", Access::kRead}, {"/ws", Access::kWrite}, {"/tmp", Access::kWrite}};
  policy.protected_paths = {{"/ws/.git", "/ws", true, true}};
  policy.cwd = "/ws";
  return request;
}

const PathFacts kWorkspaceHost = facts_with({"/", "/ws", "/tmp", "/ws/.git"});

std::vector<std::string> plan_argv(const sbx::TransformRequest& request,
                                   const PathFacts& facts = kWorkspaceHost) {
  sbx::Result<sbx::ExecPlan> plan = build_plan(request, facts);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return plan.ok() ? plan->argv : std::vector<std::string>{};
}

std::string plan_error(const sbx::TransformRequest& request,
                       const PathFacts& facts = kWorkspaceHost) {
  sbx::Result<sbx::ExecPlan> plan = build_plan(request, facts);
  EXPECT_FALSE(plan.ok()) << "expected an error, got a plan";
  return plan.ok() ? "" : plan.error();
}

std::ptrdiff_t index_of(const std::vector<std::string>& argv, const std::string& arg) {
  const auto it = std::find(argv.begin(), argv.end(), arg);
  return it == argv.end() ? -1 : it - argv.begin();
}

bool contains(const std::vector<std::string>& argv, const std::string& arg) {
  return index_of(argv, arg) >= 0;
}

TEST(FirejailPlan, WorkspaceWriteMapsToReadOnlyRootThenWritableRootsThenProtected) {
  const std::vector<std::string> argv = plan_argv(workspace_request());
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv.front(), "/usr/bin/firejail");
  const auto ro_root = index_of(argv, "--read-only=/");
  const auto rw_ws = index_of(argv, "--read-write=/ws");
  const auto rw_tmp = index_of(argv, "--read-write=/tmp");
  const auto ro_git = index_of(argv, "--read-only=/ws/.git");
  ASSERT_GE(ro_root, 0);
  EXPECT_GT(rw_ws, ro_root);
  EXPECT_GT(rw_tmp, ro_root);
  EXPECT_GT(ro_git, rw_ws) << "the protected path must be mounted after its writable root";
  EXPECT_TRUE(contains(argv, "--net=none"));
  EXPECT_TRUE(contains(argv, "--protocol=unix"));
}

TEST(FirejailPlan, CommandFollowsDoubleDashAndSetsid) {
  const std::vector<std::string> argv = plan_argv(workspace_request());
  const auto dash = index_of(argv, "--");
  ASSERT_GE(dash, 0);
  ASSERT_EQ(argv.size(), static_cast<std::size_t>(dash) + 4);
  EXPECT_EQ(argv[static_cast<std::size_t>(dash) + 1], "/usr/bin/setsid");
  EXPECT_EQ(argv[static_cast<std::size_t>(dash) + 2], "/bin/echo");
  EXPECT_EQ(argv[static_cast<std::size_t>(dash) + 3], "hi there");
}

TEST(FirejailPlan, HardeningFlagsAlwaysPresent) {
  sbx::TransformRequest request = workspace_request();
  request.policy.filesystem_kind = sbx::FilesystemKind::kUnrestricted;
  request.policy.network.mode = sbx::NetworkMode::kEnabled;
  const std::vector<std::string> argv = plan_argv(request);
  for (const char* flag : {"--noprofile", "--private-dev", "--caps.drop=all", "--nonewprivs",
                           "--restrict-namespaces", "--seccomp.block-secondary"})
    EXPECT_TRUE(contains(argv, flag)) << flag;
  const auto seccomp = std::find_if(
      argv.begin(), argv.end(), [](const std::string& a) { return a.rfind("--seccomp=", 0) == 0; });
  ASSERT_NE(seccomp, argv.end());
  for (const char* call : {"ptrace", "process_vm_readv", "io_uring_setup", "keyctl", "bpf",
                           "perf_event_open", "userfaultfd", "mount"})
    EXPECT_NE(seccomp->find(call), std::string::npos) << call;
  EXPECT_FALSE(contains(argv, "--read-only=/")) << "unrestricted filesystem";
  EXPECT_FALSE(contains(argv, "--net=none")) << "network enabled";
}

TEST(FirejailPlan, MissingProtectedPathInWritableRootIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.protected_paths.push_back({"/ws/.codex", "/ws", false, false});
  const std::string error = plan_error(request);
  EXPECT_NE(error.find("/ws/.codex"), std::string::npos) << error;
  EXPECT_NE(error.find("mkdir"), std::string::npos) << error;
}

TEST(FirejailPlan, MissingProtectedPathThatCannotBeCreatedNeedsNothing) {
  sbx::TransformRequest request = workspace_request();
  // Its parent does not exist and lies in the read-only part of the tree.
  request.policy.protected_paths = {{"/srv/gone/.git", "/srv/gone", false, false}};
  const std::vector<std::string> argv = plan_argv(request);
  EXPECT_FALSE(contains(argv, "--read-only=/srv/gone/.git"));
}

TEST(FirejailPlan, ProtectedAncestorThatCouldBeRenamedIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.protected_paths = {{"/ws/sub/.git", "/ws", true, true}};
  const std::string error =
      plan_error(request, facts_with({"/", "/ws", "/tmp", "/ws/sub", "/ws/sub/.git"}));
  EXPECT_NE(error.find("'/ws/sub', an ancestor"), std::string::npos) << error;
}

TEST(FirejailPlan, WriteRuleInsideProtectedPathStaysReadOnly) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/ws/.git/hooks", Access::kWrite});
  sbx::Result<sbx::ExecPlan> plan =
      build_plan(request, facts_with({"/", "/ws", "/tmp", "/ws/.git", "/ws/.git/hooks"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_FALSE(contains(plan->argv, "--read-write=/ws/.git/hooks"));
}

TEST(FirejailPlan, DenyGlobIsRefusedByName) {
  sbx::TransformRequest request = workspace_request();
  request.policy.deny_globs = {"/**/*.pem"};
  EXPECT_NE(plan_error(request).find("'/**/*.pem'"), std::string::npos);
}

TEST(FirejailPlan, RestrictedReadsAreRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules = {{"/usr", Access::kRead}, {"/ws", Access::kWrite}};
  EXPECT_NE(plan_error(request).find("cannot restrict reads"), std::string::npos);
}

TEST(FirejailPlan, ProxyNetworkIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.network.mode = sbx::NetworkMode::kProxy;
  EXPECT_NE(plan_error(request).find("proxy"), std::string::npos);
}

TEST(FirejailPlan, UnixSocketAllowListIsRefusedWhenNetworkRestricted) {
  sbx::TransformRequest request = workspace_request();
  request.policy.network.unix_sockets = {"/run/agent.sock"};
  EXPECT_NE(plan_error(request).find("/run/agent.sock"), std::string::npos);
}

TEST(FirejailPlan, DeniedDomainWithNetworkEnabledIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.network.mode = sbx::NetworkMode::kEnabled;
  request.policy.network.denied_domains = {"evil.example"};
  EXPECT_NE(plan_error(request).find("evil.example"), std::string::npos);
}

TEST(FirejailPlan, ExistingDenyInsideWritableRootIsBlacklistedAfterTheRoot) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/ws/secret", Access::kDeny});
  const std::vector<std::string> argv =
      plan_argv(request, facts_with({"/", "/ws", "/tmp", "/ws/.git", "/ws/secret"}));
  const auto blacklist = index_of(argv, "--blacklist=/ws/secret");
  ASSERT_GE(blacklist, 0);
  EXPECT_GT(blacklist, index_of(argv, "--read-write=/ws"));
}

TEST(FirejailPlan, ExistingReadCarveOutInsideWritableRootIsReadOnly) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/ws/vendor", Access::kRead});
  const std::vector<std::string> argv =
      plan_argv(request, facts_with({"/", "/ws", "/tmp", "/ws/.git", "/ws/vendor"}));
  EXPECT_GT(index_of(argv, "--read-only=/ws/vendor"), index_of(argv, "--read-write=/ws"));
}

TEST(FirejailPlan, MissingDenyInsideWritableRootIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/ws/secret", Access::kDeny});
  EXPECT_NE(plan_error(request).find("'/ws/secret' (deny) from being created"), std::string::npos);
}

TEST(FirejailPlan, MissingDenyInReadOnlyAreaNeedsNothing) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/root/.ssh", Access::kDeny});
  const std::vector<std::string> argv = plan_argv(request);
  EXPECT_FALSE(contains(argv, "--blacklist=/root/.ssh"));
}

TEST(FirejailPlan, ExistingDenyInReadOnlyAreaIsBlacklisted) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/root/.ssh", Access::kDeny});
  const std::vector<std::string> argv =
      plan_argv(request, facts_with({"/", "/ws", "/tmp", "/ws/.git", "/root/.ssh"}));
  EXPECT_TRUE(contains(argv, "--blacklist=/root/.ssh"));
}

TEST(FirejailPlan, WritableRootInsideDeniedDirectoryIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules = {
      {"/", Access::kRead}, {"/home", Access::kDeny}, {"/home/me/proj", Access::kWrite}};
  request.policy.protected_paths.clear();
  request.policy.cwd = "/";
  EXPECT_NE(plan_error(request).find("re-open"), std::string::npos);
}

TEST(FirejailPlan, WritableRootUnderPrivateDevIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/dev/shm", Access::kWrite});
  EXPECT_NE(plan_error(request).find("private copy"), std::string::npos);
}

TEST(FirejailPlan, PathsWithFirejailMetacharactersAreRefused) {
  for (const char* path : {"/ws/a*b", "/ws/a,b", "/ws/${HOME}", "/ws/a\nb"}) {
    sbx::TransformRequest request = workspace_request();
    request.policy.rules.push_back({path, Access::kRead});
    EXPECT_NE(plan_error(request).find("treats specially"), std::string::npos) << path;
  }
}

TEST(FirejailPlan, MissingWritableRootIsSkippedWithANote) {
  sbx::Result<sbx::ExecPlan> plan =
      build_plan(workspace_request(), facts_with({"/", "/ws", "/ws/.git"}));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_FALSE(contains(plan->argv, "--read-write=/tmp"));
  EXPECT_TRUE(std::any_of(plan->notes.begin(), plan->notes.end(), [](const std::string& n) {
    return n.find("'/tmp' does not exist") != std::string::npos;
  }));
}

TEST(FirejailPlan, DeniedWorkingDirectoryIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.policy.rules.push_back({"/srv", Access::kDeny});
  request.policy.cwd = "/srv/x";
  request.cwd = "/srv/x";
  EXPECT_NE(plan_error(request).find("working directory"), std::string::npos);
}

TEST(FirejailPlan, RelativeCommandIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.argv = {"echo"};
  EXPECT_NE(plan_error(request).find("absolute"), std::string::npos);
}

TEST(FirejailPlan, UnsafeVariablesNeverReachFirejailAndTmpdirTravelsByFlag) {
  sbx::TransformRequest request = workspace_request();
  request.env = {"PATH=/bin", "LD_PRELOAD=/evil.so", "GCONV_PATH=/x", "TMPDIR=/tmp/t"};
  sbx::Result<sbx::ExecPlan> plan = build_plan(request, kWorkspaceHost);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->env, std::vector<std::string>{"PATH=/bin"});
  EXPECT_TRUE(contains(plan->argv, "--env=TMPDIR=/tmp/t"));
  EXPECT_TRUE(std::any_of(plan->notes.begin(), plan->notes.end(), [](const std::string& n) {
    return n.find("LD_PRELOAD, GCONV_PATH") != std::string::npos;
  }));
  EXPECT_EQ(plan->cwd, "/ws");
}

TEST(FirejailPlan, MalformedEnvironmentEntryIsRefused) {
  sbx::TransformRequest request = workspace_request();
  request.env = {"NOEQUALS"};
  EXPECT_NE(plan_error(request).find("NOEQUALS"), std::string::npos);
}

}  // namespace
}  // namespace firejail_backend
