// `sbx-stage2 --proxy-connect HOST PORT`: ssh's ProxyCommand in network mode proxy (issue #35
// point 5), so that `git@github.com:` remotes work through sbx's filtering proxy.
//
// In network mode proxy the command reaches nothing but sbx's proxy (bwrap: an empty network
// namespace and stage 2's loopback relay; Landlock: TCP connect to the proxy's port only), and
// ssh has no HTTP or SOCKS proxy of its own. So core sets GIT_SSH_COMMAND to
//   ssh -o ProxyCommand="'<libexec>/sbx-stage2' --proxy-connect %h %p"
// (core/src/proxy/request.cpp) and ssh runs this inside the sandbox: it reads the proxy and its
// per-run credential from HTTPS_PROXY (http://USER:TOKEN@127.0.0.1:PORT, set by sbx), asks the
// proxy for a tunnel (HTTP CONNECT HOST:PORT, Proxy-Authorization Basic, RFC 9110 9.3.6) and
// then copies stdin to the tunnel and the tunnel to stdout until both ends are done. The proxy
// applies allowed_domains/denied_domains to HOST:PORT like any CONNECT, and names a refusal in
// the run's report; this helper only prints the proxy's status line and exits 1. It has no
// privilege and decides nothing: the sandbox already keeps every other way out closed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sbx::stage2 {

struct ProxyEndpoint {
  std::string address;     // 127.0.0.1: sbx's proxy listens there only
  std::uint16_t port = 0;  // the proxy's port
  std::string credential;  // "USER:TOKEN", as the URL gives it
};

// http://USER:TOKEN@127.0.0.1:PORT, the form of sbx's HTTPS_PROXY; nullopt for anything else (a
// URL without a credential, another scheme or address, a host name). Pure.
std::optional<ProxyEndpoint> parse_proxy_url(std::string_view url);

// A destination as ssh gives it (%h %p): a host name, an IPv4 literal or a bracketless IPv6
// literal, and a port 1-65535; nullopt when either holds anything else (no space, CR or LF can
// reach the request line). Returns the authority for the request line ("[v6]:port"). Pure.
std::optional<std::string> connect_authority(std::string_view host, std::string_view port);

// The CONNECT request for `authority` with the credential. Pure.
std::string connect_request(std::string_view authority, std::string_view credential);

// The status code of the proxy's answer ("HTTP/1.1 200 Connection established"), 0 when the
// first line is not an HTTP status line. Pure.
int connect_status(std::string_view head);

// The program: argv is {"sbx-stage2", "--proxy-connect", HOST, PORT}. Its exit status.
int run_proxy_connect(int argc, char** argv);

}  // namespace sbx::stage2
