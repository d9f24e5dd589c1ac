// Logging for core and CLI (spdlog): text or JSON lines on stderr; quiet (warn) by default.
#pragma once

#include <string_view>

#include "sbx/sdk/result.hpp"

namespace sbx {

enum class LogFormat { kText, kJson };

// level: trace|debug|info|warn|error|off. Error for anything else.
Status configure_logging(std::string_view level, LogFormat format);

// One debug line (`--log-level debug`) from a part of core that does not link spdlog itself.
void log_debug(std::string_view text);

}  // namespace sbx
