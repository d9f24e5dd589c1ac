// PluginRegistry helpers that do not load anything: the names of the stages and modes, building
// a registry from in-process backends and looking a plugin up by name. Loading from disk is
// PluginRegistry::load (loader.cpp).
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/runtime.hpp"

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

PluginRegistry PluginRegistry::from_plugins(std::vector<LoadedPlugin> plugins,
                                            std::vector<RejectedPlugin> rejected) {
  PluginRegistry registry;
  // Names identify backends everywhere (--backends, explain, JSON); a second plugin with a name
  // already taken, or with no backend object, must not shadow or crash the first, so it is
  // recorded as rejected exactly like the loader does for files.
  for (LoadedPlugin& plugin : plugins) {
    const bool duplicate =
        std::any_of(registry.plugins_.begin(), registry.plugins_.end(),
                    [&](const LoadedPlugin& kept) { return kept.name == plugin.name; });
    if (plugin.backend == nullptr) {
      rejected.push_back(
          {plugin.path, LoadStage::kCreate, "plugin '" + plugin.name + "' has no backend object"});
    } else if (plugin.name.empty() || duplicate) {
      rejected.push_back({plugin.path, LoadStage::kName,
                          plugin.name.empty() ? "plugin has an empty name"
                                              : "duplicate plugin name '" + plugin.name +
                                                    "' (the first one is kept)"});
    } else {
      registry.plugins_.push_back(std::move(plugin));
    }
  }
  registry.rejected_ = std::move(rejected);
  return registry;
}

const LoadedPlugin* PluginRegistry::find(std::string_view name) const {
  for (const LoadedPlugin& plugin : plugins_) {
    if (plugin.name == name) return &plugin;
  }
  return nullptr;
}

LoaderOptions install_loader_options(const InstallLayout& layout) {
  LoaderOptions loader;
  loader.directories.push_back(layout.plugin_dir);
  loader.own_plugin_directory = layout.plugin_dir;
  loader.trusted_owner = layout.libsbx_owner;
  // Windows: the SID that owns sbx.exe or sbx.dll (empty elsewhere, where the uid is used).
  if (!layout.libsbx_owner_sid.empty()) loader.trusted_owner_sid = layout.libsbx_owner_sid;
  loader.host = host_services(layout);
  return loader;
}

}  // namespace sbx
