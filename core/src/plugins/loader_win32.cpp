// PluginRegistry::load on Windows: the counterpart of loader.cpp, selected by
// core/cross/libsbx.cmake (core/cross/README.md). Each candidate
// sbx-backend-<NAME>.dll goes through plugins::win32::load_trusted_module (the owner and DACL
// of every directory from the drive root and of the DLL, the file held open with
// FILE_SHARE_READ while LoadLibraryExW maps it, the mapped module compared with the held file)
// and then through the same descriptor checks as on POSIX (plugin_checks.hpp). Loading is
// always by path, the only way Windows loads a DLL.
#include <spdlog/spdlog.h>
#include <windows.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "platform/windows_host.hpp"
#include "plugins/plugin_checks.hpp"
#include "plugins/win32_trust.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/win_path.hpp"

namespace sbx {
namespace {

using plugins::reject;

struct ScanState {
  std::vector<LoadedPlugin> plugins;
  std::vector<RejectedPlugin> rejected;
  bool warn = true;  // LoaderOptions::warn_rejections
};

void record(ScanState& state, RejectedPlugin rejection) {
  if (state.warn) warn_rejected(rejection);
  state.rejected.push_back(std::move(rejection));
}

// The candidate file names of `dir`, sorted (names only: nothing is opened), or why the
// directory cannot be listed; nullopt when it does not exist (no plugin installed there).
std::optional<Result<std::vector<std::string>>> candidate_names(const std::string& dir) {
  const std::optional<std::wstring> wide = platform::to_wide(dir);
  if (!wide) return Result<std::vector<std::string>>(Error{"the path is not valid UTF-8"});
  const std::filesystem::path path(*wide);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    const std::optional<std::string> name = platform::to_utf8(entry.path().filename().wstring());
    if (name && plugins::is_candidate_name(*name)) names.push_back(*name);
  }
  if (error) return Result<std::vector<std::string>>(Error{"cannot list: " + error.message()});
  std::sort(names.begin(), names.end());
  return Result<std::vector<std::string>>(std::move(names));
}

// The trust root for the chain check of the plugins in `dir` (LoaderOptions::trust_root).
std::string trust_root_for(const std::string& dir, const LoaderOptions& options) {
  return options.trust_root == "/" ? dir : options.trust_root;
}

// Stage kInspect on Windows: the module is mapped by load_trusted_module, so its exports are
// read from the loaded image. Cast through void(*)(): the generic function pointer type, which
// converts to the entry's type without a cast-function-type warning.
sbx_plugin_entry_fn entry_of(void* module, const char* name = SBX_PLUGIN_ENTRY_SYMBOL) {
  const FARPROC symbol = GetProcAddress(static_cast<HMODULE>(module), name);
  if (symbol == nullptr) return nullptr;
  return reinterpret_cast<sbx_plugin_entry_fn>(reinterpret_cast<void (*)()>(symbol));
}

void load_candidate(const std::string& dir, const std::string& name, const LoaderOptions& options,
                    ScanState& state) {
  const std::string path = dir + "/" + name;
  const plugins::acl::Trustees trustees{options.trusted_owner_sid};
  Result<void*> module =
      plugins::win32::load_trusted_module(path, trust_root_for(dir, options), trustees);
  // load_trusted_module's refusals (the chain, the file, or the mapped module not being the
  // checked file) are kind refused; LoadLibraryExW's own failure is not.
  if (!module) {
    const bool refused = module.kind() == ErrorKind::refused;
    return record(state,
                  reject(path, refused ? LoadStage::kTrust : LoadStage::kLoad, module.error()));
  }
  sbx_plugin_entry_fn entry = entry_of(*module);
  if (entry == nullptr) {
    // Built for ABI 1.x: named in the refusal from its descriptor's leading fields.
    if (sbx_plugin_entry_fn legacy = entry_of(*module, SBX_PLUGIN_ENTRY_SYMBOL_V1)) {
      std::variant<const sbx_plugin_v2*, std::string> head = plugins::call_entry(legacy);
      const sbx_plugin_v2* const* found = std::get_if<const sbx_plugin_v2*>(&head);
      return record(state, reject(path, LoadStage::kAbi,
                                  plugins::legacy_abi_refusal(found ? *found : nullptr)));
    }
    return record(state, reject(path, LoadStage::kInspect,
                                "the module does not export " SBX_PLUGIN_ENTRY_SYMBOL
                                "; expected a plugin declared with SBX_DECLARE_BACKEND"));
  }
  std::variant<const sbx_plugin_v2*, std::string> descriptor = plugins::call_entry(entry);
  if (auto* error = std::get_if<std::string>(&descriptor))
    return record(state, reject(path, LoadStage::kEntry, *error));
  const sbx_plugin_v2& d = *std::get<const sbx_plugin_v2*>(descriptor);
  if (std::optional<std::string> problem = plugins::abi_problem(d))
    return record(state, reject(path, LoadStage::kAbi, *problem));
  if (std::optional<std::string> problem = plugins::fingerprint_problem(d))
    return record(state, reject(path, LoadStage::kFingerprint, *problem));
  auto accepted = plugins::accept_descriptor(path, d, options.host, state.plugins);
  if (auto* rejection = std::get_if<RejectedPlugin>(&accepted))
    return record(state, std::move(*rejection));
  spdlog::debug("plugin loaded: {}: name {}", path, std::get<LoadedPlugin>(accepted).name);
  state.plugins.push_back(std::move(std::get<LoadedPlugin>(accepted)));
}

void scan_directory(const std::string& given, const LoaderOptions& options, ScanState& state) {
  // Only drive paths: a UNC or device path is never a trusted plugin directory.
  Result<std::string> dir = policy::winpath::normalize(given);
  if (!dir) return record(state, reject(given, LoadStage::kDirectory, dir.error()));
  std::optional<Result<std::vector<std::string>>> names = candidate_names(*dir);
  if (!names) {
    spdlog::debug("plugin directory {}: does not exist", *dir);
    return;
  }
  if (!names->ok()) return record(state, reject(*dir, LoadStage::kDirectory, names->error()));
  for (const std::string& name : **names) {
    if (!plugins::is_selected(name, options.only_names)) continue;
    load_candidate(*dir, name, options, state);
  }
}

}  // namespace

PluginRegistry PluginRegistry::load(const LoaderOptions& options) {
  ScanState state;
  state.warn = options.warn_rejections;
  for (const std::string& dir : options.directories) scan_directory(dir, options, state);
  PluginRegistry registry;
  registry.plugins_ = std::move(state.plugins);
  registry.rejected_ = std::move(state.rejected);
  registry.loading_ = {LoadingMode::kPath,
                       "Windows loads a DLL by path: every directory from the drive root and the "
                       "DLL must be changeable only by SYSTEM, Administrators, TrustedInstaller "
                       "and sbx.exe's owner, the DLL is held open against writes while it is "
                       "mapped, and the mapped module must be the file that was checked"};
  return registry;
}

void warn_rejected(const RejectedPlugin& rejection) {
  spdlog::warn("plugin rejected: {}", rejection.message);
}

}  // namespace sbx
