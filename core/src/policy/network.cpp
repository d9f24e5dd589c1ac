// Validation of the network part of a policy: proxy ports, domain patterns and unix sockets.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "policy/internal.hpp"
#include "policy/json_strict.hpp"
#include "policy/path_util.hpp"

namespace sbx::policy {
namespace {

using policy::strict::child;
using policy::strict::error_at;

constexpr std::string_view kDomainHint =
    "expected a host name such as example.com or *.example.com, optionally with :PORT";

// One DNS label: 1..63 of [a-z0-9-], not starting or ending with '-'.
bool valid_label(std::string_view label) {
  if (label.empty() || label.size() > 63) return false;
  if (label.front() == '-' || label.back() == '-') return false;
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

std::optional<std::string> host_error(std::string_view host) {
  if (host.empty()) return "the host name is empty";
  if (host.size() > 253) return "the host name is longer than 253 characters";
  std::size_t start = 0;
  while (start <= host.size()) {
    std::size_t end = host.find('.', start);
    if (end == std::string_view::npos) end = host.size();
    std::string_view label = host.substr(start, end - start);
    if (label.find('*') != std::string_view::npos) {
      return "'*' is allowed only as the whole first label (*.example.com)";
    }
    if (!valid_label(label)) {
      return "label " + policy::path::quote(label) +
             " must be 1-63 letters, digits or '-', not starting or ending with '-'";
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> port_error(std::string_view port) {
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "port " + policy::path::quote(port) + " is not a number from 1 to 65535";
  }
  int value = std::stoi(std::string(port));
  if (value < 1 || value > 65535) return "port " + std::string(port) + " is not from 1 to 65535";
  return std::nullopt;
}

// Domains compare case-insensitively, so they are stored lower-case (the round trip is stable
// and a duplicate in another case is caught).
Result<std::string> normalize_domain(std::string_view raw, const std::string& pointer) {
  std::string domain(raw);
  std::transform(domain.begin(), domain.end(), domain.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  auto fail = [&](const std::string& why) {
    return error_at(pointer, "domain " + policy::path::quote(raw) + ": " + why + "; " +
                                 std::string(kDomainHint));
  };
  std::size_t colon = domain.find(':');
  std::string_view host = std::string_view(domain).substr(0, colon);
  if (colon != std::string::npos) {
    std::string_view port = std::string_view(domain).substr(colon + 1);
    if (port.find(':') != std::string_view::npos) {
      return fail("IPv6 addresses and extra ':' are not supported");
    }
    if (auto bad = port_error(port)) return fail(*bad);
  }
  if (host.substr(0, 2) == "*.") host.remove_prefix(2);
  if (auto bad = host_error(host)) return fail(*bad);
  return domain;
}

// True for a loopback host: localhost, a name under .localhost (RFC 6761 6.3: both resolve to
// loopback) or an IPv4 address in 127.0.0.0/8 (the dotted form host_error accepts).
bool loopback_host(std::string_view host) {
  constexpr std::string_view kLocalhost = "localhost";
  if (host == kLocalhost) return true;
  if (host.size() > kLocalhost.size() &&
      host.substr(host.size() - kLocalhost.size() - 1) == ".localhost")
    return true;
  if (host.substr(0, 4) != "127.") return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

// Why: the proxy lets a loopback (or private) destination through only for an exact
// host:port entry of allowed_domains (core/src/proxy/session.cpp), so a loopback entry without
// a port, or behind a wildcard, is accepted by nothing at run time. Refused here, with the fix,
// rather than silently never matching.
std::optional<std::string> loopback_allow_error(const std::string& domain) {
  const std::size_t colon = domain.find(':');
  std::string_view host = std::string_view(domain).substr(0, colon);
  const bool wildcard = host.substr(0, 2) == "*.";
  if (wildcard) host.remove_prefix(2);
  if (!loopback_host(host) || (!wildcard && colon != std::string::npos)) return std::nullopt;
  const std::string exact = wildcard ? "NAME." + std::string(host) : std::string(host);
  return "domain " + policy::path::quote(domain) +
         ": a loopback destination is reached only through an exact host:port entry; write " +
         policy::path::quote(exact + ":PORT") + " (for example \"127.0.0.1:PORT\")";
}

// `allowed`: the entries of allowed_domains, which the loopback rule applies to (a deny entry
// without a port denies every port, as written).
Status check_domains(std::vector<std::string>& domains, const std::string& pointer, bool allowed) {
  for (std::size_t i = 0; i < domains.size(); ++i) {
    Result<std::string> domain = normalize_domain(domains[i], child(pointer, i));
    if (!domain) return domain.failure();
    if (allowed) {
      if (std::optional<std::string> why = loopback_allow_error(*domain))
        return error_at(child(pointer, i), *why);
    }
    domains[i] = std::move(*domain);
    auto first = std::find(domains.begin(), domains.end(), domains[i]);
    if (first != domains.begin() + static_cast<std::ptrdiff_t>(i)) {
      return error_at(child(pointer, i),
                      "duplicate domain " + policy::path::quote(domains[i]) + ", already at " +
                          child(pointer, static_cast<std::size_t>(first - domains.begin())));
    }
  }
  return {};
}

Status check_ports(const std::vector<std::uint16_t>& ports, const std::string& pointer) {
  for (std::size_t i = 0; i < ports.size(); ++i) {
    if (ports[i] == 0) return error_at(child(pointer, i), "port 0 is not from 1 to 65535");
    auto first = std::find(ports.begin(), ports.end(), ports[i]);
    if (first != ports.begin() + static_cast<std::ptrdiff_t>(i)) {
      return error_at(child(pointer, i),
                      "duplicate port " + std::to_string(ports[i]) + ", already at " +
                          child(pointer, static_cast<std::size_t>(first - ports.begin())));
    }
  }
  return {};
}

Status check_sockets(std::vector<std::string>& sockets, const std::string& pointer) {
  for (std::size_t i = 0; i < sockets.size(); ++i) {
    std::string item = child(pointer, i);
    if (sockets[i].empty()) return error_at(item, "empty socket path");
    if (sockets[i].front() != '/' && sockets[i].substr(0, 2) != "~/") {
      return error_at(item, "socket path " + policy::path::quote(sockets[i]) +
                                " must be absolute or start with \"~/\"");
    }
    if (auto bad = policy::path::check_components(sockets[i])) {
      return error_at(item, policy::path::quote(sockets[i]) + " " + *bad);
    }
    sockets[i] = policy::path::collapse_slashes(sockets[i]);
    if (sockets[i] == "/" || sockets[i] == "~") {
      return error_at(item, policy::path::quote(sockets[i]) + " is a directory, not a socket");
    }
    auto first = std::find(sockets.begin(), sockets.end(), sockets[i]);
    if (first != sockets.begin() + static_cast<std::ptrdiff_t>(i)) {
      return error_at(item, "duplicate socket path, already at " +
                                child(pointer, static_cast<std::size_t>(first - sockets.begin())));
    }
  }
  return {};
}

}  // namespace

Status check_network(NetworkPolicy& network) {
  const std::string pointer = "/network";
  bool proxy = network.mode == NetworkMode::kProxy;
  // Ports and domain lists only mean something to the proxy. Accepting them in another mode
  // would let a reader believe traffic is filtered when it is not.
  if (!proxy && !network.proxy_ports.empty()) {
    return error_at(child(pointer, "proxy_ports"), "proxy ports need \"mode\": \"proxy\"");
  }
  if (!proxy && !network.allowed_domains.empty()) {
    return error_at(child(pointer, "allowed_domains"),
                    "domain lists need \"mode\": \"proxy\" (the proxy enforces them)");
  }
  if (!proxy && !network.denied_domains.empty()) {
    return error_at(child(pointer, "denied_domains"),
                    "domain lists need \"mode\": \"proxy\" (the proxy enforces them)");
  }
  Status status = check_ports(network.proxy_ports, child(pointer, "proxy_ports"));
  if (status)
    status = check_domains(network.allowed_domains, child(pointer, "allowed_domains"), true);
  if (status)
    status = check_domains(network.denied_domains, child(pointer, "denied_domains"), false);
  if (status) status = check_sockets(network.unix_sockets, child(pointer, "unix_sockets"));
  return status;
}

}  // namespace sbx::policy
