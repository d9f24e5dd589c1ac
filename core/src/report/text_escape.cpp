// See text_escape.hpp.
#include "report/text_escape.hpp"

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace sbx::report {
namespace {

struct CodePoint {
  char32_t value;
  std::size_t length;
};

unsigned char byte_at(std::string_view text, std::size_t pos) {
  return static_cast<unsigned char>(text[pos]);
}

// Decodes one well-formed UTF-8 sequence at `pos` (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF); nullopt for anything else.
std::optional<CodePoint> decode(std::string_view text, std::size_t pos) {
  const unsigned char lead = byte_at(text, pos);
  if (lead < 0x80) return CodePoint{lead, 1};
  // Lead byte: sequence length, payload bits, and the smallest value that length may encode.
  struct Form {
    unsigned char mask, tag, payload;
    std::size_t length;
    char32_t minimum;
  };
  static constexpr Form kForms[] = {
      {0xE0, 0xC0, 0x1F, 2, 0x80}, {0xF0, 0xE0, 0x0F, 3, 0x800}, {0xF8, 0xF0, 0x07, 4, 0x10000}};
  const Form* form = nullptr;
  for (const Form& candidate : kForms) {
    if ((lead & candidate.mask) == candidate.tag) form = &candidate;
  }
  if (form == nullptr) return std::nullopt;
  const std::size_t length = form->length;
  char32_t value = lead & form->payload;
  if (pos + length > text.size()) return std::nullopt;
  for (std::size_t i = 1; i < length; ++i) {
    const unsigned char next = byte_at(text, pos + i);
    if ((next & 0xC0) != 0x80) return std::nullopt;
    value = (value << 6) | (next & 0x3F);
  }
  if (value < form->minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
    return std::nullopt;
  return CodePoint{value, length};
}

// Characters that could make quoted text look like something else to a reader: line and
// paragraph separators and the bidirectional overrides/isolates ("Trojan Source").
bool is_layout_control(char32_t c) {
  return c == 0x2028 || c == 0x2029 || c == 0x200E || c == 0x200F || c == 0x061C ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

std::string hex_byte(unsigned char byte) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned>(byte));
  return buffer;
}

std::string hex_code_point(char32_t c) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\u{%04X}", static_cast<unsigned>(c));
  return buffer;
}

void append_ascii(char c, std::string& out) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  const auto byte = static_cast<unsigned char>(c);
  if (byte < 0x20 || byte == 0x7F) {
    out += hex_byte(byte);
  } else {
    out += c;
  }
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (std::optional<CodePoint> cp = decode(text, pos)) {
      out.append(text.substr(pos, cp->length));
      pos += cp->length;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++pos;
    }
  }
  return out;
}

std::string quote_for_text(std::string_view text) {
  std::string out = "\"";
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::optional<CodePoint> cp = decode(text, pos);
    if (!cp) {
      out += hex_byte(byte_at(text, pos));
      ++pos;
      continue;
    }
    if (cp->length == 1) {
      append_ascii(text[pos], out);
    } else if ((cp->value >= 0x80 && cp->value <= 0x9F) || is_layout_control(cp->value)) {
      out += hex_code_point(cp->value);
    } else {
      out.append(text.substr(pos, cp->length));
    }
    pos += cp->length;
  }
  out += '"';
  return out;
}

}  // namespace sbx::report
