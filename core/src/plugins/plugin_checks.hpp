// The loader's checks that do not depend on how a file is opened or loaded: candidate names,
// the descriptor's ABI and toolchain fingerprint, the backend's name, the guarded calls into
// plugin code (entry, create). Shared by the POSIX loader (loader.cpp) and the Windows one
// (loader_win32.cpp), so both refuse a plugin for the same reasons with the same words.
// Private to libsbx.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sbx/core/plugin_loader.hpp"
#include "sbx/sdk/abi.h"

namespace sbx::plugins {

inline constexpr std::string_view kCandidatePrefix = "sbx-backend-";
#if defined(_WIN32)
inline constexpr std::string_view kCandidateSuffix = ".dll";
#elif defined(__APPLE__)
inline constexpr std::string_view kCandidateSuffix = ".dylib";
#else
inline constexpr std::string_view kCandidateSuffix = ".so";
#endif

// "sbx-backend-*.so" (".dylib" on macOS, ".dll" on Windows): the only names the loader
// considers.
bool is_candidate_name(std::string_view name);

// True if the candidate file `name` (sbx-backend-<NAME><suffix>) is wanted: every file when
// `only_names` is empty, else the files whose <NAME> is listed.
bool is_selected(std::string_view name, const std::vector<std::string>& only_names);

// True when the plugin `name` found in `directory` is one of sbx's own backends: the install's
// own plugin directory (options.own_plugin_directory, as scanned) and a name of kOwnBackends.
// Every other plugin runs isolated (LoadedPlugin::isolated).
bool is_own_backend(std::string_view directory, std::string_view name,
                    const LoaderOptions& options);

// A rejection with the message "<path>: <stage>: <detail>".
RejectedPlugin reject(const std::string& path, LoadStage stage, const std::string& detail);

// Stage kEntry: calls the resolved entry point (plugin code: guarded, though it is C).
std::variant<const sbx_plugin_v2*, std::string> call_entry(sbx_plugin_entry_fn entry);

// Stage kAbi. No field is read beyond struct_size: a short descriptor may end anywhere.
std::optional<std::string> abi_problem(const sbx_plugin_v2& descriptor);

// Stage kAbi for a file that exports only SBX_PLUGIN_ENTRY_SYMBOL_V1 (built for ABI 1.x):
// the refusal, naming the plugin (from its descriptor's leading fields, when `descriptor` is
// not null and long enough), its ABI and the fix.
std::string legacy_abi_refusal(const sbx_plugin_v2* descriptor);

// Stage kFingerprint: the C++ types crossing the boundary have the same layout only if both
// sides use the same standard library ABI.
std::optional<std::string> fingerprint_problem(const sbx_plugin_v2& descriptor);

// Stage kName: the name selects the backend everywhere (--backends, explain, JSON); `loaded`
// are the plugins accepted so far.
std::optional<std::string> name_problem(const char* raw, const std::vector<LoadedPlugin>& loaded);

// Stage kCreate: the first call that builds a C++ object in the plugin. The Backend is owned
// through the plugin's own destroy() (its allocator, its destructor); the library stays mapped.
std::variant<std::shared_ptr<Backend>, std::string> create_backend(const sbx_plugin_v2& descriptor,
                                                                   const sbx_host_v2* host);

// Stages kName and kCreate and the ABI adapter for a descriptor that passed kAbi and
// kFingerprint: the LoadedPlugin for `path`, or the rejection.
std::variant<LoadedPlugin, RejectedPlugin> accept_descriptor(
    const std::string& path, const sbx_plugin_v2& descriptor, const sbx_host_v2* host,
    const std::vector<LoadedPlugin>& loaded);

}  // namespace sbx::plugins
