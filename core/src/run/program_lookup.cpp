// The OS half of sbx/core/program_trust.hpp: the path walk and the PATH search of an excluded
// command's program.
#include "sbx/core/program_trust.hpp"

#ifndef _WIN32
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstring>
#include <deque>
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
  out.path = path;
  out.real_path = steps->back().path;
  return out;
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

HostUser current_host_user() { return HostUser{static_cast<std::uint32_t>(::geteuid())}; }

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
    return judge_path(std::move(out), command, path, policy, user);
  }
  for (const std::string& dir : entries) {
    const std::string candidate = join(dir, command);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0)
      return judge_path(std::move(out), command, candidate, policy, user);
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
