// Table tests of the proxy's pure parts: destination patterns, special addresses, the HTTP head
// parser, credentials, the environment handed to a proxied command and the bounded refusal log.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proxy/http.hpp"
#include "proxy/session.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/runtime.hpp"

namespace sbx::proxy {
namespace {

struct MatchCase {
  std::string host;
  std::uint16_t port;
  std::vector<std::string> allowed;
  std::vector<std::string> denied;
  bool allowed_result;
  bool exact;
  std::string rule;
};

TEST(ProxyRules, MatchDestinationTable) {
  const std::vector<MatchCase> cases = {
      {"example.com", 443, {"example.com"}, {}, true, false, "allowed_domains: example.com"},
      {"EXAMPLE.com.", 443, {"example.com"}, {}, true, false, "allowed_domains: example.com"},
      {"example.com", 443, {"example.com:443"}, {}, true, true, "allowed_domains: example.com:443"},
      {"example.com", 80, {"example.com:443"}, {}, false, false, "not in allowed_domains"},
      // A wildcard covers subdomains only, never the apex.
      {"example.com", 443, {"*.example.com"}, {}, false, false, "not in allowed_domains"},
      {"a.example.com", 443, {"*.example.com"}, {}, true, false, "allowed_domains: *.example.com"},
      {"a.b.example.com", 1, {"*.example.com"}, {}, true, false, "allowed_domains: *.example.com"},
      {"badexample.com", 443, {"*.example.com"}, {}, false, false, "not in allowed_domains"},
      {"example.com.evil", 443, {"example.com"}, {}, false, false, "not in allowed_domains"},
      // Deny is checked first and wins over a more specific allow.
      {"a.example.com",
       443,
       {"a.example.com:443"},
       {"*.example.com"},
       false,
       false,
       "denied_domains: *.example.com"},
      {"a.example.com",
       80,
       {"*.example.com"},
       {"a.example.com:443"},
       true,
       false,
       "allowed_domains: *.example.com"},
      {"127.0.0.1", 8080, {"127.0.0.1:8080"}, {}, true, true, "allowed_domains: 127.0.0.1:8080"},
      // An IP literal never matches a wildcard.
      {"127.0.0.1", 8080, {"*.0.0.1"}, {}, false, false, "not in allowed_domains"},
      {"x.test", 1, {}, {}, false, false, "not in allowed_domains"},
      // An exact entry is found even behind a wildcard that also matches.
      {"b.test", 5, {"*.test", "b.test:5"}, {}, true, true, "allowed_domains: b.test:5"},
      {"x.test", 1, {"x.test:bad", "x.test:0"}, {}, false, false, "not in allowed_domains"},
  };
  for (const MatchCase& c : cases) {
    RuleMatch m = match_destination(c.host, c.port, c.allowed, c.denied);
    EXPECT_EQ(m.allowed, c.allowed_result) << c.host << ":" << c.port;
    EXPECT_EQ(m.exact, c.exact) << c.host << ":" << c.port;
    EXPECT_EQ(m.rule, c.rule) << c.host << ":" << c.port;
  }
}

TEST(ProxyRules, SpecialAddressTable) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"127.0.0.1", "loopback"},
      {"127.255.0.9", "loopback"},
      {"10.1.2.3", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"192.168.1.1", "private"},
      {"100.64.0.1", "CGNAT"},
      {"169.254.169.254", "cloud metadata"},
      {"169.254.1.1", "link-local"},
      {"0.0.0.0", "unspecified"},
      {"224.0.0.1", "multicast"},
      {"255.255.255.255", "reserved"},
      {"::1", "loopback"},
      {"::", "unspecified"},
      {"fe80::1", "link-local"},
      {"fd12::1", "private"},
      {"fd00:ec2::254", "cloud metadata"},
      {"ff02::1", "multicast"},
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:169.254.169.254", "cloud metadata"},
      {"64:ff9b::a00:1", "private"},
      {"::7f00:1", "reserved"},
  };
  for (const auto& [address, why] : cases) {
    Result<std::optional<std::string>> r = special_address_reason(address);
    ASSERT_TRUE(r.ok()) << address;
    ASSERT_TRUE(r->has_value()) << address;
    EXPECT_EQ(**r, why) << address;
  }
  for (const char* open :
       {"93.184.216.34", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"}) {
    Result<std::optional<std::string>> r = special_address_reason(open);
    ASSERT_TRUE(r.ok()) << open;
    EXPECT_FALSE(r->has_value()) << open << " judged " << r->value_or("");
  }
  EXPECT_FALSE(special_address_reason("example.com").ok());
}

TEST(ProxyHttp, ParsesConnectAndAbsoluteForm) {
  auto c = detail::parse_http_head("CONNECT Example.COM:443 HTTP/1.1\r\nHost: x\r\nA:  b \t");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->is_connect);
  EXPECT_EQ(c->destination.host, "example.com");
  EXPECT_EQ(c->destination.port, 443);
  EXPECT_EQ(detail::find_header(*c, "a").value_or("?"), "b");

  auto g = detail::parse_http_head("GET http://h.test:8080/p?q=1#frag HTTP/1.0");
  ASSERT_TRUE(g.ok()) << g.error();
  EXPECT_FALSE(g->is_connect);
  EXPECT_EQ(g->destination.host, "h.test");
  EXPECT_EQ(g->destination.port, 8080);
  EXPECT_EQ(g->origin_target, "/p?q=1");

  auto d = detail::parse_http_head("GET HTTP://h.test HTTP/1.1");
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->destination.port, 80);
  EXPECT_EQ(d->origin_target, "/");

  auto v6 = detail::parse_http_head("CONNECT [::1]:22 HTTP/1.1");
  ASSERT_TRUE(v6.ok()) << v6.error();
  EXPECT_EQ(v6->destination.host, "::1");
  EXPECT_EQ(detail::host_port(v6->destination), "[::1]:22");
}

TEST(ProxyHttp, RejectsMalformedHeads) {
  const std::vector<std::string> bad = {
      "",
      "GET",
      "GET http://h.test/ HTTP/2.0",
      "GET /relative HTTP/1.1",
      "GET https://h.test/ HTTP/1.1",
      "CONNECT h.test HTTP/1.1",
      "CONNECT h.test:0 HTTP/1.1",
      "CONNECT h.test:65536 HTTP/1.1",
      "CONNECT h.test:80x HTTP/1.1",
      "CONNECT user@h.test:80 HTTP/1.1",
      "GET http://user:pw@h.test/ HTTP/1.1",
      "CONNECT h.test:80  HTTP/1.1",
      "CONNECT [::1:80 HTTP/1.1",
      "CONNECT h/test:80 HTTP/1.1",
      "GET http://h.test/ HTTP/1.1\r\nBad Name: x",
      "GET http://h.test/ HTTP/1.1\r\n folded",
      "GET http://h.test/ HTTP/1.1\r\nA: b\nC: d",
      "GET http://h.test/ HTTP/1.1\r\nA: b\rC: d",
      std::string("GET http://h.test/ HTTP/1.1\r\nA: b\0c", 35),
      "GET http://h.test/ HTTP/1.1\r\nA: \x01",
      "GET http://h.test/ HTTP/1.1\r\n",
      "G(T http://h.test/ HTTP/1.1",
  };
  for (const std::string& head : bad) {
    EXPECT_FALSE(detail::parse_http_head(head).ok()) << "accepted: " << head;
  }
}

TEST(ProxyHttp, BasicCredentialsAndConstantTimeCompare) {
  auto creds = detail::basic_credentials("Basic c2J4OnRva2Vu");  // sbx:token
  ASSERT_TRUE(creds.has_value());
  EXPECT_EQ(creds->first, "sbx");
  EXPECT_EQ(creds->second, "token");
  EXPECT_TRUE(detail::basic_credentials("basic  c2J4OnRva2Vu ").has_value());
  EXPECT_FALSE(detail::basic_credentials("Bearer c2J4OnRva2Vu").has_value());
  EXPECT_FALSE(detail::basic_credentials("Basic !!!").has_value());
  EXPECT_FALSE(detail::basic_credentials("Basic c2J4").has_value());  // "sbx", no colon
  EXPECT_TRUE(detail::constant_time_equal("abc", "abc"));
  EXPECT_FALSE(detail::constant_time_equal("abc", "abd"));
  EXPECT_FALSE(detail::constant_time_equal("abc", "abcd"));
}

TEST(ProxyHttp, UpstreamHeadDropsProxyHeadersAndClosesConnection) {
  auto r = detail::parse_http_head(
      "GET http://h.test:8080/x HTTP/1.1\r\nHost: other.test\r\nProxy-Authorization: Basic x\r\n"
      "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(detail::upstream_head(*r),
            "GET /x HTTP/1.1\r\nHost: h.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n");
}

TEST(ProxyEnvironment, BothCasesWithCredentialAndNoLoopbackExemption) {
  Options options;
  options.allowed_domains = {"example.com"};
  Result<std::unique_ptr<Proxy>> proxy = Proxy::start(std::move(options));
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  Proxy& p = **proxy;
  EXPECT_EQ(p.token().size(), 32u);
  std::vector<std::string> env = proxy_environment(p, 4321);
  const std::string http = "http://sbx:" + p.token() + "@127.0.0.1:4321";
  const std::string socks = "socks5h://sbx:" + p.token() + "@127.0.0.1:4321";
  std::vector<std::string> expected = {
      "HTTP_PROXY=" + http, "http_proxy=" + http, "HTTPS_PROXY=" + http, "https_proxy=" + http,
      "ALL_PROXY=" + socks, "all_proxy=" + socks, "NO_PROXY=",           "no_proxy="};
  EXPECT_EQ(env, expected);
  // Two runs never share a credential.
  Result<std::unique_ptr<Proxy>> other = Proxy::start(Options{});
  ASSERT_TRUE(other.ok()) << other.error();
  EXPECT_NE((*other)->token(), p.token());
}

TEST(ProxyStart, NeedsAListener) {
  Options options;
  options.listen_tcp = false;
  Result<std::unique_ptr<Proxy>> proxy = Proxy::start(std::move(options));
  ASSERT_FALSE(proxy.ok());
  EXPECT_NE(proxy.error().find("neither a TCP port nor a unix socket"), std::string::npos);
}

}  // namespace
}  // namespace sbx::proxy

namespace sbx::proxy {
namespace {

TEST(ProxyRequest, RewritesEnvironmentAndPortsForProxyMode) {
  TransformRequest request;
  request.argv = {"/bin/true"};
  request.env = {"PATH=/bin", "http_proxy=http://evil.test:1", "NO_PROXY=localhost,127.0.0.1",
                 "All_Proxy=socks5://x:1", "HOME=/root"};
  request.policy.network.mode = NetworkMode::kProxy;
  request.policy.network.allowed_domains = {"example.com"};
  Result<std::unique_ptr<Proxy>> proxy = start_for_request(request);
  ASSERT_TRUE(proxy.ok()) << proxy.error();
  const std::uint16_t port = (*proxy)->port();
  ASSERT_NE(port, 0);
  EXPECT_EQ(request.policy.network.proxy_ports, std::vector<std::uint16_t>{port});
  std::vector<std::string> expected = {"PATH=/bin", "HOME=/root"};
  for (const std::string& e : proxy_environment(**proxy, port)) expected.push_back(e);
  // git over ssh: sbx-stage2 as ssh's ProxyCommand (stage2/proxy_connect.hpp).
  const Result<InstallLayout> layout = install_layout();
  ASSERT_TRUE(layout.ok()) << layout.error();
  expected.push_back("GIT_SSH_COMMAND=ssh -o ProxyCommand=\"'" + layout->stage2_path +
                     "' --proxy-connect %h %p\"");
  EXPECT_EQ(request.env, expected);
}

TEST(ProxyRequest, RefusesOtherModesAndLeavesTheRequestAlone) {
  TransformRequest request;
  request.env = {"http_proxy=http://corp.test:3128"};
  request.policy.network.mode = NetworkMode::kEnabled;
  Result<std::unique_ptr<Proxy>> proxy = start_for_request(request);
  ASSERT_FALSE(proxy.ok());
  EXPECT_NE(proxy.error().find("not \"proxy\""), std::string::npos);
  EXPECT_EQ(request.env, std::vector<std::string>{"http_proxy=http://corp.test:3128"});
  EXPECT_TRUE(request.policy.network.proxy_ports.empty());
}

Refusal refused(std::string host, std::string rule = "not in allowed_domains") {
  return Refusal{std::move(host), 443, "http-connect", std::move(rule)};
}

TEST(ProxyRefusalLog, KeepsTheFirstEntriesPerBudgetAndCountsTheRestPerHost) {
  Limits limits;
  limits.max_refusal_entries = 2;
  limits.max_credential_refusal_entries = 1;
  limits.max_refusal_hosts = 2;
  detail::RefusalRecorder recorder;
  const std::string credential(detail::kBadCredential);
  // Credential refusals first: they must not use up the budget of the rule refusals.
  EXPECT_TRUE(recorder.record(refused("", credential), limits));
  EXPECT_FALSE(recorder.record(refused("", credential), limits));
  EXPECT_TRUE(recorder.record(refused("a.test"), limits));
  EXPECT_TRUE(recorder.record(refused("b.test"), limits));
  for (const char* host : {"c.test", "d.test", "d.test", "e.test", "c.test", "d.test"})
    EXPECT_FALSE(recorder.record(refused(host), limits)) << host;
  const RefusalLog log = recorder.snapshot();
  EXPECT_EQ(log.entries,
            (std::vector<Refusal>{refused("", credential), refused("a.test"), refused("b.test")}));
  EXPECT_EQ(log.total, 10u);
  // "" (the unnamed host) and c.test were omitted first; d.test and e.test come after the two
  // counted hosts and are summed.
  EXPECT_EQ(log.omitted_by_host, (std::vector<HostCount>{{"c.test", 2}, {"", 1}}));
  EXPECT_EQ(log.omitted_other_hosts, 4u);
  EXPECT_EQ(describe_omitted(log),
            "7 more refusals not listed: c.test 2, ? 1 and 4 to other hosts");
}

TEST(ProxyRefusalLog, DescribeOmittedWording) {
  EXPECT_EQ(describe_omitted(RefusalLog{}), std::nullopt);
  EXPECT_EQ(describe_omitted(RefusalLog{{refused("a.test")}, 1, {}, 0}), std::nullopt);
  EXPECT_EQ(describe_omitted(RefusalLog{{}, 1, {{"a.test", 1}}, 0}),
            "1 more refusal not listed: a.test 1");
  EXPECT_EQ(describe_omitted(RefusalLog{{}, 5, {}, 5}),
            "5 more refusals not listed: 5 to other hosts");
}

}  // namespace
}  // namespace sbx::proxy
