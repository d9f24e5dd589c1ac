// Internals of the filtering proxy shared by proxy_server.cpp and proxy_session.cpp: the proxy's
// state (Proxy::Impl) and the per-connection coroutine entry points. Boost.Asio, one thread.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sbx/core/proxy.hpp"

namespace sbx::proxy {

class Proxy::Impl {
 public:
  explicit Impl(Options opts) : options(std::move(opts)) {}

  // Records a refusal and tells the caller's callback. Called on the proxy thread only.
  void refuse(Refusal refusal);

  Options options;
  std::string user = "sbx";
  std::string token;
  std::uint16_t port = 0;
  std::string unix_path;
  std::atomic<std::size_t> active{0};
  mutable std::mutex mutex;
  std::vector<Refusal> refusals;
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

// Serves one client connection until it is done, refused, timed out or the proxy stops.
boost::asio::awaitable<void> serve_tcp(Proxy::Impl& proxy, boost::asio::ip::tcp::socket client);
#if defined(BOOST_ASIO_HAS_LOCAL_SOCKETS)
boost::asio::awaitable<void> serve_unix(Proxy::Impl& proxy,
                                        boost::asio::local::stream_protocol::socket client);
#endif

}  // namespace detail
}  // namespace sbx::proxy
