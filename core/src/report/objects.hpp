// Internal: the JSON objects that several reports share, before rendering, so that a report made
// of parts (the exec report: the run, its denial assessment, the proxy's refusals) is built as
// one document and rendered once by the one JSON writer (json_render.hpp), never spliced or
// re-parsed as text.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <vector>

#include "sbx/core/denial.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/report_json.hpp"

namespace sbx::report {

// run_to_json's object.
boost::json::object run_object(const RunReport& report);

// denial_to_json's object.
boost::json::object denial_object(const DenialAssessment& assessment);

// refusals_to_json's array: [{"kind":"proxy","host","port","protocol","rule"}].
boost::json::array refusals_array(const std::vector<proxy::Refusal>& refusals);

}  // namespace sbx::report
