// The OS half of sbx/core/program_trust.hpp: the path walk and the PATH search of an excluded
// command's program.
#include "sbx/core/program_trust.hpp"

#ifndef _WIN32
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace sbx {
namespace {

#ifndef _WIN32

// path_resolution(7): at most 40 symlinks are followed in one lookup (MAXSYMLINKS).
constexpr int kMaxSymlinks = 40;

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// The components of `path` in order; "" and "." dropped.
void push_components(const std::string& path, std::deque<std::string>& out) {
  std::deque<std::string> parts;
  std::size_t begin = 0;
  while (begin <= path.size()) {
    std::size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(begin, end - begin);
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    begin = end + 1;
  }
  out.insert(out.begin(), parts.begin(), parts.end());
}

PathStep step_of(const std::string& path, const struct stat& st) {
  return PathStep{path, S_ISDIR(st.st_mode), st.st_uid, st.st_gid, st.st_mode};
}

Result<std::string> read_link(const std::string& path) {
  std::string target(4096, '\0');
  const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
  if (n < 0 || static_cast<std::size_t>(n) >= target.size())
    return Error{"cannot read the symlink " + path + ": " +
                 std::strerror(n < 0 ? errno : ENAMETOOLONG)};
  target.resize(static_cast<std::size_t>(n));
  return target;
}

bool executable_file(const PathStep& step) {
  return !step.directory && S_ISREG(step.mode) && (step.mode & 0111) != 0;
}

// A PATH entry this lookup may search: absolute, and nothing on the way to it plantable.
std::optional<std::string> skip_reason(const std::string& entry, const ResolvedPolicy& policy,
                                       const HostUser& user) {
  if (entry.empty() || entry.front() != '/')
    return "a relative entry names a directory below the working directory";
  Result<std::vector<PathStep>> steps = walk_path(entry);
  if (!steps.ok()) return steps.error();
  if (!steps->back().directory) return "not a directory";
  return first_plantable(*steps, policy, user);
}

// A script named like a program of the allowlist (a test fixture named `diff` that starts
// `#!/usr/bin/env python`) would run its interpreter on code sbx never read: only an ELF file
// (elf(5): the magic \x7fELF) is the program a name can stand for.
bool is_elf_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  char magic[4] = {};
  const ssize_t n = ::read(fd, magic, sizeof magic);
  ::close(fd);
  return n == 4 && std::memcmp(magic,
                               "\x7f"
                               "ELF",
                               4) == 0;
}

// The directory holding `real_path` is one of the PATH entries the lookup searched (each
// symlink-free): a name with a '/' may point anywhere the user cannot write, a tool's test
// fixture or a copy of env named ls, while PATH's directories hold the programs the host
// meant to be run by name.
bool in_searched_directory(const std::string& real_path, const std::vector<std::string>& entries) {
  const std::string dir = real_path.substr(0, std::max<std::size_t>(real_path.rfind('/'), 1));
  for (const std::string& entry : entries) {
    Result<std::vector<PathStep>> steps = walk_path(entry);
    if (steps.ok() && steps->back().path == dir) return true;
  }
  return false;
}

TrustedProgram refuse(TrustedProgram out, std::string why) {
  out.path.reset();
  out.refused = std::move(why);
  return out;
}

// The program at `path` (absolute, as found), judged step by step.
TrustedProgram judge_path(TrustedProgram out, const std::string& shown, const std::string& path,
                          const ResolvedPolicy& policy, const HostUser& user) {
  Result<std::vector<PathStep>> steps = walk_path(path);
  if (!steps.ok()) return refuse(std::move(out), "'" + shown + "': " + steps.error());
  if (!executable_file(steps->back()))
    return refuse(std::move(out), "'" + shown + "' (" + path + ") is not an executable file");
  if (std::optional<std::string> why = first_plantable(*steps, policy, user))
    return refuse(std::move(out), "'" + shown + "' (" + path +
                                      ") could have been planted by a "
                                      "sandboxed command: " +
                                      *why);
  if (!is_elf_file(steps->back().path))
    return refuse(std::move(out), "'" + shown + "' (" + steps->back().path +
                                      ") is not a compiled program: a script runs the "
                                      "interpreter its first line names, with code sbx does "
                                      "not check");
  out.path = path;
  out.real_path = steps->back().path;
  return out;
}

// A program judged trustworthy must also lie in one of the searched PATH directories.
TrustedProgram in_path_directory(TrustedProgram found, const std::string& shown,
                                 const std::vector<std::string>& entries) {
  if (!found.path || in_searched_directory(found.real_path, entries)) return found;
  std::string why = "'" + shown + "' is the file " + found.real_path +
                    ", outside the PATH directories searched (" + found.trusted_path_env +
                    "): only programs installed there run without a sandbox";
  return refuse(std::move(found), std::move(why));
}

// A symlink below a checked directory: what it leads to must be unplantable on every step (or,
// when missing, the directory that would hold it).
std::optional<std::string> symlink_target_reason(const std::string& link,
                                                 const ResolvedPolicy& policy,
                                                 const HostUser& user) {
  Result<std::vector<PathStep>> steps = walk_path(link);
  if (!steps.ok()) {
    Result<std::string> target = read_link(link);
    if (!target.ok()) return target.error();
    const std::string absolute =
        !target->empty() && target->front() == '/' ? *target : join(parent_of(link), *target);
    steps = walk_path(parent_of(absolute));
    if (!steps.ok()) return "the symlink " + link + " cannot be verified: " + steps.error();
  }
  if (std::optional<std::string> why = first_plantable(*steps, policy, user))
    return "the symlink " + link + " leads to a path where " + *why;
  return std::nullopt;
}

// `dir`'s listing, opened without following a symlink at its last component; nullptr with
// `error` set when it cannot be read (the caller refuses: nothing unverified is trusted).
DIR* open_listing(const std::string& dir, std::string& error) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR* listing = fd < 0 ? nullptr : ::fdopendir(fd);
  if (listing == nullptr) {
    error = "cannot read " + dir + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
  }
  return listing;
}

#endif  // _WIN32

}  // namespace

#ifdef _WIN32

HostUser current_host_user() { return HostUser{}; }

Result<std::vector<PathStep>> walk_path(const std::string& path) {
  return Error{"cannot verify " + path + ": program paths are not walked on Windows yet"};
}

#else

// The CapEff line of /proc/self/status (proc(5)): a hex mask, all zeros without capabilities.
// Unreadable or missing: capable, so that what cannot be checked is not trusted.
bool holds_effective_capabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    const std::size_t digits = line.find_first_not_of(" \t", 7);
    if (digits == std::string::npos) return true;
    return line.find_first_not_of('0', digits) != std::string::npos;
  }
  return true;
}

HostUser current_host_user() {
  return HostUser{static_cast<std::uint32_t>(::geteuid()), holds_effective_capabilities()};
}

Result<std::vector<PathStep>> walk_path(const std::string& path) {
  if (path.empty() || path.front() != '/') return Error{"'" + path + "' is not an absolute path"};
  std::vector<PathStep> steps;
  struct stat st {};
  if (::lstat("/", &st) != 0) return Error{std::string("cannot stat /: ") + std::strerror(errno)};
  steps.push_back(step_of("/", st));
  std::deque<std::string> rest;
  push_components(path, rest);
  std::string current = "/";
  int links = 0;
  while (!rest.empty()) {
    const std::string name = rest.front();
    rest.pop_front();
    if (name == "..") {
      // `current` is symlink-free, so its lexical parent is its real parent.
      current = parent_of(current);
      continue;
    }
    const std::string next = join(current, name);
    if (::lstat(next.c_str(), &st) != 0)
      return Error{"cannot find " + next + ": " + std::strerror(errno)};
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxSymlinks) return Error{"too many symlinks on the way to " + path};
      Result<std::string> target = read_link(next);
      if (!target.ok()) return target.failure();
      if (!target->empty() && target->front() == '/') current = "/";
      push_components(*target, rest);
      continue;
    }
    if (!rest.empty() && !S_ISDIR(st.st_mode))
      return Error{next + " is not a directory, on the way to " + path};
    current = next;
    steps.push_back(step_of(current, st));
  }
  return steps;
}

#endif

#ifdef _WIN32

std::optional<std::string> first_plantable_below(const std::string& dir, const ResolvedPolicy&,
                                                 const HostUser&, std::size_t) {
  return "the entries below " + dir + " are not verified on Windows yet";
}

#else

std::optional<std::string> first_plantable_below(const std::string& dir,
                                                 const ResolvedPolicy& policy, const HostUser& user,
                                                 std::size_t max_entries) {
  std::vector<std::string> pending{dir};
  std::size_t seen = 0;
  while (!pending.empty()) {
    const std::string current = std::move(pending.back());
    pending.pop_back();
    std::string error;
    DIR* listing = open_listing(current, error);
    if (listing == nullptr) return error;
    std::optional<std::string> found;
    while (const dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (++seen > max_entries) {
        found = "more than " + std::to_string(max_entries) + " entries below " + dir + " to verify";
        break;
      }
      const std::string path = join(current, name);
      struct stat st {};
      if (::fstatat(::dirfd(listing), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        found = "cannot check " + path + ": " + std::strerror(errno);
        break;
      }
      if (S_ISLNK(st.st_mode)) {
        found = symlink_target_reason(path, policy, user);
        if (found) break;
        continue;
      }
      const PathStep step = step_of(path, st);
      if (std::optional<std::string> why = plantable(step, policy, user)) {
        found = *why;
        break;
      }
      if (step.directory) pending.push_back(path);
    }
    ::closedir(listing);
    if (found) return found;
  }
  return std::nullopt;
}

#endif

#ifdef _WIN32

std::optional<std::string> first_plantable_beside(const std::vector<PathStep>& ancestors,
                                                  const ResolvedPolicy&, const HostUser&,
                                                  std::size_t) {
  return ancestors.empty()
             ? std::nullopt
             : std::optional<std::string>("the entries beside " + ancestors.back().path +
                                          " are not verified on Windows yet");
}

#else

namespace {

// One ancestor's entries other than `on_walk` (the walk's next step): the first plantable one.
// A symlink is judged by what it leads to (stat(2)); one that leads nowhere by itself, which
// the user cannot change in a directory it cannot write.
std::optional<std::string> plantable_entry_in(const std::string& dir, const std::string& on_walk,
                                              const ResolvedPolicy& policy, const HostUser& user,
                                              std::size_t max_entries) {
  std::string error;
  DIR* listing = open_listing(dir, error);
  if (listing == nullptr) return error;
  std::optional<std::string> found;
  std::size_t seen = 0;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = join(dir, name);
    if (path == on_walk) continue;
    if (++seen > max_entries) {
      found = "more than " + std::to_string(max_entries) + " entries in " + dir +
              ", above the working directory, to verify";
      break;
    }
    struct stat st {};
    if (::fstatat(::dirfd(listing), name.c_str(), &st, 0) != 0) {
      if (::fstatat(::dirfd(listing), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        found = "cannot check " + path + ": " + std::strerror(errno);
        break;
      }
      // A symlink to a missing path: the directory that would hold the target must not take
      // new names from the user (the last step of a walk is never spared as sticky).
      if (S_ISLNK(st.st_mode)) {
        found = symlink_target_reason(path, policy, user);
        if (found) break;
        continue;
      }
    }
    if (std::optional<std::string> why = plantable_beside(step_of(path, st), user)) {
      found = *why;
      break;
    }
  }
  ::closedir(listing);
  return found;
}

}  // namespace

std::optional<std::string> first_plantable_beside(const std::vector<PathStep>& ancestors,
                                                  const ResolvedPolicy& policy,
                                                  const HostUser& user,
                                                  std::size_t max_per_directory) {
  for (std::size_t i = 0; i + 1 < ancestors.size(); ++i) {
    if (!ancestors[i].directory) continue;
    if (std::optional<std::string> why = plantable_entry_in(
            ancestors[i].path, ancestors[i + 1].path, policy, user, max_per_directory))
      return why;
  }
  return std::nullopt;
}

#endif

#ifdef _WIN32

RepositoryTop repository_top(const std::string& cwd) {
  return RepositoryTop{std::nullopt, "cannot verify " + cwd + ": not on Windows yet", {}};
}

#else

namespace {

bool is_directory_at(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A git directory by git's own test (setup.c is_git_directory): HEAD, objects/ and refs/.
bool is_git_directory(const std::string& dir) {
  struct stat st {};
  return ::lstat(join(dir, "HEAD").c_str(), &st) == 0 && is_directory_at(join(dir, "objects")) &&
         is_directory_at(join(dir, "refs"));
}

// The directory a `.git` file names ("gitdir: PATH", relative to the file's directory;
// gitrepository-layout(5)), symlink-free; nullopt when it cannot be read or resolved.
std::optional<std::string> gitfile_target(const std::string& dir) {
  std::ifstream file(join(dir, ".git"));
  std::string line;
  if (!std::getline(file, line) || line.rfind("gitdir: ", 0) != 0) return std::nullopt;
  std::string target = line.substr(8);
  if (target.empty()) return std::nullopt;
  if (target.front() != '/') target = join(dir, target);
  char* real = ::realpath(target.c_str(), nullptr);
  if (real == nullptr) return std::nullopt;
  std::string out(real);
  std::free(real);
  return out;
}

// How many entries below a repository's top the search for .git files looks at before it gives
// up (the command then runs sandboxed): as many as run.cpp judges below it (kMaxEntriesBelow).
constexpr std::size_t kMaxRepositoryEntries = 20000;

// The first `.git` file below `top` (a submodule's, a nested worktree's) that names a git
// directory outside `top`, as a refusal; every directory below is looked into, symlinks are not
// followed (git does not take a symlink as a submodule's directory). git status recurses into
// submodules and reads their git directories whole (their config's core.fsmonitor included:
// red team round 6), and only what lies below `top` is judged. More than `max_entries` entries:
// refused, as not verified.
std::optional<std::string> gitfile_outside_below(const std::string& top, std::size_t max_entries,
                                                 std::vector<std::string>& gitfile_dirs) {
  std::vector<std::string> pending{top};
  std::size_t seen = 0;
  while (!pending.empty()) {
    const std::string dir = pending.back();
    pending.pop_back();
    DIR* listing = ::opendir(dir.c_str());
    if (listing == nullptr)
      return "the directory " + dir + " in the repository cannot be read: " + std::strerror(errno);
    while (const dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      if (++seen > max_entries) {
        ::closedir(listing);
        return "the repository " + top + " has more than " + std::to_string(max_entries) +
               " entries, too many to verify its .git files";
      }
      const std::string path = join(dir, name);
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        pending.push_back(path);
      } else if (name == ".git" && S_ISREG(st.st_mode)) {
        gitfile_dirs.push_back(dir);
        const std::optional<std::string> target = gitfile_target(dir);
        if (!target || !path_is_within(*target, top)) {
          ::closedir(listing);
          return "the .git file in " + dir + " names a git directory outside the repository " +
                 top + " (" + (target ? *target : std::string("unreadable")) +
                 "), whose files and configuration sbx does not verify";
        }
      }
    }
    ::closedir(listing);
  }
  return std::nullopt;
}

}  // namespace

RepositoryTop repository_top(const std::string& cwd) {
  Result<std::vector<PathStep>> steps = walk_path(cwd);
  if (!steps.ok()) return RepositoryTop{std::nullopt, steps.error(), {}};
  RepositoryTop out;
  std::vector<std::string> gitfiles;  // directories whose .git is a file
  for (const PathStep& step : *steps) {
    if (!step.directory) continue;
    // A `.git` git can use is a directory or a file (symlinks followed, as git's stat does);
    // anything else there (a socket masking a protected name) is not a repository.
    struct stat st {};
    const bool exists = ::stat(join(step.path, ".git").c_str(), &st) == 0;
    const bool has_git = exists && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode));
    if (has_git && S_ISREG(st.st_mode)) gitfiles.push_back(step.path);
    // The outermost wins: the walk goes from "/" down, so the first one found is kept.
    if (!out.top && (has_git || is_git_directory(step.path))) out.top = step.path;
  }
  for (const std::string& dir : gitfiles) {
    const std::optional<std::string> target = gitfile_target(dir);
    if (!target || !path_is_within(*target, *out.top))
      return RepositoryTop{out.top,
                           "the .git file in " + dir +
                               " names a git directory outside the repository " + *out.top +
                               " (a linked worktree), which sbx does not verify",
                           {}};
  }
  if (out.top) {
    if (std::optional<std::string> why =
            gitfile_outside_below(*out.top, kMaxRepositoryEntries, out.gitfile_dirs))
      return RepositoryTop{out.top, *why, {}};
  }
  return out;
}

#endif

TrustedProgram find_trusted_program(const std::string& command, const std::string& cwd,
                                    const std::string& path_env, const ResolvedPolicy& policy,
                                    const HostUser& user) {
  TrustedProgram out;
#ifdef _WIN32
  (void)command, (void)cwd, (void)path_env, (void)policy, (void)user;
  out.refused = "programs of excluded commands are not verified on Windows yet";
  return out;
#else
  // The PATH the program itself gets: only the entries this lookup searched.
  std::size_t begin = 0;
  std::vector<std::string> entries;
  std::string first_absolute_skip;  // why the first absolute entry was skipped, for the refusal
  while (begin <= path_env.size()) {
    std::size_t end = path_env.find(':', begin);
    if (end == std::string::npos) end = path_env.size();
    const std::string entry = path_env.substr(begin, end - begin);
    if (std::optional<std::string> why = skip_reason(entry, policy, user)) {
      out.skipped_path_entries.push_back(entry.empty() ? "(empty)" : entry);
      if (first_absolute_skip.empty() && !entry.empty() && entry.front() == '/')
        first_absolute_skip = entry + ": " + *why;
    } else {
      entries.push_back(entry);
      out.trusted_path_env += (out.trusted_path_env.empty() ? "" : ":") + entry;
    }
    begin = end + 1;
  }
  if (command.empty()) return refuse(std::move(out), "the command is empty");
  // Like a shell: a name containing '/' is a path (relative to cwd) and PATH is not searched.
  if (command.find('/') != std::string::npos) {
    std::string_view relative(command);
    while (relative.substr(0, 2) == "./") relative.remove_prefix(2);  // "./x" is "<cwd>/x"
    const std::string path = command.front() == '/' ? command : join(cwd, std::string(relative));
    return in_path_directory(judge_path(std::move(out), command, path, policy, user), command,
                             entries);
  }
  for (const std::string& dir : entries) {
    const std::string candidate = join(dir, command);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0)
      return in_path_directory(judge_path(std::move(out), command, candidate, policy, user),
                               command, entries);
  }
  std::string why = "'" + command + "' is not found in PATH";
  if (!out.skipped_path_entries.empty()) {
    why += " outside the entries skipped as writable or relative (";
    for (std::size_t i = 0; i < out.skipped_path_entries.size(); ++i)
      why += (i == 0 ? "" : ", ") + out.skipped_path_entries[i];
    why += ")";
    if (!first_absolute_skip.empty()) why += "; " + first_absolute_skip;
  }
  return refuse(std::move(out), why);
#endif
}

}  // namespace sbx
