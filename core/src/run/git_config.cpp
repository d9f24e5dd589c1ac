// The configuration an excluded git reads (git_config.hpp says why).
#include "run/git_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#ifndef _WIN32
#include <sys/stat.h>

#include "sbx/sdk/posix_child.hpp"
#endif

namespace sbx {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string lower_case(std::string_view value) {
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

// A boolean as git-config(1) "Values" reads it; an empty value is false.
bool is_git_boolean(std::string_view value) {
  const std::string lower = lower_case(value);
  for (std::string_view word : {"", "true", "false", "yes", "no", "on", "off", "1", "0"})
    if (lower == word) return true;
  return false;
}

bool is_git_true(std::string_view value) {
  const std::string lower = lower_case(value);
  return lower == "true" || lower == "yes" || lower == "on" || lower == "1";
}

// "section.variable" or "section.<subsection>.variable" (the subsection may hold dots).
std::string_view section_of(std::string_view key) { return key.substr(0, key.find('.')); }
std::string_view variable_of(std::string_view key) { return key.substr(key.rfind('.') + 1); }

}  // namespace

std::optional<std::vector<GitConfigEntry>> parse_git_config_list(std::string_view output) {
  std::vector<GitConfigEntry> entries;
  std::size_t at = 0;
  while (at < output.size()) {
    const std::size_t origin_end = output.find('\0', at);
    if (origin_end == std::string_view::npos) return std::nullopt;
    const std::size_t item_end = output.find('\0', origin_end + 1);
    if (item_end == std::string_view::npos) return std::nullopt;
    const std::string_view item = output.substr(origin_end + 1, item_end - origin_end - 1);
    const std::size_t newline = item.find('\n');
    GitConfigEntry entry{
        std::string(output.substr(at, origin_end - at)), std::string(item.substr(0, newline)),
        newline == std::string_view::npos ? std::string() : std::string(item.substr(newline + 1))};
    if (entry.origin.empty() || entry.key.empty()) return std::nullopt;
    entries.push_back(std::move(entry));
    at = item_end + 1;
  }
  return entries;
}

GitKeyKind git_key_kind(std::string_view key, std::string_view value) {
  const std::string_view section = section_of(key);
  const std::string_view variable = variable_of(key);
  // A partial clone fetches missing objects when log, show or diff need them
  // (partial-clone.txt "Fetching Missing Objects"): a transport run without a sandbox.
  if (key == "extensions.partialclone") return GitKeyKind::kRefused;
  if (section == "remote" && variable == "promisor" && is_git_true(value))
    return GitKeyKind::kRefused;
  // Commands status, log, diff, show and branch may run (git-config(1)): the fsmonitor hook
  // (a boolean selects the built-in daemon), the pager (GIT_PAGER=cat comes first, but
  // pager.<cmd> names one per command), an external diff or textconv, a clean filter (status
  // compares a modified file through it), and gpg for log.showSignature.
  if (key == "core.fsmonitor")
    return is_git_boolean(value) ? GitKeyKind::kOther : GitKeyKind::kProgram;
  if (key == "core.pager" || key == "diff.external") return GitKeyKind::kProgram;
  if (section == "pager") return is_git_boolean(value) ? GitKeyKind::kOther : GitKeyKind::kProgram;
  if (section == "diff" && (variable == "command" || variable == "textconv"))
    return GitKeyKind::kProgram;
  if (section == "filter" && (variable == "clean" || variable == "process" || variable == "smudge"))
    return GitKeyKind::kProgram;
  if (section == "gpg" && variable == "program") return GitKeyKind::kProgram;
  // Another work tree, which git scans (its .gitattributes, its submodules' git directories)
  // and sbx does not judge (red team round 6).
  if (key == "core.worktree") return GitKeyKind::kRefused;
  // Files git reads: included configuration (judged where it would be, also while missing: one
  // could appear between the judgement and git's read; red team round 6), attributes (they name
  // the diff and filter drivers above), excludes, the mailmap and order file (what the output
  // says), hooks; and trace2's target, which it writes.
  if (key == "include.path" || (section == "includeif" && variable == "path"))
    return GitKeyKind::kPath;
  if (key == "core.attributesfile" || key == "core.excludesfile" || key == "core.hookspath" ||
      key == "mailmap.file" || key == "diff.orderfile" || key == "gpg.ssh.allowedsignersfile" ||
      key == "gpg.ssh.revocationfile")
    return GitKeyKind::kPath;
  // A trace2 target is a boolean or a file descriptor number (stderr or that descriptor), a
  // path, or "af_unix:[TYPE:]PATH" (api-trace2.txt): only a path, which git opens, is judged.
  if (section == "trace2" && ends_with(variable, "target") && !is_git_boolean(value) &&
      value.find_first_not_of("0123456789") != std::string_view::npos)
    return starts_with(value, "af_unix:") ? GitKeyKind::kRefused : GitKeyKind::kPath;
  return GitKeyKind::kOther;
}

#ifdef _WIN32

std::optional<std::string> git_configuration_refusal(
    const std::string&, const std::vector<std::string>&, const std::string&,
    const std::vector<std::string>&, const std::string&, const ResolvedPolicy&, const HostUser&) {
  return "git's configuration is not verified on Windows yet";
}

#else

namespace {

// The characters that make git run a command through `sh -c` (run-command.c
// prepare_shell_cmd, SHELL_META_CHARS without the space): a value holding one is refused.
bool has_shell_syntax(std::string_view value) {
  return value.find_first_of("|&;<>()$`\\\"'\n*?[#~=%") != std::string_view::npos;
}

// The words of a value without shell syntax (git splits it on blanks: sh -c with no
// metacharacter, or execvp of the first word).
std::vector<std::string> words_of(std::string_view value) {
  std::vector<std::string> words;
  std::size_t at = 0;
  while ((at = value.find_first_not_of(" \t", at)) != std::string_view::npos) {
    const std::size_t end = std::min(value.find_first_of(" \t", at), value.size());
    words.emplace_back(value.substr(at, end - at));
    at = end;
  }
  return words;
}

// The file an origin "file:<path>" names, absolute. git prints a repository's own config
// relative to the directory it moved to (the work tree's top, or the git directory): the
// nearest ancestor of `cwd` holding that path is the one its discovery took (nearest first).
std::optional<std::string> origin_file(const std::string& origin, const std::string& cwd) {
  if (!starts_with(origin, "file:")) return std::nullopt;
  const std::string path = origin.substr(5);
  if (!path.empty() && path.front() == '/') return path;
  for (std::string dir = cwd;; dir = dir.substr(0, std::max<std::size_t>(dir.rfind('/'), 1))) {
    const std::string candidate = (dir == "/" ? "" : dir) + "/" + path;
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) == 0) return candidate;
    if (dir == "/") return std::nullopt;
  }
}

// Why the file at `path` (git reads it; `what` names it) could have been planted; nullopt when
// it could not, or is missing where no sandbox could create it.
std::optional<std::string> file_refusal(const std::string& what, const std::string& path,
                                        const ResolvedPolicy& policy, const HostUser& user) {
  Result<std::vector<PathStep>> steps = walk_path(path);
  if (!steps.ok()) {
    // Missing: git skips it; the directory that would hold it decides whether one could appear.
    const std::string parent = path.substr(0, std::max<std::size_t>(path.rfind('/'), 1));
    steps = walk_path(parent);
    if (!steps.ok()) return what + " " + path + " cannot be verified: " + steps.error();
  }
  if (std::optional<std::string> why = first_plantable(*steps, policy, user))
    return what + " " + path + " could have been planted by a sandboxed command (" + *why + ")";
  return std::nullopt;
}

// The program a value names must be a trusted one, and so must every file its arguments name:
// `env /x/evil`, `sh /x/evil`, `python3 /x/t.py` run the argument (red team round 7). git runs
// the value in the top of the work tree, not in sbx's cwd, so a relative path with a '/' is
// refused (round 7: `L/../bin/true` resolved elsewhere from the top through a symlink); a
// word without one is found in PATH (the program) or lies in the repository, which is judged
// whole.
// Whether core.worktree (relative to the git directory holding the config that sets it,
// git-config(1)) is a directory inside `top`.
bool worktree_within(const GitConfigEntry& entry, const std::string& cwd, const std::string& top) {
  if (top.empty() || entry.value.empty()) return false;
  std::string path = entry.value;
  if (path.front() != '/') {
    const std::optional<std::string> file = origin_file(entry.origin, cwd);
    if (!file) return false;
    path = file->substr(0, file->rfind('/')) + "/" + path;
  }
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return false;
  const std::string resolved(real);
  std::free(real);
  return path_is_within(resolved, top);
}

std::optional<std::string> program_refusal(const GitConfigEntry& entry, const std::string& cwd,
                                           const std::string& path_env,
                                           const ResolvedPolicy& policy, const HostUser& user) {
  const std::string shown = "git's " + entry.key + " (" + entry.value + ")";
  if (has_shell_syntax(entry.value))
    return shown + " is a shell command, which git runs through sh -c with code sbx does not check";
  const std::vector<std::string> words = words_of(entry.value);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.find('/') == std::string::npos && i > 0) continue;
    if (word.find('/') != std::string::npos && word.front() != '/')
      return shown + " names '" + word +
             "' by a relative path, which git resolves from the work tree's top and sbx does "
             "not verify";
    if (i == 0) {
      TrustedProgram found = find_trusted_program(word, cwd, path_env, policy, user);
      if (!found.path) return shown + " names a program git would run: " + found.refused;
    } else if (std::optional<std::string> why = file_refusal(
                   "the file git's " + entry.key + " passes to its program,", word, policy, user)) {
      return why;
    }
  }
  return std::nullopt;
}

// What git's configuration read in `cwd` names (git_configuration_refusal, for one directory).
// `top`: the repository's top, judged whole; a core.worktree inside it is one of its own
// (a submodule's config says where its work tree is, relative to its git directory).
std::optional<std::string> listing_refusal(const std::string& git, const std::string& cwd,
                                           const std::string& top,
                                           const std::vector<std::string>& env,
                                           const std::string& path_env,
                                           const ResolvedPolicy& policy, const HostUser& user) {
  sdk::posix_child::CaptureOptions options;
  options.env = env;
  options.cwd = cwd;
  options.max_output = 1024 * 1024;
  Result<sdk::posix_child::Captured> listed = sdk::posix_child::run_capture(
      {git, "config", "--list", "--includes", "--show-origin", "-z"}, options);
  const std::string failed = "git's configuration could not be listed (git config --list)";
  if (!listed.ok()) return failed + ": " + listed.error();
  // Exit 1 is an empty list outside a repository with no config at all.
  if (listed->exit_code != 0 && !(listed->exit_code == 1 && listed->output.empty()))
    return failed + ": exit " + std::to_string(listed->exit_code);
  std::optional<std::vector<GitConfigEntry>> entries = parse_git_config_list(listed->output);
  if (!entries) return failed + ": its output is not the expected list";
  std::vector<std::string> judged;
  for (const GitConfigEntry& entry : *entries) {
    if (std::find(judged.begin(), judged.end(), entry.origin) == judged.end()) {
      judged.push_back(entry.origin);
      const std::optional<std::string> file = origin_file(entry.origin, cwd);
      if (!file)
        return "git reads configuration from " + entry.origin + ", which sbx cannot verify";
      if (std::optional<std::string> why =
              file_refusal("git's configuration file", *file, policy, user))
        return why;
    }
    switch (git_key_kind(entry.key, entry.value)) {
      case GitKeyKind::kOther:
        break;
      case GitKeyKind::kRefused:
        if (starts_with(entry.key, "trace2."))
          return "git's " + entry.key + " sends trace output to a unix socket (" + entry.value +
                 "), which sbx does not verify";
        if (entry.key == "core.worktree" && worktree_within(entry, cwd, top)) break;
        if (entry.key == "core.worktree")
          return "git's core.worktree (" + entry.value +
                 ") names another work tree, which sbx does not verify";
        return "git's " + entry.key +
               " makes this a partial clone: git fetches missing objects "
               "over the network, which an unsandboxed command may not";
      case GitKeyKind::kProgram:
        if (std::optional<std::string> why = program_refusal(entry, cwd, path_env, policy, user))
          return why;
        break;
      case GitKeyKind::kPath: {
        if (entry.value.empty()) break;
        std::string path = entry.value;
        if (starts_with(path, "~/")) {
          const auto home = std::find_if(
              env.begin(), env.end(), [](const std::string& e) { return starts_with(e, "HOME="); });
          if (home == env.end())
            return "git's " + entry.key + " (" + path + ") names a file below an unknown HOME";
          path = home->substr(5) + path.substr(1);
        }
        // An include's relative path is relative to the file that includes it (git-config(1)
        // "Includes"); other relative paths are refused.
        const bool include = entry.key == "include.path" || starts_with(entry.key, "includeif.");
        if (path.front() != '/' && include) {
          const std::optional<std::string> file = origin_file(entry.origin, cwd);
          if (!file) return "git's " + entry.key + " (" + path + ") cannot be located";
          path = file->substr(0, file->rfind('/')) + "/" + path;
        }
        if (path.front() != '/')
          return "git's " + entry.key + " (" + path +
                 ") names a file by a relative path, which sbx does not verify";
        if (std::optional<std::string> why =
                file_refusal("the file git's " + entry.key + " names,", path, policy, user))
          return why;
        break;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> git_configuration_refusal(
    const std::string& git, const std::vector<std::string>& dirs, const std::string& top,
    const std::vector<std::string>& env, const std::string& path_env, const ResolvedPolicy& policy,
    const HostUser& user) {
  for (const std::string& dir : dirs) {
    std::vector<std::string> here = env;
    std::erase_if(here, [](const std::string& e) { return starts_with(e, "PWD="); });
    here.push_back("PWD=" + dir);
    if (std::optional<std::string> why =
            listing_refusal(git, dir, top, here, path_env, policy, user))
      return why;
  }
  return std::nullopt;
}

#endif

}  // namespace sbx
