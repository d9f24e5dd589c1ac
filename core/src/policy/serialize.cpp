// policy_to_json: the full form, keys in a fixed order, in the short-inline layout of
// report/json_render.hpp so that `sbx policy show` output is readable and diffs stay small.
#include <boost/json.hpp>
#include <string>
#include <utility>

#include "policy/internal.hpp"
#include "report/json_render.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

namespace json = boost::json;
using report::string_array;

json::object filesystem_json(const FilesystemSpec& fs) {
  json::object out;
  out["kind"] = to_string(fs.kind);
  json::array entries;
  for (const PolicyEntry& entry : fs.entries) {
    json::object item;
    if (!entry.glob.empty()) {
      item["glob"] = entry.glob;
    } else {
      item["path"] = entry.path;
    }
    item["access"] = to_string(entry.access);
    entries.emplace_back(std::move(item));
  }
  out["entries"] = std::move(entries);
  out["protected_names"] = string_array(fs.protected_names);
  return out;
}

json::object network_json(const NetworkPolicy& network) {
  json::object out;
  out["mode"] = to_string(network.mode);
  json::array ports;
  for (std::uint16_t port : network.proxy_ports) ports.emplace_back(port);
  out["proxy_ports"] = std::move(ports);
  out["allowed_domains"] = string_array(network.allowed_domains);
  out["denied_domains"] = string_array(network.denied_domains);
  out["unix_sockets"] = string_array(network.unix_sockets);
  out["allow_local_binding"] = network.allow_local_binding;
  return out;
}

}  // namespace

json::object policy::policy_json(const Policy& policy) {
  json::object root;
  root["version"] = policy.version;
  root["filesystem"] = filesystem_json(policy.filesystem);
  root["network"] = network_json(policy.network);
  root["limits"] = policy::limits_json(policy.limits);
  root["environment"] = policy::environment_json(policy.environment);
  return root;
}

std::string policy_to_json(const Policy& policy) {
  // The one JSON writer (report/json_render.hpp): paths are arbitrary bytes, and a serialized
  // policy is read by people and models like every report, so it gets the same UTF-8 repair and
  // escaping of invisible and bidi characters.
  return report::render_json_short_inline(policy::policy_json(policy)) + "\n";
}

}  // namespace sbx
