// Protected names under writable roots (core/src/resolution/README.md). Existing ones
// must stay read-only and missing ones uncreatable, so that a sandboxed command cannot plant git
// hooks or agent configuration that would later run outside the sandbox.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "policy/path_util.hpp"
#include "resolution/internal.hpp"

namespace sbx::resolution {
namespace {

// A .git or commondir file is a few hundred bytes; anything longer is not one we understand.
constexpr std::size_t kMaxPointerFile = 4096;

// The first line of the regular file at `path`, trimmed; nullopt if it is not a regular file.
// O_NOFOLLOW + fstat: a symlink named .git is protected as itself, never read through.
std::optional<std::string> read_first_line(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string data(kMaxPointerFile, '\0');
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::read(fd, data.data(), data.size());
  ::close(fd);
  if (n < 0) return std::nullopt;
  data.resize(static_cast<std::size_t>(n));
  data = data.substr(0, data.find('\n'));
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!data.empty() && space(data.back())) data.pop_back();
  std::size_t first = 0;
  while (first < data.size() && space(data[first])) ++first;
  return data.substr(first);
}

// `target` as written in a pointer file inside `dir`: absolute, or relative to `dir`.
std::string pointer_target(const std::string& dir, const std::string& target) {
  std::string joined = target.front() == '/' ? target : policy::path::join(dir, target);
  if (std::optional<std::string> real = policy::path::real_path(joined)) return *real;
  return policy::path::canonicalize(policy::path::lexically_normal(joined));
}

ProtectedPath describe(std::string path, const std::string& root) {
  ProtectedPath out{std::move(path), root, false, false};
  struct stat st {};
  if (::lstat(out.path.c_str(), &st) == 0) {
    out.exists = true;
    out.is_directory = S_ISDIR(st.st_mode);
  }
  return out;
}

// R/.git is a file ("gitdir: <dir>") for worktrees and submodules: the real repository lives
// elsewhere, and its hooks run outside the sandbox, so it is protected too.
void add_gitdir(const std::string& root, std::vector<ProtectedPath>& out,
                std::vector<std::string>& notes) {
  std::string dot_git = policy::path::join(root, ".git");
  std::optional<std::string> line = read_first_line(dot_git);
  if (!line) return;
  constexpr std::string_view kPrefix = "gitdir:";
  if (line->compare(0, kPrefix.size(), kPrefix) != 0) {
    notes.push_back(dot_git + " is a file without a \"gitdir:\" line; only the file is protected");
    return;
  }
  std::string target = line->substr(kPrefix.size());
  target.erase(0, target.find_first_not_of(" \t"));
  if (target.empty()) {
    notes.push_back(dot_git + " has an empty gitdir; only the file is protected");
    return;
  }
  std::string gitdir = pointer_target(root, target);
  out.push_back(describe(gitdir, root));
  if (!out.back().exists) {
    notes.push_back(dot_git + " points to " + gitdir +
                    ", which does not exist; it is protected from being created");
    return;
  }
  // A linked worktree's gitdir holds "commondir", naming the main .git with hooks and config.
  if (std::optional<std::string> common =
          read_first_line(policy::path::join(gitdir, "commondir"))) {
    if (!common->empty()) out.push_back(describe(pointer_target(gitdir, *common), root));
  }
}

}  // namespace

std::vector<ProtectedPath> protected_paths(const std::vector<PathRule>& rules,
                                           const std::vector<std::string>& names,
                                           std::vector<std::string>& notes) {
  std::vector<ProtectedPath> out;
  for (const PathRule& rule : rules) {
    if (rule.access != Access::kWrite) continue;
    for (const std::string& name : names) {
      out.push_back(describe(policy::path::join(rule.path, name), rule.path));
      if (name == ".git") add_gitdir(rule.path, out, notes);
    }
  }
  std::sort(out.begin(), out.end(), [](const ProtectedPath& a, const ProtectedPath& b) {
    return a.path != b.path ? a.path < b.path : a.writable_root < b.writable_root;
  });
  out.erase(
      std::unique(out.begin(), out.end(),
                  [](const ProtectedPath& a, const ProtectedPath& b) { return a.path == b.path; }),
      out.end());
  return out;
}

}  // namespace sbx::resolution
