// The loader's portable checks (plugin_checks.hpp): what a plugin's descriptor, name and
// create() must satisfy, whichever way its file was loaded.
#include "plugins/plugin_checks.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <utility>

#include "plugins/host_table.hpp"

namespace sbx::plugins {
namespace {

constexpr std::size_t kMaxNameLength = 32;
// Strings in a descriptor live in plugin memory; never read more than this of one.
constexpr std::size_t kMaxDescriptorString = 256;

std::string bounded_string(const char* text) {
  if (text == nullptr) return "(null)";
  return std::string(text, strnlen(text, kMaxDescriptorString));
}

std::string short_struct(uint32_t size) {
  return "descriptor struct_size is " + std::to_string(size) + "; expected at least " +
         std::to_string(SBX_PLUGIN_V2_MIN_SIZE) + " (short struct: fields up to destroy missing)";
}

}  // namespace

bool is_candidate_name(std::string_view name) {
  return name.size() >= kCandidatePrefix.size() + kCandidateSuffix.size() &&
         name.substr(0, kCandidatePrefix.size()) == kCandidatePrefix &&
         name.substr(name.size() - kCandidateSuffix.size()) == kCandidateSuffix;
}

bool is_selected(std::string_view name, const std::vector<std::string>& only_names) {
  if (only_names.empty()) return true;
  const std::string_view stem = name.substr(
      kCandidatePrefix.size(), name.size() - kCandidatePrefix.size() - kCandidateSuffix.size());
  return std::find(only_names.begin(), only_names.end(), stem) != only_names.end();
}

bool is_own_backend(std::string_view directory, std::string_view name,
                    const LoaderOptions& options) {
  if (options.own_plugin_directory.empty() || directory != options.own_plugin_directory)
    return false;
  return std::find(std::begin(kOwnBackends), std::end(kOwnBackends), name) !=
         std::end(kOwnBackends);
}

RejectedPlugin reject(const std::string& path, LoadStage stage, const std::string& detail) {
  return RejectedPlugin{path, stage, path + ": " + std::string(to_string(stage)) + ": " + detail};
}

std::variant<const sbx_plugin_v2*, std::string> call_entry(sbx_plugin_entry_fn entry) {
  if (entry == nullptr) return std::string(SBX_PLUGIN_ENTRY_SYMBOL " is not exported");
  try {
    const sbx_plugin_v2* descriptor = entry();
    if (descriptor == nullptr)
      return std::string(SBX_PLUGIN_ENTRY_SYMBOL "() returned NULL; expected a descriptor");
    return descriptor;
  } catch (const std::exception& e) {
    return std::string(SBX_PLUGIN_ENTRY_SYMBOL " failed: ") + e.what();
  } catch (...) {
    return std::string(SBX_PLUGIN_ENTRY_SYMBOL "() threw a non-standard exception");
  }
}

std::optional<std::string> abi_problem(const sbx_plugin_v2& d) {
  constexpr std::size_t kVersionEnd = offsetof(sbx_plugin_v2, abi_minor) + sizeof(uint16_t);
  if (d.struct_size < kVersionEnd) return short_struct(d.struct_size);
  if (d.abi_major != SBX_ABI_MAJOR) {
    return "ABI major is " + std::to_string(d.abi_major) + "; expected " +
           std::to_string(SBX_ABI_MAJOR) + " (rebuild the plugin against this sbx SDK)";
  }
  if (d.abi_minor > SBX_ABI_MINOR) {
    return "ABI minor is " + std::to_string(d.abi_minor) + "; expected at most " +
           std::to_string(SBX_ABI_MINOR) + ": the plugin was built for a newer sbx";
  }
  if (d.struct_size < SBX_PLUGIN_V2_MIN_SIZE) return short_struct(d.struct_size);
  if (d.create == nullptr || d.destroy == nullptr)
    return std::string("create or destroy is NULL; expected both functions");
  constexpr std::size_t kReservedEnd = offsetof(sbx_plugin_v2, reserved) + sizeof(d.reserved);
  if (d.struct_size >= kReservedEnd) {
    for (std::size_t i = 0; i < std::size(d.reserved); ++i) {
      if (d.reserved[i] != nullptr)
        return "reserved[" + std::to_string(i) +
               "] is not NULL; expected every reserved field NULL";
    }
  }
  return std::nullopt;
}

std::string legacy_abi_refusal(const sbx_plugin_v2* d) {
  // The leading fields (struct_size, abi_major, abi_minor, name) have the same layout in every
  // major version (abi.h); nothing after them is read, and nothing of the plugin is called.
  constexpr std::size_t kNameEnd = offsetof(sbx_plugin_v2, name) + sizeof(const char*);
  std::string plugin = "the plugin";
  std::string abi = "1.x";
  if (d != nullptr && d->struct_size >= kNameEnd) {
    plugin = "plugin '" + bounded_string(d->name) + "'";
    abi = std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor);
  }
  return plugin + " was built for sbx plugin ABI " + abi + " (it exports " +
         SBX_PLUGIN_ENTRY_SYMBOL_V1 + "); this sbx loads ABI " + std::to_string(SBX_ABI_MAJOR) +
         ".0 to " + std::to_string(SBX_ABI_MAJOR) + "." + std::to_string(SBX_ABI_MINOR) +
         " plugins only: rebuild it against the sbx SDK " + std::to_string(SBX_ABI_MAJOR) + "." +
         std::to_string(SBX_ABI_MINOR) +
         " (its exec() now takes a RunContext; see sdk/examples/firejail)";
}

std::optional<std::string> fingerprint_problem(const sbx_plugin_v2& d) {
  // A mismatch crashes rather than fails: std::string and std::vector cross the boundary.
  const std::string fingerprint = bounded_string(d.fingerprint);
  if (fingerprint == SBX_TOOLCHAIN_FINGERPRINT) return std::nullopt;
  return "toolchain fingerprint is '" + fingerprint + "'; expected '" + SBX_TOOLCHAIN_FINGERPRINT +
         "' (rebuild the plugin with the same C++ "
         "standard library settings as sbx)";
}

std::optional<std::string> name_problem(const char* raw, const std::vector<LoadedPlugin>& loaded) {
  const std::string name = raw == nullptr ? "" : std::string(raw, strnlen(raw, 64));
  const bool valid = !name.empty() && name.size() <= kMaxNameLength &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                     });
  if (!valid) {
    return "name '" + (raw == nullptr ? std::string("(null)") : name) +
           "' is invalid; expected 1 to " + std::to_string(kMaxNameLength) +
           " characters from [a-z0-9-]";
  }
  for (const LoadedPlugin& plugin : loaded) {
    if (plugin.name == name)
      return "name '" + name + "' is already taken by " + plugin.path + "; expected a unique name";
  }
  return std::nullopt;
}

std::variant<std::shared_ptr<Backend>, std::string> create_backend(const sbx_plugin_v2& d,
                                                                   const sbx_host_v2* host) {
  void* raw = nullptr;
  const PluginErrorCapture logged;  // why a create() that returns NULL failed (SDK: the log)
  try {
    raw = d.create(host);
  } catch (const std::exception& e) {
    return std::string("create() threw an exception: ") + e.what() + "; expected a Backend";
  } catch (...) {
    return std::string("create() threw a non-standard exception; expected a Backend");
  }
  if (raw == nullptr)
    return std::string("create() returned NULL; expected a Backend (the plugin failed to start") +
           (logged.text().empty() ? ")" : ": " + logged.text() + ")");
  auto* destroy = d.destroy;
  return std::shared_ptr<Backend>(static_cast<Backend*>(raw), [destroy](Backend* backend) {
    try {
      destroy(static_cast<void*>(backend));
    } catch (...) {
      // destroy() must not throw; a deleter that throws would terminate the process.
    }
  });
}

std::variant<LoadedPlugin, RejectedPlugin> accept_descriptor(
    const std::string& path, const sbx_plugin_v2& d, const sbx_host_v2* host,
    const std::vector<LoadedPlugin>& loaded) {
  if (std::optional<std::string> problem = name_problem(d.name, loaded))
    return reject(path, LoadStage::kName, *problem);
  auto backend = create_backend(d, host);
  if (auto* error = std::get_if<std::string>(&backend))
    return reject(path, LoadStage::kCreate, *error);
  return LoadedPlugin{d.name,
                      d.version == nullptr ? "" : d.version,
                      d.description == nullptr ? "" : d.description,
                      path,
                      std::move(std::get<std::shared_ptr<Backend>>(backend)),
                      d.abi_minor};
}

}  // namespace sbx::plugins
