// Toolchain caches (sbx/core/caches.hpp, the policy entry ":caches"): where the tools cache, as
// found from their variables; the variables a sandboxed command gets; npm's credential check;
// the project's key; and what resolution makes of the entry: the project's data directory the
// only new write rule, the host's caches kept read-only or uncreatable where a writable root
// reaches them, credentials denied; `sbx cache clear`'s removal never following a symlink.
#include "sbx/core/caches.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sbx/core/policy.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using caches::CachePlan;
using caches::Found;
using caches::Platform;
using caches::ToolCache;

const ToolCache* cache_of(const std::vector<ToolCache>& caches, const std::string& tool) {
  const auto it = std::find_if(caches.begin(), caches.end(),
                               [&](const ToolCache& cache) { return cache.tool == tool; });
  return it == caches.end() ? nullptr : &*it;
}

// Every host path listed for `tool`, in order.
std::vector<std::string> paths_of(const std::vector<ToolCache>& caches, const std::string& tool) {
  std::vector<std::string> out;
  for (const ToolCache& cache : caches)
    if (cache.tool == tool) out.push_back(cache.host_path);
  return out;
}

// A ConfigReader over fixed texts: a path not in `files` does not exist; "!" reads as an error.
caches::ConfigReader reader(std::map<std::string, std::string> files) {
  return [files = std::move(files)](const std::string& path) -> Result<std::optional<std::string>> {
    const auto it = files.find(path);
    if (it == files.end()) return std::optional<std::string>();
    if (it->second == "!") return Error{"unreadable"};
    return std::optional<std::string>(it->second);
  };
}

bool lists_credential(const Found& found, const std::string& path) {
  return std::any_of(found.credentials.begin(), found.credentials.end(),
                     [&](const caches::CredentialFile& file) { return file.path == path; });
}

TEST(FindToolCaches, WithoutVariablesEachToolsOwnDefaultBelowTheHome) {
  const Found found = caches::find_tool_caches({}, "/h", Platform::kLinux);
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"XDG cache", {"/h/.cache", "XDG_CACHE_HOME"}},
      {"npm", {"/h/.npm", "npm_config_cache"}},
      {"pip", {"/h/.cache/pip", "PIP_CACHE_DIR"}},
      {"cargo registry", {"/h/.cargo/registry", "CARGO_HOME"}},
      {"cargo git", {"/h/.cargo/git", "CARGO_HOME"}},
      {"go build", {"/h/.cache/go-build", "GOCACHE"}},
      {"go modules", {"/h/go/pkg/mod", "GOMODCACHE"}},
      {"gradle caches", {"/h/.gradle/caches", "GRADLE_USER_HOME"}},
      {"gradle wrapper", {"/h/.gradle/wrapper", "GRADLE_USER_HOME"}},
      {"maven", {"/h/.m2/repository", "MAVEN_OPTS"}}};
  EXPECT_EQ(found.caches.size(), expected.size());
  for (const auto& [tool, where] : expected) {
    const ToolCache* cache = cache_of(found.caches, tool);
    ASSERT_NE(cache, nullptr) << tool;
    EXPECT_EQ(cache->host_path, where.first) << tool;
    EXPECT_EQ(cache->variable, where.second) << tool;
    EXPECT_FALSE(cache->exists) << tool;
  }
  EXPECT_EQ(cache_of(found.caches, "npm")->source, "~/.npm ($npm_config_cache unset)");
  EXPECT_EQ(cache_of(found.caches, "pip")->source,
            "~/.cache/pip ($PIP_CACHE_DIR and $XDG_CACHE_HOME unset)");
  for (const char* file :
       {"/h/.cargo/credentials.toml", "/h/.cargo/credentials", "/h/.npmrc", "/h/.m2/settings.xml",
        "/h/.m2/settings-security.xml", "/h/.gradle/gradle.properties"})
    EXPECT_TRUE(lists_credential(found, file)) << file;
}

TEST(FindToolCaches, TheToolsVariablesDecideAndRelativeValuesAreIgnored) {
  const Found found = caches::find_tool_caches({{"XDG_CACHE_HOME", "/x"},
                                                {"NPM_CONFIG_CACHE", "/npm-upper"},
                                                {"CARGO_HOME", "/c"},
                                                {"GOPATH", "/g1:/g2"},
                                                {"GRADLE_USER_HOME", "/gr"},
                                                {"PIP_CACHE_DIR", "relative/pip"},
                                                {"npm_config_userconfig", "/u/npmrc"}},
                                               "/h", Platform::kLinux);
  EXPECT_EQ(cache_of(found.caches, "XDG cache")->host_path, "/x");
  EXPECT_EQ(cache_of(found.caches, "XDG cache")->source, "$XDG_CACHE_HOME");
  EXPECT_EQ(cache_of(found.caches, "npm")->host_path, "/npm-upper");
  EXPECT_EQ(cache_of(found.caches, "npm")->source, "$NPM_CONFIG_CACHE");
  // A relative PIP_CACHE_DIR names no directory this run can know: pip's default applies.
  EXPECT_EQ(cache_of(found.caches, "pip")->host_path, "/x/pip");
  EXPECT_EQ(cache_of(found.caches, "pip")->source, "$XDG_CACHE_HOME/pip ($PIP_CACHE_DIR unset)");
  EXPECT_EQ(cache_of(found.caches, "cargo registry")->host_path, "/c/registry");
  EXPECT_EQ(cache_of(found.caches, "go build")->host_path, "/x/go-build");
  EXPECT_EQ(cache_of(found.caches, "go modules")->host_path, "/g1/pkg/mod");
  EXPECT_EQ(cache_of(found.caches, "gradle caches")->host_path, "/gr/caches");
  EXPECT_TRUE(lists_credential(found, "/c/credentials.toml"));
  EXPECT_TRUE(lists_credential(found, "/u/npmrc"));
  EXPECT_TRUE(lists_credential(found, "/gr/gradle.properties"));

  const Found lower = caches::find_tool_caches({{"npm_config_cache", "/lower"},
                                                {"NPM_CONFIG_CACHE", "/upper"},
                                                {"GOMODCACHE", "/mod"},
                                                {"GOPATH", "/g1"},
                                                {"GOCACHE", "/gc"},
                                                {"PIP_CACHE_DIR", "/p"}},
                                               "/h", Platform::kLinux);
  // npm reads both spellings, and which one wins depends on the environment's order: each
  // is kept.
  EXPECT_EQ(paths_of(lower.caches, "npm"), (std::vector<std::string>{"/upper", "/lower"}));
  EXPECT_EQ(cache_of(lower.caches, "go modules")->host_path, "/mod");
  EXPECT_EQ(cache_of(lower.caches, "go build")->host_path, "/gc");
  EXPECT_EQ(cache_of(lower.caches, "pip")->host_path, "/p");
}

// Issue #40 F2: a cache named in npm's user configuration or a pip configuration file is the
// host's cache as much as one a variable names (npm config get cache, pip cache dir).
TEST(FindToolCaches, ConfigurationFilesNameCachesToo) {
  const Found found = caches::find_tool_caches(
      {}, "/h", Platform::kLinux,
      reader({{"/h/.npmrc", "registry=https://r/\ncache=/tmp/x-npmc\n"},
              {"/h/.config/pip/pip.conf", "[global]\ncache-dir = /tmp/x-pipc\n"}}));
  EXPECT_EQ(paths_of(found.caches, "npm"), (std::vector<std::string>{"/tmp/x-npmc"}));
  EXPECT_EQ(cache_of(found.caches, "npm")->source, "cache in ~/.npmrc");
  EXPECT_EQ(cache_of(found.caches, "npm")->variable, "npm_config_cache");
  EXPECT_EQ(paths_of(found.caches, "pip"), (std::vector<std::string>{"/tmp/x-pipc"}));
  EXPECT_EQ(cache_of(found.caches, "pip")->source, "cache-dir in ~/.config/pip/pip.conf");
  EXPECT_EQ(cache_of(found.caches, "pip")->variable, "PIP_CACHE_DIR");
  EXPECT_TRUE(found.notes.empty());
  // Without a reader nothing is read: the defaults.
  const Found pure = caches::find_tool_caches({}, "/h", Platform::kLinux);
  EXPECT_EQ(paths_of(pure.caches, "npm"), (std::vector<std::string>{"/h/.npm"}));
}

TEST(FindToolCaches, NpmsUserConfigurationAsNpmReadsIt) {
  const std::map<std::string, std::string> env = {
      {"Npm_Config_UserConfig", "/u/rc"}, {"npm_config_cache", "/env-cache"}, {"DIR", "/from-env"}};
  const auto npm_caches = [&](const std::string& text) {
    return paths_of(
        caches::find_tool_caches(env, "/h", Platform::kLinux, reader({{"/u/rc", text}})).caches,
        "npm");
  };
  const auto with = [](std::vector<std::string> more) {
    more.insert(more.begin(), "/env-cache");
    return more;
  };
  // The variable (any case) names the user configuration; the variable's cache is kept too.
  EXPECT_EQ(npm_caches("cache=/a\n"), with({"/a"}));
  EXPECT_EQ(npm_caches("cache = \"/q d\"  \n"), with({"/q d"}));
  EXPECT_EQ(npm_caches("cache='/q'\n"), with({"/q"}));
  EXPECT_EQ(npm_caches("cache=~/c\n"), with({"/h/c"}));
  EXPECT_EQ(npm_caches("cache=${DIR}/c\n"), with({"/from-env/c"}));
  EXPECT_EQ(npm_caches("cache=/a ; a comment\n"), with({"/a"}));
  EXPECT_EQ(npm_caches("cache=/first\rcache=/last\r"), with({"/last"}));  // the last one wins
  // Not a cache npm takes: in a section, another key, relative, an unset variable.
  EXPECT_EQ(npm_caches("[section]\ncache=/nested\n"), with({}));
  EXPECT_EQ(npm_caches("CACHE=/upper\n#cache=/commented\n"), with({}));
  EXPECT_EQ(npm_caches("cache=relative/dir\n"), with({}));
  EXPECT_EQ(npm_caches("cache=${UNSET}/x\n"), with({}));
  // ~/.npmrc is read too (and is a credential file) whatever the variable says: a shell
  // without it uses that one.
  const Found found =
      caches::find_tool_caches({{"NPM_CONFIG_USERCONFIG", "/u/rc"}}, "/h", Platform::kLinux,
                               reader({{"/u/rc", "cache=/a\n"}, {"/h/.npmrc", "cache=/b\n"}}));
  EXPECT_EQ(paths_of(found.caches, "npm"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_TRUE(lists_credential(found, "/u/rc"));
  EXPECT_TRUE(lists_credential(found, "/h/.npmrc"));
  EXPECT_TRUE(lists_credential(
      caches::find_tool_caches({{"Npm_Config_UserConfig", "/mixed"}}, "/h", Platform::kLinux),
      "/mixed"));
}

TEST(FindToolCaches, EveryConfigurationFilePipReads) {
  const std::map<std::string, std::string> env = {{"PIP_CONFIG_FILE", "/env/pip.conf"},
                                                  {"XDG_CONFIG_DIRS", "/xd1:relative:/xd2"},
                                                  {"XDG_CONFIG_HOME", "/xch"},
                                                  {"VIRTUAL_ENV", "/venv"}};
  const Found found = caches::find_tool_caches(
      env, "/h", Platform::kLinux,
      reader({{"/env/pip.conf", "[global]\ncache-dir=/c-env\n"},
              {"/xd1/pip/pip.conf", "[install]\ncache_dir: /c-xd1\n"},
              {"/xd2/pip/pip.conf", "[global]\n--Cache-Dir = ~/c-xd2\n"},
              {"/etc/pip.conf", "[global]\ncache-dir = /c-etc\r"},
              {"/h/.pip/pip.conf", "[global]\ncache-dir = /c-legacy\n"},
              {"/xch/pip/pip.conf", "[global]\n# cache-dir = /commented\ncache-dir = /c-user\n"},
              {"/venv/pip.conf", "[global]\ncache-dir = relative\nno-cache-dir = /x\n"},
              {"/etc/xdg/pip/pip.conf", "[global]\ncache-dir = /not-read\n"}}));
  EXPECT_EQ(
      paths_of(found.caches, "pip"),
      (std::vector<std::string>{"/c-env", "/c-xd1", "/h/c-xd2", "/c-etc", "/c-legacy", "/c-user"}));
  // Without XDG_CONFIG_DIRS: /etc/xdg; the variable's cache first.
  const Found plain =
      caches::find_tool_caches({{"PIP_CACHE_DIR", "/p"}}, "/h", Platform::kLinux,
                               reader({{"/etc/xdg/pip/pip.conf", "[global]\ncache-dir = /c-xdg\n"},
                                       {"/h/.config/pip/pip.conf", "!"}}));
  EXPECT_EQ(paths_of(plain.caches, "pip"), (std::vector<std::string>{"/p", "/c-xdg"}));
  ASSERT_EQ(plain.notes.size(), 1u);
  EXPECT_NE(plain.notes.front().find("/h/.config/pip/pip.conf could not be read (unreadable)"),
            std::string::npos)
      << plain.notes.front();
}

// yarn classic, uv, pre-commit and Playwright keep their caches in the XDG cache (kept as a
// whole) unless their variable moves them: then that directory is listed and moved.
TEST(FindToolCaches, ToolsMovedOutOfTheXdgCacheByTheirVariable) {
  const Found unmoved = caches::find_tool_caches({}, "/h", Platform::kLinux);
  for (const char* tool : {"yarn", "uv", "pre-commit", "Playwright"})
    EXPECT_EQ(cache_of(unmoved.caches, tool), nullptr) << tool;
  const Found moved = caches::find_tool_caches({{"yarn_cache_folder", "/tmp/y"},
                                                {"UV_CACHE_DIR", "/tmp/uv"},
                                                {"PRE_COMMIT_HOME", "/tmp/pc"},
                                                {"PLAYWRIGHT_BROWSERS_PATH", "/tmp/pw"}},
                                               "/h", Platform::kLinux);
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"yarn", {"/tmp/y", "YARN_CACHE_FOLDER"}},
      {"uv", {"/tmp/uv", "UV_CACHE_DIR"}},
      {"pre-commit", {"/tmp/pc", "PRE_COMMIT_HOME"}},
      {"Playwright", {"/tmp/pw", "PLAYWRIGHT_BROWSERS_PATH"}}};
  for (const auto& [tool, where] : expected) {
    const ToolCache* cache = cache_of(moved.caches, tool);
    ASSERT_NE(cache, nullptr) << tool;
    EXPECT_EQ(cache->host_path, where.first) << tool;
    EXPECT_EQ(cache->variable, where.second) << tool;
  }
  EXPECT_EQ(cache_of(moved.caches, "yarn")->source, "$yarn_cache_folder");
  // "0" (browsers in node_modules) is no directory.
  EXPECT_EQ(
      cache_of(caches::find_tool_caches({{"PLAYWRIGHT_BROWSERS_PATH", "0"}}, "/h", Platform::kLinux)
                   .caches,
               "Playwright"),
      nullptr);
  // macOS: uv and pre-commit keep ~/.cache, outside ~/Library/Caches.
  const Found macos = caches::find_tool_caches({}, "/Users/u", Platform::kMacos);
  EXPECT_EQ(paths_of(macos.caches, "uv"), (std::vector<std::string>{"/Users/u/.cache/uv"}));
  EXPECT_EQ(paths_of(macos.caches, "pre-commit"),
            (std::vector<std::string>{"/Users/u/.cache/pre-commit"}));
  EXPECT_EQ(cache_of(macos.caches, "yarn"), nullptr);
}

TEST(FindToolCaches, VariableKeysAsTheToolsFoldThem) {
  EXPECT_EQ(caches::variable_key("Npm_Config_Cache"), "npm_config_cache");
  EXPECT_EQ(caches::variable_key("NPM_CONFIG_USERCONFIG"), "npm_config_userconfig");
  EXPECT_EQ(caches::variable_key("npm_config_//r/:_authToken"), "npm_config_//r/:_authtoken");
  EXPECT_EQ(caches::variable_key("yarn_cache-folder"), "YARN_CACHE_FOLDER");
  EXPECT_EQ(caches::variable_key("PIP_cache-dir"), "PIP_CACHE_DIR");
  EXPECT_EQ(caches::variable_key("PIP_--CACHE_DIR"), "PIP_CACHE_DIR");
  EXPECT_EQ(caches::variable_key("pip_cache_dir"), "pip_cache_dir");  // pip wants "PIP_"
  EXPECT_EQ(caches::variable_key("GOCACHE"), "GOCACHE");
  EXPECT_EQ(caches::variable_key("gocache"), "gocache");
}

TEST(FindToolCaches, MacosKeepsLibraryCachesReadOnlyWithoutAVariable) {
  const Found found =
      caches::find_tool_caches({{"XDG_CACHE_HOME", "/x"}}, "/Users/u", Platform::kMacos);
  EXPECT_EQ(cache_of(found.caches, "XDG cache"), nullptr);
  const ToolCache* library = cache_of(found.caches, "Library/Caches");
  ASSERT_NE(library, nullptr);
  EXPECT_EQ(library->host_path, "/Users/u/Library/Caches");
  EXPECT_EQ(library->variable, "");
  EXPECT_EQ(cache_of(found.caches, "pip")->host_path, "/Users/u/Library/Caches/pip");
  EXPECT_EQ(cache_of(found.caches, "go build")->host_path, "/Users/u/Library/Caches/go-build");
}

TEST(FindToolCaches, NoHomeNoCaches) {
  EXPECT_TRUE(
      caches::find_tool_caches({{"XDG_CACHE_HOME", "/x"}}, "", Platform::kLinux).caches.empty());
}

TEST(CacheEnvironment, EveryVariableOnceAtTheProjectsCacheMavenOptsAppended) {
  CachePlan plan;
  plan.data = "/s/p/data";
  plan.caches = caches::find_tool_caches({}, "/h", Platform::kLinux).caches;
  plan.caches.push_back(ToolCache{"Library/Caches", "/h/Library/Caches", "", "", "", false});
  std::vector<std::string> env = {"PATH=/bin",
                                  "NPM_CONFIG_CACHE=/old-upper",
                                  "npm_config_cache=/old",
                                  "Npm_Config_Cache=/odd",
                                  "MAVEN_OPTS=-Xmx1g",
                                  "XDG_CACHE_HOME=/x",
                                  "CARGO_HOME=/c"};
  caches::apply_environment(plan, env);
  std::sort(env.begin(), env.end());
  EXPECT_EQ(env, (std::vector<std::string>{
                     "CARGO_HOME=/s/p/data/cargo",
                     "GOCACHE=/s/p/data/go-build",
                     "GOMODCACHE=/s/p/data/go-mod",
                     "GRADLE_USER_HOME=/s/p/data/gradle",
                     "MAVEN_OPTS=-Xmx1g -Dmaven.repo.local=/s/p/data/maven",
                     "PATH=/bin",
                     "PIP_CACHE_DIR=/s/p/data/pip",
                     "XDG_CACHE_HOME=/s/p/data/xdg",
                     "npm_config_cache=/s/p/data/npm",
                 }));
  // Every spelling pip and yarn read is replaced too.
  CachePlan moved = plan;
  moved.caches =
      caches::find_tool_caches({{"YARN_CACHE_FOLDER", "/y"}}, "/h", Platform::kLinux).caches;
  std::vector<std::string> spellings = {"PIP_cache-dir=/old", "yarn_cache_folder=/old",
                                        "YARN_CACHE_FOLDER=/y", "pip_cache_dir=/kept"};
  caches::apply_environment(moved, spellings);
  std::sort(spellings.begin(), spellings.end());
  EXPECT_EQ(std::count_if(spellings.begin(), spellings.end(),
                          [](const std::string& e) { return e.find("/old") != std::string::npos; }),
            0)
      << ::testing::PrintToString(spellings);
  EXPECT_NE(std::find(spellings.begin(), spellings.end(), "PIP_CACHE_DIR=/s/p/data/pip"),
            spellings.end());
  EXPECT_NE(std::find(spellings.begin(), spellings.end(), "YARN_CACHE_FOLDER=/s/p/data/yarn"),
            spellings.end());
  EXPECT_NE(std::find(spellings.begin(), spellings.end(), "pip_cache_dir=/kept"), spellings.end());
  std::vector<std::string> bare = {"PATH=/bin"};
  caches::apply_environment(plan, bare);
  EXPECT_NE(std::find(bare.begin(), bare.end(), "MAVEN_OPTS=-Dmaven.repo.local=/s/p/data/maven"),
            bare.end());
}

// A plan for copy-on-write: the linux defaults below /h, the project's cache in /h/.cache/sbx.
CachePlan plan_below_h() {
  CachePlan plan;
  plan.project = "/w";
  plan.directory = "/h/.cache/sbx/caches/w-1";
  plan.data = plan.directory + "/data";
  plan.home = "/h";
  plan.caches = caches::find_tool_caches({}, "/h", Platform::kLinux).caches;
  return plan;
}

ResolvedPolicy workspace_policy() {
  ResolvedPolicy policy;
  policy.rules = {{"/", Access::kRead}, {"/w", Access::kWrite}};
  policy.cwd = "/w";
  return policy;
}

caches::DirectoryLookup existing(std::vector<std::string> dirs) {
  return [dirs = std::move(dirs)](const std::string& path) -> std::optional<std::string> {
    if (std::find(dirs.begin(), dirs.end(), path) == dirs.end()) return std::nullopt;
    return path;
  };
}

// Each variable's directory that exists is mounted once at its own path (an outer one holds
// what lies below it: pip's and Go's build cache in the XDG cache); its variable then names it.
// A tool whose directory the host lacks keeps the project's cache. sbx's state below the XDG
// cache stays read-only.
TEST(CopyOnWrite, TheHostsExistingCachesAreMountedOnceAtTheirOwnPaths) {
  const CachePlan plan = plan_below_h();
  const caches::CopyOnWrite cow = caches::plan_copy_on_write(
      plan, workspace_policy(),
      existing({"/h/.cache", "/h/.npm", "/h/.cargo", "/h/.cache/pip", "/h/.m2/repository"}));
  const std::string layers = plan.directory + "/overlay/";
  EXPECT_EQ(cow.overlays,
            (std::vector<CacheOverlay>{
                {"/h/.cache", layers + caches::project_key("/h/.cache")},
                {"/h/.cargo", layers + caches::project_key("/h/.cargo")},
                {"/h/.npm", layers + caches::project_key("/h/.npm")},
                {"/h/.m2/repository", layers + caches::project_key("/h/.m2/repository")}}));
  EXPECT_EQ(cow.read_only, (std::vector<std::string>{"/h/.cache/sbx"}));
  std::vector<std::string> env = {"PATH=/bin", "CARGO_HOME=/elsewhere"};
  caches::apply_environment(plan, env, &cow);
  std::sort(env.begin(), env.end());
  EXPECT_EQ(env, (std::vector<std::string>{
                     "CARGO_HOME=/h/.cargo",
                     "GOCACHE=/h/.cache/go-build",
                     "GOMODCACHE=/h/.cache/sbx/caches/w-1/data/go-mod",
                     "GRADLE_USER_HOME=/h/.cache/sbx/caches/w-1/data/gradle",
                     "MAVEN_OPTS=-Dmaven.repo.local=/h/.m2/repository",
                     "PATH=/bin",
                     "PIP_CACHE_DIR=/h/.cache/pip",
                     "XDG_CACHE_HOME=/h/.cache",
                     "npm_config_cache=/h/.npm",
                 }));
  // Without a backend that mounts them, nothing changes: every tool at the project's cache.
  std::vector<std::string> plain = {"PATH=/bin"};
  caches::apply_environment(plan, plain);
  EXPECT_NE(std::find(plain.begin(), plain.end(), "npm_config_cache=" + plan.data + "/npm"),
            plain.end());
}

// Never mounted over: a directory the policy denies (not the command's to read) or lets it
// write (its writes are meant for the host), one holding the working or home directory, one
// whose path overlayfs cannot take. Those tools keep the project's cache.
TEST(CopyOnWrite, NeverOverADeniedWritableHoldingOrUnmountableDirectory) {
  CachePlan plan = plan_below_h();
  plan.caches = caches::find_tool_caches({{"XDG_CACHE_HOME", "/h"},
                                          {"npm_config_cache", "/h/.npm"},
                                          {"CARGO_HOME", "/h/.cargo"},
                                          {"GOMODCACHE", "/w/mod"},
                                          {"PIP_CACHE_DIR", "/h/pip,x"},
                                          {"GOCACHE", "/h/gobuild"}},
                                         "/h", Platform::kLinux)
                    .caches;
  ResolvedPolicy policy = workspace_policy();
  policy.rules.push_back({"/h/.npm", Access::kDeny});
  policy.rules.push_back({"/h/.cargo", Access::kWrite});
  const caches::CopyOnWrite cow = caches::plan_copy_on_write(
      plan, policy,
      existing({"/h", "/h/.npm", "/h/.cargo", "/w", "/w/mod", "/h/pip,x", "/h/gobuild"}));
  EXPECT_EQ(cow.overlays,
            (std::vector<CacheOverlay>{
                {"/h/gobuild", plan.directory + "/overlay/" + caches::project_key("/h/gobuild")}}));
  EXPECT_EQ(cow.variables,
            (std::vector<std::pair<std::string, std::string>>{{"GOCACHE", "/h/gobuild"}}));
  EXPECT_TRUE(cow.read_only.empty());
}

TEST(NpmCredentials, AnAuthSettingOfAnyScopeIsFound) {
  EXPECT_TRUE(caches::holds_auth_setting("//registry.npmjs.org/:_authToken=abc\n"));
  EXPECT_TRUE(caches::holds_auth_setting("registry=https://r/\n  _auth = dXNlcjpwdw==\r\n"));
  EXPECT_TRUE(caches::holds_auth_setting("//r/:_password=cHc=\n"));
  EXPECT_TRUE(caches::holds_auth_setting("//R/:_AUTHTOKEN=x"));
  EXPECT_FALSE(caches::holds_auth_setting("registry=https://r/\nsave-exact=true\n"));
  EXPECT_FALSE(caches::holds_auth_setting("# _authToken=commented out\n; _auth=also\n"));
  EXPECT_FALSE(caches::holds_auth_setting("always-auth=true\n"));
}

// Issue #40 F3: every form npm's ini parser reads a credential in.
TEST(NpmCredentials, EveryFormNpmAccepts) {
  for (const char* text : {
           "\"//host/:_authToken\"=T\n",                   // a quoted key
           "'//host/:_authToken'=T\n",                     // single quotes
           "//host/:_authToken[]=T\n",                     // the array form
           "registry=https://r/\r//host/:_authToken=T\r",  // CR-only line endings
           "\"_auth\"=dXNlcjpwdw==\n",                     // a quoted _auth
           "//host/:username=u\n\"//host/:_password\"=cHc=\n",
           "  //host/:_authToken = T ; a comment\n",
           "[section]\n//host/:_authToken=T\n",  // conservative: any section
           "//host/:certfile=/c.pem\n//host/:keyfile=/k.pem\n",
           "key=-----BEGIN PRIVATE KEY-----\\nMII\n",  // npm's inline client key
       }) {
    EXPECT_TRUE(caches::holds_auth_setting(text)) << text;
  }
  EXPECT_FALSE(caches::holds_auth_setting("\"registry\"=https://r/\r; \"_auth\"=x\r"));
  EXPECT_FALSE(caches::holds_auth_setting("//host/:username=u\nemail=a@b\n"));
}

TEST(ProjectKey, ReadableNameAndAHashOfTheWholePath) {
  const std::string key = caches::project_key("/work/my app");
  EXPECT_EQ(key.rfind("my_app-", 0), 0u) << key;
  EXPECT_EQ(key.size(), std::string("my_app-").size() + 24);
  EXPECT_EQ(key, caches::project_key("/work/my app"));
  EXPECT_NE(key, caches::project_key("/other/my app"));
  EXPECT_EQ(caches::project_key("/").rfind("p-", 0), 0u);
  EXPECT_EQ(caches::project_key("/w/.hidden").rfind("p.hidden-", 0), 0u);
  EXPECT_EQ(caches::project_key("/w/" + std::string(60, 'a')).size(), 32u + 1 + 24);
  // SHA-1 of "abc" begins a9993e36 4706816a ba3e2571 (FIPS 180-1's test vector).
  EXPECT_EQ(caches::project_key("abc"), "abc-a9993e364706816aba3e2571");
}

// The pair an outside review found with FNV-1a (the key of issue #40's first version): a path
// a sandboxed command could create under /tmp, with projA's name and hash. They must differ.
TEST(ProjectKey, AFoundFnvCollisionNoLongerCollides) {
  const std::string victim = "/work/rt1/p/projA";
  const std::string planted =
      "/tmp/x2\x05\x06\x1a\x05\x04\x0c\x07\x05\x06\x1f\x0b\x03\x07\x06"
      "9=/projA";
  EXPECT_NE(caches::project_key(victim), caches::project_key(planted));
}

TEST(CacheValidation, CachesCanOnlyBeGrantedWrite) {
  const Result<Policy> read = parse_policy(
      R"({"version":1,"filesystem":{"entries":[{"path":":caches","access":"read"}]}})");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().rfind("/filesystem/entries/0/access: ", 0), 0u) << read.error();
  EXPECT_TRUE(
      parse_policy(R"({"version":1,"preset":"workspace-write","writable_roots":[":caches"]})")
          .ok());
}

// A home, a workspace and the base the projects' caches go to, in a scratch directory.
class ResolveCaches : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(home());
    fs::create_directories(cwd());
    fs::create_directory(base());
    ::chmod(base().c_str(), 0700);
  }
  std::string home() const { return dir_ / "home"; }
  std::string cwd() const { return dir_ / "ws"; }
  std::string base() const { return dir_ / "caches"; }
  void file(const std::string& path, const std::string& text) const {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }
  Resolution resolve(const std::string& extra_entries = "",
                     std::map<std::string, std::string> env = {}) const {
    const Result<Policy> policy =
        parse_policy(R"({"version":1,"filesystem":{"entries":[{"path":":root","access":"read"},)"
                     R"({"path":":cwd","access":"write"},{"path":":caches","access":"write"})" +
                     extra_entries + "]}}");
    EXPECT_TRUE(policy.ok()) << policy.error();
    ResolveContext context{cwd(), home(), std::move(env)};
    context.caches_base = base();
    Result<Resolution> resolved = resolve_policy_with_notes(*policy, context);
    EXPECT_TRUE(resolved.ok()) << resolved.error();
    return resolved.ok() ? std::move(*resolved) : Resolution{};
  }
  static bool protects(const Resolution& res, const std::string& path, bool exists) {
    return std::any_of(
        res.policy.protected_paths.begin(), res.policy.protected_paths.end(),
        [&](const ProtectedPath& p) { return p.path == path && p.exists == exists; });
  }
  sbx::test::TempDir dir_;
};

TEST_F(ResolveCaches, OnlyTheProjectsDataDirectoryBecomesWritable) {
  fs::create_directories(home() + "/.npm/_cacache");
  const Resolution res = resolve();
  ASSERT_TRUE(res.caches.has_value());
  const CachePlan& plan = *res.caches;
  EXPECT_EQ(plan.project, cwd());
  EXPECT_EQ(plan.directory, base() + "/" + caches::project_key(cwd()));
  EXPECT_EQ(plan.data, plan.directory + "/data");
  EXPECT_TRUE(fs::is_directory(plan.data));
  struct stat st {};
  ASSERT_EQ(::stat(plan.data.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::ifstream recorded(plan.directory + "/project");
  std::string line;
  std::getline(recorded, line);
  EXPECT_EQ(line, cwd());
  EXPECT_EQ(writable_roots(res.policy), (std::vector<std::string>{cwd(), plan.data}));
  EXPECT_EQ(rule_access(res.policy, home() + "/.npm/_cacache/x"), Access::kRead);
  EXPECT_EQ(rule_access(res.policy, base() + "/another-project/data"), Access::kRead);
  EXPECT_EQ(rule_access(res.policy, plan.directory + "/project"), Access::kRead);
  const ToolCache* npm = cache_of(plan.caches, "npm");
  ASSERT_NE(npm, nullptr);
  EXPECT_TRUE(npm->exists);
  EXPECT_FALSE(cache_of(plan.caches, "pip")->exists);
  // Home read-only already: nothing is carved out and nothing needs pinning.
  EXPECT_TRUE(res.policy.protected_paths.empty() ||
              std::none_of(res.policy.protected_paths.begin(), res.policy.protected_paths.end(),
                           [&](const ProtectedPath& p) { return p.path.rfind(home(), 0) == 0; }));
  EXPECT_TRUE(plan.credentials_denied.empty());
}

// A cache recorded for another project is never taken over (a key collision, or a project
// file put there by hand): the run is refused, naming both and the way out.
TEST_F(ResolveCaches, ACacheRecordedForAnotherProjectIsRefused) {
  const std::string directory = resolve().caches->directory;  // made as a run makes it
  file(directory + "/project", "/somewhere/else\n");
  const Result<Policy> policy =
      parse_policy(R"({"version":1,"filesystem":{"entries":[{"path":":cwd","access":"write"},)"
                   R"({"path":":caches","access":"write"}]}})");
  ASSERT_TRUE(policy.ok()) << policy.error();
  ResolveContext context{cwd(), home(), {}};
  context.caches_base = base();
  Result<Resolution> resolved = resolve_policy_with_notes(*policy, context);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.error().find("is recorded for another project ('/somewhere/else')"),
            std::string::npos)
      << resolved.error();
  EXPECT_NE(resolved.error().find("sbx cache clear"), std::string::npos) << resolved.error();
  // Nothing was rewritten.
  std::ifstream recorded(directory + "/project");
  std::string line;
  std::getline(recorded, line);
  EXPECT_EQ(line, "/somewhere/else");
}

TEST_F(ResolveCaches, CredentialsBesideTheCachesAreDenied) {
  file(home() + "/.cargo/credentials.toml", "[registry]\ntoken = \"secret\"\n");
  file(home() + "/.m2/settings.xml", "<settings/>\n");
  file(home() + "/.npmrc", "//registry.npmjs.org/:_authToken=secret\n");
  const Resolution res = resolve();
  ASSERT_TRUE(res.caches.has_value());
  for (const std::string& path :
       {home() + "/.cargo/credentials.toml", home() + "/.m2/settings.xml", home() + "/.npmrc"}) {
    EXPECT_EQ(rule_access(res.policy, path), Access::kDeny) << path;
    EXPECT_NE(std::find(res.caches->credentials_denied.begin(),
                        res.caches->credentials_denied.end(), path),
              res.caches->credentials_denied.end())
        << path;
  }
}

TEST_F(ResolveCaches, AnNpmrcWithoutCredentialsStaysReadable) {
  file(home() + "/.npmrc", "registry=https://registry.example/\n");
  const Resolution res = resolve();
  EXPECT_EQ(rule_access(res.policy, home() + "/.npmrc"), Access::kRead);
  EXPECT_TRUE(res.caches->credentials_denied.empty());
}

TEST_F(ResolveCaches, AWritableHomeKeepsTheHostsCachesReadOnlyAndMissingOnesUncreatable) {
  fs::create_directories(home() + "/.npm/_cacache");
  const Resolution res = resolve(R"(,{"path":"~","access":"write"})");
  ASSERT_TRUE(res.caches.has_value());
  EXPECT_EQ(rule_access(res.policy, home() + "/.npm/_cacache/index"), Access::kRead);
  EXPECT_TRUE(protects(res, home() + "/.npm", true));
  // ~/.cargo does not exist: the command may not make it (and plant a registry there).
  EXPECT_TRUE(protects(res, home() + "/.cargo", false));
  EXPECT_TRUE(protects(res, home() + "/.cache", false));
  EXPECT_EQ(rule_access(res.policy, home() + "/notes.txt"), Access::kWrite);
  EXPECT_EQ(rule_access(res.policy, res.caches->data + "/npm"), Access::kWrite);
  for (const ProtectedPath& p : res.policy.protected_paths)
    EXPECT_FALSE(path_is_within(res.caches->data, p.path)) << p.path;
}

// Issue #40 F2: caches named in configuration files and by the other tools' variables, in a
// writable root (/tmp in workspace-write), are kept like the others: read-only, or uncreatable.
TEST_F(ResolveCaches, CachesNamedInConfigurationFilesOrOtherVariablesAreKeptToo) {
  const std::string shared = dir_ / "shared";
  fs::create_directories(shared + "/x-npmc");
  fs::create_directories(shared + "/x-yarn");
  file(home() + "/.npmrc", "cache=" + shared + "/x-npmc\n");
  file(home() + "/.config/pip/pip.conf", "[global]\ncache-dir = " + shared + "/x-pipc\n");
  const Resolution res =
      resolve(R"(,{"path":")" + shared + R"(","access":"write"})",
              {{"YARN_CACHE_FOLDER", shared + "/x-yarn"}, {"UV_CACHE_DIR", shared + "/x-uv"}});
  ASSERT_TRUE(res.caches.has_value());
  EXPECT_EQ(rule_access(res.policy, shared + "/x-npmc/o"), Access::kRead);
  EXPECT_EQ(rule_access(res.policy, shared + "/x-yarn/o"), Access::kRead);
  EXPECT_TRUE(protects(res, shared + "/x-npmc", true));
  EXPECT_TRUE(protects(res, shared + "/x-yarn", true));
  EXPECT_TRUE(protects(res, shared + "/x-pipc", false));
  EXPECT_TRUE(protects(res, shared + "/x-uv", false));
  EXPECT_EQ(rule_access(res.policy, shared + "/other"), Access::kWrite);
  EXPECT_EQ(cache_of(res.caches->caches, "npm")->source, "cache in ~/.npmrc");
  std::vector<std::string> env;
  caches::apply_environment(*res.caches, env);
  std::sort(env.begin(), env.end());
  for (const std::string& expected :
       {"PIP_CACHE_DIR=" + res.caches->data + "/pip", "UV_CACHE_DIR=" + res.caches->data + "/uv",
        "YARN_CACHE_FOLDER=" + res.caches->data + "/yarn",
        "npm_config_cache=" + res.caches->data + "/npm"})
    EXPECT_NE(std::find(env.begin(), env.end(), expected), env.end()) << expected;
}

TEST(CacheConfigFiles, OnlyRegularFilesAreRead) {
  sbx::test::TempDir dir;
  const std::string regular = dir / "pip.conf";
  std::ofstream(regular) << "[global]\n";
  fs::create_symlink(regular, dir / "link");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::ofstream(dir / "big") << std::string((1 << 20) + 1, 'x');
  const Result<std::optional<std::string>> text = caches::read_config_file(regular);
  ASSERT_TRUE(text.ok() && text->has_value());
  EXPECT_EQ(**text, "[global]\n");
  // The user's own dotfiles may be symlinks: followed.
  EXPECT_EQ(caches::read_config_file(dir / "link")->value_or(""), "[global]\n");
  const Result<std::optional<std::string>> missing = caches::read_config_file(dir / "none");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  // A FIFO (never waited on), a device, a directory, too much text: errors, not text.
  for (const std::string& path : {dir / "fifo", std::string("/dev/null"), dir.path(), dir / "big"})
    EXPECT_FALSE(caches::read_config_file(path).ok()) << path;
  EXPECT_TRUE(caches::file_holds_auth_setting(dir / "fifo"));  // denied: fail closed
}

TEST_F(ResolveCaches, AWritableRootAroundTheCachesKeepsOtherProjectsReadOnly) {
  fs::create_directories(base() + "/other-0123456789abcdef/data");
  const Resolution res = resolve(R"(,{"path":")" + dir_.path() + R"(","access":"write"})");
  ASSERT_TRUE(res.caches.has_value());
  EXPECT_EQ(rule_access(res.policy, base() + "/other-0123456789abcdef/data/x"), Access::kRead);
  EXPECT_EQ(rule_access(res.policy, res.caches->directory + "/project"), Access::kRead);
  EXPECT_EQ(rule_access(res.policy, res.caches->data + "/npm"), Access::kWrite);
  // Read rules, not protected paths, around the data directory: a protected path would make
  // everything below it read-only (bwrap binds the read rules, pinned, all the same).
  EXPECT_FALSE(protects(res, base(), true));
  for (const ProtectedPath& p : res.policy.protected_paths)
    EXPECT_FALSE(path_is_within(res.caches->data, p.path)) << p.path;
}

// The real base (caches::caches_base(), from this process's HOME), with the home writable and no
// ~/.cache yet: the base is made first, so the XDG cache is found existing and carved out as a
// read rule, not masked as a missing cache with the project's data directory below it.
TEST(ResolveCachesInTheHome, AWritableHomeWithoutACacheDirectoryYet) {
  const sbx::test::TempDir home(sbx::test::private_parent());
  const sbx::test::TempDir ws;
  const char* saved_home = std::getenv("HOME");
  const char* saved_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string old_home = saved_home != nullptr ? saved_home : "";
  const std::string old_xdg = saved_xdg != nullptr ? saved_xdg : "";
  ::setenv("HOME", home.path().c_str(), 1);
  ::unsetenv("XDG_CACHE_HOME");
  const Result<Policy> policy =
      parse_policy(R"({"version":1,"filesystem":{"entries":[{"path":":root","access":"read"},)"
                   R"({"path":":cwd","access":"write"},{"path":"~","access":"write"},)"
                   R"({"path":":caches","access":"write"}]}})");
  ASSERT_TRUE(policy.ok()) << policy.error();
  const Result<Resolution> res =
      resolve_policy_with_notes(*policy, ResolveContext{ws.path(), home.path(), {}});
  if (saved_home != nullptr) ::setenv("HOME", old_home.c_str(), 1);
  if (saved_xdg != nullptr) ::setenv("XDG_CACHE_HOME", old_xdg.c_str(), 1);
  ASSERT_TRUE(res.ok()) << res.error();
  ASSERT_TRUE(res->caches.has_value());
  const CachePlan& plan = *res->caches;
  EXPECT_EQ(plan.data.rfind(home.path() + "/.cache/sbx/caches/", 0), 0u) << plan.data;
  EXPECT_EQ(rule_access(res->policy, plan.data + "/npm"), Access::kWrite);
  EXPECT_EQ(rule_access(res->policy, home.path() + "/.cache/other"), Access::kRead);
  EXPECT_TRUE(cache_of(plan.caches, "XDG cache")->exists);
  for (const ProtectedPath& p : res->policy.protected_paths)
    EXPECT_FALSE(path_is_within(plan.data, p.path)) << p.path;
}

// Issue #40 F5: root's <cache>/sbx/caches, missing, inside a writable root (`--writable-root
// ~/.cache`, whatever HOME the run has): made and kept read-only like the state directories,
// so that no command makes it and plants a project's cache for later runs. Left alone where
// the writable root holds the home directory (a root run in its home).
TEST(ResolveStateDirs, AnAbsentStateDirectoryAWritableRootReachesIsMadeAndKept) {
  const sbx::test::TempDir dir;
  const std::string home = dir / "home";
  const std::string ws = dir / "ws";
  const std::string absent = home + "/.cache/sbx/caches";
  fs::create_directories(home + "/.cache");
  fs::create_directories(ws);
  const auto resolve = [&](const std::string& writable) {
    const Result<Policy> policy =
        parse_policy(R"({"version":1,"filesystem":{"entries":[{"path":":root","access":"read"},)"
                     R"({"path":":cwd","access":"write"},{"path":")" +
                     writable + R"(","access":"write"}]}})");
    EXPECT_TRUE(policy.ok()) << policy.error();
    ResolveContext context{ws, dir / "other-home", {}};
    context.absent_state_dirs = {absent};
    Result<Resolution> resolved = resolve_policy_with_notes(*policy, context);
    EXPECT_TRUE(resolved.ok()) << resolved.error();
    return resolved.ok() ? std::move(*resolved) : Resolution{};
  };
  const Resolution res = resolve(home + "/.cache");
  ASSERT_TRUE(fs::is_directory(absent));
  struct stat st {};
  ASSERT_EQ(::stat((home + "/.cache/sbx").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(rule_access(res.policy, absent + "/p-0123/data/npm"), Access::kRead);
  EXPECT_EQ(rule_access(res.policy, home + "/.cache/other"), Access::kWrite);
  EXPECT_TRUE(std::any_of(res.policy.protected_paths.begin(), res.policy.protected_paths.end(),
                          [&](const ProtectedPath& p) { return p.path == absent && p.exists; }));

  fs::remove_all(home + "/.cache/sbx");
  // The writable root holds the home directory: left as it is.
  const Result<Policy> in_home =
      parse_policy(R"({"version":1,"filesystem":{"entries":[{"path":":root","access":"read"},)"
                   R"({"path":"~","access":"write"}]}})");
  ASSERT_TRUE(in_home.ok());
  ResolveContext context{ws, home, {}};
  context.absent_state_dirs = {absent};
  ASSERT_TRUE(resolve_policy_with_notes(*in_home, context).ok());
  EXPECT_FALSE(fs::exists(home + "/.cache/sbx"));
  // No writable root reaches it: nothing is made.
  resolve(ws + "/sub");
  EXPECT_FALSE(fs::exists(home + "/.cache/sbx"));
}

TEST_F(ResolveCaches, ACacheHoldingTheWorkspaceIsLeftAloneWithANote) {
  const Resolution res = resolve("", {{"XDG_CACHE_HOME", dir_.path()}});
  ASSERT_TRUE(res.caches.has_value());
  EXPECT_EQ(cache_of(res.caches->caches, "XDG cache"), nullptr);
  ASSERT_FALSE(res.caches->notes.empty());
  EXPECT_NE(res.caches->notes.front().find("holds the working or home directory"),
            std::string::npos);
  EXPECT_EQ(rule_access(res.policy, cwd() + "/x"), Access::kWrite);
}

TEST_F(ResolveCaches, AWindowsPlanDropsTheEntryWithANote) {
  const Result<Policy> policy =
      parse_policy(R"({"version":1,"filesystem":{"entries":[{"path":":cwd","access":"write"},)"
                   R"({"path":":caches","access":"write"}]}})");
  ASSERT_TRUE(policy.ok());
  ResolveContext context{"C:/ws", "C:/Users/u", {}};
  context.style = PathStyle::kWindows;
  context.caches_base = base();
  const Result<Resolution> res = resolve_policy_with_notes(*policy, context);
  ASSERT_TRUE(res.ok()) << res.error();
  EXPECT_FALSE(res->caches.has_value());
  ASSERT_EQ(res->notes.size(), 1u);
  EXPECT_NE(res->notes.front().find(":caches dropped"), std::string::npos);
}

// An overlay's layers (make_overlay_layers): what overlayfs leaves there, its work directory
// mode 000 with a whiteout in it, and read-only directories copied up, is listed and cleared.
TEST(CacheClear, RemovesAnOverlaysLayersWithItsMode000WorkDirectory) {
  sbx::test::TempDir dir;
  const std::string base = dir / "caches";
  const std::string project = base + "/p-2";
  fs::create_directories(project + "/data");
  ::chmod(base.c_str(), 0700);
  ::chmod(project.c_str(), 0700);
  caches::CopyOnWrite cow;
  cow.overlays.push_back({"/h/.npm", project + "/overlay/p.npm-1"});
  cow.variables.emplace_back("npm_config_cache", "/h/.npm");
  {
    caches::CopyOnWrite first = cow;
    Result<std::vector<UniqueFd>> held = caches::make_overlay_layers(first);
    ASSERT_TRUE(held.ok()) << held.error();
    EXPECT_EQ(held->size(), 1u);
    EXPECT_EQ(first, cow);
    // A concurrent run of the project does not share the layers it holds: that cache is not
    // copy-on-write for it, and its tool points at the project's cache.
    caches::CopyOnWrite second = cow;
    Result<std::vector<UniqueFd>> concurrent = caches::make_overlay_layers(second);
    ASSERT_TRUE(concurrent.ok()) << concurrent.error();
    EXPECT_TRUE(concurrent->empty());
    EXPECT_TRUE(second.overlays.empty());
    EXPECT_TRUE(second.variables.empty());
  }
  const std::string layers = project + "/overlay/p.npm-1";
  EXPECT_TRUE(fs::is_directory(layers + "/upper"));
  EXPECT_TRUE(fs::is_directory(layers + "/work"));
  caches::CopyOnWrite again = cow;
  EXPECT_TRUE(caches::make_overlay_layers(again).ok()) << "a later run takes them as they are";
  EXPECT_EQ(again, cow);
  fs::create_directories(layers + "/upper/_cacache/content");
  std::ofstream(layers + "/upper/_cacache/content/x") << "downloaded";
  ::chmod((layers + "/upper/_cacache/content").c_str(), 0555);
  fs::create_directories(layers + "/work/work");
  if (::geteuid() == 0) {
    // A whiteout: the character device 0/0 (overlayfs, Documentation/filesystems/overlayfs.rst).
    ASSERT_EQ(::mknod((layers + "/work/work/#1").c_str(), S_IFCHR, ::makedev(0, 0)), 0);
  } else {
    std::ofstream(layers + "/work/work/#1") << "";
  }
  ::chmod((layers + "/work/work").c_str(), 0);
  const Result<std::vector<caches::ProjectCache>> listed = caches::list_projects(base);
  ASSERT_TRUE(listed.ok()) << listed.error();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().bytes, 10u);
  const Status cleared = caches::clear_project(base, "p-2");
  EXPECT_TRUE(cleared.ok()) << cleared.error();
  EXPECT_FALSE(fs::exists(project));
  // A symlink where a layer goes is refused, never followed.
  fs::create_directories(project + "/overlay/p.npm-1");
  ::chmod(project.c_str(), 0700);
  ::chmod((project + "/overlay").c_str(), 0700);
  ::chmod((project + "/overlay/p.npm-1").c_str(), 0700);
  fs::create_directory_symlink(dir / "elsewhere", project + "/overlay/p.npm-1/upper");
  caches::CopyOnWrite planted = cow;
  EXPECT_FALSE(caches::make_overlay_layers(planted).ok());
  EXPECT_FALSE(fs::exists(dir / "elsewhere"));
}

TEST(CacheClear, RemovesReadOnlyTreesAndNeverFollowsASymlink) {
  sbx::test::TempDir dir;
  const std::string base = dir / "caches";
  const std::string outside = dir / "outside";
  fs::create_directories(base + "/p-1/data/go-mod/example.com/m@v1");
  fs::create_directories(outside);
  std::ofstream(outside + "/keep") << "keep";
  std::ofstream(base + "/p-1/data/go-mod/example.com/m@v1/go.mod") << "module m\n";
  fs::create_directory_symlink(outside, base + "/p-1/data/link");
  // Go makes its module cache read-only.
  ::chmod((base + "/p-1/data/go-mod/example.com/m@v1").c_str(), 0555);
  ::chmod((base + "/p-1/data/go-mod/example.com").c_str(), 0555);
  const Result<std::vector<caches::ProjectCache>> listed = caches::list_projects(base);
  ASSERT_TRUE(listed.ok()) << listed.error();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().key, "p-1");
  EXPECT_EQ(listed->front().files, 1u);
  EXPECT_EQ(listed->front().bytes, 9u);
  const Status cleared = caches::clear_project(base, "p-1");
  EXPECT_TRUE(cleared.ok()) << cleared.error();
  EXPECT_FALSE(fs::exists(base + "/p-1"));
  EXPECT_TRUE(fs::exists(outside + "/keep"));
  EXPECT_FALSE(caches::clear_project(base, "..").ok());
  EXPECT_FALSE(caches::clear_project(base, "a/b").ok());
  EXPECT_TRUE(caches::clear_project(base, "gone").ok());
}

// A command may nest directories as deep as it likes in its project's cache (outside review
// round 3: 1,100 levels made `sbx cache clear` fail with "nested too deeply" and keep what the
// command planted). Clear moves what lies too deep up and removes everything, with a name of
// the command's own beside it where the moved directories go.
TEST(CacheClear, RemovesTreesOfAnyDepth) {
  sbx::test::TempDir dir;
  const std::string base = dir / "caches";
  fs::create_directories(base + "/p-3/data/cargo");
  std::ofstream(base + "/p-3/data/cargo/config.toml") << "[build]\nrustc-wrapper = \"/x\"\n";
  fs::create_directory(base + "/p-3/.sbx-clear-0");  // a name the mover must not replace
  int fd = ::open((base + "/p-3/data").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (int level = 0; level < 1100; ++level) {
    ASSERT_EQ(::mkdirat(fd, "d", 0700), 0) << "level " << level;
    const int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(fd);
    ASSERT_GE(next, 0);
    fd = next;
  }
  ASSERT_EQ(::mkdirat(fd, "bottom", 0), 0);  // mode 000 at the bottom too
  ::close(fd);
  const Status cleared = caches::clear_project(base, "p-3");
  EXPECT_TRUE(cleared.ok()) << cleared.error();
  EXPECT_FALSE(fs::exists(base + "/p-3"));
  EXPECT_TRUE(fs::exists(base));
}

}  // namespace
}  // namespace sbx
