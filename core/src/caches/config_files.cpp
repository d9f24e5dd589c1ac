// npm's and pip's configuration files, as those tools read them (config_files.hpp), and the
// credential check of an npmrc (sbx/core/caches.hpp holds_auth_setting, read_config_file).
#include "config_files.hpp"

#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include "sbx/core/caches.hpp"

#ifndef _WIN32
#include "sbx/sdk/unique_fd.hpp"
#endif

namespace sbx::caches {
namespace config {
namespace {

bool absolute(const std::string& path) { return !path.empty() && path.front() == '/'; }

// The lines of configuration text: npm's ini parser and Python's configparser both end a line
// at '\n' or '\r', alone or together.
std::vector<std::string_view> config_lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find_first_of("\r\n", start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A key or value as npm's ini parser reads it (ini's `unsafe`): trimmed, then either quoted
// ('...' or "...", the quotes removed) or cut at the first unescaped ';' or '#'.
std::string ini_unsafe(std::string_view raw) {
  const std::string_view text = trim(raw);
  if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') &&
      text.back() == text.front())
    return std::string(text.substr(1, text.size() - 2));
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && std::strchr("\\;#", text[i + 1]) != nullptr) {
      out += text[++i];
    } else if (c == ';' || c == '#') {
      break;
    } else {
      out += c;
    }
  }
  return std::string(trim(out));
}

// The "key = value" lines of an npmrc, as npm's ini parser splits them (the key up to the first
// '=', unquoted); blank and comment lines and section headers left out. `in_section`: a
// "[section]" header came before (npm nests what follows it).
struct IniLine {
  std::string key;
  std::string value;
  bool in_section = false;
};
std::vector<IniLine> npmrc_lines(std::string_view text) {
  std::vector<IniLine> out;
  bool in_section = false;
  for (const std::string_view line : config_lines(text)) {
    const std::string_view body = trim(line);
    if (body.empty() || body.front() == ';' || body.front() == '#') continue;
    // ini's /^\[([^\]]*)\]\s*$/: '[' first on the line, nothing but blanks after the ']'.
    if (line.front() == '[' && line.find(']') != std::string_view::npos &&
        trim(line.substr(line.find(']') + 1)).empty()) {
      in_section = true;
      continue;
    }
    const std::size_t eq = line.find('=');
    out.push_back(IniLine{ini_unsafe(line.substr(0, eq)),
                          eq == std::string_view::npos ? "" : ini_unsafe(line.substr(eq + 1)),
                          in_section});
  }
  return out;
}

// npm's ${NAME} and ${NAME?} in a configuration value: the variable's value, or for an unset
// one the text as written (with '?': nothing) (npm help npmrc, "Files").
std::string npm_env_replace(const std::string& value,
                            const std::map<std::string, std::string>& env) {
  std::string out;
  std::size_t at = 0;
  while (at < value.size()) {
    const std::size_t open = value.find("${", at);
    const std::size_t close = open == std::string::npos ? open : value.find('}', open + 2);
    if (close == std::string::npos) break;
    std::string name = value.substr(open + 2, close - open - 2);
    const bool optional = !name.empty() && name.back() == '?';
    if (optional) name.pop_back();
    out += value.substr(at, open - at);
    const auto it = env.find(name);
    out += it != env.end() ? it->second : optional ? "" : value.substr(open, close - open + 1);
    at = close + 1;
  }
  return out + value.substr(std::min(at, value.size()));
}

}  // namespace

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::string join(const std::string& dir, std::string_view name) {
  return dir == "/" ? "/" + std::string(name) : dir + "/" + std::string(name);
}

std::string tool_path(const std::string& path, const std::string& home) {
  if (path == "~") return home;
  if (path.rfind("~/", 0) == 0) return join(home, path.substr(2));
  return absolute(path) ? path : std::string();
}

std::string npmrc_cache(std::string_view text, const std::map<std::string, std::string>& env,
                        const std::string& home) {
  std::string cache;
  for (const IniLine& line : npmrc_lines(text))
    if (!line.in_section && line.key == "cache") cache = line.value;
  return tool_path(npm_env_replace(cache, env), home);
}

// Every `cache-dir` of a pip configuration file (configparser: "key = value" or "key: value",
// '#' and ';' comment lines), in any section (a command's section sets it for that command)
// and spelled as pip reads names ("cache_dir", "--cache-dir"), "~" the home directory; each
// absolute one once.
std::vector<std::string> pip_cache_dirs(std::string_view text, const std::string& home) {
  std::vector<std::string> out;
  for (const std::string_view line : config_lines(text)) {
    const std::string_view body = trim(line);
    if (body.empty() || body.front() == '#' || body.front() == ';' || body.front() == '[') continue;
    const std::size_t delimiter = body.find_first_of("=:");
    if (delimiter == std::string_view::npos) continue;
    std::string key = lower(trim(body.substr(0, delimiter)));
    std::replace(key.begin(), key.end(), '_', '-');
    if (key.rfind("--", 0) == 0) key.erase(0, 2);
    if (key != "cache-dir") continue;
    std::string dir = tool_path(std::string(trim(body.substr(delimiter + 1))), home);
    if (!dir.empty() && std::find(out.begin(), out.end(), dir) == out.end())
      out.push_back(std::move(dir));
  }
  return out;
}

}  // namespace config

using config::IniLine;
using config::lower;
using config::npmrc_lines;
using config::trim;

bool holds_auth_setting(std::string_view text) {
  for (const IniLine& line : npmrc_lines(text)) {
    std::string key = lower(line.key);
    // "key[]" is an array of the setting "key" (npm's ini parser, bracketedArray).
    if (key.size() > 2 && key.compare(key.size() - 2, 2, "[]") == 0) key.resize(key.size() - 2);
    key = std::string(trim(key));
    const std::string_view setting =
        std::string_view(key).substr(key.rfind(':') == std::string::npos ? 0 : key.rfind(':') + 1);
    // A client key in the file itself ("key", npm's deprecated PEM setting).
    if (setting == "key") return true;
    for (const std::string_view suffix :
         {"_auth", "_authtoken", "_password", "certfile", "keyfile"}) {
      if (key.size() >= suffix.size() && key.substr(key.size() - suffix.size()) == suffix)
        return true;
    }
  }
  return false;
}

#ifndef _WIN32
Result<std::optional<std::string>> read_config_file(const std::string& path) {
  constexpr off_t kMax = 1 << 20;
  struct stat st {};
#ifdef O_PATH
  // Opened O_PATH first: opening a device for reading can act (a tape rewinds, a watchdog
  // starts), so only a regular file is opened again, through /proc/self/fd (proc(5): the same
  // object, never a name swapped meanwhile).
  const UniqueFd handle(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!handle.valid()) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return Error{std::strerror(errno)};
  }
  if (::fstat(handle.get(), &st) != 0) return Error{std::strerror(errno)};
  if (!S_ISREG(st.st_mode)) return Error{"not a regular file"};
  const std::string reopen = "/proc/self/fd/" + std::to_string(handle.get());
  const UniqueFd fd(::open(reopen.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
#else
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>();
    return Error{std::strerror(errno)};
  }
  if (!S_ISREG(st.st_mode)) return Error{"not a regular file"};
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
#endif
  struct stat opened {};
  if (!fd.valid()) return Error{std::strerror(errno)};
  if (::fstat(fd.get(), &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_dev != st.st_dev ||
      opened.st_ino != st.st_ino)
    return Error{"changed while it was opened"};
  if (opened.st_size > kMax) return Error{"larger than 1 MiB"};
  std::string text(static_cast<std::size_t>(opened.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{std::strerror(errno)};
    if (n == 0) break;  // shortened meanwhile: what there is
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return std::optional<std::string>(std::move(text));
}

bool file_holds_auth_setting(const std::string& path) {
  const Result<std::optional<std::string>> text = read_config_file(path);
  return !text.ok() || !text->has_value() || holds_auth_setting(**text);
}
#endif

}  // namespace sbx::caches
