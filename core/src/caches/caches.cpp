// Toolchain caches (sbx/core/caches.hpp): which caches the tools use, and the project's cache in
// sbx's state they are pointed at instead (core/src/caches/README.md).
#include "sbx/core/caches.hpp"

#ifndef _WIN32
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <boost/uuid/detail/sha1.hpp>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config_files.hpp"

#ifndef _WIN32
#include "sbx/sdk/private_state.hpp"
#include "sbx/sdk/unique_fd.hpp"
#endif

namespace sbx::caches {
namespace {

using config::join;
using config::lower;
using config::tool_path;
using config::upper;

bool absolute(const std::string& path) { return !path.empty() && path.front() == '/'; }

// The value of `name` when it is an absolute path; tools resolve a relative one against their
// own working directory, which is no cache this run can name: taken as unset.
std::string absolute_value(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  return it != env.end() && absolute(it->second) ? it->second : std::string();
}

// `path` as people read it: "~/..." below the home directory.
std::string spelled(const std::string& path, const std::string& home) {
  if (path.size() > home.size() && path.rfind(home + "/", 0) == 0)
    return "~" + path.substr(home.size());
  return path;
}

// Each spelling of `variable` in `env` (variable_key) with a value that names an absolute
// path, "~/" taken as the home directory when `tilde`: {name as spelled, path}.
std::vector<std::pair<std::string, std::string>> values_of(
    const std::map<std::string, std::string>& env, const std::string& variable,
    const std::string& home, bool tilde) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : env) {
    if (variable_key(name) != variable) continue;
    std::string path = tilde ? tool_path(value, home) : (absolute(value) ? value : "");
    if (!path.empty()) out.emplace_back(name, std::move(path));
  }
  return out;
}

// Where the tools that follow the platform's convention keep their caches: Go's
// os.UserCacheDir(), pip's platformdirs: $XDG_CACHE_HOME or ~/.cache on Linux,
// ~/Library/Caches on macOS.
struct UserCache {
  std::string path;
  std::string spelled;  // "$XDG_CACHE_HOME", "~/.cache", "~/Library/Caches"
  std::string unset;    // the variable that was unset for this choice, or ""
};
UserCache xdg_cache_dir(const std::map<std::string, std::string>& env, const std::string& home) {
  const std::string xdg = absolute_value(env, "XDG_CACHE_HOME");
  if (!xdg.empty()) return {xdg, "$XDG_CACHE_HOME", ""};
  return {join(home, ".cache"), "~/.cache", "$XDG_CACHE_HOME"};
}
UserCache user_cache_dir(const std::map<std::string, std::string>& env, const std::string& home,
                         Platform platform) {
  if (platform == Platform::kMacos) return {join(home, "Library/Caches"), "~/Library/Caches", ""};
  return xdg_cache_dir(env, home);
}

// The tools whose cache is a directory of the user cache directory unless their own variable
// moves it. `listed_unmoved`: listed at that default too; the others are listed only where
// their variable moves them, or where the default lies outside the platform's cache directory
// the run keeps anyway (uv and pre-commit keep the XDG layout on macOS, not ~/Library/Caches).
struct InUserCache {
  const char* tool;
  const char* variable;
  const char* linux_name;  // below $XDG_CACHE_HOME or ~/.cache
  const char* macos_name;  // below ~/Library/Caches; nullptr: below the XDG cache on macOS too
  const char* subdir;
  bool listed_unmoved;
};
constexpr InUserCache kInUserCache[] = {
    {"pip", "PIP_CACHE_DIR", "pip", "pip", "pip", true},
    {"go build", "GOCACHE", "go-build", "go-build", "go-build", true},
    // yarn classic (yarn 1: YARN_CACHE_FOLDER, read in any case), uv, pre-commit, Playwright's
    // browsers (PLAYWRIGHT_BROWSERS_PATH; "0", node_modules, is relative: no cache).
    {"yarn", "YARN_CACHE_FOLDER", "yarn", "Yarn", "yarn", false},
    {"uv", "UV_CACHE_DIR", "uv", nullptr, "uv", false},
    {"pre-commit", "PRE_COMMIT_HOME", "pre-commit", nullptr, "pre-commit", false},
    {"Playwright", "PLAYWRIGHT_BROWSERS_PATH", "ms-playwright", "ms-playwright", "ms-playwright",
     false},
};

// `value` when the variable is set, else `fallback`; the source says which.
std::pair<std::string, std::string> from_variable(const std::map<std::string, std::string>& env,
                                                  const std::string& variable,
                                                  const std::string& fallback,
                                                  const std::string& fallback_words) {
  const std::string value = absolute_value(env, variable);
  if (!value.empty()) return {value, "$" + variable};
  return {fallback, fallback_words + " ($" + variable + " unset)"};
}

// find_tool_caches' state: the inputs, and what is found so far.
class Finder {
 public:
  Finder(const std::map<std::string, std::string>& env, const std::string& home, Platform platform,
         const ConfigReader& read)
      : env_(env),
        home_(home),
        platform_(platform),
        read_(read),
        user_cache_(user_cache_dir(env, home, platform)) {}

  Found take() { return std::move(out_); }

  void add(std::string tool, std::string host, std::string source, std::string variable,
           std::string subdir) {
    for (const ToolCache& cache : out_.caches)
      if (cache.host_path == host && cache.variable == variable) return;  // named twice
    out_.caches.push_back(ToolCache{std::move(tool), std::move(host), std::move(source),
                                    std::move(variable), std::move(subdir), false});
  }
  void credential(std::string path, std::string tool, bool only_with_auth) {
    for (const CredentialFile& file : out_.credentials)
      if (file.path == path) return;
    out_.credentials.push_back(CredentialFile{std::move(path), std::move(tool), only_with_auth});
  }

  // The text of the configuration file `path`, or nullopt (none, no reader, or unreadable:
  // then a note says the cache it may name is not kept).
  std::optional<std::string> config(const std::string& path, const std::string& tool) {
    if (!read_) return std::nullopt;
    Result<std::optional<std::string>> text = read_(path);
    if (text.ok()) return std::move(*text);
    out_.notes.push_back("the " + tool + " configuration " + path + " could not be read (" +
                         text.error() + "): a cache it names is not kept read-only");
    return std::nullopt;
  }

  void user_cache();
  void npm();
  bool moved(const InUserCache& entry);
  bool pip_config_caches();
  void unmoved(const InUserCache& entry);
  void cargo_go_gradle_maven();

 private:
  const std::map<std::string, std::string>& env_;
  const std::string& home_;
  Platform platform_;
  const ConfigReader& read_;
  UserCache user_cache_;
  Found out_;
};

// The platform's cache directory as a whole: on Linux every tool that follows the XDG Base
// Directory Specification (yarn, Cypress, Playwright, Prisma, pre-commit, ...) moves with
// XDG_CACHE_HOME; macOS's ~/Library/Caches has no variable, so it only stays read-only.
void Finder::user_cache() {
  const std::string source =
      user_cache_.spelled + (user_cache_.unset.empty() ? "" : " (" + user_cache_.unset + " unset)");
  if (platform_ == Platform::kMacos)
    add("Library/Caches", user_cache_.path, source, "", "");
  else
    add("XDG cache", user_cache_.path, source, "XDG_CACHE_HOME", "xdg");
}

// npm's cache: $npm_config_cache (any case), the `cache` of its user configuration
// ($npm_config_userconfig, any case, and ~/.npmrc: each is read, whichever npm takes, since a
// shell without the variable takes ~/.npmrc), else ~/.npm. Each user configuration is also a
// credential file when it holds a token.
void Finder::npm() {
  bool named = false;
  for (auto& [name, path] : values_of(env_, "npm_config_cache", home_, true)) {
    add("npm", std::move(path), "$" + name, "npm_config_cache", "npm");
    named = true;
  }
  std::vector<std::string> userconfigs;
  for (auto& [name, path] : values_of(env_, "npm_config_userconfig", home_, true))
    userconfigs.push_back(std::move(path));
  userconfigs.push_back(join(home_, ".npmrc"));
  for (const std::string& file : userconfigs) {
    credential(file, "npm", true);
    const std::optional<std::string> text = config(file, "npm");
    if (!text) continue;
    std::string cache = config::npmrc_cache(*text, env_, home_);
    if (cache.empty()) continue;
    add("npm", std::move(cache), "cache in " + spelled(file, home_), "npm_config_cache", "npm");
    named = true;
  }
  if (!named)
    add("npm", join(home_, ".npm"), "~/.npm ($npm_config_cache unset)", "npm_config_cache", "npm");
}

// The `cache-dir` of every configuration file pip reads (pip's configuration.py
// get_configuration_files; pip help "Configuration"): $PIP_CONFIG_FILE, the global ones (each
// $XDG_CONFIG_DIRS entry's pip/pip.conf, /etc/pip.conf), the user ones (~/.pip/pip.conf,
// $XDG_CONFIG_HOME/pip/pip.conf) and the virtual environment's ($VIRTUAL_ENV/pip.conf); on
// macOS the Application Support ones. All of them, whichever this environment's pip would
// take: another shell's pip may take another.
bool Finder::pip_config_caches() {
  std::vector<std::string> files;
  const auto file = [&files](const std::string& path) {
    if (absolute(path) && std::find(files.begin(), files.end(), path) == files.end())
      files.push_back(path);
  };
  file(absolute_value(env_, "PIP_CONFIG_FILE"));
  if (platform_ == Platform::kMacos) {
    file("/Library/Application Support/pip/pip.conf");
    file(join(home_, "Library/Application Support/pip/pip.conf"));
  } else {
    const auto dirs = env_.find("XDG_CONFIG_DIRS");
    std::string list = dirs != env_.end() && !dirs->second.empty() ? dirs->second : "/etc/xdg";
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t colon = std::min(list.find(':', at), list.size());
      const std::string dir = list.substr(at, colon - at);
      if (absolute(dir)) file(join(dir, "pip/pip.conf"));
      at = colon + 1;
    }
    file("/etc/pip.conf");
  }
  file(join(home_, ".pip/pip.conf"));
  const std::string xdg_config = absolute_value(env_, "XDG_CONFIG_HOME");
  file(join(
      platform_ == Platform::kLinux && !xdg_config.empty() ? xdg_config : join(home_, ".config"),
      "pip/pip.conf"));
  const std::string venv = absolute_value(env_, "VIRTUAL_ENV");
  if (!venv.empty()) file(join(venv, "pip.conf"));
  bool named = false;
  for (const std::string& path : files) {
    const std::optional<std::string> text = config(path, "pip");
    if (!text) continue;
    for (std::string& dir : config::pip_cache_dirs(*text, home_)) {
      add("pip", std::move(dir), "cache-dir in " + spelled(path, home_), "PIP_CACHE_DIR", "pip");
      named = true;
    }
  }
  return named;
}

// A tool of kInUserCache: each spelling of its variable that names a directory; true when one
// does.
bool Finder::moved(const InUserCache& entry) {
  const std::string variable = entry.variable;
  bool named = false;
  for (auto& [name, path] : values_of(env_, variable, home_, variable == "PIP_CACHE_DIR")) {
    add(entry.tool, std::move(path), "$" + name, variable, entry.subdir);
    named = true;
  }
  return named;
}

// A tool of kInUserCache that nothing moves: its default, where it is listed.
void Finder::unmoved(const InUserCache& entry) {
  const bool macos = platform_ == Platform::kMacos;
  const bool xdg_on_macos = macos && entry.macos_name == nullptr;
  if (!entry.listed_unmoved && !xdg_on_macos) return;
  const UserCache cache = xdg_on_macos ? xdg_cache_dir(env_, home_) : user_cache_;
  const std::string name = macos && !xdg_on_macos ? entry.macos_name : entry.linux_name;
  add(entry.tool, join(cache.path, name),
      cache.spelled + "/" + name + " ($" + entry.variable +
          (cache.unset.empty() ? "" : " and " + cache.unset) + " unset)",
      entry.variable, entry.subdir);
}

void Finder::cargo_go_gradle_maven() {
  // Cargo keeps downloads in $CARGO_HOME/registry and /git, beside its configuration, installed
  // binaries and credentials; only CARGO_HOME moves them, so the command gets a CARGO_HOME of
  // its own (the host's configuration linked in: prepare_project).
  const auto [cargo_home, cargo_source] =
      from_variable(env_, "CARGO_HOME", join(home_, ".cargo"), "~/.cargo");
  add("cargo registry", join(cargo_home, "registry"), "registry in " + cargo_source, "CARGO_HOME",
      "cargo");
  add("cargo git", join(cargo_home, "git"), "git in " + cargo_source, "CARGO_HOME", "cargo");
  {
    // The first entry of GOPATH (go help gopath: "the first directory" holds pkg/mod).
    std::string gopath = absolute_value(env_, "GOPATH");
    gopath = gopath.substr(0, gopath.find(':'));
    const std::string fallback = join(gopath.empty() ? join(home_, "go") : gopath, "pkg/mod");
    const auto [mod, source] = from_variable(env_, "GOMODCACHE", fallback,
                                             gopath.empty() ? "~/go/pkg/mod" : "$GOPATH/pkg/mod");
    add("go modules", mod, source, "GOMODCACHE", "go-mod");
  }
  const auto [gradle_home, gradle_source] =
      from_variable(env_, "GRADLE_USER_HOME", join(home_, ".gradle"), "~/.gradle");
  add("gradle caches", join(gradle_home, "caches"), "caches in " + gradle_source,
      "GRADLE_USER_HOME", "gradle");
  add("gradle wrapper", join(gradle_home, "wrapper"), "wrapper in " + gradle_source,
      "GRADLE_USER_HOME", "gradle");
  // Maven has no variable for its local repository, only the system property that MAVEN_OPTS
  // carries to the JVM (a <localRepository> in settings.xml is not read here).
  add("maven", join(home_, ".m2/repository"), "~/.m2/repository", "MAVEN_OPTS", "maven");

  credential(join(cargo_home, "credentials.toml"), "cargo", false);
  credential(join(cargo_home, "credentials"), "cargo", false);
  credential(join(home_, ".m2/settings.xml"), "maven", false);
  credential(join(home_, ".m2/settings-security.xml"), "maven", false);
  credential(join(gradle_home, "gradle.properties"), "gradle", false);
}

}  // namespace

std::string variable_key(std::string_view name) {
  const std::string low = lower(name);
  // npm (@npmcli/config loadEnv): /^npm_config_/i, the key lowercased, '_' after its first
  // character read as '-' (a "//registry/:" key as it is).
  if (low.rfind("npm_config_", 0) == 0) {
    std::string key = low.substr(11);
    if (key.rfind("//", 0) != 0)
      std::replace(key.begin() + (key.empty() ? 0 : 1), key.end(), '_', '-');
    return "npm_config_" + key;
  }
  // yarn 1 (BaseRegistry.mergeEnv("yarn_")): the name lowercased, '_' read as '-'.
  if (low.rfind("yarn_", 0) == 0) {
    std::string key = upper(low.substr(5));
    std::replace(key.begin(), key.end(), '-', '_');
    return "YARN_" + key;
  }
  // pip (_get_environ_vars: the "PIP_" prefix as it is; _normalize_name: the rest lowercased,
  // '_' read as '-', a leading "--" dropped).
  if (name.rfind("PIP_", 0) == 0) {
    std::string key = low.substr(4);
    std::replace(key.begin(), key.end(), '_', '-');
    if (key.rfind("--", 0) == 0) key.erase(0, 2);
    key = upper(key);
    std::replace(key.begin(), key.end(), '-', '_');
    return "PIP_" + key;
  }
  return std::string(name);
}

Found find_tool_caches(const std::map<std::string, std::string>& env, const std::string& home,
                       Platform platform, const ConfigReader& read) {
  if (!absolute(home)) return {};
  Finder finder(env, home, platform, read);
  finder.user_cache();
  finder.npm();
  for (const InUserCache& entry : kInUserCache) {
    bool named = finder.moved(entry);
    // pip's configuration files name its cache too (after the variable, which overrides them).
    if (std::string_view(entry.variable) == "PIP_CACHE_DIR")
      named = finder.pip_config_caches() || named;
    if (!named) finder.unmoved(entry);
  }
  finder.cargo_go_gradle_maven();
  return finder.take();
}

std::string_view how_text(bool copy_on_write) {
  if (copy_on_write)
    return "the host's caches that exist are mounted copy-on-write at their own paths (an "
           "overlay: the host's directory is the read-only lower layer, the project's layer in "
           "sbx's state the upper one), so the tools find what the host's tools cached and keep "
           "what they download, and each tool's variable names the host's directory; what a "
           "command writes there goes to the project's layer only, never to the host's files, "
           "which the host's unsandboxed tools read. A tool whose cache the host does not have "
           "is pointed at the project's cache in sbx's state through its variable instead. "
           "Credentials stay unreadable. Runs of the same project share what they stored "
           "(`sbx cache list`, `sbx cache clear`)";
  return "each tool's own variable points it at the project's cache in sbx's state, the only "
         "cache the command can write; it starts empty, so a first run downloads what it needs "
         "(the host's caches are not copied into it, and the tools do not read them); the "
         "host's caches stay read-only and their credentials unreadable, so nothing a command "
         "downloads or plants reaches the host's unsandboxed tools. Runs of the same project "
         "share its cache (`sbx cache list`, `sbx cache clear`)";
}

std::string value_of(const CachePlan& plan, const ToolCache& cache, const CopyOnWrite* cow) {
  std::string dir = join(plan.data, cache.subdir);
  if (cow != nullptr) {
    for (const auto& [variable, directory] : cow->variables)
      if (variable == cache.variable) dir = directory;
  }
  if (cache.variable == "MAVEN_OPTS") return "-Dmaven.repo.local=" + dir;
  return dir;
}

std::string host_directory(const ToolCache& cache) {
  if (cache.variable != "CARGO_HOME" && cache.variable != "GRADLE_USER_HOME")
    return cache.host_path;
  const std::size_t slash = cache.host_path.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/")
                                                  : cache.host_path.substr(0, slash);
}

namespace {

bool within(const std::string& path, const std::string& ancestor) {
  return path_is_within(path, ancestor);
}

// overlayfs reads its mount options split at ',' (and a layer list at ':'), '\' escaping
// (fs/overlayfs/params.c ovl_parse_monolithic, ovl_next_opt): a path holding one is not given
// to it, nor one holding a line break (the plan prints one item per line).
bool overlay_path(const std::string& path) {
  return path.size() > 1 && path.front() == '/' &&
         path.find_first_of(std::string(",:\\\n\0", 5)) == std::string::npos;
}

}  // namespace

CopyOnWrite plan_copy_on_write(const CachePlan& plan, const ResolvedPolicy& policy,
                               const DirectoryLookup& lookup) {
  const std::string& home = plan.home;
  // The first cache listed per variable (find_tool_caches lists the one the tool takes first),
  // its host directory as the tool names it, and that directory's real path when it exists.
  struct Group {
    std::string variable;
    std::string directory;
    std::optional<std::string> real;
  };
  std::vector<Group> groups;
  for (const ToolCache& cache : plan.caches) {
    if (cache.variable.empty()) continue;
    if (std::any_of(groups.begin(), groups.end(),
                    [&](const Group& g) { return g.variable == cache.variable; }))
      continue;
    const std::string directory = host_directory(cache);
    groups.push_back({cache.variable, directory, lookup ? lookup(directory) : std::nullopt});
  }
  // A directory that can be mounted over: read-only in the policy (a writable one's writes are
  // meant for the host; a denied one is not the command's to read), holding neither the working
  // nor the home directory (nor "/"), its path one overlayfs takes.
  const auto mountable = [&](const std::string& dir) {
    return overlay_path(dir) && rule_access(policy, dir) == Access::kRead &&
           !within(policy.cwd, dir) && (home.empty() || !within(home, dir));
  };
  std::vector<std::string> mounts;
  for (const Group& g : groups) {
    if (g.real && mountable(*g.real) &&
        std::find(mounts.begin(), mounts.end(), *g.real) == mounts.end())
      mounts.push_back(*g.real);
  }
  // None below another: the outer one shows the inner one's files already.
  const std::vector<std::string> candidates = mounts;
  std::erase_if(mounts, [&](const std::string& m) {
    return std::any_of(candidates.begin(), candidates.end(),
                       [&](const std::string& other) { return other != m && within(m, other); });
  });
  std::sort(mounts.begin(), mounts.end(), [](const std::string& a, const std::string& b) {
    const auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
    return depth(a) != depth(b) ? depth(a) < depth(b) : a < b;
  });
  CopyOnWrite out;
  for (const std::string& m : mounts)
    out.overlays.push_back({m, plan.directory + "/overlay/" + project_key(m)});
  // A variable is left at the host's directory when that lies in a mount (by its real path,
  // or, missing, as named: a tool makes it there, inside the overlay).
  for (const Group& g : groups) {
    const std::string& at = g.real ? *g.real : g.directory;
    if (std::any_of(mounts.begin(), mounts.end(),
                    [&](const std::string& m) { return within(at, m); }))
      out.variables.emplace_back(g.variable, g.directory);
  }
  // sbx's own state in this cache directory (<cache>/sbx: plan.directory is
  // <cache>/sbx/caches/<key>) stays read-only below an overlay that holds it.
  const std::size_t key = plan.directory.rfind('/');
  const std::size_t caches = key == std::string::npos ? key : plan.directory.rfind('/', key - 1);
  if (caches != std::string::npos && caches > 0) {
    const std::string state = plan.directory.substr(0, caches);
    if (std::any_of(mounts.begin(), mounts.end(),
                    [&](const std::string& m) { return m != state && within(state, m); }))
      out.read_only.push_back(state);
  }
  return out;
}

void drop_overlay(CopyOnWrite& cow, const std::string& path) {
  std::erase_if(cow.overlays, [&](const CacheOverlay& o) { return o.path == path; });
  const auto served = [&cow](const std::string& dir) {
    return std::any_of(cow.overlays.begin(), cow.overlays.end(),
                       [&](const CacheOverlay& o) { return within(dir, o.path); });
  };
  std::erase_if(cow.variables, [&](const auto& v) { return !served(v.second); });
  std::erase_if(cow.read_only, [&](const std::string& dir) { return !served(dir); });
}

void apply_environment(const CachePlan& plan, std::vector<std::string>& env,
                       const CopyOnWrite* cow) {
  std::set<std::string> done;
  for (const ToolCache& cache : plan.caches) {
    if (cache.variable.empty() || !done.insert(cache.variable).second) continue;
    const std::string value = value_of(plan, cache, cow);
    const auto same_name = [&cache](const std::string& entry) {
      return variable_key(std::string_view(entry).substr(0, entry.find('='))) == cache.variable;
    };
    std::string previous;
    for (const std::string& entry : env)
      if (entry.rfind(cache.variable + "=", 0) == 0)
        previous = entry.substr(cache.variable.size() + 1);
    // Every spelling the tool reads goes, not just this one (variable_key): npm reads
    // npm_config_* case-insensitively, and an NPM_CONFIG_CACHE left beside npm_config_cache
    // could win; so could PIP_cache_dir beside PIP_CACHE_DIR.
    std::erase_if(env, same_name);
    if (cache.variable == "MAVEN_OPTS" && !previous.empty())
      env.push_back(cache.variable + "=" + previous + " " + value);
    else
      env.push_back(cache.variable + "=" + value);
  }
}

std::string project_key(const std::string& root) {
  std::string base = root.substr(root.rfind('/') + 1);
  std::string name;
  for (const char c : base) {
    if (name.size() >= 32) break;
    const bool plain =
        std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
    name += plain ? c : '_';
  }
  if (name.empty() || name.front() == '.') name.insert(name.begin(), 'p');
  // A cryptographic hash, not FNV: the key decides whose cache a run writes, and a sandboxed
  // command chooses the names of the directories it creates, so one that finds a second path
  // with the same key (FNV-1a is linear: a lattice search finds one in a second, outside review
  // of issue #40) would share another project's cache. A second preimage of SHA-1 is not
  // known to be feasible; 96 of its bits leave no generic search either. prepare_project also
  // refuses a cache whose recorded project is another.
  boost::uuids::detail::sha1 sha1;
  sha1.process_bytes(root.data(), root.size());
  boost::uuids::detail::sha1::digest_type digest{};
  sha1.get_digest(digest);
  char hex[25];
  std::snprintf(hex, sizeof hex, "%08x%08x%08x", static_cast<unsigned>(digest[0]),
                static_cast<unsigned>(digest[1]), static_cast<unsigned>(digest[2]));
  return name + "-" + hex;
}

#ifndef _WIN32
namespace {

// A recorded project path for an error message: one line, control bytes shown as '?'.
std::string printable_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return "'" + text + "'";
}

// `dir`'s real path (private_state::state_dir returns its directories by their real path too:
// a sandbox binds by a path without symlinks).
Result<std::string> real_dir(const std::string& dir) {
  char resolved[PATH_MAX];
  if (::realpath(dir.c_str(), resolved) == nullptr)
    return Error{"cannot resolve '" + dir + "': " + std::strerror(errno)};
  return std::string(resolved);
}

// A key names one directory directly below the base: no '/', not "." or "..".
bool valid_key(const std::string& key) {
  return !key.empty() && key != "." && key != ".." && key.find('/') == std::string::npos &&
         key.find('\0') == std::string::npos;
}

// Links the host's cargo configuration (config.toml, and the older `config`) into the
// project's CARGO_HOME, `<data>/cargo`, where nothing is at the name yet: the command's cargo
// then reads the user's settings (linkers, registries, net options), never the credentials
// beside them. Every step is relative to a descriptor opened without following symlinks: the
// command may have put anything below <data>, and this runs outside the sandbox.
void link_cargo_config(const std::string& data, const std::string& host_cargo_home) {
  std::vector<std::string> configs;
  struct stat st {};
  for (const char* name : {"config.toml", "config"})
    if (::lstat(join(host_cargo_home, name).c_str(), &st) == 0) configs.emplace_back(name);
  if (configs.empty()) return;
  const UniqueFd data_fd(::open(data.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!data_fd.valid()) return;
  if (::mkdirat(data_fd.get(), "cargo", 0700) != 0 && errno != EEXIST) return;
  const UniqueFd cargo(
      ::openat(data_fd.get(), "cargo", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!cargo.valid() || ::fstat(cargo.get(), &st) != 0 || st.st_uid != ::geteuid()) return;
  for (const std::string& name : configs) {
    const std::string host = join(host_cargo_home, name);
    // EEXIST: something is there already (an earlier run's link, or the command's own file,
    // which only runs of this project read): left as it is.
    if (::symlinkat(host.c_str(), cargo.get(), name.c_str()) != 0 && errno != EEXIST) return;
  }
}

// Opens the directory `name` in `parent` for reading its entries, giving its owner rwx first
// when the tools (Go's module cache is 0555) or a command narrowed its mode; -1 on failure.
int open_for_removal(int parent, const char* name) {
  int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES) {
    // No read permission: opened O_PATH and chmod'ed through /proc/self/fd, which acts on the
    // opened object (proc(5)), never on a name swapped meanwhile.
    const UniqueFd path(::openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!path.valid()) return -1;
    const std::string proc = "/proc/self/fd/" + std::to_string(path.get());
    if (::chmod(proc.c_str(), 0700) != 0) return -1;
    fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd >= 0) (void)::fchmod(fd, 0700);
  return fd;
}

// Removal walks at most this deep below the project's directory; anything deeper is moved up
// into it first (a command can nest directories as deep as it likes: issue #40, outside review
// round 3), so no depth stops `sbx cache clear` and the walk holds at most this many descriptors.
constexpr int kHoistDepth = 128;

Status remove_tree_at(int parent, const std::string& name, dev_t device, int depth, int top,
                      unsigned& hoisted);

// Moves the directory `name` of `parent` into `top` under a fresh name (renameat2
// RENAME_NOREPLACE: an entry the command made there is never replaced). Same filesystem: the
// caller checked the device.
Status hoist(int parent, const std::string& name, int top, unsigned& hoisted) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::string fresh = ".sbx-clear-" + std::to_string(hoisted++);
    if (::renameat2(parent, name.c_str(), top, fresh.c_str(), RENAME_NOREPLACE) == 0) return {};
    if (errno != EEXIST) return Error{"cannot move '" + name + "' up: " + std::strerror(errno)};
  }
  return Error{"cannot move '" + name + "' up: every fresh name is taken"};
}

// Removes every entry of the directory `fd` (at `depth` below `top`), listing it again until it
// is empty: entries moved up into `top` while it is emptied are listed by its next round.
Status empty_directory(int fd, dev_t device, int depth, int top, unsigned& hoisted) {
  const int listed = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  DIR* listing = listed >= 0 ? ::fdopendir(listed) : nullptr;
  if (listing == nullptr) {
    if (listed >= 0) ::close(listed);
    return Error{std::string("cannot list: ") + std::strerror(errno)};
  }
  Status status;
  for (int round = 0; round < 1'000'000 && status.ok(); ++round) {
    ::rewinddir(listing);
    std::vector<std::string> entries;
    while (const dirent* entry = ::readdir(listing)) {
      const std::string_view entry_name = entry->d_name;
      if (entry_name != "." && entry_name != "..") entries.emplace_back(entry_name);
    }
    if (entries.empty()) break;
    for (const std::string& entry : entries) {
      status = remove_tree_at(fd, entry, device, depth + 1, top, hoisted);
      if (!status.ok()) break;
    }
  }
  ::closedir(listing);
  return status;
}

// Removes `name` in the directory `parent` and everything below it, never following a symlink
// (each entry is looked at with AT_SYMLINK_NOFOLLOW and opened with O_NOFOLLOW) and never
// crossing into another filesystem. A directory kHoistDepth below `top` is moved up into `top`
// (removed by `top`'s next listing round) instead of being entered.
Status remove_tree_at(int parent, const std::string& name, dev_t device, int depth, int top,
                      unsigned& hoisted) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return Error{"'" + name + "': " + std::strerror(errno)};
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT)
      return Error{"cannot remove '" + name + "': " + std::strerror(errno)};
    return {};
  }
  if (st.st_dev != device) return Error{"'" + name + "' is another filesystem: left in place"};
  if (depth >= kHoistDepth) return hoist(parent, name, top, hoisted);
  const UniqueFd fd(open_for_removal(parent, name.c_str()));
  if (!fd.valid()) return Error{"cannot open '" + name + "': " + std::strerror(errno)};
  if (Status emptied = empty_directory(fd.get(), device, depth, top, hoisted); !emptied.ok())
    return Error{name + "/" + emptied.error()};
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    return Error{"cannot remove '" + name + "': " + std::strerror(errno)};
  return {};
}

// Bytes and files of the regular files below the directory `fd` (hard links counted once),
// never following a symlink.
void measure(int fd, std::set<std::pair<dev_t, ino_t>>& seen, ProjectCache& out, int depth) {
  if (depth > 512) return;
  DIR* listing = ::fdopendir(fd);
  if (listing == nullptr) {
    ::close(fd);
    return;
  }
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(listing), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode)) {
      if (st.st_nlink > 1 && !seen.insert({st.st_dev, st.st_ino}).second) continue;
      out.bytes += static_cast<std::uint64_t>(st.st_size);
      ++out.files;
    } else if (S_ISDIR(st.st_mode)) {
      const int child = ::openat(::dirfd(listing), entry->d_name,
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) measure(child, seen, out, depth + 1);
    }
  }
  ::closedir(listing);
}

}  // namespace

Result<std::string> caches_base() {
  const private_state::Sources sources = private_state::current_sources();
  Result<std::string> base = private_state::cache_base(sources);
  if (!base.ok())
    return Error{base.error() +
                     " (the toolchain caches go below $XDG_CACHE_HOME or ~/.cache "
                     "only, never in a runtime directory: a tmpfs emptied at logout)",
                 base.kind()};
  for (const std::string& dir : {*base + "/sbx", *base + "/sbx/caches"}) {
    if (Status made = private_state::make_private_dir(dir, sources.uid); !made.ok())
      return made.failure();
  }
  return real_dir(*base + "/sbx/caches");
}

Result<CachePlan> prepare_project(const std::string& base, const std::string& project,
                                  std::vector<ToolCache> caches) {
  CachePlan plan;
  plan.project = project;
  plan.directory = base + "/" + project_key(project);
  plan.data = plan.directory + "/data";
  const uid_t uid = ::geteuid();
  for (const std::string& dir : {plan.directory, plan.data}) {
    if (Status made = private_state::make_private_dir(dir, uid); !made.ok()) return made.failure();
  }
  // The project file says whose cache this is (`sbx cache list`); written only when it does not
  // say anything yet, so that a run costs one small read. A cache recorded for another project
  // is never taken over: its key came from a different path (a collision, or a file planted by
  // hand), and what that project's runs left must not reach this one's tools.
  const std::string file = plan.directory + "/project";
  const Result<std::string> recorded = private_state::read_private_file(file, "cache");
  if (recorded.ok() && *recorded != project + "\n")
    return Error{"the toolchain cache '" + plan.directory + "' is recorded for another project (" +
                     printable_line(*recorded) + "), not for '" + project +
                     "': refusing to share it; remove it with `sbx cache clear --project` of "
                     "that project, or `sbx cache clear --all`",
                 ErrorKind::refused};
  if (!recorded.ok()) (void)private_state::write_private_file(file, project + "\n");
  for (const ToolCache& cache : caches) {
    if (cache.variable != "CARGO_HOME") continue;
    link_cargo_config(plan.data, cache.host_path.substr(0, cache.host_path.rfind('/')));
    break;
  }
  plan.caches = std::move(caches);
  return plan;
}

std::optional<std::string> existing_directory(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  Result<std::string> real = real_dir(path);
  if (!real.ok()) return std::nullopt;
  return std::move(*real);
}

namespace {

// The directory `name` in the directory `parent` (a descriptor), made 0700 when missing: an
// existing one must be a directory of `uid` (not a symlink). Its mode is the command's: the
// root of the upper layer is what the sandbox shows at the cache's path (a `chmod` there
// changes it), and both lie in the private <layers> directory that no one else can reach.
Status make_layer_dir(int parent, const std::string& layers, const char* name, uid_t uid) {
  if (::mkdirat(parent, name, 0700) != 0 && errno != EEXIST)
    return Error{"cannot create '" + layers + "/" + name + "': " + std::strerror(errno)};
  struct stat st {};
  if (::fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != uid)
    return Error{"'" + layers + "/" + name +
                 "' is not a directory of this user: remove it (`sbx cache clear --project`)"};
  return {};
}

}  // namespace

Result<std::vector<UniqueFd>> make_overlay_layers(CopyOnWrite& cow) {
  const uid_t uid = ::geteuid();
  std::vector<UniqueFd> locks;
  std::vector<std::string> busy;
  for (const CacheOverlay& overlay : cow.overlays) {
    const std::string parent = overlay.layers.substr(0, overlay.layers.rfind('/'));
    for (const std::string& dir : {parent, overlay.layers}) {
      if (Status made = private_state::make_private_dir(dir, uid); !made.ok())
        return made.failure();
    }
    UniqueFd layers(
        ::open(overlay.layers.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!layers.valid())
      return Error{"cannot open '" + overlay.layers + "': " + std::strerror(errno)};
    if (::flock(layers.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK)
        return Error{"cannot lock '" + overlay.layers + "': " + std::strerror(errno)};
      busy.push_back(overlay.path);
      continue;
    }
    for (const char* name : {"upper", "work"}) {
      if (Status made = make_layer_dir(layers.get(), overlay.layers, name, uid); !made.ok())
        return made.failure();
    }
    locks.push_back(std::move(layers));
  }
  for (const std::string& path : busy) drop_overlay(cow, path);
  return locks;
}

Result<std::vector<ProjectCache>> list_projects(const std::string& base) {
  const UniqueFd base_fd(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!base_fd.valid()) return Error{"cannot open '" + base + "': " + std::strerror(errno)};
  DIR* listing = ::fdopendir(::fcntl(base_fd.get(), F_DUPFD_CLOEXEC, 0));
  if (listing == nullptr) return Error{"cannot list '" + base + "': " + std::strerror(errno)};
  std::vector<ProjectCache> out;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string key = entry->d_name;
    if (!valid_key(key)) continue;
    struct stat st {};
    if (::fstatat(base_fd.get(), key.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode))
      continue;
    ProjectCache project;
    project.key = key;
    project.directory = base + "/" + key;
    const Result<std::string> recorded =
        private_state::read_private_file(project.directory + "/project", "cache");
    if (recorded.ok()) {
      project.project = *recorded;
      while (!project.project.empty() && project.project.back() == '\n') project.project.pop_back();
      project.project_exists = ::stat(project.project.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    const int fd =
        ::openat(base_fd.get(), key.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    std::set<std::pair<dev_t, ino_t>> seen;
    if (fd >= 0) measure(fd, seen, project, 0);
    out.push_back(std::move(project));
  }
  ::closedir(listing);
  std::sort(out.begin(), out.end(),
            [](const ProjectCache& a, const ProjectCache& b) { return a.key < b.key; });
  return out;
}

Status clear_project(const std::string& base, const std::string& key) {
  if (!valid_key(key)) return Error{"'" + key + "' does not name a project's cache"};
  const UniqueFd base_fd(::open(base.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!base_fd.valid() || ::fstat(base_fd.get(), &st) != 0)
    return Error{"cannot open '" + base + "': " + std::strerror(errno)};
  // The project's directory is emptied as `top`: what lies too deep is moved up into it.
  struct stat key_st {};
  if (::fstatat(base_fd.get(), key.c_str(), &key_st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT
               ? Status{}
               : Error{"cannot clear " + base + "/" + key + ": " + std::strerror(errno)};
  if (!S_ISDIR(key_st.st_mode) || key_st.st_dev != st.st_dev)
    return Error{"cannot clear " + base + "/" + key + ": not a directory on the same filesystem"};
  const UniqueFd top(open_for_removal(base_fd.get(), key.c_str()));
  if (!top.valid()) return Error{"cannot clear " + base + "/" + key + ": " + std::strerror(errno)};
  unsigned hoisted = 0;
  if (Status emptied = empty_directory(top.get(), st.st_dev, 0, top.get(), hoisted); !emptied.ok())
    return emptied.failure().prefixed("cannot clear " + base + "/" + key + "/");
  if (::unlinkat(base_fd.get(), key.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    return Error{"cannot clear " + base + "/" + key + ": " + std::strerror(errno)};
  return {};
}
#endif

}  // namespace sbx::caches
