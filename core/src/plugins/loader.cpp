// PluginRegistry::load: trusted discovery and loading of backend plugins (docs/ARCHITECTURE.md,
// "The plugin boundary and trust rules"). Checks run in a fixed order (LoadStage); every failure
// becomes one RejectedPlugin whose message names the path, the stage, what was expected and
// what was found, and no failure stops the other candidates.
#include "sbx/core/plugin_loader.hpp"

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

#include "plugins/abi_compat.hpp"
#include "plugins/loaded_image.hpp"
#include "plugins/loader_internal.hpp"
#include "plugins/trusted_fs.hpp"

namespace sbx {

std::string_view to_string(LoadStage stage) {
  switch (stage) {
    case LoadStage::kDirectory:
      return "directory";
    case LoadStage::kTrust:
      return "trust";
    case LoadStage::kInspect:
      return "inspect";
    case LoadStage::kLoad:
      return "load";
    case LoadStage::kEntry:
      return "entry";
    case LoadStage::kAbi:
      return "abi";
    case LoadStage::kFingerprint:
      return "fingerprint";
    case LoadStage::kName:
      return "name";
    case LoadStage::kCreate:
      return "create";
  }
  return "unknown";
}

std::string_view to_string(LoadingMode mode) {
  switch (mode) {
    case LoadingMode::kNone:
      return "none";
    case LoadingMode::kDescriptor:
      return "descriptor";
    case LoadingMode::kPath:
      return "path";
  }
  return "unknown";
}

namespace plugins {
namespace {

using plugins::TrustedFile;
using plugins::UniqueFd;

constexpr std::string_view kCandidatePrefix = "sbx-backend-";
#if defined(__APPLE__)
constexpr std::string_view kCandidateSuffix = ".dylib";
#else
constexpr std::string_view kCandidateSuffix = ".so";
#endif
constexpr std::size_t kMaxNameLength = 32;
// Strings in a descriptor live in plugin memory; never read more than this of one.
constexpr std::size_t kMaxDescriptorString = 256;

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

std::string bounded_string(const char* text) {
  if (text == nullptr) return "(null)";
  return std::string(text, strnlen(text, kMaxDescriptorString));
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
  return "the file does not export " SBX_PLUGIN_ENTRY_SYMBOL " (exported: " +
         join_symbols(symbols) +
         "); expected a plugin declared with "
         "SBX_DECLARE_BACKEND";
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

// Stage kEntry: resolve and call the entry point (plugin code: guarded, though it is C).
std::variant<const sbx_plugin_v1*, std::string> call_entry(RetainedLibrary& retained) {
  try {
    auto& entry = retained.library.get<const sbx_plugin_v1*()>(SBX_PLUGIN_ENTRY_SYMBOL);
    const sbx_plugin_v1* descriptor = entry();
    if (descriptor == nullptr)
      return std::string(SBX_PLUGIN_ENTRY_SYMBOL "() returned NULL; expected a descriptor");
    return descriptor;
  } catch (const std::exception& e) {
    return std::string(SBX_PLUGIN_ENTRY_SYMBOL " failed: ") + e.what();
  } catch (...) {
    return std::string(SBX_PLUGIN_ENTRY_SYMBOL "() threw a non-standard exception");
  }
}

std::string short_struct(uint32_t size) {
  return "descriptor struct_size is " + std::to_string(size) + "; expected at least " +
         std::to_string(SBX_PLUGIN_V1_MIN_SIZE) + " (short struct: fields up to destroy missing)";
}

// Stage kAbi. No field is read beyond struct_size: a short descriptor may end anywhere.
std::optional<std::string> abi_problem(const sbx_plugin_v1& d) {
  constexpr std::size_t kVersionEnd = offsetof(sbx_plugin_v1, abi_minor) + sizeof(uint16_t);
  if (d.struct_size < kVersionEnd) return short_struct(d.struct_size);
  if (d.abi_major != SBX_ABI_MAJOR) {
    return "ABI major is " + std::to_string(d.abi_major) + "; expected " +
           std::to_string(SBX_ABI_MAJOR) + " (rebuild the plugin against this sbx SDK)";
  }
  if (d.abi_minor > SBX_ABI_MINOR) {
    return "ABI minor is " + std::to_string(d.abi_minor) + "; expected at most " +
           std::to_string(SBX_ABI_MINOR) + ": the plugin was built for a newer sbx";
  }
  if (d.struct_size < SBX_PLUGIN_V1_MIN_SIZE) return short_struct(d.struct_size);
  if (d.create == nullptr || d.destroy == nullptr)
    return std::string("create or destroy is NULL; expected both functions");
  constexpr std::size_t kReservedEnd = offsetof(sbx_plugin_v1, reserved) + sizeof(d.reserved);
  if (d.struct_size >= kReservedEnd) {
    for (std::size_t i = 0; i < std::size(d.reserved); ++i) {
      if (d.reserved[i] != nullptr)
        return "reserved[" + std::to_string(i) +
               "] is not NULL; expected every reserved field NULL";
    }
  }
  return std::nullopt;
}

}  // namespace

bool is_candidate_name(std::string_view name) {
  return name.size() >= kCandidatePrefix.size() + kCandidateSuffix.size() &&
         name.substr(0, kCandidatePrefix.size()) == kCandidatePrefix &&
         name.substr(name.size() - kCandidateSuffix.size()) == kCandidateSuffix;
}

RejectedPlugin reject(const std::string& path, LoadStage stage, const std::string& detail) {
  return RejectedPlugin{path, stage, path + ": " + std::string(to_string(stage)) + ": " + detail};
}

std::variant<const sbx_plugin_v1*, RejectedPlugin> load_descriptor(TrustedFile file) {
  return load_descriptor(std::move(file), LoadingMode::kDescriptor);
}

std::variant<const sbx_plugin_v1*, RejectedPlugin> load_descriptor(TrustedFile file,
                                                                   LoadingMode mode) {
  const std::string path = file.path;
  Result<std::string> load_name = load_name_for(file, mode);
  if (!load_name) return reject(path, LoadStage::kInspect, load_name.error());
  if (std::optional<std::string> problem = inspect(*load_name))
    return reject(path, LoadStage::kInspect, *problem);
  std::variant<RetainedLibrary*, std::string> library = load_library(file, *load_name, mode);
  if (auto* error = std::get_if<std::string>(&library))
    return reject(path, LoadStage::kLoad, *error);
  std::variant<const sbx_plugin_v1*, std::string> entry =
      call_entry(*std::get<RetainedLibrary*>(library));
  if (auto* error = std::get_if<std::string>(&entry))
    return reject(path, LoadStage::kEntry, *error);
  const sbx_plugin_v1* descriptor = std::get<const sbx_plugin_v1*>(entry);
  if (std::optional<std::string> problem = abi_problem(*descriptor))
    return reject(path, LoadStage::kAbi, *problem);
  // The C++ types crossing the boundary (std::string, std::vector) have the same layout only
  // if both sides use the same standard library ABI; a mismatch crashes rather than fails.
  const std::string fingerprint = bounded_string(descriptor->fingerprint);
  if (fingerprint != SBX_TOOLCHAIN_FINGERPRINT) {
    return reject(path, LoadStage::kFingerprint,
                  "toolchain fingerprint is '" + fingerprint + "'; expected '" +
                      SBX_TOOLCHAIN_FINGERPRINT +
                      "' (rebuild the plugin with the same C++ "
                      "standard library settings as sbx)");
  }
  return descriptor;
}

}  // namespace plugins

namespace {

using plugins::reject;

struct ScanState {
  std::vector<LoadedPlugin> plugins;
  std::vector<RejectedPlugin> rejected;
  PluginLoading loading;
};

void record(ScanState& state, RejectedPlugin rejection) {
  spdlog::warn("plugin rejected: {}", rejection.message);
  state.rejected.push_back(std::move(rejection));
}

std::string join_path(const std::string& dir, const std::string& name) {
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base == "/" ? "/" + name : base + "/" + name;
}

// Stage kName: the name selects the backend everywhere (--backends, explain, JSON).
std::optional<std::string> name_problem(const char* raw, const ScanState& state) {
  const std::string name = raw == nullptr ? "" : std::string(raw, strnlen(raw, 64));
  const bool valid = !name.empty() && name.size() <= plugins::kMaxNameLength &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                     });
  if (!valid) {
    return "name '" + (raw == nullptr ? std::string("(null)") : name) +
           "' is invalid; expected 1 to " + std::to_string(plugins::kMaxNameLength) +
           " characters from [a-z0-9-]";
  }
  for (const LoadedPlugin& plugin : state.plugins) {
    if (plugin.name == name)
      return "name '" + name + "' is already taken by " + plugin.path + "; expected a unique name";
  }
  return std::nullopt;
}

// Stage kCreate: the first call that builds a C++ object in the plugin. The Backend is owned
// through the plugin's own destroy() (its allocator, its destructor); the library stays mapped.
std::variant<std::shared_ptr<Backend>, std::string> create_backend(const sbx_plugin_v1& d,
                                                                   const sbx_host_v1* host) {
  void* raw = nullptr;
  try {
    raw = d.create(host);
  } catch (const std::exception& e) {
    return std::string("create() threw an exception: ") + e.what() + "; expected a Backend";
  } catch (...) {
    return std::string("create() threw a non-standard exception; expected a Backend");
  }
  if (raw == nullptr)
    return std::string("create() returned NULL; expected a Backend (the plugin failed to start)");
  auto* destroy = d.destroy;
  return std::shared_ptr<Backend>(static_cast<Backend*>(raw), [destroy](Backend* backend) {
    try {
      destroy(static_cast<void*>(backend));
    } catch (...) {
      // destroy() must not throw; a deleter that throws would terminate the process.
    }
  });
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
  const sbx_plugin_v1& d = *std::get<const sbx_plugin_v1*>(outcome);
  if (std::optional<std::string> problem = name_problem(d.name, state))
    return record(state, reject(path, LoadStage::kName, *problem));
  auto backend = create_backend(d, options.host);
  if (auto* error = std::get_if<std::string>(&backend))
    return record(state, reject(path, LoadStage::kCreate, *error));
  LoadedPlugin plugin{d.name, d.version == nullptr ? "" : d.version,
                      d.description == nullptr ? "" : d.description, path,
                      plugins::adapt_to_current_abi(
                          std::move(std::get<std::shared_ptr<Backend>>(backend)), d.abi_minor)};
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

// True if the candidate file `name` (sbx-backend-<NAME>.so) is wanted: every file when
// `only_names` is empty, else the files whose <NAME> is listed.
bool selected(std::string_view name, const std::vector<std::string>& only_names) {
  if (only_names.empty()) return true;
  using plugins::kCandidatePrefix;
  using plugins::kCandidateSuffix;
  const std::string_view stem = name.substr(
      kCandidatePrefix.size(), name.size() - kCandidatePrefix.size() - kCandidateSuffix.size());
  return std::find(only_names.begin(), only_names.end(), stem) != only_names.end();
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
    if (!selected(name, options.only_names)) {
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
  ScanState state;
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

}  // namespace sbx
