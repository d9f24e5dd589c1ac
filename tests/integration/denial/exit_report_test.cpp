// How a run ended, as the installed sbx reports it (`exec --json`'s "exit") and exits, through
// every Linux backend and bwrap launch (the direct launch with and without the write layer,
// stage 2, network mode proxy), as root and as user 65534: a command killed by a signal is
// reported with that signal (code null) and sbx exits 128+N as a shell would; a plain
// `exit 128+N` stays an exit, and a plain `exit 159` is no SIGSYS; a call the seccomp filter
// kills the process for is SIGSYS, which the denial classification names the syscall filter.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using namespace sbx::test;  // NOLINT: test helpers

constexpr const char* kRestricted =
    R"({"kind":"restricted","entries":[{"path":":root","access":"read"},)"
    R"({"path":":cwd","access":"write"}],"protected_names":[]})";

struct ExitCase {
  std::string name;
  std::string backend;
  std::string filesystem;  // the policy's filesystem
  std::string extra;       // more top-level policy keys, after the filesystem
  std::string launch;      // bwrap: the launch form exec() logs ("direct", "stage2"); else ""
};

void PrintTo(const ExitCase& c, std::ostream* os) { *os << c.name; }

using Param = std::tuple<ExitCase, Identity>;

// The JSON report and what the command and sbx wrote before it on stderr.
struct Outcome {
  RunResult run;
  boost::json::object report;
  std::string before_report;
};

class ExitReports : public ::testing::TestWithParam<Param> {
 protected:
  const ExitCase& kase() const { return std::get<0>(GetParam()); }
  Identity who() const { return std::get<1>(GetParam()); }

  void SetUp() override {
    if (!fs::exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_BACKEND(kase().backend);
    SBX_REQUIRE_IDENTITY(who(), kase().backend, {probe_path()});
  }
  void TearDown() override { fs::remove(policy_); }

  // `command` through the case's backend only (require: never unsandboxed), as the case's
  // identity in a workspace it owns, with --json (and, under bwrap, the launch exec() took in
  // the debug log).
  Outcome run_command(const std::vector<std::string>& command) {
    // Beside the workspace: a --policy file inside a writable root is kept read-only, which
    // Landlock cannot do.
    std::ofstream(policy_) << R"({"version":1,"filesystem":)" << kase().filesystem << kase().extra
                           << "}";
    fs::permissions(policy_, fs::perms::owner_read | fs::perms::owner_write |
                                 fs::perms::group_read | fs::perms::others_read);
    give_to(who(), work_.path());
    std::vector<std::string> argv = {sbx_path(), "--backends", kase().backend};
    if (!kase().launch.empty()) argv.insert(argv.end(), {"--log-level", "debug"});
    argv.insert(argv.end(), {"exec", "--policy", policy_, "--sandbox", "require", "--json", "--cwd",
                             work_.path(), "--"});
    argv.insert(argv.end(), command.begin(), command.end());
    Outcome out{run_as(who(), argv, with_pwd(env_for(who()), work_.path())), {}, {}};
    std::string err = out.run.err;
    if (!err.empty() && err.back() == '\n') err.pop_back();
    const std::size_t last = err.rfind('\n');
    out.before_report = last == std::string::npos ? "" : err.substr(0, last + 1);
    boost::json::error_code ec;
    const boost::json::value value =
        boost::json::parse(last == std::string::npos ? err : err.substr(last + 1), ec);
    EXPECT_FALSE(ec) << "no JSON report as the last stderr line: " << describe(out.run);
    if (!ec && value.is_object()) out.report = value.as_object();
    EXPECT_EQ(out.report.if_contains("final") ? std::string(out.report.at("final").as_string())
                                              : std::string(),
              kase().backend)
        << describe(out.run);
    if (!kase().launch.empty()) {
      EXPECT_NE(out.before_report.find(R"("form":")" + kase().launch + "\""), std::string::npos)
          << "not the " << kase().launch << " launch: " << describe(out.run);
    }
    return out;
  }
  Outcome run_script(const std::string& script) { return run_command({"/bin/sh", "-c", script}); }

  TempDir work_;
  const std::string policy_ = work_.path() + ".policy.json";
};

TEST_P(ExitReports, ASignalDeathIsReportedAsTheSignal) {
  for (int sig : {SIGTERM, SIGKILL, SIGSEGV}) {
    const Outcome result = run_script("kill -" + std::to_string(sig) + " $$");
    EXPECT_EQ(result.run.code, 128 + sig) << describe(result.run);
    const boost::json::object& exit = result.report.at("exit").as_object();
    EXPECT_EQ(exit.at("signal"), sig) << describe(result.run);
    EXPECT_TRUE(exit.at("code").is_null()) << describe(result.run);
    EXPECT_EQ(exit.at("shell_code"), 128 + sig) << describe(result.run);
    EXPECT_TRUE(result.report.at("error").is_null()) << describe(result.run);
  }
}

TEST_P(ExitReports, AnExitWith128PlusNStaysAnExit) {
  for (int sig : {SIGTERM, SIGKILL, SIGSEGV, SIGSYS}) {
    const Outcome result = run_script("exit " + std::to_string(128 + sig));
    EXPECT_EQ(result.run.code, 128 + sig) << describe(result.run);
    const boost::json::object& exit = result.report.at("exit").as_object();
    EXPECT_EQ(exit.at("code"), 128 + sig) << describe(result.run);
    EXPECT_TRUE(exit.at("signal").is_null()) << describe(result.run);
    // A plain `exit 159` is the command's own code, no SIGSYS, under every backend.
    if (sig == SIGSYS) {
      const boost::json::value& denial = result.report.at("denial");
      EXPECT_TRUE(denial.is_null() || !denial.at("likely_sandbox_denial").as_bool())
          << boost::json::serialize(result.report);
    }
  }
}

// A system call of another architecture: both seccomp programs kill the process with SIGSYS
// (linux/seccomp/seccomp_filter.cpp new_filter), which is reported as that signal and
// classified as the syscall filter's denial.
TEST_P(ExitReports, ASeccompKillIsSigsysAndNamedTheSyscallFilter) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the probe's call of another architecture (i386) is x86_64 only";
#endif
  const RunResult control = run({probe_path(), "i386_getpid"});
  if (control.code != 0)
    GTEST_SKIP() << "this kernel does not run i386 system calls (no IA-32 emulation): "
                 << describe(control);
  const Outcome result = run_command({probe_path(), "i386_getpid"});
  EXPECT_EQ(result.run.code, 128 + SIGSYS) << describe(result.run);
  const boost::json::object& exit = result.report.at("exit").as_object();
  EXPECT_EQ(exit.at("signal"), SIGSYS) << describe(result.run);
  EXPECT_TRUE(exit.at("code").is_null()) << describe(result.run);
  const boost::json::value& denial = result.report.at("denial");
  ASSERT_TRUE(denial.is_object()) << boost::json::serialize(result.report);
  EXPECT_TRUE(denial.at("likely_sandbox_denial").as_bool()) << boost::json::serialize(denial);
  EXPECT_EQ(std::string(denial.at("kind").as_string()), "syscall_filter")
      << boost::json::serialize(denial);
}

// The direct launch runs the command through sbx-stage2's waiter, with the write layer (a
// restricted filesystem) or without it (full access). Stage 2: PWD set elsewhere, which bwrap
// 0.8 would overwrite, so the direct launch is not taken (plugins/bwrap/README.md, "The direct
// launch"); network mode proxy always runs stage 2.
const ExitCase kCases[] = {
    {"bwrap_direct", "bwrap", kRestricted, "", "direct"},
    {"bwrap_direct_full_access", "bwrap", R"({"kind":"unrestricted"})", "", "direct"},
    {"bwrap_stage2", "bwrap", kRestricted, R"(,"environment":{"set":{"PWD":"/"}})", "stage2"},
    {"bwrap_proxy", "bwrap", kRestricted,
     R"(,"network":{"mode":"proxy","allowed_domains":["127.0.0.1:9"]})", "stage2"},
    {"landlock", "landlock", kRestricted, "", ""},
};

INSTANTIATE_TEST_SUITE_P(Linux, ExitReports,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::ValuesIn(kIdentities)),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::get<0>(param_info.param).name + "_" +
                                  name_of(std::get<1>(param_info.param));
                         });

}  // namespace
}  // namespace sbx
