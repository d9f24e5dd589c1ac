// Third-party plugins' transform() and exec() run isolated (core/src/plugins/call_isolation.cpp):
// the installed sbx, with fixture plugins (tests/fixtures/plugins/misbehaving_call.cpp) that
// crash (SIGSEGV), abort, let an exception escape a noexcept function, throw or loop in one of
// the two calls, copied into a trusted --plugin-dir under the installed tree.
//  - `sbx exec` and `sbx debug` survive each with exit 125 and a message naming the backend,
//    its file, the call and the signal, and nothing of the command ran;
//  - a loop in transform() is killed at the deadline, one in exec() at the policy's time-out;
//  - a plugin that behaves runs its command through the isolated exec as in process: its exit
//    status, a signal death, its stdout, its plan's detail, the refusal it reports;
//  - a transform() that gives another plan when called again for exec runs nothing;
//  - an agent embedding libsbx (a C program: capi_plugin_calls.c) gets errors from
//    sbx_transform, sbx_exec and sbx_run_* and lives on; a run whose exec() loops ends at the
//    time-out plus the grace. The C API has no plugin directory: the program loads a private
//    copy of the installed libsbx whose own plugin directory holds the fixtures.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;
namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kFixtures = {
    "fixture-call-good",       "fixture-call-impure",      "fixture-transform-segv",
    "fixture-transform-abort", "fixture-transform-escape", "fixture-transform-throw",
    "fixture-transform-loop",  "fixture-exec-segv",        "fixture-exec-abort",
    "fixture-exec-escape",     "fixture-exec-throw",       "fixture-exec-loop"};

std::string plugin_file(const std::string& name) { return "sbx-backend-" + name + ".so"; }

// Copies the fixtures into `dir` (made 0755), each 0644.
void stage_fixtures(const std::string& dir) {
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  for (const std::string& name : kFixtures) {
    const std::string target = dir + "/" + plugin_file(name);
    fs::copy_file(std::string(SBX_LOADER_FIXTURE_DIR) + "/" + plugin_file(name), target,
                  fs::copy_options::overwrite_existing);
    ::chmod(target.c_str(), 0644);
  }
}

class PluginCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    plugins_ = installed_prefix() + "/call-fixtures-" + std::to_string(::getpid());
    fs::remove_all(plugins_);
    stage_fixtures(plugins_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(plugins_, ec);
  }

  std::string path_of(const std::string& name) const { return plugins_ + "/" + plugin_file(name); }
  // "backend 'NAME' (PATH)", as the messages name a plugin.
  std::string named(const std::string& name) const {
    return "backend '" + name + "' (" + path_of(name) + ")";
  }

  // sbx --plugin-dir <fixtures> --backends BACKEND ARGS..., timed.
  RunResult sbx(const std::string& backend, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {sbx_path(), "--plugin-dir", plugins_, "--backends", backend};
    argv.insert(argv.end(), args.begin(), args.end());
    const Clock::time_point start = Clock::now();
    RunResult r = run(argv, base_env());
    took_ = Clock::now() - start;
    return r;
  }

  // `sbx exec` of a command that would leave a marker in the working directory.
  RunResult exec_marking(const std::string& backend, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::vector<std::string> tail = {"--preset", "workspace-write", "--cwd", work_.path(),
                                           "--",       "/bin/sh",         "-c",    "touch marker"};
    args.insert(args.end(), tail.begin(), tail.end());
    return sbx(backend, args);
  }
  bool marker_exists() const { return fs::exists(work_.file("marker")); }

  std::string plugins_;
  TempDir work_;
  Clock::duration took_{};
};

// The run report `sbx exec --json` writes last on stderr.
json::value last_report(const RunResult& r) {
  const std::size_t last = r.err.rfind('\n', r.err.size() - 2);
  return json::parse(r.err.substr(last == std::string::npos ? 0 : last + 1));
}

struct Misbehaviour {
  const char* fixture;
  const char* said;  // after "backend 'NAME' (PATH)"
};

void PrintTo(const Misbehaviour& m, std::ostream* os) { *os << m.fixture; }

class Crashes : public PluginCalls, public ::testing::WithParamInterface<Misbehaviour> {};

TEST_P(Crashes, ExecEndsWith125NamingTheCallAndTheSignalAndRunsNothing) {
  const Misbehaviour m = GetParam();
  const RunResult r = exec_marking(m.fixture);
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("sbx: " + named(m.fixture) + m.said), std::string::npos) << describe(r);
  EXPECT_FALSE(marker_exists()) << "the command ran: " << describe(r);
}

TEST_P(Crashes, TheJsonReportCarriesTheMessage) {
  const Misbehaviour m = GetParam();
  const RunResult r = exec_marking(m.fixture, {"--json"});
  EXPECT_EQ(r.code, 125) << describe(r);
  const json::value report = last_report(r);
  const std::string error(report.at("error").as_string());
  EXPECT_EQ(error.rfind(named(m.fixture) + m.said, 0), 0u) << error;
  EXPECT_EQ(report.at("error_kind").as_string(), "backend_failure");
  EXPECT_TRUE(report.at("exit").is_null()) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    PluginCalls, Crashes,
    ::testing::Values(
        Misbehaviour{"fixture-transform-segv", " crashed in transform() with SIGSEGV"},
        Misbehaviour{"fixture-transform-abort", " crashed in transform() with SIGABRT"},
        Misbehaviour{"fixture-transform-escape", " crashed in transform() with SIGABRT"},
        Misbehaviour{"fixture-exec-segv", " crashed in exec() with SIGSEGV; nothing was run"},
        Misbehaviour{"fixture-exec-abort", " crashed in exec() with SIGABRT; nothing was run"},
        Misbehaviour{"fixture-exec-escape", " crashed in exec() with SIGABRT; nothing was run"}),
    [](const ::testing::TestParamInfo<Misbehaviour>& param) {
      std::string name = std::string(param.param.fixture).substr(std::string("fixture-").size());
      for (char& c : name) c = c == '-' ? '_' : c;
      return name;
    });

TEST_F(PluginCalls, AnExceptionThrownIntoTheHostKeepsItsText) {
  for (const std::string call : {"transform", "exec"}) {
    const RunResult r = exec_marking("fixture-" + call + "-throw");
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find("backend 'fixture-" + call + "-throw' failed in " + call + ": fixture " +
                         call + " threw"),
              std::string::npos)
        << describe(r);
    EXPECT_FALSE(marker_exists()) << describe(r);
  }
}

TEST_F(PluginCalls, DebugSurvivesACrashingTransform) {
  for (const std::string how : {"segv", "abort", "escape"}) {
    const std::string name = "fixture-transform-" + how;
    const RunResult r = sbx(
        name, {"debug", name, "--preset", "read-only", "--cwd", work_.path(), "--", "/bin/true"});
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find(named(name) + " crashed in transform() with SIG"), std::string::npos)
        << describe(r);
  }
}

TEST_F(PluginCalls, ALoopingTransformIsKilledAtTheDeadline) {
  const RunResult r = exec_marking("fixture-transform-loop");
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find(named("fixture-transform-loop") +
                       " did not return from transform() within 10 s; it was killed"),
            std::string::npos)
      << describe(r);
  EXPECT_LT(took_, std::chrono::seconds(30));
  EXPECT_FALSE(marker_exists());
}

TEST_F(PluginCalls, ALoopingExecIsKilledAtThePolicysTimeOut) {
  // The loop ignores SIGTERM: the watchdog's SIGKILL after the grace ends it.
  const std::string policy = work_.write(
      "policy.json",
      R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [{"path": ":root", )"
      R"("access": "read"}, {"path": ":cwd", "access": "write"}]}, "network": {"mode": )"
      R"("restricted"}, "limits": {"timeout_seconds": 1, "timeout_grace_seconds": 1}})");
  const RunResult r =
      sbx("fixture-exec-loop", {"exec", "--json", "--policy", policy, "--cwd", work_.path(), "--",
                                "/bin/sh", "-c", "touch marker"});
  EXPECT_EQ(r.code, 125) << describe(r);
  const json::value report = last_report(r);
  EXPECT_EQ(std::string(report.at("error").as_string())
                .rfind(named("fixture-exec-loop") + " was killed in exec() by SIGKILL", 0),
            0u)
      << describe(r);
  EXPECT_EQ(report.at("limit_hit").as_string(), "timeout") << describe(r);
  EXPECT_LT(took_, std::chrono::seconds(20));
  EXPECT_FALSE(marker_exists());
}

TEST_F(PluginCalls, AWellBehavedPluginRunsItsCommandIsolatedAsInProcess) {
  const RunResult r = sbx("fixture-call-good",
                          {"exec", "--json", "--preset", "workspace-write", "--cwd", work_.path(),
                           "--", "/bin/sh", "-c", "echo ran; touch marker; exit 7"});
  EXPECT_EQ(r.code, 7) << describe(r);
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_TRUE(marker_exists());
  const json::value report = last_report(r);
  EXPECT_EQ(report.at("exit").at("code").as_int64(), 7) << describe(r);
  // The refusal exec() reported in its process reached the run's report here.
  bool refusal = false;
  for (const json::value& entry : report.at("network_refusals").as_array())
    refusal = refusal || (entry.at("kind").as_string() == "unix" &&
                          entry.at("path").as_string() == "/fixture/refused.sock");
  EXPECT_TRUE(refusal) << describe(r);
}

TEST_F(PluginCalls, ASignalDeathIsTheCommandsOwn) {
  const RunResult r =
      sbx("fixture-call-good", {"exec", "--json", "--preset", "workspace-write", "--cwd",
                                work_.path(), "--", "/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.code, 128 + SIGTERM) << describe(r);
  const json::value report = last_report(r);
  EXPECT_EQ(report.at("exit").at("signal").as_int64(), SIGTERM) << describe(r);
}

TEST_F(PluginCalls, DebugShowsThePluginsDetail) {
  const RunResult r =
      sbx("fixture-call-good", {"debug", "fixture-call-good", "--preset", "read-only", "--cwd",
                                work_.path(), "--", "/bin/true"});
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::value plan = json::parse(r.out);
  EXPECT_EQ(plan.at("fixture_detail").as_string(), "made by transform") << r.out;
  EXPECT_EQ(plan.at("notes").as_array().at(0).as_string(), "fixture plan") << r.out;
}

TEST_F(PluginCalls, AnImpureTransformRunsNothing) {
  const RunResult r = exec_marking("fixture-call-impure");
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find(named("fixture-call-impure") +
                       ": its transform() returned another plan when called again"),
            std::string::npos)
      << describe(r);
  EXPECT_FALSE(marker_exists());
}

// ---------------------------------------------------------------------------------------------
// The C API, from a C program.

class EmbeddedPluginCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string libsbx = installed_libsbx();
    if (libsbx.empty()) GTEST_SKIP() << "no installed libsbx under " << installed_prefix();
    // A private install: libsbx (the real file, not a link: the layout is found from it) and its
    // own plugin directory holding only the fixtures, under the installed tree's trusted chain.
    tree_ = installed_prefix() + "/capi-call-fixtures-" + std::to_string(::getpid());
    fs::remove_all(tree_);
    const std::string libdir = tree_ + "/" + install_libdir();
    fs::create_directories(libdir);
    for (fs::path p = libdir; p.string().size() >= tree_.size(); p = p.parent_path())
      ::chmod(p.c_str(), 0755);
    libsbx_ = libdir + "/" + fs::path(libsbx).filename().string();
    fs::copy_file(fs::canonical(libsbx), libsbx_);
    ::chmod(libsbx_.c_str(), 0755);
    fs::create_directory(libdir + "/sbx");
    ::chmod((libdir + "/sbx").c_str(), 0755);
    stage_fixtures(libdir + "/sbx/backends");
  }
  void TearDown() override {
    std::error_code ec;
    if (!tree_.empty()) fs::remove_all(tree_, ec);
  }

  // capi_plugin_calls with `backend`; the command leaves a marker.
  RunResult embed(const std::string& backend, const std::string& timeout_ms = "0") {
    const Clock::time_point start = Clock::now();
    RunResult r = run({SBX_CAPI_PLUGIN_CALLS, libsbx_, backend, work_.path(), timeout_ms, "/bin/sh",
                       "-c", "echo ran; touch marker"},
                      base_env());
    took_ = Clock::now() - start;
    return r;
  }
  std::string named(const std::string& name) const {
    return "backend '" + name + "' (" + tree_ + "/" + install_libdir() + "/sbx/backends/" +
           plugin_file(name) + ")";
  }
  // The line of `call` ("transform", "exec", "run"), without "<call>: "; "" when none.
  static std::string line(const RunResult& r, const std::string& call) {
    const std::string head = call + ": ";
    std::size_t begin = 0;
    while (begin < r.out.size()) {
      std::size_t end = r.out.find('\n', begin);
      if (end == std::string::npos) end = r.out.size();
      if (r.out.compare(begin, head.size(), head) == 0)
        return r.out.substr(begin + head.size(), end - begin - head.size());
      begin = end + 1;
    }
    return {};
  }
  static std::string report_error(const std::string& text) {
    const json::value report = json::parse(text);
    return report.at("error").is_null() ? std::string()
                                        : std::string(report.at("error").as_string());
  }

  std::string tree_;
  std::string libsbx_;
  TempDir work_;
  Clock::duration took_{};
};

TEST_F(EmbeddedPluginCalls, ACrashInTransformIsAnErrorOfEachCall) {
  const RunResult r = embed("fixture-transform-segv");
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("\nalive\n"), std::string::npos) << describe(r);
  const std::string said = named("fixture-transform-segv") + " crashed in transform() with SIGSEGV";
  EXPECT_EQ(line(r, "transform"), "error: " + said) << describe(r);
  EXPECT_EQ(line(r, "exec"), "error: " + said) << describe(r);
  EXPECT_EQ(line(r, "run"), "error: " + said) << describe(r);
  EXPECT_FALSE(fs::exists(work_.file("marker")));
}

TEST_F(EmbeddedPluginCalls, ACrashInExecFailsTheRunsAndNotTheAgent) {
  for (const std::string how : {"segv", "abort", "escape"}) {
    const std::string name = "fixture-exec-" + how;
    const RunResult r = embed(name);
    ASSERT_EQ(r.code, 0) << describe(r);
    EXPECT_NE(r.out.find("\nalive\n"), std::string::npos) << describe(r);
    EXPECT_EQ(line(r, "transform").rfind("{", 0), 0u) << describe(r);  // the plan, as JSON
    const std::string said = named(name) + " crashed in exec() with " +
                             (how == "segv" ? "SIGSEGV" : "SIGABRT") + "; nothing was run";
    EXPECT_EQ(report_error(line(r, "exec")), said) << describe(r);
    EXPECT_EQ(report_error(line(r, "run")), said) << describe(r);
    EXPECT_FALSE(fs::exists(work_.file("marker"))) << name;
  }
}

TEST_F(EmbeddedPluginCalls, ALoopingExecEndsAtTheTimeOutAndTheGrace) {
  const RunResult r = embed("fixture-exec-loop", "500");
  ASSERT_EQ(r.code, 0) << describe(r);
  // With a time-out the program skips sbx_exec, which has none and would wait for ever.
  EXPECT_EQ(line(r, "exec"), "skipped") << describe(r);
  const std::string error = report_error(line(r, "run"));
  EXPECT_EQ(
      error.rfind("the run timed out after 500 ms and was ended; " + named("fixture-exec-loop") +
                      " did not return from exec() within 3 s after the run was to end",
                  0),
      0u)
      << describe(r);
  EXPECT_LT(took_, std::chrono::seconds(20));
}

TEST_F(EmbeddedPluginCalls, AWellBehavedPluginRunsItsCommand) {
  const RunResult r = embed("fixture-call-good");
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::value report = json::parse(line(r, "exec"));
  EXPECT_TRUE(report.at("error").is_null()) << describe(r);
  EXPECT_EQ(report.at("exit").at("code").as_int64(), 0) << describe(r);
  EXPECT_TRUE(fs::exists(work_.file("marker")));
}

}  // namespace
