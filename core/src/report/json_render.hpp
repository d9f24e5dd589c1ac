// Internal: the one JSON writer of libsbx. Renders a Boost.JSON value in the styles of
// report_json.hpp (or the layout of policy_to_json), after making every string valid UTF-8 and
// writing invisible and bidi characters as \uXXXX. Shared by report_json.cpp, context.cpp and
// policy/serialize.cpp, so every document sbx writes escapes the same way.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "sbx/core/report_json.hpp"

namespace sbx::report {

// A JSON array of the strings, in order (rendered, like every string, by render_json).
boost::json::array string_array(const std::vector<std::string>& items);

std::string render_json(boost::json::value value, JsonStyle style);

// The layout of policy_to_json: like JsonStyle::kPretty, except that an object or array made
// only of scalars whose compact form fits in 72 characters stays on one line
// ({"path": ":root", "access": "read"}), so that `sbx policy show` reads well and diffs stay
// small. Same UTF-8 repair and escaping as render_json.
std::string render_json_short_inline(boost::json::value value);

}  // namespace sbx::report
