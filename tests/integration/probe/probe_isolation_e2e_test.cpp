// A plugin whose probe crashes (SIGSEGV) or never returns, loaded by the installed sbx from a
// trusted --plugin-dir: `sbx backends --probe` and `sbx exec` exit normally, name what
// happened to that backend, and use another backend. The fixtures are copied into a fresh
// directory under the installed tree (a chain only root, or the test's user, can write).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kCrash = "fixture-probe-crash";
constexpr const char* kHang = "fixture-probe-hang";
constexpr const char* kCrashReason = "probe crashed with SIGSEGV";
constexpr const char* kHangReason = "probe did not answer within 10 s";

class ProbeIsolationE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    plugins_ = std::string(SBX_TEST_PREFIX) + "/probe-fixtures-" + std::to_string(::getpid());
    fs::remove_all(plugins_);
    fs::create_directory(plugins_);
    ::chmod(plugins_.c_str(), 0755);
    for (const char* name : {kCrash, kHang}) {
      const std::string file = std::string("sbx-backend-") + name + ".so";
      const std::string target = plugins_ + "/" + file;
      fs::copy_file(std::string(SBX_LOADER_FIXTURE_DIR) + "/" + file, target);
      ::chmod(target.c_str(), 0644);
    }
    ASSERT_FALSE(work_.path().empty());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(plugins_, ec);
  }

  // sbx --plugin-dir <fixtures> GLOBAL... ARGS..., timed.
  RunResult sbx(const std::vector<std::string>& global, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {sbx_path(), "--plugin-dir", plugins_};
    argv.insert(argv.end(), global.begin(), global.end());
    argv.insert(argv.end(), args.begin(), args.end());
    const Clock::time_point start = Clock::now();
    RunResult r = run(argv, base_env());
    took_ = Clock::now() - start;
    return r;
  }

  // The real backends of this host (as the installed sbx probes them without the fixtures),
  // in the default order.
  static std::vector<std::string> real_backends() {
    const RunResult r = run({sbx_path(), "backends", "--probe", "--json"}, base_env());
    std::vector<std::string> names;
    if (r.code != 0) return names;
    const json::value doc = json::parse(r.out);
    for (const json::value& b : doc.at("backends").as_array()) {
      if (b.at("available").as_bool()) names.emplace_back(b.at("name").as_string());
    }
    return names;
  }

  std::string plugins_;
  TempDir work_;
  Clock::duration took_{};
};

const json::object* backend_named(const json::value& doc, const std::string& name) {
  for (const json::value& b : doc.at("backends").as_array()) {
    if (b.at("name").as_string() == name) return &b.as_object();
  }
  return nullptr;
}

TEST_F(ProbeIsolationE2e, BackendsProbeNamesTheCrashAndTheHangAndProbesTheOthers) {
  const std::vector<std::string> real = real_backends();
  const RunResult r = sbx({}, {"backends", "--probe", "--json"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_LT(took_, std::chrono::seconds(30)) << "the hanging probe was not cut off";
  const json::value doc = json::parse(r.out);
  const json::object* crash = backend_named(doc, kCrash);
  const json::object* hang = backend_named(doc, kHang);
  ASSERT_NE(crash, nullptr) << "the crashing fixture was not loaded: " << describe(r);
  ASSERT_NE(hang, nullptr) << "the hanging fixture was not loaded: " << describe(r);
  EXPECT_FALSE(crash->at("available").as_bool());
  EXPECT_EQ(crash->at("summary").as_string(), kCrashReason);
  EXPECT_FALSE(hang->at("available").as_bool());
  EXPECT_EQ(hang->at("summary").as_string(), kHangReason);
  for (const std::string& name : real) {
    const json::object* b = backend_named(doc, name);
    ASSERT_NE(b, nullptr) << name << ": " << describe(r);
    EXPECT_TRUE(b->at("available").as_bool()) << name << ": " << describe(r);
  }
}

TEST_F(ProbeIsolationE2e, BackendsProbeTextShowsTheReason) {
  const RunResult r = sbx({"--backends", kCrash}, {"backends", "--probe"});
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::size_t at = r.out.find(std::string(kCrash) + " 1.0.0  NOT AVAILABLE - ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(at, r.out.find('\n', at) - at),
            std::string(kCrash) + " 1.0.0  NOT AVAILABLE - " + kCrashReason);
}

TEST_F(ProbeIsolationE2e, ExecGoesOnToAnotherBackend) {
  const std::vector<std::string> real = real_backends();
  if (real.empty()) GTEST_SKIP() << "no backend is available on this host";
  const std::string order = std::string(kCrash) + "," + kHang + ",bwrap,landlock";
  const RunResult r =
      sbx({"--backends", order}, {"exec", "--json", "--preset", "read-only", "--cwd", work_.path(),
                                  "--", "/bin/sh", "-c", "echo ran"});
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "ran\n") << describe(r);
  // The run report is the last line on stderr.
  const std::size_t last = r.err.rfind('\n', r.err.size() - 2);
  const json::value report = json::parse(r.err.substr(last == std::string::npos ? 0 : last + 1));
  EXPECT_EQ(report.at("final").as_string(), real.front()) << describe(r);
}

TEST_F(ProbeIsolationE2e, ExplainNamesTheCrashAmongThePassedOver) {
  const std::string order = std::string(kCrash) + ",bwrap,landlock";
  const RunResult r = sbx({"--backends", order},
                          {"explain", "--json", "--preset", "read-only", "--cwd", work_.path()});
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::value doc = json::parse(r.out);
  bool named = false;
  for (const json::value& p : doc.at("passed_over").as_array()) {
    if (p.at("backend").as_string() == kCrash)
      named = p.at("reason").as_string() == std::string("unavailable: ") + kCrashReason;
  }
  EXPECT_TRUE(named) << describe(r);
}

}  // namespace
