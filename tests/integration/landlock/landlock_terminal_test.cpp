// A Landlock-sandboxed command cannot inject input into, or re-route, the terminal it inherits
// (terminal_attempts.hpp). Landlock's ioctl right covers only devices opened inside the sandbox,
// not an inherited descriptor; the stage-2 seccomp filter refuses those ioctls with EPERM.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"
#include "sbx_test/terminal_attempts.hpp"

namespace {

using namespace sbx::test;

TEST(LandlockTerminal, InheritedTerminalRefusesInjectionIoctls) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  TempDir ws{"/var/tmp"};
  TempDir conf{"/var/tmp"};
  ASSERT_FALSE(ws.path().empty());
  ASSERT_FALSE(conf.path().empty());
  const std::string policy = conf / "policy.json";
  write_file(policy, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                     R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
                     R"("protected_names":[]},"network":{"mode":"restricted"}})");
  const RunResult r =
      run_with_terminal_stdin({sbx_path(), "--backends", "landlock", "exec", "--policy", policy,
                               "--cwd", ws.path(), "--", "/bin/sh", "-c", terminal_script()});
  expect_terminal_injection_refused(r);
}

}  // namespace
