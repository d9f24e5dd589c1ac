// Golden tests of the bwrap translator: each tests/golden/bwrap/NAME.policy.json describes a
// request, a ResolvedPolicy and the host facts; NAME.argv is the expected bwrap argv (one
// argument per line) followed by the notes ("# note: ...") and planned mount points
// ("# mount-point: ..."), or "# error: ..." when the translation must be refused.
// SBX_UPDATE_GOLDEN=1 rewrites the .argv files for review instead of comparing.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sbx/bwrap/translate.hpp"
#include "sbx_test/golden.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using sbx::bwrap::HostFacts;
using sbx::bwrap::PathKind;

const fs::path kDir = fs::path(SBX_GOLDEN_DIR) / "bwrap";

std::vector<std::string> strings(const json::value* v) {
  std::vector<std::string> out;
  if (v == nullptr) return out;
  for (const json::value& e : v->as_array()) out.emplace_back(e.as_string());
  return out;
}

sbx::Access access_of(std::string_view s) {
  if (s == "read") return sbx::Access::kRead;
  if (s == "write") return sbx::Access::kWrite;
  if (s == "deny") return sbx::Access::kDeny;
  throw std::runtime_error("bad access " + std::string(s));
}

PathKind kind_of(std::string_view s) {
  if (s == "dir") return PathKind::kDirectory;
  if (s == "file") return PathKind::kFile;
  if (s == "symlink") return PathKind::kSymlink;
  if (s == "other") return PathKind::kOther;
  throw std::runtime_error("bad kind " + std::string(s));
}

sbx::ResolvedPolicy parse_policy(const json::object& p) {
  sbx::ResolvedPolicy policy;
  const std::string kind(p.at("filesystem_kind").as_string());
  policy.filesystem_kind = kind == "restricted"     ? sbx::FilesystemKind::kRestricted
                           : kind == "unrestricted" ? sbx::FilesystemKind::kUnrestricted
                                                    : sbx::FilesystemKind::kExternal;
  if (const json::value* rules = p.if_contains("rules")) {
    for (const json::value& r : rules->as_array())
      policy.rules.push_back(
          {std::string(r.at("path").as_string()), access_of(r.at("access").as_string())});
  }
  if (const json::value* v = p.if_contains("platform_defaults_readable"))
    policy.platform_defaults_readable = v->as_bool();
  if (const json::value* prot = p.if_contains("protected_paths")) {
    for (const json::value& e : prot->as_array()) {
      const json::object& o = e.as_object();
      policy.protected_paths.push_back(
          {std::string(o.at("path").as_string()), std::string(o.at("writable_root").as_string()),
           o.at("exists").as_bool(), o.contains("is_directory") && o.at("is_directory").as_bool()});
    }
  }
  policy.deny_globs = strings(p.if_contains("deny_globs"));
  const json::object& net = p.at("network").as_object();
  const std::string mode(net.at("mode").as_string());
  policy.network.mode = mode == "enabled" ? sbx::NetworkMode::kEnabled
                        : mode == "proxy" ? sbx::NetworkMode::kProxy
                                          : sbx::NetworkMode::kRestricted;
  policy.network.unix_sockets = strings(net.if_contains("unix_sockets"));
  if (const json::value* ports = net.if_contains("proxy_ports")) {
    for (const json::value& port : ports->as_array())
      policy.network.proxy_ports.push_back(static_cast<std::uint16_t>(port.to_number<int>()));
  }
  policy.cwd = std::string(p.at("cwd").as_string());
  return policy;
}

HostFacts parse_facts(const json::object& f) {
  HostFacts facts;
  facts.bwrap_path = std::string(f.at("bwrap").as_string());
  facts.stage2_path = std::string(f.at("stage2").as_string());
  if (const json::value* v = f.if_contains("can_mount_proc")) facts.can_mount_proc = v->as_bool();
  if (const json::value* v = f.if_contains("state_dir"))
    facts.state_dir = std::string(v->as_string());
  if (const json::value* paths = f.if_contains("paths")) {
    for (const auto& [k, v] : paths->as_object())
      facts.paths[std::string(k)] = kind_of(v.as_string());
  }
  if (const json::value* canon = f.if_contains("canonical")) {
    for (const auto& [k, v] : canon->as_object())
      facts.canonical[std::string(k)] = std::string(v.as_string());
  }
  facts.glob_matches = strings(f.if_contains("glob_matches"));
  return facts;
}

std::string render(const fs::path& policy_file) {
  std::ifstream in(policy_file);
  std::stringstream ss;
  ss << in.rdbuf();
  const json::object root = json::parse(ss.str()).as_object();
  sbx::TransformRequest request;
  const json::object& req = root.at("request").as_object();
  request.argv = strings(req.if_contains("argv"));
  request.cwd = std::string(req.at("cwd").as_string());
  request.env = strings(req.if_contains("env"));
  if (const json::value* socket = req.if_contains("proxy_socket"))
    request.proxy_socket = std::string(socket->as_string());
  if (const json::value* overlays = req.if_contains("cache_overlays")) {
    for (const json::value& o : overlays->as_array())
      request.cache_overlays.push_back(
          {std::string(o.at("path").as_string()), std::string(o.at("layers").as_string())});
  }
  request.policy = parse_policy(root.at("policy").as_object());
  const HostFacts facts = parse_facts(root.at("facts").as_object());
  sbx::Result<sbx::bwrap::Translation> t = sbx::bwrap::translate(request, facts);
  std::string out;
  if (!t.ok()) return "# error: " + t.error() + "\n";
  for (const std::string& a : t->argv) out += a + "\n";
  for (const std::string& n : t->notes) out += "# note: " + n + "\n";
  for (const std::string& m : t->synthetic_mount_points) out += "# mount-point: " + m + "\n";
  return out;
}

std::vector<std::string> golden_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = ".policy.json";
    if (file.size() > suffix.size() && file.ends_with(suffix))
      names.push_back(file.substr(0, file.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

class BwrapGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(BwrapGolden, MatchesExpectedArgv) {
  const fs::path policy = kDir / (GetParam() + ".policy.json");
  const fs::path expected_file = kDir / (GetParam() + ".argv");
  const std::string actual = render(policy);
  sbx::test::expect_golden(expected_file, actual);
}

TEST(BwrapGoldenSet, HasAtLeastTwelvePolicies) { EXPECT_GE(golden_names().size(), 12u); }

INSTANTIATE_TEST_SUITE_P(Policies, BwrapGolden, ::testing::ValuesIn(golden_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
