// JSON text for a backend's PlanDetail::report_json() (types.hpp): the few literals a plan's
// detail is written with, so every backend escapes strings the same way. Header-only and outside
// the ABI, like unique_fd.hpp; plugins need no JSON library for it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sbx::plan_json {

// A JSON string literal: quotes, backslashes and control characters escaped (RFC 8259, 7).
// Other bytes pass through as they are: core repairs invalid UTF-8 when it embeds the detail.
inline std::string string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::string strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i != 0 ? "," : "") + string(items[i]);
  return out + "]";
}

inline std::string boolean(bool value) { return value ? "true" : "false"; }

}  // namespace sbx::plan_json
