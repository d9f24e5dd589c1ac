#include "sbx/windows/command_line.hpp"

#include <cstdint>
#include <string>

namespace sbx::windows {
namespace {

// Decodes one UTF-8 sequence at text[i]; returns the code point and advances i, or returns
// -1 for anything that is not the shortest encoding of a scalar value.
std::int32_t decode_utf8(std::string_view text, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
  const std::uint8_t lead = byte(i);
  std::size_t length = 0;
  std::uint32_t cp = 0;
  std::uint32_t min = 0;
  if (lead < 0x80) {
    ++i;
    return lead;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1Fu, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0Fu, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07u, min = 0x10000;
  } else {
    return -1;
  }
  if (i + length > text.size()) return -1;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  // Overlongs would let two byte strings mean one name; surrogates have no UTF-16 form.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  i += length;
  return static_cast<std::int32_t>(cp);
}

Status check_element(std::string_view text, std::size_t index) {
  if (text.find('\0') != std::string_view::npos)
    return Error{"argv[" + std::to_string(index) +
                 "] contains a NUL byte, which Windows "
                 "command lines cannot carry"};
  if (!utf8_to_utf16(text).ok())
    return Error{"argv[" + std::to_string(index) +
                 "] is not valid UTF-8: Windows needs "
                 "every argument as Unicode text"};
  return {};
}

}  // namespace

std::string quote_argument(std::string_view argument) {
  if (!argument.empty() && argument.find_first_of(" \t\n\v\"") == std::string_view::npos)
    return std::string(argument);
  std::string out = "\"";
  std::size_t backslashes = 0;
  for (char c : argument) {
    if (c == '\\') {
      ++backslashes;  // meaning decided by what follows
      continue;
    }
    if (c == '"') {
      // 2n+1 backslashes before a quote read back as n backslashes and a literal quote.
      out.append(2 * backslashes + 1, '\\');
    } else {
      // Backslashes not followed by a quote are literal.
      out.append(backslashes, '\\');
    }
    out += c;
    backslashes = 0;
  }
  // 2n backslashes before the closing quote read back as n backslashes.
  out.append(2 * backslashes, '\\');
  out += '"';
  return out;
}

Result<std::string> quote_program(std::string_view program) {
  if (program.empty()) return Error{"argv[0] is empty: name the program by its absolute path"};
  if (Status status = check_element(program, 0); !status.ok()) return status.failure();
  if (program.find('"') != std::string_view::npos)
    return Error{
        "argv[0] contains a double quote: Windows reads the program name without "
        "escapes, so it cannot be represented (Windows file names cannot contain '\"')"};
  // Quotes only when needed: unquoted, the name ends at the first space or tab.
  if (program.find_first_of(" \t") == std::string_view::npos) return std::string(program);
  return "\"" + std::string(program) + "\"";
}

Result<std::string> build_command_line(const std::vector<std::string>& argv) {
  if (argv.empty()) return Error{"argv is empty: there is no command to run"};
  Result<std::string> program = quote_program(argv[0]);
  if (!program.ok()) return program;
  std::string line = std::move(*program);
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (Status status = check_element(argv[i], i); !status.ok()) return status.failure();
    line += ' ';
    line += quote_argument(argv[i]);
  }
  Result<std::u16string> wide = utf8_to_utf16(line);
  if (!wide.ok()) return wide.failure();
  if (wide->size() > kMaxCommandLineUnits)
    return Error{"the command line is " + std::to_string(wide->size()) +
                 " UTF-16 units long; CreateProcessW accepts at most " +
                 std::to_string(kMaxCommandLineUnits) + ": pass long input through a file"};
  return line;
}

Result<std::u16string> utf8_to_utf16(std::string_view text) {
  std::u16string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    const std::int32_t cp = decode_utf8(text, i);
    if (cp < 0) return Error{"invalid UTF-8 at byte " + std::to_string(at)};
    const auto value = static_cast<std::uint32_t>(cp);
    if (value < 0x10000) {
      out += static_cast<char16_t>(value);
    } else {
      out += static_cast<char16_t>(0xD800 + ((value - 0x10000) >> 10));
      out += static_cast<char16_t>(0xDC00 + ((value - 0x10000) & 0x3FF));
    }
  }
  return out;
}

Result<std::string> utf16_to_utf8(std::u16string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::uint32_t cp = text[i];
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < text.size() && text[i + 1] >= 0xDC00 &&
        text[i + 1] <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<std::uint32_t>(text[i + 1]) - 0xDC00);
      ++i;
    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
      return Error{"unpaired UTF-16 surrogate at unit " + std::to_string(i)};
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace sbx::windows
