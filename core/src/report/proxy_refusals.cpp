// The proxy's refusals for the `exec --json` report and for people (see refusals_to_json and
// describe_omitted in proxy.hpp).
#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>

#include "report/json_render.hpp"
#include "report/objects.hpp"
#include "sbx/core/proxy.hpp"

namespace sbx::proxy {

std::string refusals_to_json(const std::vector<Refusal>& refusals) {
  return report::render_json(report::refusals_array(refusals), JsonStyle::kCompact);
}

std::optional<std::string> describe_omitted(const RefusalLog& log) {
  const std::uint64_t omitted = log.total - std::min<std::uint64_t>(log.total, log.entries.size());
  if (omitted == 0) return std::nullopt;
  std::string line =
      std::to_string(omitted) + " more refusal" + (omitted == 1 ? "" : "s") + " not listed:";
  const char* separator = " ";
  for (const HostCount& count : log.omitted_by_host) {
    line += separator + (count.host.empty() ? std::string("?") : count.host) + " " +
            std::to_string(count.count);
    separator = ", ";
  }
  if (log.omitted_other_hosts != 0) {
    line += std::string(log.omitted_by_host.empty() ? " " : " and ") +
            std::to_string(log.omitted_other_hosts) + " to other hosts";
  }
  return line;
}

}  // namespace sbx::proxy
