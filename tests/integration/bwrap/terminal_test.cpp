// A bwrap-sandboxed command cannot inject input into, or re-route, the terminal it inherits
// (terminal_attempts.hpp): the stage-2 seccomp filter refuses those ioctls with EPERM.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"
#include "sbx_test/terminal_attempts.hpp"

namespace {

using namespace sbx::test;

TEST(BwrapTerminal, InheritedTerminalRefusesInjectionIoctls) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  TempDir ws;
  ASSERT_FALSE(ws.path().empty());
  const RunResult r = run_with_terminal_stdin({sbx_path(), "--backends", "bwrap", "exec",
                                               "--preset", "workspace-write", "--cwd", ws.path(),
                                               "--", "/bin/sh", "-c", terminal_script()});
  expect_terminal_injection_refused(r);
}

}  // namespace
