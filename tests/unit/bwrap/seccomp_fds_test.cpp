// The seccomp filter as bwrap takes it (seccomp_fds.hpp): the argv it adds, the sealed memfds
// holding exactly the precompiled programs, and the real bwrap installing them for the command
// (no_new_privs on, two filters, capabilities gone, a namespace refused).
#include "sbx/bwrap/seccomp_fds.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "seccomp_programs.hpp"

namespace {

using sbx::bwrap::seccomp_program_fds;
using sbx::bwrap::with_seccomp_fds;
using sbx::stage2::NetworkFilter;

constexpr const char* kBwrap = "/usr/bin/bwrap";

std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<std::size_t>(n));
  return out;
}

// Runs bwrap with `args` (after its path) with the filter's memfds as descriptors 10 and 11;
// returns the exit code (or -1) and fills `output` with what the command printed.
int run_bwrap(const sbx::bwrap::SeccompFds* fds, const std::vector<std::string>& args,
              std::string& output) {
  std::vector<std::string> argv = {kBwrap};
  argv.insert(argv.end(), args.begin(), args.end());
  if (fds != nullptr) argv = with_seccomp_fds(argv, 10, 11);
  std::vector<char*> c_argv;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    // dup2 clears close-on-exec on the copies: exactly these reach bwrap.
    if (dup2(out[1], 1) < 0) _exit(120);
    if (fds != nullptr && (dup2(fds->table(), 10) < 0 || dup2(fds->rules(), 11) < 0)) _exit(121);
    char* empty_env[] = {nullptr};
    execve(kBwrap, c_argv.data(), empty_env);
    _exit(122);
  }
  close(out[1]);
  output = read_all(out[0]);
  close(out[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

const std::vector<std::string> kSandbox = {"--unshare-user",
                                           "--unshare-pid",
                                           "--unshare-net",
                                           "--die-with-parent",
                                           "--new-session",
                                           "--cap-drop",
                                           "ALL",
                                           "--ro-bind",
                                           "/",
                                           "/",
                                           "--proc",
                                           "/proc",
                                           "--dev",
                                           "/dev"};

TEST(BwrapSeccompFds, InsertedRightAfterBwrapPathTableFirst) {
  EXPECT_EQ(with_seccomp_fds({"/usr/bin/bwrap", "--ro-bind", "/", "/", "--", "/bin/true"}, 7, 8),
            (std::vector<std::string>{"/usr/bin/bwrap", "--add-seccomp-fd", "7", "--add-seccomp-fd",
                                      "8", "--ro-bind", "/", "/", "--", "/bin/true"}));
  EXPECT_TRUE(with_seccomp_fds({}, 7, 8).empty());
}

TEST(BwrapSeccompFds, SealedMemfdsHoldExactlyThePrecompiledPrograms) {
  for (NetworkFilter net : {NetworkFilter::kBlocked, NetworkFilter::kOpen, NetworkFilter::kProxy,
                            NetworkFilter::kPrivate}) {
    sbx::Result<sbx::bwrap::SeccompFds> fds = seccomp_program_fds(net);
    ASSERT_TRUE(fds.ok()) << fds.error();
    const sbx::stage2::PrecompiledFilter expected = sbx::stage2::precompiled_filter(net);
    EXPECT_EQ(read_all(fds->table()), sbx::stage2::program_bytes(expected.table));
    EXPECT_EQ(read_all(fds->rules()), sbx::stage2::program_bytes(expected.rules));
    for (int fd : {fds->table(), fds->rules()}) {
      const int seals = fcntl(fd, F_GET_SEALS);
      EXPECT_EQ(seals & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
                F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
      EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
      const char byte = 'x';
      EXPECT_LT(pwrite(fd, &byte, 1, 0), 0) << "a sealed program must not be writable";
    }
  }
}

TEST(BwrapSeccompFds, BwrapInstallsThemForTheCommand) {
  if (!std::filesystem::exists(kBwrap)) GTEST_SKIP() << kBwrap << " is not installed";
  std::string output;
  if (run_bwrap(
          nullptr,
          [] {
            std::vector<std::string> a = kSandbox;
            a.insert(a.end(), {"--", "/bin/true"});
            return a;
          }(),
          output) != 0)
    GTEST_SKIP() << "bwrap cannot create a sandbox here (user namespaces unavailable?)";
  sbx::Result<sbx::bwrap::SeccompFds> fds = seccomp_program_fds(NetworkFilter::kPrivate);
  ASSERT_TRUE(fds.ok()) << fds.error();
  std::vector<std::string> args = kSandbox;
  args.insert(args.end(),
              {"--", "/bin/sh", "-c",
               "grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters|CapEff):' /proc/self/status; "
               "unshare -U /bin/true 2>/dev/null && echo unshare-worked; "
               "exit 0"});
  // The same command without the filter: the differences below are the filter's doing.
  std::string control;
  ASSERT_EQ(run_bwrap(nullptr, args, control), 0) << control;
  EXPECT_NE(control.find("Seccomp:\t0"), std::string::npos) << control;
  EXPECT_NE(control.find("unshare-worked"), std::string::npos) << control;
  ASSERT_EQ(run_bwrap(&*fds, args, output), 0) << output;
  EXPECT_NE(output.find("NoNewPrivs:\t1"), std::string::npos) << output;
  EXPECT_NE(output.find("Seccomp:\t2"), std::string::npos) << output;
  EXPECT_NE(output.find("Seccomp_filters:\t2"), std::string::npos) << output;
  EXPECT_NE(output.find("CapEff:\t0000000000000000"), std::string::npos) << output;
  EXPECT_EQ(output.find("unshare-worked"), std::string::npos) << output;
}

}  // namespace
