// See json_render.hpp.
#include "json_render.hpp"

#include <boost/json.hpp>
#include <cstddef>
#include <string>
#include <string_view>

#include "text_escape.hpp"

namespace sbx::detail {
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

// Boost.JSON 1.81 has no pretty printer; scalars reuse its serializer so escaping stays exact.
void pretty_print(const json::value& value, int depth, std::string& out) {
  if (value.is_object()) {
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
      pretty_print(member.value(), depth + 1, out);
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
      pretty_print(array[i], depth + 1, out);
    }
    out += "\n";
    append_indent(out, depth);
    out += "]";
  } else {
    out += json::serialize(value);
  }
}

}  // namespace

std::string render_json(json::value value, JsonStyle style) {
  make_valid_utf8(value);
  if (style == JsonStyle::kCompact) return json::serialize(value);
  std::string out;
  pretty_print(value, 0, out);
  return out;
}

}  // namespace sbx::detail
