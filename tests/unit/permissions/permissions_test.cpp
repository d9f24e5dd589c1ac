// Worked examples of widen/approve: the semantics the property tests generalise, spelled out
// on readable JSON policies.
#include "sbx/core/permissions.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

Policy parse(const std::string& json) {
  Result<Policy> policy = parse_policy(json);
  EXPECT_TRUE(policy.ok()) << policy.error() << "\n" << json;
  return policy.ok() ? *policy : Policy{};
}

// A restricted policy from "path:access" items, e.g. fs({":root:read", ":cwd:write"}).
Policy fs(std::initializer_list<std::pair<const char*, const char*>> entries,
          const std::string& network = "restricted") {
  std::string json = R"({"version":1,"filesystem":{"kind":"restricted","entries":[)";
  bool first = true;
  for (auto [path, access] : entries) {
    json += std::string(first ? "" : ",") + R"({"path":")" + path + R"(","access":")" + access +
            R"("})";
    first = false;
  }
  json += R"(]},"network":{"mode":")" + network + R"("}})";
  return parse(json);
}

std::vector<PolicyEntry> path_entries(const Policy& policy) { return policy.filesystem.entries; }

TEST(LexicallyWithin, SpecialAbsoluteAndHomePaths) {
  EXPECT_TRUE(lexically_within(":cwd/src", ":cwd"));
  EXPECT_TRUE(lexically_within(":cwd", ":root"));
  EXPECT_TRUE(lexically_within("~/.ssh/id_rsa", "~/.ssh"));
  EXPECT_TRUE(lexically_within("/srv/data", "/"));
  EXPECT_TRUE(lexically_within("/srv", "/srv"));
  EXPECT_FALSE(lexically_within("/srvx", "/srv"));
  EXPECT_FALSE(lexically_within(":cwdx", ":cwd"));
  EXPECT_FALSE(lexically_within(":cwd", ":cwd/src"));
  // Different spellings are unrelated: the algebra does not resolve (fail-closed for approve).
  EXPECT_FALSE(lexically_within("/home/me/proj", ":cwd"));
  EXPECT_FALSE(lexically_within(":tmpdir", "/tmp"));
}

TEST(Widen, UnitesEntriesInOrderWithoutDuplicates) {
  Result<Policy> wide = widen(fs({{":root", "read"}, {":cwd", "write"}}),
                              fs({{":cwd", "write"}, {"/srv/cache", "write"}}));
  ASSERT_TRUE(wide.ok()) << wide.error();
  const std::vector<PolicyEntry> expected = {{":root", "", Access::kRead},
                                             {":cwd", "", Access::kWrite},
                                             {"/srv/cache", "", Access::kWrite}};
  EXPECT_EQ(path_entries(*wide), expected);
}

TEST(Widen, AMoreSpecificReadEntryDoesNotNarrowTheOtherSidesWrite) {
  // Raw entry union would make :cwd/docs read-only (most specific wins); widen keeps it writable.
  Result<Policy> wide =
      widen(fs({{":root", "read"}, {":cwd", "write"}}), fs({{":cwd/docs", "read"}}));
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(granted_access(*wide, ":cwd/docs/a.md"), Access::kWrite);
}

TEST(Widen, NeverLiftsADeny) {
  Result<Policy> wide =
      widen(fs({{":root", "read"}, {"~/.ssh", "deny"}}), fs({{"~/.ssh", "write"}}));
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(granted_access(*wide, "~/.ssh/id_rsa"), Access::kDeny);
  EXPECT_TRUE(has_deny_entries(*wide));
}

TEST(Widen, FullAccessWithDenyEntriesBecomesRootWritePlusTheDenies) {
  Result<Policy> wide = widen(fs({{":root", "read"}, {"~/.ssh", "deny"}}),
                              parse(R"({"version":1,"preset":"danger-full-access"})"));
  ASSERT_TRUE(wide.ok()) << wide.error();
  EXPECT_EQ(wide->filesystem.kind, FilesystemKind::kRestricted);
  EXPECT_EQ(granted_access(*wide, "/usr/lib"), Access::kWrite);
  EXPECT_EQ(granted_access(*wide, "~/.ssh"), Access::kDeny);
}

TEST(Widen, FullAccessWithoutDeniesStaysUnrestricted) {
  Result<Policy> wide =
      widen(fs({{":root", "read"}}), parse(R"({"version":1,"preset":"danger-full-access"})"));
  ASSERT_TRUE(wide.ok()) << wide.error();
  EXPECT_EQ(wide->filesystem.kind, FilesystemKind::kUnrestricted);
}

TEST(Widen, NetworkEnabledWinsAndProxyListsUnite) {
  Result<Policy> a = widen(fs({}, "enabled"), fs({}, "proxy"));
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->network.mode, NetworkMode::kEnabled);
  Policy p1 = fs({});
  p1.network = {NetworkMode::kProxy, {3128}, {"example.com"}, {}, {}, false};
  Policy p2 = fs({});
  p2.network = {NetworkMode::kProxy, {8080}, {"pypi.org"}, {"evil.example"}, {}, false};
  Result<Policy> b = widen(p1, p2);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->network.proxy_ports, (std::vector<std::uint16_t>{3128, 8080}));
  EXPECT_EQ(b->network.allowed_domains, (std::vector<std::string>{"example.com", "pypi.org"}));
  EXPECT_EQ(b->network.denied_domains, (std::vector<std::string>{"evil.example"}));
}

TEST(Widen, InvalidInputIsAPreciseError) {
  Policy bad = fs({{":root", "read"}});
  bad.filesystem.entries.push_back(PolicyEntry{"relative/path", "", Access::kWrite});
  Result<Policy> wide = widen(bad, fs({}));
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().find("the base policy is invalid: /filesystem/entries/1"),
            std::string::npos)
      << wide.error();
}

TEST(Approve, KeepsOnlyWhatLiesInsideTheRequest) {
  Result<Approval> approval =
      approve(fs({{"/etc", "read"}, {":cwd", "write"}}),
              fs({{":cwd/build", "write"}, {"/srv/cache", "write"}, {"/etc", "write"}}));
  ASSERT_TRUE(approval.ok()) << approval.error();
  ASSERT_TRUE(approval->policy);
  EXPECT_EQ(granted_access(*approval->policy, ":cwd/build/x"), Access::kWrite);
  EXPECT_EQ(granted_access(*approval->policy, ":cwd/src"), Access::kDeny);    // not granted
  EXPECT_EQ(granted_access(*approval->policy, "/srv/cache"), Access::kDeny);  // not requested
  EXPECT_EQ(granted_access(*approval->policy, "/etc"), Access::kRead);  // narrowed to the request
  EXPECT_EQ(approval->dropped,
            (std::vector<std::string>{
                "\"/srv/cache\" (write): dropped, not inside the request",
                "\"/etc\" (write): narrowed to read, the request asked only to read it"}));
}

TEST(Approve, DropsGrantsTheRequestDeniesAndKeepsTheDeny) {
  Result<Approval> approval = approve(fs({{":root", "read"}, {"~/.ssh", "deny"}}),
                                      fs({{"~/.ssh/config", "read"}, {"/opt", "read"}}));
  ASSERT_TRUE(approval.ok());
  ASSERT_TRUE(approval->policy);
  EXPECT_EQ(granted_access(*approval->policy, "~/.ssh/config"), Access::kDeny);
  EXPECT_EQ(granted_access(*approval->policy, "/opt"), Access::kRead);
  EXPECT_TRUE(has_deny_entries(*approval->policy));
  EXPECT_EQ(approval->dropped,
            std::vector<std::string>{"\"~/.ssh/config\" (read): dropped, the request denies it"});
}

TEST(Approve, DifferentSpellingsAreNotMatched) {
  Result<Approval> approval = approve(fs({{":cwd", "write"}}), fs({{"/home/me/proj", "write"}}));
  ASSERT_TRUE(approval.ok());
  EXPECT_FALSE(approval->policy) << "nothing recorded: the grant is not inside the request";
  EXPECT_EQ(approval->dropped,
            std::vector<std::string>{"\"/home/me/proj\" (write): dropped, not inside the request"});
}

TEST(Approve, NetworkOnlyIfBothEnableIt) {
  Result<Approval> both = approve(fs({}, "enabled"), fs({}, "enabled"));
  ASSERT_TRUE(both.ok() && both->policy);
  EXPECT_EQ(both->policy->network.mode, NetworkMode::kEnabled);
  Result<Approval> one = approve(fs({}, "enabled"), fs({}, "restricted"));
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->policy) << "no filesystem and no network grant: nothing recorded";
}

TEST(Approve, ProxyListsIntersectDeniedDomainsUnite) {
  Policy r = fs({});
  r.network = {NetworkMode::kProxy, {3128, 8080},    {"example.com", "pypi.org"},
               {"a.example"},       {"/run/a.sock"}, true};
  Policy g = fs({});
  g.network = {NetworkMode::kProxy,
               {8080},
               {"pypi.org", "other.org"},
               {"b.example"},
               {"/run/a.sock", "/run/b.sock"},
               false};
  Result<Approval> approval = approve(r, g);
  ASSERT_TRUE(approval.ok() && approval->policy) << approval.error();
  const NetworkPolicy& net = approval->policy->network;
  EXPECT_EQ(net.mode, NetworkMode::kProxy);
  EXPECT_EQ(net.proxy_ports, std::vector<std::uint16_t>{8080});
  EXPECT_EQ(net.allowed_domains, std::vector<std::string>{"pypi.org"});
  EXPECT_EQ(net.denied_domains, (std::vector<std::string>{"a.example", "b.example"}));
  EXPECT_EQ(net.unix_sockets, std::vector<std::string>{"/run/a.sock"});
  EXPECT_FALSE(net.allow_local_binding);
}

TEST(Approve, EmptyResultIsNothingRecordedNotARefusal) {
  const Policy session = fs({{":root", "read"}, {":cwd", "write"}, {"/srv/cache", "write"}});
  Result<Approval> approval = approve(fs({{"/opt/tool", "write"}}), fs({{"/var/lib", "write"}}));
  ASSERT_TRUE(approval.ok()) << approval.error();
  EXPECT_FALSE(approval->policy);
  Result<Policy> after = record_approval(session, *approval);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, session);
}

TEST(Approve, KindsIntersect) {
  const Policy full = parse(R"({"version":1,"preset":"danger-full-access"})");
  const Policy external = parse(R"({"version":1,"preset":"external-sandbox"})");
  const Policy ws = fs({{":root", "read"}, {":cwd", "write"}});
  Result<Approval> a = approve(ws, full);
  ASSERT_TRUE(a.ok() && a->policy);
  EXPECT_TRUE(equivalent(*a->policy, ws)) << policy_to_json(*a->policy);
  Result<Approval> b = approve(full, external);
  ASSERT_TRUE(b.ok() && b->policy);
  EXPECT_EQ(b->policy->filesystem.kind, FilesystemKind::kExternal);
}

TEST(Approve, ProtectedNamesUnite) {
  Policy r = fs({{":cwd", "write"}});
  r.filesystem.protected_names = {".git"};
  Policy g = fs({{":cwd", "write"}});
  g.filesystem.protected_names = {".hg"};
  Result<Approval> approval = approve(r, g);
  ASSERT_TRUE(approval.ok() && approval->policy);
  EXPECT_EQ(approval->policy->filesystem.protected_names,
            (std::vector<std::string>{".git", ".hg"}));
}

}  // namespace
}  // namespace sbx
