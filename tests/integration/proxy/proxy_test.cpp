// The filtering proxy against real loopback servers: allowed and denied destinations (HTTP,
// CONNECT, SOCKS5), the credential, limits under floods, the refusal log and a clean stop. Every
// destination is 127.0.0.1; names are resolved by an injected map, so no test ever looks up or
// reaches anything but loopback.
#include "sbx/core/proxy.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "loopback.hpp"

// The tests build Options with designated initializers; the fields left out keep their defaults
// on purpose, which g++ 12 would otherwise warn about.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace sbx::proxy {
namespace {

using namespace sbx::proxy::testing;

std::string base64(std::string_view in) {
  static constexpr char kTable[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (unsigned{static_cast<unsigned char>(in[i])} << 16) |
                 (unsigned{static_cast<unsigned char>(in[i + 1])} << 8) |
                 unsigned{static_cast<unsigned char>(in[i + 2])};
    for (int s = 18; s >= 0; s -= 6) out.push_back(kTable[(v >> s) & 63]);
  }
  if (i < in.size()) {
    unsigned v = unsigned{static_cast<unsigned char>(in[i])} << 16;
    if (i + 1 < in.size()) v |= unsigned{static_cast<unsigned char>(in[i + 1])} << 8;
    out.push_back(kTable[(v >> 18) & 63]);
    out.push_back(kTable[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kTable[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

// A resolver that knows only the names a test gives it; anything else fails (never the system
// resolver, so no external lookups).
Resolver map_resolver(std::map<std::string, std::vector<std::string>> names) {
  return [names = std::move(names)](const std::string& host) -> Result<std::vector<std::string>> {
    auto it = names.find(host);
    if (it == names.end()) return Error{"unknown test name " + host};
    return it->second;
  };
}

class ProxyTest : public ::testing::Test {
 protected:
  std::unique_ptr<Proxy> start(Options options) {
    if (!options.resolver) options.resolver = map_resolver({});
    Result<std::unique_ptr<Proxy>> proxy = Proxy::start(std::move(options));
    EXPECT_TRUE(proxy.ok()) << (proxy.ok() ? "" : proxy.error());
    return proxy.ok() ? std::move(*proxy) : nullptr;
  }
  std::string auth(const Proxy& p) {
    return "Proxy-Authorization: Basic " + base64(p.user() + ":" + p.token()) + "\r\n";
  }
  // One CONNECT exchange; returns the response head, and on 200 also the tunneled answer.
  std::string connect_and_get(const Proxy& p, const std::string& target, const std::string& extra) {
    int fd = connect_loopback(p.port());
    EXPECT_GE(fd, 0);
    send_all(fd, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + extra + "\r\n");
    std::string head = read_head(fd);
    if (head.find(" 200 ") != std::string::npos) {
      send_all(fd, "GET /tunneled HTTP/1.0\r\n\r\n");
      head += read_all(fd);
    } else {
      head += read_all(fd);
    }
    ::close(fd);
    return head;
  }
  std::string local(const CountingServer& s) { return "127.0.0.1:" + std::to_string(s.port()); }
};

TEST_F(ProxyTest, ConnectToAllowedHostPortAnswers) {
  CountingServer server;
  auto p = start({.allowed_domains = {local(server)}});
  ASSERT_TRUE(p);
  std::string out = connect_and_get(*p, local(server), auth(*p));
  EXPECT_NE(out.find("HTTP/1.1 200 Connection established"), std::string::npos) << out;
  EXPECT_NE(out.find("hello GET /tunneled HTTP/1.0"), std::string::npos) << out;
  EXPECT_EQ(server.accepts(), 1);
  EXPECT_TRUE(p->refusals().empty());
}

TEST_F(ProxyTest, PlainHttpAbsoluteFormIsForwardedWithoutTheCredential) {
  CountingServer server;
  std::string name = "localhost:" + std::to_string(server.port());
  auto p =
      start({.allowed_domains = {name}, .resolver = map_resolver({{"localhost", {"127.0.0.1"}}})});
  ASSERT_TRUE(p);
  int fd = connect_loopback(p->port());
  send_all(fd, "GET http://LOCALHOST.:" + std::to_string(server.port()) +
                   "/x?y HTTP/1.1\r\nHost: elsewhere.test\r\n" + auth(*p) +
                   "Proxy-Connection: keep-alive\r\n\r\n");
  std::string out = read_all(fd);
  ::close(fd);
  EXPECT_NE(out.find("hello GET /x?y HTTP/1.1"), std::string::npos) << out;
  std::string seen = server.last_request();
  EXPECT_NE(seen.find("Host: localhost:" + std::to_string(server.port()) + "\r\n"),
            std::string::npos)
      << seen;
  EXPECT_NE(seen.find("Connection: close\r\n"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("Proxy-"), std::string::npos) << seen;
  EXPECT_EQ(seen.find(p->token()), std::string::npos) << seen;
}

TEST_F(ProxyTest, UnlistedDestinationIsRefusedAndItsServerSeesNothing) {
  CountingServer allowed;
  CountingServer unlisted;
  auto p = start({.allowed_domains = {local(allowed)}});
  ASSERT_TRUE(p);
  std::string out = connect_and_get(*p, local(unlisted), auth(*p));
  EXPECT_NE(out.find("HTTP/1.1 403 Forbidden"), std::string::npos) << out;
  EXPECT_NE(out.find("X-Sbx-Proxy-Refused: not in allowed_domains"), std::string::npos) << out;
  int fd = connect_loopback(p->port());
  send_all(fd, "GET http://" + local(unlisted) + "/ HTTP/1.1\r\n" + auth(*p) + "\r\n");
  EXPECT_NE(read_all(fd).find(" 403 "), std::string::npos);
  ::close(fd);
  EXPECT_EQ(unlisted.accepts(), 0);
  std::vector<Refusal> expected = {
      {"127.0.0.1", unlisted.port(), "http-connect", "not in allowed_domains"},
      {"127.0.0.1", unlisted.port(), "http", "not in allowed_domains"}};
  EXPECT_EQ(p->refusals(), expected);
}

TEST_F(ProxyTest, DeniedWinsOverAllowedAndTheCallbackHearsIt) {
  CountingServer server;
  std::vector<Refusal> heard;
  std::mutex mutex;
  auto p = start({.allowed_domains = {local(server)},
                  .denied_domains = {"127.0.0.1"},
                  .on_refusal = [&](const Refusal& r) {
                    std::lock_guard<std::mutex> lock(mutex);
                    heard.push_back(r);
                  }});
  ASSERT_TRUE(p);
  std::string out = connect_and_get(*p, local(server), auth(*p));
  EXPECT_NE(out.find(" 403 "), std::string::npos) << out;
  EXPECT_NE(out.find("denied_domains: 127.0.0.1"), std::string::npos) << out;
  EXPECT_EQ(server.accepts(), 0);
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].rule, "denied_domains: 127.0.0.1");
  EXPECT_EQ(heard[0].port, server.port());
}

TEST_F(ProxyTest, NamesResolvingToPrivateAddressesNeedAnExactHostPort) {
  CountingServer server;
  std::string port = std::to_string(server.port());
  auto names = map_resolver({{"a.corp.test", {"127.0.0.1"}},
                             {"b.corp.test", {"127.0.0.1"}},
                             {"meta.corp.test", {"169.254.169.254"}},
                             // Public first, then loopback: a rebinding-style mixed answer.
                             {"mixed.corp.test", {"93.184.216.34", "127.0.0.1"}}});
  auto p = start({.allowed_domains = {"*.corp.test", "b.corp.test:" + port}, .resolver = names});
  ASSERT_TRUE(p);
  for (const char* host : {"a.corp.test", "mixed.corp.test"}) {
    std::string out = connect_and_get(*p, std::string(host) + ":" + port, auth(*p));
    EXPECT_NE(out.find(" 403 "), std::string::npos) << host << "\n" << out;
    EXPECT_NE(out.find("resolves to loopback address 127.0.0.1"), std::string::npos) << out;
  }
  std::string meta = connect_and_get(*p, "meta.corp.test:80", auth(*p));
  EXPECT_NE(meta.find("resolves to cloud metadata address 169.254.169.254"), std::string::npos)
      << meta;
  EXPECT_EQ(server.accepts(), 0);
  std::string out = connect_and_get(*p, "b.corp.test:" + port, auth(*p));
  EXPECT_NE(out.find("hello GET /tunneled"), std::string::npos) << out;
  EXPECT_EQ(server.accepts(), 1);
}

TEST_F(ProxyTest, MissingOrWrongCredentialIsRefused) {
  CountingServer server;
  auto p = start({.allowed_domains = {local(server)}});
  ASSERT_TRUE(p);
  const std::string wrong_token = std::string(p->token().size(), 'a');
  for (const std::string& extra :
       {std::string(), "Proxy-Authorization: Basic " + base64("sbx:" + wrong_token) + "\r\n",
        "Proxy-Authorization: Basic " + base64("other:" + p->token()) + "\r\n",
        "Proxy-Authorization: Bearer " + p->token() + "\r\n"}) {
    std::string out = connect_and_get(*p, local(server), extra);
    EXPECT_NE(out.find("HTTP/1.1 407 "), std::string::npos) << out;
    EXPECT_NE(out.find("Proxy-Authenticate: Basic"), std::string::npos) << out;
  }
  EXPECT_EQ(server.accepts(), 0);
  ASSERT_EQ(p->refusals().size(), 4u);
  EXPECT_EQ(p->refusals()[0].rule, "missing or wrong proxy credential");
}

// SOCKS5 helpers: greeting + RFC 1929 auth, then a CONNECT; returns the reply code or -1.
int socks_connect(int fd, const std::string& user, const std::string& pass, const std::string& host,
                  std::uint16_t port) {
  send_all(fd, std::string("\x05\x01\x02", 3));
  if (read_n(fd, 2) != std::string("\x05\x02", 2)) return -1;
  std::string auth = "\x01" + std::string(1, static_cast<char>(user.size())) + user +
                     std::string(1, static_cast<char>(pass.size())) + pass;
  send_all(fd, auth);
  std::string status = read_n(fd, 2);
  if (status != std::string("\x01\x00", 2)) return status.size() == 2 ? 0x100 + status[1] : -1;
  std::string req("\x05\x01\x00\x03", 4);
  req += static_cast<char>(host.size());
  req += host;
  req += static_cast<char>(port >> 8);
  req += static_cast<char>(port & 0xff);
  send_all(fd, req);
  std::string reply = read_n(fd, 10);
  return reply.size() == 10 ? static_cast<unsigned char>(reply[1]) : -1;
}

TEST_F(ProxyTest, Socks5AllowedAnswersDeniedGetsRuleset0x02) {
  CountingServer allowed;
  CountingServer denied;
  auto p = start({.allowed_domains = {"ok.test:" + std::to_string(allowed.port())},
                  .resolver = map_resolver({{"ok.test", {"127.0.0.1"}}})});
  ASSERT_TRUE(p);
  int fd = connect_loopback(p->port());
  ASSERT_EQ(socks_connect(fd, p->user(), p->token(), "ok.test", allowed.port()), 0x00);
  send_all(fd, "GET /socks HTTP/1.0\r\n\r\n");
  EXPECT_NE(read_all(fd).find("hello GET /socks"), std::string::npos);
  ::close(fd);

  fd = connect_loopback(p->port());
  EXPECT_EQ(socks_connect(fd, p->user(), p->token(), "127.0.0.1", denied.port()), 0x02);
  ::close(fd);
  EXPECT_EQ(denied.accepts(), 0);
  EXPECT_EQ(allowed.accepts(), 1);
  ASSERT_EQ(p->refusals().size(), 1u);
  EXPECT_EQ(p->refusals()[0],
            (Refusal{"127.0.0.1", denied.port(), "socks5", "not in allowed_domains"}));
}

TEST_F(ProxyTest, Socks5WithoutTheCredentialIsRefused) {
  CountingServer server;
  auto p = start({.allowed_domains = {local(server)}});
  ASSERT_TRUE(p);
  int fd = connect_loopback(p->port());
  send_all(fd, std::string("\x05\x01\x00", 3));  // "no authentication" only
  EXPECT_EQ(read_n(fd, 2), std::string("\x05\xff", 2));
  ::close(fd);
  fd = connect_loopback(p->port());
  EXPECT_EQ(socks_connect(fd, p->user(), "wrong", "127.0.0.1", server.port()), 0x101);
  ::close(fd);
  EXPECT_EQ(server.accepts(), 0);
  EXPECT_EQ(p->refusals().size(), 2u);
}

TEST_F(ProxyTest, UnixSocketListenerServesAndIsRemovedOnStop) {
  CountingServer server;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sbx-proxy-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "proxy.sock").string();
  auto p =
      start({.allowed_domains = {local(server)}, .listen_tcp = false, .unix_socket_path = path});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->port(), 0);
  int fd = connect_unix(path);
  ASSERT_GE(fd, 0);
  send_all(fd, "CONNECT " + local(server) + " HTTP/1.1\r\n" + auth(*p) + "\r\n");
  EXPECT_NE(read_head(fd).find(" 200 "), std::string::npos);
  send_all(fd, "GET /unix HTTP/1.0\r\n\r\n");
  EXPECT_NE(read_all(fd).find("hello GET /unix"), std::string::npos);
  ::close(fd);
  p->stop();
  EXPECT_FALSE(std::filesystem::exists(path));
  // An existing file is never replaced.
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  Options options{.listen_tcp = false, .unix_socket_path = path};
  EXPECT_FALSE(Proxy::start(std::move(options)).ok());
  EXPECT_TRUE(std::filesystem::exists(path));
  std::filesystem::remove_all(dir);
}

TEST_F(ProxyTest, OversizedHeadGets431) {
  auto p = start({.allowed_domains = {"x.test"}});
  ASSERT_TRUE(p);
  int fd = connect_loopback(p->port());
  send_all(fd, "GET http://x.test/ HTTP/1.1\r\nA: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_NE(read_all(fd).find("HTTP/1.1 431 "), std::string::npos);
  ::close(fd);
}

TEST_F(ProxyTest, SilentClientIsDisconnectedAfterTheHandshakeTimeout) {
  auto p = start({.allowed_domains = {"x.test"},
                  .limits = {.handshake_timeout = std::chrono::milliseconds(200)}});
  ASSERT_TRUE(p);
  int fd = connect_loopback(p->port());
  send_all(fd, "CONNECT x.te");  // never finished
  auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(read_all(fd), "");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  ::close(fd);
  for (int i = 0; i < 100 && p->active_connections() != 0; ++i) usleep(10'000);
  EXPECT_EQ(p->active_connections(), 0u);
}

TEST_F(ProxyTest, AuthenticatedConnectionsOverTheLimitAreAnswered503) {
  CountingServer server;
  auto p = start({.allowed_domains = {local(server)}, .limits = {.max_connections = 4}});
  ASSERT_TRUE(p);
  const std::string request = "CONNECT " + local(server) + " HTTP/1.1\r\n" + auth(*p) + "\r\n";
  std::vector<int> tunnels;
  for (int i = 0; i < 4; ++i) {
    tunnels.push_back(connect_loopback(p->port()));
    send_all(tunnels.back(), request);
    ASSERT_NE(read_head(tunnels.back()).find(" 200 "), std::string::npos) << i;
  }
  ASSERT_EQ(p->active_connections(), 4u);
  int extra = connect_loopback(p->port());
  send_all(extra, request);
  EXPECT_NE(read_all(extra).find("HTTP/1.1 503 "), std::string::npos);
  ::close(extra);
  for (int fd : tunnels) ::close(fd);
  // A place is free again once a tunnel has gone.
  for (int i = 0; i < 100 && p->active_connections() != 0; ++i) usleep(10'000);
  std::string out = connect_and_get(*p, local(server), auth(*p));
  EXPECT_NE(out.find("hello GET /tunneled"), std::string::npos) << out;
}

// Over the quota of connections without the credential yet, the oldest is closed, not the new
// one: silent connections cannot lock out a client that sends its credential.
TEST_F(ProxyTest, UnauthenticatedOverTheQuotaLoseTheOldestPlace) {
  CountingServer server;
  auto p = start({.allowed_domains = {local(server)},
                  .limits = {.max_pending_connections = 4,
                             .auth_timeout = std::chrono::milliseconds(10'000)}});
  ASSERT_TRUE(p);
  std::vector<int> silent;
  for (int i = 0; i < 4; ++i) {
    silent.push_back(connect_loopback(p->port()));
    send_all(silent.back(), "C");  // an unfinished request
  }
  for (int i = 0; i < 100 && p->active_connections() < 4; ++i) usleep(10'000);
  ASSERT_EQ(p->active_connections(), 4u);
  const auto begin = std::chrono::steady_clock::now();
  std::string out = connect_and_get(*p, local(server), auth(*p));
  EXPECT_NE(out.find("hello GET /tunneled"), std::string::npos) << out;
  EXPECT_EQ(read_all(silent[0]), "");  // the oldest was closed to make room
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  // The three others still hold their places (once the finished tunnel is gone).
  for (int i = 0; i < 100 && p->active_connections() != 3; ++i) usleep(10'000);
  EXPECT_EQ(p->active_connections(), 3u);
  for (int fd : silent) ::close(fd);
}

TEST_F(ProxyTest, ClientWithoutTheCredentialIsClosedAfterTheAuthTimeout) {
  auto p = start(
      {.allowed_domains = {"x.test"}, .limits = {.auth_timeout = std::chrono::milliseconds(200)}});
  ASSERT_TRUE(p);
  int fd = connect_loopback(p->port());
  send_all(fd, "CONNECT x.test:443 HTTP/1.1\r\n");  // the head never ends
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(read_all(fd), "");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  ::close(fd);
  for (int i = 0; i < 100 && p->active_connections() != 0; ++i) usleep(10'000);
  EXPECT_EQ(p->active_connections(), 0u);
}

// Connections to the TCP port never take the places of the unix socket's (which only this user
// can reach, and which bwrap's relay uses).
TEST_F(ProxyTest, TheUnixSocketKeepsItsOwnQuotaWhenTheTcpPortIsFlooded) {
  CountingServer server;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sbx-proxy-quota-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "proxy.sock").string();
  auto p = start({.allowed_domains = {local(server)},
                  .unix_socket_path = path,
                  .limits = {.max_pending_connections = 2,
                             .auth_timeout = std::chrono::milliseconds(10'000)}});
  ASSERT_TRUE(p);
  int early = connect_unix(path);  // connected, credential not sent yet
  ASSERT_GE(early, 0);
  for (int i = 0; i < 100 && p->active_connections() < 1; ++i) usleep(10'000);
  std::vector<int> flood;
  for (int i = 0; i < 20; ++i) flood.push_back(connect_loopback(p->port()));
  for (int i = 0; i < 100 && p->active_connections() < 3; ++i) usleep(10'000);
  send_all(early, "CONNECT " + local(server) + " HTTP/1.1\r\n" + auth(*p) + "\r\n");
  EXPECT_NE(read_head(early).find(" 200 "), std::string::npos);
  send_all(early, "GET /unix HTTP/1.0\r\n\r\n");
  EXPECT_NE(read_all(early).find("hello GET /unix"), std::string::npos);
  ::close(early);
  for (int fd : flood) ::close(fd);
  p.reset();
  std::filesystem::remove_all(dir);
}

// Beyond the first entries, refusals are only counted, per host up to a number of hosts; those
// for a missing credential have their own small budget of entries.
TEST_F(ProxyTest, RefusalsBeyondTheFirstAreCountedPerHost) {
  std::vector<Refusal> heard;
  std::mutex mutex;
  auto p = start({.allowed_domains = {"ok.test"},
                  .limits = {.max_refusal_entries = 3,
                             .max_credential_refusal_entries = 1,
                             .max_refusal_hosts = 2},
                  .on_refusal = [&](const Refusal& r) {
                    std::lock_guard<std::mutex> lock(mutex);
                    heard.push_back(r);
                  }});
  ASSERT_TRUE(p);
  for (const char* host :
       {"a.test", "a.test", "a.test", "a.test", "b.test", "b.test", "c.test", "d.test"}) {
    std::string out = connect_and_get(*p, std::string(host) + ":443", auth(*p));
    EXPECT_NE(out.find(" 403 "), std::string::npos) << host << "\n" << out;
  }
  for (int i = 0; i < 3; ++i) {
    std::string out = connect_and_get(*p, "x.test:443", "");
    EXPECT_NE(out.find(" 407 "), std::string::npos) << out;
  }
  const RefusalLog log = p->refusal_log();
  const std::vector<Refusal> expected = {
      {"a.test", 443, "http-connect", "not in allowed_domains"},
      {"a.test", 443, "http-connect", "not in allowed_domains"},
      {"a.test", 443, "http-connect", "not in allowed_domains"},
      {"x.test", 443, "http-connect", "missing or wrong proxy credential"}};
  EXPECT_EQ(log.entries, expected);
  EXPECT_EQ(p->refusals(), expected);
  EXPECT_EQ(log.total, 11u);
  EXPECT_EQ(log.omitted_by_host, (std::vector<HostCount>{{"b.test", 2}, {"a.test", 1}}));
  EXPECT_EQ(log.omitted_other_hosts, 4u);  // c.test, d.test and x.test twice
  EXPECT_EQ(describe_omitted(log),
            "7 more refusals not listed: b.test 2, a.test 1 and 4 to other hosts");
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(heard, expected);  // the callback hears the kept ones only
}

TEST_F(ProxyTest, TwoHundredConcurrentTunnels) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < 1024) {
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 4096);
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  CountingServer server;
  auto p = start({.allowed_domains = {local(server)}});
  ASSERT_TRUE(p);
  constexpr int kClients = 200;
  std::vector<int> fds;
  for (int i = 0; i < kClients; ++i) {
    int fd = connect_loopback(p->port());
    ASSERT_GE(fd, 0) << i;
    send_all(fd, "CONNECT " + local(server) + " HTTP/1.1\r\n" + auth(*p) + "\r\n");
    fds.push_back(fd);
  }
  for (int i = 0; i < kClients; ++i) {
    ASSERT_NE(read_head(fds[static_cast<std::size_t>(i)]).find(" 200 "), std::string::npos) << i;
    send_all(fds[static_cast<std::size_t>(i)], "GET /c" + std::to_string(i) + " HTTP/1.0\r\n\r\n");
  }
  // All 200 tunnels are open at the same time: clients have not closed their side yet.
  EXPECT_EQ(p->active_connections(), static_cast<std::size_t>(kClients));
  for (int i = 0; i < kClients; ++i) {
    std::string out = read_all(fds[static_cast<std::size_t>(i)]);
    EXPECT_NE(out.find("hello GET /c" + std::to_string(i) + " "), std::string::npos) << i;
    ::close(fds[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(server.accepts(), kClients);
}

// Raises the soft descriptor limit to at least `wanted` if the hard limit allows; the new soft
// limit.
rlim_t raise_fd_limit(rlim_t wanted) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, wanted);
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

// A loopback connection whose connect() gives up after a second (SO_SNDTIMEO bounds connect on
// Linux), so a flooding thread always notices the end of the test; -1 on failure.
int connect_quickly(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  set_timeout(fd, 1);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Another local user attacks the proxy's TCP port without the credential, for a bounded time:
// one thread holds as many silent connections open as it can (up to 1500, replacing the oldest),
// another sends request after request without the credential (each one a refusal, each to a new
// host name). Meanwhile the run's own client, with the credential, makes its requests one after
// the other: every one must succeed, and the proxy must keep only a bounded number of refusals.
TEST_F(ProxyTest, HostileLocalFloodDoesNotStarveTheRunsOwnRequests) {
  if (raise_fd_limit(4096) < 4096) GTEST_SKIP() << "needs 4096 descriptors (RLIMIT_NOFILE)";
  CountingServer server;
  auto p = start({.allowed_domains = {local(server)}});
  ASSERT_TRUE(p);
  const std::uint16_t port = p->port();
  std::atomic<bool> stop{false};
  std::atomic<int> silent_opened{0};
  std::atomic<int> refused_sent{0};
  std::thread holder([&] {
    std::deque<int> held;
    while (!stop) {
      int fd = connect_quickly(port);
      if (fd >= 0) {
        held.push_back(fd);
        ++silent_opened;
      }
      if (held.size() > 1500 || (fd < 0 && !held.empty())) {
        ::close(held.front());
        held.pop_front();
      }
    }
    for (int fd : held) ::close(fd);
  });
  std::thread refuser([&] {
    for (int i = 0; !stop; ++i) {
      int fd = connect_quickly(port);
      if (fd < 0) continue;
      send_all(fd, "CONNECT h" + std::to_string(i) + ".test:443 HTTP/1.1\r\n\r\n");
      ++refused_sent;
      ::close(fd);
    }
  });
  const auto begin = std::chrono::steady_clock::now();
  // The flood is under way before the run's client starts.
  while (silent_opened < 1000 &&
         std::chrono::steady_clock::now() - begin < std::chrono::seconds(10))
    usleep(1000);
  constexpr int kRequests = 20;
  int answered = 0;
  std::string last_failure;
  std::chrono::steady_clock::duration slowest{};
  for (int i = 0; i < kRequests; ++i) {
    const auto sent = std::chrono::steady_clock::now();
    std::string out = connect_and_get(*p, local(server), auth(*p));
    slowest = std::max(slowest, std::chrono::steady_clock::now() - sent);
    if (out.find("hello GET /tunneled") != std::string::npos) {
      ++answered;
    } else {
      last_failure = out;
    }
  }
  // Keep flooding until the attacker has made thousands of connections (bounded in time).
  while (silent_opened + refused_sent < 5000 &&
         std::chrono::steady_clock::now() - begin < std::chrono::seconds(20))
    usleep(10'000);
  stop = true;
  holder.join();
  refuser.join();
  std::cerr << "flood: " << silent_opened << " silent connections, " << refused_sent
            << " requests without the credential; the run's slowest request took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count() << " ms\n";
  ASSERT_GE(silent_opened + refused_sent, 5000) << "the flood did not happen; nothing was shown";
  EXPECT_EQ(answered, kRequests) << "last failed answer: " << last_failure;
  // Memory stays bounded: 100 entries refused by a rule, 10 for the credential, counts.
  const RefusalLog log = p->refusal_log();
  EXPECT_LE(log.entries.size(), 110u);
  // Every request the proxy read was counted (some were closed unread to make room).
  EXPECT_GE(log.total, 500u);  // far more than are kept
  EXPECT_LE(log.total, static_cast<std::uint64_t>(refused_sent.load()));
  EXPECT_LE(log.omitted_by_host.size(), 32u);
  for (int i = 0; i < 300 && p->active_connections() != 0; ++i) usleep(10'000);
  EXPECT_EQ(p->active_connections(), 0u);
}

// The descriptor count once the test's own server thread has closed the connection it was
// serving (it may lag the proxy by a moment). A leak never settles, so the check stays exact.
int settled_fd_count(int expected) {
  int count = open_fd_count();
  for (int i = 0; i < 200 && count != expected; ++i) {
    usleep(10'000);
    count = open_fd_count();
  }
  return count;
}

// Mutates valid requests byte by byte (deterministic PRNG): random bytes, truncation, inserted
// CR/LF/NUL, huge lengths, SOCKS garbage. The proxy must answer or close every one, keep
// serving, and end with no session and no descriptor left.
std::string mutate(std::mt19937& rng, std::string s) {
  std::uniform_int_distribution<int> op(0, 6);
  std::uniform_int_distribution<int> byte(0, 255);
  int edits = 1 + static_cast<int>(rng() % 6);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    std::size_t at = rng() % s.size();
    switch (op(rng)) {
      case 0:
        s[at] = static_cast<char>(byte(rng));
        break;
      case 1:
        s.resize(at);
        break;
      case 2:
        s.insert(at, 1, "\r\n\0 :@[]"[rng() % 8]);
        break;
      case 3:
        s.insert(at, std::string(rng() % 3000, static_cast<char>(byte(rng))));
        break;
      case 4:
        s.erase(at, rng() % 8);
        break;
      case 5:
        s.insert(at, s.substr(at, rng() % 64));
        break;
      default:
        s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8)));
        break;
    }
  }
  return s;
}

TEST_F(ProxyTest, FuzzedRequestsNeverCrashOrLeakDescriptors) {
  CountingServer server;
  const int fds_before = open_fd_count();
  {
    auto p = start({.allowed_domains = {local(server)},
                    .limits = {.handshake_timeout = std::chrono::milliseconds(500)}});
    ASSERT_TRUE(p);
    std::string creds = auth(*p);
    const std::vector<std::string> seeds = {
        "CONNECT " + local(server) + " HTTP/1.1\r\nHost: a\r\n" + creds + "\r\n",
        "GET http://" + local(server) + "/p HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n" + creds +
            "\r\n",
        "CONNECT [::1]:1 HTTP/1.0\r\n" + creds + "\r\n",
        std::string("\x05\x01\x02\x01\x03sbx\x20", 10) + p->token() +
            std::string("\x05\x01\x00\x03\x09localhost\x01\xbb", 16),
        std::string("\x05\x02\x00\x02\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50", 14),
    };
    std::mt19937 rng(0x5b8u);
    constexpr int kCases = 3000;
    for (int i = 0; i < kCases; ++i) {
      std::string input = mutate(rng, seeds[static_cast<std::size_t>(i) % seeds.size()]);
      int fd = connect_loopback(p->port());
      ASSERT_GE(fd, 0) << "proxy stopped accepting at case " << i;
      send_all(fd, input);
      ::shutdown(fd, SHUT_WR);
      read_all(fd);
      ::close(fd);
    }
    // Still serving correctly after the storm.
    std::string out = connect_and_get(*p, local(server), creds);
    EXPECT_NE(out.find("hello GET /tunneled"), std::string::npos) << out;
    for (int i = 0; i < 300 && p->active_connections() != 0; ++i) usleep(10'000);
    EXPECT_EQ(p->active_connections(), 0u);
  }
  EXPECT_EQ(settled_fd_count(fds_before), fds_before);
}

TEST_F(ProxyTest, StopClosesOpenTunnelsAndEveryDescriptor) {
  CountingServer server;
  const int fds_before = open_fd_count();
  auto p = start({.allowed_domains = {local(server)}});
  ASSERT_TRUE(p);
  int fd = connect_loopback(p->port());
  send_all(fd, "CONNECT " + local(server) + " HTTP/1.1\r\n" + auth(*p) + "\r\n");
  ASSERT_NE(read_head(fd).find(" 200 "), std::string::npos);
  int idle = connect_loopback(p->port());  // a client that never says anything
  p.reset();                               // the command ended
  EXPECT_EQ(read_all(fd), "");             // the tunnel is gone
  EXPECT_EQ(read_all(idle), "");
  ::close(fd);
  ::close(idle);
  EXPECT_EQ(settled_fd_count(fds_before), fds_before);
}

}  // namespace
}  // namespace sbx::proxy
