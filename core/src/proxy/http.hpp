// Pure protocol pieces of the filtering proxy: the HTTP request head parser, authority parsing,
// the credential check and response text. No I/O, so they are easy to fuzz and table-test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::proxy::detail {

struct Destination {
  std::string host;  // lower-cased, no trailing dot, IPv6 without brackets
  std::uint16_t port = 0;
};

struct HttpRequest {
  std::string method;
  std::string version;                                       // "HTTP/1.0" or "HTTP/1.1"
  std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
  bool is_connect = false;
  Destination destination;
  std::string origin_target;  // plain HTTP: "/path?query" to send upstream
};

// Parses a request head: everything before the blank line, without the final "\r\n\r\n".
// Strict on purpose (CRLF only, no obs-fold, no control bytes, HTTP/1.0 or 1.1, CONNECT with
// host:port, otherwise an absolute http:// URI without userinfo): whatever the proxy does not
// understand exactly, it refuses. The error text becomes the 400 body.
Result<HttpRequest> parse_http_head(std::string_view head);

// "host:port", "[v6]:port", or "host" when default_port != 0.
Result<Destination> parse_authority(std::string_view authority, std::uint16_t default_port);

// The value of the first header called `name` (case-insensitive), if any.
std::optional<std::string_view> find_header(const HttpRequest& request, std::string_view name);

// user and password from a "Basic <base64(user:password)>" header value.
std::optional<std::pair<std::string, std::string>> basic_credentials(std::string_view value);

// Compares in time independent of where the strings differ, so a local process cannot learn the
// token byte by byte from response timing.
bool constant_time_equal(std::string_view a, std::string_view b);

// The head sent to the destination for plain HTTP: origin-form target, Host set to the
// destination, the proxy's own headers removed and "Connection: close" (one request per
// upstream connection, so a keep-alive client cannot reuse it for another host).
std::string upstream_head(const HttpRequest& request);

// A complete "Connection: close" response with a text/plain body.
std::string http_response(int code, std::string_view reason, std::string_view body,
                          std::string_view extra_headers = {});

// "host:port" with brackets around an IPv6 host.
std::string host_port(const Destination& destination);

}  // namespace sbx::proxy::detail
