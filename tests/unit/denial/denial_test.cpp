// Denial classification over the per-platform keyword tables and the decision order (the stderr
// tail that feeds it: tests/unit/manager/run_io_test.cpp). Classification of real sandbox
// failures is in tests/integration/denial.
#include "sbx/core/denial.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

namespace sbx {
namespace {

DenialAssessment classify(int exit_code, int signal, std::string_view err,
                          std::string backend = "bwrap", Platform platform = Platform::kLinux) {
  return classify_failure(
      FailedCommand{ExitStatus{exit_code, signal}, err, std::move(backend), platform});
}

struct Case {
  const char* name;
  Platform platform;
  int exit_code;
  int signal;
  const char* err;
  bool likely;
  DenialKind kind;
  const char* evidence;
};

class ClassifyTable : public ::testing::TestWithParam<Case> {};

TEST_P(ClassifyTable, DecidesKindAndEvidence) {
  const Case& c = GetParam();
  const DenialAssessment got = classify(c.exit_code, c.signal, c.err, "some-backend", c.platform);
  EXPECT_EQ(got.likely_sandbox_denial, c.likely) << got.reason;
  EXPECT_EQ(got.kind, c.kind) << got.reason;
  EXPECT_EQ(got.evidence, c.evidence);
  EXPECT_FALSE(got.reason.empty());
}

constexpr auto L = Platform::kLinux;
constexpr auto M = Platform::kMacOS;
constexpr auto W = Platform::kWindows;
constexpr auto kFs = DenialKind::kFilesystem;
constexpr auto kNet = DenialKind::kNetwork;
constexpr auto kNone = DenialKind::kNone;
constexpr auto kSetup = DenialKind::kSandboxSetup;
constexpr auto kSys = DenialKind::kSyscallFilter;

INSTANTIATE_TEST_SUITE_P(
    Denial, ClassifyTable,
    ::testing::Values(
        Case{"linux_erofs", L, 1, 0, "touch: cannot touch '/usr/x': Read-only file system\n", true,
             kFs, "touch: cannot touch '/usr/x': Read-only file system"},
        Case{"linux_exdev", L, 1, 0,
             "OSError: [Errno 18] Invalid cross-device link: 'a/f9' -> '.git/f9'\n", true, kFs,
             "OSError: [Errno 18] Invalid cross-device link: 'a/f9' -> '.git/f9'"},
        Case{"linux_eacces", L, 1, 0, "cat: /root/.ssh/id_rsa: Permission denied\n", true, kFs,
             "cat: /root/.ssh/id_rsa: Permission denied"},
        Case{"linux_eperm", L, 1, 0, "unshare: unshare failed: Operation not permitted", true, kSys,
             "unshare: unshare failed: Operation not permitted"},
        Case{"linux_netunreach", L, 7, 0, "curl: (7) Failed to connect: Network is unreachable\n",
             true, kNet, "curl: (7) Failed to connect: Network is unreachable"},
        Case{"linux_dns", L, 6, 0, "curl: (6) Could not resolve host: example.com\n", true, kNet,
             "curl: (6) Could not resolve host: example.com"},
        Case{"linux_last_line_wins", L, 1, 0,
             "a: Permission denied\nb: Read-only file system\nplain noise\n", true, kFs,
             "b: Read-only file system"},
        Case{"linux_ssh_publickey_is_unrelated", L, 255, 0,
             "git@github.com: Permission denied (publickey).\n", false, kNone, ""},
        Case{"linux_ordinary_failure", L, 2, 0, "ls: cannot access 'nope': No such file\n", false,
             kNone, ""},
        Case{"linux_sigsys_signal", L, 0, 31, "", true, kSys, "signal 31"},
        Case{"linux_sigsegv_is_not_a_denial", L, 0, 11, "", false, kNone, ""},
        Case{"linux_stage2", L, 125, 0,
             "sbx-stage2: landlock: ruleset creation failed: Function not implemented\n", true,
             kSetup, "sbx-stage2: landlock: ruleset creation failed: Function not implemented"},
        Case{"linux_stage2_needs_125", L, 1, 0, "sbx-stage2: seccomp: nope\n", false, kNone, ""},
        Case{"linux_bwrap", L, 1, 0,
             "bwrap: Can't bind mount /oldroot/x on /newroot/x: No such file\n", true, kSetup,
             "bwrap: Can't bind mount /oldroot/x on /newroot/x: No such file"},
        Case{"macos_eperm", M, 1, 0, "touch: /Users/me/x: Operation not permitted\n", true, kFs,
             "touch: /Users/me/x: Operation not permitted"},
        Case{"macos_sigsys_is_12", M, 0, 12, "", true, kSys, "signal 12"},
        Case{"macos_31_is_not_sigsys", M, 0, 31, "", false, kNone, ""},
        Case{"macos_sandbox_exec", M, 71, 0,
             "sandbox-exec: sandbox_apply: Operation not permitted\n", true, kSetup,
             "sandbox-exec: sandbox_apply: Operation not permitted"},
        Case{"macos_dns", M, 6, 0, "getaddrinfo: nodename nor servname provided, or not known\n",
             true, kNet, "getaddrinfo: nodename nor servname provided, or not known"},
        Case{"windows_access_denied", W, 1, 0, "Access is denied.\r\n", true, kFs,
             "Access is denied."},
        Case{
            "windows_socket", W, 1, 0,
            "An attempt was made to access a socket in a way forbidden by its access permissions.",
            true, kNet,
            "An attempt was made to access a socket in a way forbidden by its access permissions."},
        Case{"windows_linux_text_not_in_table", W, 1, 0, "x: Read-only file system\n", false, kNone,
             ""}),
    [](const ::testing::TestParamInfo<Case>& param_info) {
      return std::string(param_info.param.name);
    });

// Every backend reports a death by signal as the signal (bwrap's direct launch too, through its
// waiter: plugins/bwrap/README.md), so a plain `exit 159` is the command's own code, never
// "killed by SIGSYS", whatever the backend (issue #33); SIGSYS itself is.
TEST(Classify, ExitCode159IsNeverSigsys) {
  for (const char* backend : {"bwrap", "landlock", "seatbelt", "some-backend"}) {
    const DenialAssessment plain = classify(159, 0, "", backend);
    EXPECT_FALSE(plain.likely_sandbox_denial) << backend << ": " << plain.reason;
    EXPECT_EQ(plain.kind, DenialKind::kNone) << backend;
    const DenialAssessment killed = classify(0, 31, "", backend);
    EXPECT_TRUE(killed.likely_sandbox_denial) << backend;
    EXPECT_EQ(killed.kind, DenialKind::kSyscallFilter) << backend;
    EXPECT_EQ(killed.evidence, "signal 31") << backend;
  }
}

TEST(Classify, SuccessIsNeverADenial) {
  EXPECT_FALSE(classify(0, 0, "x: Permission denied\n").likely_sandbox_denial);
}

TEST(Classify, UnsandboxedRunIsNeverADenial) {
  for (const char* backend : {"", "none"}) {
    const DenialAssessment got = classify(1, 0, "x: Read-only file system\n", backend);
    EXPECT_FALSE(got.likely_sandbox_denial);
    EXPECT_NE(got.reason.find("without a sandbox"), std::string::npos) << got.reason;
  }
}

TEST(Classify, EvidenceIsClippedAndJsonStaysValidUtf8) {
  std::string line(1000, 'a');
  line += ": Permission denied \xff\xfe\n";
  const DenialAssessment got = classify(1, 0, line);
  ASSERT_TRUE(got.likely_sandbox_denial);
  EXPECT_LE(got.evidence.size(), 303u);
  const std::string json = denial_to_json(classify(1, 0, "\xff: Permission denied\n"));
  boost::json::value parsed = boost::json::parse(json);  // throws on invalid JSON
  EXPECT_EQ(parsed.at("kind").as_string(), "filesystem");
  EXPECT_EQ(parsed.at("likely_sandbox_denial").as_bool(), true);
  EXPECT_TRUE(boost::json::parse(denial_to_json(classify(2, 0, ""))).at("evidence").is_null());
}

}  // namespace
}  // namespace sbx
