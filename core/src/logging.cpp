#include "sbx/core/logging.hpp"

#include <spdlog/pattern_formatter.h>
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

// "%*" in a pattern: the message as the contents of a JSON string. Messages carry paths and
// plugin text, so quotes, backslashes and control bytes must not break the JSON line.
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    for (const char c : msg.payload) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        dest.push_back('\\');
        dest.push_back(c);
      } else if (byte < 0x20 || byte == 0x7f) {
        const char escaped[] = {'\\', 'u', '0', '0', kHex[byte >> 4], kHex[byte & 0xf]};
        dest.append(escaped, escaped + sizeof escaped);
      } else {
        dest.push_back(c);
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

}  // namespace

Status configure_logging(std::string_view level, LogFormat format) {
  Result<spdlog::level::level_enum> parsed = parse_level(level);
  if (!parsed) return parsed.failure();
  // stderr only: stdout belongs to the command and to --json output.
  auto logger =
      std::make_shared<spdlog::logger>("sbx", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::kJson) {
    // One JSON object per line.
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","message":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("sbx: %l: %v");
  }
  logger->set_level(*parsed);
  spdlog::set_default_logger(std::move(logger));
  return {};
}

void log_debug(std::string_view text) { spdlog::debug("{}", text); }

}  // namespace sbx
