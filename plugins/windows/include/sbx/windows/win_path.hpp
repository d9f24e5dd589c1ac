// Paths as the Windows backend sees them. ResolvedPolicy paths are absolute and normalised with
// forward slashes ("C:/Users/me/proj" on Windows; "/home/me/proj" when a plan is printed on
// another host). Win32 wants backslashes, and rejects or silently rewrites many names that
// another OS accepts; every such name is refused here, before any ACL is touched.
#pragma once

#include <string>
#include <string_view>

#include "sbx/sdk/result.hpp"

namespace sbx::windows {

struct WindowsPath {
  std::string path;  // backslash-separated, e.g. "C:\\Users\\me" or "\\\\srv\\share\\d"
  // True for "C:\..." and "\\server\share\..."; false for a drive-relative "\dir" that came
  // from a POSIX-style path. The Win32 executor refuses anything not fully qualified.
  bool fully_qualified = false;
  friend bool operator==(const WindowsPath&, const WindowsPath&) = default;
};

// Converts a normalised absolute path:
//   "C:/a/b" -> "C:\a\b" (drive letter upper-cased), "C:/" -> "C:\",
//   "//server/share/a" -> "\\server\share\a", "/a/b" -> "\a\b" (not fully qualified).
// Errors, each naming the path: not absolute, "C:" without a slash, empty components, "." or
// "..", a backslash (ambiguous: a name character elsewhere, a separator here), characters Win32
// forbids in names (< > : " | ? * and controls; ':' would also select an NTFS stream), a
// component ending in a dot or space (Win32 strips them, so the name would alias another), and
// reserved device names (CON, NUL, COM1, ... with or without an extension).
Result<WindowsPath> to_windows_path(std::string_view generic);

// True if `name` is a reserved DOS device name (case-insensitive, extension ignored).
bool is_reserved_device_name(std::string_view name);

}  // namespace sbx::windows
