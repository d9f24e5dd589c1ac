// Internal: renders a Boost.JSON value in the styles of report_json.hpp, after making every
// string valid UTF-8. Shared by report_json.cpp and context.cpp.
#pragma once

#include <boost/json/value.hpp>
#include <string>

#include "sbx/core/report_json.hpp"

namespace sbx::detail {

std::string render_json(boost::json::value value, JsonStyle style);

}  // namespace sbx::detail
