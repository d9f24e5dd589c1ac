// The host-services table's portable entries (host_table.hpp): logging through spdlog; and the
// per-run table (RunServices, runtime.hpp): limits, network refusals, the run's start.
#include "plugins/host_table.hpp"

#include <spdlog/spdlog.h>
#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#endif
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "run/standard_fds.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/run_limits.hpp"
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

thread_local PluginErrorCapture* t_capture = nullptr;

// sbx_host_v2::log. Plugin text is passed as an argument, never as a format string.
void host_log(void* /*ctx*/, int level, const char* message, size_t length) noexcept {
  try {
    const std::string_view text =
        message == nullptr ? std::string_view() : std::string_view(message, length);
    if (t_capture != nullptr && level >= SBX_LOG_ERROR) t_capture->add(text);
    spdlog::default_logger_raw()->log(to_spdlog(level), "{}", text);
  } catch (...) {
    // Logging must never take the plugin (or the host) down.
  }
}

}  // namespace

PluginErrorCapture::PluginErrorCapture() { t_capture = this; }

PluginErrorCapture::~PluginErrorCapture() { t_capture = nullptr; }

void PluginErrorCapture::add(std::string_view line) {
  // A bounded copy: a plugin that logs in a loop must not grow the loader's memory.
  constexpr std::size_t kMaxText = 2048;
  if (text_.size() >= kMaxText) return;
  if (!text_.empty()) text_ += "; ";
  text_.append(line.substr(0, kMaxText - text_.size()));
}

void write_host_error(char* error, size_t size, std::string_view text) noexcept {
  if (error == nullptr || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(error, text.data(), n);
  error[n] = '\0';
}

void fill_portable_host_entries(sbx_host_v2& host) {
  host.struct_size = sizeof(sbx_host_v2);
  host.abi_major = SBX_ABI_MAJOR;
  host.abi_minor = SBX_ABI_MINOR;
  host.host_version = SBX_VERSION_STRING;
  host.ctx = nullptr;
  host.log = &host_log;
}

namespace {

RunServices& run_of(void* ctx) { return *static_cast<RunServices*>(ctx); }

int run_prepare_child(void* ctx) noexcept { return run_of(ctx).prepare_child(); }

void run_report_network_refusal(void* ctx, const char* kind, const char* address,
                                size_t length) noexcept {
  if (kind == nullptr || (address == nullptr && length != 0)) return;
  run_of(ctx).refused(kind,
                      address == nullptr ? std::string_view() : std::string_view(address, length));
}

void run_run_started(void* ctx) noexcept { run_of(ctx).started(); }

int run_stdio_fd(void* ctx, int which) noexcept { return run_of(ctx).stdio_fd(which); }

int run_cancel_fd(void* ctx) noexcept { return run_of(ctx).cancel_fd(); }

int run_forward_signals(void* ctx) noexcept { return run_of(ctx).forward_signals() ? 1 : 0; }

// This process's own 0, 1 and 2, each that is open (-1 for a closed one: the command then has
// none there either, as when it inherited them).
std::array<int, 3> own_standard_fds() noexcept {
  std::array<int, 3> fds{};
  for (int i = 0; i < 3; ++i) fds[static_cast<std::size_t>(i)] = standard_fd_is_callers(i) ? i : -1;
  return fds;
}

}  // namespace

}  // namespace sbx::plugins

namespace sbx {

RunServices::RunServices(BackendRefusalLog* refusals, std::function<void()> on_started,
                         const LimitedRun* limits)
    : stdio_(plugins::own_standard_fds()),
      refusals_(refusals),
      on_started_(std::move(on_started)),
      limits_(limits) {
  table_.struct_size = sizeof(sbx_run_v2);
  table_.ctx = this;
  table_.prepare_child = &plugins::run_prepare_child;
  table_.report_network_refusal = &plugins::run_report_network_refusal;
  table_.run_started = &plugins::run_run_started;
  table_.stdio_fd = &plugins::run_stdio_fd;
  table_.cancel_fd = &plugins::run_cancel_fd;
  table_.forward_signals = &plugins::run_forward_signals;
}

int RunServices::stdio_fd(int which) const noexcept {
  return which >= 0 && which <= 2 ? stdio_[static_cast<std::size_t>(which)] : -1;
}

void RunServices::started() noexcept {
  if (!on_started_) return;
  // Once: a backend that says it twice (or core's spawner inside a backend's exec) starts
  // nothing a second time.
  std::function<void()> on_started = std::move(on_started_);
  on_started_ = nullptr;
  try {
    on_started();
  } catch (...) {
    // The work it would have started is done after the run instead.
  }
}

void RunServices::refused(std::string_view kind, std::string_view address) noexcept {
  try {
    // Only the kinds the report knows; anything else is a plugin's bug, logged, never shown.
    if (kind != "unix" && kind != "ip") {
      spdlog::warn("a backend reported a network refusal of unknown kind '{}'", kind);
      return;
    }
    if (refusal_sink_) {
      const std::lock_guard<std::mutex> lock(refusals_mutex_);
      refusal_sink_(kind, address);
      return;
    }
    if (refusals_ == nullptr) {
      spdlog::debug("network refusal outside a report: {} {}", kind, address);
      return;
    }
    // Backends may report from a thread of their own (a supervisor): one at a time.
    const std::lock_guard<std::mutex> lock(refusals_mutex_);
    ++refusals_->total;
    if (refusals_->entries.size() < BackendRefusalLog::kMaxEntries)
      refusals_->entries.push_back(BackendRefusal{std::string(kind), std::string(address)});
  } catch (...) {
    // Out of memory: the refusal is lost from the report, never the host.
  }
}

int RunServices::prepare_child() const noexcept {
  if (const int error = limits_ != nullptr ? limits_->prepare_child() : 0; error != 0) return error;
#ifdef __linux__
  if (tie_children_to_ > 0) {
    // prctl(2): the signal comes when the thread that created this child ends, whatever the
    // way (a crash included). Asked first, then checked: a parent gone before the prctl has
    // already handed the child to another process, and the child must not start the command.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
    if (::getppid() != tie_children_to_) return ESRCH;
  }
#endif
  return 0;
}

const char* sbx_version() { return SBX_VERSION_STRING; }

}  // namespace sbx
