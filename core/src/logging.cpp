#include "sbx/core/logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace sbx {
namespace {

Result<spdlog::level::level_enum> parse_level(std::string_view text) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"off", spdlog::level::off},
  };
  for (const auto& [name, level] : kLevels) {
    if (name == text) return level;
  }
  return Error{"unknown log level '" + std::string(text) +
               "': use one of trace, debug, info, warn, error, off"};
}

}  // namespace

Status configure_logging(std::string_view level, LogFormat format) {
  Result<spdlog::level::level_enum> parsed = parse_level(level);
  if (!parsed) return Error{parsed.error()};
  // stderr only: stdout belongs to the command and to --json output.
  auto logger = std::make_shared<spdlog::logger>(
      "sbx", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::kJson) {
    // One JSON object per line; %v is escaped by the callers that log user data through
    // log_json_safe (messages are plain text produced by sbx).
    logger->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","message":"%v"})");
  } else {
    logger->set_pattern("sbx: %l: %v");
  }
  logger->set_level(*parsed);
  spdlog::set_default_logger(std::move(logger));
  return {};
}

}  // namespace sbx
