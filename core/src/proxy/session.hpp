// Internals of the filtering proxy shared by server.cpp and session.cpp: the proxy's
// state (Proxy::Impl) and the per-connection coroutine entry points. Boost.Asio, one thread.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sbx/core/proxy.hpp"

namespace sbx::proxy {

namespace detail {

// The rule of a refusal for a missing or wrong credential.
inline constexpr std::string_view kBadCredential = "missing or wrong proxy credential";

// A client connection that has not presented the credential yet.
class PendingClient {
 public:
  // Closes the connection now and leaves its pool.
  virtual void evict() = 0;

 protected:
  ~PendingClient() = default;
};

// One listener's unauthenticated connections, oldest first (proxy thread only).
using PendingPool = std::list<PendingClient*>;

// The bounded refusal log (see Limits). Not thread-safe: Proxy::Impl guards it.
class RefusalRecorder {
 public:
  // Counts the refusal; true if it is also kept as an entry.
  bool record(const Refusal& refusal, const Limits& limits);
  // The log with omitted_by_host in its documented order.
  RefusalLog snapshot() const;

 private:
  RefusalLog log_;  // omitted_by_host in first-refused order here
  std::size_t rule_entries_ = 0;
  std::size_t credential_entries_ = 0;
};

}  // namespace detail

class Proxy::Impl {
 public:
  explicit Impl(Options opts) : options(std::move(opts)) {}

  // Records a refusal and tells the caller's callback if it is kept as an entry. Called on the
  // proxy thread only.
  void refuse(const Refusal& refusal);

  Options options;
  std::string user = "sbx";
  std::string token;
  std::uint16_t port = 0;
  std::string unix_path;
  std::atomic<std::size_t> active{0};  // every client connection, authenticated or not
  std::size_t authenticated = 0;       // proxy thread only
  // Separate quotas per listener: the unix socket (reachable by this user only) keeps its own
  // when other local users flood the TCP port.
  detail::PendingPool tcp_pending;
  detail::PendingPool unix_pending;
  mutable std::mutex mutex;
  detail::RefusalRecorder refusals;  // guarded by mutex
  bool stopped = false;
  // Declared after everything a session touches: destroying the io_context destroys suspended
  // session coroutines, whose destructors still update `active`.
  std::optional<boost::asio::io_context> io;
  std::optional<boost::asio::ip::tcp::acceptor> tcp_acceptor;
#if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
  std::optional<boost::asio::local::stream_protocol::acceptor> unix_acceptor;
#endif
  std::thread thread;
};

namespace detail {

// Serves one client connection until it is done, refused, timed out, evicted or the proxy
// stops. The connection joins `pool` at once (before this returns) and leaves it when it
// presents the credential.
void serve_tcp(Proxy::Impl& proxy, PendingPool& pool, boost::asio::ip::tcp::socket client);
#if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
void serve_unix(Proxy::Impl& proxy, PendingPool& pool,
                boost::asio::local::stream_protocol::socket client);
#endif

}  // namespace detail
}  // namespace sbx::proxy
