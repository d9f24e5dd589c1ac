// See proxy_connect.hpp.
#include "proxy_connect.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sbx::stage2 {
namespace {

bool all_of(std::string_view text, bool (*allowed)(char)) {
  for (const char c : text) {
    if (!allowed(c)) return false;
  }
  return !text.empty();
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Letters, digits, '-', '.', '_' (host names), ':' (IPv6 literals), '%' (an IPv6 zone).
bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.' ||
         c == '_' || c == ':' || c == '%';
}

// RFC 3986 userinfo without percent-decoding: what sbx's credential is made of (a user name and
// a hex token); anything else is not sbx's URL.
bool is_credential_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.' ||
         c == '_' || c == '~' || c == ':';
}

std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.size() > 5 || !all_of(text, is_digit)) return std::nullopt;
  const unsigned long value = std::strtoul(std::string(text).c_str(), nullptr, 10);
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const auto n = static_cast<unsigned>(static_cast<unsigned char>(bytes[i]) << 16 |
                                         static_cast<unsigned char>(bytes[i + 1]) << 8 |
                                         static_cast<unsigned char>(bytes[i + 2]));
    for (const int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (i < bytes.size()) {
    unsigned n = static_cast<unsigned>(static_cast<unsigned char>(bytes[i]) << 16);
    if (i + 1 < bytes.size())
      n |= static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

int fail(const std::string& what) {
  const std::string line = "sbx-stage2 --proxy-connect: " + what + "\n";
  (void)!::write(2, line.data(), line.size());
  return 1;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

// Reads the proxy's answer up to the blank line that ends its head (at most 16 KiB); what came
// after it (the server's first bytes) is left in `rest`.
std::optional<std::string> read_head(int fd, std::string& rest) {
  std::string buffer;
  char chunk[4096];
  while (buffer.size() < 16384) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;
    buffer.append(chunk, static_cast<std::size_t>(got));
    const std::size_t end = buffer.find("\r\n\r\n");
    if (end != std::string::npos) {
      rest = buffer.substr(end + 4);
      return buffer.substr(0, end);
    }
  }
  return std::nullopt;
}

// Copies stdin to the tunnel and the tunnel to stdout; stdin's end is passed on as a half close
// (ssh closes its side last). Ends when the tunnel is closed by the far side.
int relay(int tunnel) {
  bool stdin_open = true;
  char buffer[65536];
  for (;;) {
    pollfd fds[2] = {{tunnel, POLLIN, 0}, {0, static_cast<short>(stdin_open ? POLLIN : 0), 0}};
    if (::poll(fds, stdin_open ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return fail(std::string("poll: ") + std::strerror(errno));
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t got = ::read(tunnel, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return 0;  // the far side is done: so is ssh's connection
      if (!write_all(1, buffer, static_cast<std::size_t>(got))) return 0;
    }
    if (stdin_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t got = ::read(0, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        stdin_open = false;
        ::shutdown(tunnel, SHUT_WR);
        continue;
      }
      if (!write_all(tunnel, buffer, static_cast<std::size_t>(got)))
        return fail("the tunnel closed while ssh was writing");
    }
  }
}

}  // namespace

std::optional<ProxyEndpoint> parse_proxy_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  url.remove_prefix(kScheme.size());
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  const std::size_t at = url.rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view credential = url.substr(0, at);
  const std::string_view authority = url.substr(at + 1);
  const std::size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos || credential.find(':') == std::string_view::npos ||
      !all_of(credential, is_credential_char))
    return std::nullopt;
  // sbx's proxy listens on 127.0.0.1 only (the relay inside bwrap's namespace, the proxy itself
  // under Landlock): the credential is never sent anywhere else (outside review, session 20).
  const std::string address(authority.substr(0, colon));
  const std::optional<std::uint16_t> port = parse_port(authority.substr(colon + 1));
  if (!port || address != "127.0.0.1") return std::nullopt;
  return ProxyEndpoint{address, *port, std::string(credential)};
}

std::optional<std::string> connect_authority(std::string_view host, std::string_view port) {
  if (!all_of(host, is_host_char) || host.size() > 253 || !parse_port(port)) return std::nullopt;
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::string(port);
}

std::string connect_request(std::string_view authority, std::string_view credential) {
  const std::string target(authority);
  return "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\nProxy-Authorization: Basic " +
         base64(credential) + "\r\n\r\n";
}

int connect_status(std::string_view head) {
  const std::string_view line = head.substr(0, head.find("\r\n"));
  constexpr std::string_view kVersion = "HTTP/1.";
  if (line.substr(0, kVersion.size()) != kVersion || line.size() < 12 || line[8] != ' ' ||
      !all_of(line.substr(9, 3), is_digit) || (line.size() > 12 && line[12] != ' '))
    return 0;
  return (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
}

int run_proxy_connect(int argc, char** argv) {
  if (argc != 4)
    return fail("usage: sbx-stage2 --proxy-connect HOST PORT (ssh's ProxyCommand: %h %p)");
  const std::optional<std::string> authority = connect_authority(argv[2], argv[3]);
  if (!authority)
    return fail(std::string("'") + argv[2] + "' port '" + argv[3] +
                "' is not a host name or address and a port 1-65535");
  const char* url = std::getenv("HTTPS_PROXY");
  if (url == nullptr) url = std::getenv("https_proxy");
  const std::optional<ProxyEndpoint> proxy = parse_proxy_url(url != nullptr ? url : "");
  if (!proxy)
    return fail(
        "HTTPS_PROXY is not sbx's proxy (http://USER:TOKEN@127.0.0.1:PORT): this helper works in "
        "sbx's network mode proxy only");
  const int tunnel = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(proxy->port);
  ::inet_pton(AF_INET, proxy->address.c_str(), &address.sin_addr);
  if (tunnel < 0 ||
      ::connect(tunnel, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    return fail("cannot reach sbx's proxy at " + proxy->address + ":" +
                std::to_string(proxy->port) + ": " + std::strerror(errno));
  const std::string request = connect_request(*authority, proxy->credential);
  if (!write_all(tunnel, request.data(), request.size()))
    return fail(std::string("cannot ask sbx's proxy: ") + std::strerror(errno));
  std::string rest;
  const std::optional<std::string> head = read_head(tunnel, rest);
  if (!head) return fail("sbx's proxy closed the connection without an answer");
  if (connect_status(*head) != 200)
    return fail("sbx's proxy refused " + *authority + ": " + head->substr(0, head->find("\r\n")));
  if (!rest.empty() && !write_all(1, rest.data(), rest.size())) return 0;
  return relay(tunnel);
}

}  // namespace sbx::stage2
