// The landlock translator: exact argv and rule set for what Landlock can express, refusals
// naming the rule for what it cannot, and the capabilities each ABI offers.
#include "sbx/landlock/translate.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace sbx;
using sbx::landlock::HostFacts;
using sbx::landlock::RuleLine;
using sbx::landlock::translate;

// A host's / as the module would list it: directories, a file, merged-/usr symlinks and /dev;
// no device filesystem mounted outside /dev.
HostFacts host_facts() {
  HostFacts facts;
  facts.stage2_path = "/s2";
  facts.mounts_known = true;
  facts.listings["/"] = {{"bin", true},   {"dev", false},  {"etc", false}, {"home", false},
                         {"lib64", true}, {"proc", false}, {"srv", false}, {"swapfile", false},
                         {"tmp", false},  {"usr", false}};
  return facts;
}

bool has_note(const landlock::Translation& t, const std::string& needle) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

bool has_rule(const landlock::Translation& t, const RuleLine& rule) {
  return std::find(t.plan.rules.begin(), t.plan.rules.end(), rule) != t.plan.rules.end();
}

bool has_rule_within(const landlock::Translation& t, const std::string& kind,
                     const std::string& dir) {
  return std::any_of(t.plan.rules.begin(), t.plan.rules.end(), [&](const RuleLine& r) {
    return r.kind == kind && sbx::path_is_within(r.path, dir);
  });
}

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
  auto t = translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}}), host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  const std::vector<std::string> expected = {
      "/s2",       "--landlock", "4",           "--ll-fs",       "restricted",
      "--ll-list", "/",          "--ll-list",   "/dev",          "--ll-read",
      "/etc",      "--ll-read",  "/home",       "--ll-read",     "/proc",
      "--ll-read", "/srv",       "--ll-read",   "/swapfile",     "--ll-read",
      "/tmp",      "--ll-read",  "/usr",        "--ll-write",    "/ws",
      "--ll-dev",  "/dev/null",  "--ll-dev",    "/dev/zero",     "--ll-dev",
      "/dev/full", "--ll-dev",   "/dev/random", "--ll-dev",      "/dev/urandom",
      "--ll-dev",  "/dev/tty",   "--ll-dev",    "/dev/ptmx",     "--ll-scope-abstract-unix",
      "on",        "--net",      "blocked",     "--env-environ", "--",
      "/bin/true"};
  EXPECT_EQ(t->argv, expected);
  // The environment travels as stage 2's own, never as (world-readable) arguments.
  EXPECT_EQ(t->env, std::vector<std::string>{"PATH=/bin"});
  EXPECT_EQ(t->plan.min_abi, 4);
  ASSERT_GE(t->plan.rules.size(), 10u);
  EXPECT_EQ(t->plan.rules[0], (RuleLine{"list", "/"}));
  EXPECT_EQ(t->plan.rules[1], (RuleLine{"list", "/dev"}));
  EXPECT_EQ(t->plan.rules[2], (RuleLine{"read", "/etc"}));
  EXPECT_EQ(t->plan.rules[9], (RuleLine{"write", "/ws"}));
}

// Landlock rights reach everything beneath a rule: a read rule on / would open raw disks and the
// host's other terminals. / is granted entry by entry instead, never /dev, never through a
// symlink (its target is another entry, or beneath /dev).
TEST(LandlockTranslate, ReadingRootGrantsEachEntryButDev) {
  auto t = translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}}), host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  for (const char* entry : {"/etc", "/home", "/proc", "/swapfile", "/tmp", "/usr"})
    EXPECT_TRUE(has_rule(*t, {"read", entry})) << entry;
  EXPECT_FALSE(has_rule_within(*t, "read", "/dev"));
  EXPECT_FALSE(has_rule_within(*t, "write", "/dev"));
  EXPECT_FALSE(has_rule(*t, {"read", "/"}));
  EXPECT_FALSE(has_rule(*t, {"read", "/bin"})) << "a symlink: /usr/bin is granted through /usr";
  EXPECT_FALSE(has_rule(*t, {"read", "/lib64"}));
  EXPECT_TRUE(has_rule(*t, {"list", "/"}));
  EXPECT_TRUE(has_rule(*t, {"list", "/dev"}));
  EXPECT_TRUE(has_rule(*t, {"dev", "/dev/null"}));
  EXPECT_TRUE(has_rule(*t, {"dev", "/dev/ptmx"}));
  EXPECT_FALSE(has_rule_within(*t, "dev", "/dev/pts"));
  EXPECT_EQ(landlock::directories_to_list(request({{"/", Access::kRead}}).policy, {}),
            std::vector<std::string>{"/"});
  EXPECT_TRUE(landlock::directories_to_list(request({{"/ws", Access::kWrite}}).policy, {}).empty());
  EXPECT_TRUE(landlock::directories_to_list(request({{"/dev", Access::kRead}}).policy, {}).empty())
      << "/dev itself is only listed: nothing to split";
}

// A device filesystem mounted elsewhere (a chroot's /dev, a second devpts) opens the same
// nodes: it is closed like /dev, and the rule is split along the way down to it.
TEST(LandlockTranslate, DeviceFilesystemsMountedElsewhereAreClosedToo) {
  HostFacts facts = host_facts();
  facts.device_mounts = {"/srv/chroot/dev", "/dev/pts"};  // the second is /dev's already
  const auto policy = request({{"/", Access::kRead}, {"/ws", Access::kWrite}}).policy;
  EXPECT_EQ(landlock::closed_paths(facts.device_mounts),
            (std::vector<std::string>{"/dev", "/srv/chroot/dev"}));
  EXPECT_EQ(landlock::directories_to_list(policy, facts.device_mounts),
            (std::vector<std::string>{"/", "/srv", "/srv/chroot"}));
  facts.listings["/srv"] = {{"chroot", false}, {"www", false}};
  facts.listings["/srv/chroot"] = {{"dev", false}, {"etc", false}, {"lib", true}};
  auto t = translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}}), facts);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_FALSE(has_rule(*t, {"read", "/srv"}));
  EXPECT_FALSE(has_rule(*t, {"read", "/srv/chroot"}));
  EXPECT_FALSE(has_rule_within(*t, "read", "/srv/chroot/dev"));
  EXPECT_TRUE(has_rule(*t, {"read", "/srv/www"}));
  EXPECT_TRUE(has_rule(*t, {"read", "/srv/chroot/etc"}));
  EXPECT_FALSE(has_rule(*t, {"read", "/srv/chroot/lib"})) << "a symlink";
  for (const char* listed : {"/", "/dev", "/srv", "/srv/chroot", "/srv/chroot/dev"})
    EXPECT_TRUE(has_rule(*t, {"list", listed})) << listed;
  EXPECT_TRUE(has_note(*t, "/dev, /srv/chroot/dev"));
  // A directory on the way that could not be listed: refused, never granted whole.
  facts.listings.erase("/srv/chroot");
  facts.listing_error = "listing '/srv/chroot' failed: Permission denied";
  auto refused = translate(request({{"/", Access::kRead}}), facts);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("cannot grant '/srv/chroot' without the device files beneath it: "
                                 "listing '/srv/chroot' failed"),
            std::string::npos)
      << refused.error();
}

TEST(LandlockTranslate, WritingRootOrNamingDevIsNarrowedAndSaysSo) {
  auto t = translate(request({{"/", Access::kWrite}}), host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(has_rule(*t, {"write", "/tmp"}));
  EXPECT_FALSE(has_rule(*t, {"write", "/"}));
  EXPECT_FALSE(has_rule_within(*t, "write", "/dev"));
  EXPECT_FALSE(has_rule_within(*t, "read", "/dev"));
  EXPECT_TRUE(has_rule(*t, {"list", "/"}));
  EXPECT_TRUE(has_note(*t,
                       "nothing can be created, renamed or removed directly in the "
                       "directories split ('/'"));
  // /dev itself (here without /): listing only; its devices are the allow-list's.
  auto d = translate(request({{"/dev", Access::kRead}, {"/ws", Access::kWrite}}), host_facts());
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_FALSE(has_rule_within(*d, "read", "/dev"));
  EXPECT_TRUE(has_rule(*d, {"list", "/dev"}));
  EXPECT_FALSE(has_rule(*d, {"list", "/"}));
  EXPECT_FALSE(has_rule(*d, {"read", "/usr"})) << "only a rule on / grants the entries of /";
  EXPECT_TRUE(has_note(*d, "the rule on /dev only lists it"));
}

TEST(LandlockTranslate, AnEntryBeneathDevNamedByThePolicyStays) {
  auto t = translate(request({{"/", Access::kRead}, {"/dev/pts", Access::kRead}}), host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(has_rule(*t, {"read", "/dev/pts"}));
  EXPECT_TRUE(has_note(*t, "the policy names /dev/pts itself"));
}

TEST(LandlockTranslate, UnknownMountsOrAnUnlistedRootFailClosed) {
  HostFacts unlisted = host_facts();
  unlisted.listings.clear();
  unlisted.listing_error = "listing '/' failed: Permission denied";
  auto t = translate(request({{"/", Access::kRead}}), unlisted);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("cannot grant '/' without the device files beneath it: listing '/' "
                           "failed: Permission denied"),
            std::string::npos)
      << t.error();
  // Not needed without a rule over /dev: no listing, no error.
  auto m = request({{"/ws", Access::kWrite}});
  m.policy.platform_defaults_readable = true;
  EXPECT_TRUE(translate(m, unlisted).ok());
  // Without the mount table a device filesystem elsewhere could be granted whole.
  HostFacts no_mounts = host_facts();
  no_mounts.mounts_known = false;
  auto u = translate(m, no_mounts);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().find("the mount table was not read"), std::string::npos) << u.error();
}

TEST(LandlockTranslate, NotesSayHowMetadataAndTerminalsAreHandled) {
  auto t = translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}}), host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_TRUE(has_note(*t, "chmod, chown, file times and extended attributes are emulated"));
  EXPECT_TRUE(has_note(*t, "device files are never granted whole (/dev;"));
  EXPECT_FALSE(has_note(*t, "the policy names /dev/pts")) << "/ no longer reaches /dev/pts";
  // Without a rule over /dev there is nothing to split: no such notes.
  auto minimal = request({{"/ws", Access::kWrite}});
  minimal.policy.platform_defaults_readable = true;
  auto m = translate(minimal, host_facts());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_FALSE(has_note(*m, "the policy names /dev/pts"));
  EXPECT_FALSE(has_note(*m, "never granted whole"));
  EXPECT_TRUE(has_note(*m, "emulated"));
}

// With the network enabled the host's unix sockets stay closed by the launcher's unix connect
// guard (tied to --net open): the plan asks for ABI 6 and its abstract unix scope, and says
// what the guard does. A listed socket is still refused: the guard has no allow-list.
TEST(LandlockTranslate, NetworkEnabledRunsUnderTheUnixConnectGuardOnAbi6) {
  auto t =
      translate(request({{"/", Access::kRead}, {"/ws", Access::kWrite}}, NetworkMode::kEnabled),
                host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->plan.network, landlock::Network::kOpen);
  EXPECT_EQ(t->plan.min_abi, 6);
  EXPECT_TRUE(t->plan.scope_abstract_unix);
  EXPECT_TRUE(has_note(*t, "every connect() and bind() goes through the run's supervisor"));
  auto listed = request({{"/", Access::kRead}, {"/ws", Access::kWrite}}, NetworkMode::kEnabled);
  listed.policy.network.unix_sockets = {"/run/agent.sock"};
  auto l = translate(listed, host_facts());
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().find("landlock cannot enforce unix_socket_allowlist: unix socket "
                           "'/run/agent.sock' allowed: Landlock mode offers no allow-list"),
            std::string::npos)
      << l.error();
}

TEST(LandlockTranslate, MinimalAndWriteUnderReadAreExpressible) {
  auto r = request({{"/ws", Access::kWrite}, {"/ws/out", Access::kWrite}});
  r.policy.platform_defaults_readable = true;
  auto t = translate(r, host_facts());
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_NE(
      std::find(t->plan.rules.begin(), t->plan.rules.end(), landlock::RuleLine{"read", "/usr"}),
      t->plan.rules.end());
}

TEST(LandlockTranslate, RefusalsNameTheRule) {
  struct Case {
    TransformRequest req;
    std::string needle;
  };
  std::vector<Case> cases;
  cases.push_back(
      {request({{"/", Access::kRead}, {"/ws", Access::kWrite}, {"/ws/ro", Access::kRead}}),
       "write_carveouts: '/ws/ro' (read) inside '/ws' (write)"});
  cases.push_back({request({{"/", Access::kRead}, {"/root/.ssh", Access::kDeny}}),
                   "read_carveouts: '/root/.ssh' (deny) inside '/' (read)"});
  auto prot = request({{"/", Access::kRead}, {"/ws", Access::kWrite}});
  prot.policy.protected_paths = {{"/ws/.codex", "/ws", false, false}};
  cases.push_back({prot,
                   "protected_names: protected path '/ws/.codex' (missing) under writable "
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
  auto binding = request({{"/", Access::kRead}});
  binding.policy.network.allow_local_binding = true;
  cases.push_back({binding,
                   "local_binding: network.allow_local_binding is set: the seccomp "
                   "filter refuses bind and listen"});
  for (const Case& c : cases) {
    auto t = translate(c.req, host_facts());
    ASSERT_FALSE(t.ok()) << c.needle;
    EXPECT_NE(t.error().find(c.needle), std::string::npos) << t.error();
  }
  EXPECT_FALSE(translate(request({{"/", Access::kRead}}), HostFacts{}).ok()) << "no stage 2";
}

TEST(LandlockTranslate, CapabilitiesFollowTheAbi) {
  EXPECT_TRUE(landlock::capabilities_for_abi(0).empty());
  EXPECT_FALSE(landlock::capabilities_for_abi(2).has(Capability::kWriteRestriction));
  EXPECT_TRUE(landlock::capabilities_for_abi(3).has(Capability::kWriteRestriction));
  EXPECT_FALSE(landlock::capabilities_for_abi(3).has(Capability::kNetworkBlock));
  EXPECT_TRUE(landlock::capabilities_for_abi(4).has(Capability::kNetworkBlock));
  EXPECT_FALSE(landlock::capabilities_for_abi(3).has(Capability::kProxyNetwork));
  EXPECT_TRUE(landlock::capabilities_for_abi(4).has(Capability::kProxyNetwork));
  for (Capability never :
       {Capability::kWriteCarveouts, Capability::kReadCarveouts, Capability::kProtectedNames,
        Capability::kDenyGlobs, Capability::kUnixSocketAllowlist, Capability::kLocalBinding,
        Capability::kUnixSocketBlock})
    EXPECT_FALSE(landlock::capabilities_for_abi(7).has(never)) << to_string(never);
}

}  // namespace
