// Golden tests: tests/golden/seatbelt/NAME.json describes a resolved policy and a request;
// NAME.sbpl is the expected profile text and NAME.plan the expected parameters, command, cwd,
// env and notes; NAME.error replaces both when the transform must fail. An optional
// "darwin_user_cache_dir" stands for the Mac's confstr value (MacHostFacts). Compared by default;
// SBX_UPDATE_GOLDEN=1 rewrites them (review the diff before committing).
#include "sbx_test/golden.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sbx/seatbelt/profile.hpp"
#include "sexpr.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace sbx;

const fs::path kDir = fs::path(SBX_GOLDEN_DIR) / "seatbelt";

std::vector<std::string> strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* v = o.if_contains(key))
    for (const auto& s : v->as_array()) out.emplace_back(s.as_string());
  return out;
}

bool flag(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->as_bool();
}

Access access_of(std::string_view s) {
  if (s == "read") return Access::kRead;
  if (s == "write") return Access::kWrite;
  if (s == "deny") return Access::kDeny;
  throw std::runtime_error("bad access " + std::string(s));
}

NetworkPolicy network_of(const json::object& n) {
  NetworkPolicy net;
  const std::string mode(n.at("mode").as_string());
  net.mode = mode == "enabled" ? NetworkMode::kEnabled
             : mode == "proxy" ? NetworkMode::kProxy
                               : NetworkMode::kRestricted;
  if (const auto* ports = n.if_contains("proxy_ports"))
    for (const auto& p : ports->as_array())
      net.proxy_ports.push_back(static_cast<std::uint16_t>(p.as_int64()));
  net.unix_sockets = strings(n, "unix_sockets");
  net.allowed_domains = strings(n, "allowed_domains");
  net.denied_domains = strings(n, "denied_domains");
  net.allow_local_binding = flag(n, "allow_local_binding");
  return net;
}

ResolvedPolicy policy_of(const json::object& p) {
  ResolvedPolicy policy;
  const std::string kind(p.at("filesystem").as_string());
  policy.filesystem_kind = kind == "unrestricted" ? FilesystemKind::kUnrestricted
                           : kind == "external"   ? FilesystemKind::kExternal
                                                  : FilesystemKind::kRestricted;
  if (const auto* rules = p.if_contains("rules"))
    for (const auto& r : rules->as_array())
      policy.rules.push_back(
          {std::string(r.as_array()[0].as_string()), access_of(r.as_array()[1].as_string())});
  policy.platform_defaults_readable = flag(p, "platform_defaults");
  if (const auto* prot = p.if_contains("protected"))
    for (const auto& v : prot->as_array()) {
      const auto& o = v.as_object();
      policy.protected_paths.push_back({std::string(o.at("path").as_string()),
                                        std::string(o.at("root").as_string()), flag(o, "exists"),
                                        flag(o, "dir")});
    }
  policy.deny_globs = strings(p, "deny_globs");
  if (const auto* n = p.if_contains("network")) policy.network = network_of(n->as_object());
  return policy;
}

TransformRequest request_of(const json::object& o) {
  TransformRequest req;
  req.policy = policy_of(o.at("policy").as_object());
  req.argv =
      o.contains("argv") ? strings(o, "argv") : std::vector<std::string>{"/bin/sh", "-c", "true"};
  req.cwd = o.contains("cwd") ? std::string(o.at("cwd").as_string()) : "/Users/me/proj";
  req.env = strings(o, "env");
  req.policy.cwd = req.cwd;
  return req;
}

std::string shown(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '\n' ? std::string("\\n") : c == '\\' ? std::string("\\\\") : std::string(1, c);
  return out;
}

// Everything of the plan except the profile text, one item per line.
std::string render_plan(const ExecPlan& plan) {
  std::string out = "# launcher\n" + plan.argv.at(0) + " " + plan.argv.at(1) + " <NAME.sbpl>\n";
  out += "# params\n";
  std::size_t i = 3;
  for (; i < plan.argv.size() && plan.argv[i] != "--"; ++i) out += shown(plan.argv[i]) + "\n";
  out += "# command (after --)\n";
  for (++i; i < plan.argv.size(); ++i) out += shown(plan.argv[i]) + "\n";
  out += "# cwd\n" + shown(plan.cwd) + "\n# env\n";
  for (const auto& e : plan.env) out += shown(e) + "\n";
  out += "# notes\n";
  for (const auto& n : plan.notes) out += n + "\n";
  return out;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  if (fs::is_directory(kDir))
    for (const auto& e : fs::directory_iterator(kDir))
      if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class SeatbeltGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SeatbeltGolden, MatchesExpectedPlan) {
  const fs::path base = kDir / GetParam();
  const auto input = json::parse(slurp(base.string() + ".json")).as_object();
  seatbelt::MacHostFacts host;
  if (const auto* cache = input.if_contains("darwin_user_cache_dir"))
    host.darwin_user_cache_dir = std::string(cache->as_string());
  auto plan = seatbelt::build_exec_plan(request_of(input), host);
  const fs::path error_file = base.string() + ".error";
  if (!plan.ok()) {
    sbx::test::expect_golden(error_file, plan.error() + "\n");
    return;
  }
  ASSERT_FALSE(fs::exists(error_file) && !sbx::test::updating_goldens())
      << "expected an error: " << slurp(error_file);
  ASSERT_GE(plan->argv.size(), 4u);
  const std::string& text = plan->argv[2];
  std::vector<seatbelt::testing::Node> forms;
  seatbelt::testing::SexprReader reader(text);
  EXPECT_TRUE(reader.read_all(forms)) << reader.error();
  sbx::test::expect_golden(base.string() + ".sbpl", text);
  sbx::test::expect_golden(base.string() + ".plan", render_plan(*plan));
}

INSTANTIATE_TEST_SUITE_P(Seatbelt, SeatbeltGolden, ::testing::ValuesIn(golden_names()),
                         [](const auto& param_info) { return param_info.param; });

TEST(SeatbeltGoldenSet, HasAtLeastTwentyFiveCases) { EXPECT_GE(golden_names().size(), 25u); }

}  // namespace
