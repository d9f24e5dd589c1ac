#include "sbx/seatbelt/proxy_env.hpp"

#include <algorithm>
#include <cctype>

namespace sbx::seatbelt {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// 127.0.0.0/8 in dotted-quad form only: other spellings (127.1, 0x7f...) are not accepted, so
// a host that only some resolvers treat as loopback never opens the network.
bool is_loopback_ipv4(std::string_view host) {
  int parts = 0;
  std::size_t i = 0;
  int first = -1;
  while (i <= host.size()) {
    const std::size_t dot = std::min(host.find('.', i), host.size());
    const std::string_view part = host.substr(i, dot - i);
    if (part.empty() || part.size() > 3) return false;
    int value = 0;
    for (char c : part) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    if (value > 255) return false;
    if (parts == 0) first = value;
    ++parts;
    i = dot + 1;
  }
  return parts == 4 && first == 127;
}

bool is_loopback_host(std::string_view host) {
  const std::string h = lower(host);
  return h == "localhost" || h == "::1" || h == "[::1]" || is_loopback_ipv4(h);
}

std::optional<std::uint16_t> parse_port(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return std::nullopt;
  unsigned value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

std::uint16_t default_port(std::string_view scheme) {
  if (scheme == "https") return 443;
  if (scheme.substr(0, 5) == "socks") return 1080;
  return 80;
}

std::optional<std::uint16_t> fail(std::string* why, std::string reason) {
  if (why != nullptr) *why = std::move(reason);
  return std::nullopt;
}

}  // namespace

std::optional<std::uint16_t> loopback_proxy_port(std::string_view url, std::string* why) {
  std::string scheme = "http";
  if (const std::size_t sep = url.find("://"); sep != std::string_view::npos) {
    scheme = lower(url.substr(0, sep));
    url.remove_prefix(sep + 3);
  }
  url = url.substr(0, url.find_first_of("/?#"));
  if (const std::size_t at = url.rfind('@'); at != std::string_view::npos)
    url.remove_prefix(at + 1);
  std::string_view host = url;
  std::string_view port_text;
  bool has_port = false;
  if (!url.empty() && url.front() == '[') {
    const std::size_t close = url.find(']');
    if (close == std::string_view::npos) return fail(why, "unterminated IPv6 address");
    host = url.substr(0, close + 1);
    if (close + 1 < url.size()) {
      if (url[close + 1] != ':') return fail(why, "unexpected text after the IPv6 address");
      port_text = url.substr(close + 2);
      has_port = true;
    }
  } else if (const std::size_t colon = url.rfind(':'); colon != std::string_view::npos) {
    host = url.substr(0, colon);
    port_text = url.substr(colon + 1);
    has_port = true;
  }
  if (host.empty()) return fail(why, "no host");
  if (!is_loopback_host(host)) return fail(why, "host '" + std::string(host) + "' is not loopback");
  if (!has_port) return default_port(scheme);
  const auto port = parse_port(port_text);
  if (!port) return fail(why, "port '" + std::string(port_text) + "' is not a number in 1-65535");
  return port;
}

ProxyEnv parse_proxy_env(const std::vector<std::string>& env) {
  ProxyEnv out;
  for (const std::string& entry : env) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string_view key = std::string_view(entry).substr(0, eq);
    const std::string_view value = std::string_view(entry).substr(eq + 1);
    std::string upper(key);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const bool known = std::find(std::begin(kProxyVariables), std::end(kProxyVariables), upper) !=
                       std::end(kProxyVariables);
    // Only the all-upper and all-lower spellings are conventional; Http_Proxy is not read.
    if (!known || (key != upper && key != lower(key)) || value.empty()) continue;
    out.configured = true;
    std::string why;
    if (const auto port = loopback_proxy_port(value, &why)) {
      out.ports.push_back(*port);
    } else {
      out.ignored.push_back(std::string(key) + ": " + why);
    }
  }
  std::sort(out.ports.begin(), out.ports.end());
  out.ports.erase(std::unique(out.ports.begin(), out.ports.end()), out.ports.end());
  return out;
}

}  // namespace sbx::seatbelt
