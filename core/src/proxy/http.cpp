// HTTP request-head parsing and response text for the filtering proxy (see http.hpp).
#include "proxy/http.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "sbx/core/proxy.hpp"

namespace sbx::proxy::detail {
namespace {

bool is_tchar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c)) != 0) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Field values may hold visible bytes, space, tab and obs-text; never CR, LF, NUL or other
// controls, which are how header injection and request smuggling start.
bool valid_value(std::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool valid_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

Result<std::uint16_t> parse_port(std::string_view digits) {
  if (digits.empty() || digits.size() > 5) return Error{"bad port"};
  unsigned value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return Error{"bad port"};
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > 65535) return Error{"port out of range"};
  return static_cast<std::uint16_t>(value);
}

Status parse_request_line(std::string_view line, HttpRequest& out, std::string_view& target) {
  std::size_t sp1 = line.find(' ');
  std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return Error{"malformed request line"};
  out.method = std::string(line.substr(0, sp1));
  target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  out.version = std::string(line.substr(sp2 + 1));
  if (!is_token(out.method)) return Error{"malformed method"};
  if (out.version != "HTTP/1.1" && out.version != "HTTP/1.0") return Error{"unsupported version"};
  if (target.empty() || !valid_value(target) || target.find_first_of(" \t") != target.npos)
    return Error{"malformed request target"};
  return {};
}

Status parse_header_line(std::string_view line, HttpRequest& out) {
  std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return Error{"header without ':'"};
  std::string_view name = line.substr(0, colon);
  std::string_view value = line.substr(colon + 1);
  // No whitespace before the colon and no obs-fold: both let two parsers disagree.
  if (!is_token(name)) return Error{"malformed header name"};
  if (!valid_value(value)) return Error{"control byte in header value"};
  out.headers.emplace_back(std::string(name), std::string(trim(value)));
  return {};
}

Status parse_target(std::string_view target, HttpRequest& out) {
  if (out.method == "CONNECT") {
    out.is_connect = true;
    Result<Destination> dest = parse_authority(target, 0);
    if (!dest) return dest.status();
    out.destination = std::move(*dest);
    return {};
  }
  constexpr std::string_view kScheme = "http://";
  if (target.size() < kScheme.size() || !iequals(target.substr(0, kScheme.size()), kScheme))
    return Error{"expected CONNECT or an absolute http:// URI (use CONNECT for https)"};
  target.remove_prefix(kScheme.size());
  std::size_t end = target.find_first_of("/?#");
  std::string_view authority = target.substr(0, end);
  Result<Destination> dest = parse_authority(authority, 80);
  if (!dest) return dest.status();
  out.destination = std::move(*dest);
  std::string_view rest = end == std::string_view::npos ? "" : target.substr(end);
  rest = rest.substr(0, rest.find('#'));  // fragments are never sent
  out.origin_target =
      rest.empty() || rest.front() != '/' ? "/" + std::string(rest) : std::string(rest);
  return {};
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::optional<std::string> base64_decode(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : in) {
    int v = base64_value(c);
    if (v < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xffu));
    }
  }
  return out;
}

}  // namespace

Result<Destination> parse_authority(std::string_view authority, std::uint16_t default_port) {
  Destination out;
  std::string_view host;
  std::string_view port_text;
  if (authority.find('@') != std::string_view::npos) return Error{"userinfo in authority"};
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error{"unterminated IPv6 address"};
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return Error{"malformed authority"};
    if (!after.empty()) port_text = after.substr(1);
    bool ok = !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
    });
    if (!ok) return Error{"malformed IPv6 address"};
  } else {
    std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (host.empty() || host.size() > 253 ||
        !std::all_of(host.begin(), host.end(), valid_host_char))
      return Error{"malformed host name"};
  }
  if (port_text.empty() && (default_port == 0 || authority.back() == ':'))
    return Error{"missing port"};
  if (port_text.empty()) {
    out.port = default_port;
  } else {
    Result<std::uint16_t> port = parse_port(port_text);
    if (!port) return port.failure();
    out.port = *port;
  }
  out.host = normalize_host(host);
  if (out.host.empty()) return Error{"malformed host name"};
  return out;
}

Result<HttpRequest> parse_http_head(std::string_view head) {
  HttpRequest out;
  if (head.find('\0') != std::string_view::npos) return Error{"NUL byte in request"};
  std::size_t pos = 0;
  bool first = true;
  std::string_view target;
  while (pos <= head.size()) {
    std::size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(pos, end - pos);
    if (line.find_first_of("\r\n") != std::string_view::npos) return Error{"bare CR or LF"};
    Status status = first ? parse_request_line(line, out, target) : parse_header_line(line, out);
    if (!status) return status.failure();
    first = false;
    pos = end + 2;
  }
  Status status = parse_target(target, out);
  if (!status) return status.failure();
  return out;
}

std::optional<std::string_view> find_header(const HttpRequest& request, std::string_view name) {
  for (const auto& [key, value] : request.headers) {
    if (iequals(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> basic_credentials(std::string_view value) {
  value = trim(value);
  std::size_t space = value.find(' ');
  if (space == std::string_view::npos || !iequals(value.substr(0, space), "Basic"))
    return std::nullopt;
  std::optional<std::string> decoded = base64_decode(trim(value.substr(space + 1)));
  if (!decoded) return std::nullopt;
  std::size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(decoded->substr(0, colon), decoded->substr(colon + 1));
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // The length of the token is not secret; its bytes are.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = static_cast<unsigned char>(
        diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
  }
  return diff == 0;
}

std::string host_port(const Destination& destination) {
  bool v6 = destination.host.find(':') != std::string::npos;
  std::string host = v6 ? "[" + destination.host + "]" : destination.host;
  return host + ":" + std::to_string(destination.port);
}

std::string upstream_head(const HttpRequest& request) {
  static constexpr std::array<std::string_view, 5> kDropped = {
      "proxy-authorization", "proxy-connection", "connection", "keep-alive", "host"};
  std::string out = request.method + " " + request.origin_target + " " + request.version + "\r\n";
  const Destination& d = request.destination;
  out += "Host: " + (d.port == 80 ? host_port(d).substr(0, host_port(d).rfind(':')) : host_port(d));
  out += "\r\n";
  for (const auto& header : request.headers) {
    const std::string& name = header.first;
    bool drop = std::any_of(kDropped.begin(), kDropped.end(),
                            [&](std::string_view d2) { return iequals(name, d2); });
    if (!drop) out += name + ": " + header.second + "\r\n";
  }
  out += "Connection: close\r\n\r\n";
  return out;
}

std::string http_response(int code, std::string_view reason, std::string_view body,
                          std::string_view extra_headers) {
  std::string out = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) + "\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += extra_headers;
  out += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  out += body;
  return out;
}

}  // namespace sbx::proxy::detail
