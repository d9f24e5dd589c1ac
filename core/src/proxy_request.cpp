// Starting the filtering proxy for one sandboxed command (see start_for_request in proxy.hpp).
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#if !defined(_WIN32)
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <spdlog/spdlog.h>

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

// Starts the proxy with `options` (domains filled in here) and points the request at it.
Result<std::unique_ptr<Proxy>> start_with(TransformRequest& request, Options options) {
  const NetworkPolicy& network = request.policy.network;
  if (network.mode != NetworkMode::kProxy)
    return Error{"proxy: the policy's network mode is not \"proxy\""};
  // The command may reach exactly one port: this proxy's. A port the policy names would reach a
  // backend as if it were sbx's proxy (under Landlock a connect rule for that port on every
  // address), with nothing of sbx's filtering what goes through it.
  if (!network.proxy_ports.empty()) return Error{policy_ports_refusal(network.proxy_ports)};
  options.allowed_domains = network.allowed_domains;
  options.denied_domains = network.denied_domains;
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

#if !defined(_WIN32)
// A fresh directory only this user can enter (mkdtemp creates it 0700 and never reuses a name).
Result<std::string> make_private_directory(const std::string& parent) {
  std::string pattern = parent + "/sbx-proxy-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr)
    return Error{"proxy: cannot create a private directory under " + parent + ": " +
                 std::strerror(errno)};
  return std::string(buffer.data());
}
#endif

}  // namespace

std::string private_runtime_parent() {
#if defined(_WIN32)
  return {};
#else
  struct stat st {};
  const std::string run_user = "/run/user/" + std::to_string(::geteuid());
  if (::lstat(run_user.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
      (st.st_mode & 077) == 0)
    return run_user;
  if (::geteuid() == 0 && ::lstat("/run", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
      (st.st_mode & 022) == 0)
    return "/run";
  return "/tmp";
#endif
}

std::string policy_ports_refusal(const std::vector<std::uint16_t>& ports) {
  std::string list;
  for (std::uint16_t port : ports) list += (list.empty() ? "" : ", ") + std::to_string(port);
  return "network.proxy_ports [" + list +
         "] is set by the policy, but in network mode proxy a command reaches only sbx's own "
         "filtering proxy, started for each run on a port of its own, never a port a policy "
         "names (nothing of sbx's would filter it, and under Landlock the port would be open on "
         "every address): remove proxy_ports from the policy";
}

Result<std::unique_ptr<Proxy>> start_for_request(TransformRequest& request,
                                                 std::function<void(const Refusal&)> on_refusal) {
  Options options;
  options.on_refusal = std::move(on_refusal);
  return start_with(request, std::move(options));
}

Result<std::unique_ptr<RunProxy>> RunProxy::start(TransformRequest& request,
                                                  std::function<void(const Refusal&)> on_refusal,
                                                  const std::string& parent) {
  Options options;
  options.on_refusal = std::move(on_refusal);
  std::string directory;
#if !defined(_WIN32)
  Result<std::string> made = make_private_directory(parent);
  if (!made) return Error{made.error()};
  directory = *made;
  // The socket's path must fit sockaddr_un (108 bytes); mkdtemp under a short parent does.
  options.unix_socket_path = directory + "/proxy.sock";
#else
  (void)parent;
#endif
  Result<std::unique_ptr<Proxy>> proxy = start_with(request, std::move(options));
  if (!proxy) {
#if !defined(_WIN32)
    ::rmdir(directory.c_str());
#endif
    return Error{proxy.error()};
  }
  request.proxy_socket = (*proxy)->unix_socket_path();
  // Never the credential (nor the URLs that carry it) in a log line.
  spdlog::debug("proxy: started for this run on 127.0.0.1:{}{}{} (credential not logged)",
                (*proxy)->port(), request.proxy_socket.empty() ? "" : " and ",
                request.proxy_socket);
  return std::unique_ptr<RunProxy>(new RunProxy(std::move(*proxy), std::move(directory)));
}

bool RunProxy::serves(const TransformRequest& request) const {
  const NetworkPolicy& network = request.policy.network;
  return network.mode == NetworkMode::kProxy && network.proxy_ports.size() == 1 &&
         network.proxy_ports.front() == proxy_->port() &&
         request.proxy_socket == proxy_->unix_socket_path();
}

RunProxy::~RunProxy() {
  proxy_->stop();  // removes the socket
#if !defined(_WIN32)
  if (!directory_.empty()) ::rmdir(directory_.c_str());
#endif
}

std::string redact(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3))
    text.replace(at, secret.size(), "***");
  return text;
}

ExecPlan redact_plan(ExecPlan plan, const RunProxy* run_proxy) {
  if (run_proxy == nullptr) return plan;
  const std::string& token = run_proxy->proxy().token();
  for (std::string& arg : plan.argv) arg = redact(arg, token);
  for (std::string& entry : plan.env) entry = redact(entry, token);
  for (std::string& note : plan.notes) note = redact(note, token);
  return plan;
}

std::string describe(const Refusal& refusal) {
  const std::string host = refusal.host.empty() ? "?" : refusal.host;
  return host + ":" + std::to_string(refusal.port) + " (" + refusal.protocol +
         ") refused: " + refusal.rule;
}

}  // namespace sbx::proxy
