// The Windows host's facts libsbx needs where POSIX code uses getcwd(3), environ and
// getpwuid_r(3). Private to libsbx; compiled only on Windows (windows_host.cpp). Text is UTF-8:
// the wide (UTF-16) Win32 APIs are used, never the ANSI code page.
#pragma once

#ifdef _WIN32

#include <optional>
#include <string>
#include <vector>

namespace sbx::platform {

// GetCurrentDirectoryW as UTF-8; nullopt if it fails.
std::optional<std::string> current_directory();

// GetEnvironmentStringsW as UTF-8 "NAME=value" entries (the per-drive "=C:=C:\..." entries
// dropped).
std::vector<std::string> environment();

// UTF-8 <-> UTF-16; nullopt for invalid input.
std::optional<std::wstring> to_wide(const std::string& text);
std::optional<std::string> to_utf8(const std::wstring& text);

}  // namespace sbx::platform

#endif  // _WIN32
