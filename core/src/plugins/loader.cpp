// PluginRegistry::load: trusted discovery and loading of backend plugins
// (core/src/plugins/README.md). Checks run in a fixed order (LoadStage); every failure
// becomes one RejectedPlugin whose message names the path, the stage, what was expected and
// what was found, and no failure stops the other candidates.
#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/dll/library_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstddef>
#include <cstring>
#include <exception>
#include <filesystem>
#include <ios>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "plugins/elf_dynamic.hpp"
#include "plugins/loaded_image.hpp"
#include "plugins/loader_internal.hpp"
#include "plugins/plugin_checks.hpp"
#include "plugins/trusted_fs.hpp"
#include "run/standard_fds.hpp"
#include "sbx/core/plugin_loader.hpp"

namespace sbx {

namespace plugins {
namespace {

using plugins::TrustedFile;
using plugins::UniqueFd;

// A library that loaded, kept for the life of the process. glibc identifies a loaded object
// first by the exact name given to dlopen(); once "/proc/self/fd/N" is closed, N is reused for
// the next file, and dlopen("/proc/self/fd/N") would silently return the *earlier* library.
// Keeping the descriptor open pins that name to that inode for as long as the object exists
// (forever: RTLD_NODELETE), so a later load under the same number cannot happen. The open
// descriptor also keeps the inode alive, so its (dev, ino) key can never name another file
// (in either loading mode).
struct RetainedLibrary {
  UniqueFd fd;
  boost::dll::shared_library library;
};

using InodeKey = std::pair<dev_t, ino_t>;

// Intentionally leaked: plugins outlive static destruction (backends may be destroyed late).
std::map<InodeKey, RetainedLibrary*>& retained_libraries() {
  static auto* libraries = new std::map<InodeKey, RetainedLibrary*>();
  return *libraries;
}
std::mutex& retained_mutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

std::string join_symbols(const std::vector<std::string>& symbols) {
  if (symbols.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < symbols.size() && i < 5; ++i) out += (i ? ", " : "") + symbols[i];
  if (symbols.size() > 5) out += ", ... (" + std::to_string(symbols.size()) + " in all)";
  return out;
}

// Stage kInspect: read the object's symbol table without loading it, so no constructor of a
// file that is not an sbx plugin ever runs. Boost throws unhelpful stream errors on files that
// are not objects, so every exception becomes one clean sentence. `load_name` is what dlopen
// will be given: /proc/self/fd/N, or the checked path when loading by path.
std::optional<std::string> inspect(const std::string& load_name) {
  std::vector<std::string> symbols;
  try {
    boost::dll::library_info info{std::filesystem::path(load_name)};
    symbols = info.symbols();
  } catch (const std::ios_base::failure&) {
    return "the file is not a shared object (unrecognised or truncated format); expected an ELF "
           "shared object exporting " SBX_PLUGIN_ENTRY_SYMBOL;
  } catch (const std::exception& e) {
    return std::string("the file is not a loadable shared object (") + e.what() +
           "); expected an ELF shared object exporting " SBX_PLUGIN_ENTRY_SYMBOL;
  }
  if (std::find(symbols.begin(), symbols.end(), SBX_PLUGIN_ENTRY_SYMBOL) != symbols.end())
    return std::nullopt;
  // Built for ABI 1.x: loaded only to be named in the refusal (stage kAbi, load_descriptor).
  if (std::find(symbols.begin(), symbols.end(), SBX_PLUGIN_ENTRY_SYMBOL_V1) != symbols.end())
    return std::nullopt;
  return "the file does not export " SBX_PLUGIN_ENTRY_SYMBOL " (exported: " +
         join_symbols(symbols) +
         "); expected a plugin declared with "
         "SBX_DECLARE_BACKEND";
}

// Stage kInspect, second part: where ld.so will look for the plugin's own dependencies. The
// trust rule would mean little if a RUNPATH (CMake leaves the build tree's in every file it
// builds) let anyone who can write some other directory supply a library the plugin loads.
// Read from the checked descriptor, before dlopen: no code of the plugin or of a dependency
// runs. ELF only; macOS's LC_RPATH is not checked yet (README.md).
std::optional<std::string> dependency_problem(const TrustedFile& file) {
#if defined(__APPLE__)
  static_cast<void>(file);
  return std::nullopt;
#else
  Result<DynamicSearchInfo> info = read_dynamic_search_info_fd(file.fd.get());
  if (!info) {
    return "cannot read the dynamic section (" + info.error() +
           "); expected a well-formed ELF shared object";
  }
  const std::size_t slash = file.path.rfind('/');
  const std::string dir =
      slash == 0 || slash == std::string::npos ? "/" : file.path.substr(0, slash);
  return dependency_search_problem(*info, dir, file.owners);
#endif
}

// Boost.DLL's text is "boost::dll::shared_library::load() failed (dlerror system message:
// /proc/self/fd/N: undefined symbol: foo): Bad file descriptor"; keep only dlerror's words.
std::string dlerror_text(std::string_view what, std::string_view load_name) {
  constexpr std::string_view kMarker = "dlerror system message: ";
  std::size_t begin = what.find(kMarker);
  if (begin == std::string_view::npos) return std::string(what);
  begin += kMarker.size();
  std::size_t end = what.rfind("): ");
  if (end == std::string_view::npos || end < begin) end = what.size();
  std::string text(what.substr(begin, end - begin));
  const std::string prefix = std::string(load_name) + ": ";
  if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
  return text;
}

// Stage kLoad. Loads the checked inode by `load_name` (its /proc/self/fd name, or in path mode
// its checked path): RTLD_NOW so an unresolved symbol fails here and not at the first call,
// RTLD_LOCAL so plugins cannot interpose on each other, RTLD_NODELETE so no object or exception
// from the plugin can outlive its code. In path mode the loaded image is compared with the
// checked file before anything in it is called (loaded_image.hpp).
std::variant<RetainedLibrary*, std::string> load_library(TrustedFile& file,
                                                         const std::string& load_name,
                                                         LoadingMode mode) {
  const std::lock_guard<std::mutex> lock(retained_mutex());
  const InodeKey key{file.st.st_dev, file.st.st_ino};
  // The same inode is already loaded (glibc would hand back the same object anyway).
  if (auto found = retained_libraries().find(key); found != retained_libraries().end())
    return found->second;
  const auto flags = boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local |
                     static_cast<boost::dll::load_mode::type>(RTLD_NODELETE);
  boost::dll::shared_library library;
  try {
    library = boost::dll::shared_library(std::filesystem::path(load_name), flags);
  } catch (const std::exception& e) {
    return "dlopen failed: " + dlerror_text(e.what(), load_name);
  }
  if (mode == LoadingMode::kPath) {
    // Not retained when refused: the object stays mapped (RTLD_NODELETE) but nothing in it is
    // ever called, and a later scan compares again.
    if (std::optional<std::string> problem = loaded_image_problem(library.native(), file))
      return *problem;
  }
  auto* retained = new RetainedLibrary{std::move(file.fd), std::move(library)};
  retained_libraries().emplace(key, retained);
  return retained;
}

// The name dlopen is given for `file` in `mode`, or why the file cannot be loaded.
Result<std::string> load_name_for(const TrustedFile& file, LoadingMode mode) {
  if (mode == LoadingMode::kDescriptor) return proc_fd_path(file.fd.get(), file.st);
  if (std::optional<std::string> problem = path_loading_problem()) return Error{*problem};
  return file.path;
}

// Stage kAbi for a library without SBX_PLUGIN_ENTRY_SYMBOL but with the ABI 1.x entry: its
// descriptor's leading fields name the plugin and its ABI in the refusal (plugin_checks.hpp).
// The 1.x entry returns a pointer to a static struct, like the 2.x one; create() is never
// called.
std::optional<std::string> legacy_abi_problem(RetainedLibrary& retained) {
  if (!retained.library.has(SBX_PLUGIN_ENTRY_SYMBOL_V1) ||
      retained.library.has(SBX_PLUGIN_ENTRY_SYMBOL))
    return std::nullopt;
  const sbx_plugin_v2* head = nullptr;
  try {
    auto& entry = retained.library.get<const sbx_plugin_v2*()>(SBX_PLUGIN_ENTRY_SYMBOL_V1);
    head = entry();
  } catch (...) {
    head = nullptr;  // still refused, without the name
  }
  return legacy_abi_refusal(head);
}

// Stage kEntry: resolve the entry point in the retained library and call it.
std::variant<const sbx_plugin_v2*, std::string> resolve_and_call_entry(RetainedLibrary& retained) {
  sbx_plugin_entry_fn entry = nullptr;
  try {
    entry = &retained.library.get<const sbx_plugin_v2*()>(SBX_PLUGIN_ENTRY_SYMBOL);
  } catch (const std::exception& e) {
    return std::string(SBX_PLUGIN_ENTRY_SYMBOL " failed: ") + e.what();
  }
  return call_entry(entry);
}

}  // namespace

std::variant<const sbx_plugin_v2*, RejectedPlugin> load_descriptor(TrustedFile file) {
  return load_descriptor(std::move(file), LoadingMode::kDescriptor);
}

std::variant<const sbx_plugin_v2*, RejectedPlugin> load_descriptor(TrustedFile file,
                                                                   LoadingMode mode) {
  const std::string path = file.path;
  Result<std::string> load_name = load_name_for(file, mode);
  if (!load_name) return reject(path, LoadStage::kInspect, load_name.error());
  if (std::optional<std::string> problem = inspect(*load_name))
    return reject(path, LoadStage::kInspect, *problem);
  if (std::optional<std::string> problem = dependency_problem(file))
    return reject(path, LoadStage::kInspect, *problem);
  std::variant<RetainedLibrary*, std::string> library = load_library(file, *load_name, mode);
  if (auto* error = std::get_if<std::string>(&library))
    return reject(path, LoadStage::kLoad, *error);
  if (std::optional<std::string> problem = legacy_abi_problem(*std::get<RetainedLibrary*>(library)))
    return reject(path, LoadStage::kAbi, *problem);
  std::variant<const sbx_plugin_v2*, std::string> entry =
      resolve_and_call_entry(*std::get<RetainedLibrary*>(library));
  if (auto* error = std::get_if<std::string>(&entry))
    return reject(path, LoadStage::kEntry, *error);
  const sbx_plugin_v2* descriptor = std::get<const sbx_plugin_v2*>(entry);
  if (std::optional<std::string> problem = abi_problem(*descriptor))
    return reject(path, LoadStage::kAbi, *problem);
  if (std::optional<std::string> problem = fingerprint_problem(*descriptor))
    return reject(path, LoadStage::kFingerprint, *problem);
  return descriptor;
}

}  // namespace plugins

namespace {

using plugins::reject;

struct ScanState {
  std::vector<LoadedPlugin> plugins;
  std::vector<RejectedPlugin> rejected;
  PluginLoading loading;
  bool warn = true;  // LoaderOptions::warn_rejections
};

void record(ScanState& state, RejectedPlugin rejection) {
  if (state.warn) warn_rejected(rejection);
  state.rejected.push_back(std::move(rejection));
}

std::string join_path(const std::string& dir, const std::string& name) {
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base == "/" ? "/" + name : base + "/" + name;
}

void load_candidate(int dir_fd, const std::string& dir, const std::string& name,
                    const LoaderOptions& options, ScanState& state) {
  const LoadingMode mode = state.loading.mode;
  const std::string path = join_path(dir, name);
  Result<plugins::TrustedFile> file =
      plugins::open_trusted_file(dir_fd, dir, name, plugins::Owners{options.trusted_owner});
  if (!file) return record(state, reject(path, LoadStage::kTrust, file.error()));
  const struct stat st = file->st;
  auto outcome = plugins::load_descriptor(std::move(file).value(), mode);
  if (auto* rejection = std::get_if<RejectedPlugin>(&outcome))
    return record(state, std::move(*rejection));
  const sbx_plugin_v2& d = *std::get<const sbx_plugin_v2*>(outcome);
  auto accepted = plugins::accept_descriptor(path, d, options.host, state.plugins);
  if (auto* rejection = std::get_if<RejectedPlugin>(&accepted))
    return record(state, std::move(*rejection));
  LoadedPlugin plugin = std::move(std::get<LoadedPlugin>(accepted));
  plugin.isolated = !plugins::is_own_backend(dir, plugin.name, options);
  spdlog::debug("plugin loaded: {} (dev {}, inode {}): name {}, version {}, fingerprint {}", path,
                st.st_dev, st.st_ino, plugin.name, plugin.version, d.fingerprint);
  state.plugins.push_back(std::move(plugin));
}

// A directory whose chain failed the walk. Its candidates are still named (listing a directory
// reads names only; nothing in it is opened or loaded), so `sbx backends` shows each plugin
// that was not loaded; an empty or unreadable directory is reported by itself.
void reject_directory(const std::string& dir, const std::string& why, ScanState& state) {
  std::vector<std::string> candidates;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (plugins::is_candidate_name(name)) candidates.push_back(name);
  }
  std::sort(candidates.begin(), candidates.end());
  if (candidates.empty()) return record(state, reject(dir, LoadStage::kDirectory, why));
  for (const std::string& name : candidates)
    record(state, reject(join_path(dir, name), LoadStage::kDirectory, why));
}

// The directory walk for the scan's loading mode. Loading by path looks the path up again, so
// every directory from "/" must be checked, not just those below the trust root.
plugins::DirectoryWalk walk_directory(const std::string& dir, const LoaderOptions& options,
                                      LoadingMode mode) {
  const plugins::Owners owners{options.trusted_owner};
  if (mode == LoadingMode::kPath)
    return plugins::open_trusted_directory_chain(dir, options.trust_root, owners);
  return plugins::open_trusted_directory(dir, options.trust_root, owners);
}

void scan_directory(const std::string& dir, const LoaderOptions& options, ScanState& state) {
  plugins::DirectoryWalk walk = walk_directory(dir, options, state.loading.mode);
  if (walk.missing) {
    // Nothing there to load (e.g. no plugin installed yet); not a rejection.
    spdlog::debug("plugin directory {}: {}", dir, walk.error);
    return;
  }
  if (!walk.fd.valid()) return reject_directory(dir, walk.error, state);
  Result<std::vector<std::string>> names = plugins::list_directory(walk.fd.get());
  if (!names) return record(state, reject(dir, LoadStage::kDirectory, names.error()));
  for (const std::string& name : *names) {
    if (!plugins::is_candidate_name(name)) {
      spdlog::debug("plugin directory {}: ignoring {} (not named sbx-backend-*{})", dir, name,
                    plugins::kCandidateSuffix);
      continue;
    }
    if (!plugins::is_selected(name, options.only_names)) {
      spdlog::debug("plugin directory {}: skipping {} (not among the wanted backends)", dir, name);
      continue;
    }
    load_candidate(walk.fd.get(), dir, name, options, state);
  }
}

// Descriptor loading wherever /proc/self/fd works: it loads the checked inode whatever happens
// to the path. Only where it cannot (no procfs at /proc, macOS) is the file loaded by path,
// under the stricter chain rule. Decided once per scan; in descriptor mode every file's
// /proc/self/fd name is still verified, and a failure there refuses the file (no fallback).
PluginLoading choose_loading() {
  plugins::DescriptorNaming naming = plugins::probe_descriptor_naming();
  if (naming.usable) return {LoadingMode::kDescriptor, std::move(naming.reason)};
  return {LoadingMode::kPath,
          std::move(naming.reason) + "; loading by path under the ownership-chain rule from /"};
}

}  // namespace

PluginRegistry PluginRegistry::load(const LoaderOptions& options) {
  // The descriptors a plugin keeps open for its life (its file, for dlopen by /proc/self/fd)
  // never take a closed 0, 1 or 2: a later run would hand it to its command (standard_fds.hpp).
  const StandardDescriptorHold standard_fds;
  ScanState state;
  state.warn = options.warn_rejections;
  state.loading = choose_loading();
  spdlog::debug("plugin loading mode: {} ({})", to_string(state.loading.mode),
                state.loading.reason);
  for (const std::string& dir : options.directories) scan_directory(dir, options, state);
  PluginRegistry registry;
  registry.plugins_ = std::move(state.plugins);
  registry.rejected_ = std::move(state.rejected);
  registry.loading_ = std::move(state.loading);
  return registry;
}

void warn_rejected(const RejectedPlugin& rejection) {
  spdlog::warn("plugin rejected: {}", rejection.message);
}

}  // namespace sbx
