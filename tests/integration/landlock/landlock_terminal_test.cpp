// A Landlock-sandboxed command cannot inject input into, or re-route, the terminal it inherits
// (terminal_attempts.hpp). Landlock's ioctl right covers only devices opened inside the sandbox,
// not an inherited descriptor; the stage-2 seccomp filter refuses those ioctls with EPERM. As root
// and as an unprivileged user (sbx_test/identity.hpp).
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"
#include "sbx_test/terminal_attempts.hpp"

namespace {

using namespace sbx::test;

class LandlockTerminal : public ::testing::TestWithParam<Identity> {};

TEST_P(LandlockTerminal, InheritedTerminalRefusesInjectionIoctls) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "landlock");
  TempDir ws{"/var/tmp"};
  TempDir conf{"/var/tmp"};
  ASSERT_FALSE(ws.path().empty());
  ASSERT_FALSE(conf.path().empty());
  const std::string policy = conf / "policy.json";
  write_file(policy, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                     R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
                     R"("protected_names":[]},"network":{"mode":"restricted"}})");
  give_to(who, ws.path());
  give_to(who, conf.path());
  const RunResult r =
      run_with_terminal_stdin(argv_as(who, exec_argv("landlock", {"--policy", policy}, ws.path(),
                                                     {"/bin/sh", "-c", terminal_script()})),
                              env_for(who));
  expect_terminal_injection_refused(r);
}

INSTANTIATE_TEST_SUITE_P(Identities, LandlockTerminal, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
