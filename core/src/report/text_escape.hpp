// Internal helpers for putting untrusted strings (paths, env values, glob patterns) into text
// and JSON that a person or a model reads. Paths on POSIX are arbitrary bytes; the outputs must
// stay valid UTF-8 and must not let a value forge lines or reorder text.
#pragma once

#include <string>
#include <string_view>

namespace sbx::report {

// The string with every invalid UTF-8 sequence replaced by U+FFFD, so JSON built from it is
// valid UTF-8 (Boost.JSON copies bytes through unchecked).
std::string valid_utf8(std::string_view text);

// The string in double quotes, with '"' and '\\' backslash-escaped, control characters
// (C0, DEL, C1) as \n, \t, \r or \xNN, invalid UTF-8 bytes as \xNN, and the Unicode
// characters that reorder or break lines (bidi controls, U+2028/U+2029) as \u{XXXX}.
// A value rendered this way cannot end its line or its quotes early.
std::string quote_for_text(std::string_view text);

}  // namespace sbx::report
