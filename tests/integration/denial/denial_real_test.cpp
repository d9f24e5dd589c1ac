// Denial classification on REAL failures (issue 7, acceptance 3): each case runs the installed
// sbx (SBX_TEST_PREFIX) so that a real backend produces a real failure, captures its exit status
// and stderr, reads which backend ran it from the `exec --json` report (last stderr line), and
// classifies that. Backends that run here: bwrap (skipped, with the reason, when its probe says
// it is unavailable) and no sandbox at all.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "sbx/core/denial.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;

const std::string kPrefix = SBX_TEST_PREFIX;
const std::string kSbx = kPrefix + "/bin/sbx";

struct Outcome {
  ExitStatus status;
  std::string out;
  std::string err;
};

std::string drain(int fd) {
  std::string text;
  std::array<char, 4096> buffer{};
  for (ssize_t got; (got = ::read(fd, buffer.data(), buffer.size())) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buffer.data(), static_cast<std::size_t>(got));
  }
  return text;
}

// Runs argv with stdout and stderr captured (stdout first to a file, so neither pipe can
// block the other).
Outcome run(const std::vector<std::string>& argv, const std::string& cwd = "/") {
  int err_pipe[2];
  EXPECT_EQ(::pipe(err_pipe), 0);
  FILE* out_file = std::tmpfile();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fileno(out_file), 1);
    ::dup2(err_pipe[1], 2);
    ::close(err_pipe[0]);
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(121);
  }
  ::close(err_pipe[1]);
  Outcome result;
  result.err = drain(err_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.status = WIFSIGNALED(status) ? ExitStatus{0, WTERMSIG(status)}
                                      : ExitStatus{WEXITSTATUS(status), 0};
  std::rewind(out_file);
  result.out = drain(fileno(out_file));
  std::fclose(out_file);
  return result;
}

// `sbx exec --json` writes its report as the last line of stderr; the rest is the command's.
struct ExecResult {
  Outcome run;
  boost::json::object report;
  std::string command_stderr;
};

ExecResult sbx_exec(const std::vector<std::string>& sbx_args, const std::string& cwd) {
  std::vector<std::string> argv = {kSbx};
  argv.insert(argv.end(), sbx_args.begin(), sbx_args.end());
  ExecResult result{run(argv, cwd), {}, {}};
  std::string err = result.run.err;
  if (!err.empty() && err.back() == '\n') err.pop_back();
  const std::size_t last = err.rfind('\n');
  const std::string line = last == std::string::npos ? err : err.substr(last + 1);
  result.command_stderr = last == std::string::npos ? "" : err.substr(0, last + 1);
  boost::json::error_code ec;
  boost::json::value value = boost::json::parse(line, ec);
  EXPECT_FALSE(ec) << "no JSON report as the last stderr line:\n" << result.run.err;
  if (!ec && value.is_object()) result.report = value.as_object();
  return result;
}

DenialAssessment classify(const ExecResult& result) {
  const std::string backend = result.report.contains("final") && result.report.at("final").is_string()
                                  ? std::string(result.report.at("final").as_string())
                                  : "";
  return classify_failure(FailedCommand{result.run.status, result.command_stderr, backend});
}

class RealFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSbx)) GTEST_SKIP() << "no installed sbx at " << kSbx;
    char pattern[] = "/tmp/sbx-denial-real-XXXXXX";
    workdir_ = fs::canonical(::mkdtemp(pattern)).string();
  }
  void TearDown() override {
    if (!workdir_.empty()) fs::remove_all(workdir_);
  }

  // Skips (with the reason) unless the installed bwrap backend is loaded and available.
  void require_bwrap() {
    const Outcome probe = run({kSbx, "backends", "--probe", "--json"});
    boost::json::error_code ec;
    const boost::json::value listing = boost::json::parse(probe.out, ec);
    ASSERT_FALSE(ec) << probe.out << probe.err;
    for (const auto& backend : listing.at("backends").as_array()) {
      if (backend.at("name") != "bwrap") continue;
      if (backend.at("available").as_bool()) return;
      GTEST_SKIP() << "the bwrap backend is installed but unavailable here: "
                   << backend.at("summary").as_string();
    }
    GTEST_SKIP() << "the bwrap backend is not installed under " << kPrefix
                 << " (the bwrap plugin may still be landing)";
  }

  ExecResult bwrap(const std::string& script) {
    return sbx_exec({"--backends", "bwrap", "exec", "--preset", "workspace-write", "--sandbox",
                     "require", "--json", "--", "/bin/sh", "-c", script},
                    workdir_);
  }

  std::string workdir_;
};

TEST_F(RealFailures, BwrapWriteOutsideTheWorkspaceIsAFilesystemDenial) {
  require_bwrap();
  const ExecResult result = bwrap("echo x > /usr/sbx-denial-test");
  ASSERT_EQ(result.report.at("final"), "bwrap") << result.run.err;
  ASSERT_NE(result.run.status.exit_code, 0);
  const DenialAssessment verdict = classify(result);
  EXPECT_TRUE(verdict.likely_sandbox_denial) << verdict.reason << "\n" << result.run.err;
  EXPECT_EQ(verdict.kind, DenialKind::kFilesystem) << verdict.evidence;
  EXPECT_NE(verdict.evidence.find("Read-only file system"), std::string::npos) << verdict.evidence;
  EXPECT_FALSE(fs::exists("/usr/sbx-denial-test"));
}

TEST_F(RealFailures, BwrapSeccompDeniedSyscallIsClassified) {
  require_bwrap();
  // unshare(CLONE_NEWUSER) is refused by the seccomp filter (EPERM) inside the sandbox.
  const ExecResult result = bwrap("exec unshare --user /bin/true");
  ASSERT_EQ(result.report.at("final"), "bwrap") << result.run.err;
  ASSERT_NE(result.run.status.exit_code, 0) << "unshare --user succeeded inside the sandbox";
  const DenialAssessment verdict = classify(result);
  EXPECT_TRUE(verdict.likely_sandbox_denial) << verdict.reason << "\n" << result.run.err;
  EXPECT_EQ(verdict.kind, DenialKind::kSyscallFilter) << verdict.evidence;
}

TEST_F(RealFailures, BwrapOrdinaryFailureIsNotADenial) {
  require_bwrap();
  const ExecResult result = bwrap("ls /no-such-dir-sbx; exit 3");
  ASSERT_EQ(result.report.at("final"), "bwrap") << result.run.err;
  EXPECT_EQ(result.run.status.exit_code, 3);
  const DenialAssessment verdict = classify(result);
  EXPECT_FALSE(verdict.likely_sandbox_denial) << verdict.reason << ": " << verdict.evidence;
}

TEST_F(RealFailures, Stage2FailureIsASetupFailure) {
  // sbx-stage2 refuses to run while it still holds capabilities (here: run directly as root,
  // outside bwrap), or rejects its arguments: either way it names the step and exits 125.
  const std::string stage2 = kPrefix + "/libexec/sbx/sbx-stage2";
  if (!fs::exists(stage2)) GTEST_SKIP() << "no installed sbx-stage2 at " << stage2;
  const std::vector<std::string> argv =
      ::geteuid() == 0 ? std::vector<std::string>{stage2, "--net", "blocked", "--", "/bin/true"}
                       : std::vector<std::string>{stage2, "--net", "blocked", "--", "true"};
  const Outcome result = run(argv);
  ASSERT_EQ(result.status.exit_code, 125) << result.err;
  const DenialAssessment verdict =
      classify_failure(FailedCommand{result.status, result.err, "bwrap"});
  EXPECT_TRUE(verdict.likely_sandbox_denial) << verdict.reason;
  EXPECT_EQ(verdict.kind, DenialKind::kSandboxSetup);
  EXPECT_EQ(verdict.evidence.rfind("sbx-stage2: ", 0), 0u) << verdict.evidence;
}

TEST_F(RealFailures, UnsandboxedOrdinaryFailureIsNotADenial) {
  const ExecResult result = sbx_exec({"exec", "--preset", "danger-full-access", "--json", "--",
                                      "/bin/sh", "-c", "cat /no-such-file-sbx; exit 2"},
                                     workdir_);
  ASSERT_EQ(result.report.at("final"), "none") << result.run.err;
  EXPECT_EQ(result.run.status.exit_code, 2);
  const DenialAssessment verdict = classify(result);
  EXPECT_FALSE(verdict.likely_sandbox_denial) << verdict.reason;
}

TEST_F(RealFailures, UnsandboxedPermissionErrorIsTheHostsNotTheSandboxs) {
  // The same words as a sandbox denial, from a command that ran without a sandbox.
  const ExecResult result = sbx_exec(
      {"exec", "--preset", "danger-full-access", "--json", "--", "/bin/sh", "-c",
       "echo 'x: Permission denied' >&2; exit 1"},
      workdir_);
  ASSERT_EQ(result.report.at("final"), "none") << result.run.err;
  const DenialAssessment verdict = classify(result);
  EXPECT_FALSE(verdict.likely_sandbox_denial) << verdict.reason;
}

}  // namespace
}  // namespace sbx
