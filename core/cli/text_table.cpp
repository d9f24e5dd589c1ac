// See text_table.hpp.
#include "text_table.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace sbx::cli {
namespace {

// Display width in code points (UTF-8 continuation bytes take no column), good enough for the
// markers and names used here.
std::size_t display_width(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned>(byte));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out;
}

std::string shorten(const std::string& text, std::size_t width) {
  if (display_width(text) <= width || width < 4) return text;
  std::string out;
  std::size_t points = 0;
  for (char c : text) {
    const bool starts_code_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_code_point && ++points > width - 3) break;
    out += c;
  }
  return out + "...";
}

std::string render_table(const std::vector<std::vector<std::string>>& rows,
                         const std::string& indent) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], display_width(printable(row[i])));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string cell = printable(row[i]);
      line += cell;
      if (i + 1 < row.size()) line.append(widths[i] - display_width(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

}  // namespace sbx::cli
