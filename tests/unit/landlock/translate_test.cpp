// The landlock translator: exact argv and rule set for what Landlock can express, refusals
// naming the rule for what it cannot, and the capabilities each ABI offers.
#include <gtest/gtest.h>

#include <algorithm>

#include "sbx/landlock/translate.hpp"

namespace {

using namespace sbx;
using sbx::landlock::translate;

TransformRequest request(std::vector<PathRule> rules, NetworkMode net = NetworkMode::kRestricted) {
  TransformRequest r;
  r.argv = {"/bin/true"};
  r.cwd = "/ws";
  r.env = {"PATH=/bin"};
  r.policy.rules = std::move(rules);
  r.policy.network.mode = net;
  r.policy.cwd = "/ws";
  return r;
}

TEST(LandlockTranslate, WorkspacePolicyBecomesExactStage2Argv) {
  auto t = translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}}), "/s2");
  ASSERT_TRUE(t.ok()) << t.error();
  const std::vector<std::string> expected = {
      "/s2", "--landlock", "4", "--ll-fs", "restricted", "--ll-read", "/", "--ll-write", "/ws",
      "--ll-dev", "/dev/null", "--ll-dev", "/dev/zero", "--ll-dev", "/dev/full", "--ll-dev",
      "/dev/random", "--ll-dev", "/dev/urandom", "--ll-dev", "/dev/tty",
      "--ll-dev", "/dev/ptmx",
      "--ll-scope-abstract-unix", "on", "--net", "blocked", "--env-environ", "--",
      "/bin/true"};
  EXPECT_EQ(t->argv, expected);
  // The environment travels as stage 2's own, never as (world-readable) arguments.
  EXPECT_EQ(t->env, std::vector<std::string>{"PATH=/bin"});
  EXPECT_EQ(t->min_abi, 4);
  ASSERT_GE(t->rules.size(), 2u);
  EXPECT_EQ(t->rules[0], (landlock::RuleLine{"read", "/"}));
  EXPECT_EQ(t->rules[1], (landlock::RuleLine{"write", "/ws"}));
}

bool has_note(const landlock::Translation& t, const std::string& needle) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

TEST(LandlockTranslate, NotesSayHowMetadataAndTerminalsAreHandled) {
  auto t = translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}}), "/s2");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(has_note(*t, "chmod, chown, file times and extended attributes are emulated"));
  EXPECT_TRUE(has_note(*t, "can read (not write) the host's other terminals"));
  // Without a read rule over /dev/pts the terminals are not readable: no such note.
  auto minimal = request({{"/ws", Access::kWrite}});
  minimal.policy.platform_defaults_readable = true;
  auto m = translate(minimal, "/s2");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(has_note(*m, "other terminals"));
  EXPECT_TRUE(has_note(*m, "emulated"));
}

TEST(LandlockTranslate, NetworkEnabledNeedsOnlyTruncateAndDoesNotScopeAbstractSockets) {
  auto t = translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}},
                             NetworkMode::kEnabled), "/s2");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->min_abi, 3);
  EXPECT_NE(std::find(t->argv.begin(), t->argv.end(), "open"), t->argv.end());
}

TEST(LandlockTranslate, MinimalAndWriteUnderReadAreExpressible) {
  auto r = request({{"/ws", Access::kWrite}, {"/ws/out", Access::kWrite}});
  r.policy.platform_defaults_readable = true;
  auto t = translate(r, "/s2");
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_NE(std::find(t->rules.begin(), t->rules.end(), landlock::RuleLine{"read", "/usr"}),
            t->rules.end());
}

TEST(LandlockTranslate, RefusalsNameTheRule) {
  struct Case {
    TransformRequest req;
    std::string needle;
  };
  std::vector<Case> cases;
  cases.push_back({request({{"/", Access::kRead}, {"/ws", Access::kWrite}, {"/ws/ro", Access::kRead}}),
                   "write_carveouts: '/ws/ro' (read) inside '/ws' (write)"});
  cases.push_back({request({{"/", Access::kRead}, {"/root/.ssh", Access::kDeny}}),
                   "read_carveouts: '/root/.ssh' (deny) inside '/' (read)"});
  auto prot = request({{"/", Access::kRead}, {"/ws", Access::kWrite}});
  prot.policy.protected_paths = {{"/ws/.codex", "/ws", false, false}};
  cases.push_back({prot, "protected_names: protected path '/ws/.codex' (missing) under writable "
                         "root '/ws'"});
  auto glob = request({{"/", Access::kRead}});
  glob.policy.deny_globs = {"/ws/**/*.pem"};
  cases.push_back({glob, "deny_globs: deny glob '/ws/**/*.pem'"});
  // Proxy mode without the running proxy's port (sbx exec sets it) cannot be enforced.
  cases.push_back({request({{"/", Access::kRead}}, NetworkMode::kProxy),
                   "proxy_network: it needs exactly one proxy port"});
  auto sock = request({{"/", Access::kRead}});
  sock.policy.network.unix_sockets = {"/run/agent.sock"};
  cases.push_back({sock, "unix_socket_allowlist: unix socket '/run/agent.sock'"});
  for (const Case& c : cases) {
    auto t = translate(c.req, "/s2");
    ASSERT_FALSE(t.ok()) << c.needle;
    EXPECT_NE(t.error().find(c.needle), std::string::npos) << t.error();
  }
  EXPECT_FALSE(translate(request({{"/", Access::kRead}}), "").ok()) << "no stage 2";
}

TEST(LandlockTranslate, CapabilitiesFollowTheAbi) {
  EXPECT_TRUE(landlock::capabilities_for_abi(0).empty());
  EXPECT_FALSE(landlock::capabilities_for_abi(2).has(Capability::kWriteRestriction));
  EXPECT_TRUE(landlock::capabilities_for_abi(3).has(Capability::kWriteRestriction));
  EXPECT_FALSE(landlock::capabilities_for_abi(3).has(Capability::kNetworkBlock));
  EXPECT_TRUE(landlock::capabilities_for_abi(4).has(Capability::kNetworkBlock));
  EXPECT_FALSE(landlock::capabilities_for_abi(3).has(Capability::kProxyNetwork));
  EXPECT_TRUE(landlock::capabilities_for_abi(4).has(Capability::kProxyNetwork));
  for (Capability never : {Capability::kWriteCarveouts, Capability::kReadCarveouts,
                           Capability::kProtectedNames, Capability::kDenyGlobs,
                           Capability::kUnixSocketAllowlist})
    EXPECT_FALSE(landlock::capabilities_for_abi(7).has(never)) << to_string(never);
}

}  // namespace
