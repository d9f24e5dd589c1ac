// Resolution against real temporary directories: special paths, "~", ties, protected names,
// .git files, deny globs and the symlinked-writable-root rule. Each row of a table builds its
// own tree under a fresh scratch directory, removed afterwards.
#include "sbx/core/resolve.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "sbx/core/policy.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/sdk/private_state.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;

// A scratch tree (canonical, so expectations compare with resolved paths) with helpers to lay
// out directories, files and symlinks in it.
class TempTree {
 public:
  std::string operator/(const std::string& rel) const { return dir_ / rel; }
  const std::string& root() const { return dir_.path(); }
  void dir(const std::string& rel) const { fs::create_directories(*this / rel); }
  void file(const std::string& rel, const std::string& text) const {
    fs::create_directories(fs::path(*this / rel).parent_path());
    std::ofstream(*this / rel) << text;
  }
  void symlink(const std::string& target, const std::string& rel) const {
    fs::create_directories(fs::path(*this / rel).parent_path());
    fs::create_directory_symlink(target, *this / rel);
  }

 private:
  sbx::test::TempDir dir_;
};

// The tree every row starts from: cwd/ (a work tree), home/, elsewhere/.
ResolveContext standard_context(const TempTree& t) {
  t.dir("cwd/sub");
  t.dir("home/.ssh");
  t.dir("elsewhere");
  return ResolveContext{t / "cwd", t / "home", {}};
}

Policy parse_resolvable(const std::string& json) {
  Result<Policy> parsed = parse_policy(json);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  return parsed.ok() ? *parsed : Policy{};
}

std::string entries_policy(const std::string& entries, const std::string& extra = "") {
  return R"({"version": 1, "filesystem": {"entries": [)" + entries + "]" + extra + "}}";
}

using Check = std::function<void(const TempTree&, const Resolution&)>;

struct ResolveCase {
  const char* name;
  std::function<void(const TempTree&, ResolveContext&)> setup;  // extra files, context edits
  std::string policy;
  Check check;                // for a success
  std::string error_pointer;  // for a failure: the message starts with "<pointer>: "
  std::string error_detail;   // ... and contains this (with "@" replaced by the temp root)
};

std::vector<PathRule> rules(std::initializer_list<std::pair<std::string, Access>> items) {
  std::vector<PathRule> out;
  for (const auto& [path, access] : items) out.push_back(PathRule{path, access});
  return out;
}

void no_setup(const TempTree&, ResolveContext&) {}

std::string replace_root(std::string text, const std::string& root) {
  for (std::size_t at = text.find('@'); at != std::string::npos; at = text.find('@', at)) {
    text.replace(at, 1, root);
    at += root.size();
  }
  return text;
}

constexpr Access r = Access::kRead;
constexpr Access w = Access::kWrite;
constexpr Access d = Access::kDeny;

std::vector<ResolveCase> resolve_cases() {
  return {
      {"tie_write_beats_read", no_setup,
       entries_policy(R"({"path": ":cwd", "access": "read"}, {"path": ":cwd", "access": "write"})"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{t / "cwd", w}}));
       },
       "", ""},
      {"tie_deny_beats_write_across_spellings", no_setup,
       entries_policy(
           R"({"path": ":cwd/sub", "access": "write"}, {"path": ":cwd//sub/", "access": "deny"},
                         {"path": ":cwd/sub", "access": "read"})"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{t / "cwd/sub", d}}));
       },
       "", ""},
      {"cwd_sub_and_root", no_setup,
       entries_policy(
           R"({"path": ":root", "access": "read"}, {"path": ":cwd/sub", "access": "write"},
                         {"path": ":cwd", "access": "read"})"),
       [](const TempTree& t, const Resolution& res) {
         // Sorted by depth, then path: parents before children.
         EXPECT_EQ(res.policy.rules, rules({{"/", r}, {t / "cwd", r}, {t / "cwd/sub", w}}));
         EXPECT_EQ(writable_roots(res.policy), std::vector<std::string>{t / "cwd/sub"});
       },
       "", ""},
      {"cwd_sub_missing_stays_lexical", no_setup,
       entries_policy(R"({"path": ":cwd/not/yet", "access": "write"})"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{t / "cwd/not/yet", w}}));
       },
       "", ""},
      {"home_and_tilde_paths", no_setup,
       entries_policy(R"({"path": "~", "access": "read"}, {"path": "~/.ssh", "access": "deny"})"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{t / "home", r}, {t / "home/.ssh", d}}));
         EXPECT_EQ(rule_access(res.policy, t / "home/.ssh/id_rsa"), d);
         EXPECT_EQ(rule_access(res.policy, t / "home/notes"), r);
       },
       "", ""},
      {"tilde_without_home", [](const TempTree&, ResolveContext& c) { c.home.clear(); },
       entries_policy(
           R"({"path": ":root", "access": "read"}, {"path": "~/.ssh", "access": "deny"})"),
       nullptr, "/filesystem/entries/1/path", "\"~/.ssh\" needs the home directory"},
      // bwrap expands a glob below its literal directories and refuses one with none at the
      // run; resolution refuses it first, so `policy check` does too (issue #32, 6c).
      {"glob_without_literal_directory", no_setup,
       entries_policy(R"({"glob": "/**/*.pem", "access": "deny"})"), nullptr,
       "/filesystem/entries/0/glob", "has no literal directory before its first wildcard"},
      {"glob_with_wildcard_first_directory", no_setup,
       entries_policy(
           R"({"glob": "/etc/x", "access": "deny"}, {"glob": "/*/id_rsa", "access": "deny"})"),
       nullptr, "/filesystem/entries/1/glob", "walk the whole filesystem"},
      {"tilde_glob_without_home", [](const TempTree&, ResolveContext& c) { c.home = "relative"; },
       entries_policy(R"({"glob": "~/.aws/**", "access": "deny"})"), nullptr,
       "/filesystem/entries/0/glob", "needs the home directory"},
      {"deny_globs_anchored", no_setup,
       entries_policy(
           R"({"glob": "*.pem", "access": "deny"}, {"glob": "secrets/*.key", "access": "deny"},
                         {"glob": "/etc/**/shadow", "access": "deny"}, {"glob": "~/.aws/**", "access": "deny"},
                         {"glob": "**/*.pem", "access": "deny"}, {"glob": ":cwd/many/*.pem", "access": "deny"},
                         {"glob": ":cwd//**/*.key", "access": "deny"}, {"glob": "\\:cwd/x", "access": "deny"})"),
       [](const TempTree& t, const Resolution& res) {
         // "*.pem" (no '/') matches at any depth, so it equals the explicit "**/*.pem": deduped.
         // ":cwd/" is the working directory, as in an entry (issue #32: it was taken as a
         // directory named ":cwd" below it); an escaped "\:cwd" is that literal name.
         EXPECT_EQ(
             res.policy.deny_globs,
             (std::vector<std::string>{t / "cwd/**/*.pem", t / "cwd/secrets/*.key",
                                       "/etc/**/shadow", t / "home/.aws/**", t / "cwd/many/*.pem",
                                       t / "cwd/**/*.key", t / "cwd/\\:cwd/x"}));
         EXPECT_TRUE(res.policy.rules.empty());
       },
       "", ""},
      {"protected_names_existing_and_missing",
       [](const TempTree& t, ResolveContext&) {
         t.dir("cwd/.git");
         t.file("cwd/.agents", "a file");
       },
       entries_policy(
           R"({"path": ":cwd", "access": "write"}, {"path": ":root", "access": "read"})"),
       [](const TempTree& t, const Resolution& res) {
         std::string cwd = t / "cwd";
         EXPECT_EQ(res.policy.protected_paths,
                   (std::vector<ProtectedPath>{{cwd + "/.agents", cwd, true, false},
                                               {cwd + "/.codex", cwd, false, false},
                                               {cwd + "/.git", cwd, true, true}}));
       },
       "", ""},
      {"protected_names_only_under_writable_roots", no_setup,
       entries_policy(R"({"path": ":cwd", "access": "read"}, {"path": "~", "access": "read"})"),
       [](const TempTree&, const Resolution& res) {
         EXPECT_TRUE(res.policy.protected_paths.empty());
       },
       "", ""},
      {"protected_names_custom_list", no_setup,
       entries_policy(R"({"path": ":cwd/sub", "access": "write"})",
                      R"(, "protected_names": [".hg"])"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.protected_paths,
                   (std::vector<ProtectedPath>{{t / "cwd/sub/.hg", t / "cwd/sub", false, false}}));
       },
       "", ""},
      {"protected_names_nested_roots", no_setup,
       entries_policy(
           R"({"path": ":cwd", "access": "write"}, {"path": ":cwd/sub", "access": "write"})",
           R"(, "protected_names": [".git"])"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.protected_paths,
                   (std::vector<ProtectedPath>{{t / "cwd/.git", t / "cwd", false, false},
                                               {t / "cwd/sub/.git", t / "cwd/sub", false, false}}));
       },
       "", ""},
      {"protected_symlink_is_protected_as_itself",
       [](const TempTree& t, ResolveContext&) { t.symlink(t / "elsewhere", "cwd/.codex"); },
       entries_policy(R"({"path": ":cwd", "access": "write"})",
                      R"(, "protected_names": [".codex"])"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.protected_paths,
                   (std::vector<ProtectedPath>{{t / "cwd/.codex", t / "cwd", true, false}}));
       },
       "", ""},
      {"git_file_with_relative_gitdir",
       [](const TempTree& t, ResolveContext&) {
         // A linked worktree: .git is a file naming its gitdir, which names the common dir.
         t.dir("main/.git/worktrees/wt");
         t.file("main/.git/worktrees/wt/commondir", "../..\n");
         t.file("cwd/.git", "gitdir: ../main/.git/worktrees/wt\n");
       },
       entries_policy(R"({"path": ":cwd", "access": "write"})", R"(, "protected_names": [".git"])"),
       [](const TempTree& t, const Resolution& res) {
         std::string cwd = t / "cwd";
         EXPECT_EQ(res.policy.protected_paths,
                   (std::vector<ProtectedPath>{{cwd + "/.git", cwd, true, false},
                                               {t / "main/.git", cwd, true, true},
                                               {t / "main/.git/worktrees/wt", cwd, true, true}}));
         EXPECT_TRUE(res.notes.empty());
       },
       "", ""},
      {"git_file_with_missing_absolute_gitdir",
       [](const TempTree& t, ResolveContext&) {
         t.file("cwd/.git", "gitdir:   " + (t / "modules/gone") + "  \n");
       },
       entries_policy(R"({"path": ":cwd", "access": "write"})", R"(, "protected_names": [".git"])"),
       [](const TempTree& t, const Resolution& res) {
         std::string cwd = t / "cwd";
         EXPECT_EQ(res.policy.protected_paths,
                   (std::vector<ProtectedPath>{{cwd + "/.git", cwd, true, false},
                                               {t / "modules/gone", cwd, false, false}}));
         ASSERT_EQ(res.notes.size(), 1u);
         EXPECT_NE(res.notes[0].find("does not exist; it is protected from being created"),
                   std::string::npos);
       },
       "", ""},
      {"git_file_without_gitdir_line",
       [](const TempTree& t, ResolveContext&) { t.file("cwd/.git", "not a pointer\n"); },
       entries_policy(R"({"path": ":cwd", "access": "write"})", R"(, "protected_names": [".git"])"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.protected_paths,
                   (std::vector<ProtectedPath>{{t / "cwd/.git", t / "cwd", true, false}}));
         ASSERT_EQ(res.notes.size(), 1u);
       },
       "", ""},
      {"symlinked_writable_root_rejected",
       [](const TempTree& t, ResolveContext&) { t.symlink(t / "elsewhere", "cwd/link"); },
       entries_policy(
           R"({"path": ":root", "access": "read"}, {"path": ":cwd/link", "access": "write"})"),
       nullptr, "/filesystem/entries/1",
       "writable root @/cwd/link: @/cwd/link is a symlink to @/elsewhere; name the real directory "
       "instead"},
      {"root_through_symlink_in_writable_dir_rejected",
       [](const TempTree& t, ResolveContext&) {
         t.dir("elsewhere/inner");
         t.symlink(t / "elsewhere", "cwd/link");
       },
       entries_policy(
           R"({"path": ":cwd", "access": "write"}, {"path": ":cwd/link/inner", "access": "write"})"),
       nullptr, "/filesystem/entries/1",
       "writable root @/cwd/link/inner: @/cwd/link is a symlink to @/elsewhere inside the "
       "writable directory @/cwd, so the sandboxed command could replace it"},
      {"root_through_read_only_symlink_followed",
       [](const TempTree& t, ResolveContext&) {
         t.dir("elsewhere/inner");
         t.symlink(t / "elsewhere", "cwd/link");
       },
       entries_policy(
           R"({"path": ":cwd", "access": "read"}, {"path": ":cwd/link/inner", "access": "write"})"),
       [](const TempTree& t, const Resolution& res) {
         // cwd/ is read-only for the command, so it cannot swap the link: resolved, not refused.
         EXPECT_EQ(res.policy.rules, rules({{t / "cwd", r}, {t / "elsewhere/inner", w}}));
       },
       "", ""},
      {"read_entry_through_symlink_canonicalised",
       [](const TempTree& t, ResolveContext&) { t.symlink(t / "elsewhere", "cwd/link"); },
       entries_policy(
           R"({"path": ":cwd", "access": "write"}, {"path": ":cwd/link", "access": "deny"})"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{t / "cwd", w}, {t / "elsewhere", d}}));
       },
       "", ""},
      {"tmpdir_from_environment",
       [](const TempTree& t, ResolveContext& c) {
         t.dir("tmp//x/");
         c.env["TMPDIR"] = t / "tmp//x/";
       },
       entries_policy(R"({"path": ":tmpdir", "access": "write"})"),
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{t / "tmp/x", w}}));
         EXPECT_TRUE(res.notes.empty());
       },
       "", ""},
      {"tmpdir_unset_dropped_with_note", no_setup,
       entries_policy(
           R"({"path": ":root", "access": "read"}, {"path": ":tmpdir", "access": "write"})"),
       [](const TempTree&, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{"/", r}}));
         EXPECT_EQ(res.notes,
                   std::vector<std::string>{
                       "/filesystem/entries/1/path: :tmpdir dropped: TMPDIR is not set"});
       },
       "", ""},
      {"tmpdir_relative_dropped",
       [](const TempTree&, ResolveContext& c) { c.env["TMPDIR"] = "tmp"; },
       entries_policy(R"({"path": ":tmpdir", "access": "write"})"),
       [](const TempTree&, const Resolution& res) {
         EXPECT_TRUE(res.policy.rules.empty());
         ASSERT_EQ(res.notes.size(), 1u);
         EXPECT_NE(res.notes[0].find("is not absolute"), std::string::npos);
       },
       "", ""},
      {"tmpdir_missing_dropped",
       [](const TempTree& t, ResolveContext& c) { c.env["TMPDIR"] = t / "nope"; },
       entries_policy(R"({"path": ":tmpdir", "access": "write"})"),
       [](const TempTree&, const Resolution& res) {
         EXPECT_TRUE(res.policy.rules.empty());
         ASSERT_EQ(res.notes.size(), 1u);
         EXPECT_NE(res.notes[0].find("is not an existing directory"), std::string::npos);
       },
       "", ""},
      {"slash_tmp_and_minimal", no_setup,
       entries_policy(
           R"({"path": ":slash_tmp", "access": "write"}, {"path": ":minimal", "access": "read"})"),
       [](const TempTree&, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{fs::canonical("/tmp").string(), w}}));
         EXPECT_TRUE(res.policy.platform_defaults_readable);
       },
       "", ""},
      {"unrestricted_has_no_rules", no_setup, R"({"version": 1, "preset": "danger-full-access"})",
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.filesystem_kind, FilesystemKind::kUnrestricted);
         EXPECT_TRUE(res.policy.rules.empty());
         EXPECT_TRUE(res.policy.protected_paths.empty());
         EXPECT_EQ(res.policy.network.mode, NetworkMode::kEnabled);
         EXPECT_EQ(res.policy.cwd, t / "cwd");
       },
       "", ""},
      {"workspace_write_preset",
       [](const TempTree& t, ResolveContext& c) { c.env["TMPDIR"] = t / "home"; },
       R"({"version": 1, "preset": "workspace-write", "exclude_slash_tmp": true})",
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.rules, rules({{"/", r}, {t / "cwd", w}, {t / "home", w}}));
         EXPECT_FALSE(reads_restricted(res.policy));
         EXPECT_EQ(res.policy.protected_paths.size(), 6u);  // 3 names x 2 writable roots
       },
       "", ""},
      {"unix_sockets_expanded", no_setup,
       R"({"version": 1, "network": {"unix_sockets": ["~/agent.sock", "/run//x.sock"]}})",
       [](const TempTree& t, const Resolution& res) {
         EXPECT_EQ(res.policy.network.unix_sockets,
                   (std::vector<std::string>{t / "home/agent.sock",
                                             fs::weakly_canonical("/run").string() + "/x.sock"}));
       },
       "", ""},
      {"cwd_must_be_absolute", [](const TempTree&, ResolveContext& c) { c.cwd = "rel/dir"; },
       entries_policy(R"({"path": ":root", "access": "read"})"), nullptr, "",
       "cannot resolve the policy: the working directory \"rel/dir\" is not an absolute path"},
  };
}

TEST(Resolve, TableOfCases) {
  std::size_t ran = 0;
  for (const ResolveCase& c : resolve_cases()) {
    SCOPED_TRACE(c.name);
    TempTree tree;
    ResolveContext context = standard_context(tree);
    c.setup(tree, context);
    Result<Resolution> resolved = resolve_policy_with_notes(parse_resolvable(c.policy), context);
    ++ran;
    if (c.check) {
      ASSERT_TRUE(resolved.ok()) << resolved.error();
      c.check(tree, *resolved);
      continue;
    }
    ASSERT_FALSE(resolved.ok()) << "resolved although an error was expected";
    const std::string& message = resolved.error();
    if (!c.error_pointer.empty()) {
      EXPECT_EQ(message.substr(0, c.error_pointer.size() + 2), c.error_pointer + ": ") << message;
    }
    EXPECT_NE(message.find(replace_root(c.error_detail, tree.root())), std::string::npos)
        << message;
  }
  EXPECT_GE(ran, 28u);
}

TEST(Resolve, TiesAcrossSpellings) {
  // ":cwd", its absolute spelling and "~/../cwd"-free aliases all land on one rule.
  TempTree tree;
  ResolveContext context = standard_context(tree);
  Policy policy = parse_resolvable(entries_policy(
      R"({"path": ":cwd", "access": "write"}, {"path": ")" + tree / "cwd" +
      R"(/", "access": "read"}, {"path": ")" + tree.root() + R"(//cwd", "access": "deny"})"));
  Result<ResolvedPolicy> resolved = resolve_policy(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->rules, rules({{tree / "cwd", Access::kDeny}}));
}

TEST(Resolve, GlobThroughSymlinkIsCanonicalised) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.symlink(tree / "elsewhere", "alias");
  Policy policy = parse_resolvable(
      entries_policy(R"({"glob": ")" + tree / "alias" + R"(/keys/**/*.pem", "access": "deny"})"));
  Result<ResolvedPolicy> resolved = resolve_policy(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->deny_globs, std::vector<std::string>{tree / "elsewhere/keys/**/*.pem"});
}

TEST(Resolve, SymlinkedAbsoluteWritableRootNamesTheSymlink) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.symlink(tree / "elsewhere", "w");
  Policy policy =
      parse_resolvable(R"({"version": 1, "preset": "workspace-write", "writable_roots": [")" +
                       tree / "w" + R"("]})");
  Result<ResolvedPolicy> resolved = resolve_policy(policy, context);
  ASSERT_FALSE(resolved.ok());
  // The writable root is the fifth entry of the expanded full form.
  EXPECT_EQ(resolved.error(), "/filesystem/entries/4: writable root " + tree / "w" + ": " +
                                  tree / "w" + " is a symlink to " + tree / "elsewhere" +
                                  "; name the real directory instead");
}

TEST(Resolve, HandBuiltPolicyIsValidatedFirst) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  Policy policy;
  policy.filesystem.entries.push_back(PolicyEntry{"", "*.pem", Access::kRead});
  Result<ResolvedPolicy> resolved = resolve_policy(policy, context);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().rfind("/filesystem/entries/0/access: globs are deny-only", 0), 0u);
}

TEST(Resolve, CurrentContextDescribesThisProcess) {
  Result<ResolveContext> context = current_resolve_context();
  ASSERT_TRUE(context.ok()) << context.error();
  EXPECT_EQ(context->cwd, fs::current_path().string());
  ASSERT_FALSE(context->home.empty());
  EXPECT_EQ(context->home.front(), '/');
  const char* path = ::getenv("PATH");
  ASSERT_NE(path, nullptr);
  EXPECT_EQ(context->env.at("PATH"), path);
}

// sbx's own install directories: carved out read-only (and protected) only where the policy
// would let the command write them.
TEST(ResolveInstall, CarvedOutOnlyInsideAWritableRoot) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.dir("cwd/prefix/lib");
  tree.dir("elsewhere/lib");
  context.install_dirs = {tree / "cwd/prefix/lib", tree / "elsewhere/lib"};
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->policy.rules, rules({{"/", Access::kRead},
                                           {tree / "cwd", Access::kWrite},
                                           {tree / "cwd/prefix/lib", Access::kRead}}));
  EXPECT_EQ(resolved->policy.protected_paths,
            (std::vector<ProtectedPath>{{tree / "cwd/prefix/lib", tree / "cwd", true, true}}));
  EXPECT_EQ(resolved->install_carveouts, std::vector<std::string>{tree / "cwd/prefix/lib"});
}

// An install's whole prefix is carved out (share/ with the completions and schema, include/,
// anything else in it), not only the directories holding code.
TEST(ResolveInstall, TheWholePrefixIsCarvedOut) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.dir("cwd/prefix/lib");
  tree.dir("cwd/prefix/share/bash-completion/completions");
  context.install_prefixes = {tree / "cwd/prefix"};
  context.install_dirs = {tree / "cwd/prefix/lib"};
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},)"
                     R"({"path": ":cwd/prefix/share", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->install_carveouts, std::vector<std::string>{tree / "cwd/prefix"});
  EXPECT_EQ(
      rule_access(resolved->policy, tree / "cwd/prefix/share/bash-completion/completions/sbx"),
      Access::kRead);
  EXPECT_EQ(rule_access(resolved->policy, tree / "cwd/prefix/include/sbx/x.h"), Access::kRead);
  EXPECT_EQ(rule_access(resolved->policy, tree / "cwd/other"), Access::kWrite);
}

// A prefix holding the working directory (or the home directory, or "/") is not carved out
// whole — the workspace would become read-only — only its install directories are.
TEST(ResolveInstall, APrefixHoldingTheWorkspaceKeepsOnlyItsDirectories) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.dir("share/sbx");
  context.install_prefixes = {tree.root(), "/"};
  context.install_dirs = {tree / "share"};
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},)"
                     R"({"path": ")" +
                         tree.root() + R"(", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->install_carveouts, std::vector<std::string>{tree / "share"});
  EXPECT_EQ(rule_access(resolved->policy, tree / "cwd/sub"), Access::kWrite);
  EXPECT_EQ(rule_access(resolved->policy, tree / "home/.ssh"), Access::kWrite);
  EXPECT_EQ(rule_access(resolved->policy, tree / "share/sbx"), Access::kRead);
}

// A settings file whose ancestor's name is taken by something that is not a directory (a
// socket an interrupted run of an older sbx left at ~/.config): that object is kept as it is,
// and nothing is masked below it (bwrap could not make the parents of such a mask).
TEST(ResolveSettingsFiles, ANonDirectoryAncestorIsKeptNotMaskedBelow) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.file("home/.config", "");
  context.absent_settings_files = {tree / "home/.config/sbx/settings.json"};
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": "~", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<ResolvedPolicy> resolved = resolve_policy(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(rule_access(*resolved, tree / "home/.config"), Access::kRead);
  EXPECT_EQ(resolved->protected_paths,
            (std::vector<ProtectedPath>{{tree / "home/.config", tree / "home", true, false}}));
  EXPECT_TRUE(fs::is_regular_file(tree / "home/.config"));
}

// A dangling symlink at the ancestor's name could be replaced by a directory: it is kept
// read-only by its own name (which bwrap refuses to enforce: fail closed), never skipped.
TEST(ResolveSettingsFiles, ADanglingSymlinkAncestorIsKeptByItsName) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.symlink(tree / "nowhere", "home/.config");
  context.absent_settings_files = {tree / "home/.config/sbx/settings.json"};
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": "~", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<ResolvedPolicy> resolved = resolve_policy(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(rule_access(*resolved, tree / "home/.config"), Access::kRead);
  EXPECT_EQ(resolved->protected_paths,
            (std::vector<ProtectedPath>{{tree / "home/.config", tree / "home", true, false}}));
  EXPECT_FALSE(fs::exists(tree / "nowhere"));
}

// The policy file given with --policy: its real path is carved out read-only (and protected)
// only where the policy would let the command write it; a symlink to it is followed.
TEST(ResolvePolicyFile, CarvedOutByItsRealPathInsideAWritableRoot) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.file("cwd/conf/pol.json", "{}");
  fs::create_symlink(tree / "cwd/conf/pol.json", tree / "cwd/link.json");
  context.policy_file = tree / "cwd/link.json";
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->policy.rules, rules({{"/", Access::kRead},
                                           {tree / "cwd", Access::kWrite},
                                           {tree / "cwd/conf/pol.json", Access::kRead}}));
  EXPECT_EQ(resolved->policy.protected_paths,
            (std::vector<ProtectedPath>{{tree / "cwd/conf/pol.json", tree / "cwd", true, false}}));
  EXPECT_EQ(resolved->policy_file_carveout, tree / "cwd/conf/pol.json");
}

TEST(ResolvePolicyFile, NothingAddedOutsideTheWritableRoots) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.file("elsewhere/pol.json", "{}");
  context.policy_file = tree / "elsewhere/pol.json";
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->policy.rules, rules({{"/", Access::kRead}, {tree / "cwd", Access::kWrite}}));
  EXPECT_TRUE(resolved->policy.protected_paths.empty());
  EXPECT_TRUE(resolved->policy_file_carveout.empty());
}

TEST(ResolveInstall, NothingAddedWhenNoInstallDirectoryIsWritable) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.dir("elsewhere/lib");
  context.install_dirs = {tree / "elsewhere/lib"};
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->policy.rules, rules({{"/", Access::kRead}, {tree / "cwd", Access::kWrite}}));
  EXPECT_TRUE(resolved->policy.protected_paths.empty());
  EXPECT_TRUE(resolved->install_carveouts.empty());
}

TEST(ResolveInstall, WritableRootInsideTheInstallBecomesReadOnly) {
  // The policy names the plugin directory itself as writable: it still may not be written.
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.dir("elsewhere/lib/sbx/backends");
  context.install_dirs = {tree / "elsewhere/lib"};
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ")" +
                         tree / "elsewhere/lib/sbx/backends" + R"(", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->policy.rules, rules({{"/", Access::kRead},
                                           {tree / "elsewhere/lib", Access::kRead},
                                           {tree / "elsewhere/lib/sbx/backends", Access::kRead}}));
  EXPECT_EQ(resolved->install_carveouts, std::vector<std::string>{tree / "elsewhere/lib"});
}

// sbx's state directories (issue #32 B2): a writable root at or inside one is refused with the
// reason, for every backend; a writable root holding one carves it out like the install.
TEST(ResolveStateDir, AWritableRootInsideAStateDirectoryIsRefused) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.dir("home/.cache/sbx/bwrap");
  context.state_dirs = {tree / "home/.cache/sbx/bwrap", tree / "home/.cache/sbx"};
  context.install_dirs = context.state_dirs;
  for (const std::string& root : {tree / "home/.cache/sbx/bwrap", tree / "home/.cache/sbx"}) {
    Policy policy = parse_resolvable(entries_policy(
        R"({"path": ":root", "access": "read"}, {"path": ")" + root + R"(", "access": "write"})",
        R"(, "protected_names": [])"));
    Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
    ASSERT_FALSE(resolved.ok()) << root;
    EXPECT_NE(
        resolved.error().find("writable root '" + root + "' lies inside sbx's state directory '"),
        std::string::npos)
        << resolved.error();
  }
}

TEST(ResolveStateDir, AWritableRootHoldingAStateDirectoryCarvesItOut) {
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.dir("home/.cache/sbx/bwrap");
  context.state_dirs = {tree / "home/.cache/sbx/bwrap", tree / "home/.cache/sbx"};
  context.install_dirs = context.state_dirs;
  Policy policy =
      parse_resolvable(entries_policy(R"({"path": ":root", "access": "read"}, {"path": ")" +
                                          tree / "home" + R"(", "access": "write"})",
                                      R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(rule_access(resolved->policy, tree / "home/.cache/sbx"), Access::kRead);
  EXPECT_EQ(rule_access(resolved->policy, tree / "home/.cache/sbx/bwrap"), Access::kRead);
  EXPECT_EQ(rule_access(resolved->policy, tree / "home/.cache"), Access::kWrite);
}

TEST(ResolveInstall, SymlinkedLayoutProtectsBothNames) {
  // libexec is a symlink inside the prefix: the layout's name and the real directory are both
  // kept read-only.
  TempTree tree;
  ResolveContext context = standard_context(tree);
  tree.file("cwd/prefix/lib/libsbx.so.0", "");
  tree.dir("cwd/prefix/lib/sbx/backends");
  tree.dir("cwd/prefix/real-libexec/sbx");
  tree.symlink(tree / "cwd/prefix/real-libexec", "cwd/prefix/libexec");
  InstallLayout layout;
  layout.libsbx_path = tree / "cwd/prefix/lib/libsbx.so.0";
  layout.plugin_dir = tree / "cwd/prefix/lib/sbx/backends";
  layout.stage2_path = tree / "cwd/prefix/libexec/sbx/sbx-stage2";
  layout.bin_dir = tree / "cwd/prefix/bin";  // missing: nothing to protect
  context.install_dirs = install_directories(layout);
  EXPECT_EQ(context.install_dirs,
            (std::vector<std::string>{tree / "cwd/prefix/lib", tree / "cwd/prefix/lib/sbx/backends",
                                      tree / "cwd/prefix/libexec/sbx",
                                      tree / "cwd/prefix/real-libexec/sbx"}));
  Policy policy = parse_resolvable(
      entries_policy(R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"})",
                     R"(, "protected_names": [])"));
  Result<Resolution> resolved = resolve_policy_with_notes(policy, context);
  ASSERT_TRUE(resolved.ok()) << resolved.error();
  EXPECT_EQ(resolved->install_carveouts,
            (std::vector<std::string>{tree / "cwd/prefix/lib", tree / "cwd/prefix/libexec/sbx",
                                      tree / "cwd/prefix/real-libexec/sbx"}));
  EXPECT_EQ(rule_access(resolved->policy, tree / "cwd/prefix/real-libexec/sbx/sbx-stage2"),
            Access::kRead);
  EXPECT_EQ(rule_access(resolved->policy, tree / "cwd/prefix/lib/sbx/backends/x.so"),
            Access::kRead);
}

TEST(ResolveInstall, ProcessContextNamesTheRunningInstallAndTheKeptProbeStore) {
  // current_resolve_context() fills in the directories of the libsbx this test runs with, and
  // the store of kept probe answers in the runtime directory, created before anything runs.
  // mkdtemp: this user's own 0700 directory, not below /tmp (a runtime directory there is not
  // used: sbx/sdk/private_state.hpp why_shared_path).
  const sbx::test::TempDir runtime(sbx::test::private_parent());
  const char* previous = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = previous != nullptr ? previous : "";
  ::setenv("XDG_RUNTIME_DIR", runtime.path().c_str(), 1);
  Result<ResolveContext> context = current_resolve_context();
  // Every other place a later run of this user could use (issue #32 B3): root's /run, or
  // /run/user/<uid> and the cache.
  const private_state::Sources sources = private_state::current_sources();
  std::vector<std::string> others =
      private_state::candidate_state_dirs(sources, {"probe", "proxy", "bwrap"});
  if (previous != nullptr)
    ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  else
    ::unsetenv("XDG_RUNTIME_DIR");
  ASSERT_TRUE(context.ok()) << context.error();
  Result<InstallLayout> layout = install_layout();
  ASSERT_TRUE(layout.ok()) << layout.error();
  std::vector<std::string> state = {runtime / "sbx-probe",
                                    runtime / "sbx-proxy",   // the proxy's sockets, also kept
                                    runtime / "sbx-bwrap"};  // bwrap's registry, likewise
  ASSERT_GE(others.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(others.begin(), others.begin() + 3), state);
  state.insert(state.end(), others.begin() + 3, others.end());
  const std::string fallback =
      sources.root_run.empty() ? sources.home + "/.cache/sbx" : "/run/sbx-bwrap";
  EXPECT_NE(std::find(state.begin(), state.end(), fallback), state.end()) << fallback;
  // Root with /run: its toolchain caches directory, once a run with ":caches" made it (its
  // other state is all in /run; probe_store.cpp).
  if (sources.uid == 0 && !sources.root_run.empty()) {
    for (const std::string& cache_home :
         {sources.xdg_cache_home, sources.home.empty() ? std::string() : sources.home + "/.cache",
          sources.passwd_home.empty() ? std::string() : sources.passwd_home + "/.cache"}) {
      if (cache_home.empty() || cache_home.front() != '/') continue;
      const std::string caches = cache_home + "/sbx/caches";
      struct stat st {};
      if (::lstat(caches.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          std::find(state.begin(), state.end(), caches) == state.end())
        state.push_back(caches);
    }
  }
  std::vector<std::string> expected = install_directories(*layout);
  expected.insert(expected.end(), state.begin(), state.end());
  EXPECT_EQ(context->install_dirs, expected);
  EXPECT_EQ(context->state_dirs, state);
  struct stat st {};
  ASSERT_EQ(::lstat((runtime / "sbx-probe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

}  // namespace
}  // namespace sbx
