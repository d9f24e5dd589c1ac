// A bwrap-sandboxed command cannot inject input into, or re-route, the terminal it inherits
// (terminal_attempts.hpp): the stage-2 seccomp filter refuses those ioctls with EPERM. As root and
// as an unprivileged user (sbx_test/identity.hpp).
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"
#include "sbx_test/terminal_attempts.hpp"

namespace {

using namespace sbx::test;

class BwrapTerminal : public ::testing::TestWithParam<Identity> {};

TEST_P(BwrapTerminal, InheritedTerminalRefusesInjectionIoctls) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "bwrap");
  TempDir ws;
  ASSERT_FALSE(ws.path().empty());
  give_to(who, ws.path());
  const RunResult r = run_with_terminal_stdin(
      argv_as(who, exec_argv("bwrap", {"--preset", "workspace-write"}, ws.path(),
                             {"/bin/sh", "-c", terminal_script()})),
      env_for(who));
  expect_terminal_injection_refused(r);
}

INSTANTIATE_TEST_SUITE_P(Identities, BwrapTerminal, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
