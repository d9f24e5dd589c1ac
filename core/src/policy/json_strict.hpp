// Strict JSON reading for sbx documents: RFC 6901 pointers for error messages, and a parser that
// rejects what Boost.JSON would silently accept (duplicate keys). Private to libsbx.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <string>
#include <string_view>

#include "sbx/sdk/result.hpp"

namespace sbx::policy::strict {

// Escapes one reference token (RFC 6901: '~' -> "~0", '/' -> "~1").
std::string escape_token(std::string_view token);

// Pointer to a member / element of the value at `pointer` ("" is the whole document).
std::string child(const std::string& pointer, std::string_view key);
std::string child(const std::string& pointer, std::size_t index);

// "<pointer>: <message>". The document itself (RFC 6901's empty pointer) is written "/" so that
// every message visibly starts with a pointer.
Error error_at(const std::string& pointer, std::string_view message);

// Parses `text` as one JSON value: standard JSON only (no comments, no trailing commas), valid
// UTF-8, nesting at most `max_depth`, and no object with the same key twice (Boost.JSON would
// keep the last one, so a reviewer and sbx could read different policies). Errors name the
// pointer of the duplicate key, or of the innermost container around a syntax error together
// with its line, column and byte offset.
Result<boost::json::value> parse_strict(std::string_view text, std::size_t max_depth);

// "string", "number", ... for "expected X, got Y" messages.
std::string_view kind_name(const boost::json::value& value);

}  // namespace sbx::policy::strict
