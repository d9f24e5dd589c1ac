#include "sbx/windows/win_path.hpp"

#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace sbx::windows {
namespace {

char upper(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }

bool is_drive_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

std::string quoted(std::string_view path) { return "'" + std::string(path) + "'"; }

// Rejects a component Win32 would refuse or silently rewrite.
Status check_component(std::string_view component, std::string_view whole) {
  if (component.empty())
    return Error{"path " + quoted(whole) + " has an empty component (expected a normalised path)"};
  if (component == "." || component == "..")
    return Error{"path " + quoted(whole) + " contains '" + std::string(component) +
                 "' (expected a normalised path)"};
  for (char c : component) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || std::string_view("<>:\"|?*").find(c) != std::string_view::npos)
      return Error{"path " + quoted(whole) +
                   " contains a character Windows does not allow in "
                   "file names (< > : \" | ? * or a control character)"};
  }
  // "name." and "name " open "name": the plan would protect one object and name another.
  if (component.back() == '.' || component.back() == ' ')
    return Error{"path " + quoted(whole) +
                 " has a component ending in a dot or space, which "
                 "Windows strips, so it would alias another name"};
  if (is_reserved_device_name(component))
    return Error{"path " + quoted(whole) + " names the reserved device '" + std::string(component) +
                 "', not a file"};
  return {};
}

// Splits "a/b/c" and checks each component; appends them joined with backslashes.
Status append_components(std::string_view rest, std::string_view whole, std::string& out) {
  std::size_t start = 0;
  bool first = true;
  while (start <= rest.size()) {
    std::size_t end = rest.find('/', start);
    if (end == std::string_view::npos) end = rest.size();
    const std::string_view component = rest.substr(start, end - start);
    if (Status status = check_component(component, whole); !status.ok()) return status;
    if (!first) out += '\\';
    out += component;
    first = false;
    start = end + 1;
  }
  return {};
}

}  // namespace

bool is_reserved_device_name(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kPlain = {"CON", "PRN",    "AUX",
                                                             "NUL", "CONIN$", "CONOUT$"};
  const std::string_view base = name.substr(0, name.find('.'));
  std::string upper_base;
  for (char c : base) upper_base += upper(c);
  // Win32 also ignores trailing spaces before the extension ("NUL .txt").
  while (!upper_base.empty() && upper_base.back() == ' ') upper_base.pop_back();
  for (std::string_view reserved : kPlain) {
    if (upper_base == reserved) return true;
  }
  // COM1-COM9 and LPT1-LPT9 (and the superscript digits ¹²³, UTF-8 C2 B9/B2/B3).
  if (upper_base.size() >= 4 && (upper_base.starts_with("COM") || upper_base.starts_with("LPT"))) {
    const std::string_view digit = std::string_view(upper_base).substr(3);
    if (digit.size() == 1 && digit[0] >= '1' && digit[0] <= '9') return true;
    if (digit == "\xC2\xB9" || digit == "\xC2\xB2" || digit == "\xC2\xB3") return true;
  }
  return false;
}

Result<WindowsPath> to_windows_path(std::string_view generic) {
  if (generic.find('\\') != std::string_view::npos)
    return Error{"path " + quoted(generic) +
                 " contains a backslash, which is a separator on "
                 "Windows and a name character elsewhere: refusing the ambiguity"};
  if (generic.size() >= 2 && is_drive_letter(generic[0]) && generic[1] == ':') {
    if (generic.size() == 2 || generic[2] != '/')
      return Error{"path " + quoted(generic) +
                   " is relative to the drive's current directory; "
                   "expected 'X:/...'"};
    std::string out = {upper(generic[0]), ':', '\\'};
    if (generic.size() == 3) return WindowsPath{out, true};
    if (Status s = append_components(generic.substr(3), generic, out); !s.ok()) return s.failure();
    return WindowsPath{out, true};
  }
  if (generic.starts_with("//")) {
    std::string out = "\\\\";
    if (Status s = append_components(generic.substr(2), generic, out); !s.ok()) return s.failure();
    // A UNC path needs at least \\server\share.
    if (out.find('\\', 2) == std::string::npos)
      return Error{"path " + quoted(generic) + " names a server but no share"};
    return WindowsPath{out, true};
  }
  if (generic.starts_with("/")) {
    std::string out = "\\";
    if (generic.size() == 1) return WindowsPath{out, false};
    if (Status s = append_components(generic.substr(1), generic, out); !s.ok()) return s.failure();
    return WindowsPath{out, false};
  }
  return Error{"path " + quoted(generic) + " is not absolute"};
}

}  // namespace sbx::windows
