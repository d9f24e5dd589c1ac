// proxy.hpp's Proxy on Windows: the counterpart of server.cpp, selected by
// core/cross/libsbx.cmake. Network mode proxy is refused there with the reason: sbx's filtering
// proxy (Boost.Asio) is not built for Windows, and the windows backend has no mechanism that
// confines a command to one loopback port (its probe does not claim proxy_network). A run of
// such a policy therefore never starts, rather than starting with proxy variables that nothing
// enforces.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sbx/core/proxy.hpp"

namespace sbx::proxy {

class Proxy::Impl {
 public:
  std::string empty;
};

Proxy::Proxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Proxy::~Proxy() = default;

Result<std::unique_ptr<Proxy>> Proxy::start(Options /*options*/) {
  return Error{
      "network mode proxy is not available on Windows: sbx's filtering proxy is not "
      "built for Windows and no Windows mechanism here confines a command to its "
      "port; use network mode restricted (no network) or full"};
}

void Proxy::stop() {}
std::uint16_t Proxy::port() const { return 0; }
const std::string& Proxy::unix_socket_path() const { return impl_->empty; }
const std::string& Proxy::user() const { return impl_->empty; }
const std::string& Proxy::token() const { return impl_->empty; }
std::string Proxy::url(std::string_view /*scheme*/, std::uint16_t /*port*/) const { return {}; }
std::vector<Refusal> Proxy::refusals() const { return {}; }
RefusalLog Proxy::refusal_log() const { return {}; }
std::size_t Proxy::active_connections() const { return 0; }

std::vector<std::string> proxy_environment(const Proxy& /*proxy*/, std::uint16_t /*port*/) {
  return {};
}

}  // namespace sbx::proxy
