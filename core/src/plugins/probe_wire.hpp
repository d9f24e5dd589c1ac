// A ProbeReport as bytes and back, exactly: every byte of every string (text that is not valid
// UTF-8 included) and every capability bit (unknown ones included). Private to core: the
// answer of a probe run in a child (probe_isolation.cpp) and a kept answer (probe_store.cpp).
#pragma once

#include <string>
#include <string_view>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

std::string probe_to_wire(const ProbeReport& report);
// Error when `text` is not a report in this format.
Result<ProbeReport> probe_from_wire(std::string_view text);

}  // namespace sbx
