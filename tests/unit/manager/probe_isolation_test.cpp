// guarded_probe runs each probe in a child with a deadline: a probe that answers gives exactly
// its report; one that throws, crashes, exits, hangs or answers garbage leaves this process
// running and gives an unavailable report naming what happened; the manager then goes on with
// the next backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sbx/core/manager.hpp"

namespace sbx {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class ScriptedBackend final : public Backend {
 public:
  explicit ScriptedBackend(std::function<ProbeReport()> probe)
      : Backend(HostServices(nullptr)), probe_(std::move(probe)) {}
  ProbeReport probe(const ProbeContext&) override { return probe_(); }
  Result<ExecPlan> transform(const TransformRequest&) const override { return Error{"not used"}; }

 private:
  std::function<ProbeReport()> probe_;
};

ProbeReport probe_with(std::function<ProbeReport()> body,
                       std::chrono::milliseconds deadline = kProbeDeadline) {
  ScriptedBackend backend(std::move(body));
  return guarded_probe(backend, deadline);
}

// Dies of `sig` itself, whatever handler a sanitizer installed for it.
[[noreturn]] void die_of(int sig) {
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  ::_exit(99);
}

ProbeReport full_report() {
  ProbeReport report;
  report.available = true;
  // Bytes that are not UTF-8, an embedded NUL, quotes, control characters, non-ASCII text.
  report.summary = std::string("ready \xff\xfe\x80 \"quoted\"\n\ttab ") + '\0' + " after NUL é";
  report.checks = {{"passes", CheckStatus::kPass, "observed \xc3", ""},
                   {"warns", CheckStatus::kWarn, "", "do \\ this"},
                   {"fails", CheckStatus::kFail, std::string(70000, 'x'), "remedy"}};
  report.capabilities = {Capability::kWriteRestriction, Capability::kSyscallFilter,
                         Capability::kUnixSocketAllowlist};
  // A bit no capability uses yet: it travels too.
  report.capabilities.add(static_cast<Capability>(1u << 31));
  return report;
}

void expect_same(const ProbeReport& got, const ProbeReport& want) {
  EXPECT_EQ(got.available, want.available);
  EXPECT_EQ(got.summary, want.summary);
  ASSERT_EQ(got.checks.size(), want.checks.size());
  for (std::size_t i = 0; i < want.checks.size(); ++i) {
    EXPECT_EQ(got.checks[i].name, want.checks[i].name);
    EXPECT_EQ(got.checks[i].status, want.checks[i].status);
    EXPECT_EQ(got.checks[i].observed, want.checks[i].observed);
    EXPECT_EQ(got.checks[i].remedy, want.checks[i].remedy);
  }
  EXPECT_EQ(got.capabilities.bits(), want.capabilities.bits());
}

TEST(ProbeIsolation, AnAnswerArrivesExactlyAsGiven) {
  expect_same(probe_with(full_report), full_report());
  ProbeReport empty;
  expect_same(probe_with([] { return ProbeReport{}; }), empty);
}

TEST(ProbeIsolation, TheProbeRunsInAnotherProcess) {
  const pid_t self = ::getpid();
  const ProbeReport report = probe_with([] {
    ProbeReport r;
    r.summary = std::to_string(::getpid());
    return r;
  });
  EXPECT_NE(report.summary, std::to_string(self));
  EXPECT_FALSE(report.summary.empty());
}

TEST(ProbeIsolation, AnExceptionIsNamed) {
  const ProbeReport report = probe_with([]() -> ProbeReport { throw std::runtime_error("boom"); });
  EXPECT_FALSE(report.available);
  EXPECT_EQ(report.summary, "probe failed with an exception: boom");
  const ProbeReport other = probe_with([]() -> ProbeReport { throw 42; });
  EXPECT_EQ(other.summary, "probe failed with an unknown exception");
}

TEST(ProbeIsolation, ACrashIsNamedWithItsSignal) {
  const ProbeReport segv = probe_with([]() -> ProbeReport { die_of(SIGSEGV); });
  EXPECT_FALSE(segv.available);
  EXPECT_EQ(segv.summary, "probe crashed with SIGSEGV");
  EXPECT_TRUE(segv.checks.empty());
  EXPECT_TRUE(segv.capabilities.empty());
  EXPECT_EQ(probe_with([]() -> ProbeReport { std::abort(); }).summary,
            "probe crashed with SIGABRT");
}

TEST(ProbeIsolation, AnExitWithoutAnswerIsNamed) {
  EXPECT_EQ(probe_with([]() -> ProbeReport { ::_exit(3); }).summary,
            "probe exited with status 3 before it answered");
  EXPECT_EQ(probe_with([]() -> ProbeReport { ::_exit(0); }).summary,
            "probe ended without an answer");
}

TEST(ProbeIsolation, AHangEndsAtTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const ProbeReport report = probe_with(
      []() -> ProbeReport {
        for (;;) ::pause();
      },
      300ms);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(report.available);
  EXPECT_EQ(report.summary, "probe did not answer within 300 ms");
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 5s);
}

// Closing every descriptor ends the answer early; the child is still killed at the deadline.
TEST(ProbeIsolation, AHangAfterClosingTheAnswerEndsAtTheDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const ProbeReport report = probe_with(
      []() -> ProbeReport {
        for (int fd = 3; fd < 1024; ++fd) ::close(fd);
        for (;;) ::pause();
      },
      300ms);
  EXPECT_EQ(report.summary, "probe did not answer within 300 ms");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(ProbeIsolation, GarbageOnTheAnswerPipeIsRefused) {
  const ProbeReport report = probe_with([]() -> ProbeReport {
    // The answer pipe is one of the FIFOs from fd 3 up; the test runner may have left others
    // whose reader is gone, and a write there must not end this child with SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    for (int fd = 3; fd < 1024; ++fd) {
      struct stat st {};
      if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) (void)!::write(fd, "{\"available\":", 13);
    }
    ::_exit(0);
  });
  EXPECT_FALSE(report.available);
  EXPECT_THAT(report.summary, HasSubstr("probe sent an unreadable answer: "));
}

TEST(ProbeIsolation, TheDefaultDeadlineIsTenSeconds) { EXPECT_EQ(kProbeDeadline, 10s); }

// The manager goes on with the next backend and says why the others were passed over.
TEST(ProbeIsolation, SelectionGoesOnPastACrash) {
  auto ready = [] {
    ProbeReport r;
    r.available = true;
    for (Capability c : kAllCapabilities) r.capabilities.add(c);
    r.summary = "ready";
    return r;
  };
  std::vector<LoadedPlugin> plugins;
  plugins.push_back({"crashes", "1", "", "/fake/crashes.so",
                     std::make_shared<ScriptedBackend>([]() -> ProbeReport { die_of(SIGSEGV); })});
  plugins.push_back({"good", "1", "", "/fake/good.so", std::make_shared<ScriptedBackend>(ready)});
  const PluginRegistry registry = PluginRegistry::from_plugins(std::move(plugins));
  const Manager manager(registry, {"crashes", "good"});
  ResolvedPolicy policy;
  policy.rules = {{"/", Access::kRead}, {"/w", Access::kWrite}};
  policy.cwd = "/w";
  const BackendChoice choice = manager.available_backend(policy);
  ASSERT_TRUE(choice.backend.has_value()) << choice.reason;
  EXPECT_EQ(*choice.backend, "good");
  ASSERT_EQ(choice.passed_over.size(), 1u);
  EXPECT_EQ(choice.passed_over[0].backend, "crashes");
  EXPECT_EQ(choice.passed_over[0].reason, "unavailable: probe crashed with SIGSEGV");
}

}  // namespace
}  // namespace sbx
