// The proxy's refusals in the `exec --json` report (see refusals_to_json in proxy.hpp).
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "json_render.hpp"
#include "sbx/core/proxy.hpp"

namespace sbx::proxy {

std::string refusals_to_json(const std::vector<Refusal>& refusals) {
  boost::json::array out;
  for (const Refusal& refusal : refusals) {
    boost::json::object item;
    // The host came from the sandboxed command; render_json makes every string valid UTF-8 and
    // escapes what could break a line.
    item["host"] =
        refusal.host.empty() ? boost::json::value(nullptr) : boost::json::value(refusal.host);
    item["port"] = refusal.port;
    item["protocol"] = refusal.protocol;
    item["rule"] = refusal.rule;
    out.push_back(std::move(item));
  }
  return detail::render_json(std::move(out), JsonStyle::kCompact);
}

}  // namespace sbx::proxy
