// The parts of the host-services table (sbx_host_v2) that are the same on every host: logging,
// the version. runtime.cpp (POSIX) and runtime_win32.cpp (Windows) add what differs (spawn, the
// stage-2 helper). Private to libsbx.
#pragma once

#include <string_view>

#include "sbx/sdk/abi.h"

namespace sbx::plugins {

// Fills struct_size, the ABI version, host_version, ctx and log; leaves the other members alone.
void fill_portable_host_entries(sbx_host_v2& host);

// Copies `text` into a plugin's error buffer (NUL-terminated, truncated to `size`).
void write_host_error(char* error, size_t size, std::string_view text) noexcept;

}  // namespace sbx::plugins
