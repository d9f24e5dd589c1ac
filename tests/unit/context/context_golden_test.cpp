// Golden tests for the model-facing context (`sbx context`). Each case
// tests/golden/context/NAME.input.json holds a policy (either form) and an optional "setup" of
// directories and files to create in a fresh working directory; the expected outputs are
// NAME.txt (context_to_text) and NAME.json (context_to_json, pretty). Optional "sandbox"
// ("auto" by default; "forbid"...) is the preference question 1 is asked with, "backend" the
// backend question 2 chose on a host ("" = any host, each backend labelled), "no_backend" the
// reason none could, "cache_tools" the tools a ":caches" policy points at its cache,
// "caches_copy_on_write" whether the backend mounts them copy-on-write. The
// working directory is a
// new temporary directory, written "<cwd>" in the goldens, and the home directory is the fixed
// "/home/agent", so the outputs do not depend on the host. SBX_UPDATE_GOLDEN=1 rewrites them.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sbx/core/context.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx_test/golden.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(SBX_GOLDEN_DIR) / "context";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(kGoldenDir)) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = ".input.json";
    if (file.size() > suffix.size() && file.ends_with(suffix))
      names.push_back(file.substr(0, file.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Puts the case's setup into the fresh working directory `cwd`.
void set_up_cwd(const fs::path& cwd, const boost::json::object& input) {
  if (const auto* setup = input.if_contains("setup")) {
    if (const auto* dirs = setup->as_object().if_contains("dirs")) {
      for (const auto& dir : dirs->as_array())
        fs::create_directories(cwd / dir.as_string().c_str());
    }
    if (const auto* files = setup->as_object().if_contains("files")) {
      for (const auto& [name, text] : files->as_object())
        write_file(cwd / std::string(name), std::string(text.as_string()));
    }
  }
}

struct Rendered {
  std::string text;
  std::string json;
};

Rendered render_case(const std::string& name) {
  const boost::json::object input =
      boost::json::parse(read_file(kGoldenDir / (name + ".input.json"))).as_object();
  Result<Policy> policy = parse_policy(boost::json::serialize(input.at("policy")));
  EXPECT_TRUE(policy.ok()) << name << ": " << policy.error();
  if (!policy.ok()) return {};
  const sbx::test::TempDir scratch;
  const fs::path cwd = scratch.path();
  set_up_cwd(cwd, input);
  const ResolveContext context{cwd.string(), "/home/agent", {}};
  Result<ResolvedPolicy> resolved = resolve_policy(*policy, context);
  EXPECT_TRUE(resolved.ok()) << name << ": " << resolved.error();
  if (!resolved.ok()) return {};
  SandboxContext described = describe_sandbox(*resolved);
  // As context_for_run does on a host (tested through the CLI in cli.Context).
  const std::string preference =
      input.contains("sandbox") ? std::string(input.at("sandbox").as_string()) : "auto";
  Result<SandboxPreference> parsed = parse_sandbox_preference(preference);
  EXPECT_TRUE(parsed.ok()) << name;
  Result<SandboxDecision> decision =
      should_sandbox(*policy, parsed.ok() ? *parsed : SandboxPreference::kAuto);
  described.sandboxed = !decision.ok() || decision->sandbox;
  if (decision.ok() && !decision->sandbox) described.unsandboxed_reason = decision->reason;
  if (const auto* backend = input.if_contains("backend"))
    described.backend = std::string(backend->as_string());
  if (const auto* reason = input.if_contains("no_backend"))
    described.no_backend_reason = std::string(reason->as_string());
  if (const auto* tools = input.if_contains("cache_tools")) {
    for (const auto& tool : tools->as_array()) described.cache_tools.emplace_back(tool.as_string());
  }
  if (const auto* cow = input.if_contains("caches_copy_on_write"))
    described.caches_copy_on_write = cow->as_bool();
  return {
      replace_all(context_to_text(described), cwd.string(), "<cwd>"),
      replace_all(context_to_json(described, JsonStyle::kPretty), cwd.string(), "<cwd>") + "\n"};
}

class ContextGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ContextGolden, TextAndJsonMatch) {
  const std::string& name = GetParam();
  const Rendered got = render_case(name);
  const fs::path text_file = kGoldenDir / (name + ".txt");
  const fs::path json_file = kGoldenDir / (name + ".json");
  sbx::test::expect_golden(text_file, got.text);
  sbx::test::expect_golden(json_file, got.json);
  // The same policy gives the same description every time (stable text).
  EXPECT_EQ(render_case(name).text, got.text);
}

INSTANTIATE_TEST_SUITE_P(Context, ContextGolden, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string id = param_info.param;
                           for (char& c : id) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return id;
                         });

TEST(ContextEscaping, JsonEscapesRoundTrip) {
  const Rendered got = render_case("16-escaping");
  const boost::json::value parsed = boost::json::parse(got.json);
  const auto& roots = parsed.at("filesystem").at("writable_roots").as_array();
  ASSERT_EQ(roots.size(), 2u);
  EXPECT_EQ(roots[1].as_string(),
            "/srv/rtl\u202e"
            "exe.txt");
  EXPECT_EQ(parsed.at("filesystem").at("denied_paths").as_array()[0].as_string(),
            "/srv/line\u2028"
            "break");
}

TEST(ContextGoldenSet, HasAtLeastFifteenCases) { EXPECT_GE(case_names().size(), 15u); }

TEST(ContextEscaping, NoValueCanAddALineOrBreakTheJson) {
  // Every line of the text is either fixed wording or starts with "  - " and one quoted value:
  // a crafted path with a newline, U+2028 or a bidi override stays on its own line.
  for (const std::string& name :
       {std::string("16-escaping"), std::string("18-control-characters")}) {
    const Rendered got = render_case(name);
    std::istringstream lines(got.text);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(line.find("\u2028"), std::string::npos) << line;
      EXPECT_EQ(line.find("\u202e"), std::string::npos) << line;
      if (line.rfind("  - ", 0) == 0) {
        EXPECT_TRUE(line.back() == '"') << "value line must end with its closing quote: " << line;
      }
    }
    // The JSON form writes them as \uXXXX (same string once parsed), never raw.
    EXPECT_EQ(got.json.find("\u2028"), std::string::npos) << got.json;
    EXPECT_EQ(got.json.find("\u202e"), std::string::npos) << got.json;
    EXPECT_NO_THROW((void)boost::json::parse(got.json)) << got.json;
  }
}

}  // namespace
}  // namespace sbx
