// The C API against libsbx from the build tree: error strings for bad input, the pure parts
// (questions, algebra, context, classification), and a manager whose preference names no
// loadable backend, so "wanted but none available" is deterministic on every host. Sandboxed
// runs through real backends are covered by capi.python_example against the installed tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "capi_call.hpp"
#include "sbx/sbx.h"
#include "sbx_test/temp_dir.hpp"

extern "C" int sbx_capi_header_check(void);

namespace {

namespace json = boost::json;

using sbx_capi_test::Call;
using sbx_capi_test::take;

const char* kWorkspace = R"({"version":1,"preset":"workspace-write"})";
const char* kFull = R"({"version":1,"preset":"danger-full-access"})";
const char* kDeny = R"({"version":1,"filesystem":{"kind":"restricted","entries":[
  {"path":":root","access":"read"},{"path":":cwd","access":"write"},
  {"path":"~/.ssh","access":"deny"}]}})";

using sbx::test::TempDir;

TEST(CApi, HeaderIsValidC) { EXPECT_EQ(sbx_capi_header_check(), 0); }

TEST(CApi, VersionAndErrorBasics) {
  EXPECT_NE(std::string(sbx_version()), "");
  EXPECT_STREQ(sbx_error_message(nullptr), "");
  sbx_error_free(nullptr);
  sbx_string_free(nullptr);
  // A NULL error out-pointer is allowed: the failure is still reported by the NULL result.
  EXPECT_EQ(sbx_should_sandbox(nullptr, nullptr, nullptr), nullptr);
}

TEST(CApi, BadInputGivesPreciseErrors) {
  sbx_error* error = nullptr;
  Call call = take(sbx_should_sandbox(nullptr, nullptr, &error), &error);
  EXPECT_FALSE(call.ok);
  EXPECT_EQ(call.error, "policy_json is NULL; pass a value");

  error = nullptr;
  call = take(sbx_should_sandbox(R"({"version":1,"filesystem":{"kind":"nope"}})", "auto", &error),
              &error);
  EXPECT_FALSE(call.ok);
  EXPECT_NE(call.error.find("invalid policy: /filesystem/kind"), std::string::npos) << call.error;

  error = nullptr;
  call = take(sbx_should_sandbox(kWorkspace, "sometimes", &error), &error);
  EXPECT_FALSE(call.ok);
  EXPECT_NE(call.error.find("sometimes"), std::string::npos) << call.error;

  error = nullptr;
  call = take(sbx_context(kWorkspace, "relative/dir", 0, &error), &error);
  EXPECT_NE(call.error.find("not absolute"), std::string::npos) << call.error;

  error = nullptr;
  call = take(sbx_classify_failure(1, 0, nullptr, 5, "bwrap", &error), &error);
  EXPECT_EQ(call.error, "stderr_text is NULL but stderr_len is not 0");
}

// Each kind libsbx reports, through sbx_error_kind; NULL reads as host_failure.
TEST(CApi, ErrorKinds) {
  EXPECT_EQ(sbx_error_kind(nullptr), SBX_ERROR_HOST_FAILURE);
  sbx_error* error = nullptr;
  Call call = take(sbx_should_sandbox(nullptr, nullptr, &error), &error);
  EXPECT_EQ(call.kind, SBX_ERROR_INVALID_INPUT) << call.error;
  call = take(sbx_should_sandbox(R"({"version":1,"filesystem":{"kind":"nope"}})", "auto", &error),
              &error);
  EXPECT_EQ(call.kind, SBX_ERROR_INVALID_INPUT) << call.error;
  call = take(sbx_should_sandbox(kWorkspace, "sometimes", &error), &error);
  EXPECT_EQ(call.kind, SBX_ERROR_INVALID_INPUT) << call.error;
  // A policy with deny entries never runs unsandboxed: --sandbox forbid is refused.
  call = take(sbx_should_sandbox(kDeny, "forbid", &error), &error);
  EXPECT_EQ(call.kind, SBX_ERROR_REFUSED) << call.error;
  // A manager whose only backend does not exist: a sandbox is wanted, none can enforce it.
  sbx_manager* none = sbx_manager_new("no-such-backend", &error);
  ASSERT_NE(none, nullptr) << sbx_error_message(error);
  TempDir dir;
  const char* argv[] = {"true", nullptr};
  call = take(sbx_transform(none, kWorkspace, dir.path().c_str(), argv, nullptr, &error), &error);
  EXPECT_EQ(call.kind, SBX_ERROR_UNAVAILABLE) << call.error;
  // sbx_exec reports the same refusal in its report, with the kind's name.
  call = take(sbx_exec(none, kWorkspace, dir.path().c_str(), argv, nullptr, 0, &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  EXPECT_EQ(json::parse(call.text).at("error_kind").as_string(), "unavailable") << call.text;
  sbx_manager_free(none);
}

TEST(CApi, ShouldSandboxAndForbidWithDeny) {
  sbx_error* error = nullptr;
  Call call = take(sbx_should_sandbox(kWorkspace, nullptr, &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  EXPECT_EQ(json::parse(call.text).at("sandbox").as_bool(), true);
  error = nullptr;
  call = take(sbx_should_sandbox(kDeny, "forbid", &error), &error);
  EXPECT_FALSE(call.ok);
  EXPECT_NE(call.error.find("deny"), std::string::npos) << call.error;
}

TEST(CApi, WidenAndApprove) {
  const char* extra = R"({"version":1,"filesystem":{"kind":"restricted","entries":[
    {"path":"~/.cache","access":"write"}]},"network":{"mode":"enabled"}})";
  sbx_error* error = nullptr;
  Call wide = take(sbx_policy_widen(kDeny, extra, &error), &error);
  ASSERT_TRUE(wide.ok) << wide.error;
  const json::value widened = json::parse(wide.text);
  EXPECT_EQ(widened.at("network").at("mode").as_string(), "enabled");
  EXPECT_EQ(widened.at("filesystem").at("entries").as_array().size(), 4u);

  error = nullptr;
  Call approved = take(sbx_policy_approve(kDeny, wide.text.c_str(), &error), &error);
  ASSERT_TRUE(approved.ok) << approved.error;
  const json::value approval = json::parse(approved.text);
  EXPECT_TRUE(approval.at("recorded").as_bool());
  EXPECT_EQ(approval.at("policy").at("network").at("mode").as_string(), "restricted");

  error = nullptr;
  Call nothing = take(sbx_policy_approve(R"({"version":1,"filesystem":{"kind":"restricted",
      "entries":[{"path":"/opt/a","access":"write"}]}})",
                                         R"({"version":1,"filesystem":{"kind":"restricted",
      "entries":[{"path":"/opt/b","access":"write"}]}})",
                                         &error),
                      &error);
  ASSERT_TRUE(nothing.ok) << nothing.error;
  const json::value empty = json::parse(nothing.text);
  EXPECT_FALSE(empty.at("recorded").as_bool());
  EXPECT_TRUE(empty.at("policy").is_null());
  EXPECT_EQ(empty.at("dropped").as_array().size(), 1u);

  error = nullptr;
  Call bad = take(sbx_policy_widen(kDeny, "{", &error), &error);
  EXPECT_EQ(bad.error.rfind("extra: invalid policy: /", 0), 0u) << bad.error;
}

TEST(CApi, ContextTextAndJson) {
  TempDir dir;
  sbx_error* error = nullptr;
  Call text = take(sbx_context(kDeny, dir.path().c_str(), 0, &error), &error);
  ASSERT_TRUE(text.ok) << text.error;
  EXPECT_NE(text.text.find("- Writing is allowed only in:\n  - \"" + dir.path() + "\""),
            std::string::npos)
      << text.text;
  error = nullptr;
  Call structured = take(sbx_context(kDeny, dir.path().c_str(), 1, &error), &error);
  ASSERT_TRUE(structured.ok) << structured.error;
  EXPECT_EQ(json::parse(structured.text).at("mode").as_string(), "workspace-write");
}

TEST(CApi, ClassifyHandlesBinaryStderr) {
  const std::string err =
      std::string("bin") + '\0' + "ary\nsbx-stage2: seccomp: load failed: Invalid argument\n";
  sbx_error* error = nullptr;
  Call call = take(sbx_classify_failure(125, 0, err.data(), err.size(), "bwrap", &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  const json::value verdict = json::parse(call.text);
  EXPECT_EQ(verdict.at("kind").as_string(), "sandbox_setup");
  EXPECT_TRUE(verdict.at("likely_sandbox_denial").as_bool());
}

// A manager that prefers only a backend that does not exist: a sandbox is wanted but none is
// available, on every host.
class NoBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    sbx_error* error = nullptr;
    manager_ = sbx_manager_new("no-such-backend", &error);
    ASSERT_NE(manager_, nullptr) << sbx_error_message(error);
  }
  void TearDown() override { sbx_manager_free(manager_); }

  json::value exec(const char* policy, const char* script, unsigned flags) {
    const char* argv[] = {"/bin/sh", "-c", script, nullptr};
    sbx_error* error = nullptr;
    Call call =
        take(sbx_exec(manager_, policy, dir_.path().c_str(), argv, nullptr, flags, &error), &error);
    EXPECT_TRUE(call.ok) << call.error;
    return call.ok ? json::parse(call.text) : json::value();
  }

  sbx_manager* manager_ = nullptr;
  TempDir dir_;
};

TEST_F(NoBackend, ExplainSaysWantedButNone) {
  sbx_error* error = nullptr;
  Call call = take(sbx_explain(manager_, kWorkspace, dir_.path().c_str(), nullptr, &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  const json::value report = json::parse(call.text);
  EXPECT_TRUE(report.at("should_sandbox").as_bool());
  EXPECT_EQ(report.at("final").as_string(), "none");
}

// The model is told that every run is refused here, and why, not a backend's limits.
TEST_F(NoBackend, ManagerContextSaysRunsAreRefused) {
  sbx_error* error = nullptr;
  Call call = take(
      sbx_manager_context(manager_, kWorkspace, dir_.path().c_str(), nullptr, 1, &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  const json::value context = json::parse(call.text);
  EXPECT_TRUE(context.at("sandboxed").as_bool());
  EXPECT_TRUE(context.at("backend").is_null());
  EXPECT_NE(std::string(context.at("no_backend_reason").as_string()).find("no-such-backend"),
            std::string::npos)
      << call.text;
  call = take(sbx_manager_context(manager_, kWorkspace, dir_.path().c_str(), nullptr, 0, &error),
              &error);
  ASSERT_TRUE(call.ok) << call.error;
  EXPECT_NE(call.text.find("so every command is refused and does not run"), std::string::npos)
      << call.text;
  // Without the manager nothing is probed: every backend labelled, no refusal claimed.
  call = take(sbx_context(kWorkspace, dir_.path().c_str(), 1, &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  EXPECT_TRUE(json::parse(call.text).at("no_backend_reason").is_null());
  // A refused preference is the caller's error, as with sbx_explain.
  call =
      take(sbx_manager_context(manager_, kWorkspace, dir_.path().c_str(), "sometimes", 0, &error),
           &error);
  EXPECT_FALSE(call.ok);
}

TEST_F(NoBackend, TransformRefuses) {
  const char* argv[] = {"true", nullptr};
  sbx_error* error = nullptr;
  Call call =
      take(sbx_transform(manager_, kWorkspace, dir_.path().c_str(), argv, nullptr, &error), &error);
  EXPECT_FALSE(call.ok);
  EXPECT_NE(call.error.find("no backend is available"), std::string::npos) << call.error;
}

TEST_F(NoBackend, ExecRefusesWithoutOverrideAndNeverForADenyPolicy) {
  const std::string marker = dir_.path() + "/ran";
  const std::string script = "touch " + marker;
  json::value report = exec(kWorkspace, script.c_str(), 0);
  EXPECT_TRUE(report.at("exit").is_null());
  EXPECT_NE(std::string(report.at("error").as_string()).find("SBX_EXEC_ALLOW_UNSANDBOXED"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(marker));

  report = exec(kDeny, script.c_str(), SBX_EXEC_ALLOW_UNSANDBOXED);
  EXPECT_TRUE(report.at("exit").is_null());
  EXPECT_NE(std::string(report.at("error").as_string()).find("never runs unsandboxed"),
            std::string::npos)
      << report;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a deny policy ran unsandboxed";

  report = exec(kWorkspace, script.c_str(), SBX_EXEC_ALLOW_UNSANDBOXED);
  EXPECT_EQ(report.at("exit").at("code").as_int64(), 0);
  EXPECT_TRUE(report.at("allow_unsandboxed_used").as_bool());
  EXPECT_TRUE(std::filesystem::exists(marker));
  // The exec report carries the created-protected-names fields; an unsandboxed run is not
  // watched, so the list is empty.
  EXPECT_TRUE(report.at("protected_names_created").as_array().empty()) << report;
  EXPECT_FALSE(report.at("protected_names_truncated").as_bool()) << report;
}

TEST_F(NoBackend, ReprobeKeepsTheHandleUsable) {
  sbx_error* error = nullptr;
  EXPECT_EQ(sbx_manager_reprobe(nullptr, &error), -1);
  ASSERT_NE(error, nullptr);
  EXPECT_STREQ(sbx_error_message(error), "manager is NULL; create one with sbx_manager_new");
  sbx_error_free(error);
  error = nullptr;
  // Warm calls, a reprobe, and the same answer after it (the backend is still not loadable).
  const std::string before = exec(kWorkspace, "true", 0).at("error").as_string().c_str();
  EXPECT_EQ(sbx_manager_reprobe(manager_, &error), 0);
  EXPECT_EQ(error, nullptr);
  const std::string after = exec(kWorkspace, "true", 0).at("error").as_string().c_str();
  EXPECT_EQ(before, after);
  EXPECT_NE(after.find("no backend is available"), std::string::npos) << after;
}

TEST_F(NoBackend, UnsandboxedFailureIsCapturedAndNotADenial) {
  const json::value report =
      exec(kFull, "echo 'x: Permission denied' >&2; exit 4", SBX_EXEC_CAPTURE_STDERR);
  EXPECT_EQ(report.at("exit").at("code").as_int64(), 4);
  EXPECT_EQ(report.at("stderr_tail").as_string(), "x: Permission denied\n");
  EXPECT_FALSE(report.at("denial").at("likely_sandbox_denial").as_bool());
  EXPECT_EQ(report.at("final").as_string(), "none");
}

}  // namespace

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The C API builds the command's environment with the same filter as `sbx exec`: a
// secret-looking variable of the embedding process is gone unless the policy keeps it, and
// explain names it without its value.
TEST_F(NoBackend, EnvironmentPolicyAppliesAndExplainNamesWhatItRemoves) {
  ASSERT_EQ(::setenv("SBX_CAPI_API_KEY", "capi-secret-value", 1), 0);
  const std::string out = dir_.path() + "/env.txt";
  const std::string script = "env > " + out;
  json::value report = exec(kFull, script.c_str(), 0);
  ASSERT_EQ(report.at("exit").at("code").as_int64(), 0) << report;
  std::string seen = read_text(out);
  EXPECT_EQ(seen.find("SBX_CAPI_API_KEY"), std::string::npos) << seen;
  EXPECT_NE(seen.find("PATH="), std::string::npos) << seen;

  const char* keeps = R"({"version": 1, "preset": "danger-full-access",
                          "environment": {"keep": ["SBX_CAPI_*"]}})";
  report = exec(keeps, script.c_str(), 0);
  ASSERT_EQ(report.at("exit").at("code").as_int64(), 0) << report;
  seen = read_text(out);
  EXPECT_NE(seen.find("SBX_CAPI_API_KEY=capi-secret-value\n"), std::string::npos) << seen;

  sbx_error* error = nullptr;
  Call call = take(sbx_explain(manager_, kFull, dir_.path().c_str(), nullptr, &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  EXPECT_NE(call.text.find("\"SBX_CAPI_API_KEY\""), std::string::npos) << call.text;
  EXPECT_EQ(call.text.find("capi-secret-value"), std::string::npos) << call.text;
  ::unsetenv("SBX_CAPI_API_KEY");
}

// Issue #32 A4: an entry with an empty name ("=x") in the embedding process's environment
// (exec(3) allows one; setenv(3) cannot make one, a parent process can) is not the caller's
// input but what it was started with: it is dropped before the command runs, on every path, and
// explain lists it as "(empty name)" (a bwrap run failed over it with "environment entry ''
// has no name"). A name the caller gives itself, /environment/set in the policy, is input: an
// empty one is refused as invalid before anything runs.
TEST_F(NoBackend, AnEnvironmentEntryWithAnEmptyNameIsDroppedAndNamedButAnEmptySetNameIsInvalid) {
  char entry[] = "=x";
  std::vector<char*> with_entry;
  for (char** e = environ; *e != nullptr; ++e) with_entry.push_back(*e);
  with_entry.push_back(entry);
  with_entry.push_back(nullptr);
  char** const saved = environ;
  environ = with_entry.data();
  const std::string out = dir_.path() + "/env.txt";
  const std::string script = "env > " + out;
  const json::value report = exec(kFull, script.c_str(), SBX_EXEC_ALLOW_UNSANDBOXED);
  sbx_error* error = nullptr;
  const Call explained =
      take(sbx_explain(manager_, kFull, dir_.path().c_str(), nullptr, &error), &error);
  environ = saved;
  ASSERT_EQ(report.at("exit").at("code").as_int64(), 0) << report;
  const std::string seen = read_text(out);
  EXPECT_EQ(seen.find("\n=x\n"), std::string::npos) << seen;
  EXPECT_NE(seen.rfind("=x\n", 0), 0u) << seen;
  ASSERT_TRUE(explained.ok) << explained.error;
  const json::array& removed =
      json::parse(explained.text).at("environment").at("removed").as_array();
  EXPECT_NE(std::find(removed.begin(), removed.end(), json::value("(empty name)")), removed.end())
      << explained.text;

  const char* empty_set = R"({"version": 1, "preset": "danger-full-access",
                              "environment": {"set": {"": "x"}}})";
  const std::string marker = dir_.path() + "/ran";
  const std::string touch = "touch " + marker;
  const char* argv[] = {"/bin/sh", "-c", touch.c_str(), nullptr};
  const Call refused = take(sbx_exec(manager_, empty_set, dir_.path().c_str(), argv, nullptr,
                                     SBX_EXEC_ALLOW_UNSANDBOXED, &error),
                            &error);
  EXPECT_FALSE(refused.ok) << refused.text;
  EXPECT_EQ(refused.kind, SBX_ERROR_INVALID_INPUT) << refused.error;
  EXPECT_NE(refused.error.find("/environment/set/: empty variable name"), std::string::npos)
      << refused.error;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran";
}

}  // namespace

namespace {

bool wait_for_file(const std::string& path) {
  for (int i = 0; i < 1000 && !std::filesystem::exists(path); ++i) ::usleep(10 * 1000);
  return std::filesystem::exists(path);
}

// sbx_manager_free while another thread is inside sbx_exec (issue #32: a heap use-after-free,
// found by ASan): the free waits until the call has returned, so the command had finished when
// it returns, and the exec's report is whole. Real threads, a real command; run it under ASan
// too (the asan preset builds this target: build/asan/.../sbx_integration_capi
// --gtest_filter='CApiFree.*').
TEST(CApiFree, FreeWaitsForTheRunningExec) {
  sbx_error* error = nullptr;
  sbx_manager* manager = sbx_manager_new("no-such-backend", &error);
  ASSERT_NE(manager, nullptr) << sbx_error_message(error);
  TempDir dir;
  const std::string started = dir.path() + "/started";
  const std::string finished = dir.path() + "/finished";
  const std::string script = "touch " + started + "; sleep 1; touch " + finished;
  Call exec_call;
  std::thread runner([&] {
    const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
    sbx_error* exec_error = nullptr;
    exec_call = take(sbx_exec(manager, kFull, dir.path().c_str(), argv, nullptr,
                              SBX_EXEC_ALLOW_UNSANDBOXED, &exec_error),
                     &exec_error);
  });
  ASSERT_TRUE(wait_for_file(started)) << "the command never started";
  sbx_manager_free(manager);
  EXPECT_TRUE(std::filesystem::exists(finished))
      << "sbx_manager_free returned while the command was still running";
  runner.join();
  ASSERT_TRUE(exec_call.ok) << exec_call.error;
  EXPECT_EQ(json::parse(exec_call.text).at("exit").at("code").as_int64(), 0) << exec_call.text;
}

// A second call waiting behind the running exec (for the manager's lock) when the free comes:
// the issue's ASan report (Manager::probe_answer on freed memory) was that call going on after
// the free. Now the free waits for it too, or, had it not entered yet, it is refused.
TEST(CApiFree, ACallWaitingBehindARunningExecIsWaitedForOrRefused) {
  sbx_error* error = nullptr;
  sbx_manager* manager = sbx_manager_new("no-such-backend", &error);
  ASSERT_NE(manager, nullptr) << sbx_error_message(error);
  TempDir dir;
  const std::string started = dir.path() + "/started";
  const std::string script = "touch " + started + "; sleep 1";
  std::thread runner([&] {
    const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
    sbx_error* exec_error = nullptr;
    take(sbx_exec(manager, kFull, dir.path().c_str(), argv, nullptr, SBX_EXEC_ALLOW_UNSANDBOXED,
                  &exec_error),
         &exec_error);
  });
  ASSERT_TRUE(wait_for_file(started)) << "the command never started";
  Call waiting;
  std::thread second([&] {
    sbx_error* explain_error = nullptr;
    waiting = take(sbx_explain(manager, kWorkspace, dir.path().c_str(), nullptr, &explain_error),
                   &explain_error);
  });
  ::usleep(200 * 1000);  // lets the explain reach the manager's lock (only to reproduce the bug)
  sbx_manager_free(manager);
  second.join();
  runner.join();
  EXPECT_TRUE(waiting.ok || waiting.error.find("not a live manager") != std::string::npos)
      << waiting.error;
}

// The same with two threads freeing at once while a third runs a command: one frees, the other
// returns at once, neither touches freed memory.
TEST(CApiFree, TwoFreesDuringARunningExecFreeOnce) {
  sbx_error* error = nullptr;
  sbx_manager* manager = sbx_manager_new("no-such-backend", &error);
  ASSERT_NE(manager, nullptr) << sbx_error_message(error);
  TempDir dir;
  const std::string started = dir.path() + "/started";
  const std::string script = "touch " + started + "; sleep 1";
  std::thread runner([&] {
    const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
    sbx_error* exec_error = nullptr;
    take(sbx_exec(manager, kFull, dir.path().c_str(), argv, nullptr, SBX_EXEC_ALLOW_UNSANDBOXED,
                  &exec_error),
         &exec_error);
  });
  ASSERT_TRUE(wait_for_file(started)) << "the command never started";
  std::thread first([&] { sbx_manager_free(manager); });
  std::thread second([&] { sbx_manager_free(manager); });
  first.join();
  second.join();
  runner.join();
}

// A call on a handle already freed is an error, not a read of freed memory (under ASan the
// freed block is quarantined, so no new manager can have its address here).
TEST(CApiFree, ACallOnAFreedManagerIsAnError) {
  sbx_error* error = nullptr;
  sbx_manager* manager = sbx_manager_new("no-such-backend", &error);
  ASSERT_NE(manager, nullptr) << sbx_error_message(error);
  sbx_manager_free(manager);
  Call call = take(sbx_explain(manager, kWorkspace, nullptr, nullptr, &error), &error);
  EXPECT_FALSE(call.ok);
  EXPECT_NE(call.error.find("not a live manager"), std::string::npos) << call.error;
  EXPECT_EQ(sbx_manager_reprobe(manager, &error), -1);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(sbx_error_message(error)).find("not a live manager"), std::string::npos);
  sbx_error_free(error);
  sbx_manager_free(manager);  // a second free of the same handle does nothing
  sbx_manager_free(nullptr);
}

// A "\u0000" in a policy string is refused naming the entry, never cut at the NUL (a path
// "/tmp/safe\0/../etc" would otherwise be checked as written and used as "/tmp/safe").
TEST(CApi, NulInAPolicyStringIsAnError) {
  const char* policy = R"({"version":1,"filesystem":{"kind":"restricted","entries":[
    {"path":":root","access":"read"},{"path":"/tmp/safe\u0000/../etc","access":"write"}]}})";
  sbx_error* error = nullptr;
  Call call = take(sbx_should_sandbox(policy, nullptr, &error), &error);
  EXPECT_FALSE(call.ok);
  EXPECT_NE(call.error.find("/filesystem/entries/1/path"), std::string::npos) << call.error;
  EXPECT_NE(call.error.find("NUL byte"), std::string::npos) << call.error;
  sbx_manager* with_nul = sbx_manager_new_with_settings(
      "no-such-backend", nullptr, R"({"excluded_commands":["ls\u0000; rm -rf ~"]})", &error);
  EXPECT_EQ(with_nul, nullptr);
  sbx_manager_free(with_nul);
  ASSERT_NE(error, nullptr);
  const std::string message = sbx_error_message(error);
  sbx_error_free(error);
  EXPECT_NE(message.find("/excluded_commands/0"), std::string::npos) << message;
  EXPECT_NE(message.find("NUL byte"), std::string::npos) << message;
}

}  // namespace
