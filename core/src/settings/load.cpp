// Finding and reading the settings files of every scope (sbx/core/settings.hpp). The managed
// file goes through the plugin loader's descriptor-based trust checks: it binds every user of
// the host, so a file anyone but root could have written is refused, loudly.
#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#ifndef _WIN32
#include "plugins/trusted_fs.hpp"
#endif
#include "policy/path_util.hpp"
#include "sbx/core/bounded_read.hpp"
#include "sbx/core/settings.hpp"

namespace sbx::settings {
namespace {

constexpr std::string_view kUserFile = "sbx/settings.json";
constexpr std::string_view kProjectFile = ".sbx/settings.json";

#ifdef _WIN32

bool exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(std::filesystem::symlink_status(path, error));
}

Result<bool> present(const std::string& path) { return exists(path); }

// Managed settings bind every user, so the file must be one only administrators can write; that
// check (the DACL of the file and its directories, plugins/trusted_acl.hpp) is not wired to
// settings on Windows yet, so a managed file is refused rather than read unchecked.
Result<std::optional<std::string>> read_managed(const Sources& sources) {
  if (sources.managed_file.empty() || !exists(sources.managed_file))
    return std::optional<std::string>{};
  return Error{"refusing the managed settings " + sources.managed_file +
                   ": their ownership and ACLs are not checked on Windows yet, and unchecked "
                   "administrator settings are never used",
               ErrorKind::refused};
}

// A file of the user or project scope: the user's own, read as any file they could edit. At
// most one byte more than the parser accepts is read.
Result<std::optional<std::string>> read_plain(const std::string& path) {
  if (path.empty() || !exists(path)) return std::optional<std::string>{};
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    return Error{"cannot read the settings " + path + ": not a regular file"};
  std::ifstream in(std::filesystem::u8path(path), std::ios::binary);
  if (!in) return Error{"cannot open " + path};
  return std::optional<std::string>(read_at_most(in, kMaxSettingsBytes + 1));
}

#else

// Reads at most one byte more than the parser accepts, so an oversized file is reported by the
// parser without being read whole.
Result<std::string> read_fd(int fd) {
  std::string text;
  if (!read_at_most(fd, kMaxSettingsBytes + 1, text))
    return Error{std::string("cannot read it: ") + std::strerror(errno)};
  return text;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Whether a settings path is there. lstat(2): ENOENT and ENOTDIR (a component missing, or not a
// directory) mean it is not; any other error (EACCES after a `chmod 000` of .sbx or of the
// config directory, ELOOP, EIO) means one may be there that cannot be read, which is never
// taken as "absent": the settings it holds (deny rules, locks) would silently be dropped.
Result<bool> present(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return Error{"cannot check the settings " + path + ": " + std::strerror(errno) +
               "; make it and the directories above it readable by you again (or remove it)"};
}

// The managed file, or nullopt when there is none. A missing directory or file means no managed
// settings; anything else that fails a check (owner, group/other write on the file or any
// directory above it, a symlink, not a regular file) is an error: silently skipping an unsafe
// file would drop the administrator's locks.
Result<std::optional<std::string>> read_managed(const Sources& sources) {
  const std::string& path = sources.managed_file;
  const std::size_t slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash + 1 == path.size())
    return Error{"the managed settings path '" + path + "' is not an absolute file path"};
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  const plugins::Owners owners{sources.managed_owner};
  plugins::DirectoryWalk walk =
      plugins::open_trusted_directory(dir, sources.managed_trust_root, owners);
  if (!walk.fd.valid()) {
    if (walk.missing) return std::optional<std::string>{};
    return Error{"refusing the managed settings " + path + ": " + walk.error, ErrorKind::refused};
  }
  struct stat st {};
  if (::fstatat(walk.fd.get(), path.substr(slash + 1).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 &&
      errno == ENOENT)
    return std::optional<std::string>{};
  // An empty file would pass every check but the loader's "a shared object is not empty";
  // reported as the JSON error it is, not as that.
  if (S_ISREG(st.st_mode) && st.st_size == 0)
    return Error{"invalid managed settings " + path + ": the file is empty; expected an object",
                 ErrorKind::invalid_input};
  Result<plugins::TrustedFile> file =
      plugins::open_trusted_file(walk.fd.get(), dir, path.substr(slash + 1), owners);
  if (!file)
    return Error{"refusing the managed settings " + path + ": " + file.error(), ErrorKind::refused};
  Result<std::string> text = read_fd(file->fd.get());
  if (!text) return text.failure().prefixed("cannot read the managed settings " + path + ": ");
  return std::optional<std::string>(std::move(*text));
}

// A file of the user or project scope: the user's own, read as any file they could edit.
Result<std::optional<std::string>> read_plain(const std::string& path) {
  if (path.empty()) return std::optional<std::string>{};
  Result<bool> here = present(path);
  if (!here) return here.failure();
  if (!*here) return std::optional<std::string>{};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{"cannot read the settings " + path + ": not a regular file"};
  }
  Result<std::string> text = read_fd(fd);
  ::close(fd);
  if (!text) return text.failure().prefixed("cannot read the settings " + path + ": ");
  return std::optional<std::string>(std::move(*text));
}

#endif  // _WIN32

std::string real_or_same(const std::string& path) {
  return policy::path::real_path(path).value_or(path);
}

bool is_trusted(const std::string& root, const std::vector<std::string>& trusted) {
  const std::string real = real_or_same(root);
  for (const std::string& dir : trusted) {
    if (real_or_same(dir) == real) return true;
  }
  return false;
}

std::optional<std::string> parent_dir(const std::string& dir) {
  if (dir == "/") return std::nullopt;
  const std::size_t slash = dir.rfind('/');
  // A Windows drive root ("C:") has no parent: stop there, as at "/".
  if (slash == std::string::npos) return std::nullopt;
  return slash == 0 ? "/" : dir.substr(0, slash);
}

// Where the project settings come from.
struct ProjectSearch {
  std::optional<std::string> root;  // the project: the trusted one, else the nearest untrusted
  bool trusted = false;
  // The untrusted .sbx/settings.json files between the cwd and the project, nearest first:
  // never read. A sandboxed command can write one into any directory it can write, and if the
  // nearest file alone counted, such a decoy would take the trusted project's place (and its
  // deny entries with it).
  std::vector<std::string> ignored;
};

// The nearest directory at or above the cwd that holds .sbx/settings.json and is trusted;
// untrusted ones on the way are passed over. With no trusted one, the nearest untrusted one is
// the (ignored) project.
Result<ProjectSearch> find_project(const std::string& cwd,
                                   const std::vector<std::string>& trusted) {
  ProjectSearch out;
  std::optional<std::string> nearest;
  for (std::optional<std::string> dir = cwd; dir && !dir->empty(); dir = parent_dir(*dir)) {
    const std::string file = policy::path::join(*dir, std::string(kProjectFile));
    if (is_trusted(*dir, trusted)) {
      Result<bool> here = present(file);
      if (!here) return here.failure();
      if (!*here) continue;
      out.root = *dir;
      out.trusted = true;
      return out;
    }
    // An untrusted file is never read, only reported: whether it can be checked changes nothing.
    if (!exists(file)) continue;
    if (!nearest) nearest = *dir;
    out.ignored.push_back(file);
  }
  out.root = nearest;
  return out;
}

// The trusted project (as listed) that holds the logical cwd, lexically, when its real path
// leaves that project: a symlink on the way (one a sandboxed run could plant inside the project)
// leads out. Read by the real path alone, such a cwd would drop the project's settings and the
// protection of its .sbx; read by the logical path alone, a symlink would decide what applies.
std::optional<std::string> trusted_project_left(const Sources& sources,
                                                const std::vector<std::string>& trusted) {
  if (sources.logical_cwd.empty() || sources.logical_cwd == sources.cwd) return std::nullopt;
  auto within = [](const std::string& path, const std::string& dir) {
    return path == dir || dir == "/" || path.rfind(dir + "/", 0) == 0;
  };
  for (const std::string& dir : trusted) {
    const std::string real = real_or_same(dir);
    if (!within(sources.logical_cwd, dir) && !within(sources.logical_cwd, real)) continue;
    if (!within(sources.cwd, real)) return dir;
  }
  return std::nullopt;
}

// True if a trusted project holds the cwd (with a settings file or not).
bool inside_trusted_project(const std::string& cwd, const std::vector<std::string>& trusted) {
  for (const std::string& dir : trusted) {
    const std::string real = real_or_same(dir);
    if (cwd == real || real == "/" || cwd.rfind(real + "/", 0) == 0) return true;
  }
  return false;
}

Result<ScopeSettings> parse_file(const std::string& text, Scope scope, const std::string& path) {
  Result<ScopeSettings> parsed = parse_settings(text, scope);
  if (!parsed)
    return Error{"invalid " + std::string(to_string(scope)) + " settings in " + path + ": " +
                     parsed.error() + "; fix the file (sbx config show reads it)",
                 ErrorKind::invalid_input};
  return parsed;
}

// The files the next run would read once they exist (Settings::absent_files): the user file,
// and the settings file of every trusted project, wherever the cwd is. A run in one trusted
// project could otherwise create the settings of another one below its writable roots (a
// nested trusted project, say), which the next run there would read as trusted.
Result<std::vector<std::string>> absent_files(const Sources& sources,
                                              const std::vector<std::string>& trusted) {
  std::vector<std::string> out;
  // Not the managed file: only root can create /etc/sbx, and a command given write access to
  // /etc can already change what every later program does.
  if (!sources.user_file.empty() && sources.user_file.front() == '/') {
    Result<bool> here = present(sources.user_file);
    if (!here) return here.failure();
    if (!*here) out.push_back(sources.user_file);
  }
  for (const std::string& dir : trusted) {
    const std::string file = policy::path::join(real_or_same(dir), std::string(kProjectFile));
    Result<bool> here = present(file);
    if (!here) return here.failure();
    if (!*here) out.push_back(file);
  }
  return out;
}

// The .sbx directories of the trusted projects (real paths), those that exist
// (Settings::guarded_dirs): kept read-only whole, so that no run can chmod, fill or empty one.
std::vector<std::string> guarded_dirs(const std::vector<std::string>& trusted) {
  std::vector<std::string> out;
  for (const std::string& dir : trusted) {
    const std::string sbx_dir = policy::path::join(real_or_same(dir), ".sbx");
    std::optional<std::string> real = policy::path::real_path(sbx_dir);
    if (real && std::find(out.begin(), out.end(), *real) == out.end()) out.push_back(*real);
  }
  return out;
}

// The existing settings files of trusted projects this run does not read
// (Settings::guarded_files), for the same reason.
std::vector<std::string> guarded_files(const std::vector<std::string>& trusted,
                                       const std::vector<Sourced<std::string>>& read) {
  std::vector<std::string> out;
  for (const std::string& dir : trusted) {
    const std::string file =
        real_or_same(policy::path::join(real_or_same(dir), std::string(kProjectFile)));
    const bool is_read = std::any_of(
        read.begin(), read.end(), [&](const Sourced<std::string>& f) { return f.value == file; });
    if (exists(file) && !is_read) out.push_back(file);
  }
  return out;
}

}  // namespace

Sources current_sources(const std::string& cwd, const std::map<std::string, std::string>& env) {
  Sources sources;
  sources.cwd = cwd;
  auto xdg = env.find("XDG_CONFIG_HOME");
  auto home = env.find("HOME");
  // XDG Base Directory: a relative XDG_CONFIG_HOME is invalid and ignored.
  if (xdg != env.end() && !xdg->second.empty() && xdg->second.front() == '/') {
    sources.user_file = policy::path::join(xdg->second, std::string(kUserFile));
  } else if (home != env.end() && !home->second.empty() && home->second.front() == '/') {
    sources.user_file = policy::path::join(home->second, ".config/" + std::string(kUserFile));
  }
  // getcwd(3) and POSIX cd -L: PWD is the logical path only while it still names the cwd.
  auto pwd = env.find("PWD");
  if (pwd != env.end() && !pwd->second.empty() && pwd->second.front() == '/' &&
      real_or_same(pwd->second) == cwd)
    sources.logical_cwd = policy::path::lexically_normal(pwd->second);
  return sources;
}

Result<Settings> load_settings(const Sources& sources, const ScopeSettings* caller) {
  std::vector<std::pair<Scope, ScopeSettings>> scopes;
  std::vector<Sourced<std::string>> files;
  Result<std::optional<std::string>> managed = read_managed(sources);
  if (!managed) return managed.failure();
  if (*managed) {
    Result<ScopeSettings> parsed = parse_file(**managed, Scope::kManaged, sources.managed_file);
    if (!parsed) return parsed.failure();
    scopes.emplace_back(Scope::kManaged, std::move(*parsed));
    files.push_back({sources.managed_file, Scope::kManaged});
  }
  std::vector<std::string> trusted;
  Result<std::optional<std::string>> user = read_plain(sources.user_file);
  if (!user) return user.failure();
  if (*user) {
    Result<ScopeSettings> parsed = parse_file(**user, Scope::kUser, sources.user_file);
    if (!parsed) return parsed.failure();
    trusted = parsed->trusted_projects;
    scopes.emplace_back(Scope::kUser, std::move(*parsed));
    files.push_back({real_or_same(sources.user_file), Scope::kUser});
  }
  if (std::optional<std::string> left = trusted_project_left(sources, trusted))
    return Error{"the working directory " + sources.logical_cwd +
                 " is inside the trusted project " + *left + ", but its real path " + sources.cwd +
                 " is not (a symlink on the way leads out, and a sandboxed command could have "
                 "planted it); run from the real directory, or remove the symlink"};
  std::vector<std::string> notes;
  // Without the logical path (no --cwd, PWD absent or naming another directory), a symlink on
  // the way to the cwd that leads out of a trusted project is invisible: the real path is all
  // there is (getcwd(3) resolves symlinks).
  if (!trusted.empty() && sources.logical_cwd.empty())
    notes.push_back("the working directory " + sources.cwd +
                    " was given by neither --cwd nor a PWD that names it: a symlink on the way "
                    "to it that leads out of a trusted project cannot be detected; pass --cwd "
                    "or PWD");
  Result<ProjectSearch> searched = find_project(sources.cwd, trusted);
  if (!searched) return searched.failure();
  const ProjectSearch& project = *searched;
  for (const std::string& file : project.ignored) {
    const std::string dir = file.substr(0, file.size() - kProjectFile.size() - 1);
    // Never read: an untrusted repository must not widen its own sandbox (nor fail the run
    // with a file it wrote), nor hide a trusted project's settings.
    notes.push_back("project settings " + file + " ignored: " + dir + " is not a trusted project" +
                    (project.trusted
                         ? "; the settings of the trusted project " + *project.root + " apply"
                         : " (trust it with `sbx config trust " + dir + "`)"));
  }
  if (project.trusted) {
    const std::string path = policy::path::join(*project.root, std::string(kProjectFile));
    Result<std::optional<std::string>> text = read_plain(path);
    if (!text) return text.failure();
    if (*text) {
      Result<ScopeSettings> parsed = parse_file(**text, Scope::kProject, path);
      if (!parsed) return parsed.failure();
      scopes.emplace_back(Scope::kProject, std::move(*parsed));
      files.push_back({real_or_same(path), Scope::kProject});
    }
  }
  if (caller != nullptr) scopes.emplace_back(Scope::kCommandLine, *caller);
  Result<Settings> merged = merge_settings(scopes);
  if (!merged) return merged;
  Result<std::vector<std::string>> absent = absent_files(sources, trusted);
  if (!absent) return absent.failure();
  merged->absent_files = std::move(*absent);
  merged->guarded_dirs = guarded_dirs(trusted);
  merged->guarded_files = guarded_files(trusted, files);
  merged->files = std::move(files);
  merged->project_root = project.root;
  merged->project_trusted = project.trusted;
  merged->ignored_project_files = project.ignored;
  merged->inside_trusted_project = inside_trusted_project(sources.cwd, trusted);
  merged->notes.insert(merged->notes.begin(), notes.begin(), notes.end());
  return merged;
}

}  // namespace sbx::settings
