// The install layout and the host-services table on Windows (runtime.hpp): the counterpart of
// runtime.cpp, selected by core/cross/libsbx.cmake. libsbx is linked into sbx.exe and into
// sbx.dll (the C API) there, so the layout is found from the module that holds this code (the
// executable, or the DLL inside whatever program loaded it), never from argv, the environment
// or the embedding program's own file.
#include <windows.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "platform/windows_host.hpp"
#include "plugins/host_table.hpp"
#include "plugins/win32_trust.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/win_path.hpp"
#include "sbx_config.hpp"

namespace sbx {
namespace {

// "C:/a/b" -> "C:/a"; a drive root stays itself.
std::string parent_of(const std::string& generic) {
  const std::size_t slash = generic.rfind('/');
  if (slash == std::string::npos || slash <= 2) return generic.substr(0, 3);
  return generic.substr(0, slash);
}

std::string join(const std::string& dir, const std::string& relative) {
  return dir.back() == '/' ? dir + relative : dir + "/" + relative;
}

// The file of the module that holds this code (sbx.exe, or sbx.dll in an embedding program),
// generic form. GetModuleFileNameW(NULL) would name the embedding program, whose directory says
// nothing about where sbx's trusted plugins are.
// An object of this translation unit: its address lies in the module that holds libsbx.
const char kModuleAnchor = 0;

Result<std::string> executable_path() {
  HMODULE module = nullptr;
  if (!GetModuleHandleExW(
          GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
          reinterpret_cast<LPCWSTR>(&kModuleAnchor), &module))
    return Error{"GetModuleHandleExW did not find the module holding libsbx"};
  std::wstring name(32768, L'\0');
  const DWORD size = GetModuleFileNameW(module, name.data(), static_cast<DWORD>(name.size()));
  if (size == 0 || size >= name.size())
    return Error{"GetModuleFileNameW did not name the module holding libsbx"};
  name.resize(size);
  std::optional<std::string> utf8 = platform::to_utf8(name);
  if (!utf8) return Error{"the running executable's path is not valid UTF-16"};
  Result<std::string> generic = policy::winpath::normalize(*utf8);
  if (!generic) return generic.failure().prefixed("the running executable's path " + *utf8 + ": ");
  return *generic;
}

Result<InstallLayout> executable_layout() {
  Result<std::string> exe = executable_path();
  if (!exe) return exe.failure().prefixed("cannot find the running sbx.exe or sbx.dll: ");
  // The owner is the one trustee besides the built-in ones that may write the plugin
  // directory (a per-user install); without it nothing could be judged, so fail closed.
  Result<std::string> owner = plugins::win32::owner_sid(*exe);
  if (!owner) return owner.failure().prefixed("cannot read the owner of " + *exe + ": ");
  InstallLayout layout;
  layout.libsbx_path = *exe;
  layout.libsbx_owner_sid = *owner;
  layout.bin_dir = parent_of(*exe);
  // <prefix>/bin/sbx.exe or <prefix>/bin/sbx.dll (DLLs live beside the programs on Windows):
  // the prefix is one component above (CMAKE_INSTALL_BINDIR "bin").
  std::string prefix = layout.bin_dir;
  for (int i = 0; i < SBX_BINDIR_DEPTH; ++i) prefix = parent_of(prefix);
  layout.lib_dir = join(prefix, SBX_LIBDIR_RELPATH);
  layout.plugin_dir = join(layout.lib_dir, SBX_PLUGIN_SUBDIR);
  // No stage-2 helper on Windows: the windows backend confines with tokens, ACLs and a job.
  layout.stage2_path.clear();
  return layout;
}

bool is_existing_directory(const std::string& generic) {
  const std::optional<std::wstring> wide = platform::to_wide(generic);
  std::error_code error;
  return wide && std::filesystem::is_directory(std::filesystem::path(*wide), error);
}

// Windows has no unsandboxed spawner in libsbx yet (run/spawn_win32.cpp); a plugin asking the
// host to spawn gets the reason, never a run.
int host_spawn_refused(void* /*ctx*/, const sbx_run_v2* /*run*/, const void* /*plan*/,
                       void* /*status_out*/, char* error, size_t error_size) noexcept {
  plugins::write_host_error(error, error_size,
                            "spawn: the host runs no unsandboxed process on Windows");
  return 1;
}

}  // namespace

Result<InstallLayout> install_layout() {
  // Looked up once per process: sbx.exe does not move while it runs, and a run asks several
  // times (resolution, the loader).
  static const Result<InstallLayout>* const layout = new Result<InstallLayout>(executable_layout());
  return *layout;
}

std::vector<std::string> install_directories(const InstallLayout& layout) {
  std::vector<std::string> out;
  for (const std::string& dir :
       {layout.lib_dir, parent_of(layout.libsbx_path), layout.plugin_dir, layout.bin_dir}) {
    // Only existing directories matter: a missing one holds nothing that could be run.
    if (dir.empty() || !is_existing_directory(dir)) continue;
    if (std::none_of(out.begin(), out.end(),
                     [&](const std::string& kept) { return policy::winpath::equal(kept, dir); }))
      out.push_back(dir);
  }
  return out;
}

// The prefix stays empty here: whole-prefix protection is POSIX only (not built for Windows
// yet: core/cross/README.md).
Result<std::vector<std::string>> running_install_directories(std::string* /*prefix*/) {
  Result<InstallLayout> layout = install_layout();
  if (!layout) return layout.failure();
  return install_directories(*layout);
}

std::vector<std::string> current_install_directories() {
  Result<std::vector<std::string>> directories = running_install_directories();
  return directories ? std::move(*directories) : std::vector<std::string>{};
}

const sbx_host_v2* host_services(const InstallLayout& layout) {
  static auto* mutex = new std::mutex();
  static auto* tables = new std::map<std::string, std::unique_ptr<sbx_host_v2>>();
  const std::lock_guard<std::mutex> lock(*mutex);
  std::unique_ptr<sbx_host_v2>& slot = (*tables)[layout.libsbx_path];
  if (!slot) {
    slot = std::make_unique<sbx_host_v2>();
    plugins::fill_portable_host_entries(*slot);
    slot->stage2_path = nullptr;
    slot->spawn = &host_spawn_refused;
  }
  return slot.get();
}

}  // namespace sbx
