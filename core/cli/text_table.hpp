// Aligned plain-text columns for the human-readable outputs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::cli {

// The text with control characters (C0, DEL) shown as \xNN, so a crafted file name or plugin
// string cannot move the cursor, recolour the terminal or forge output lines.
std::string printable(std::string_view text);

// At most `width` code points of `text`; a cut is marked with "...". For long observed values
// in tables (the JSON output keeps them whole).
std::string shorten(const std::string& text, std::size_t width);

// Renders rows with every column but the last padded to its widest cell, separated by two
// spaces, each row prefixed by `indent` and ended by a newline. Cells pass through printable().
std::string render_table(const std::vector<std::vector<std::string>>& rows,
                         const std::string& indent = "");

}  // namespace sbx::cli
