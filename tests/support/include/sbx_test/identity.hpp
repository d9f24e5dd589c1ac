// Who starts sbx: escape suites run every case as root and as an unprivileged user, the two
// equal threat cases (containers and CI start sbx as root, a developer as themself).
//
//   Identity::kRoot          the test's own process; available only when the tests run as root.
//   Identity::kUnprivileged  user 65534 (nobody) through `setpriv --reuid=65534 --regid=65534
//                            --clear-groups` when the tests run as root; the test's own user
//                            (no switch) when they do not.
//
// Use (see tests/integration/escape/escape_test.cpp):
//   if (auto why = identity_unavailable(who, backend, {probe_path()}); !why.empty())
//     GTEST_SKIP() << why;
//   give_to(who, dir);                                 // everything the run should own
//   exec_as(who, backend, policy, cwd, command, env_for(who));
//   EXPECT_EQ(runs_as_problem(who, backend, policy, cwd), "");  // once per suite
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "sbx_test/process.hpp"

namespace sbx::test {

enum class Identity { kRoot, kUnprivileged };

// "root" or "user": for parameterized test names.
const char* name_of(Identity who);

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
// removed at exit), and no XDG_RUNTIME_DIR (root's would leak into the user's runs).
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
