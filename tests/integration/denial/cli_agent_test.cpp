// The agent-facing CLI of the installed sbx: `exec --json` reports "denial" (and the command's
// stderr still reaches the user), `policy widen` / `policy approve` (JSON in, JSON out), and a
// policy with deny entries never runs unsandboxed, not even with --allow-unsandboxed.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using namespace sbx::test;  // NOLINT: test helpers

class AgentCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = workdir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  TempDir work_;
  const std::string workdir_ = work_.path();
};

TEST_F(AgentCli, ExecJsonReportsASandboxDenialAndStderrStillReachesTheUser) {
  SBX_REQUIRE_BWRAP();
  const JsonExec result =
      sbx_exec_json({"--backends", "bwrap", "exec", "--preset", "workspace-write", "--json", "--",
                     "/bin/sh", "-c", "echo x > /usr/sbx-agent-cli-test"},
                    workdir_);
  ASSERT_EQ(result.report.at("final"), "bwrap") << result.run.err;
  EXPECT_NE(result.command_stderr.find("Read-only file system"), std::string::npos)
      << "the command's stderr must still reach the user:\n"
      << result.run.err;
  const boost::json::object& denial = result.report.at("denial").as_object();
  EXPECT_TRUE(denial.at("likely_sandbox_denial").as_bool()) << result.run.err;
  EXPECT_EQ(denial.at("kind"), "filesystem");
  EXPECT_NE(std::string(denial.at("evidence").as_string()).find("/usr/sbx-agent-cli-test"),
            std::string::npos);
}

TEST_F(AgentCli, ExecJsonUnsandboxedFailureIsNotADenial) {
  const JsonExec result =
      sbx_exec_json({"exec", "--preset", "danger-full-access", "--json", "--", "/bin/sh", "-c",
                     "echo 'x: Permission denied' >&2; exit 1"},
                    workdir_);
  ASSERT_EQ(result.report.at("final"), "none") << result.run.err;
  EXPECT_EQ(result.command_stderr, "x: Permission denied\n");
  EXPECT_FALSE(result.report.at("denial").at("likely_sandbox_denial").as_bool());
}

TEST_F(AgentCli, ADenyPolicyNeverRunsUnsandboxedEvenWithTheOverride) {
  const std::string marker = workdir_ + "/ran";
  const JsonExec result =
      sbx_exec_json({"--backends", "no-such-backend", "exec", "--deny", "~/.ssh",
                     "--allow-unsandboxed", "--json", "--", "/bin/touch", marker},
                    workdir_);
  EXPECT_EQ(result.run.exit_code, 125) << result.run.err;
  EXPECT_FALSE(fs::exists(marker)) << "a deny policy ran without a sandbox";
  EXPECT_TRUE(result.report.at("exit").is_null());
  EXPECT_TRUE(result.report.at("denial").is_null()) << "nothing ran, so nothing to classify";
  // And --sandbox forbid is refused for it outright.
  const JsonExec forbid = sbx_exec_json(
      {"exec", "--deny", "~/.ssh", "--sandbox", "forbid", "--json", "--", "/bin/touch", marker},
      workdir_);
  EXPECT_EQ(forbid.run.exit_code, 125);
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(AgentCli, PolicyWidenPrintsTheWidenedFullForm) {
  const std::string base = file("base.json", R"({"version":1,"filesystem":{"kind":"restricted",
    "entries":[{"path":":root","access":"read"},{"path":"~/.ssh","access":"deny"}]}})");
  const std::string extra = file("extra.json", R"({"version":1,"filesystem":{"kind":"restricted",
    "entries":[{"path":":cwd","access":"write"},{"path":"~/.ssh","access":"write"}]},
    "network":{"mode":"enabled"}})");
  const RunResult out = run({sbx_path(), "policy", "widen", base, extra});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const boost::json::value policy = boost::json::parse(out.out);
  EXPECT_EQ(policy.at("network").at("mode"), "enabled");
  const boost::json::array& entries = policy.at("filesystem").at("entries").as_array();
  ASSERT_EQ(entries.size(), 3u) << out.out;
  EXPECT_EQ(entries[1].at("path"), "~/.ssh");
  EXPECT_EQ(entries[1].at("access"), "deny") << "widening must never lift a deny";
  EXPECT_EQ(entries[2].at("path"), ":cwd");
}

TEST_F(AgentCli, PolicyApproveRecordsTheIntersectionOrNothing) {
  const std::string requested = file("requested.json", R"({"version":1,"filesystem":{
    "kind":"restricted","entries":[{"path":":cwd","access":"write"}]}})");
  const std::string granted = file("granted.json", R"({"version":1,"filesystem":{
    "kind":"restricted","entries":[{"path":":cwd/build","access":"write"},
    {"path":"/etc","access":"write"}]}})");
  RunResult out = run({sbx_path(), "policy", "approve", requested, granted});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  boost::json::value approval = boost::json::parse(out.out);
  EXPECT_TRUE(approval.at("recorded").as_bool());
  EXPECT_EQ(approval.at("policy").at("filesystem").at("entries").as_array().size(), 1u);
  EXPECT_EQ(approval.at("dropped").as_array().size(), 1u);

  const std::string elsewhere = file("elsewhere.json", R"({"version":1,"filesystem":{
    "kind":"restricted","entries":[{"path":"/opt/x","access":"write"}]}})");
  out = run({sbx_path(), "policy", "approve", requested, elsewhere});
  ASSERT_EQ(out.exit_code, 0) << "nothing recorded is not a failure: " << out.err;
  approval = boost::json::parse(out.out);
  EXPECT_FALSE(approval.at("recorded").as_bool());
  EXPECT_TRUE(approval.at("policy").is_null());
}

TEST_F(AgentCli, PolicyAlgebraRejectsAnInvalidPolicyNamingFileAndPointer) {
  const std::string good = file("good.json", R"({"version":1,"preset":"read-only"})");
  const std::string bad = file("bad.json", R"({"version":1,"filesystem":{"kind":"nope"}})");
  const RunResult out = run({sbx_path(), "policy", "widen", good, bad});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find("bad.json: /filesystem/kind"), std::string::npos) << out.err;
}

}  // namespace
}  // namespace sbx
