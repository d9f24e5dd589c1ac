// Network part of the profile: none (the base `deny default` covers it), full (the internet,
// not the host's unix sockets), or proxy-only to loopback ports; plus the unix-socket
// allow-list, the only host unix sockets reachable in every mode.
#include <algorithm>
#include <string>

#include "profile_internal.hpp"
#include "sbx/seatbelt/proxy_env.hpp"
#include "sections.hpp"

namespace sbx::seatbelt::internal {
namespace {

std::string join_ports(const std::vector<std::uint16_t>& ports) {
  std::string out;
  for (std::uint16_t port : ports) out += (out.empty() ? "" : ", ") + std::to_string(port);
  return out;
}

// Policy ports plus loopback ports parsed from the environment, or an Error (fail closed).
Result<std::vector<std::uint16_t>> proxy_ports(Context& ctx, const std::vector<std::string>& env) {
  std::vector<std::uint16_t> ports;
  for (std::uint16_t port : ctx.policy.network.proxy_ports) {
    if (port == 0) return Error{"network.proxy_ports contains 0, which is not a port"};
    ports.push_back(port);
  }
  const ProxyEnv from_env = parse_proxy_env(env);
  ports.insert(ports.end(), from_env.ports.begin(), from_env.ports.end());
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  for (const std::string& why : from_env.ignored)
    ctx.notes.push_back("proxy variable ignored (" + why + ")");
  if (ports.empty()) {
    return Error{std::string("network mode is proxy but no loopback proxy port is known") +
                 (from_env.configured ? " (the proxy variables name no loopback host:port)" : "") +
                 ": set network.proxy_ports or HTTP_PROXY/HTTPS_PROXY/ALL_PROXY to "
                 "http://127.0.0.1:PORT (failing closed rather than opening the network)"};
  }
  ctx.notes.push_back("network: only to loopback proxy port(s) " + join_ports(ports));
  return ports;
}

std::string local_binding_rules() {
  return "(allow network-bind (local ip \"localhost:*\"))\n"
         "(allow network-inbound (local ip \"localhost:*\"))\n"
         "(allow network-outbound (remote ip \"localhost:*\"))\n";
}

// `domain_allowed`: an earlier rule already lets the command create AF_UNIX sockets.
std::string unix_socket_rules(Context& ctx, bool domain_allowed = false) {
  const auto& sockets = ctx.policy.network.unix_sockets;
  if (sockets.empty()) return "";
  std::string out = "; Unix sockets from network.unix_sockets only.\n";
  if (!domain_allowed) out += "(allow system-socket (socket-domain AF_UNIX))\n";
  for (std::size_t i = 0; i < sockets.size(); ++i) {
    const std::string ref = ctx.params.add("UNIX_SOCKET_" + std::to_string(i), sockets[i]);
    out += "(allow network-bind (local unix-socket (subpath " + ref + ")))\n";
    out += "(allow network-outbound (remote unix-socket (subpath " + ref + ")))\n";
  }
  return out;
}

}  // namespace

Result<std::string> network_section(Context& ctx, const std::vector<std::string>& env) {
  const NetworkPolicy& net = ctx.policy.network;
  if (net.mode != NetworkMode::kProxy &&
      (!net.allowed_domains.empty() || !net.denied_domains.empty()))
    return Error{
        "network.allowed_domains/denied_domains need network mode proxy (Seatbelt "
        "cannot filter by domain name; a local proxy must)"};
  std::string out = "; Network.\n";
  switch (net.mode) {
    case NetworkMode::kEnabled:
      ctx.notes.push_back("network: full (host unix sockets only from network.unix_sockets)");
      return out + "(allow network-outbound)\n(allow network-inbound)\n(allow network-bind)\n" +
             std::string(sections::kHostUnixSocketsClosed) + unix_socket_rules(ctx, true) +
             std::string(sections::kNetworkSupport);
    case NetworkMode::kProxy: {
      auto ports = proxy_ports(ctx, env);
      if (!ports) return ports.failure();
      if (net.allow_local_binding) out += local_binding_rules();
      for (std::uint16_t port : *ports)
        out += "(allow network-outbound (remote ip \"localhost:" + std::to_string(port) + "\"))\n";
      return out + unix_socket_rules(ctx) + std::string(sections::kNetworkSupport);
    }
    case NetworkMode::kRestricted:
      ctx.notes.push_back("network: none");
      if (!net.allow_local_binding && net.unix_sockets.empty())
        return std::string("; Network: none (deny default).\n");
      if (net.allow_local_binding) out += local_binding_rules();
      return out + unix_socket_rules(ctx);
  }
  return Error{"unknown network mode"};
}

}  // namespace sbx::seatbelt::internal
