// Pure destination checks of the filtering proxy: domain patterns and special addresses.
#include <algorithm>
#include <array>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <cstdint>
#include <string>

#include "sbx/core/proxy.hpp"

namespace sbx::proxy {
namespace {

namespace ip = boost::asio::ip;

struct Pattern {
  std::string_view host;  // without "*." and ":PORT"
  bool wildcard = false;
  std::optional<std::uint16_t> port;
};

// Patterns come from validate_policy, but the proxy can also be given lists in code: a
// malformed port simply makes the pattern match nothing (fail closed).
std::optional<Pattern> parse_pattern(std::string_view text) {
  Pattern out;
  std::size_t colon = text.rfind(':');
  if (colon != std::string_view::npos) {
    std::string_view digits = text.substr(colon + 1);
    if (digits.empty() || digits.size() > 5) return std::nullopt;
    unsigned value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value == 0 || value > 65535) return std::nullopt;
    out.port = static_cast<std::uint16_t>(value);
    text = text.substr(0, colon);
  }
  if (text.substr(0, 2) == "*.") {
    out.wildcard = true;
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  out.host = text;
  return out;
}

// `*.example.com` matches a.example.com and a.b.example.com but not example.com: a wildcard
// says "below this name", and allowing the apex too must be said explicitly.
bool host_matches(const Pattern& pattern, std::string_view host) {
  std::string normalized = normalize_host(pattern.host);
  if (!pattern.wildcard) return host == normalized;
  // An IP literal is not a name with subdomains: "*.0.0.1" must not match 127.0.0.1.
  boost::system::error_code ec;
  (void)ip::make_address(std::string(host), ec);
  if (!ec) return false;
  if (host.size() <= normalized.size() + 1) return false;
  std::string_view tail = host.substr(host.size() - normalized.size());
  return tail == normalized && host[host.size() - normalized.size() - 1] == '.';
}

// The first pattern that matches, but an exact one (host and port, no wildcard) if any matches:
// only an exact entry may open a private address, and list order must not hide it.
std::optional<Pattern> best_match(std::string_view host, std::uint16_t port,
                                  const std::vector<std::string>& patterns, std::string& matched) {
  std::optional<Pattern> best;
  for (const std::string& text : patterns) {
    std::optional<Pattern> pattern = parse_pattern(text);
    if (!pattern || !host_matches(*pattern, host)) continue;
    if (pattern->port && *pattern->port != port) continue;
    bool exact = !pattern->wildcard && pattern->port.has_value();
    if (!best || exact) {
      best = pattern;
      matched = text;
    }
    if (exact) break;
  }
  return best;
}

bool in_v4(std::uint32_t addr, std::uint32_t net, int prefix) {
  std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
  return (addr & mask) == (net & mask);
}

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

std::optional<std::string> v4_reason(std::uint32_t a) {
  // The metadata endpoint is named separately so that a refusal says why it matters.
  if (a == v4(169, 254, 169, 254)) return "cloud metadata";
  struct Net {
    std::uint32_t net;
    int prefix;
    const char* why;
  };
  static constexpr Net kNets[] = {
      {v4(0, 0, 0, 0), 8, "unspecified"},      {v4(127, 0, 0, 0), 8, "loopback"},
      {v4(10, 0, 0, 0), 8, "private"},         {v4(172, 16, 0, 0), 12, "private"},
      {v4(192, 168, 0, 0), 16, "private"},     {v4(100, 64, 0, 0), 10, "CGNAT"},
      {v4(169, 254, 0, 0), 16, "link-local"},  {v4(192, 0, 0, 0), 24, "IETF protocol"},
      {v4(198, 18, 0, 0), 15, "benchmarking"}, {v4(224, 0, 0, 0), 4, "multicast"},
      {v4(240, 0, 0, 0), 4, "reserved"},
  };
  for (const Net& n : kNets) {
    if (in_v4(a, n.net, n.prefix)) return std::string(n.why);
  }
  return std::nullopt;
}

std::optional<std::string> v6_reason(const ip::address_v6& a) {
  const ip::address_v6::bytes_type b = a.to_bytes();
  // IPv4 carried inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d) reaches the IPv4
  // host, so it is judged as that address.
  static constexpr std::array<unsigned char, 12> kNat64 = {0, 0x64, 0xff, 0x9b};
  if (a.is_v4_mapped() || std::equal(kNat64.begin(), kNat64.end(), b.begin())) {
    std::uint32_t v = v4(b[12], b[13], b[14], b[15]);
    return v4_reason(v);
  }
  if (a.is_unspecified()) return "unspecified";
  if (a.is_loopback()) return "loopback";
  if (b[0] == 0xfd && b[1] == 0x00 && b[2] == 0x0e && b[3] == 0xc2) return "cloud metadata";
  if ((b[0] & 0xfe) == 0xfc) return "private";  // ULA fc00::/7
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "site-local";
  if (b[0] == 0xff) return "multicast";
  // ::/96 (IPv4-compatible, deprecated) would be routed oddly; refuse it as reserved.
  if (std::all_of(b.begin(), b.begin() + 12, [](unsigned char c) { return c == 0; }))
    return "reserved";
  return std::nullopt;
}

}  // namespace

std::string normalize_host(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::string out(host);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return out;
}

RuleMatch match_destination(std::string_view host, std::uint16_t port,
                            const std::vector<std::string>& allowed,
                            const std::vector<std::string>& denied) {
  const std::string name = normalize_host(host);
  RuleMatch out;
  std::string matched;
  // Deny first: a deny entry must win over any allow entry, however specific.
  if (best_match(name, port, denied, matched)) {
    out.rule = "denied_domains: " + matched;
    return out;
  }
  std::optional<Pattern> pattern = best_match(name, port, allowed, matched);
  if (!pattern) {
    out.rule = "not in allowed_domains";
    return out;
  }
  out.allowed = true;
  out.exact = !pattern->wildcard && pattern->port.has_value();
  out.rule = "allowed_domains: " + matched;
  return out;
}

Result<std::optional<std::string>> special_address_reason(std::string_view address) {
  boost::system::error_code ec;
  ip::address parsed = ip::make_address(std::string(address), ec);
  if (ec) return Error{"\"" + std::string(address) + "\" is not an IP address"};
  if (parsed.is_v4()) return v4_reason(parsed.to_v4().to_uint());
  return v6_reason(parsed.to_v6());
}

}  // namespace sbx::proxy
