// sbx-stage2 --proxy-connect's pure parts (stage2/proxy_connect.hpp): which proxy URL it takes,
// which destinations it passes on, the request it writes and the answer it accepts. End to end
// with real ssh and git: tests/integration/proxy/exec_proxy_test.cpp (GitOverSsh*).
#include "proxy_connect.hpp"

#include <gtest/gtest.h>

namespace sbx::stage2 {
namespace {

TEST(ProxyConnect, TakesOnlySbxsProxyUrl) {
  const std::optional<ProxyEndpoint> ok = parse_proxy_url("http://sbx:0123abcd@127.0.0.1:41234");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->address, "127.0.0.1");
  EXPECT_EQ(ok->port, 41234);
  EXPECT_EQ(ok->credential, "sbx:0123abcd");
  EXPECT_TRUE(parse_proxy_url("http://sbx:t@127.0.0.1:8080/").has_value());
  for (const char* bad :
       {"", "http://127.0.0.1:8080", "https://sbx:t@127.0.0.1:8080", "http://sbx:t@proxy:8080",
        "http://sbx:t@127.0.0.1", "http://sbx:t@127.0.0.1:0", "http://sbx:t@127.0.0.1:70000",
        "http://sbx@127.0.0.1:8080", "http://sbx:t\r\nX: y@127.0.0.1:8080",
        "http://sbx:t@10.0.0.1:8080", "http://sbx:t@127.0.0.2:8080", "http://sbx:t@0.0.0.0:8080",
        "socks5h://sbx:t@127.0.0.1:8080"})
    EXPECT_FALSE(parse_proxy_url(bad).has_value()) << bad;
}

TEST(ProxyConnect, PassesOnHostNamesAndAddressesNeverHeaderText) {
  EXPECT_EQ(connect_authority("github.com", "22"), "github.com:22");
  EXPECT_EQ(connect_authority("10.0.0.1", "2222"), "10.0.0.1:2222");
  EXPECT_EQ(connect_authority("::1", "22"), "[::1]:22");
  for (const auto& [host, port] :
       std::vector<std::pair<const char*, const char*>>{{"github.com\r\nX-Evil: 1", "22"},
                                                        {"a b", "22"},
                                                        {"", "22"},
                                                        {"github.com", ""},
                                                        {"github.com", "0"},
                                                        {"github.com", "65536"},
                                                        {"github.com", "22 "},
                                                        {"github.com", "-1"},
                                                        {"host/path", "22"}})
    EXPECT_FALSE(connect_authority(host, port).has_value()) << host << " " << port;
}

TEST(ProxyConnect, AsksForATunnelWithTheRunsCredential) {
  // base64("sbx:secret") = c2J4OnNlY3JldA==
  EXPECT_EQ(connect_request("github.com:22", "sbx:secret"),
            "CONNECT github.com:22 HTTP/1.1\r\nHost: github.com:22\r\n"
            "Proxy-Authorization: Basic c2J4OnNlY3JldA==\r\n\r\n");
  EXPECT_EQ(connect_request("h:1", "a:bc"),
            "CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\nProxy-Authorization: Basic YTpiYw==\r\n\r\n");
  EXPECT_EQ(connect_request("h:1", "ab:c"),
            "CONNECT h:1 HTTP/1.1\r\nHost: h:1\r\nProxy-Authorization: Basic YWI6Yw==\r\n\r\n");
}

TEST(ProxyConnect, ReadsTheStatusOfTheProxysAnswer) {
  EXPECT_EQ(connect_status("HTTP/1.1 200 Connection established"), 200);
  EXPECT_EQ(connect_status("HTTP/1.0 200 OK\r\nVia: sbx"), 200);
  EXPECT_EQ(connect_status("HTTP/1.1 403 Forbidden\r\nContent-Length: 0"), 403);
  EXPECT_EQ(connect_status("HTTP/1.1 200"), 200);
  for (const char* bad : {"", "SSH-2.0-OpenSSH", "HTTP/1.1 2000 x", "HTTP/2 200", "HTTP/1.1 2x0"})
    EXPECT_EQ(connect_status(bad), 0) << bad;
}

}  // namespace
}  // namespace sbx::stage2
