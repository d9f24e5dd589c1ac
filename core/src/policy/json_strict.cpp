#include "policy/json_strict.hpp"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace sbx::policy::strict {

namespace json = boost::json;

std::string escape_token(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string child(const std::string& pointer, std::string_view key) {
  return pointer + "/" + escape_token(key);
}

std::string child(const std::string& pointer, std::size_t index) {
  return pointer + "/" + std::to_string(index);
}

Error error_at(const std::string& pointer, std::string_view message) {
  // Keys are attacker-chosen text: control bytes (terminal escape sequences) are shown as \xNN.
  std::string shown = pointer.empty() ? std::string("/") : std::string();
  for (char c : pointer) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      shown += "\\x";
      shown += kHex[byte >> 4];
      shown += kHex[byte & 0xf];
    } else {
      shown.push_back(c);
    }
  }
  // Every policy and settings parse and validation error is made here: the caller's input.
  return Error{shown + ": " + std::string(message), ErrorKind::invalid_input};
}

std::string_view kind_name(const json::value& value) {
  switch (value.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

namespace {

// basic_parser handler that only tracks where it is (for pointers) and which keys each open
// object already has. It builds no value; boost::json::parse does that once this pass is clean.
class DuplicateKeyHandler {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) { return open(false); }
  bool on_array_end(std::size_t, json::error_code&) { return close(); }
  bool on_object_begin(json::error_code&) { return open(true); }
  bool on_object_end(std::size_t, json::error_code&) { return close(); }
  // The parts arrive unescaped, so "\u0000" is a NUL byte here.
  bool on_string_part(json::string_view s, std::size_t, json::error_code& ec) {
    return no_nul(s, "a string", ec);
  }
  bool on_string(json::string_view s, std::size_t, json::error_code& ec) {
    return no_nul(s, "a string", ec) && scalar();
  }
  bool on_key_part(json::string_view s, std::size_t, json::error_code& ec) {
    key_.append(s.data(), s.size());
    return no_nul(s, "a key", ec);
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec);
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t, json::string_view, json::error_code&) { return scalar(); }
  bool on_uint64(std::uint64_t, json::string_view, json::error_code&) { return scalar(); }
  bool on_double(double, json::string_view, json::error_code&) { return scalar(); }
  bool on_bool(bool, json::error_code&) { return scalar(); }
  bool on_null(json::error_code&) { return scalar(); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

  // Pointer of the value being parsed now (the innermost open container's current slot).
  std::string pointer() const;
  const std::optional<std::string>& duplicate() const { return duplicate_; }
  // Pointer and message of a string or key holding a NUL character.
  const std::optional<std::pair<std::string, std::string>>& nul() const { return nul_; }

 private:
  struct Frame {
    bool is_object = false;
    std::size_t index = 0;  // arrays: the element being parsed
    std::string key;        // objects: the member being parsed
    bool has_key = false;
    std::set<std::string> keys;  // objects: keys seen so far
  };

  bool open(bool is_object) {
    frames_.push_back(Frame{is_object, 0, {}, false, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return scalar();  // a closed container is one finished value in its parent
  }
  // One value in the current container is complete: advance to the next slot.
  bool scalar() {
    if (frames_.empty()) return true;
    Frame& top = frames_.back();
    if (top.is_object) {
      top.has_key = false;
    } else {
      ++top.index;
    }
    return true;
  }

  // Every string the policy and settings hold becomes a path, a name or a pattern that reaches
  // the kernel or the command as a C string, which ends at the first NUL: "/tmp/safe\u0000/../etc"
  // would be checked as written and used as "/tmp/safe" (issue #32). Refused, never cut.
  bool no_nul(json::string_view s, const char* what, json::error_code& ec) {
    if (s.find('\0') == json::string_view::npos) return true;
    nul_.emplace(pointer(), std::string(what) +
                                " contains a NUL byte (\\u0000), which no path, name or "
                                "pattern may hold; remove it");
    ec = json::error::syntax;  // stops the parser; the message comes from nul_
    return false;
  }

  std::vector<Frame> frames_;
  std::string key_;
  std::optional<std::string> duplicate_;
  std::optional<std::pair<std::string, std::string>> nul_;
};

bool DuplicateKeyHandler::on_key(json::string_view s, std::size_t, json::error_code& ec) {
  if (!no_nul(s, "a key", ec)) return false;
  key_.append(s.data(), s.size());
  Frame& top = frames_.back();
  top.key = std::move(key_);
  top.has_key = true;
  key_.clear();
  if (!top.keys.insert(top.key).second) {
    duplicate_ = pointer();
    // Any error code stops the parser; the message comes from duplicate_.
    ec = json::error::syntax;
    return false;
  }
  return true;
}

std::string DuplicateKeyHandler::pointer() const {
  std::string out;
  for (const Frame& frame : frames_) {
    if (frame.is_object) {
      if (!frame.has_key) break;
      out = child(out, frame.key);
    } else {
      out = child(out, frame.index);
    }
  }
  return out;
}

// 1-based line and column of byte `offset` in `text`.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::string_view before = text.substr(0, offset);
  std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  std::size_t last_newline = before.rfind('\n');
  std::size_t column = last_newline == std::string_view::npos ? offset + 1 : offset - last_newline;
  return {line, column};
}

// Byte offset of the first invalid UTF-8 sequence (overlong forms, surrogates and code points
// above U+10FFFF included), or nullopt. Used only to explain a parser failure precisely.
std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    std::size_t length = byte < 0x80           ? 1
                         : (byte >> 5) == 0x6  ? 2
                         : (byte >> 4) == 0xe  ? 3
                         : (byte >> 3) == 0x1e ? 4
                                               : 0;
    if (length == 0 || i + length > text.size()) return i;
    std::uint32_t code = length == 1 ? byte : byte & (0x7fu >> length);
    for (std::size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return i;
      code = (code << 6) | (next & 0x3fu);
    }
    static constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return i;
    }
    i += length;
  }
  return std::nullopt;
}

json::parse_options strict_options(std::size_t max_depth) {
  json::parse_options options;
  options.max_depth = max_depth;
  options.allow_comments = false;
  options.allow_trailing_commas = false;
  options.allow_invalid_utf8 = false;
  return options;
}

}  // namespace

Result<json::value> parse_strict(std::string_view text, std::size_t max_depth) {
  json::basic_parser<DuplicateKeyHandler> parser(strict_options(max_depth));
  json::error_code ec;
  std::size_t consumed = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && consumed < text.size()) {
    // write_some stops after one complete value; anything left is a second document.
    auto [line, column] = line_column(text, consumed);
    return error_at("", "invalid JSON at line " + std::to_string(line) + ", column " +
                            std::to_string(column) + " (byte " + std::to_string(consumed) +
                            "): extra data after the document");
  }
  if (ec) {
    const DuplicateKeyHandler& handler = parser.handler();
    if (handler.nul()) return error_at(handler.nul()->first, handler.nul()->second);
    if (handler.duplicate()) {
      return error_at(*handler.duplicate(),
                      "duplicate key; each key may appear only once in an object");
    }
    std::optional<std::size_t> bad_utf8 = first_invalid_utf8(text);
    std::size_t offset = bad_utf8.value_or(consumed);
    auto [line, column] = line_column(text, offset);
    std::string where = " at line " + std::to_string(line) + ", column " + std::to_string(column) +
                        " (byte " + std::to_string(offset) + ")";
    if (bad_utf8) return error_at(handler.pointer(), "invalid UTF-8" + where);
    return error_at(handler.pointer(), "invalid JSON" + where + ": " + ec.message());
  }
  // The pre-pass accepted the text with the same options, so this parse cannot fail on syntax;
  // it can still fail on memory, which is reported rather than thrown.
  json::value value = json::parse(json::string_view(text.data(), text.size()), ec,
                                  json::storage_ptr(), strict_options(max_depth));
  if (ec) return error_at("", "cannot parse JSON: " + ec.message());
  return value;
}

}  // namespace sbx::policy::strict
