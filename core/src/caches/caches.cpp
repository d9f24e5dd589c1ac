// Toolchain caches (sbx/core/caches.hpp): which caches the tools use, and the project's cache in
// sbx's state they are pointed at instead (core/src/caches/README.md).
#include "sbx/core/caches.hpp"

#ifndef _WIN32
#include <dirent.h>
#include <fcntl.h>
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

#ifndef _WIN32
#include "sbx/sdk/private_state.hpp"
#include "sbx/sdk/unique_fd.hpp"
#endif

namespace sbx::caches {
namespace {

bool absolute(const std::string& path) { return !path.empty() && path.front() == '/'; }

// The value of `name` when it is an absolute path; tools resolve a relative one against their
// own working directory, which is no cache this run can name: taken as unset.
std::string absolute_value(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  return it != env.end() && absolute(it->second) ? it->second : std::string();
}

std::string join(const std::string& dir, std::string_view name) {
  return dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name);
}

// Where the tools that follow the platform's convention keep their caches: Go's
// os.UserCacheDir(), pip's platformdirs: $XDG_CACHE_HOME or ~/.cache on Linux,
// ~/Library/Caches on macOS.
struct UserCache {
  std::string path;
  std::string spelled;  // "$XDG_CACHE_HOME", "~/.cache", "~/Library/Caches"
  std::string unset;    // the variable that was unset for this choice, or ""
};
UserCache user_cache_dir(const std::map<std::string, std::string>& env, const std::string& home,
                         Platform platform) {
  if (platform == Platform::kMacos) return {join(home, "Library/Caches"), "~/Library/Caches", ""};
  const std::string xdg = absolute_value(env, "XDG_CACHE_HOME");
  if (!xdg.empty()) return {xdg, "$XDG_CACHE_HOME", ""};
  return {join(home, ".cache"), "~/.cache", "$XDG_CACHE_HOME"};
}

// A tool's directory `name` in the user cache directory, unless `variable` names another one.
std::pair<std::string, std::string> in_user_cache(const std::map<std::string, std::string>& env,
                                                  const UserCache& cache,
                                                  const std::string& variable,
                                                  const std::string& name) {
  const std::string value = absolute_value(env, variable);
  if (!value.empty()) return {value, "$" + variable};
  return {join(cache.path, name), cache.spelled + "/" + name + " ($" + variable +
                                      (cache.unset.empty() ? "" : " and " + cache.unset) +
                                      " unset)"};
}

// `value` when the variable is set, else `fallback`; the source says which.
std::pair<std::string, std::string> from_variable(const std::map<std::string, std::string>& env,
                                                  const std::string& variable,
                                                  const std::string& fallback,
                                                  const std::string& fallback_words) {
  const std::string value = absolute_value(env, variable);
  if (!value.empty()) return {value, "$" + variable};
  return {fallback, fallback_words + " ($" + variable + " unset)"};
}

}  // namespace

Found find_tool_caches(const std::map<std::string, std::string>& env, const std::string& home,
                       Platform platform) {
  Found out;
  if (!absolute(home)) return out;
  const UserCache user_cache = user_cache_dir(env, home, platform);
  const auto add = [&out](std::string tool, std::string host, std::string source,
                          std::string variable, std::string subdir) {
    out.caches.push_back(ToolCache{std::move(tool), std::move(host), std::move(source),
                                   std::move(variable), std::move(subdir), false});
  };
  // The platform's cache directory as a whole: on Linux every tool that follows the XDG Base
  // Directory Specification (yarn, Cypress, Playwright, Prisma, pre-commit, ...) moves with
  // XDG_CACHE_HOME; macOS's ~/Library/Caches has no variable, so it only stays read-only.
  const std::string user_cache_source =
      user_cache.spelled + (user_cache.unset.empty() ? "" : " (" + user_cache.unset + " unset)");
  if (platform == Platform::kMacos)
    add("Library/Caches", user_cache.path, user_cache_source, "", "");
  else
    add("XDG cache", user_cache.path, user_cache_source, "XDG_CACHE_HOME", "xdg");
  // npm reads npm_config_* in any case (its config is case-insensitive).
  {
    std::string npm = absolute_value(env, "npm_config_cache");
    std::string source = "$npm_config_cache";
    if (npm.empty()) {
      npm = absolute_value(env, "NPM_CONFIG_CACHE");
      source = "$NPM_CONFIG_CACHE";
    }
    if (npm.empty()) {
      npm = join(home, ".npm");
      source = "~/.npm ($npm_config_cache unset)";
    }
    add("npm", npm, source, "npm_config_cache", "npm");
  }
  {
    const auto [pip, source] = in_user_cache(env, user_cache, "PIP_CACHE_DIR", "pip");
    add("pip", pip, source, "PIP_CACHE_DIR", "pip");
  }
  // Cargo keeps downloads in $CARGO_HOME/registry and /git, beside its configuration, installed
  // binaries and credentials; only CARGO_HOME moves them, so the command gets a CARGO_HOME of
  // its own (the host's configuration linked in: prepare_project).
  const auto [cargo_home, cargo_source] =
      from_variable(env, "CARGO_HOME", join(home, ".cargo"), "~/.cargo");
  add("cargo registry", join(cargo_home, "registry"), "registry in " + cargo_source, "CARGO_HOME",
      "cargo");
  add("cargo git", join(cargo_home, "git"), "git in " + cargo_source, "CARGO_HOME", "cargo");
  {
    const auto [gocache, source] = in_user_cache(env, user_cache, "GOCACHE", "go-build");
    add("go build", gocache, source, "GOCACHE", "go-build");
  }
  {
    // The first entry of GOPATH (go help gopath: "the first directory" holds pkg/mod).
    std::string gopath = absolute_value(env, "GOPATH");
    gopath = gopath.substr(0, gopath.find(':'));
    const std::string fallback = join(gopath.empty() ? join(home, "go") : gopath, "pkg/mod");
    const auto [mod, source] = from_variable(env, "GOMODCACHE", fallback,
                                             gopath.empty() ? "~/go/pkg/mod" : "$GOPATH/pkg/mod");
    add("go modules", mod, source, "GOMODCACHE", "go-mod");
  }
  const auto [gradle_home, gradle_source] =
      from_variable(env, "GRADLE_USER_HOME", join(home, ".gradle"), "~/.gradle");
  add("gradle caches", join(gradle_home, "caches"), "caches in " + gradle_source,
      "GRADLE_USER_HOME", "gradle");
  add("gradle wrapper", join(gradle_home, "wrapper"), "wrapper in " + gradle_source,
      "GRADLE_USER_HOME", "gradle");
  // Maven has no variable for its local repository, only the system property that MAVEN_OPTS
  // carries to the JVM (a <localRepository> in settings.xml is not read here).
  add("maven", join(home, ".m2/repository"), "~/.m2/repository", "MAVEN_OPTS", "maven");

  const auto credential = [&out](std::string path, std::string tool, bool only_with_auth) {
    out.credentials.push_back(CredentialFile{std::move(path), std::move(tool), only_with_auth});
  };
  credential(join(cargo_home, "credentials.toml"), "cargo", false);
  credential(join(cargo_home, "credentials"), "cargo", false);
  {
    std::string userconfig = absolute_value(env, "npm_config_userconfig");
    if (userconfig.empty()) userconfig = absolute_value(env, "NPM_CONFIG_USERCONFIG");
    credential(userconfig.empty() ? join(home, ".npmrc") : userconfig, "npm", true);
  }
  credential(join(home, ".m2/settings.xml"), "maven", false);
  credential(join(home, ".m2/settings-security.xml"), "maven", false);
  credential(join(gradle_home, "gradle.properties"), "gradle", false);
  return out;
}

bool holds_auth_setting(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t start = 0;
  while (start < lower.size()) {
    const std::size_t end = std::min(lower.find('\n', start), lower.size());
    std::string_view line = std::string_view(lower).substr(start, end - start);
    start = end + 1;
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#' || line[first] == ';') continue;
    std::string_view key = line.substr(first, line.find('=', first) - first);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t' || key.back() == '\r'))
      key.remove_suffix(1);
    for (const std::string_view suffix : {"_auth", "_authtoken", "_password"}) {
      if (key.size() >= suffix.size() && key.substr(key.size() - suffix.size()) == suffix)
        return true;
    }
  }
  return false;
}

#ifndef _WIN32
bool file_holds_auth_setting(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  constexpr off_t kMax = 1 << 20;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMax)
    return true;
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    done += static_cast<std::size_t>(n);
  }
  return holds_auth_setting(text);
}
#endif

std::string_view how_text() {
  return "each tool's own variable points it at the project's cache in sbx's state, the only "
         "cache the command can write; it starts empty, so a first run downloads what it needs "
         "(the host's caches are not copied into it, and the tools do not read them); the "
         "host's caches stay read-only and their credentials unreadable, so nothing a command "
         "downloads or plants reaches the host's unsandboxed tools. Runs of the same project "
         "share its cache (`sbx cache list`, `sbx cache clear`)";
}

std::string value_of(const CachePlan& plan, const ToolCache& cache) {
  std::string dir = join(plan.data, cache.subdir);
  if (cache.variable == "MAVEN_OPTS") return "-Dmaven.repo.local=" + dir;
  return dir;
}

void apply_environment(const CachePlan& plan, std::vector<std::string>& env) {
  std::set<std::string> done;
  for (const ToolCache& cache : plan.caches) {
    if (cache.variable.empty() || !done.insert(cache.variable).second) continue;
    const std::string value = value_of(plan, cache);
    const auto same_name = [&cache](const std::string& entry) {
      const std::size_t eq = entry.find('=');
      const std::string_view name = std::string_view(entry).substr(0, eq);
      return name.size() == cache.variable.size() &&
             std::equal(name.begin(), name.end(), cache.variable.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
             });
    };
    std::string previous;
    for (const std::string& entry : env)
      if (entry.rfind(cache.variable + "=", 0) == 0)
        previous = entry.substr(cache.variable.size() + 1);
    // Every spelling goes, not just this one: npm reads npm_config_* case-insensitively, and an
    // NPM_CONFIG_CACHE left beside npm_config_cache could win.
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

// Removes `name` in the directory `parent` and everything below it, never following a symlink
// (each entry is looked at with AT_SYMLINK_NOFOLLOW and opened with O_NOFOLLOW) and never
// crossing into another filesystem.
Status remove_tree_at(int parent, const std::string& name, dev_t device, int depth) {
  if (depth > 512) return Error{"'" + name + "': nested too deeply"};
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
  const int fd = open_for_removal(parent, name.c_str());
  if (fd < 0) return Error{"cannot open '" + name + "': " + std::strerror(errno)};
  DIR* listing = ::fdopendir(fd);
  if (listing == nullptr) {
    ::close(fd);
    return Error{"cannot list '" + name + "': " + std::strerror(errno)};
  }
  std::vector<std::string> entries;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view entry_name = entry->d_name;
    if (entry_name != "." && entry_name != "..") entries.emplace_back(entry_name);
  }
  Status status;
  for (const std::string& entry : entries) {
    status = remove_tree_at(::dirfd(listing), entry, device, depth + 1);
    if (!status.ok()) break;
  }
  ::closedir(listing);
  if (!status.ok()) return Error{name + "/" + status.error()};
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

namespace {

// A recorded project path for an error message: one line, control bytes shown as '?'.
std::string printable_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return "'" + text + "'";
}

}  // namespace

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
  if (Status removed = remove_tree_at(base_fd.get(), key, st.st_dev, 0); !removed.ok())
    return removed.failure().prefixed("cannot clear " + base + "/");
  return {};
}
#endif

}  // namespace sbx::caches
