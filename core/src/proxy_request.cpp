// Starting the filtering proxy for one sandboxed command (see start_for_request in proxy.hpp).
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "sbx/core/proxy.hpp"

namespace sbx::proxy {
namespace {

// Variables that would point the command at another proxy or exempt hosts from ours.
bool is_proxy_variable(std::string_view entry) {
  static constexpr std::array<std::string_view, 5> kNames = {"http_proxy", "https_proxy",
                                                             "all_proxy", "no_proxy", "ftp_proxy"};
  std::string name(entry.substr(0, entry.find('=')));
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

}  // namespace

Result<std::unique_ptr<Proxy>> start_for_request(TransformRequest& request,
                                                 std::function<void(const Refusal&)> on_refusal) {
  const NetworkPolicy& network = request.policy.network;
  if (network.mode != NetworkMode::kProxy)
    return Error{"proxy: the policy's network mode is not \"proxy\""};
  Options options;
  options.allowed_domains = network.allowed_domains;
  options.denied_domains = network.denied_domains;
  options.on_refusal = std::move(on_refusal);
  Result<std::unique_ptr<Proxy>> proxy = Proxy::start(std::move(options));
  if (!proxy) return proxy;
  std::uint16_t port = (*proxy)->port();
  std::erase_if(request.env, is_proxy_variable);
  std::vector<std::string> env = proxy_environment(**proxy, port);
  request.env.insert(request.env.end(), env.begin(), env.end());
  // The proxy's port is the only destination the backend lets the command reach.
  request.policy.network.proxy_ports = {port};
  return proxy;
}

}  // namespace sbx::proxy
