// Settings scopes (sbx/core/settings.hpp): strict parsing, the merge order (table-driven, each
// scope), each administrator lock refusing what asks for more with the lock named, the managed
// file's trust checks against hostile files, untrusted projects skipped with a note, and
// `config trust`.
#include "sbx/core/settings.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sbx/core/permissions.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx_test/files.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx::settings {
namespace {

ScopeSettings parsed(const std::string& text, Scope scope) {
  Result<ScopeSettings> out = parse_settings(text, scope);
  EXPECT_TRUE(out.ok()) << text << ": " << (out.ok() ? "" : out.error());
  return out.ok() ? *out : ScopeSettings{};
}

std::string error_of(const std::string& text, Scope scope) {
  Result<ScopeSettings> out = parse_settings(text, scope);
  return out.ok() ? std::string("(accepted)") : out.error();
}

// ---- parsing ----

TEST(SettingsParse, ReadsEveryKey) {
  ScopeSettings user = parsed(R"({"policy":{"version":1,"preset":"read-only"},"sandbox":"require",
      "allow_unsandboxed":false,"excluded_commands":["docker *"],
      "trusted_projects":["/src/p"]})",
                              Scope::kUser);
  ASSERT_TRUE(user.policy);
  EXPECT_EQ(user.preset, "read-only");
  EXPECT_EQ(user.sandbox, SandboxPreference::kRequire);
  EXPECT_EQ(user.allow_unsandboxed, false);
  EXPECT_EQ(user.excluded_commands, std::vector<std::string>{"docker *"});
  EXPECT_EQ(user.trusted_projects, std::vector<std::string>{"/src/p"});
  ScopeSettings managed = parsed(R"({"locks":{"presets":["read-only"],
      "filesystem_kinds":["restricted"],"network_modes":["restricted","proxy"],
      "writable_roots":[":cwd"],"allowed_domains":["*.example.com"],"deny":["~/.ssh"],
      "allow_unsandboxed":false,"require_backend_available":true}})",
                                 Scope::kManaged);
  ASSERT_TRUE(managed.locks);
  EXPECT_EQ(managed.locks->network_modes,
            (std::vector<NetworkMode>{NetworkMode::kRestricted, NetworkMode::kProxy}));
  EXPECT_EQ(managed.locks->allow_unsandboxed, false);
  EXPECT_EQ(managed.locks->require_backend_available, true);
}

TEST(SettingsParse, ErrorsNameThePointer) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"sandbox":"never"})", "/sandbox: expected one of auto|require|forbid"},
      {R"({"colour":1})", "/colour: unknown key"},
      {R"({"excluded_commands":["a",3]})", "/excluded_commands/1: expected a string"},
      {R"({"policy":{"version":1,"preset":"nope"}})", "/policy/preset: unknown preset"},
      {R"({"policy":{"version":1,"filesystem":{"kind":"restricted","entries":[{"path":"rel","access":"read"}]}}})",
       "/policy/filesystem/entries/0/path"},
      {R"({"sandbox":"auto","sandbox":"require"})", "/sandbox: duplicate key"},
      {R"({"excluded_commands":["ls\u0000; rm -rf ~"]})",
       "/excluded_commands/0: a string contains a NUL byte"},
      {R"({"trusted_projects":["/srv/p\u0000/.."]})",
       "/trusted_projects/0: a string contains a NUL byte"},
      {R"([1])", "/: expected an object"},
      {R"({"allow_unsandboxed":"yes"})", "/allow_unsandboxed: expected true or false"},
      {R"({"trusted_projects":["relative"]})", "/trusted_projects/0: \"relative\" is not"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string error = error_of(text, Scope::kUser);
    EXPECT_EQ(error.rfind(expected, 0), 0u) << text << " gave: " << error;
  }
  EXPECT_EQ(error_of(R"({"locks":{"network_modes":["open"]}})", Scope::kManaged)
                .rfind("/locks/network_modes/0: expected one of restricted|", 0),
            0u);
  EXPECT_EQ(
      error_of(R"({"locks":{"colour":1}})", Scope::kManaged).rfind("/locks/colour: unknown", 0),
      0u);
}

TEST(SettingsParse, KeysAScopeMayNotHoldAreRefused) {
  EXPECT_NE(error_of(R"({"locks":{}})", Scope::kUser).find("only the managed settings"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"locks":{}})", Scope::kProject).find("only the managed settings"),
            std::string::npos);
  // A project cannot declare itself (or another project) trusted.
  EXPECT_NE(
      error_of(R"({"trusted_projects":["/x"]})", Scope::kProject).find("only the user settings"),
      std::string::npos);
  EXPECT_NE(
      error_of(R"({"trusted_projects":["/x"]})", Scope::kManaged).find("only the user settings"),
      std::string::npos);
}

// ---- the merge order ----

struct MergeCase {
  std::string name;
  std::vector<std::pair<Scope, std::string>> files;
  SandboxPreference sandbox;
  Scope sandbox_scope;
  bool allow_unsandboxed;
  Scope allow_scope;
  Scope policy_scope;  // kBuiltin: no scope sets a policy
  Access cwd_access;   // what the merged policy gives ":cwd"
  NetworkMode network;
  std::vector<std::string> excluded;  // patterns in order
};

class MergeOrder : public ::testing::TestWithParam<MergeCase> {};

TEST_P(MergeOrder, EachScopeInItsPlace) {
  const MergeCase& c = GetParam();
  std::vector<std::pair<Scope, ScopeSettings>> scopes;
  for (const auto& [scope, text] : c.files) scopes.emplace_back(scope, parsed(text, scope));
  Result<Settings> merged = merge_settings(scopes);
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(merged->sandbox.value, c.sandbox);
  EXPECT_EQ(merged->sandbox.scope, c.sandbox_scope);
  EXPECT_EQ(merged->allow_unsandboxed.value, c.allow_unsandboxed);
  EXPECT_EQ(merged->allow_unsandboxed.scope, c.allow_scope);
  const Sourced<Policy> base = base_policy(*merged, Overrides{});
  EXPECT_EQ(base.scope, c.policy_scope);
  EXPECT_EQ(granted_access(base.value, ":cwd"), c.cwd_access);
  EXPECT_EQ(base.value.network.mode, c.network);
  std::vector<std::string> excluded;
  for (const auto& pattern : merged->excluded_commands) excluded.push_back(pattern.value);
  EXPECT_EQ(excluded, c.excluded);
}

const std::string kReadOnly = R"("policy":{"version":1,"preset":"read-only"})";
const std::string kWorkspace = R"("policy":{"version":1,"preset":"workspace-write"})";
const std::string kNetwork = R"("policy":{"version":1,"preset":"read-only","network_access":true})";

INSTANTIATE_TEST_SUITE_P(
    Table, MergeOrder,
    ::testing::Values(
        MergeCase{"nothing",
                  {},
                  SandboxPreference::kAuto,
                  Scope::kBuiltin,
                  true,
                  Scope::kBuiltin,
                  Scope::kBuiltin,
                  Access::kWrite,
                  NetworkMode::kRestricted,
                  {}},
        MergeCase{"managed_only",
                  {{Scope::kManaged, "{" + kReadOnly + R"(,"sandbox":"require"})"}},
                  SandboxPreference::kRequire,
                  Scope::kManaged,
                  true,
                  Scope::kBuiltin,
                  Scope::kManaged,
                  Access::kRead,
                  NetworkMode::kRestricted,
                  {}},
        MergeCase{"user_over_managed",
                  {{Scope::kManaged, R"({"sandbox":"require","allow_unsandboxed":true})"},
                   {Scope::kUser, R"({"sandbox":"auto","allow_unsandboxed":false})"}},
                  SandboxPreference::kAuto,
                  Scope::kUser,
                  false,
                  Scope::kUser,
                  Scope::kBuiltin,
                  Access::kWrite,
                  NetworkMode::kRestricted,
                  {}},
        MergeCase{"project_over_user",
                  {{Scope::kProject, R"({"sandbox":"require"})"},
                   {Scope::kUser, R"({"sandbox":"forbid"})"}},
                  SandboxPreference::kRequire,
                  Scope::kProject,
                  true,
                  Scope::kBuiltin,
                  Scope::kBuiltin,
                  Access::kWrite,
                  NetworkMode::kRestricted,
                  {}},
        // Policies are widened: the project adds write to the user's read-only, and the
        // managed scope's network survives.
        MergeCase{"policies_widen",
                  {{Scope::kManaged, "{" + kNetwork + "}"},
                   {Scope::kUser, "{" + kReadOnly + "}"},
                   {Scope::kProject, "{" + kWorkspace + "}"}},
                  SandboxPreference::kAuto,
                  Scope::kBuiltin,
                  true,
                  Scope::kBuiltin,
                  Scope::kProject,
                  Access::kWrite,
                  NetworkMode::kEnabled,
                  {}},
        MergeCase{"user_policy_alone",
                  {{Scope::kUser, "{" + kReadOnly + "}"}},
                  SandboxPreference::kAuto,
                  Scope::kBuiltin,
                  true,
                  Scope::kBuiltin,
                  Scope::kUser,
                  Access::kRead,
                  NetworkMode::kRestricted,
                  {}},
        MergeCase{"excluded_union_in_scope_order",
                  {{Scope::kProject, R"({"excluded_commands":["make *","git status"]})"},
                   {Scope::kManaged, R"({"excluded_commands":["docker *"]})"},
                   {Scope::kUser, R"({"excluded_commands":["git status"]})"}},
                  SandboxPreference::kAuto,
                  Scope::kBuiltin,
                  true,
                  Scope::kBuiltin,
                  Scope::kBuiltin,
                  Access::kWrite,
                  NetworkMode::kRestricted,
                  {"docker *", "git status", "make *"}},
        MergeCase{"lock_closes_the_hatch",
                  {{Scope::kManaged, R"({"locks":{"allow_unsandboxed":false}})"}},
                  SandboxPreference::kAuto,
                  Scope::kBuiltin,
                  false,
                  Scope::kManaged,
                  Scope::kBuiltin,
                  Access::kWrite,
                  NetworkMode::kRestricted,
                  {}}),
    [](const ::testing::TestParamInfo<MergeCase>& param_info) { return param_info.param.name; });

TEST(MergeOrder, DenyOfALowerScopeSurvivesAWiderHigherOne) {
  std::vector<std::pair<Scope, ScopeSettings>> scopes;
  scopes.emplace_back(Scope::kUser, parsed(R"({"policy":{"version":1,"filesystem":{"kind":
      "restricted","entries":[{"path":":root","access":"read"},{"path":":cwd","access":"write"},
      {"path":":cwd/secrets","access":"deny"}]}}})",
                                           Scope::kUser));
  scopes.emplace_back(Scope::kProject, parsed("{" + kWorkspace + "}", Scope::kProject));
  Result<Settings> merged = merge_settings(scopes);
  ASSERT_TRUE(merged.ok()) << merged.error();
  EXPECT_EQ(granted_access(merged->policy->value, ":cwd/secrets"), Access::kDeny);
  EXPECT_TRUE(has_deny_entries(merged->policy->value));
}

TEST(MergeOrder, CommandLineWinsOverEveryScope) {
  std::vector<std::pair<Scope, ScopeSettings>> scopes;
  scopes.emplace_back(Scope::kUser,
                      parsed("{" + kReadOnly + R"(,"sandbox":"require"})", Scope::kUser));
  Result<Settings> merged = merge_settings(scopes);
  ASSERT_TRUE(merged.ok());
  Overrides overrides;
  overrides.policy = preset_policy("workspace-write").value();
  overrides.preset = "workspace-write";
  overrides.sandbox = SandboxPreference::kAuto;
  const Sourced<Policy> base = base_policy(*merged, overrides);
  EXPECT_EQ(base.scope, Scope::kCommandLine);
  Result<Decided> decided = decide(*merged, overrides, base.value);
  ASSERT_TRUE(decided.ok()) << decided.error();
  EXPECT_EQ(decided->policy_scope, Scope::kCommandLine);
  EXPECT_EQ(decided->sandbox.scope, Scope::kCommandLine);
  EXPECT_EQ(decided->sandbox.value, SandboxPreference::kAuto);
  EXPECT_EQ(granted_access(decided->policy, ":cwd"), Access::kWrite);
}

// ---- the locks ----

Settings with_managed(const std::string& managed,
                      const std::vector<std::pair<Scope, std::string>>& more = {}) {
  std::vector<std::pair<Scope, ScopeSettings>> scopes;
  scopes.emplace_back(Scope::kManaged, parsed(managed, Scope::kManaged));
  for (const auto& [scope, text] : more) scopes.emplace_back(scope, parsed(text, scope));
  Result<Settings> merged = merge_settings(scopes);
  EXPECT_TRUE(merged.ok()) << (merged.ok() ? "" : merged.error());
  return merged.ok() ? *merged : Settings{};
}

std::string merge_error(const std::string& managed, Scope scope, const std::string& text) {
  std::vector<std::pair<Scope, ScopeSettings>> scopes;
  scopes.emplace_back(Scope::kManaged, parsed(managed, Scope::kManaged));
  scopes.emplace_back(scope, parsed(text, scope));
  Result<Settings> merged = merge_settings(scopes);
  return merged.ok() ? std::string("(accepted)") : merged.error();
}

Overrides preset(const std::string& name) {
  Overrides out;
  out.policy = preset_policy(name).value();
  out.preset = name;
  return out;
}

std::string decide_error(const Settings& settings, const Overrides& overrides) {
  Result<Decided> decided = decide(settings, overrides, base_policy(settings, overrides).value);
  return decided.ok() ? std::string("(accepted)") : decided.error();
}

struct LockCase {
  std::string name;
  std::string managed;  // the managed settings
  std::string lower;    // a user settings file that asks for more
  Overrides flags;      // command-line flags that ask for more
  std::string lock;     // the lock the refusal must name
};

class Locked : public ::testing::TestWithParam<LockCase> {};

TEST_P(Locked, LowerScopeAndFlagsAreRefusedNamingTheLock) {
  const LockCase& c = GetParam();
  const std::string named = "lock /locks/" + c.lock;
  if (!c.lower.empty()) {
    const std::string error = merge_error(c.managed, Scope::kUser, c.lower);
    EXPECT_NE(error.find(named), std::string::npos) << error;
    EXPECT_NE(error.find("user settings"), std::string::npos) << error;
  }
  const Settings settings = with_managed(c.managed);
  const std::string error = decide_error(settings, c.flags);
  EXPECT_NE(error.find(named), std::string::npos) << error;
  // Without the flags' extra wish, the same settings are accepted (the lock refuses the wish,
  // not everything).
  Overrides modest;
  modest.policy = preset_policy("read-only").value();
  modest.preset = "read-only";
  EXPECT_EQ(decide_error(settings, modest), "(accepted)");
}

Overrides forbid() {
  Overrides out = preset("read-only");
  out.sandbox = SandboxPreference::kForbid;
  return out;
}

Overrides override_flag() {
  Overrides out = preset("read-only");
  out.allow_unsandboxed = true;
  return out;
}

Overrides network_enabled() {
  Overrides out = preset("read-only");
  out.policy->network.mode = NetworkMode::kEnabled;
  out.policy_changed = true;
  return out;
}

Overrides proxy_to(const std::string& domain) {
  Overrides out = preset("read-only");
  out.policy->network.mode = NetworkMode::kProxy;
  out.policy->network.allowed_domains = {domain};
  out.policy_changed = true;
  return out;
}

Overrides writable(const std::string& path) {
  Overrides out = preset("read-only");
  out.policy->filesystem.entries.push_back(PolicyEntry{path, "", Access::kWrite});
  out.policy_changed = true;
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    Table, Locked,
    ::testing::Values(
        LockCase{"presets", R"({"locks":{"presets":["read-only"]}})",
                 R"({"policy":{"version":1,"preset":"danger-full-access"}})",
                 preset("workspace-write"), "presets"},
        LockCase{"filesystem_kinds", R"({"locks":{"filesystem_kinds":["restricted"]}})",
                 R"({"policy":{"version":1,"preset":"danger-full-access"}})",
                 preset("external-sandbox"), "filesystem_kinds"},
        LockCase{"network_modes", R"({"locks":{"network_modes":["restricted"]}})",
                 R"({"policy":{"version":1,"preset":"read-only","network_access":true}})",
                 network_enabled(), "network_modes"},
        LockCase{"writable_roots", R"({"locks":{"writable_roots":[":cwd"]}})",
                 R"({"policy":{"version":1,"preset":"workspace-write"}})", writable("~/.config"),
                 "writable_roots"},
        LockCase{"writable_roots_kind", R"({"locks":{"writable_roots":[":cwd"]}})",
                 R"({"policy":{"version":1,"preset":"danger-full-access"}})",
                 preset("danger-full-access"), "writable_roots"},
        LockCase{"allowed_domains", R"({"locks":{"allowed_domains":["*.example.com"]}})",
                 R"({"policy":{"version":1,"filesystem":{"kind":"restricted","entries":[]},
                     "network":{"mode":"proxy","allowed_domains":["evil.test"]}}})",
                 proxy_to("example.org"), "allowed_domains"},
        LockCase{"allowed_domains_enabled", R"({"locks":{"allowed_domains":["example.com"]}})",
                 R"({"policy":{"version":1,"preset":"read-only","network_access":true}})",
                 network_enabled(), "allowed_domains"},
        LockCase{"forbid", R"({"locks":{"allow_unsandboxed":false}})", R"({"sandbox":"forbid"})",
                 forbid(), "allow_unsandboxed"},
        LockCase{"override_flag", R"({"locks":{"allow_unsandboxed":false}})",
                 R"({"allow_unsandboxed":true})", override_flag(), "allow_unsandboxed"},
        LockCase{"excluded_commands", R"({"locks":{"allow_unsandboxed":false}})",
                 R"({"excluded_commands":["docker *"]})", forbid(), "allow_unsandboxed"},
        LockCase{"require_backend", R"({"locks":{"require_backend_available":true}})", "",
                 override_flag(), "require_backend_available"}),
    [](const ::testing::TestParamInfo<LockCase>& param_info) { return param_info.param.name; });

TEST(Locks, WithinTheCeilingsIsAccepted) {
  const Settings settings = with_managed(
      R"({"locks":{"writable_roots":[":cwd",":tmpdir",":slash_tmp"],
          "allowed_domains":["*.example.com","api.test:443"],"network_modes":["restricted","proxy"]}})");
  EXPECT_EQ(decide_error(settings, preset("workspace-write")), "(accepted)");
  EXPECT_EQ(decide_error(settings, writable(":cwd/build")), "(accepted)");
  EXPECT_EQ(decide_error(settings, proxy_to("a.b.example.com")), "(accepted)");
  EXPECT_EQ(decide_error(settings, proxy_to("*.sub.example.com")), "(accepted)");
  EXPECT_EQ(decide_error(settings, proxy_to("api.test:443")), "(accepted)");
  EXPECT_NE(decide_error(settings, proxy_to("api.test:80")), "(accepted)");
  EXPECT_NE(decide_error(settings, proxy_to("example.com.evil.test")), "(accepted)");
  EXPECT_NE(decide_error(settings, proxy_to("notexample.com")), "(accepted)");
}

TEST(Locks, TheBuiltInDefaultIsCheckedToo) {
  // Nothing asks for workspace-write, but it is what would run: the lock still holds.
  const Settings settings = with_managed(R"({"locks":{"presets":["read-only"]}})");
  const std::string error = decide_error(settings, Overrides{});
  EXPECT_NE(error.find("lock /locks/presets"), std::string::npos) << error;
  EXPECT_NE(error.find("workspace-write"), std::string::npos) << error;
}

TEST(Locks, MandatoryDenyEntriesAreAdded) {
  const Settings settings = with_managed(R"({"locks":{"deny":["~/.ssh","**/*.pem"]}})");
  for (const std::string& name :
       {std::string("workspace-write"), std::string("danger-full-access")}) {
    Overrides overrides = preset(name);
    Result<Decided> decided = decide(settings, overrides, *overrides.policy);
    ASSERT_TRUE(decided.ok()) << decided.error();
    EXPECT_EQ(granted_access(decided->policy, "~/.ssh"), Access::kDeny) << name;
    EXPECT_EQ(granted_access(decided->policy, ":cwd"), Access::kWrite) << name;
    bool glob = false;
    for (const PolicyEntry& entry : decided->policy.filesystem.entries)
      glob = glob || entry.glob == "**/*.pem";
    EXPECT_TRUE(glob) << name;
  }
}

TEST(Locks, EscapeHatchStateIsReported) {
  Result<Decided> open = decide(Settings{}, Overrides{}, preset_policy("read-only").value());
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->escape_hatch_locked);
  EXPECT_TRUE(open->unsandboxed_permitted);
  const Settings settings = with_managed(R"({"locks":{"allow_unsandboxed":false}})");
  Result<Decided> locked = decide(settings, Overrides{}, preset_policy("read-only").value());
  ASSERT_TRUE(locked.ok());
  EXPECT_TRUE(locked->escape_hatch_locked);
  EXPECT_FALSE(locked->unsandboxed_permitted);
  const SettingsSummary summary = summarize(settings, *locked);
  EXPECT_TRUE(summary.escape_hatch_locked);
  EXPECT_EQ(summary.sandbox_scope, "built-in");
}

// ---- backends: order and plugin directories (issue #39 point 5) ----

TEST(Backends, ManagedAndUserChooseTheOrderAndPluginDirectories) {
  const ScopeSettings user =
      parsed(R"({"backends":{"order":["landlock","bwrap"],"plugin_dirs":["/opt/acme/sbx"]}})",
             Scope::kUser);
  EXPECT_EQ(user.backend_order, (std::vector<std::string>{"landlock", "bwrap"}));
  EXPECT_EQ(user.plugin_dirs, std::vector<std::string>{"/opt/acme/sbx"});
  // A repository never chooses the code sbx loads; a C API caller has its own arguments.
  for (Scope scope : {Scope::kProject, Scope::kCommandLine}) {
    EXPECT_NE(error_of(R"({"backends":{"order":["bwrap"]}})", scope)
                  .find("/backends: only the managed or the user settings may choose backends"),
              std::string::npos);
  }
  EXPECT_NE(error_of(R"({"backends":{"plugin_dirs":["rel/dir"]}})", Scope::kUser)
                .find("/backends/plugin_dirs/0: \"rel/dir\" is not an absolute path"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"backends":{"colour":1}})", Scope::kUser)
                .find("/backends/colour: unknown key; expected one of order|plugin_dirs"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"locks":{"backend_order":"yes"}})", Scope::kManaged)
                .find("/locks/backend_order: expected true or false"),
            std::string::npos);
}

TEST(Backends, TheLastScopeOrderWinsAndDirectoriesAddUp) {
  const Settings settings =
      with_managed(R"({"backends":{"order":["bwrap"],"plugin_dirs":["/opt/a"]}})",
                   {{Scope::kUser, R"({"backends":{"order":["landlock"],
                                      "plugin_dirs":["/opt/b","/opt/a"]}})"}});
  Result<BackendSelection> chosen = decide_backends(settings, BackendRequest{});
  ASSERT_TRUE(chosen.ok()) << chosen.error();
  EXPECT_EQ(chosen->order.value, std::vector<std::string>{"landlock"});
  EXPECT_EQ(chosen->order.scope, Scope::kUser);
  ASSERT_EQ(chosen->plugin_dirs.size(), 2u);
  EXPECT_EQ(chosen->plugin_dirs[0].value, "/opt/a");
  EXPECT_EQ(chosen->plugin_dirs[0].scope, Scope::kManaged);
  EXPECT_EQ(chosen->plugin_dirs[1].value, "/opt/b");
  BackendRequest flags;
  flags.order = {"bwrap", "landlock"};
  flags.plugin_dirs = {"/opt/c"};
  chosen = decide_backends(settings, flags);
  ASSERT_TRUE(chosen.ok()) << chosen.error();
  EXPECT_EQ(chosen->order.value, flags.order);
  EXPECT_EQ(chosen->order.scope, Scope::kCommandLine);
  EXPECT_EQ(chosen->plugin_dirs.back().value, "/opt/c");
  // What explain reports.
  Result<Decided> decided = decide(settings, Overrides{}, preset_policy("read-only").value());
  ASSERT_TRUE(decided.ok());
  const SettingsSummary summary = summarize(settings, *decided);
  EXPECT_EQ(summary.backend_order, std::vector<std::string>{"landlock"});
  EXPECT_EQ(summary.backend_order_scope, "user");
  EXPECT_EQ(summary.plugin_dirs, (std::vector<std::string>{"/opt/a", "/opt/b"}));
}

TEST(Backends, ALockedOrderRefusesTheUserScopeAndTheCommandLine) {
  const std::string managed =
      R"({"backends":{"order":["bwrap","landlock"]},"locks":{"backend_order":true}})";
  Result<Settings> merged = merge_settings(
      {{Scope::kManaged, parsed(managed, Scope::kManaged)},
       {Scope::kUser, parsed(R"({"backends":{"order":["landlock"]}})", Scope::kUser)}});
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.error(),
            "refused by the administrator's lock /locks/backend_order (managed settings): the "
            "user settings set backends.order (landlock); only the managed settings choose the "
            "order");
  EXPECT_EQ(merged.kind(), ErrorKind::refused);
  const Settings settings = with_managed(managed);
  BackendRequest flags;
  flags.order = {"landlock"};
  Result<BackendSelection> chosen = decide_backends(settings, flags);
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.error(),
            "refused by the administrator's lock /locks/backend_order (managed settings): "
            "--backends asks for the order landlock; the order is bwrap, landlock (the managed "
            "settings)");
  // Through decide(), as every run goes.
  Overrides overrides;
  overrides.backends = flags;
  Result<Decided> decided = decide(settings, overrides, preset_policy("read-only").value());
  ASSERT_FALSE(decided.ok());
  EXPECT_NE(decided.error().find("/locks/backend_order"), std::string::npos);
  // Asking for the order that holds asks for nothing more.
  flags.order = {"bwrap", "landlock"};
  EXPECT_TRUE(decide_backends(settings, flags).ok());
  // Locked with no managed order: the default order is final.
  flags.order = {"landlock"};
  chosen = decide_backends(with_managed(R"({"locks":{"backend_order":true}})"), flags);
  ASSERT_FALSE(chosen.ok());
  EXPECT_NE(chosen.error().find("the order is the default one (the built-in default)"),
            std::string::npos)
      << chosen.error();
}

TEST(Backends, LockedPluginDirectoriesRefuseTheUserScopeAndTheCommandLine) {
  const std::string managed =
      R"({"backends":{"plugin_dirs":["/opt/site"]},"locks":{"plugin_dirs":true}})";
  Result<Settings> merged = merge_settings(
      {{Scope::kManaged, parsed(managed, Scope::kManaged)},
       {Scope::kUser, parsed(R"({"backends":{"plugin_dirs":["/opt/mine"]}})", Scope::kUser)}});
  ASSERT_FALSE(merged.ok());
  EXPECT_EQ(merged.error(),
            "refused by the administrator's lock /locks/plugin_dirs (managed settings): the user "
            "settings set backends.plugin_dirs (/opt/mine); only the managed settings add plugin "
            "directories");
  const Settings settings = with_managed(managed);
  BackendRequest flags;
  flags.plugin_dirs = {"/opt/mine"};
  flags.plugin_dirs_from = "the manager's plugin_dirs";
  Result<BackendSelection> chosen = decide_backends(settings, flags);
  ASSERT_FALSE(chosen.ok());
  EXPECT_EQ(chosen.error(),
            "refused by the administrator's lock /locks/plugin_dirs (managed settings): the "
            "manager's plugin_dirs adds the plugin directory /opt/mine; plugin directories "
            "allowed: the install's own, /opt/site");
  flags.plugin_dirs = {"/opt/site"};  // already there
  EXPECT_TRUE(decide_backends(settings, flags).ok());
  // A lock on the order leaves the user's plugin directories alone, and the other way round.
  EXPECT_TRUE(
      merge_settings(
          {{Scope::kManaged, parsed(R"({"locks":{"backend_order":true}})", Scope::kManaged)},
           {Scope::kUser, parsed(R"({"backends":{"plugin_dirs":["/opt/m"]}})", Scope::kUser)}})
          .ok());
}

// ---- files: managed trust checks, user, project trust ----

namespace fs = std::filesystem;

class Files : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to create files owned by another uid";
    fs::create_directories(tmp_.path() + "/etc/sbx");
    fs::create_directories(tmp_.path() + "/home/.config/sbx");
    fs::create_directories(tmp_.path() + "/work/repo/sub");
    ::chmod(tmp_.path().c_str(), 0755);
    sources_.managed_file = tmp_.path() + "/etc/sbx/managed.json";
    sources_.managed_trust_root = tmp_.path();
    sources_.user_file = tmp_.path() + "/home/.config/sbx/settings.json";
    sources_.cwd = tmp_.path() + "/work/repo/sub";
  }

  void write(const std::string& path, const std::string& text, mode_t mode = 0644) {
    sbx::test::write_file(path, text);
    ::chmod(path.c_str(), mode);
  }

  std::string load_error() {
    Result<Settings> loaded = load_settings(sources_);
    return loaded.ok() ? std::string("(accepted)") : loaded.error();
  }

  sbx::test::TempDir tmp_;
  Sources sources_;
};

TEST_F(Files, NoFilesNoSettings) {
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_TRUE(loaded->files.empty());
  EXPECT_FALSE(loaded->policy);
}

// A Windows cwd ("C:/work", what sbx.exe passes) has no "/" above its drive: the search for a
// project file stops at "C:" as it stops at "/" (it used to loop there for ever).
TEST_F(Files, TheProjectSearchStopsAtADriveRoot) {
  sources_.cwd = "C:/work";
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_TRUE(loaded->files.empty());
}

TEST_F(Files, ASafeManagedFileIsRead) {
  write(sources_.managed_file, R"({"locks":{"allow_unsandboxed":false}})");
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->locks.allow_unsandboxed, false);
  ASSERT_EQ(loaded->files.size(), 1u);
  EXPECT_EQ(loaded->files[0].scope, Scope::kManaged);
}

TEST_F(Files, HostileManagedFilesAreRefusedLoudly) {
  const std::string text = R"({"locks":{"allow_unsandboxed":false}})";
  write(sources_.managed_file, text, 0664);
  EXPECT_NE(load_error().find("writable by group"), std::string::npos) << load_error();
  write(sources_.managed_file, text, 0646);
  EXPECT_NE(load_error().find("writable by others"), std::string::npos) << load_error();
  write(sources_.managed_file, text, 0644);
  ASSERT_EQ(::chown(sources_.managed_file.c_str(), 4242, 4242), 0);
  EXPECT_NE(load_error().find("owned by uid 4242"), std::string::npos) << load_error();
  fs::remove(sources_.managed_file);
  write(tmp_.path() + "/real.json", text);
  fs::create_symlink(tmp_.path() + "/real.json", sources_.managed_file);
  EXPECT_NE(load_error().find("symlink"), std::string::npos) << load_error();
  fs::remove(sources_.managed_file);
  write(sources_.managed_file, text);
  ::chmod((tmp_.path() + "/etc").c_str(), 0775);
  EXPECT_NE(load_error().find("/etc is writable by group"), std::string::npos) << load_error();
  ::chmod((tmp_.path() + "/etc").c_str(), 0755);
  ASSERT_EQ(::chown((tmp_.path() + "/etc/sbx").c_str(), 4242, 0), 0);
  EXPECT_NE(load_error().find("owned by uid 4242"), std::string::npos) << load_error();
  ASSERT_EQ(::chown((tmp_.path() + "/etc/sbx").c_str(), 0, 0), 0);
  EXPECT_EQ(load_error(), "(accepted)");
  // Every message says the managed settings were refused, not skipped.
  write(sources_.managed_file, text, 0666);
  EXPECT_EQ(load_error().rfind("refusing the managed settings", 0), 0u) << load_error();
}

TEST_F(Files, AnInvalidFileNamesItsPathAndPointer) {
  write(sources_.user_file, R"({"sandbox":"sometimes"})");
  const std::string error = load_error();
  EXPECT_NE(error.find(sources_.user_file), std::string::npos) << error;
  EXPECT_NE(error.find("/sandbox: expected one of"), std::string::npos) << error;
}

TEST_F(Files, AnUntrustedProjectIsIgnoredWithANote) {
  fs::create_directories(tmp_.path() + "/work/repo/.sbx");
  write(tmp_.path() + "/work/repo/.sbx/settings.json",
        R"({"policy":{"version":1,"preset":"danger-full-access"},"excluded_commands":["*"]})");
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_FALSE(loaded->policy);
  EXPECT_TRUE(loaded->excluded_commands.empty());
  EXPECT_FALSE(loaded->project_trusted);
  EXPECT_EQ(loaded->project_root, tmp_.path() + "/work/repo");
  ASSERT_EQ(loaded->notes.size(), 1u);
  EXPECT_NE(loaded->notes[0].find("not a trusted project"), std::string::npos);
  // Not even parsed: an untrusted repository cannot break the run with a bad file either.
  write(tmp_.path() + "/work/repo/.sbx/settings.json", "{not json");
  EXPECT_EQ(load_error(), "(accepted)");
}

TEST_F(Files, ATrustedProjectIsMergedAfterTheUser) {
  fs::create_directories(tmp_.path() + "/work/repo/.sbx");
  write(tmp_.path() + "/work/repo/.sbx/settings.json", R"({"sandbox":"require"})");
  ASSERT_TRUE(trust_project(sources_.user_file, tmp_.path() + "/work/repo").ok());
  // Trusting twice keeps one entry, and the rest of the file is kept.
  write(sources_.user_file,
        R"({"sandbox":"auto","trusted_projects":[")" + tmp_.path() + "/work/repo\"]}");
  ASSERT_TRUE(trust_project(sources_.user_file, tmp_.path() + "/work/repo").ok());
  ASSERT_TRUE(trust_project(sources_.user_file, "/elsewhere").ok());
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_TRUE(loaded->project_trusted);
  EXPECT_EQ(loaded->sandbox.value, SandboxPreference::kRequire);
  EXPECT_EQ(loaded->sandbox.scope, Scope::kProject);
  EXPECT_EQ(loaded->trusted_projects,
            (std::vector<std::string>{tmp_.path() + "/work/repo", "/elsewhere"}));
  ASSERT_EQ(loaded->files.size(), 2u);
  EXPECT_EQ(loaded->files[1].scope, Scope::kProject);
  // config show --json: every value with its scope.
  const boost::json::value shown = boost::json::parse(settings_to_json(*loaded));
  EXPECT_EQ(shown.at("sandbox").at("scope"), "project");
  EXPECT_EQ(shown.at("sandbox").at("value"), "require");
  EXPECT_EQ(shown.at("project").at("trusted"), true);
}

// Issue #32 finding 4: a sandboxed run writes sub/.sbx/settings.json ("{}"); the next run in
// sub/ must still use the trusted project's settings, and report the decoy it ignored.
TEST_F(Files, ADecoyCloserThanTheTrustedProjectIsIgnoredAndReported) {
  fs::create_directories(tmp_.path() + "/work/repo/.sbx");
  fs::create_directories(tmp_.path() + "/work/repo/sub/.sbx");
  write(tmp_.path() + "/work/repo/.sbx/settings.json", R"({"sandbox":"require"})");
  const std::string decoy = tmp_.path() + "/work/repo/sub/.sbx/settings.json";
  write(decoy, "{}");
  // Without trust, the nearest file is the (ignored) project, and both are reported.
  Result<Settings> untrusted = load_settings(sources_);
  ASSERT_TRUE(untrusted.ok()) << untrusted.error();
  EXPECT_FALSE(untrusted->project_trusted);
  EXPECT_EQ(untrusted->project_root, tmp_.path() + "/work/repo/sub");
  EXPECT_EQ(untrusted->ignored_project_files,
            (std::vector<std::string>{decoy, tmp_.path() + "/work/repo/.sbx/settings.json"}));
  EXPECT_FALSE(untrusted->inside_trusted_project);
  ASSERT_TRUE(trust_project(sources_.user_file, tmp_.path() + "/work/repo").ok());
  // Trusted projects and no logical cwd: one note says the symlink check cannot apply.
  Result<Settings> unnamed = load_settings(sources_);
  ASSERT_TRUE(unnamed.ok()) << unnamed.error();
  ASSERT_EQ(unnamed->notes.size(), 2u);
  EXPECT_NE(unnamed->notes[0].find("was given by neither --cwd nor a PWD"), std::string::npos)
      << unnamed->notes[0];
  sources_.logical_cwd = sources_.cwd;  // as --cwd or a PWD naming it would set it
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_TRUE(loaded->project_trusted);
  EXPECT_EQ(loaded->project_root, tmp_.path() + "/work/repo");
  EXPECT_EQ(loaded->sandbox.value, SandboxPreference::kRequire);
  EXPECT_EQ(loaded->sandbox.scope, Scope::kProject);
  EXPECT_EQ(loaded->ignored_project_files, std::vector<std::string>{decoy});
  ASSERT_EQ(loaded->notes.size(), 1u);
  EXPECT_NE(loaded->notes[0].find(decoy + " ignored"), std::string::npos) << loaded->notes[0];
  EXPECT_NE(loaded->notes[0].find("the settings of the trusted project " + tmp_.path() +
                                  "/work/repo apply"),
            std::string::npos)
      << loaded->notes[0];
  // Even a decoy that is invalid JSON is never read.
  write(decoy, "{not json");
  EXPECT_EQ(load_error(), "(accepted)");
  // explain and config show report it.
  const boost::json::value shown = boost::json::parse(settings_to_json(*loaded));
  EXPECT_EQ(shown.at("ignored_project_files").as_array().size(), 1u);
  EXPECT_EQ(shown.at("project").at("root").as_string(), tmp_.path() + "/work/repo");
}

// Inside a trusted project (with a settings file or not) ".sbx" becomes a protected name of the
// final policy, like ".git"; elsewhere the policy is left as it is.
TEST_F(Files, InsideATrustedProjectDotSbxIsAProtectedName) {
  auto names = [&]() {
    Result<Settings> loaded = load_settings(sources_);
    EXPECT_TRUE(loaded.ok()) << loaded.error();
    Result<Decided> decided = decide(*loaded, Overrides{}, base_policy(*loaded, {}).value);
    EXPECT_TRUE(decided.ok()) << decided.error();
    return decided->policy.filesystem.protected_names;
  };
  EXPECT_EQ(names(), default_protected_names());
  ASSERT_TRUE(trust_project(sources_.user_file, tmp_.path() + "/work/repo").ok());
  std::vector<std::string> expected = default_protected_names();
  expected.emplace_back(".sbx");
  EXPECT_EQ(names(), expected);
  // What the protected name does for the sandbox: R/.sbx is a protected path of every
  // writable root R, missing or not (resolution/protected.cpp).
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  Result<Decided> decided = decide(*loaded, Overrides{}, base_policy(*loaded, {}).value);
  ASSERT_TRUE(decided.ok()) << decided.error();
  ResolveContext context;
  context.cwd = sources_.cwd;
  context.home = tmp_.path() + "/home";
  Result<ResolvedPolicy> resolved = resolve_policy(decided->policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_TRUE(
      std::any_of(resolved->protected_paths.begin(), resolved->protected_paths.end(),
                  [&](const ProtectedPath& p) { return p.path == sources_.cwd + "/.sbx"; }));
}

// A run in one trusted project must not write another trusted project's settings below its
// writable roots: a nested trusted project's existing file is kept read-only, a missing one
// uncreatable, although this run does not read either.
TEST_F(Files, NestedTrustedProjectsSettingsAreGuardedToo) {
  const std::string repo = tmp_.path() + "/work/repo";
  fs::create_directories(repo + "/sub/.sbx");
  fs::create_directories(repo + "/other");
  write(repo + "/sub/.sbx/settings.json", R"({"sandbox":"require"})");
  ASSERT_TRUE(trust_project(sources_.user_file, repo).ok());
  ASSERT_TRUE(trust_project(sources_.user_file, repo + "/sub").ok());
  ASSERT_TRUE(trust_project(sources_.user_file, repo + "/other").ok());
  sources_.cwd = repo;
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->guarded_files, std::vector<std::string>{repo + "/sub/.sbx/settings.json"});
  EXPECT_EQ(loaded->absent_files, (std::vector<std::string>{repo + "/.sbx/settings.json",
                                                            repo + "/other/.sbx/settings.json"}));
  ResolveContext context;
  context.cwd = repo;
  context.home = tmp_.path() + "/home";
  for (const auto& file : loaded->files) context.settings_files.push_back(file.value);
  for (const auto& file : loaded->guarded_files) context.settings_files.push_back(file);
  context.absent_settings_files = loaded->absent_files;
  Result<ResolvedPolicy> resolved =
      resolve_policy(preset_policy("workspace-write").value(), context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(rule_access(*resolved, repo + "/sub/.sbx/settings.json"), Access::kRead);
  EXPECT_TRUE(std::any_of(resolved->protected_paths.begin(), resolved->protected_paths.end(),
                          [&](const ProtectedPath& p) { return p.path == repo + "/other/.sbx"; }));
}

// Red team F6: a settings path that cannot be checked is an error, never "absent" (ELOOP here:
// root passes EACCES; cli.Settings tests the chmod 000 as uid 65534).
TEST_F(Files, ASettingsPathThatCannotBeCheckedIsAnErrorNeverAbsent) {
  const std::string repo = tmp_.path() + "/work/repo";
  fs::create_directory_symlink(repo + "/.sbx", repo + "/.sbx");  // a loop: lstat gives ELOOP
  ASSERT_TRUE(trust_project(sources_.user_file, repo).ok());
  std::string error = load_error();
  EXPECT_NE(error.find("cannot check the settings " + repo + "/.sbx/settings.json"),
            std::string::npos)
      << error;
  // An untrusted directory's is never read: it cannot fail the run.
  fs::remove(sources_.user_file);
  EXPECT_EQ(load_error(), "(accepted)");
  // The user file the same.
  const std::string config = tmp_.path() + "/home/.config/sbx";
  fs::remove_all(config);
  fs::create_directory_symlink(config, config);
  error = load_error();
  EXPECT_NE(error.find("cannot check the settings " + sources_.user_file), std::string::npos)
      << error;
}

// Red team F5: the cwd's logical path (PWD, --cwd as given) inside a trusted project whose real
// path leaves it is refused; a symlink that stays inside changes nothing.
TEST_F(Files, ALogicalCwdThatLeavesATrustedProjectIsRefused) {
  const std::string repo = tmp_.path() + "/work/repo";
  const std::string elsewhere = tmp_.path() + "/work/elsewhere";
  fs::create_directories(repo + "/.sbx");
  fs::create_directories(elsewhere);
  write(repo + "/.sbx/settings.json", R"({"sandbox":"require"})");
  ASSERT_TRUE(trust_project(sources_.user_file, repo).ok());
  fs::create_directory_symlink(elsewhere, repo + "/tools");
  fs::create_directory_symlink(repo + "/sub", repo + "/inside");
  // PWD names the cwd: it is the logical path; a PWD naming another directory is not.
  EXPECT_EQ(current_sources(elsewhere, {{"PWD", repo + "/tools"}}).logical_cwd, repo + "/tools");
  EXPECT_EQ(current_sources(elsewhere, {{"PWD", repo}}).logical_cwd, "");
  sources_.cwd = elsewhere;
  sources_.logical_cwd = repo + "/tools";
  const std::string error = load_error();
  EXPECT_NE(error.find("inside the trusted project " + repo), std::string::npos) << error;
  EXPECT_NE(error.find("real path " + elsewhere), std::string::npos) << error;
  sources_.cwd = repo + "/sub";
  sources_.logical_cwd = repo + "/inside";
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->sandbox.scope, Scope::kProject);
  // Not inside a trusted project by either path: nothing to refuse.
  sources_.cwd = elsewhere;
  sources_.logical_cwd = elsewhere;
  EXPECT_EQ(load_error(), "(accepted)");
}

// Red team F6: every trusted project's whole .sbx directory is kept read-only, not only its
// settings file, so a run above it cannot chmod or fill it.
TEST_F(Files, EveryTrustedProjectsSbxDirectoryIsReadOnly) {
  const std::string repo = tmp_.path() + "/work/repo";
  fs::create_directories(repo + "/sub/.sbx");
  write(repo + "/sub/.sbx/settings.json", "{}");
  ASSERT_TRUE(trust_project(sources_.user_file, repo + "/sub").ok());
  sources_.cwd = repo;
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->guarded_dirs, std::vector<std::string>{repo + "/sub/.sbx"});
  ResolveContext context;
  context.cwd = repo;
  context.home = tmp_.path() + "/home";
  context.settings_dirs = loaded->guarded_dirs;
  Result<ResolvedPolicy> resolved =
      resolve_policy(preset_policy("workspace-write").value(), context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(rule_access(*resolved, repo + "/sub/.sbx"), Access::kRead);
  EXPECT_EQ(rule_access(*resolved, repo + "/sub/.sbx/new"), Access::kRead);
  const auto pinned =
      std::find_if(resolved->protected_paths.begin(), resolved->protected_paths.end(),
                   [&](const ProtectedPath& p) { return p.path == repo + "/sub/.sbx"; });
  ASSERT_NE(pinned, resolved->protected_paths.end());
  EXPECT_TRUE(pinned->exists);
  EXPECT_TRUE(pinned->is_directory);
}

TEST_F(Files, TrustRefusesAnInvalidUserFile) {
  write(sources_.user_file, R"({"colour":1})");
  Status status = trust_project(sources_.user_file, "/x");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("/colour: unknown key"), std::string::npos) << status.error();
  EXPECT_EQ(sbx::test::read_file(sources_.user_file), R"({"colour":1})");
}

TEST(Sources, XdgConfigHomeThenHome) {
  EXPECT_EQ(current_sources("/w", {{"XDG_CONFIG_HOME", "/x"}, {"HOME", "/h"}}).user_file,
            "/x/sbx/settings.json");
  EXPECT_EQ(current_sources("/w", {{"XDG_CONFIG_HOME", "rel"}, {"HOME", "/h"}}).user_file,
            "/h/.config/sbx/settings.json");
  EXPECT_EQ(current_sources("/w", {}).user_file, "");
  // The managed file is fixed: nothing in the environment moves it.
  EXPECT_EQ(current_sources("/w", {{"SBX_MANAGED", "/tmp/m.json"}}).managed_file,
            "/etc/sbx/managed.json");
  EXPECT_EQ(current_sources("/w", {}).managed_trust_root, "/");
  EXPECT_FALSE(current_sources("/w", {}).managed_owner);
}

}  // namespace
}  // namespace sbx::settings

namespace sbx::settings {
namespace {

// Self-protection of the settings files (resolve.hpp settings_files, absent_settings_files):
// an existing file under a writable root becomes read-only, and a missing one (the user file,
// a trusted project's file) uncreatable, so a command cannot plant settings for the next run.
TEST_F(Files, SettingsFilesAreReadOnlyOrUncreatableInTheSandbox) {
  fs::create_directories(tmp_.path() + "/work/repo/.sbx");
  const std::string project_file = tmp_.path() + "/work/repo/.sbx/settings.json";
  write(project_file, R"({"sandbox":"require"})");
  ASSERT_TRUE(trust_project(sources_.user_file, tmp_.path() + "/work/repo").ok());
  ASSERT_TRUE(trust_project(sources_.user_file, tmp_.path() + "/work/repo/sub").ok());
  Result<Settings> loaded = load_settings(sources_);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  // The cwd's own trusted project has no file yet: it would be read once created.
  EXPECT_EQ(loaded->absent_files,
            std::vector<std::string>{tmp_.path() + "/work/repo/sub/.sbx/settings.json"});
  ResolveContext context;
  context.cwd = tmp_.path() + "/work/repo";
  context.home = tmp_.path() + "/home";
  for (const auto& file : loaded->files) context.settings_files.push_back(file.value);
  context.absent_settings_files = loaded->absent_files;
  context.absent_settings_files.push_back(tmp_.path() + "/home/.config/new/sbx/settings.json");
  Policy policy = preset_policy("workspace-write").value();
  policy.filesystem.entries.push_back(PolicyEntry{"~", "", Access::kWrite});
  Result<ResolvedPolicy> resolved = resolve_policy(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  auto find = [&](const std::string& path) -> const ProtectedPath* {
    for (const ProtectedPath& p : resolved->protected_paths)
      if (p.path == path) return &p;
    return nullptr;
  };
  EXPECT_EQ(rule_access(*resolved, project_file), Access::kRead);
  EXPECT_EQ(rule_access(*resolved, sources_.user_file), Access::kRead);
  ASSERT_NE(find(project_file), nullptr);
  EXPECT_TRUE(find(project_file)->exists);
  // A missing file's directory is made (as a real directory, nothing a later run or the
  // user's programs trip over) and kept read-only, so the file cannot be created inside.
  for (const std::string& dir :
       {tmp_.path() + "/work/repo/sub/.sbx", tmp_.path() + "/home/.config/new/sbx"}) {
    EXPECT_TRUE(fs::is_directory(fs::symlink_status(dir))) << dir;
    EXPECT_EQ(rule_access(*resolved, dir), Access::kRead) << dir;
    const ProtectedPath* kept = find(dir);
    ASSERT_NE(kept, nullptr) << dir;
    EXPECT_TRUE(kept->exists) << dir;
  }
  EXPECT_EQ(find(tmp_.path() + "/home/.config/new"), nullptr);
}

}  // namespace
}  // namespace sbx::settings
