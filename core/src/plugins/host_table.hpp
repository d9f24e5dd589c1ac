// The parts of the host-services table (sbx_host_v2) that are the same on every host: logging,
// the version. runtime.cpp (POSIX) and runtime_win32.cpp (Windows) add what differs (spawn, the
// stage-2 helper). Private to libsbx.
#pragma once

#include <string>
#include <string_view>

#include "sbx/sdk/abi.h"

namespace sbx::plugins {

// Fills struct_size, the ABI version, host_version, ctx and log; leaves the other members alone.
void fill_portable_host_entries(sbx_host_v2& host);

// Copies `text` into a plugin's error buffer (NUL-terminated, truncated to `size`).
void write_host_error(char* error, size_t size, std::string_view text) noexcept;

// While one is alive on a thread, the error lines a plugin logs on that thread through
// sbx_host_v2::log are also kept here: a create() that fails says why only through the log (the
// SDK's create_backend catches the exception, as no C++ exception may cross the C ABI), and the
// loader puts that text into the rejection. Nested captures are not supported.
class PluginErrorCapture {
 public:
  PluginErrorCapture();
  ~PluginErrorCapture();
  PluginErrorCapture(const PluginErrorCapture&) = delete;
  PluginErrorCapture& operator=(const PluginErrorCapture&) = delete;
  // The error lines logged since construction, joined by "; " (empty when none).
  const std::string& text() const { return text_; }
  void add(std::string_view line);

 private:
  std::string text_;
};

}  // namespace sbx::plugins
