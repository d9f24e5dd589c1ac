// The host-services table's portable entries (host_table.hpp): logging through spdlog and the
// network refusals a backend reports for the run in progress on its thread.
#include "plugins/host_table.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "sbx/core/report_json.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx_config.hpp"

namespace sbx::plugins {
namespace {

spdlog::level::level_enum to_spdlog(int level) {
  switch (level) {
    case SBX_LOG_TRACE:
      return spdlog::level::trace;
    case SBX_LOG_DEBUG:
      return spdlog::level::debug;
    case SBX_LOG_INFO:
      return spdlog::level::info;
    case SBX_LOG_WARN:
      return spdlog::level::warn;
    default:
      return spdlog::level::err;  // SBX_LOG_ERROR and anything unknown: never lost
  }
}

// sbx_host_v1::log. Plugin text is passed as an argument, never as a format string.
void host_log(void* /*ctx*/, int level, const char* message, size_t length) noexcept {
  try {
    const std::string_view text =
        message == nullptr ? std::string_view() : std::string_view(message, length);
    spdlog::default_logger_raw()->log(to_spdlog(level), "{}", text);
  } catch (...) {
    // Logging must never take the plugin (or the host) down.
  }
}

}  // namespace

void write_host_error(char* error, size_t size, std::string_view text) noexcept {
  if (error == nullptr || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(error, text.data(), n);
  error[n] = '\0';
}

namespace {

// The log of the run in progress on this thread (NetworkRefusalScope), or null.
thread_local BackendRefusalLog* t_refusals = nullptr;

// sbx_host_v1::report_network_refusal (ABI 1.5): files the refusal under this thread's run.
void host_report_network_refusal(void* /*ctx*/, const char* kind, const char* address,
                                 size_t length) noexcept {
  try {
    if (kind == nullptr || (address == nullptr && length != 0)) return;
    const std::string_view kind_text(kind);
    // Only the kinds the report knows; anything else is a plugin's bug, logged, never shown.
    if (kind_text != "unix" && kind_text != "ip") {
      spdlog::warn("a backend reported a network refusal of unknown kind '{}'", kind_text);
      return;
    }
    const std::string text = address == nullptr ? std::string() : std::string(address, length);
    if (t_refusals == nullptr) {
      spdlog::debug("network refusal outside a run: {} {}", kind_text, text);
      return;
    }
    ++t_refusals->total;
    if (t_refusals->entries.size() < BackendRefusalLog::kMaxEntries)
      t_refusals->entries.push_back(BackendRefusal{std::string(kind_text), text});
  } catch (...) {
    // Out of memory: the refusal is lost from the report, never the host.
  }
}

// The scope of the run in progress on this thread (RunStartedScope), or null.
thread_local RunStartedScope* t_started = nullptr;

// sbx_host_v1::run_started (ABI 1.6).
void host_run_started(void* /*ctx*/) noexcept { notify_run_started(); }

}  // namespace

void fill_portable_host_entries(sbx_host_v1& host) {
  host.struct_size = sizeof(sbx_host_v1);
  host.abi_major = SBX_ABI_MAJOR;
  host.abi_minor = SBX_ABI_MINOR;
  host.host_version = SBX_VERSION_STRING;
  host.ctx = nullptr;
  host.log = &host_log;
  host.report_network_refusal = &host_report_network_refusal;
  host.run_started = &host_run_started;
}

}  // namespace sbx::plugins

namespace sbx {

NetworkRefusalScope::NetworkRefusalScope(BackendRefusalLog& log)
    : previous_(plugins::t_refusals) {
  plugins::t_refusals = &log;
}

NetworkRefusalScope::~NetworkRefusalScope() { plugins::t_refusals = previous_; }

RunStartedScope::RunStartedScope(std::function<void()> on_started)
    : on_started_(std::move(on_started)), previous_(plugins::t_started) {
  plugins::t_started = this;
}

RunStartedScope::~RunStartedScope() { plugins::t_started = previous_; }

void notify_run_started() noexcept {
  RunStartedScope* scope = plugins::t_started;
  if (scope == nullptr || !scope->on_started_) return;
  // Once: a backend that says it twice (or core's spawner inside a backend's exec) starts
  // nothing a second time.
  std::function<void()> on_started = std::move(scope->on_started_);
  scope->on_started_ = nullptr;
  try {
    on_started();
  } catch (...) {
    // The work it would have started is done after the run instead.
  }
}

const char* sbx_version() { return SBX_VERSION_STRING; }

}  // namespace sbx
