// /environment of a policy: strict reading with a JSON pointer in every error, the same object
// next to a preset, the round trip through the full form; and the filter that builds the
// command's environment from it (secrets dropped by default, keep, exclude, include_only, set,
// inherit all|core|none), which never reports a value.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sbx/core/environment.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

std::string with_environment(const std::string& members) {
  return R"({"version": 1, "environment": {)" + members + "}}";
}

struct ErrorCase {
  const char* name;
  std::string json;
  std::string pointer;
  std::string detail;
};

TEST(PolicyEnvironment, RejectionsNameTheirPointer) {
  const std::vector<ErrorCase> cases = {
      {"not_object", R"({"version": 1, "environment": []})", "/environment",
       "expected an object, got an array"},
      {"unknown_key", with_environment(R"("inherits": "all")"), "/environment/inherits",
       "unknown key; expected one of inherit|keep|exclude|include_only|set"},
      {"duplicate_key", with_environment(R"("inherit": "all", "inherit": "none")"),
       "/environment/inherit", "duplicate key"},
      {"inherit_unknown", with_environment(R"("inherit": "some")"), "/environment/inherit",
       "expected one of all|core|none, got \"some\""},
      {"inherit_not_string", with_environment(R"("inherit": true)"), "/environment/inherit",
       "expected one of all|core|none"},
      {"exclude_not_array", with_environment(R"("exclude": "X")"), "/environment/exclude",
       "expected an array of name patterns, got a string"},
      {"keep_item_not_string", with_environment(R"("keep": ["A", 3])"), "/environment/keep/1",
       "expected a name pattern (a string), got a number"},
      {"include_only_empty_pattern", with_environment(R"("include_only": [""])"),
       "/environment/include_only/0", "empty pattern"},
      {"pattern_with_equals", with_environment(R"("exclude": ["A=B"])"), "/environment/exclude/0",
       "has '=' or a NUL byte"},
      {"set_not_object", with_environment(R"("set": ["A"])"), "/environment/set",
       "expected an object of name: value strings, got an array"},
      {"set_value_not_string", with_environment(R"("set": {"A": 1})"), "/environment/set/A",
       "expected a string value, got a number"},
      {"set_name_empty", with_environment(R"("set": {"": "x"})"), "/environment/set/",
       "empty variable name"},
      {"set_name_equals", with_environment(R"("set": {"A=B": "x"})"), "/environment/set/A=B",
       "has '=' or a NUL byte"},
      {"set_name_star", with_environment(R"("set": {"A*": "x"})"), "/environment/set/A*",
       "has '*'"},
      {"set_value_nul", with_environment(R"("set": {"A": "x\u0000y"})"), "/environment/set/A",
       "NUL byte"},
      {"short_form_bad", R"({"version": 1, "preset": "read-only", "environment": {"x": 1}})",
       "/environment/x", "unknown key"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Policy> parsed = parse_policy(c.json);
    ASSERT_FALSE(parsed.ok()) << "accepted: " << c.json;
    EXPECT_EQ(parsed.error().substr(0, c.pointer.size() + 2), c.pointer + ": ") << parsed.error();
    EXPECT_NE(parsed.error().find(c.detail), std::string::npos) << parsed.error();
  }
}

TEST(PolicyEnvironment, DefaultInheritsAllAndEveryPresetToo) {
  EXPECT_EQ(parse_policy(R"({"version": 1})")->environment, EnvironmentPolicy{});
  for (std::string_view preset : kPresetNames) {
    SCOPED_TRACE(std::string(preset));
    EXPECT_EQ(preset_policy(preset)->environment, EnvironmentPolicy{});
  }
}

TEST(PolicyEnvironment, EveryKeyIsReadInBothFormsAndRoundTrips) {
  const std::string members =
      R"("inherit": "core", "keep": ["GITHUB_TOKEN"], "exclude": ["AWS_*"],
         "include_only": ["*"], "set": {"FOO": "bar", "EMPTY": ""})";
  for (const std::string& json :
       {with_environment(members),
        R"({"version": 1, "preset": "workspace-write", "environment": {)" + members + "}}"}) {
    SCOPED_TRACE(json);
    Result<Policy> parsed = parse_policy(json);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    const EnvironmentPolicy& env = parsed->environment;
    EXPECT_EQ(env.inherit, EnvInherit::kCore);
    EXPECT_EQ(env.keep, std::vector<std::string>{"GITHUB_TOKEN"});
    EXPECT_EQ(env.exclude, std::vector<std::string>{"AWS_*"});
    EXPECT_EQ(env.include_only, std::vector<std::string>{"*"});
    EXPECT_EQ(env.set, (std::map<std::string, std::string>{{"EMPTY", ""}, {"FOO", "bar"}}));
    const std::string text = policy_to_json(*parsed);
    Result<Policy> again = parse_policy(text);
    ASSERT_TRUE(again.ok()) << again.error() << "\n" << text;
    EXPECT_EQ(*again, *parsed);
  }
}

TEST(PolicyEnvironment, ValidatePolicyChecksEnvironmentBuiltInCode) {
  Policy policy;
  policy.environment.set["A=B"] = "x";
  Result<Policy> checked = validate_policy(policy);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().rfind("/environment/set/A=B: ", 0), 0u) << checked.error();
}

// ---- the filter ----

const std::vector<std::string> kCaller = {"PATH=/usr/bin:/bin",
                                          "HOME=/home/me",
                                          "LANG=C.UTF-8",
                                          "LC_ALL=C",
                                          "OPENAI_API_KEY=sk-live",
                                          "GITHUB_TOKEN=ghp_x",
                                          "AWS_SECRET_ACCESS_KEY=aws",
                                          "DB_PASSWORD=pw",
                                          "gcp_credentials=c",
                                          "EDITOR=vi",
                                          "AWS_REGION=eu",
                                          "keyboard=us"};

std::vector<std::string> names_of(const std::vector<std::string>& env) {
  std::vector<std::string> names;
  for (const std::string& entry : env) names.push_back(entry.substr(0, entry.find('=')));
  return names;
}

TEST(EnvironmentFilter, PatternsIgnoreCaseAndStarMatchesAnyRun) {
  EXPECT_TRUE(env_pattern_matches("*token*", "GITHUB_TOKEN"));
  EXPECT_TRUE(env_pattern_matches("LC_*", "lc_all"));
  EXPECT_TRUE(env_pattern_matches("*", ""));
  EXPECT_TRUE(env_pattern_matches("A*B*C", "AxxBxxC"));
  EXPECT_FALSE(env_pattern_matches("A*B*C", "AxxBxx"));
  EXPECT_FALSE(env_pattern_matches("PATH", "PATH2"));
  EXPECT_FALSE(env_pattern_matches("?", "A"));  // only '*' is special
  EXPECT_TRUE(looks_like_secret("my_Api_Key"));
  EXPECT_TRUE(looks_like_secret("keyboard"));  // a substring: erring on the side of removing
  EXPECT_FALSE(looks_like_secret("EDITOR"));
}

TEST(EnvironmentFilter, SecretsAreRemovedByDefaultNamesOnly) {
  const FilteredEnvironment out = filter_environment(EnvironmentPolicy{}, kCaller);
  EXPECT_EQ(names_of(out.env),
            (std::vector<std::string>{"PATH", "HOME", "LANG", "LC_ALL", "EDITOR", "AWS_REGION"}));
  EXPECT_EQ(out.removed,
            (std::vector<std::string>{"AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GITHUB_TOKEN",
                                      "OPENAI_API_KEY", "gcp_credentials", "keyboard"}));
  for (const std::string& name : out.removed) EXPECT_EQ(name.find('='), std::string::npos);
}

// Issue #32 A4: an entry with an empty name ("=x": exec(3) allows it, `env '=x' sbx exec`)
// reached the bwrap backend, which failed the whole run over it ("environment entry '' has no
// name", 125) while other paths passed it on. It names no variable: it is dropped on every path,
// whatever the policy keeps, and listed as "(empty name)". A bare NAME (a variable a front end
// withheld, such as the LD_* the CLI takes out of its own environment) is dropped and listed by
// its name, never passed, even where `keep` or `include_only` would take it.
TEST(EnvironmentFilter, AnEmptyNameOrABareNameIsDroppedAndListed) {
  EnvironmentPolicy policy;
  policy.keep = {"*"};
  for (const std::vector<std::string>& include_only :
       {std::vector<std::string>{}, std::vector<std::string>{"*"}}) {
    policy.include_only = include_only;
    const FilteredEnvironment out =
        filter_environment(policy, {"PATH=/bin", "=x", "LD_PRELOAD", "", "==", "HOME=/h"});
    EXPECT_EQ(out.env, (std::vector<std::string>{"PATH=/bin", "HOME=/h"}));
    EXPECT_EQ(out.removed, (std::vector<std::string>{"(empty name)", "LD_PRELOAD"}));
  }
}

TEST(EnvironmentFilter, KeepExcludeIncludeOnlyAndSetApplyInOrder) {
  EnvironmentPolicy policy;
  policy.keep = {"github_token", "*PASSWORD"};
  policy.exclude = {"db_*", "EDITOR"};  // exclude wins over keep
  policy.set = {{"FOO", "bar"}, {"PATH", "/opt/bin"}};
  FilteredEnvironment out = filter_environment(policy, kCaller);
  EXPECT_EQ(out.env, (std::vector<std::string>{"HOME=/home/me", "LANG=C.UTF-8", "LC_ALL=C",
                                               "GITHUB_TOKEN=ghp_x", "AWS_REGION=eu", "FOO=bar",
                                               "PATH=/opt/bin"}));
  EXPECT_EQ(out.removed,
            (std::vector<std::string>{"AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "EDITOR",
                                      "OPENAI_API_KEY", "gcp_credentials", "keyboard"}));

  policy = EnvironmentPolicy{};
  policy.include_only = {"P*", "home"};
  out = filter_environment(policy, kCaller);
  EXPECT_EQ(names_of(out.env), (std::vector<std::string>{"PATH", "HOME"}));
}

TEST(EnvironmentFilter, InheritCoreAndNone) {
  EnvironmentPolicy policy;
  policy.inherit = EnvInherit::kCore;
  FilteredEnvironment out = filter_environment(policy, kCaller);
  EXPECT_EQ(names_of(out.env), (std::vector<std::string>{"PATH", "HOME", "LANG", "LC_ALL"}));
  policy.inherit = EnvInherit::kNone;
  policy.set = {{"ONLY", "1"}};
  out = filter_environment(policy, kCaller);
  EXPECT_EQ(out.env, std::vector<std::string>{"ONLY=1"});
  EXPECT_EQ(out.removed.size(), kCaller.size());
}

// The names real secrets are given (issue #32: MYSQL_PWD, NPM_CONFIG__AUTH, GH_PAT passed the
// KEY/SECRET/TOKEN/PASSWORD/CREDENTIAL filter), without the names commands need.
TEST(EnvironmentFilter, TheNamesRealSecretsUseAreSecrets) {
  for (const char* name : {"MYSQL_PWD", "PGPASSWORD", "PGPASSFILE", "REDISCLI_AUTH",
                           "NPM_CONFIG__AUTH", "npm_config__authToken", "GH_PAT", "ado_pat",
                           "HTTP_COOKIE", "AWS_SESSION_TOKEN", "SESSION_ID", "SSH_PRIVATE_KEY",
                           "GPG_PRIVATE", "SUDO_PASS", "HTTP_AUTHORIZATION", "XAUTHORITY"})
    EXPECT_TRUE(looks_like_secret(name)) << name;
  for (const char* name :
       {"PWD", "OLDPWD", "SSH_AUTH_SOCK", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
        "DBUS_SESSION_BUS_ADDRESS", "XDG_SESSION_TYPE", "PATH", "LD_LIBRARY_PATH", "PYTHONPATH",
        "MANPATH", "HOME", "TERM", "LANG", "SHELL", "PATCH_LEVEL", "PATTERN"})
    EXPECT_FALSE(looks_like_secret(name)) << name;
  // The exemptions are the exact names programs read; another spelling is not exempt.
  EXPECT_TRUE(looks_like_secret("MY_PWD"));
  EXPECT_TRUE(looks_like_secret("ssh_auth_sock_backup_pass"));
}

TEST(EnvironmentFilter, UrlCredentialsAnywhereInTheValue) {
  for (const char* value :
       {"postgres://u:pw@h/db", "mysql://root:@localhost:3306", "https://:tok@host",
        "a,https://u:p@h", "x https://u:p@h/path", "redis://u:p@ss@h:6379/0",
        "amqp+ssl://u:p@h?x=1", "http://u:p@proxy:3128", "git+https://oauth2:t@gitlab.com/r.git"})
    EXPECT_TRUE(carries_url_credentials(value)) << value;
  for (const char* value :
       {"https://example.com/a:b@c", "ssh://git@github.com/o/r.git", "http://proxy:3128",
        "https://h/?u=a:b@c", "https://h/#a:b@c", "://u:p@h", "u:p@h", "/usr/bin:/bin",
        "user@host:path", "mailto:a@b", ""})
    EXPECT_FALSE(carries_url_credentials(value)) << value;
}

TEST(EnvironmentFilter, AValueWithUrlCredentialsIsRemovedByNameUnlessKept) {
  const std::vector<std::string> caller = {"DATABASE_URL=postgres://u:pw@h/db",
                                           "MIRRORS=https://a,https://u:p@b",
                                           "PWD=/w",
                                           "OLDPWD=/",
                                           "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
                                           "MYSQL_PWD=pw",
                                           "GH_PAT=ghp",
                                           "REPO=ssh://git@h/r"};
  FilteredEnvironment out = filter_environment(EnvironmentPolicy{}, caller);
  EXPECT_EQ(names_of(out.env),
            (std::vector<std::string>{"PWD", "OLDPWD", "SSH_AUTH_SOCK", "REPO"}));
  EXPECT_EQ(out.removed,
            (std::vector<std::string>{"DATABASE_URL", "GH_PAT", "MIRRORS", "MYSQL_PWD"}));
  EnvironmentPolicy keeps;
  keeps.keep = {"DATABASE_URL"};
  out = filter_environment(keeps, caller);
  EXPECT_EQ(out.env.front(), "DATABASE_URL=postgres://u:pw@h/db");
}

// The command runs in the request's working directory: an inherited PWD naming the caller's
// is pointed there; one the policy sets stays, and none is added.
TEST(EnvironmentFilter, AnInheritedPwdNamesTheWorkingDirectory) {
  std::vector<std::string> env = {"HOME=/home/u", "PWD=/home/u/agent", "OLDPWD=/tmp"};
  point_pwd_at_working_directory(env, EnvironmentPolicy{}, "/work/repo");
  EXPECT_EQ(env, (std::vector<std::string>{"HOME=/home/u", "PWD=/work/repo", "OLDPWD=/tmp"}));

  EnvironmentPolicy sets;
  sets.set["PWD"] = "/chosen";
  std::vector<std::string> chosen = {"PWD=/chosen"};
  point_pwd_at_working_directory(chosen, sets, "/work/repo");
  EXPECT_EQ(chosen, std::vector<std::string>{"PWD=/chosen"});

  std::vector<std::string> none = {"HOME=/home/u"};
  point_pwd_at_working_directory(none, EnvironmentPolicy{}, "/work/repo");
  EXPECT_EQ(none, std::vector<std::string>{"HOME=/home/u"});
}

}  // namespace
}  // namespace sbx
