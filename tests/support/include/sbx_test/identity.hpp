// Who starts sbx: escape suites run every case as root and as an unprivileged user, the two
// equal threat cases (containers and CI start sbx as root, a developer as themself).
//
//   Identity::kRoot          the test's own process; available only when the tests run as root.
//   Identity::kUnprivileged  user 65534 (nobody) through `setpriv --reuid=65534 --regid=65534
//                            --clear-groups` when the tests run as root; the test's own user
//                            (no switch) when they do not.
//
// Use (tests/integration/escape/escape_test.cpp; bwrap/set_id_test.cpp for a small one):
//   class MySuite : public ::testing::TestWithParam<Identity> {};
//   TEST_P(MySuite, Case) {
//     const Identity who = GetParam();
//     SBX_REQUIRE_IDENTITY(who, "bwrap", {probe_path()});     // skips with the reason
//     give_to(who, ws.path());                  // after creating what the run attacks
//     const RunResult r = exec_as(who, "bwrap", policy, ws.path(), command, env_for(who));
//   }
//   INSTANTIATE_TEST_SUITE_P(Identities, MySuite, ::testing::ValuesIn(kIdentities),
//                            identity_test_name);
//   EXPECT_EQ(runs_as_problem(who, backend, policy, cwd), "");  // once per suite
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <ostream>
#include <string>
#include <vector>

#include "sbx_test/process.hpp"

namespace sbx::test {

enum class Identity { kRoot, kUnprivileged };

inline constexpr Identity kIdentities[] = {Identity::kRoot, Identity::kUnprivileged};

// "root" or "user": for parameterized test names.
const char* name_of(Identity who);
// The name generator for a suite parameterized over kIdentities.
inline std::string identity_test_name(const ::testing::TestParamInfo<Identity>& info) {
  return name_of(info.param);
}
// How gtest prints an identity in a parameter.
inline void PrintTo(Identity who, std::ostream* os) { *os << name_of(who); }

// The uid and gid a run as `who` has on the host.
uid_t uid_of(Identity who);
gid_t gid_of(Identity who);

// "" when the installed sbx can run `backend` as `who` here, else why not (for GTEST_SKIP):
// not running as root, no setpriv, user 65534 cannot create user namespaces (bwrap) or
// execute the install tree or one of `programs` (a private parent directory). Cached per
// process.
std::string identity_unavailable(Identity who, const std::string& backend,
                                 const std::vector<std::string>& programs = {});

// Makes `path` and everything below it belong to `who` (lchown, symlinks not followed), so
// that what a command may not do there it cannot do because of the sandbox, not because of the
// file's owner. Nothing to do when `who` is the test's own user.
void give_to(Identity who, const std::string& path);

// base_env() for `who`: HOME is a directory `who` owns (for 65534 one made for this process,
// removed at exit; for the test's own ordinary user their home from passwd), and no
// XDG_RUNTIME_DIR (root's would leak into the user's runs).
std::vector<std::string> env_for(Identity who);
// The HOME of env_for(who).
std::string home_of(Identity who);

// argv run as `who`: behind setpriv when switching to 65534.
std::vector<std::string> argv_as(Identity who, const std::vector<std::string>& argv);

// run() and exec_with() as `who`.
RunResult run_as(Identity who, const std::vector<std::string>& argv,
                 const std::vector<std::string>& env, const std::string& input = "");
RunResult exec_as(Identity who, const std::string& backend, const std::vector<std::string>& policy,
                  const std::string& cwd, const std::vector<std::string>& command,
                  const std::vector<std::string>& env, const std::string& input = "");

// "" when a run as `who` really is `who`'s, else what is wrong. Runs `sbx exec` with `policy`
// in `cwd` (which `who` must own) and checks from inside (`id -u` of the command) and from
// outside (the uid of the running sbx process, found by its arguments in /proc; the owner on
// the host of a file the command created).
std::string runs_as_problem(Identity who, const std::string& backend,
                            const std::vector<std::string>& policy, const std::string& cwd);

}  // namespace sbx::test

// In a test body: skip the test, with the reason, when the installed sbx cannot run `backend`
// as `who` here (GTEST_SKIP must be expanded in the test body itself to end it).
#define SBX_REQUIRE_IDENTITY(who, backend, ...)                                     \
  do {                                                                              \
    const std::string sbx_identity_why =                                            \
        ::sbx::test::identity_unavailable(who, backend __VA_OPT__(, ) __VA_ARGS__); \
    if (!sbx_identity_why.empty()) GTEST_SKIP() << sbx_identity_why;                \
  } while (0)
