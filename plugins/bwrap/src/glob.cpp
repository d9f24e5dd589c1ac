// Deny-glob matching and launch-time expansion. bwrap can only mask concrete paths, so every
// deny glob becomes the list of paths it matches when the command starts; files created later
// are not covered (translate() says so in the plan's notes).
#include <dirent.h>
#include <sys/stat.h>

#include <cstring>
#include <set>

#include "sbx/bwrap/host.hpp"

namespace sbx::bwrap {
namespace {

std::vector<std::string> split_components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > start) out.push_back(path.substr(start, end - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

// Matches "[...]" at pattern[pi] against c; advances pi past the class. False if malformed.
bool match_class(const std::string& pattern, std::size_t& pi, char c, bool& matched) {
  std::size_t i = pi + 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool hit = false;
  bool first = true;
  for (; i < pattern.size() && (first || pattern[i] != ']'); ++i, first = false) {
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      if (pattern[i] <= c && c <= pattern[i + 2]) hit = true;
      i += 2;
    } else if (pattern[i] == c) {
      hit = true;
    }
  }
  if (i >= pattern.size()) return false;  // no closing ']'
  pi = i + 1;
  matched = hit != negate;
  return true;
}

bool match_component(const std::string& pattern, std::size_t pi, const std::string& name,
                     std::size_t ni) {
  while (pi < pattern.size()) {
    const char p = pattern[pi];
    if (p == '*') {
      for (std::size_t k = ni; k <= name.size(); ++k) {
        if (match_component(pattern, pi + 1, name, k)) return true;
      }
      return false;
    }
    if (ni >= name.size()) return false;
    if (p == '?') {
      ++pi;
    } else if (p == '[') {
      bool matched = false;
      std::size_t next = pi;
      if (!match_class(pattern, next, name[ni], matched)) {
        if (name[ni] != '[') return false;  // a lone '[' is literal
        ++pi;
      } else {
        if (!matched) return false;
        pi = next;
      }
    } else {
      if (p == '\\' && pi + 1 < pattern.size()) ++pi;
      if (pattern[pi] != name[ni]) return false;
      ++pi;
    }
    ++ni;
  }
  return ni == name.size();
}

bool match_parts(const std::vector<std::string>& pat, std::size_t pi,
                 const std::vector<std::string>& parts, std::size_t ni) {
  if (pi == pat.size()) return ni == parts.size();
  if (pat[pi] == "**") {
    for (std::size_t k = ni; k <= parts.size(); ++k) {
      if (match_parts(pat, pi + 1, parts, k)) return true;
    }
    return false;
  }
  if (ni == parts.size()) return false;
  return match_component(pat[pi], 0, parts[ni], 0) && match_parts(pat, pi + 1, parts, ni + 1);
}

bool has_meta(const std::string& component) {
  return component.find_first_of("*?[{") != std::string::npos;
}

struct Walk {
  std::vector<std::string> patterns;
  std::set<std::string> matches;
  std::size_t max_matches = 0;
  bool overflow = false;
};

void walk(const std::string& dir, Walk& w, int depth) {
  if (depth > 64 || w.overflow) return;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;  // unreadable: nothing below it can be read by the command either
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = (dir == "/" ? "" : dir) + "/" + e->d_name;
    for (const std::string& p : w.patterns) {
      if (glob_matches(p, path)) {
        w.matches.insert(path);
        break;
      }
    }
    if (w.matches.size() > w.max_matches) {
      w.overflow = true;
      break;
    }
    struct stat st {};
    // lstat: a symlinked directory is not walked into (its target is walked where it lives).
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) walk(path, w, depth + 1);
  }
  ::closedir(d);
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern) {
  const std::size_t open = pattern.find('{');
  if (open == std::string::npos) return {pattern};
  int level = 0;
  std::vector<std::size_t> commas;
  std::size_t close = std::string::npos;
  for (std::size_t i = open; i < pattern.size() && close == std::string::npos; ++i) {
    if (pattern[i] == '{')
      ++level;
    else if (pattern[i] == '}' && --level == 0)
      close = i;
    else if (pattern[i] == ',' && level == 1)
      commas.push_back(i);
  }
  if (close == std::string::npos) return {pattern};  // unbalanced: literal
  std::vector<std::string> out;
  std::size_t start = open + 1;
  commas.push_back(close);
  for (std::size_t comma : commas) {
    const std::string alt =
        pattern.substr(0, open) + pattern.substr(start, comma - start) + pattern.substr(close + 1);
    for (std::string& e : expand_braces(alt)) out.push_back(std::move(e));
    start = comma + 1;
  }
  return out;
}

bool glob_matches(const std::string& pattern, const std::string& path) {
  for (const std::string& alt : expand_braces(pattern)) {
    if (match_parts(split_components(alt), 0, split_components(path), 0)) return true;
  }
  return false;
}

Result<std::vector<std::string>> expand_deny_globs(const std::vector<std::string>& patterns,
                                                   std::size_t max_matches) {
  std::set<std::string> all;
  for (const std::string& pattern : patterns) {
    for (const std::string& alt : expand_braces(pattern)) {
      std::string prefix;
      for (const std::string& c : split_components(alt)) {
        if (has_meta(c) || c == "**") break;
        prefix += "/" + c;
      }
      if (prefix.empty())
        return Error{"deny glob '" + pattern +
                     "' has no literal directory prefix: expanding it would walk the whole "
                     "filesystem; anchor it below a directory (e.g. ':cwd/**/*.pem')"};
      if (prefix.size() == alt.size()) {  // no wildcard at all: a plain path
        struct stat st {};
        if (::lstat(prefix.c_str(), &st) == 0) all.insert(prefix);
        continue;
      }
      Walk w;
      w.patterns = {alt};
      w.max_matches = max_matches;
      walk(prefix, w, 0);
      if (w.overflow)
        return Error{"deny glob '" + pattern + "' matched more than " +
                     std::to_string(max_matches) + " paths; narrow it"};
      all.insert(w.matches.begin(), w.matches.end());
    }
  }
  if (all.size() > max_matches)
    return Error{"deny globs matched more than " + std::to_string(max_matches) + " paths"};
  // A match inside another match is already masked by it.
  std::vector<std::string> out;
  for (const std::string& m : all) {
    if (out.empty() || !path_is_within(m, out.back())) out.push_back(m);
  }
  return out;
}

}  // namespace sbx::bwrap
