// SBX_DECLARE_BACKEND: defines the plugin's descriptor and its one exported entry point.
//
//   class AcmeBackend final : public sbx::Backend { ... explicit AcmeBackend(sbx::HostServices); };
//   SBX_DECLARE_BACKEND(AcmeBackend, "acme", "1.0.0", "Confines commands with acme-jail")
//
// create() catches every exception and returns NULL instead (exceptions never cross the ABI).
// The descriptor says the ABI the plugin is built for: SBX_ABI_MAJOR.SBX_PLUGIN_ABI_MINOR_TARGET
// (backend.hpp; SBX_ABI_MINOR unless the build targets an older minor).
#pragma once

#include <new>

#include "sbx/sdk/abi.h"
#include "sbx/sdk/backend.hpp"

namespace sbx::sdk_detail {

template <typename BackendClass>
void* create_backend(const sbx_host_v2* host) noexcept {
  // No C++ exception may cross the C ABI: the reason goes to the host's log at error level,
  // which the loader puts into the plugin's rejection ("create() returned NULL ...: <why>").
  try {
    Backend* backend = new BackendClass(HostServices(host));
    return static_cast<void*>(backend);
  } catch (const std::exception& e) {
    try {
      HostServices(host).log(SBX_LOG_ERROR, std::string("create() failed: ") + e.what());
    } catch (...) {
      // Out of memory for the message: the rejection still says create() returned NULL.
    }
  } catch (...) {
    try {
      HostServices(host).log(SBX_LOG_ERROR, "create() failed: a non-standard exception");
    } catch (...) {
    }
  }
  return nullptr;
}

inline void destroy_backend(void* backend) noexcept { delete static_cast<Backend*>(backend); }

// The descriptor's struct_size for a plugin built for 2.<minor>: sbx_plugin_v2 has not grown
// within ABI 2 (its growth goes into the host tables), so every 2.x minor declares the whole
// struct. A minor that appends a field to it adds its own size here.
constexpr uint32_t descriptor_size(int /*minor*/) {
  return static_cast<uint32_t>(sizeof(sbx_plugin_v2));
}

}  // namespace sbx::sdk_detail

#define SBX_DECLARE_BACKEND(BackendClass, kName, kVersion, kDescription)        \
  extern "C" SBX_PLUGIN_EXPORT const sbx_plugin_v2* sbx_plugin_entry_v2(void) { \
    static const sbx_plugin_v2 descriptor = {                                   \
        ::sbx::sdk_detail::descriptor_size(SBX_PLUGIN_ABI_MINOR_TARGET),        \
        SBX_ABI_MAJOR,                                                          \
        SBX_PLUGIN_ABI_MINOR_TARGET,                                            \
        kName,                                                                  \
        kVersion,                                                               \
        SBX_TOOLCHAIN_FINGERPRINT,                                              \
        kDescription,                                                           \
        &::sbx::sdk_detail::create_backend<BackendClass>,                       \
        &::sbx::sdk_detail::destroy_backend,                                    \
        {nullptr, nullptr, nullptr, nullptr}};                                  \
    return &descriptor;                                                         \
  }
