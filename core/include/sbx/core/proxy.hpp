// The filtering network proxy for `network.mode == proxy`: HTTP CONNECT, plain HTTP
// (absolute-form requests) and SOCKS5 on 127.0.0.1 and/or a unix socket, enforcing
// network.allowed_domains / denied_domains, refusing private destinations, and requiring a
// per-run credential so that other local processes cannot use it.
//
// Destination rules:
//  - A pattern is `host`, `*.host`, optionally followed by `:PORT`. Hosts compare
//    case-insensitively and a trailing dot is ignored.
//  - `*.example.com` matches the subdomains of example.com only, NOT example.com itself (list
//    both to allow both). A pattern without a port matches every port.
//  - denied_domains are checked first; then allowed_domains; no match = refused.
//  - A name that resolves to a loopback, link-local (incl. 169.254.169.254), private (RFC 1918,
//    ULA incl. fd00:ec2::254), CGNAT, unspecified, multicast or reserved address is refused
//    unless the matching allowed pattern is that exact host with that exact port (no wildcard,
//    port given). If any resolved address is refused the whole connection is (a mixed answer is
//    a DNS-rebinding signal), and the proxy connects only to the addresses it checked.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::proxy {

// One refused connection attempt: which destination, over which protocol, and the rule that
// refused it (e.g. "denied_domains: *.evil.test", "not in allowed_domains",
// "missing or wrong proxy credential").
struct Refusal {
  std::string host;  // as the client asked for it (lower-cased), or "" if it never said
  std::uint16_t port = 0;
  std::string protocol;  // "http-connect", "http", "socks5"
  std::string rule;
  friend bool operator==(const Refusal&, const Refusal&) = default;
};

// The verdict on a host:port before resolution.
struct RuleMatch {
  bool allowed = false;
  bool exact = false;  // the allowing pattern names this host and this port exactly
  std::string rule;    // the deciding pattern or reason
};

// Lower-cases `host` and drops one trailing dot. Pure.
std::string normalize_host(std::string_view host);

// Applies denied (first) then allowed patterns to host:port. Pure; patterns as validated by
// validate_policy (lower-case, optional "*." prefix, optional ":PORT").
RuleMatch match_destination(std::string_view host, std::uint16_t port,
                            const std::vector<std::string>& allowed,
                            const std::vector<std::string>& denied);

// Why a literal IP address may not be reached without an exact allow entry ("loopback",
// "private", "link-local", "cloud metadata", ...), or nullopt if it is a public address.
// Error if `address` is not an IP literal. IPv4-mapped/NAT64 IPv6 addresses are judged by the
// IPv4 address they carry.
Result<std::optional<std::string>> special_address_reason(std::string_view address);

// Resolves a host name to IP literals. The production resolver uses the system's; tests inject
// a map so that no external name is ever looked up.
using Resolver = std::function<Result<std::vector<std::string>>(const std::string& host)>;

// Every bound below holds whatever clients do; the defaults are what `sbx exec` uses.
struct Limits {
  std::size_t max_header_bytes = 16 * 1024;  // request line + headers / SOCKS handshake
  // Client connections that have presented the credential (the run's own), open at once. One
  // more is answered 503 (HTTP) or closed (SOCKS5).
  std::size_t max_connections = 512;
  // Client connections that have not presented the credential yet, per listener. Any local
  // user can open these, so they never take the authenticated connections' places: when a
  // listener's quota is full, its oldest unauthenticated connection is closed to admit the new
  // one (closing the new one instead would let a few silent connections lock the run out).
  std::size_t max_pending_connections = 64;
  std::chrono::milliseconds auth_timeout{2'000};  // from accept until the credential is checked
  std::chrono::milliseconds handshake_timeout{10'000};  // until the destination is connected
  std::chrono::milliseconds idle_timeout{300'000};      // no bytes either way while relaying
  // Refusals kept in order (refusals(), on_refusal): the first this many refused by a rule, and
  // separately the first max_credential_refusal_entries refused for a missing or wrong
  // credential (which any local user can cause, so they never crowd out the run's own). The
  // rest are only counted: per host for up to max_refusal_hosts hosts, then as one sum.
  std::size_t max_refusal_entries = 100;
  std::size_t max_credential_refusal_entries = 10;
  std::size_t max_refusal_hosts = 32;
};

// The refusals not kept as entries, counted for one host ("" when the client never named one).
struct HostCount {
  std::string host;
  std::uint64_t count = 0;
  friend bool operator==(const HostCount&, const HostCount&) = default;
};

// Every refusal of a proxy so far in bounded memory: the kept entries (see Limits) and counts.
struct RefusalLog {
  std::vector<Refusal> entries;  // the kept refusals, in order
  std::uint64_t total = 0;       // every refusal, kept or not
  // The refusals not kept, per host, most frequent first (ties: first refused first).
  std::vector<HostCount> omitted_by_host;
  std::uint64_t omitted_other_hosts = 0;  // not kept, of hosts beyond max_refusal_hosts
};

struct Options {
  std::vector<std::string> allowed_domains;
  std::vector<std::string> denied_domains;
  bool listen_tcp = true;        // on 127.0.0.1, an ephemeral port
  std::string unix_socket_path;  // also listen here if set (created; removed on stop)
  Resolver resolver;             // empty = the system resolver
  Limits limits;
  // Called on the proxy's thread for each refusal kept as an entry (see Limits; the others are
  // only counted in refusal_log()). Must not block.
  std::function<void(const Refusal&)> on_refusal;
};

// A running proxy. Starts listening and serving in start(); stop() (or the destructor) closes
// every listener and connection, removes the unix socket and joins the thread, so the proxy
// lives exactly as long as this object.
class Proxy {
 public:
  // Error if a listener cannot be created or no listener was asked for.
  static Result<std::unique_ptr<Proxy>> start(Options options);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  void stop();
  std::uint16_t port() const;  // 0 without a TCP listener
  const std::string& unix_socket_path() const;
  // The per-run credential: clients authenticate with user() and token() (HTTP
  // Proxy-Authorization: Basic, a user:token URL, or SOCKS5 username/password).
  const std::string& user() const;
  const std::string& token() const;
  // "http://USER:TOKEN@127.0.0.1:PORT" or "socks5h://USER:TOKEN@127.0.0.1:PORT".
  std::string url(std::string_view scheme, std::uint16_t port) const;
  // Snapshot of the refusals kept as entries so far, in order (thread-safe).
  std::vector<Refusal> refusals() const;
  // Snapshot of the entries and the counts of every refusal so far (thread-safe).
  RefusalLog refusal_log() const;
  // Client connections currently open (thread-safe).
  std::size_t active_connections() const;

  class Impl;

 private:
  explicit Proxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The environment a proxied command should see: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY in both
// cases pointing at `port` with the credential, and NO_PROXY / no_proxy empty so that loopback
// is not exempted (inside the sandbox only the proxy is reachable anyway).
std::vector<std::string> proxy_environment(const Proxy& proxy, std::uint16_t port);

// Why a policy that names network.proxy_ports itself is refused in network mode proxy (the
// message of start_for_request and RunProxy::start; `explain` and `context` say it too).
std::string policy_ports_refusal(const std::vector<std::uint16_t>& ports);

// For a request whose policy has network.mode == proxy: starts a proxy enforcing the policy's
// allowed/denied domains on 127.0.0.1, replaces every proxy variable in request.env (either case)
// with proxy_environment(), and sets request.policy.network.proxy_ports to the proxy's port, so a
// backend with the proxy_network capability confines the command to it. The caller keeps the
// returned proxy alive until the command has exited. Error for another network mode, for a
// policy that names proxy_ports itself (policy_ports_refusal: only sbx's own proxy is ever a
// destination), or if the proxy cannot start; the request is then unchanged.
Result<std::unique_ptr<Proxy>> start_for_request(
    TransformRequest& request, std::function<void(const Refusal&)> on_refusal = {});

// Where RunProxy makes its private directory by default: sbx's per-user state directory
// "proxy" (sbx/sdk/private_state.hpp state_dir: <runtime dir>/sbx-proxy with $XDG_RUNTIME_DIR,
// /run/user/<uid> or root's /run, else ~/.cache/sbx/proxy), made 0700 and checked; an error
// with the reason when there is none. Never /tmp: no shipped preset makes these writable, while
// /tmp is writable in workspace-write, where a sandboxed command of the same user (Landlock does
// not hide it) could remove another run's socket (issue #32).
Result<std::string> private_runtime_parent();

// Removes from `parent` every "sbx-proxy-XXXXXX" directory that a run left behind (its sbx was
// killed): a directory of this user, mode 0700, that no live run holds locked, with nothing in
// it but the socket "proxy.sock". Anything else is never touched.
void sweep_stale_directories(const std::string& parent);

// The proxy of one sandboxed run as `sbx exec` uses it: start_for_request() plus a unix socket
// for backends that bridge into a network namespace (bwrap). The socket is "proxy.sock" alone in
// a fresh private directory (mkdtemp under `parent`, mode 0700) so no other user can reach it
// and the backend can bind the whole directory read-only into the sandbox. On success
// request.proxy_socket names the socket. Destroying the object stops the proxy and removes the
// socket and the directory. The directory is flock()ed for the run's lifetime, and start()
// first removes the directories of runs that ended without cleaning up
// (sweep_stale_directories).
class RunProxy {
 public:
  static Result<std::unique_ptr<RunProxy>> start(
      TransformRequest& request, std::function<void(const Refusal&)> on_refusal = {},
      std::optional<std::string> parent = std::nullopt);
  ~RunProxy();
  RunProxy(const RunProxy&) = delete;
  RunProxy& operator=(const RunProxy&) = delete;

  // True when `request` points at this running proxy: network mode proxy, proxy_ports exactly
  // this proxy's port and proxy_socket this proxy's socket.
  bool serves(const TransformRequest& request) const;

  Proxy& proxy() { return *proxy_; }
  const Proxy& proxy() const { return *proxy_; }
  const std::string& directory() const { return directory_; }

 private:
  RunProxy(std::unique_ptr<Proxy> proxy, std::string directory, int lock)
      : proxy_(std::move(proxy)), directory_(std::move(directory)), lock_(lock) {}
  std::unique_ptr<Proxy> proxy_;
  std::string directory_;
  int lock_ = -1;  // the directory's flock: this run is alive
};

// Replaces every occurrence of `secret` in `text` with "***" (for plans, logs and messages that
// may contain the proxy credential). An empty secret leaves the text unchanged.
std::string redact(std::string text, std::string_view secret);

// The plan with the run proxy's credential replaced by "***" in argv, env and notes (for
// printing a plan); unchanged when `run_proxy` is null.
ExecPlan redact_plan(ExecPlan plan, const RunProxy* run_proxy);

// The refusals as a compact JSON array, in order:
// [{"kind":"proxy","host","port","protocol","rule"}]
// (`exec --json` "network_refusals"; host is null when the client never named one).
std::string refusals_to_json(const std::vector<Refusal>& refusals);

// One refusal as a line for people: "HOST:PORT (PROTOCOL) refused: RULE" (host "?" if none).
std::string describe(const Refusal& refusal);

// The refusals a log did not keep as entries, as one line for people: "N more refusals not
// listed: HOST N, HOST N, ... and N to other hosts" (host "?" if none); nullopt when every
// refusal was kept.
std::optional<std::string> describe_omitted(const RefusalLog& log);

}  // namespace sbx::proxy
