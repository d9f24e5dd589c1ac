#include "sbx/core/win_path.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

namespace sbx::policy::winpath {
namespace {

char fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }
bool is_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_separator(char c) { return c == '\\' || c == '/'; }

std::string folded(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = fold(c);
  return out;
}

// Not named `quoted`: for a std::string argument, argument-dependent lookup would prefer
// std::quoted wherever <iomanip> happens to be included.
std::string single_quoted(std::string_view path) { return "'" + std::string(path) + "'"; }

// Why one component of `whole` is not a plain Windows file name; nullopt if it is one.
std::optional<std::string> component_refusal(std::string_view part, std::string_view whole) {
  if (part == "." || part == "..")
    return "Windows path " + single_quoted(whole) + " contains a \"" + std::string(part) +
           "\" component; write the path without \".\" and \"..\"";
  for (char c : part) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || std::string_view("<>:\"|?*").find(c) != std::string_view::npos)
      return "Windows path " + single_quoted(whole) +
             " contains a character Windows does not allow in a file name (< > : \" | ? * or a "
             "control character; ':' would name an alternate data stream)";
  }
  if (part.back() == '.' || part.back() == ' ')
    return "Windows path " + single_quoted(whole) +
           " has a component ending in a dot or a space, "
           "which Windows strips, so it would name another file";
  if (is_reserved_device_name(part))
    return "Windows path " + single_quoted(whole) + " names the reserved device '" +
           std::string(part) + "', not a file";
  return std::nullopt;
}

// The components of `rest` (separated by '\' or '/', empty ones dropped), each checked.
Result<std::vector<std::string_view>> split_components(std::string_view rest,
                                                       std::string_view whole) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start < rest.size()) {
    std::size_t end = start;
    while (end < rest.size() && !is_separator(rest[end])) ++end;
    const std::string_view part = rest.substr(start, end - start);
    if (!part.empty()) {
      if (std::optional<std::string> bad = component_refusal(part, whole)) return Error{*bad};
      parts.push_back(part);
    }
    start = end + 1;
  }
  return parts;
}

std::string join_generic(std::string_view base, std::string_view rel) {
  std::string out(base);
  if (rel.empty()) return out;
  if (out.back() != '/') out += '/';
  out += rel;
  return out;
}

}  // namespace

bool is_drive_absolute(std::string_view path) {
  return path.size() >= 3 && is_letter(path[0]) && path[1] == ':' && is_separator(path[2]);
}

bool looks_windows(std::string_view path) {
  if (path.empty()) return false;
  if (path.size() >= 2 && is_letter(path[0]) && path[1] == ':') return true;
  return path.front() == '\\' || path.front() == '%';
}

std::optional<std::string> refusal(std::string_view path) {
  if (path.empty()) return std::string("empty Windows path");
  if (path.find('\0') != std::string_view::npos)
    return "Windows path " + single_quoted(path) + " contains a NUL byte";
  if (path.size() >= 2 && is_separator(path[0]) && is_separator(path[1])) {
    if (path.size() >= 4 && (path[2] == '?' || path[2] == '.') && is_separator(path[3]))
      return "Windows path " + single_quoted(path) +
             " is a device path (\\\\?\\ or \\\\.\\): it skips Win32's path normalisation, so "
             "sbx refuses it; write a drive path such as C:\\dir";
    return "Windows path " + single_quoted(path) +
           " is a UNC path (\\\\server\\share): a share's access is decided by the server, "
           "which no local sandbox controls; copy the files to a local drive";
  }
  if (path.size() >= 4 && path[0] == '\\' && path[1] == '?' && path[2] == '?' && path[3] == '\\')
    return "Windows path " + single_quoted(path) +
           " is an NT object path (\\??\\): sbx refuses it; write a drive path such as C:\\dir";
  if (is_separator(path[0]))
    return "Windows path " + single_quoted(path) +
           " has no drive letter, so it is relative to the current drive; write X:\\...";
  if (path.size() >= 2 && is_letter(path[0]) && path[1] == ':') {
    if (!is_drive_absolute(path))
      return "Windows path " + single_quoted(path) +
             " is relative to the drive's current directory; write " +
             std::string(1, upper(path[0])) + ":\\...";
    Result<std::vector<std::string_view>> parts = split_components(path.substr(3), path);
    if (!parts.ok()) return parts.error();
    return std::nullopt;
  }
  return "Windows path " + single_quoted(path) + " is not absolute; write X:\\...";
}

Result<std::string> normalize(std::string_view path) {
  if (std::optional<std::string> bad = refusal(path)) return Error{*bad};
  Result<std::vector<std::string_view>> parts = split_components(path.substr(3), path);
  if (!parts.ok()) return parts.failure();
  std::string out = {upper(path[0]), ':', '/'};
  for (std::size_t i = 0; i < parts->size(); ++i) {
    if (i > 0) out += '/';
    out += (*parts)[i];
  }
  return out;
}

Result<VariablePath> split_variable(std::string_view path) {
  if (path.empty() || path.front() != '%') return VariablePath{"", std::string(path)};
  const std::size_t close = path.find('%', 1);
  if (close == std::string_view::npos)
    return Error{"Windows path " + single_quoted(path) + " opens a %VARIABLE% it never closes"};
  std::string name;
  for (char c : path.substr(1, close - 1)) name += upper(c);
  const bool known = std::find(std::begin(kPathVariables), std::end(kPathVariables), name) !=
                     std::end(kPathVariables);
  if (!known)
    return Error{"Windows path " + single_quoted(path) +
                 ": only %TEMP%, %TMP% and %USERPROFILE% are "
                 "expanded (the first component of a path), not %" +
                 std::string(path.substr(1, close - 1)) + "%"};
  std::string rest(path.substr(close + 1));
  if (!rest.empty() && !is_separator(rest.front()))
    return Error{"Windows path " + single_quoted(path) + ": %" + name +
                 "% must be followed by a separator or end the path"};
  return VariablePath{std::move(name), std::move(rest)};
}

std::optional<std::string> env_lookup(const std::map<std::string, std::string>& env,
                                      std::string_view name) {
  const std::string want = folded(name);
  for (const auto& [key, value] : env) {
    if (folded(key) == want) return value;
  }
  return std::nullopt;
}

Result<std::string> expand(std::string_view path, const std::map<std::string, std::string>& env) {
  Result<VariablePath> variable = split_variable(path);
  if (!variable.ok()) return variable.failure();
  if (variable->name.empty()) return normalize(path);
  std::optional<std::string> value = env_lookup(env, variable->name);
  if (!value || value->empty())
    return Error{"Windows path " + single_quoted(path) + " needs %" + variable->name +
                 "%, which is not set"};
  Result<std::string> base = normalize(*value);
  if (!base.ok())
    return base.failure().prefixed("%" + variable->name + "% (" + single_quoted(*value) +
                                   ") cannot be used: ");
  Result<std::vector<std::string_view>> parts = split_components(variable->rest, path);
  if (!parts.ok()) return parts.failure();
  std::string out = *base;
  for (std::string_view part : *parts) out = join_generic(out, part);
  return out;
}

bool equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (fold(a[i]) != fold(b[i])) return false;
  }
  return true;
}

bool within(std::string_view path, std::string_view dir) {
  if (path.size() < dir.size() || !equal(path.substr(0, dir.size()), dir)) return false;
  if (path.size() == dir.size()) return true;
  // The drive root "C:/" ends with its separator; any other dir needs one after it.
  return dir.back() == '/' || path[dir.size()] == '/';
}

std::string Speller::spell(std::string_view generic) {
  // Only generic drive paths ("C:/..."); "/" (the whole machine) and the rest are as given.
  if (!is_drive_absolute(generic)) return std::string(generic);
  std::string out(generic.substr(0, 3));
  std::size_t start = 3;
  while (start < generic.size()) {
    std::size_t end = generic.find('/', start);
    if (end == std::string_view::npos) end = generic.size();
    const std::string prefix = join_generic(out, generic.substr(start, end - start));
    out = first_.emplace(folded(prefix), prefix).first->second;
    start = end + 1;
  }
  return out;
}

bool is_reserved_device_name(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kPlain = {"CON", "PRN",    "AUX",
                                                             "NUL", "CONIN$", "CONOUT$"};
  std::string base;
  for (char c : name.substr(0, name.find('.'))) base += upper(c);
  // Win32 also ignores trailing spaces before the extension ("NUL .txt").
  while (!base.empty() && base.back() == ' ') base.pop_back();
  if (std::find(kPlain.begin(), kPlain.end(), base) != kPlain.end()) return true;
  if (base.size() >= 4 && (base.starts_with("COM") || base.starts_with("LPT"))) {
    const std::string_view digit = std::string_view(base).substr(3);
    if (digit.size() == 1 && digit[0] >= '1' && digit[0] <= '9') return true;
    // The superscript digits, which Win32 treats as 1, 2, 3 here (UTF-8 C2 B9/B2/B3).
    if (digit == "\xC2\xB9" || digit == "\xC2\xB2" || digit == "\xC2\xB3") return true;
  }
  return false;
}

Result<std::string> resolve_command(std::string_view command, std::string_view cwd,
                                    std::string_view path_var, std::string_view pathext,
                                    const std::function<bool(const std::string&)>& exists) {
  if (command.empty()) return Error{"command not found: the command is empty"};
  Result<std::string> base = normalize(cwd);
  if (!base.ok())
    return base.failure().prefixed("cannot resolve '" + std::string(command) + "': cwd: ");
  const bool has_separator = command.find_first_of("\\/") != std::string_view::npos;
  if (has_separator || is_drive_absolute(command) ||
      (command.size() >= 2 && is_letter(command[0]) && command[1] == ':')) {
    Result<std::string> path =
        looks_windows(command) ? normalize(command) : normalize(join_generic(*base, command));
    if (!path.ok()) return path.failure().prefixed("cannot run '" + std::string(command) + "': ");
    if (exists(*path)) return path;
    return Error{"command not found: " + std::string(command) + " (no such file: " + *path + ")"};
  }
  if (std::optional<std::string> bad = component_refusal(command, command))
    return Error{"cannot run '" + std::string(command) + "': " + *bad};
  std::vector<std::string> extensions;
  const std::string_view list = pathext.empty() ? std::string_view(".COM;.EXE;.BAT;.CMD") : pathext;
  for (std::size_t start = 0; start <= list.size();) {
    std::size_t end = list.find(';', start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view ext = list.substr(start, end - start);
    if (ext.size() > 1 && ext.front() == '.') extensions.emplace_back(ext);
    start = end + 1;
  }
  const bool has_listed_extension =
      std::any_of(extensions.begin(), extensions.end(), [&](const std::string& ext) {
        return command.size() > ext.size() &&
               equal(command.substr(command.size() - ext.size()), ext);
      });
  for (std::size_t start = 0; start <= path_var.size();) {
    std::size_t end = path_var.find(';', start);
    if (end == std::string_view::npos) end = path_var.size();
    std::string directory(path_var.substr(start, end - start));
    start = end + 1;
    directory.erase(std::remove(directory.begin(), directory.end(), '"'), directory.end());
    Result<std::string> dir = normalize(directory);
    if (!dir.ok()) continue;  // empty, relative or UNC entries are never searched
    if (has_listed_extension) {
      const std::string candidate = join_generic(*dir, command);
      if (exists(candidate)) return candidate;
      continue;
    }
    for (const std::string& ext : extensions) {
      const std::string candidate = join_generic(*dir, std::string(command) + ext);
      if (exists(candidate)) return candidate;
    }
  }
  return Error{"command not found: " + std::string(command) + " (searched PATH=" +
               std::string(path_var) + " with PATHEXT=" + std::string(list) + ")"};
}

}  // namespace sbx::policy::winpath
