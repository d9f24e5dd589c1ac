// Windows command lines and text: how an argv becomes the single string CreateProcessW takes,
// and the UTF-8 <-> UTF-16 conversion every Win32 call needs. Pure and portable, so the exact
// bytes are unit-tested on any host.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::windows {

// Quotes one argument after argv[0] so that CommandLineToArgvW (and the Microsoft C runtime)
// give it back byte for byte: returned unchanged unless it is empty or holds a space, tab,
// newline, vertical tab or double quote; otherwise wrapped in quotes, with every run of
// backslashes before a quote (including the closing one) doubled and each quote escaped.
std::string quote_argument(std::string_view argument);

// Quotes argv[0]. CommandLineToArgvW reads the program name without any escape processing (it
// ends at the next quote, or at the first space or tab when unquoted), so a name containing a
// double quote cannot be represented at all: that is an Error, as are NUL and an empty name.
Result<std::string> quote_program(std::string_view program);

// The full command line: quote_program(argv[0]) followed by each quoted argument, separated by
// single spaces. Errors: empty argv, a NUL byte or invalid UTF-8 in any element (each names
// the element), or a result longer than CreateProcessW accepts (32767 UTF-16 units with NUL).
Result<std::string> build_command_line(const std::vector<std::string>& argv);

// Strict UTF-8 to UTF-16 (rejects overlongs, surrogates, and code points above U+10FFFF).
Result<std::u16string> utf8_to_utf16(std::string_view text);

// UTF-16 to UTF-8; unpaired surrogates are an Error.
Result<std::string> utf16_to_utf8(std::u16string_view text);

// A printable, single-line rendering for notes: control characters become \xNN.
std::string printable(std::string_view text);

// The largest command line CreateProcessW accepts, in UTF-16 units, excluding the NUL.
inline constexpr std::size_t kMaxCommandLineUnits = 32766;

}  // namespace sbx::windows
