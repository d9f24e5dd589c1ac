// Kept probe answers (probe_store.hpp). One file per backend: the key on the first line, the
// answer in the wire format of probe_wire.hpp after it.
#include "plugins/probe_store.hpp"

#include <algorithm>
#include <string_view>

#include "plugins/probe_wire.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/sdk/backend.hpp"

#ifndef _WIN32
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#endif

namespace sbx::kept_probe {

bool keepable(const ProbeReport& report) {
  bool says_keepable = false;
  for (const ProbeCheck& check : report.checks) {
    if (check.name == kKeepableProbeCheck && check.status == CheckStatus::kPass)
      says_keepable = true;
    // Dependencies that cannot be keyed on make the answer unkeepable, not keyed on less.
    if (check.name == kKeepableDependsOnCheck &&
        (check.status != CheckStatus::kPass || !dependencies(report)))
      return false;
  }
  return says_keepable;
}

std::optional<std::vector<std::string>> dependencies(const ProbeReport& report) {
  std::vector<std::string> paths;
  for (const ProbeCheck& check : report.checks) {
    if (check.name != kKeepableDependsOnCheck) continue;
    for (std::size_t at = 0; at <= check.observed.size();) {
      std::size_t end = check.observed.find(", ", at);
      if (end == std::string::npos) end = check.observed.size();
      paths.push_back(check.observed.substr(at, end - at));
      at = end + 2;
    }
  }
  // The same rule the backend's side applies (keepable_dependencies): absolute, one line.
  if (!paths.empty() && keepable_dependencies(paths).empty()) return std::nullopt;
  return paths;
}

#ifdef _WIN32

// Nothing is kept on Windows (no probe runs in a child there, so there is little to save).
std::optional<std::string> current_store_dir() { return std::nullopt; }
std::vector<std::string> state_directory_names() { return {}; }
std::vector<std::string> absent_state_directory_names() { return {}; }
std::vector<std::string> state_directory_links() { return {}; }
std::vector<std::string> state_directories() { return {}; }
std::string answer_path(const std::string& dir, const LoadedPlugin& plugin) {
  return dir + "/" + plugin.name + ".answer";
}
std::string answer_key(const LoadedPlugin&, const std::vector<std::string>&) { return {}; }
std::optional<ProbeReport> load(const std::string&, const LoadedPlugin&) { return std::nullopt; }
void keep(const std::string&, const LoadedPlugin&, const ProbeReport&) {}

#else

namespace {

// Bumped when the file format or the meaning of the key changes.
constexpr std::string_view kFormat = "sbx-kept-probe-v2";

std::string first_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The identity of a file: any replacement, upgrade, rebuild or chmod changes it (device, inode,
// size, mode, owner, and change/modification times to the nanosecond). "" when it is missing.
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
  std::ostringstream out;
  out << path << ',' << st.st_dev << ',' << st.st_ino << ',' << st.st_size << ',' << st.st_mode
      << ',' << st.st_uid << ',' << st.st_mtim.tv_sec << '.' << st.st_mtim.tv_nsec << ','
      << st.st_ctim.tv_sec << '.' << st.st_ctim.tv_nsec;
  return out.str();
}

// What a backend's answer depends on beyond the common key (kKeepableDependsOnCheck): a
// sysctl's value, any other file's identity; "missing" when there is none, so that a file that
// appears later changes the key too.
std::string dependency_identity(const std::string& path) {
  if (path.rfind("/proc/sys/", 0) == 0) {
    std::ifstream in(path);
    if (!in) return path + "=missing";
    std::string line;
    std::getline(in, line);
    return path + '=' + line;
  }
  const std::string identity = file_identity(path);
  return identity.empty() ? path + ",missing" : identity;
}

}  // namespace

std::optional<std::string> store_dir(const private_state::Sources& sources) {
  const std::optional<std::string> runtime = private_state::runtime_base(sources);
  if (!runtime) return std::nullopt;
  const std::string dir = *runtime + "/sbx-probe";
  if (!private_state::make_private_dir(dir, sources.uid).ok()) return std::nullopt;
  return dir;
}

std::optional<std::string> current_store_dir() {
  return store_dir(private_state::current_sources());
}

namespace {

// Root's <cache>/sbx/caches for each cache directory a run of root may use ($XDG_CACHE_HOME,
// $HOME/.cache, the passwd home's .cache), when root keeps its other state in /run; none for
// any other user (candidate_state_dirs holds their <cache>/sbx).
std::vector<std::string> root_caches_dirs(const private_state::Sources& sources) {
  std::vector<std::string> out;
  if (sources.uid != 0 || sources.root_run.empty()) return out;
  for (const std::string& cache_home :
       {sources.xdg_cache_home, sources.home.empty() ? std::string() : sources.home + "/.cache",
        sources.passwd_home.empty() ? std::string() : sources.passwd_home + "/.cache"}) {
    if (cache_home.empty() || cache_home.front() != '/') continue;
    out.push_back(cache_home + "/sbx/caches");
  }
  return out;
}

}  // namespace

std::vector<std::string> state_directory_names() {
  const private_state::Sources sources = private_state::current_sources();
  std::vector<std::string> dirs;
  const auto add = [&dirs](const std::string& dir) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  };
  if (const std::optional<std::string> store = store_dir(sources)) add(*store);
  const Result<std::string> proxy = private_state::state_dir(sources, "proxy");
  const Result<std::string> bwrap = private_state::state_dir(sources, "bwrap");
  for (const Result<std::string>* dir : {&proxy, &bwrap})
    if (dir->ok()) add(**dir);
  // Without a runtime directory both are <cache>/sbx/<name>: that directory too.
  if (!private_state::runtime_base(sources)) {
    for (const Result<std::string>* dir : {&proxy, &bwrap})
      if (dir->ok()) add(private_state::split_path(**dir).first);
  }
  // And every other place a later run of this user could keep its state (issue #32 B3).
  for (const std::string& dir :
       private_state::candidate_state_dirs(sources, {"probe", "proxy", "bwrap"}))
    add(dir);
  // The projects' toolchain caches (sbx/core/caches.hpp) are <cache>/sbx/caches, which the
  // candidates above hold for every user but root with /run, whose state is all there: root's
  // caches directory is kept like state once it exists, so that no run whose writable roots
  // reach it (`--writable-root ~/.cache`) writes another project's cache. Not made here when
  // missing (absent_state_directory_names: resolution makes one a writable root reaches).
  for (const std::string& caches : root_caches_dirs(sources)) {
    struct stat st {};
    if (::lstat(caches.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) add(caches);
  }
  return dirs;
}

std::vector<std::string> absent_state_directory_names() {
  std::vector<std::string> dirs;
  for (const std::string& caches : root_caches_dirs(private_state::current_sources())) {
    struct stat st {};
    if (::lstat(caches.c_str(), &st) != 0 && errno == ENOENT &&
        std::find(dirs.begin(), dirs.end(), caches) == dirs.end())
      dirs.push_back(caches);
  }
  return dirs;
}

std::vector<std::string> state_directory_links() {
  std::vector<std::string> links;
  for (const std::string& name : state_directory_names()) {
    // Each prefix of the name as written: the names a lookup meets before it follows anything
    // (where a link leads is judged by private_state::why_shared_path).
    for (std::size_t at = 1;;) {
      const std::size_t slash = name.find('/', at);
      const std::string prefix = name.substr(0, slash);
      struct stat st {};
      if (::lstat(prefix.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        // Where the link itself lies, its directory by its real path (as policy rules are).
        const auto [dir, base] = private_state::split_path(prefix);
        char real[PATH_MAX];
        const std::string link =
            ::realpath(dir.c_str(), real) != nullptr ? std::string(real) + "/" + base : prefix;
        if (std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
      }
      if (slash == std::string::npos) break;
      at = slash + 1;
    }
  }
  return links;
}

std::vector<std::string> state_directories() {
  std::vector<std::string> dirs;
  for (const std::string& name : state_directory_names()) {
    // The real path only: a sandbox binds its read-only copy by a path without symlinks
    // (bwrap opens every bind source with O_NOFOLLOW), and a symlinked ~/.cache is common.
    // What a command could do to the symlink itself is the run's StateModeGuard's to undo.
    char real[PATH_MAX];
    const std::string dir = ::realpath(name.c_str(), real) != nullptr ? real : name;
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  return dirs;
}

// <backend>-<16 hex digits>.answer, the digits an FNV-1a hash of the plugin's path and of the
// file holding the running libsbx code: two installs of sbx used in turn keep their answers
// side by side instead of replacing each other's on every run. Only a name: the key inside
// still decides whether an answer is reused. A rebuild in place keeps the name.
std::string answer_path(const std::string& dir, const LoadedPlugin& plugin) {
  Result<InstallLayout> layout = install_layout();
  const std::string install = plugin.path + '\0' + (layout.ok() ? layout->libsbx_path : "");
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : install) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return dir + "/" + plugin.name + "-" + hex + ".answer";
}

// Everything a keepable answer may depend on (sbx/sdk/backend.hpp), so that any change that
// could change the answer finds another key and probes again:
//  - the boot and the kernel: boot id, release and build (a reboot, another kernel, a boot with
//    other LSMs);
//  - the process: effective uid and gid, user namespace, seccomp mode and no_new_privs (sbx run
//    inside another sandbox, whose filter may refuse what the probe tried, must not reuse the
//    host's answer);
//  - sbx's own files: the plugin file, sbx-stage2 and the file holding the running libsbx code
//    (an upgrade or rebuild of any of them), and sbx's version and this format.
// A Landlock domain around the process is not visible from inside (the kernel exposes none):
// a kept answer may then claim what a nested restrict_self refuses; the run then fails
// (exit 125) where a fresh probe would have passed the backend over.
std::string answer_key(const LoadedPlugin& plugin, const std::vector<std::string>& depends_on) {
  Result<InstallLayout> layout = install_layout();
  if (!layout.ok()) return {};
  struct utsname kernel {};
  if (::uname(&kernel) != 0) return {};
  const std::string boot = first_line_of("/proc/sys/kernel/random/boot_id");
  const std::string plugin_file = file_identity(plugin.path);
  const std::string stage2 = file_identity(layout->stage2_path);
  const std::string libsbx = file_identity(layout->libsbx_path);
  // Seccomp mode and filters, no_new_privs, capabilities and every namespace: an answer kept
  // outside a container's confinement must not be reused inside it (issue #38).
  const std::string confinement = private_state::caller_confinement();
  if (boot.empty() || plugin_file.empty() || stage2.empty() || libsbx.empty() ||
      confinement.empty())
    return {};
  std::ostringstream key;
  key << kFormat << '|' << sbx_version() << '|' << plugin.name << '|' << boot << '|'
      << kernel.release << '|' << kernel.version << '|' << ::geteuid() << ',' << ::getegid() << '|'
      << confinement << '|' << plugin_file << '|' << stage2 << '|' << libsbx;
  for (const std::string& path : depends_on) key << '|' << dependency_identity(path);
  std::string text = key.str();
  // One line: a path with a line break would make the file ambiguous.
  if (text.find('\n') != std::string::npos) return {};
  return text;
}

std::optional<ProbeReport> load(const std::string& dir, const LoadedPlugin& plugin) {
  const std::string path = answer_path(dir, plugin);
  // The file first: a backend that keeps nothing costs one failed open, not a key.
  Result<std::string> text = private_state::read_private_file(path, "kept answer");
  if (!text.ok()) return std::nullopt;
  const std::size_t newline = text->find('\n');
  if (newline == std::string::npos) return std::nullopt;
  Result<ProbeReport> report = probe_from_wire(std::string_view(*text).substr(newline + 1));
  // Only what a backend itself said may be kept is reused (a file this user wrote by hand
  // without it is not an answer).
  if (!report.ok() || !keepable(*report)) return std::nullopt;
  // The key is formed with the dependencies the answer names: what they are now must be what
  // they were when it was kept.
  const std::optional<std::vector<std::string>> depends_on = dependencies(*report);
  const std::string key = depends_on ? answer_key(plugin, *depends_on) : std::string();
  if (key.empty() || std::string_view(*text).substr(0, newline) != key) return std::nullopt;
  for (ProbeCheck& check : report->checks) {
    if (check.name == kKeepableProbeCheck)
      check.observed = "kept: the answer of an earlier probe this boot, read from " + path +
                       " (`sbx backends --probe` probes afresh)";
  }
  return std::move(*report);
}

void keep(const std::string& dir, const LoadedPlugin& plugin, const ProbeReport& report) {
  const std::string path = answer_path(dir, plugin);
  const std::optional<std::vector<std::string>> depends_on = dependencies(report);
  const std::string key =
      keepable(report) && depends_on ? answer_key(plugin, *depends_on) : std::string();
  if (key.empty()) {
    ::unlink(path.c_str());
    return;
  }
  (void)private_state::write_private_file(path, key + '\n' + probe_to_wire(report));
}

#endif  // _WIN32

}  // namespace sbx::kept_probe
