// Proxy settings from the command's environment, for the proxy-only network mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::seatbelt {

// The variables read, each in upper and lower case.
inline constexpr std::string_view kProxyVariables[] = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"};

struct ProxyEnv {
  bool configured = false;           // at least one proxy variable is set and non-empty
  std::vector<std::uint16_t> ports;  // loopback proxy ports, sorted, unique
  std::vector<std::string> ignored;  // one line per value that gave no usable port, and why
};

// Parses "[scheme://][user[:pass]@]host[:port][/...]". Returns the port if the host is a
// loopback name or address (localhost, 127.0.0.0/8, ::1); without an explicit port the scheme
// decides (https 443, socks* 1080, otherwise 80). Returns nullopt for anything else.
std::optional<std::uint16_t> loopback_proxy_port(std::string_view url, std::string* why = nullptr);

// Reads every variable of kProxyVariables (both cases) from KEY=VALUE entries.
ProxyEnv parse_proxy_env(const std::vector<std::string>& env);

}  // namespace sbx::seatbelt
