// policy_to_json: the full form, keys in a fixed order, pretty-printed so that `sbx policy show`
// output is readable and diffs stay small.
#include <boost/json.hpp>
#include <string>

#include "policy_internal.hpp"
#include "sbx/core/policy.hpp"

namespace sbx {
namespace {

namespace json = boost::json;

json::array string_array(const std::vector<std::string>& items) {
  json::array out;
  for (const std::string& item : items) out.emplace_back(item);
  return out;
}

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

bool is_scalar(const json::value& value) { return !value.is_object() && !value.is_array(); }

// Objects and arrays made only of scalars that fit on one line are written inline.
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

void write_pretty(const json::value& value, std::size_t indent, std::string& out) {
  if (fits_inline(value)) {
    write_inline(value, out);
    return;
  }
  std::string pad(indent + 2, ' ');
  bool object = value.is_object();
  out += object ? "{\n" : "[\n";
  bool first = true;
  auto item = [&](const json::value& child) { write_pretty(child, indent + 2, out); };
  if (object) {
    for (const auto& member : value.get_object()) {
      out += (first ? "" : ",\n") + pad + json::serialize(json::string(member.key())) + ": ";
      item(member.value());
      first = false;
    }
  } else {
    for (const json::value& child : value.get_array()) {
      out += (first ? "" : ",\n") + pad;
      item(child);
      first = false;
    }
  }
  out += "\n" + std::string(indent, ' ') + (object ? "}" : "]");
}

}  // namespace

std::string policy_to_json(const Policy& policy) {
  json::object root;
  root["version"] = policy.version;
  root["filesystem"] = filesystem_json(policy.filesystem);
  root["network"] = network_json(policy.network);
  root["limits"] = policy_internal::limits_json(policy.limits);
  root["environment"] = policy_internal::environment_json(policy.environment);
  std::string out;
  write_pretty(root, 0, out);
  out += "\n";
  return out;
}

}  // namespace sbx
