// Trusted discovery and loading of backend plugins (core/src/plugins/README.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/platform_types.hpp"
#include "sbx/sdk/abi.h"
#include "sbx/sdk/backend.hpp"

namespace sbx {

// Where a rejected candidate failed, in the order the checks run.
enum class LoadStage {
  kDirectory,    // the directory or its chain is not trusted / not readable
  kTrust,        // the file: not regular, symlink, owner, mode
  kInspect,      // not a loadable object exporting sbx_plugin_entry_v2
  kLoad,         // dlopen failed (e.g. unresolved symbol)
  kEntry,        // entry symbol missing or returned NULL
  kAbi,          // major/minor/struct size
  kFingerprint,  // toolchain fingerprint mismatch
  kName,         // invalid or duplicate name
  kCreate,       // create() returned NULL or threw
};
std::string_view to_string(LoadStage stage);

// How PluginRegistry::load turned a file that passed the trust checks into a loaded library.
enum class LoadingMode {
  kNone,  // nothing was loaded from files (from_plugins)
  // The checked, still open descriptor, named /proc/self/fd/N: what is loaded is the inode
  // that was checked, whatever happens to its path. Linux with a working procfs.
  kDescriptor,
  // The checked path, where no descriptor can be named (macOS, Linux without procfs at /proc):
  // every directory from "/" and the file must be unwritable by anyone but root and the trusted
  // owner, so nobody else can swap the file between the check and dlopen; after dlopen the
  // loaded image is compared with the checked file and refused if it differs.
  kPath,
};
std::string_view to_string(LoadingMode mode);

// The mode one PluginRegistry::load used, and why (for `sbx backends --probe`).
struct PluginLoading {
  LoadingMode mode = LoadingMode::kNone;
  std::string reason;
};

struct RejectedPlugin {
  std::string path;
  LoadStage stage;
  std::string message;  // names path, stage, expected and actual values
};

// A plugin that passed every check. The Backend lives as long as the registry; the library is
// never unloaded (RTLD_NODELETE).
struct LoadedPlugin {
  std::string name;
  std::string version;
  std::string description;
  std::string path;  // canonical path of the file that was checked and loaded
  std::shared_ptr<Backend> backend;
  // The ABI minor version it was built for (abi.h): below 1 it knows neither the run's stdio
  // nor its end, and its exec() is called for one run at a time (Manager::exec).
  std::uint16_t abi_minor = SBX_ABI_MINOR;
  // Whether its transform() and exec() run in a child process of their own, so that a crash or
  // a hang there fails the run instead of sbx (core/src/plugins/README.md, "Third-party plugins
  // run isolated"): true for every plugin file except sbx's own backends in the install's plugin
  // directory (LoaderOptions::own_plugin_directory); false for backends built into the program
  // (PluginRegistry::from_plugins), which are the program's own code.
  bool isolated = false;
};

// The backends built with sbx (plugins/): the names under which the install's own plugin
// directory holds sbx's own plugins (LoaderOptions::own_plugin_directory).
inline constexpr std::string_view kOwnBackends[] = {"bwrap", "landlock", "seatbelt", "windows"};

// "MAJOR.MINOR": the plugin ABI this libsbx implements (sdk/include/sbx/sdk/abi.h). It loads
// plugins built for MAJOR.0 to MAJOR.MINOR (sdk/README.md, "Versions").
inline std::string host_plugin_abi() {
  return std::to_string(SBX_ABI_MAJOR) + "." + std::to_string(SBX_ABI_MINOR);
}
// The ABI a loaded plugin was built for: the host's major (no other loads), its own minor.
inline std::string plugin_abi(const LoadedPlugin& plugin) {
  return std::to_string(SBX_ABI_MAJOR) + "." + std::to_string(plugin.abi_minor);
}

struct LoaderOptions {
  // Directories to scan, in order. Each must be absolute.
  std::vector<std::string> directories;
  // Besides root, the one uid allowed to own the files and directories (the owner of libsbx).
  std::optional<uid_t> trusted_owner;
  // Windows: the SID (besides SYSTEM, Administrators and TrustedInstaller) that may own and
  // write the plugin directories and DLLs: the owner of sbx.exe. Ignored elsewhere.
  std::optional<std::string> trusted_owner_sid;
  // Where the ownership/permission walk starts. "/" in production; tests (C++ API only) may
  // start lower to use fixtures under a build tree. Never settable from the CLI or environment.
  // On Windows the whole chain from the drive root is always read; "/" makes each scanned
  // directory its own trust root (above it only the right to create entries is tolerated), a
  // drive path names a higher directory from which everything must be trusted
  // (plugins/trusted_acl.hpp).
  std::string trust_root = "/";
  // The install's own plugin directory (install_loader_options: <libdir>/sbx/backends). A plugin
  // found there under the name of one of sbx's own backends (kOwnBackends) is the one sbx's
  // package installed, built with this libsbx, and runs in process; every other plugin file
  // (a vendor's, there or in another directory) runs isolated (LoadedPlugin::isolated).
  std::string own_plugin_directory;
  // The host table passed to create(); must outlive the registry.
  const sbx_host_v2* host = nullptr;
  // If not empty, only candidates named sbx-backend-<NAME>.so (.dll on Windows) for a NAME
  // listed here are opened; the others are skipped unread (neither loaded nor rejected). A
  // start-up saving for callers that already know which backends they want: loading a plugin
  // costs about a millisecond. A plugin whose file name does not follow the convention is not found
  // this way; callers fall back to a full load when a wanted name is missing.
  std::vector<std::string> only_names;
  // Each rejection is logged as a warning ("plugin rejected: ..."; warn_rejected) as it is
  // found. A caller that scans more than once (the CLI: the wanted plugins first, then all)
  // turns this off and warns itself, once per rejection.
  bool warn_rejections = true;
};

// The warning a scan logs for a rejected plugin (LoaderOptions::warn_rejections).
void warn_rejected(const RejectedPlugin& rejection);

struct InstallLayout;

// The options that load the plugins of the install `layout`, the same for every front end (the
// CLI adds its --plugin-dir and --backends): its plugin directory, trusted when owned by root
// or by the owner of the running libsbx (its uid; on Windows its SID), and the host-services
// table.
LoaderOptions install_loader_options(const InstallLayout& layout);

class PluginRegistry {
 public:
  // Scans every directory; a bad candidate is recorded in rejected() and never stops the rest.
  static PluginRegistry load(const LoaderOptions& options);
  // A registry of backends built in-process (tests, embedders that link a backend statically).
  static PluginRegistry from_plugins(std::vector<LoadedPlugin> plugins,
                                     std::vector<RejectedPlugin> rejected = {});

  const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
  const std::vector<RejectedPlugin>& rejected() const { return rejected_; }
  // nullptr when no plugin has that name.
  const LoadedPlugin* find(std::string_view name) const;
  // How load() loaded the plugins (kNone for from_plugins).
  const PluginLoading& loading() const { return loading_; }

 private:
  std::vector<LoadedPlugin> plugins_;
  std::vector<RejectedPlugin> rejected_;
  PluginLoading loading_;
};

}  // namespace sbx
