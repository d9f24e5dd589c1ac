// Semantic checks and normalisation of a full-form Policy (validate_policy). Shared by the JSON
// parser, the presets and callers that build a Policy in code, so every source of a policy meets
// the same rules and gets the same pointer-prefixed messages.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "policy/internal.hpp"
#include "policy/json_strict.hpp"
#include "policy/path_util.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx {
namespace {

using policy::strict::child;
using policy::strict::error_at;

constexpr std::string_view kPathHint =
    "write an absolute path, \"~/...\", or one of :root, :cwd, :cwd/SUB, :tmpdir, :slash_tmp, "
    ":minimal, :caches (on Windows also X:\\..., %TEMP%, %TMP% or %USERPROFILE%)";

// A Windows path ("C:\\a", "c:/a", "%TEMP%\\sub") in its generic form ("C:/a", "%TEMP%/sub");
// whether it applies is the resolver's question (it refuses one for a POSIX target).
Result<std::string> normalize_windows(std::string_view raw, const std::string& pointer) {
  Result<policy::winpath::VariablePath> variable = policy::winpath::split_variable(raw);
  if (!variable.ok()) return error_at(pointer, variable.error());
  if (variable->name.empty()) {
    Result<std::string> path = policy::winpath::normalize(raw);
    if (!path.ok()) return error_at(pointer, path.error());
    return path;
  }
  // Checked like a path below a drive root, then kept unexpanded for the resolver.
  Result<std::string> rest = policy::winpath::normalize("C:/" + variable->rest);
  if (!rest.ok()) return error_at(pointer, rest.error());
  return "%" + variable->name + "%" + (rest->size() > 3 ? rest->substr(2) : std::string());
}

constexpr std::string_view kSpecialNames[] = {":root",      ":cwd",     ":tmpdir",
                                              ":slash_tmp", ":minimal", ":caches"};

Result<std::string> normalize_special(std::string_view raw, const std::string& pointer) {
  std::string collapsed = policy::path::collapse_slashes(raw);
  std::size_t slash = collapsed.find('/');
  std::string name = collapsed.substr(0, slash);
  if (std::find(std::begin(kSpecialNames), std::end(kSpecialNames), name) ==
      std::end(kSpecialNames)) {
    return error_at(pointer, "unknown special path " + policy::path::quote(name) + "; " +
                                 std::string(kPathHint));
  }
  if (slash == std::string::npos) return collapsed;
  if (name != ":cwd") {
    return error_at(
        pointer, "special path " + name + " takes no subpath; only :cwd does (e.g. :cwd/sub/dir)");
  }
  if (auto bad = policy::path::check_components(collapsed.substr(slash))) {
    return error_at(pointer, policy::path::quote(raw) + " " + *bad);
  }
  return collapsed;
}

// Checks one bracket expression starting at text[i] == '['; returns the index of its ']'.
Result<std::size_t> scan_bracket(std::string_view text, std::size_t i, const std::string& ptr) {
  std::size_t j = i + 1;
  if (j < text.size() && (text[j] == '!' || text[j] == '^')) ++j;
  // A ']' right after '[' or '[!' is a literal member, as in fnmatch(3) and gitignore.
  if (j < text.size() && text[j] == ']') ++j;
  for (; j < text.size(); ++j) {
    if (text[j] == '\\') {
      ++j;
    } else if (text[j] == ']') {
      return j;
    }
  }
  return error_at(ptr, "glob " + policy::path::quote(text) + ": '[' at offset " +
                           std::to_string(i) + " is never closed with ']'");
}

// Syntax of a gitignore-style glob: escapes, [...] and {a,b} must be complete, so a backend
// never has to guess what a malformed pattern was meant to deny.
Status check_glob_syntax(std::string_view text, const std::string& ptr) {
  int braces = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\') {
      if (i + 1 == text.size()) {
        return error_at(ptr, "glob " + policy::path::quote(text) + " ends with a lone backslash");
      }
      // '/' separates components wherever it stands (gitignore(5)), so an escaped one means
      // nothing, and dropping a trailing slash would leave "a\/" as "a\" (a lone backslash).
      if (text[i + 1] == '/') {
        return error_at(ptr, "glob " + policy::path::quote(text) + ": '\\/' at offset " +
                                 std::to_string(i) +
                                 " escapes a '/', which always separates components; write '/'");
      }
      ++i;
    } else if (c == '[') {
      Result<std::size_t> end = scan_bracket(text, i, ptr);
      if (!end) return end.failure();
      i = *end;
    } else if (c == ']') {
      return error_at(ptr, "glob " + policy::path::quote(text) + ": ']' at offset " +
                               std::to_string(i) + " has no matching '['");
    } else if (c == '{') {
      ++braces;
    } else if (c == '}') {
      if (--braces < 0) {
        return error_at(ptr, "glob " + policy::path::quote(text) + ": '}' at offset " +
                                 std::to_string(i) + " has no matching '{'");
      }
    }
  }
  if (braces != 0)
    return error_at(ptr, "glob " + policy::path::quote(text) + ": '{' is never closed");
  return {};
}

// A glob names special paths the way an entry does, or not at all: ":cwd/" at its start is the
// working directory (resolution expands it, as in an entry's ":cwd/SUB"); any other special
// name, at the start or as a later component, is refused rather than matched as a literal
// directory called ":cwd" that does not exist (a deny that would deny nothing, silently).
// A literal leading ':' or such a component is written with a backslash ("\\:cwd").
Status check_glob_special_paths(std::string_view raw, const std::string& pointer) {
  std::string_view rest = raw;
  if (rest.substr(0, 5) == ":cwd/") rest.remove_prefix(5);
  const std::string hint =
      "; a glob expands only \":cwd/\" and \"~/\" at its start (e.g. \":cwd/**/*.pem\"); "
      "write another directory as an absolute path, or a literal ':' as \"\\:\"";
  if (!rest.empty() && rest.front() == ':' && rest.data() == raw.data()) {
    return error_at(pointer, "glob " + policy::path::quote(raw) + " starts with " +
                                 policy::path::quote(raw.substr(0, raw.find('/'))) +
                                 ", which is not expanded in a glob" + hint);
  }
  std::size_t start = 0;
  while (start <= rest.size()) {
    const std::size_t end = std::min(rest.find('/', start), rest.size());
    const std::string_view part = rest.substr(start, end - start);
    if (std::find(std::begin(kSpecialNames), std::end(kSpecialNames), part) !=
        std::end(kSpecialNames)) {
      return error_at(pointer, "glob " + policy::path::quote(raw) + " holds the special path " +
                                   std::string(part) +
                                   " as a component, where it would match only a directory "
                                   "of that literal name" +
                                   hint);
    }
    start = end + 1;
  }
  return {};
}

Result<std::string> normalize_glob(std::string_view raw, const std::string& pointer) {
  if (raw.empty()) return error_at(pointer, "empty glob; write a pattern such as \"**/*.pem\"");
  if (raw.front() == '~' && raw.substr(0, 2) != "~/") {
    return error_at(pointer, "glob " + policy::path::quote(raw) +
                                 ": only \"~/\" is expanded; \"~user\" is not supported");
  }
  if (Status special = check_glob_special_paths(policy::path::collapse_slashes(raw), pointer);
      !special)
    return special.failure();
  if (auto bad = policy::path::check_components(raw)) {
    return error_at(pointer, "glob " + policy::path::quote(raw) + " " + *bad);
  }
  Status syntax = check_glob_syntax(raw, pointer);
  if (!syntax) return syntax.failure();
  std::string out = policy::path::collapse_slashes(raw);
  if (out == "/" || out == "~") {
    return error_at(
        pointer, "glob " + policy::path::quote(raw) + " matches no file name; deny a path instead");
  }
  return out;
}

Status check_entry(PolicyEntry& entry, const std::string& pointer) {
  bool has_path = !entry.path.empty();
  bool has_glob = !entry.glob.empty();
  if (has_path == has_glob) {
    return error_at(pointer, "an entry needs exactly one of \"path\" or \"glob\"");
  }
  std::string access_pointer = child(pointer, "access");
  if (has_glob) {
    Result<std::string> glob = normalize_glob(entry.glob, child(pointer, "glob"));
    if (!glob) return glob.failure();
    entry.glob = std::move(*glob);
    if (entry.access != Access::kDeny) {
      return error_at(access_pointer,
                      "globs are deny-only; use \"access\": \"deny\" or name a path");
    }
    return {};
  }
  Result<std::string> normalized = policy::normalize_entry_path(entry.path, child(pointer, "path"));
  if (!normalized) return normalized.failure();
  entry.path = std::move(*normalized);
  if (entry.path == ":minimal" && entry.access != Access::kRead) {
    return error_at(access_pointer,
                    ":minimal (the platform files programs need) can only be granted read");
  }
  if (entry.path == ":caches" && entry.access != Access::kWrite) {
    // Read is what the caches' directories already get from the rules that hold them, and a
    // deny of them is an entry naming their paths: ":caches" asks for the project's own cache.
    return error_at(access_pointer,
                    ":caches (the toolchain caches, written to the project's own cache) can "
                    "only be granted write");
  }
  return {};
}

Status check_protected_names(const std::vector<std::string>& names, const std::string& pointer) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    std::string item = child(pointer, i);
    if (name.empty()) return error_at(item, "empty name; write a plain name such as \".git\"");
    if (name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      return error_at(item, policy::path::quote(name) +
                                " is not a plain file name (no '/', not \".\" or \"..\")");
    }
    auto first = std::find(names.begin(), names.end(), name);
    if (first != names.begin() + static_cast<std::ptrdiff_t>(i)) {
      return error_at(item, "duplicate name " + policy::path::quote(name) + ", already at " +
                                child(pointer, static_cast<std::size_t>(first - names.begin())));
    }
  }
  return {};
}

Status check_filesystem(FilesystemSpec& fs) {
  const std::string pointer = "/filesystem";
  if (fs.kind != FilesystemKind::kRestricted && !fs.entries.empty()) {
    return error_at(child(pointer, "entries"),
                    "filesystem kind " + std::string(to_string(fs.kind)) +
                        " takes no entries; use kind restricted or remove the entries");
  }
  for (std::size_t i = 0; i < fs.entries.size(); ++i) {
    Status status = check_entry(fs.entries[i], child(child(pointer, "entries"), i));
    if (!status) return status;
  }
  return check_protected_names(fs.protected_names, child(pointer, "protected_names"));
}

}  // namespace

namespace policy {

Result<std::string> normalize_entry_path(std::string_view raw, const std::string& pointer) {
  if (raw.empty()) return error_at(pointer, "empty path; " + std::string(kPathHint));
  if (raw.find('\0') != std::string_view::npos) {
    return error_at(pointer, "path contains a NUL byte");
  }
  if (raw.front() == ':') return normalize_special(raw, pointer);
  if (policy::winpath::looks_windows(raw)) return normalize_windows(raw, pointer);
  bool absolute = raw.front() == '/';
  bool home = raw == "~" || raw.substr(0, 2) == "~/";
  if (!absolute && !home) {
    if (raw.front() == '~') {
      return error_at(pointer, policy::path::quote(raw) +
                                   ": \"~user\" is not supported; write \"~/...\" for your home "
                                   "directory or an absolute path");
    }
    return error_at(pointer, "relative path " + policy::path::quote(raw) +
                                 "; write it as an absolute path, \"~/" + std::string(raw) +
                                 "\" or \":cwd/" + std::string(raw) + "\"");
  }
  if (auto bad = policy::path::check_components(raw)) {
    return error_at(pointer, policy::path::quote(raw) + " " + *bad);
  }
  return policy::path::collapse_slashes(raw);
}

}  // namespace policy

Result<Policy> validate_policy(Policy policy) {
  if (policy.version != 1) {
    return error_at("/version", "unsupported version " + std::to_string(policy.version) +
                                    "; this sbx understands version 1");
  }
  Status fs = check_filesystem(policy.filesystem);
  if (!fs) return fs.failure();
  Status net = policy::check_network(policy.network);
  if (!net) return net.failure();
  Status limits = policy::check_limits(policy.limits);
  if (!limits) return limits.failure();
  Status environment = policy::check_environment(policy.environment);
  if (!environment) return environment.failure();
  return policy;
}

}  // namespace sbx
