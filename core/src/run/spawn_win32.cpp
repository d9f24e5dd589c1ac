// spawn.hpp on Windows: the counterpart of spawn.cpp, selected by core/cross/libsbx.cmake.
// Commands are looked up with Windows rules. spawn_and_wait is the unsandboxed runner (a policy
// that needs no sandbox, e.g. danger-full-access): CreateProcessW of the absolute argv[0] (never
// a search), the plan's environment and cwd, the console's standard handles; a sandboxed run
// goes through the windows backend's own executor instead.
#include <windows.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "platform/windows_host.hpp"
#include "sbx/core/spawn.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx {
namespace {

// One argument as CommandLineToArgvW and the C runtime read it back: quoted when it is empty
// or holds white space or a quote; a quote is escaped, and so are the backslashes before a
// quote or before the closing quote. cmd.exe parses its command line by its own rules.
std::wstring quote_argument(const std::wstring& arg) {
  if (!arg.empty() && arg.find_first_of(L" \t\n\v\"") == std::wstring::npos) return arg;
  std::wstring out = L"\"";
  std::size_t backslashes = 0;
  for (const wchar_t c : arg) {
    if (c == L'\\') {
      ++backslashes;
      continue;
    }
    out.append(c == L'"' ? backslashes * 2 + 1 : backslashes, L'\\');
    backslashes = 0;
    out.push_back(c);
  }
  out.append(backslashes * 2, L'\\');
  out.push_back(L'"');
  return out;
}

// "NAME=value\0...\0\0", UTF-16; nullopt if an entry is not valid UTF-8.
std::optional<std::wstring> environment_block(const std::vector<std::string>& env) {
  std::wstring block;
  for (const std::string& entry : env) {
    std::optional<std::wstring> wide = platform::to_wide(entry);
    if (!wide || wide->empty()) return std::nullopt;
    block += *wide;
    block.push_back(L'\0');
  }
  if (block.empty()) block.push_back(L'\0');  // an empty block is still two NULs
  block.push_back(L'\0');
  return block;
}

// "C:/dir/x.exe" -> "C:\\dir\\x.exe", the form every Win32 API takes.
std::string native(std::string generic) {
  for (char& c : generic) c = c == '/' ? '\\' : c;
  return generic;
}

// The shell's codes for a command that cannot start, with the reason on stderr.
ExitStatus not_started(const std::string& command, DWORD error) {
  const int code = error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND
                       ? kExitNotFound
                       : kExitNotExecutable;
  std::fprintf(stderr, "sbx: cannot start %s (Windows error %lu)\n", command.c_str(),
               static_cast<unsigned long>(error));
  return ExitStatus{code, 0};
}

}  // namespace

// Windows: PATH only, with PATHEXT (sbx/core/win_path.hpp winpath::resolve_command).
Result<std::string> resolve_command(const std::string& command, const std::string& cwd,
                                    const std::vector<std::string>& env) {
  std::map<std::string, std::string> vars;
  for (const std::string& entry : env) {
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos && eq > 0) vars.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  Result<std::string> found = policy::winpath::resolve_command(
      command, cwd, policy::winpath::env_lookup(vars, "PATH").value_or(""),
      policy::winpath::env_lookup(vars, "PATHEXT").value_or(""), [](const std::string& path) {
        std::error_code error;
        return std::filesystem::is_regular_file(std::filesystem::u8path(path), error);
      });
  // The generic form ("C:/dir/x.exe"), which the windows backend and spawn_and_wait read: a
  // backslash is refused in a plan, being a name character on other hosts.
  return found;
}

Result<ExitStatus> spawn_and_wait(const ExecPlan& plan, RunServices* /*run*/) {
  if (plan.argv.empty()) return Error{"spawn: the plan has no command"};
  // Only a drive path: no search of the current directory or PATH can pick another file.
  Result<std::string> program = policy::winpath::normalize(plan.argv.front());
  if (!program) return program.failure().prefixed("spawn: argv[0] " + plan.argv.front() + ": ");
  Result<std::string> cwd = policy::winpath::normalize(plan.cwd);
  if (!cwd) return cwd.failure().prefixed("spawn: cwd " + plan.cwd + ": ");
  // argv[0] in native form: cmd.exe reads switches ("/c") anywhere in its command line, so
  // "C:/windows/system32/cmd.exe" would give it "/w" and "/s".
  std::vector<std::string> argv = plan.argv;
  argv.front() = native(*program);
  std::wstring command_line;
  for (const std::string& arg : argv) {
    std::optional<std::wstring> wide = platform::to_wide(arg);
    if (!wide) return Error{"spawn: an argument is not valid UTF-8"};
    command_line += (command_line.empty() ? L"" : L" ") + quote_argument(*wide);
  }
  std::optional<std::wstring> environment = environment_block(plan.env);
  std::optional<std::wstring> application = platform::to_wide(native(*program));
  std::optional<std::wstring> directory = platform::to_wide(native(*cwd));
  if (!environment || !application || !directory)
    return Error{"spawn: the environment or a path is not valid UTF-8"};
  STARTUPINFOW startup{};
  startup.cb = sizeof startup;
  startup.dwFlags = STARTF_USESTDHANDLES;
  startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  startup.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  startup.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION process{};
  // Handles are inherited for the standard handles above; sbx creates no other inheritable one.
  if (!CreateProcessW(application->c_str(), command_line.data(), nullptr, nullptr, TRUE,
                      CREATE_UNICODE_ENVIRONMENT, environment->data(), directory->c_str(), &startup,
                      &process)) {
    const DWORD error = GetLastError();
    if (error == ERROR_DIRECTORY) {  // the cwd: the command did not run
      std::fprintf(stderr, "sbx: cannot use the working directory %s\n", cwd->c_str());
      return ExitStatus{kExitSbxFailure, 0};
    }
    return not_started(*program, error);
  }
  CloseHandle(process.hThread);
  WaitForSingleObject(process.hProcess, INFINITE);
  DWORD code = 0;
  const BOOL read = GetExitCodeProcess(process.hProcess, &code);
  CloseHandle(process.hProcess);
  if (!read) return Error{"spawn: the exit code of " + *program + " cannot be read"};
  // Windows exit codes are 32 bits (an NTSTATUS for a crash): passed through as they are.
  return ExitStatus{static_cast<int>(code), 0};
}

// Nothing of glibc's loader reads the environment of a Windows process; the list is kept.
std::vector<std::string> strip_unsafe_env(const std::vector<std::string>& env) { return env; }

// Nothing is removed from a Windows process's environment at start.
const std::vector<std::string>& environment_removed_at_start() {
  static const std::vector<std::string> none;
  return none;
}

void harden_current_process() {
  // DLLs that sbx.exe or a plugin loads by bare name come from System32 only, never from the
  // current directory or PATH, where a sandboxed command could have put one.
  SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_SYSTEM32);
}

}  // namespace sbx
