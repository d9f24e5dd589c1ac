// spawn.hpp on Windows: the counterpart of spawn.cpp, selected by core/cross/libsbx.cmake.
// Commands are looked up with Windows rules; an unsandboxed run (`allow_unsandboxed` with no
// backend) is refused: libsbx has no CreateProcessW runner yet (docs/ARCHITECTURE.md,
// "Windows host"), and a sandboxed run goes through the windows backend's own executor.
#include <windows.h>

#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "sbx/core/spawn.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx {

// Windows: PATH only, with PATHEXT (sbx/core/win_path.hpp winpath::resolve_command); the result
// in native form ("C:\\dir\\x.exe").
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
  if (!found.ok()) return found;
  std::string native = *found;
  for (char& c : native) c = c == '/' ? '\\' : c;
  return native;
}

Result<ExitStatus> spawn_and_wait(const ExecPlan& plan) {
  const std::string command = plan.argv.empty() ? std::string("(empty argv)") : plan.argv.front();
  return Error{"cannot run " + command +
               " without a sandbox: sbx has no unsandboxed runner on Windows yet; run it "
               "through the windows backend"};
}

// Nothing of glibc's loader reads the environment of a Windows process; the list is kept.
std::vector<std::string> strip_unsafe_env(const std::vector<std::string>& env) { return env; }

void harden_current_process() {
  // DLLs that sbx.exe or a plugin loads by bare name come from System32 only, never from the
  // current directory or PATH, where a sandboxed command could have put one.
  SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_SYSTEM32);
}

}  // namespace sbx
