// The filtering proxy's lifetime: listeners, the accept loops, the thread, the credential and
// the refusal log (see sbx/core/proxy.hpp).
#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <exception>
#include <random>
#include <string>

#if !defined(_WIN32)
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "proxy/session.hpp"

namespace sbx::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto kTuple = asio::experimental::as_tuple(asio::use_awaitable);

// 128 bits from the OS generator (std::random_device is /dev/urandom or getrandom on glibc,
// rand_s on Windows): unguessable for the lifetime of one command.
std::string random_token() {
  std::random_device device;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    unsigned value = device();
    for (int j = 0; j < 8; ++j) {
      out.push_back(kHex[value & 0xfu]);
      value >>= 4;
    }
  }
  return out;
}

// A session that fails with an exception (e.g. out of memory) only ends that connection.
void ignore_exception(const std::exception_ptr&) {}

template <class Acceptor, class Serve>
asio::awaitable<void> accept_loop(Proxy::Impl& proxy, Acceptor& acceptor, detail::PendingPool& pool,
                                  Serve serve) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    // Out of descriptors and similar: keep serving the connections that exist.
    if (ec) continue;
    // Nobody is known yet, so the connection takes an unauthenticated place of this listener.
    // Over the quota the oldest such connection goes: a flood then only churns its own
    // connections, and a client that sends its credential at once gets through.
    if (pool.size() >= std::max<std::size_t>(proxy.options.limits.max_pending_connections, 1))
      pool.front()->evict();
    try {
      serve(proxy, pool, std::move(socket));
    } catch (const std::exception&) {
      // Out of memory for this connection's session: it is dropped, the loop keeps accepting.
    }
  }
}

Status listen_tcp(Proxy::Impl& impl) {
  boost::system::error_code ec;
  tcp::acceptor& acceptor = impl.tcp_acceptor.emplace(*impl.io);
  tcp::endpoint endpoint(asio::ip::make_address_v4("127.0.0.1"), 0);
  if (!acceptor.open(endpoint.protocol(), ec)) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"proxy: cannot listen on 127.0.0.1: " + ec.message()};
  impl.port = acceptor.local_endpoint(ec).port();
  if (ec) return Error{"proxy: cannot read the listening port: " + ec.message()};
  asio::co_spawn(*impl.io, accept_loop(impl, acceptor, impl.tcp_pending, detail::serve_tcp),
                 ignore_exception);
  return {};
}

#if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
Status listen_unix(Proxy::Impl& impl, const std::string& path) {
  using Local = asio::local::stream_protocol;
  boost::system::error_code ec;
  Local::acceptor& acceptor = impl.unix_acceptor.emplace(*impl.io);
  // bind() refuses an existing path: the proxy never unlinks a file it did not create.
  if (!acceptor.open(Local(), ec)) acceptor.bind(Local::endpoint(path), ec);
  if (ec) return Error{"proxy: cannot bind unix socket " + path + ": " + ec.message()};
  impl.unix_path = path;
  // Owner only; the per-run credential is still required on this socket.
  ::chmod(path.c_str(), S_IRUSR | S_IWUSR);
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"proxy: cannot listen on unix socket " + path + ": " + ec.message()};
  asio::co_spawn(*impl.io, accept_loop(impl, acceptor, impl.unix_pending, detail::serve_unix),
                 ignore_exception);
  return {};
}
#endif

}  // namespace

namespace detail {

bool RefusalRecorder::record(const Refusal& refusal, const Limits& limits) {
  ++log_.total;
  // Credential refusals have their own budget: any local user can cause them, and they must
  // not push the run's own refusals out of the entries.
  const bool credential = refusal.rule == kBadCredential;
  std::size_t& kept = credential ? credential_entries_ : rule_entries_;
  const std::size_t budget =
      credential ? limits.max_credential_refusal_entries : limits.max_refusal_entries;
  if (kept < budget) {
    ++kept;
    log_.entries.push_back(refusal);
    return true;
  }
  auto same_host = [&](const HostCount& c) { return c.host == refusal.host; };
  auto it = std::find_if(log_.omitted_by_host.begin(), log_.omitted_by_host.end(), same_host);
  if (it != log_.omitted_by_host.end()) {
    ++it->count;
  } else if (log_.omitted_by_host.size() < limits.max_refusal_hosts) {
    log_.omitted_by_host.push_back({refusal.host, 1});
  } else {
    ++log_.omitted_other_hosts;
  }
  return false;
}

RefusalLog RefusalRecorder::snapshot() const {
  RefusalLog out = log_;
  std::stable_sort(out.omitted_by_host.begin(), out.omitted_by_host.end(),
                   [](const HostCount& a, const HostCount& b) { return a.count > b.count; });
  return out;
}

}  // namespace detail

void Proxy::Impl::refuse(const Refusal& refusal) {
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    kept = refusals.record(refusal, options.limits);
  }
  if (kept && options.on_refusal) options.on_refusal(refusal);
}

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Proxy::~Proxy() { stop(); }

Result<std::unique_ptr<Proxy>> Proxy::start(Options options) {
  if (!options.listen_tcp && options.unix_socket_path.empty())
    return Error{"proxy: neither a TCP port nor a unix socket was asked for"};
  auto impl = std::make_unique<Impl>(std::move(options));
  impl->token = random_token();
  impl->io.emplace(1);
  std::unique_ptr<Proxy> proxy(new Proxy(std::move(impl)));
  Impl& in = *proxy->impl_;
  if (in.options.listen_tcp) {
    Status status = listen_tcp(in);
    if (!status) return status.failure();
  }
  if (!in.options.unix_socket_path.empty()) {
#if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
    Status status = listen_unix(in, in.options.unix_socket_path);
    if (!status) return status.failure();
#else
    return Error{"proxy: unix sockets are not supported on this platform"};
#endif
  }
#if !defined(_WIN32)
  // The proxy's thread blocks every signal (it inherits the mask at creation): a
  // process-directed signal must reach the thread that waits for it. Otherwise SIGCHLD of a
  // backend's child (e.g. bwrap, waited for through a signalfd) could be taken here and
  // discarded, and sbx would wait for it forever; the same holds for forwarded signals.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
#endif
  try {
    in.thread = std::thread([&in] { in.io->run(); });
  } catch (const std::system_error& e) {
#if !defined(_WIN32)
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
#endif
    return Error{std::string("proxy: cannot start its thread: ") + e.what()};
  }
#if !defined(_WIN32)
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
#endif
  return proxy;
}

void Proxy::stop() {
  Impl& in = *impl_;
  if (in.stopped) return;
  in.stopped = true;
  in.io->stop();
  if (in.thread.joinable()) in.thread.join();
  // Closing the listeners and then destroying the io_context destroys every suspended session,
  // which closes its sockets: nothing outlives the command.
  in.tcp_acceptor.reset();
#if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
  in.unix_acceptor.reset();
#endif
  in.io.reset();
#if !defined(_WIN32)
  if (!in.unix_path.empty()) ::unlink(in.unix_path.c_str());
#endif
}

std::uint16_t Proxy::port() const { return impl_->port; }
const std::string& Proxy::unix_socket_path() const { return impl_->unix_path; }
const std::string& Proxy::user() const { return impl_->user; }
const std::string& Proxy::token() const { return impl_->token; }

std::string Proxy::url(std::string_view scheme, std::uint16_t port) const {
  return std::string(scheme) + "://" + impl_->user + ":" + impl_->token +
         "@127.0.0.1:" + std::to_string(port);
}

std::vector<Refusal> Proxy::refusals() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->refusals.snapshot().entries;
}

RefusalLog Proxy::refusal_log() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->refusals.snapshot();
}

std::size_t Proxy::active_connections() const { return impl_->active.load(); }

std::vector<std::string> proxy_environment(const Proxy& proxy, std::uint16_t port) {
  std::string http = proxy.url("http", port);
  std::string socks = proxy.url("socks5h", port);
  // Both spellings: curl reads lower-case http_proxy only, most other tools the upper case.
  // NO_PROXY is set empty so a host value such as "localhost" cannot send loopback traffic
  // around the proxy (inside the sandbox only the proxy is reachable anyway).
  return {"HTTP_PROXY=" + http, "http_proxy=" + http, "HTTPS_PROXY=" + http, "https_proxy=" + http,
          "ALL_PROXY=" + socks, "all_proxy=" + socks, "NO_PROXY=",           "no_proxy="};
}

}  // namespace sbx::proxy
