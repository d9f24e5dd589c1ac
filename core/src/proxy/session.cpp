// One client connection of the filtering proxy: protocol detection, HTTP (CONNECT and plain),
// SOCKS5, the destination check, the connect to the checked address and the relay.
#include "proxy/session.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <tuple>

#include "proxy/http.hpp"

namespace sbx::proxy::detail {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::experimental::as_tuple(asio::use_awaitable);

// Outcome of checking a destination: endpoints to connect to, or why not.
struct Checked {
  std::vector<tcp::endpoint> endpoints;
  std::string refused_rule;  // set: a policy refusal (403 / SOCKS 0x02)
  std::string unreachable;   // set: resolution failed (502 / SOCKS 0x04)
};

// A client connection. It starts in its listener's pool of unauthenticated connections, with
// the short auth_timeout as its deadline, and leaves the pool once the credential is checked.
template <class Socket>
struct Session final : PendingClient {
  Session(Proxy::Impl& p, PendingPool& pending, Socket c)
      : proxy(p),
        client(std::move(c)),
        upstream(client.get_executor()),
        accepted(Clock::now()),
        deadline(accepted +
                 std::min(p.options.limits.auth_timeout, p.options.limits.handshake_timeout)),
        pool(&pending),
        in_pool(pending.insert(pending.end(), this)) {
    ++proxy.active;
  }
  ~Session() {
    // A destructor is noexcept: an exception would end the process (std::terminate). Asio's
    // cancel() throws boost::system::system_error only when the timer's service fails, and a
    // session going away has nothing left for its watchdog to do then.
    try {
      if (watchdog_timer != nullptr) watchdog_timer->cancel();
    } catch (const std::exception&) {  // nothing to do: see above
    }
    leave_pool();
    if (authenticated) --proxy.authenticated;
    --proxy.active;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void evict() override {
    leave_pool();
    close_all();
  }
  void leave_pool() {
    if (pool != nullptr) pool->erase(in_pool);
    pool = nullptr;
  }
  // The credential was right: the connection moves to the run's own connections, if there is
  // room (false: over max_connections, or evicted while its request was being read; the caller
  // ends it), and gets the full handshake time.
  bool authenticate() {
    leave_pool();
    if (!client.is_open()) return false;
    if (proxy.authenticated >= limits().max_connections) return false;
    ++proxy.authenticated;
    authenticated = true;
    deadline = accepted + limits().handshake_timeout;
    return true;
  }

  void touch() { deadline = Clock::now() + proxy.options.limits.idle_timeout; }
  void close_all() {
    boost::system::error_code ignored;
    client.close(ignored);
    upstream.close(ignored);
  }
  Limits const& limits() const { return proxy.options.limits; }

  Proxy::Impl& proxy;
  Socket client;
  tcp::socket upstream;
  asio::steady_timer* watchdog_timer = nullptr;  // owned by the watchdog coroutine
  Clock::time_point accepted;
  Clock::time_point deadline;
  PendingPool* pool;  // while unauthenticated (and not evicted); else null
  PendingPool::iterator in_pool;
  bool authenticated = false;
  std::string buffer;  // bytes from the client not consumed yet
};

// Closes the connection when its deadline passes: a slow or silent client (slowloris) or an idle
// tunnel cannot hold a descriptor forever. It holds only a weak reference, so a finished session
// is destroyed at once; the session's destructor cancels this timer so the watchdog ends too.
template <class S>
awaitable<void> watchdog(std::weak_ptr<S> weak) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  // However the frame ends (including io_context teardown), the session must not keep a
  // pointer to this timer.
  struct Detach {
    std::weak_ptr<S> session;
    ~Detach() {
      if (auto s = session.lock()) s->watchdog_timer = nullptr;
    }
  } detach{weak};
  for (;;) {
    {
      std::shared_ptr<S> s = weak.lock();
      if (!s) co_return;
      if (Clock::now() >= s->deadline) {
        s->close_all();
        co_return;
      }
      s->watchdog_timer = &timer;
      timer.expires_at(s->deadline);
    }
    (void)co_await timer.async_wait(kTuple);  // expiry, or cancelled by ~Session: recheck
  }
}

// Reads until the buffer holds at least `n` bytes. False on EOF/error or past the header limit.
template <class S>
awaitable<bool> fill(S& s, std::size_t n) {
  std::array<char, 4096> chunk{};
  while (s.buffer.size() < n) {
    if (n > s.limits().max_header_bytes) co_return false;
    auto [ec, got] = co_await s.client.async_read_some(asio::buffer(chunk), kTuple);
    if (ec) co_return false;
    s.buffer.append(chunk.data(), got);
  }
  co_return true;
}

template <class S>
awaitable<void> send_client(S& s, std::string_view bytes) {
  auto [ec, n] = co_await asio::async_write(s.client, asio::buffer(bytes), kTuple);
  (void)ec;
  (void)n;
}

// After a refusal: stop sending, then read what the client still sends for a moment, so the
// answer is not lost to a TCP reset caused by unread bytes.
template <class S>
awaitable<void> finish(S& s) {
  boost::system::error_code ignored;
  s.client.shutdown(asio::socket_base::shutdown_send, ignored);
  s.deadline = std::min(s.deadline, Clock::now() + std::chrono::seconds(1));
  std::array<char, 4096> chunk{};
  for (std::size_t total = 0; total < 64 * 1024;) {
    auto [ec, got] = co_await s.client.async_read_some(asio::buffer(chunk), kTuple);
    if (ec) break;
    total += got;
  }
}

Result<std::vector<std::string>> addresses_of(Proxy::Impl& proxy, const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  if (!ec) return std::vector<std::string>{host};
  return proxy.options.resolver(host);
}

awaitable<Result<std::vector<std::string>>> resolve(Proxy::Impl& proxy, const std::string& host) {
  if (proxy.options.resolver) co_return addresses_of(proxy, host);
  boost::system::error_code literal_ec;
  asio::ip::make_address(host, literal_ec);
  if (!literal_ec) co_return std::vector<std::string>{host};
  tcp::resolver resolver(co_await asio::this_coro::executor);
  auto [ec, results] = co_await resolver.async_resolve(host, "", kTuple);
  if (ec) co_return Error{ec.message()};
  std::vector<std::string> out;
  for (const auto& entry : results) out.push_back(entry.endpoint().address().to_string());
  co_return out;
}

// The policy check, then resolution, then the address check. The endpoints returned are the
// addresses that were checked: the caller connects to them and never resolves again, so a DNS
// answer that changes between check and use (rebinding) cannot redirect the connection.
awaitable<Checked> check_destination(Proxy::Impl& proxy, const Destination& dest) {
  Checked out;
  const Options& o = proxy.options;
  RuleMatch match = match_destination(dest.host, dest.port, o.allowed_domains, o.denied_domains);
  if (!match.allowed) {
    out.refused_rule = match.rule;
    co_return out;
  }
  Result<std::vector<std::string>> addresses = co_await resolve(proxy, dest.host);
  if (!addresses || addresses->empty()) {
    out.unreachable = addresses ? "no address" : addresses.error();
    co_return out;
  }
  for (const std::string& text : *addresses) {
    Result<std::optional<std::string>> why = special_address_reason(text);
    if (!why) {
      out.unreachable = why.error();
      co_return out;
    }
    // A private answer needs an exact host:port allow entry, and one such answer refuses the
    // whole name: mixing public and private answers is how rebinding attacks look.
    if (*why && !match.exact) {
      out.endpoints.clear();
      out.refused_rule = "resolves to " + **why + " address " + text +
                         " (only an exact host:port entry in allowed_domains may reach it)";
      co_return out;
    }
    out.endpoints.emplace_back(asio::ip::make_address(text), dest.port);
  }
  co_return out;
}

template <class S>
awaitable<bool> connect_upstream(S& s, const std::vector<tcp::endpoint>& endpoints) {
  for (const tcp::endpoint& endpoint : endpoints) {
    boost::system::error_code ignored;
    s.upstream.close(ignored);
    auto [ec] = co_await s.upstream.async_connect(endpoint, kTuple);
    if (!ec) co_return true;
  }
  co_return false;
}

// Copies one direction until EOF or error. EOF is a half-close: it is passed on and the other
// direction carries on. Holds the session alive while it runs.
template <class S>
awaitable<void> pump(std::shared_ptr<S> s, bool to_upstream) {
  std::array<char, 16 * 1024> chunk{};
  for (;;) {
    // (No co_await inside ?: or ||: g++ 12 miscompiles those; plain statements only.)
    boost::system::error_code ec;
    std::size_t got = 0;
    if (to_upstream) {
      std::tie(ec, got) = co_await s->client.async_read_some(asio::buffer(chunk), kTuple);
    } else {
      std::tie(ec, got) = co_await s->upstream.async_read_some(asio::buffer(chunk), kTuple);
    }
    boost::system::error_code ignored;
    if (ec == asio::error::eof) {
      if (to_upstream) s->upstream.shutdown(asio::socket_base::shutdown_send, ignored);
      if (!to_upstream) s->client.shutdown(asio::socket_base::shutdown_send, ignored);
      co_return;
    }
    if (ec) break;
    s->touch();
    auto data = asio::buffer(chunk.data(), got);
    if (to_upstream) {
      std::tie(ec, got) = co_await asio::async_write(s->upstream, data, kTuple);
    } else {
      std::tie(ec, got) = co_await asio::async_write(s->client, data, kTuple);
    }
    if (ec) break;
    s->touch();
  }
  s->close_all();
}

// The tunnel: one direction in its own coroutine, the other in this one; the session lives until
// both have finished (each holds a reference).
template <class S>
awaitable<void> relay(std::shared_ptr<S> s) {
  s->touch();
  if (!s->buffer.empty()) {
    auto [ec, n] = co_await asio::async_write(s->upstream, asio::buffer(s->buffer), kTuple);
    s->buffer.clear();
    if (ec) co_return;
  }
  asio::co_spawn(s->client.get_executor(), pump(s, true), [](const std::exception_ptr&) {});
  co_await pump(s, false);
}

template <class S>
bool http_authorized(S& s, const HttpRequest& request) {
  std::optional<std::string_view> header = find_header(request, "Proxy-Authorization");
  if (!header) return false;
  auto creds = basic_credentials(*header);
  // Both compared in full (no short-circuit on the user) so timing says nothing.
  bool user_ok = creds && constant_time_equal(creds->first, s.proxy.user);
  bool token_ok = creds && constant_time_equal(creds->second, s.proxy.token);
  return user_ok && token_ok;
}

template <class S>
awaitable<void> http_refuse(S& s, const Refusal& refusal, int code, std::string_view reason,
                            std::string_view extra) {
  if (!refusal.rule.empty()) s.proxy.refuse(refusal);
  std::string body = "sbx proxy: refused " + refusal.host + ":" + std::to_string(refusal.port) +
                     ": " + refusal.rule + "\n";
  std::string headers = std::string(extra) + "X-Sbx-Proxy-Refused: " + refusal.rule + "\r\n";
  co_await send_client(s, http_response(code, reason, body, headers));
  co_await finish(s);
}

template <class S>
awaitable<void> serve_http(std::shared_ptr<S> s) {
  std::size_t end = std::string::npos;
  while ((end = s->buffer.find("\r\n\r\n")) == std::string::npos) {
    bool more = s->buffer.size() < s->limits().max_header_bytes;
    if (more) more = co_await fill(*s, s->buffer.size() + 1);
    if (!more) {
      if (s->buffer.size() >= s->limits().max_header_bytes) {
        co_await send_client(*s, http_response(431, "Request Header Fields Too Large",
                                               "sbx proxy: request head too large\n"));
        co_await finish(*s);
      }
      co_return;
    }
  }
  Result<HttpRequest> request = parse_http_head(std::string_view(s->buffer).substr(0, end));
  if (!request) {
    co_await send_client(*s,
                         http_response(400, "Bad Request", "sbx proxy: " + request.error() + "\n"));
    co_await finish(*s);
    co_return;
  }
  s->buffer.erase(0, end + 4);
  Refusal refusal{request->destination.host, request->destination.port,
                  request->is_connect ? "http-connect" : "http", ""};
  if (!http_authorized(*s, *request)) {
    refusal.rule = std::string(kBadCredential);
    co_await http_refuse(*s, refusal, 407, "Proxy Authentication Required",
                         "Proxy-Authenticate: Basic realm=\"sbx\"\r\n");
    co_return;
  }
  if (!s->authenticate()) {
    co_await send_client(
        *s, http_response(503, "Service Unavailable", "sbx proxy: too many connections\n"));
    co_return;
  }
  Checked checked = co_await check_destination(s->proxy, request->destination);
  if (!checked.refused_rule.empty()) {
    refusal.rule = checked.refused_rule;
    co_await http_refuse(*s, refusal, 403, "Forbidden", "");
    co_return;
  }
  bool connected = false;
  if (checked.unreachable.empty()) connected = co_await connect_upstream(*s, checked.endpoints);
  if (!connected) {
    std::string why = checked.unreachable.empty() ? "connection failed" : checked.unreachable;
    co_await send_client(*s, http_response(502, "Bad Gateway", "sbx proxy: " + why + "\n"));
    co_await finish(*s);
    co_return;
  }
  if (request->is_connect) {
    co_await send_client(*s, std::string_view("HTTP/1.1 200 Connection established\r\n\r\n"));
  } else {
    s->buffer.insert(0, upstream_head(*request));
  }
  co_await relay(s);
}

// SOCKS5 reply codes (RFC 1928 section 6).
constexpr std::uint8_t kSocksOk = 0x00, kSocksFailure = 0x01, kSocksNotAllowed = 0x02,
                       kSocksHostUnreachable = 0x04, kSocksRefused = 0x05,
                       kSocksCommandUnsupported = 0x07, kSocksAddressUnsupported = 0x08;

std::string socks_reply(std::uint8_t code) {
  return std::string{'\x05', static_cast<char>(code), '\x00', '\x01', '\0', '\0', '\0', '\0', '\0',
                     '\0'};
}

std::uint8_t byte_at(const std::string& b, std::size_t i) {
  return static_cast<std::uint8_t>(b[i]);
}

// Method negotiation and RFC 1929 username/password. Only username/password is accepted: the
// per-run credential is what keeps other local processes out, so "no authentication" is refused.
template <class S>
awaitable<bool> socks_authenticate(S& s) {
  bool ok = co_await fill(s, 2);
  if (ok) ok = co_await fill(s, 2 + std::size_t{byte_at(s.buffer, 1)});
  if (!ok) co_return false;
  std::string_view methods = std::string_view(s.buffer).substr(2, byte_at(s.buffer, 1));
  bool has_userpass = methods.find('\x02') != std::string_view::npos;
  s.buffer.erase(0, 2 + methods.size());
  if (!has_userpass) {
    s.proxy.refuse(Refusal{"", 0, "socks5", std::string(kBadCredential)});
    co_await send_client(s, std::string_view("\x05\xff", 2));
    co_return false;
  }
  co_await send_client(s, std::string_view("\x05\x02", 2));
  ok = co_await fill(s, 2);
  if (!ok || byte_at(s.buffer, 0) != 0x01) co_return false;
  std::size_t ulen = byte_at(s.buffer, 1);
  ok = co_await fill(s, 3 + ulen);
  if (!ok) co_return false;
  std::size_t plen = byte_at(s.buffer, 2 + ulen);
  ok = co_await fill(s, 3 + ulen + plen);
  if (!ok) co_return false;
  bool user_ok = constant_time_equal(s.buffer.substr(2, ulen), s.proxy.user);
  bool token_ok = constant_time_equal(s.buffer.substr(3 + ulen, plen), s.proxy.token);
  s.buffer.erase(0, 3 + ulen + plen);
  if (!(user_ok && token_ok)) {
    s.proxy.refuse(Refusal{"", 0, "socks5", std::string(kBadCredential)});
    co_await send_client(s, std::string_view("\x01\x01", 2));
    co_return false;
  }
  // Over max_connections the connection is closed without an answer.
  if (!s.authenticate()) co_return false;
  co_await send_client(s, std::string_view("\x01\x00", 2));
  co_return true;
}

// Reads a CONNECT request. On a bad request, `code` is the reply to send.
template <class S>
awaitable<std::optional<Destination>> socks_request(S& s, std::uint8_t& code) {
  code = kSocksFailure;
  bool ok = co_await fill(s, 5);
  if (!ok || byte_at(s.buffer, 0) != 0x05) co_return std::nullopt;
  std::uint8_t command = byte_at(s.buffer, 1);
  std::uint8_t type = byte_at(s.buffer, 3);
  std::size_t addr_len = type == 1 ? 4 : type == 4 ? 16 : type == 3 ? byte_at(s.buffer, 4) + 1u : 0;
  if (addr_len == 0) {
    code = kSocksAddressUnsupported;
    co_return std::nullopt;
  }
  ok = co_await fill(s, 4 + addr_len + 2);
  if (!ok) co_return std::nullopt;
  const auto* raw = reinterpret_cast<const unsigned char*>(s.buffer.data() + 4);
  std::string host;
  if (type == 1) {
    asio::ip::address_v4::bytes_type b{};
    std::copy(raw, raw + 4, b.begin());
    host = asio::ip::address_v4(b).to_string();
  } else if (type == 4) {
    asio::ip::address_v6::bytes_type b{};
    std::copy(raw, raw + 16, b.begin());
    host = asio::ip::address_v6(b).to_string();
  } else {
    host.assign(s.buffer.data() + 5, addr_len - 1);
  }
  auto port = static_cast<std::uint16_t>((raw[addr_len] << 8) | raw[addr_len + 1]);
  s.buffer.erase(0, 4 + addr_len + 2);
  if (command != 0x01) {
    code = kSocksCommandUnsupported;
    co_return std::nullopt;
  }
  Result<Destination> dest =
      type == 4 ? Result<Destination>(Destination{host, port}) : parse_authority(host, port);
  if (!dest || port == 0) co_return std::nullopt;
  co_return *dest;
}

template <class S>
awaitable<void> serve_socks(std::shared_ptr<S> s) {
  bool authenticated = co_await socks_authenticate(*s);
  if (!authenticated) co_return;
  std::uint8_t code = kSocksFailure;
  std::optional<Destination> dest = co_await socks_request(*s, code);
  if (!dest) {
    co_await send_client(*s, socks_reply(code));
    co_return;
  }
  Checked checked = co_await check_destination(s->proxy, *dest);
  if (!checked.refused_rule.empty()) {
    s->proxy.refuse(Refusal{dest->host, dest->port, "socks5", checked.refused_rule});
    co_await send_client(*s, socks_reply(kSocksNotAllowed));
    co_await finish(*s);
    co_return;
  }
  if (!checked.unreachable.empty()) {
    co_await send_client(*s, socks_reply(kSocksHostUnreachable));
    co_return;
  }
  bool connected = co_await connect_upstream(*s, checked.endpoints);
  if (!connected) {
    co_await send_client(*s, socks_reply(kSocksRefused));
    co_return;
  }
  co_await send_client(*s, socks_reply(kSocksOk));
  co_await relay(s);
}

template <class S>
awaitable<void> dispatch(std::shared_ptr<S> s) {
  bool got_byte = co_await fill(*s, 1);
  if (!got_byte) co_return;
  // SOCKS5 starts with its version byte; an HTTP method never does.
  if (s->buffer.front() == '\x05') {
    co_await serve_socks(s);
  } else {
    co_await serve_http(s);
  }
}

// The session is created (and joins the pool) here, synchronously, so that the accept loop's
// quota check sees it before the next connection is accepted.
template <class Socket>
void serve(Proxy::Impl& proxy, PendingPool& pool, Socket client) {
  auto s = std::make_shared<Session<Socket>>(proxy, pool, std::move(client));
  auto executor = s->client.get_executor();
  asio::co_spawn(executor, watchdog(std::weak_ptr<Session<Socket>>(s)),
                 [](const std::exception_ptr&) {});
  // A session that fails with an exception (e.g. out of memory) only ends that connection.
  asio::co_spawn(executor, dispatch(std::move(s)), [](const std::exception_ptr&) {});
}

}  // namespace

void serve_tcp(Proxy::Impl& proxy, PendingPool& pool, tcp::socket client) {
  boost::system::error_code ignored;
  client.set_option(tcp::no_delay(true), ignored);
  serve(proxy, pool, std::move(client));
}

#if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
void serve_unix(Proxy::Impl& proxy, PendingPool& pool,
                asio::local::stream_protocol::socket client) {
  serve(proxy, pool, std::move(client));
}
#endif

}  // namespace sbx::proxy::detail
