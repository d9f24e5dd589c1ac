// Starting the filtering proxy for one sandboxed command (see start_for_request in proxy.hpp).
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if !defined(_WIN32)
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#endif

#include <spdlog/spdlog.h>

#include "sbx/core/proxy.hpp"
#include "sbx/core/runtime.hpp"
#if !defined(_WIN32)
#include "sbx/sdk/private_state.hpp"
#endif

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

// GIT_SSH_COMMAND for network mode proxy (issue #35 point 5): ssh has no proxy of its own, and
// in this mode sbx's proxy is the only way out, so ssh is given sbx-stage2 as its ProxyCommand,
// which asks the proxy for a CONNECT tunnel with the run's credential (stage2/proxy_connect.hpp).
// The caller's own GIT_SSH_COMMAND keeps its options, the ProxyCommand appended (ssh takes the
// first value of an option: one the caller gave wins over ours, and ours over ~/.ssh/config).
// None where there is no sbx-stage2 (Windows) or its path would need quoting beyond single
// quotes.
std::optional<std::string> git_ssh_command(const std::vector<std::string>& env) {
  const Result<InstallLayout> layout = install_layout();
  if (!layout.ok() || layout->stage2_path.empty()) return std::nullopt;
  const std::string& helper = layout->stage2_path;
  const bool plain = std::all_of(helper.begin(), helper.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '/' || c == '.' || c == '_' ||
           c == '-' || c == '+';
  });
  if (!plain) return std::nullopt;
  std::string ssh = "ssh";
  constexpr std::string_view kName = "GIT_SSH_COMMAND=";
  for (const std::string& entry : env) {
    if (entry.compare(0, kName.size(), kName) == 0 && entry.size() > kName.size())
      ssh = entry.substr(kName.size());
  }
  return std::string(kName) + ssh + " -o ProxyCommand=\"'" + helper + "' --proxy-connect %h %p\"";
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
  if (std::optional<std::string> git_ssh = git_ssh_command(request.env)) {
    std::erase_if(request.env, [](const std::string& entry) {
      return entry.compare(0, 16, "GIT_SSH_COMMAND=") == 0;
    });
    env.push_back(std::move(*git_ssh));
  }
  request.env.insert(request.env.end(), env.begin(), env.end());
  // The proxy's port is the only destination the backend lets the command reach.
  request.policy.network.proxy_ports = {port};
  return proxy;
}

#if !defined(_WIN32)
constexpr std::string_view kDirectoryPrefix = "sbx-proxy-";
constexpr std::string_view kSocketName = "proxy.sock";

// True if `fd` is still the directory named `path` (a sweeper may have removed it meanwhile).
bool still_named(int fd, const std::string& path) {
  struct stat held {};
  struct stat named {};
  return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

// A fresh directory only this user can enter (mkdtemp creates it 0700 and never reuses a name),
// held with an exclusive flock for the whole run: the lock is what tells a later run that this
// directory is still in use (see sweep_stale_directories). Returns the path and the lock's fd.
Result<std::pair<std::string, int>> make_private_directory(const std::string& parent) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string pattern = parent + "/" + std::string(kDirectoryPrefix) + "XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr)
      return Error{"proxy: cannot create a private directory under " + parent + ": " +
                   std::strerror(errno)};
    const std::string directory(buffer.data());
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    // Locked before anything is put in it; a sweeper that took it first (it was empty and
    // unlocked for a moment) has removed it: start over with a new name.
    if (fd >= 0 && ::flock(fd, LOCK_EX) == 0 && still_named(fd, directory))
      return std::make_pair(directory, fd);
    if (fd >= 0) ::close(fd);
  }
  return Error{"proxy: cannot create and lock a private directory under " + parent};
}

// "sbx-proxy-" and mkdtemp's six characters.
bool has_our_name(const std::string& name) {
  if (name.size() != kDirectoryPrefix.size() + 6 || name.rfind(kDirectoryPrefix, 0) != 0)
    return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(kDirectoryPrefix.size()),
                     name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

// Removes `directory` if it is a run's private directory whose run has ended without cleaning
// up (sbx killed): ours by name, owner and mode, not locked by a live run, holding nothing but
// the socket. Anything else is left alone.
void remove_if_stale(const std::string& directory) {
  struct stat st {};
  if (::lstat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 07777) != 0700)
    return;
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && still_named(fd, directory)) {
    struct stat socket_st {};
    const std::string socket_name(kSocketName);
    if (::fstatat(fd, socket_name.c_str(), &socket_st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISSOCK(socket_st.st_mode))
      ::unlinkat(fd, socket_name.c_str(), 0);
    ::rmdir(directory.c_str());  // fails, and keeps it, if anything else is inside
  }
  ::close(fd);
}
#endif

}  // namespace

Result<std::string> private_runtime_parent() {
#if defined(_WIN32)
  return std::string();
#else
  // sbx's one choice of a per-user state directory: the runtime directory, else ~/.cache/sbx,
  // never /tmp (sbx/sdk/private_state.hpp, state_dir).
  Result<std::string> dir = private_state::state_dir(private_state::current_sources(), "proxy");
  if (!dir.ok())
    return Error{"no private directory for the proxy's socket: " + dir.error() +
                 "; sbx never puts it in a shared directory such as /tmp"};
  return dir;
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

void sweep_stale_directories(const std::string& parent) {
#if defined(_WIN32)
  (void)parent;
#else
  std::vector<std::string> candidates;
  if (DIR* dir = ::opendir(parent.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      if (has_our_name(entry->d_name)) candidates.push_back(parent + "/" + entry->d_name);
    }
    ::closedir(dir);
  }
  for (const std::string& candidate : candidates) remove_if_stale(candidate);
#endif
}

Result<std::unique_ptr<Proxy>> start_for_request(TransformRequest& request,
                                                 std::function<void(const Refusal&)> on_refusal) {
  Options options;
  options.on_refusal = std::move(on_refusal);
  return start_with(request, std::move(options));
}

Result<std::unique_ptr<RunProxy>> RunProxy::start(TransformRequest& request,
                                                  std::function<void(const Refusal&)> on_refusal,
                                                  std::optional<std::string> parent_dir) {
  Result<std::string> parent =
      parent_dir ? Result<std::string>(std::move(*parent_dir)) : private_runtime_parent();
  if (!parent.ok()) return parent.failure();
  Options options;
  options.on_refusal = std::move(on_refusal);
  std::string directory;
  int lock = -1;
#if !defined(_WIN32)
  // unix(7): sun_path holds 108 bytes with the terminating NUL. A deep home (~/.cache/sbx/proxy)
  // can exceed it; refused here with what to do rather than as a bind error.
  const std::size_t socket_length =
      parent->size() + std::string("/sbx-proxy-XXXXXX/").size() + kSocketName.size();
  if (socket_length >= sizeof(sockaddr_un{}.sun_path))
    return Error{"the proxy's socket under '" + *parent + "' would be " +
                 std::to_string(socket_length) +
                 " bytes long, more than a unix socket address holds (107); set XDG_RUNTIME_DIR "
                 "or XDG_CACHE_HOME to a shorter private directory"};
  // What killed runs left here goes first (a SIGKILLed sbx cannot remove its directory).
  sweep_stale_directories(*parent);
  Result<std::pair<std::string, int>> made = make_private_directory(*parent);
  if (!made) return made.failure();
  directory = made->first;
  lock = made->second;
  // The socket's path must fit sockaddr_un (108 bytes); mkdtemp under a short parent does.
  options.unix_socket_path = directory + "/proxy.sock";
#else
  (void)parent;
#endif
  Result<std::unique_ptr<Proxy>> proxy = start_with(request, std::move(options));
  if (!proxy) {
#if !defined(_WIN32)
    ::rmdir(directory.c_str());
    ::close(lock);
#endif
    return proxy.failure();
  }
  request.proxy_socket = (*proxy)->unix_socket_path();
  // Never the credential (nor the URLs that carry it) in a log line.
  spdlog::debug("proxy: started for this run on 127.0.0.1:{}{}{} (credential not logged)",
                (*proxy)->port(), request.proxy_socket.empty() ? "" : " and ",
                request.proxy_socket);
  return std::unique_ptr<RunProxy>(new RunProxy(std::move(*proxy), std::move(directory), lock));
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
  if (lock_ >= 0) ::close(lock_);  // after the rmdir: a sweeper never sees it unlocked
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
