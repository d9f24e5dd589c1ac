// Accepted documents: the presets and the short form expand to the documented full form, full
// form defaults apply, values are normalised, and policy_to_json round-trips.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

std::vector<PolicyEntry> paths(std::initializer_list<std::pair<const char*, Access>> items) {
  std::vector<PolicyEntry> out;
  for (const auto& [path, access] : items) out.push_back(PolicyEntry{path, {}, access});
  return out;
}

Policy parse_ok(const std::string& json) {
  Result<Policy> parsed = parse_policy(json);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return parsed.ok() ? *parsed : Policy{};
}

struct FormCase {
  const char* name;
  std::string json;
  FilesystemKind kind;
  std::vector<PolicyEntry> entries;
  NetworkMode mode;
};

TEST(PolicyForms, PresetsAndShortFormExpandToTheFullForm) {
  constexpr Access r = Access::kRead, w = Access::kWrite;
  const std::vector<FormCase> cases = {
      {"read_only", R"({"version": 1, "preset": "read-only"})", FilesystemKind::kRestricted,
       paths({{":root", r}}), NetworkMode::kRestricted},
      {"read_only_network", R"({"version": 1, "preset": "read-only", "network_access": true})",
       FilesystemKind::kRestricted, paths({{":root", r}}), NetworkMode::kEnabled},
      {"workspace_write", R"({"version": 1, "preset": "workspace-write"})",
       FilesystemKind::kRestricted,
       paths({{":root", r}, {":cwd", w}, {":slash_tmp", w}, {":tmpdir", w}}),
       NetworkMode::kRestricted},
      {"workspace_write_options",
       R"({"version": 1, "preset": "workspace-write", "writable_roots": ["/srv//cache/", "~/x"],
           "network_access": true, "exclude_tmpdir_env_var": true, "exclude_slash_tmp": true})",
       FilesystemKind::kRestricted,
       paths({{":root", r}, {":cwd", w}, {"/srv/cache", w}, {"~/x", w}}), NetworkMode::kEnabled},
      {"workspace_write_exclude_only_tmpdir",
       R"({"version": 1, "preset": "workspace-write", "exclude_tmpdir_env_var": true})",
       FilesystemKind::kRestricted, paths({{":root", r}, {":cwd", w}, {":slash_tmp", w}}),
       NetworkMode::kRestricted},
      {"danger_full_access",
       R"({"version": 1, "preset": "danger-full-access"})",
       FilesystemKind::kUnrestricted,
       {},
       NetworkMode::kEnabled},
      {"external_sandbox",
       R"({"version": 1, "preset": "external-sandbox"})",
       FilesystemKind::kExternal,
       {},
       NetworkMode::kRestricted},
      {"external_sandbox_network",
       R"({"version": 1, "preset": "external-sandbox", "network_access": true})",
       FilesystemKind::kExternal,
       {},
       NetworkMode::kEnabled},
      {"full_form_defaults",
       R"({"version": 1})",
       FilesystemKind::kRestricted,
       {},
       NetworkMode::kRestricted},
      {"full_form_normalised_paths",
       R"({"version": 1, "filesystem": {"entries": [{"path": ":cwd//sub/dir/", "access": "write"},
           {"path": "//etc///ssl/", "access": "read"}, {"path": "~/", "access": "read"},
           {"path": ":cwd/", "access": "read"}]}})",
       FilesystemKind::kRestricted,
       paths({{":cwd/sub/dir", w}, {"/etc/ssl", r}, {"~", r}, {":cwd", r}}),
       NetworkMode::kRestricted},
  };
  for (const FormCase& c : cases) {
    SCOPED_TRACE(c.name);
    Policy policy = parse_ok(c.json);
    EXPECT_EQ(policy.version, 1);
    EXPECT_EQ(policy.filesystem.kind, c.kind);
    EXPECT_EQ(policy.filesystem.entries, c.entries);
    EXPECT_EQ(policy.filesystem.protected_names, default_protected_names());
    EXPECT_EQ(policy.network.mode, c.mode);
  }
}

TEST(PolicyForms, PresetPolicyMatchesTheShortForm) {
  for (std::string_view name : kPresetNames) {
    SCOPED_TRACE(name);
    Result<Policy> preset = preset_policy(name);
    ASSERT_TRUE(preset.ok()) << preset.error();
    EXPECT_EQ(*preset, parse_ok(R"({"version": 1, "preset": ")" + std::string(name) + "\"}"));
  }
  Result<Policy> unknown = preset_policy("nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().rfind("/preset: unknown preset \"nope\"", 0), 0u) << unknown.error();
}

TEST(PolicyForms, FullFormKeepsEveryField) {
  Policy policy = parse_ok(R"({"version": 1,
    "filesystem": {"kind": "restricted",
      "entries": [{"path": ":root", "access": "read"}, {"path": ":minimal", "access": "read"},
                  {"path": "~/.ssh", "access": "deny"}, {"glob": "**/*.pem", "access": "deny"},
                  {"glob": "/etc/{shadow,gshadow}", "access": "deny"}],
      "protected_names": [".git", ".hg"]},
    "network": {"mode": "proxy", "proxy_ports": [3128, 8080],
      "allowed_domains": ["*.Example.com", "pypi.org:443"], "denied_domains": ["evil.example.com"],
      "unix_sockets": ["/run//docker.sock", "~/.ssh/agent.sock"], "allow_local_binding": true}})");
  const std::vector<PolicyEntry> expected = {{":root", "", Access::kRead},
                                             {":minimal", "", Access::kRead},
                                             {"~/.ssh", "", Access::kDeny},
                                             {"", "**/*.pem", Access::kDeny},
                                             {"", "/etc/{shadow,gshadow}", Access::kDeny}};
  EXPECT_EQ(policy.filesystem.entries, expected);
  EXPECT_EQ(policy.filesystem.protected_names, (std::vector<std::string>{".git", ".hg"}));
  EXPECT_EQ(policy.network.mode, NetworkMode::kProxy);
  EXPECT_EQ(policy.network.proxy_ports, (std::vector<std::uint16_t>{3128, 8080}));
  EXPECT_EQ(policy.network.allowed_domains,
            (std::vector<std::string>{"*.example.com", "pypi.org:443"}));
  EXPECT_EQ(policy.network.denied_domains, (std::vector<std::string>{"evil.example.com"}));
  EXPECT_EQ(policy.network.unix_sockets,
            (std::vector<std::string>{"/run/docker.sock", "~/.ssh/agent.sock"}));
  EXPECT_TRUE(policy.network.allow_local_binding);
}

TEST(PolicyForms, EmptyProtectedNamesIsAnExplicitOptOut) {
  Policy policy = parse_ok(R"({"version": 1, "filesystem": {"protected_names": []}})");
  EXPECT_TRUE(policy.filesystem.protected_names.empty());
}

TEST(PolicyForms, RoundTripThroughTheFullForm) {
  std::vector<Policy> policies;
  for (std::string_view name : kPresetNames) policies.push_back(*preset_policy(name));
  policies.push_back(parse_ok(
      R"({"version": 1, "preset": "workspace-write", "writable_roots": ["/srv"],
          "exclude_slash_tmp": true, "network_access": true})"));
  policies.push_back(parse_ok(R"({"version": 1})"));
  policies.push_back(parse_ok(R"({"version": 1, "filesystem": {"protected_names": []},
      "network": {"mode": "enabled", "unix_sockets": ["/run/a.sock"]}})"));
  policies.push_back(parse_ok(R"({"version": 1,
    "filesystem": {"entries": [{"path": ":cwd/a b/\"q\"", "access": "write"},
      {"glob": "**/*.{pem,key}", "access": "deny"}, {"path": "/caf\u00e9", "access": "read"},
      {"path": ":minimal", "access": "read"}], "protected_names": [".git", ".Ä"]},
    "network": {"mode": "proxy", "proxy_ports": [1, 65535], "allowed_domains": ["*.a.io:8443"],
      "denied_domains": ["b.io"], "allow_local_binding": true}})"));
  for (const Policy& policy : policies) {
    std::string json = policy_to_json(policy);
    SCOPED_TRACE(json);
    Result<Policy> again = parse_policy(json);
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(*again, policy);
    EXPECT_EQ(policy_to_json(*again), json);  // stable text, not only an equal model
  }
}

TEST(PolicyForms, FullFormTextIsStableAndOrdered) {
  EXPECT_EQ(policy_to_json(*preset_policy("read-only")), R"({
  "version": 1,
  "filesystem": {
    "kind": "restricted",
    "entries": [
      {"path": ":root", "access": "read"}
    ],
    "protected_names": [".git", ".codex", ".agents"]
  },
  "network": {
    "mode": "restricted",
    "proxy_ports": [],
    "allowed_domains": [],
    "denied_domains": [],
    "unix_sockets": [],
    "allow_local_binding": false
  },
  "limits": {
    "processes": 4096,
    "open_files": null,
    "file_size_bytes": null,
    "address_space_bytes": null,
    "memory_bytes": null,
    "cpu_seconds": null,
    "timeout_seconds": null,
    "timeout_grace_seconds": 5,
    "best_effort": ["processes"]
  },
  "environment": {
    "inherit": "all",
    "keep": [],
    "exclude": [],
    "include_only": [],
    "set": {}
  }
}
)");
}

// Paths are arbitrary bytes: a serialized policy is read by people (`sbx policy show`) and
// models, so it escapes what would break or reorder a line exactly as every report does:
// control characters, U+2028/U+2029 and the bidi controls appear as \uXXXX, never raw, and the
// document still parses back to the same policy.
TEST(PolicyForms, SerializedPathsEscapeControlAndBidiCharacters) {
  const std::string rlo = "\xE2\x80\xAE";       // U+202E RIGHT-TO-LEFT OVERRIDE
  const std::string isolate = "\xE2\x81\xA6";   // U+2066 LEFT-TO-RIGHT ISOLATE
  const std::string line_sep = "\xE2\x80\xA8";  // U+2028 LINE SEPARATOR
  Policy policy = *preset_policy("workspace-write");
  policy.filesystem.entries.push_back(PolicyEntry{"/srv/evil" + rlo + "txt.sh", {}, Access::kDeny});
  policy.filesystem.entries.push_back(
      PolicyEntry{"/srv/a\x01"
                  "b\tc\x1f" +
                      isolate + line_sep + "d",
                  {},
                  Access::kRead});
  policy.filesystem.entries.push_back(PolicyEntry{{}, "/srv/**/*" + rlo + ".pem", Access::kDeny});
  Result<Policy> checked = validate_policy(policy);
  ASSERT_TRUE(checked.ok()) << checked.error();

  const std::string json = policy_to_json(*checked);
  SCOPED_TRACE(json);
  for (const std::string& raw : {rlo, isolate, line_sep, std::string("\x01"), std::string("\t")}) {
    EXPECT_EQ(json.find(raw), std::string::npos) << "a raw invisible character in the output";
  }
  EXPECT_NE(json.find(R"("/srv/evil\u202etxt.sh")"), std::string::npos);
  EXPECT_NE(json.find(R"("/srv/a\u0001b\tc\u001f\u2066\u2028d")"), std::string::npos);
  EXPECT_NE(json.find(R"("/srv/**/*\u202e.pem")"), std::string::npos);

  Result<Policy> again = parse_policy(json);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *checked);
  EXPECT_EQ(policy_to_json(*again), json);
}

TEST(PolicyForms, ValidatePolicyChecksCodeBuiltPolicies) {
  Policy policy = *preset_policy("workspace-write");
  policy.filesystem.entries.push_back(PolicyEntry{"relative", {}, Access::kDeny});
  Result<Policy> checked = validate_policy(policy);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().rfind("/filesystem/entries/4/path: relative path", 0), 0u)
      << checked.error();
  policy.filesystem.entries.back() = PolicyEntry{"//srv//", {}, Access::kDeny};
  checked = validate_policy(policy);
  ASSERT_TRUE(checked.ok()) << checked.error();
  EXPECT_EQ(checked->filesystem.entries.back().path, "/srv");
}

}  // namespace
}  // namespace sbx
