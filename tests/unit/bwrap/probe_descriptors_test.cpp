// The bwrap probe's trial sandboxes get no descriptor of the process that probes: a descriptor
// this process holds without close-on-exec (as an embedding agent's sockets or log files may be)
// does not show in the trial sandbox's /proc/self/fd. The same listing started by a plain
// popen() does show it, so the test is able to see a leak.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "sbx/bwrap/host.hpp"

namespace {

using namespace sbx::bwrap;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kCanaryPrefix = "sbx-probe-leak-canary-";

// A temporary file held open on a descriptor without close-on-exec (mkstemp sets no
// O_CLOEXEC), removed again at the end.
struct LeakedDescriptor {
  LeakedDescriptor() {
    std::string tmpl = std::string("/tmp/") + kCanaryPrefix + "XXXXXX";
    fd = ::mkstemp(tmpl.data());
    path = tmpl;
  }
  ~LeakedDescriptor() {
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
  }
  LeakedDescriptor(const LeakedDescriptor&) = delete;
  LeakedDescriptor& operator=(const LeakedDescriptor&) = delete;
  int fd = -1;
  std::string path;
};

std::string popen_output(const char* command) {
  std::string out;
  FILE* pipe = ::popen(command, "r");
  if (pipe == nullptr) return out;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  ::pclose(pipe);
  return out;
}

TEST(BwrapProbeTrial, NoInheritedDescriptorReachesTheTrialSandbox) {
  const sbx::Result<std::string> bwrap = find_trusted_bwrap({});
  if (!bwrap.ok()) GTEST_SKIP() << "no trusted bwrap here: " << bwrap.error();
  LeakedDescriptor leaked;
  ASSERT_GE(leaked.fd, 0);
  // The control: an ordinary child of this process inherits the descriptor.
  ASSERT_THAT(popen_output("/bin/ls -l /proc/self/fd"), HasSubstr(kCanaryPrefix));

  // The probe's own trial path, with a command that lists what the sandbox holds.
  const ProbeRun run = run_trial_sandbox(*bwrap, {"--unshare-user", "--ro-bind", "/", "/"},
                                         {"/bin/ls", "-l", "/proc/self/fd"}, 5000);
  const ProbeRun plain =
      run_trial_sandbox(*bwrap, {"--unshare-user", "--ro-bind", "/", "/"}, {"/bin/true"}, 5000);
  if (plain.exit_code != 0)
    GTEST_SKIP() << "bwrap cannot create a sandbox here (the probe would report it): "
                 << plain.output;
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, Not(HasSubstr(kCanaryPrefix)));
  // Nothing but stdin, stdout, stderr and the directory ls itself opened to list them.
  std::size_t listed = 0;
  for (std::size_t at = run.output.find(" -> "); at != std::string::npos;
       at = run.output.find(" -> ", at + 1))
    ++listed;
  EXPECT_LE(listed, 4U) << run.output;
}

}  // namespace
