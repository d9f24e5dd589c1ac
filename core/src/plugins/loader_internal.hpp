// The per-file steps of the plugin loader, exposed (privately to libsbx and its tests) so that a
// test can change the filesystem between the trust check and the load. PluginRegistry::load is
// the only production caller.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "plugins/plugin_checks.hpp"
#include "plugins/trusted_fs.hpp"
#include "sbx/core/plugin_loader.hpp"

namespace sbx::plugins {

// is_candidate_name and reject: plugins/plugin_checks.hpp.

// Stages kInspect, kLoad, kEntry, kAbi and kFingerprint for a file that passed the trust checks.
// Loads exactly the inode behind file.fd (through /proc/self/fd, failing closed without /proc),
// with RTLD_NOW|RTLD_LOCAL|RTLD_NODELETE; the library is never unloaded. On success the
// descriptor fd is kept open for the life of the process (see loader.cpp for why).
std::variant<const sbx_plugin_v2*, RejectedPlugin> load_descriptor(plugins::TrustedFile file);

// The same stages in a chosen mode. kPath loads file.path (the caller must have walked the whole
// chain from "/" with open_trusted_directory_chain) and compares the loaded image with the
// checked file before calling anything in it (loaded_image.hpp); kDescriptor is the overload
// above.
std::variant<const sbx_plugin_v2*, RejectedPlugin> load_descriptor(plugins::TrustedFile file,
                                                                   LoadingMode mode);

}  // namespace sbx::plugins
