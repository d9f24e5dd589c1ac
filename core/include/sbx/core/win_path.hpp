// Windows paths in policies, the resolver and plans (libsbx and the CLI). Pure string code: it
// runs (and is tested) on every host, so a plan for Windows can be resolved and shown anywhere.
//
// The generic form every resolved Windows path takes is the one the windows backend reads
// (plugins/windows, to_windows_path): "X:/a/b", drive letter upper case, '/' separators, no
// trailing separator except the drive root "X:/". Only drive-absolute paths are accepted:
//  - "\\server\share" (UNC) and "\\?\", "\\.\", "\??\" (device and NT namespaces) are refused:
//    a share's ACLs are the server's, and the device forms skip the Win32 normalisation that
//    every other check here assumes;
//  - "X:name" (relative to the drive's current directory) and "\name" (relative to the current
//    drive) are refused: what they name depends on state the policy does not show;
//  - components Win32 would refuse or rewrite ("." / "..", '<>:"|?*', control characters, a
//    trailing dot or space, reserved device names such as NUL or COM1) are refused.
// Comparison is case-insensitive for ASCII letters (as NTFS and the Win32 APIs compare by
// default); bytes outside ASCII compare exactly, so two spellings differing only in a
// non-ASCII letter's case stay two rules (the backend applies both; its deny ACEs win).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::policy::winpath {

// True for "X:" followed by '\' or '/' (a drive-absolute path, not yet normalised).
bool is_drive_absolute(std::string_view path);

// True if `path` is written the Windows way: a drive letter and ':' ("C:\x", "C:x"), a
// leading backslash ("\\server", "\x") or a %VARIABLE% at its start. POSIX policies never
// write such paths (':' starts sbx's special names, '%' and '\' no absolute path).
bool looks_windows(std::string_view path);

// Why `path` is not a drive-absolute Windows path sbx accepts (UNC, device, drive-relative,
// rooted without a drive, relative, a bad component); nullopt if it is one.
std::optional<std::string> refusal(std::string_view path);

// `path` ("C:\a\\b\", "c:/a/b") in the generic form "C:/a/b"; the refusal as the error.
Result<std::string> normalize(std::string_view path);

// The variables a policy path may start with: %TEMP%, %TMP%, %USERPROFILE%.
inline constexpr std::string_view kPathVariables[] = {"TEMP", "TMP", "USERPROFILE"};

// For a path starting with '%': the variable's name (upper case) and the rest after the
// closing '%' (empty, or starting with '\' or '/'). An error for any other variable, an
// unclosed '%', or text glued to the name ("%TEMP%x").
struct VariablePath {
  std::string name;
  std::string rest;
};
Result<VariablePath> split_variable(std::string_view path);

// The value of environment variable `name` in `env`, compared without case as Windows does
// (the first match in map order wins when the caller's map holds several spellings).
std::optional<std::string> env_lookup(const std::map<std::string, std::string>& env,
                                      std::string_view name);

// %TEMP%, %TMP% or %USERPROFILE% at the start of `path` replaced by its value from `env` (which
// must itself be drive-absolute), the result normalised. Paths without a variable are only
// normalised.
Result<std::string> expand(std::string_view path, const std::map<std::string, std::string>& env);

// Case-insensitive (ASCII) equality, and "is `path` equal to or below `dir`" for generic paths.
bool equal(std::string_view a, std::string_view b);
bool within(std::string_view path, std::string_view dir);

// Gives every path one spelling per directory, so case-sensitive comparisons afterwards
// (rule merging, path_is_within, rule_access) treat "C:/Work" and "c:/work" as the same path:
// each prefix takes the spelling it was first given.
class Speller {
 public:
  std::string spell(std::string_view generic);

 private:
  std::map<std::string, std::string> first_;  // folded prefix -> first spelling of it
};

// A reserved DOS device name ("NUL", "con.txt", "COM1", "LPT9 .log"): Win32 opens the device.
bool is_reserved_device_name(std::string_view name);

// `command` resolved with Windows rules, in the generic form. A name with a separator is a path:
// drive-absolute, or relative to `cwd` ("bin\\tool.exe", ".\\tool.exe"). A bare name is looked
// up in each directory of `path_var` (';'-separated, quotes removed, entries that are not
// drive-absolute skipped): as given if it already ends with an extension listed in `pathext`,
// else with each extension of `pathext` in order (";"-separated, default ".COM;.EXE;.BAT;.CMD").
// The current directory is not searched (as with NoDefaultCurrentDirectoryInExePath), so a file
// the command's workspace holds cannot shadow a system command. Pure: `exists` says whether a
// candidate is an existing regular file.
Result<std::string> resolve_command(std::string_view command, std::string_view cwd,
                                    std::string_view path_var, std::string_view pathext,
                                    const std::function<bool(const std::string&)>& exists);

}  // namespace sbx::policy::winpath
