// See json_render.hpp.
#include "report/json_render.hpp"

#include <boost/json.hpp>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/text_escape.hpp"

namespace sbx::report {
namespace {

namespace json = boost::json;

void append_indent(std::string& out, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
}

// Paths and environment values are arbitrary bytes; Boost.JSON would copy invalid UTF-8
// through and produce a document no strict parser accepts. Keys are ours and always ASCII.
void make_valid_utf8(json::value& value) {
  if (value.is_string()) {
    json::string& text = value.get_string();
    std::string fixed = valid_utf8(text);
    if (fixed != std::string_view(text)) text = fixed;
  } else if (value.is_array()) {
    for (json::value& item : value.get_array()) make_valid_utf8(item);
  } else if (value.is_object()) {
    for (auto& member : value.get_object()) make_valid_utf8(member.value());
  }
}

bool is_scalar(const json::value& value) { return !value.is_object() && !value.is_array(); }

// render_json_short_inline: objects and arrays made only of scalars that fit on one line.
bool fits_inline(const json::value& value) {
  if (is_scalar(value)) return true;
  if (value.is_object()) {
    for (const auto& member : value.get_object()) {
      if (!is_scalar(member.value())) return false;
    }
  } else {
    for (const json::value& item : value.get_array()) {
      if (!is_scalar(item)) return false;
    }
  }
  return json::serialize(value).size() <= 72;
}

// One line with a space after each ',' and ':' ({"a": 1, "b": [2, 3]}).
void write_inline(const json::value& value, std::string& out) {
  if (value.is_object()) {
    out += "{";
    bool first = true;
    for (const auto& member : value.get_object()) {
      out += first ? "" : ", ";
      out += json::serialize(json::string(member.key())) + ": " + json::serialize(member.value());
      first = false;
    }
    out += "}";
  } else if (value.is_array()) {
    out += "[";
    bool first = true;
    for (const json::value& item : value.get_array()) {
      out += (first ? "" : ", ") + json::serialize(item);
      first = false;
    }
    out += "]";
  } else {
    out += json::serialize(value);
  }
}

enum class Layout {
  kOneValuePerLine,  // JsonStyle::kPretty
  kShortInline,      // render_json_short_inline
};

// Boost.JSON 1.81 has no pretty printer; scalars reuse its serializer so escaping stays exact.
void pretty_print(const json::value& value, int depth, std::string& out,
                  Layout layout = Layout::kOneValuePerLine) {
  if (layout == Layout::kShortInline && fits_inline(value)) {
    write_inline(value, out);
  } else if (value.is_object()) {
    const json::object& object = value.get_object();
    if (object.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    bool first = true;
    for (const auto& member : object) {
      if (!first) out += ",\n";
      first = false;
      append_indent(out, depth + 1);
      out += json::serialize(json::string(member.key()));
      out += ": ";
      pretty_print(member.value(), depth + 1, out, layout);
    }
    out += "\n";
    append_indent(out, depth);
    out += "}";
  } else if (value.is_array()) {
    const json::array& array = value.get_array();
    if (array.empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < array.size(); ++i) {
      if (i != 0) out += ",\n";
      append_indent(out, depth + 1);
      pretty_print(array[i], depth + 1, out, layout);
    }
    out += "\n";
    append_indent(out, depth);
    out += "]";
  } else {
    out += json::serialize(value);
  }
}

// Boost.JSON writes U+2028/U+2029 and the bidi controls raw. They are valid JSON, but a model or
// a person reading the document sees lines break or text reorder inside a value (a crafted
// path could disguise itself), and U+2028/9 end a line in JavaScript. Written as \uXXXX they
// parse to the same strings. Keys are ASCII, so these sequences only occur inside values.
std::string escape_invisible(std::string text) {
  struct Sequence {
    std::string_view utf8;
    std::string_view escaped;
  };
  static constexpr Sequence kSequences[] = {
      {"\xE2\x80\xA8", "\\u2028"}, {"\xE2\x80\xA9", "\\u2029"}, {"\xE2\x80\xAA", "\\u202a"},
      {"\xE2\x80\xAB", "\\u202b"}, {"\xE2\x80\xAC", "\\u202c"}, {"\xE2\x80\xAD", "\\u202d"},
      {"\xE2\x80\xAE", "\\u202e"}, {"\xE2\x81\xA6", "\\u2066"}, {"\xE2\x81\xA7", "\\u2067"},
      {"\xE2\x81\xA8", "\\u2068"}, {"\xE2\x81\xA9", "\\u2069"}, {"\xE2\x80\x8E", "\\u200e"},
      {"\xE2\x80\x8F", "\\u200f"}, {"\xD8\x9C", "\\u061c"}};
  for (const Sequence& sequence : kSequences) {
    for (std::size_t at = text.find(sequence.utf8); at != std::string::npos;
         at = text.find(sequence.utf8, at + sequence.escaped.size())) {
      text.replace(at, sequence.utf8.size(), sequence.escaped);
    }
  }
  return text;
}

}  // namespace

json::array string_array(const std::vector<std::string>& items) {
  json::array out;
  for (const std::string& item : items) out.emplace_back(item);
  return out;
}

std::string render_json(json::value value, JsonStyle style) {
  make_valid_utf8(value);
  if (style == JsonStyle::kCompact) return escape_invisible(json::serialize(value));
  std::string out;
  pretty_print(value, 0, out);
  return escape_invisible(std::move(out));
}

std::string render_json_short_inline(json::value value) {
  make_valid_utf8(value);
  std::string out;
  pretty_print(value, 0, out, Layout::kShortInline);
  return escape_invisible(std::move(out));
}

}  // namespace sbx::report
