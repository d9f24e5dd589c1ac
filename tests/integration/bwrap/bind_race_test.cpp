// Check-then-bind race: while a writable root is swapped back and forth with a symlink to a
// directory outside the policy (renameat2 RENAME_EXCHANGE in a tight loop by another process),
// no run may get that directory writable. Each run either works on the real directory or is
// refused with 125. Bounded in attempts and wall time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>

#include <chrono>
#include <iostream>
#include <map>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr int kMaxAttempts = 500;
constexpr auto kMaxWallTime = std::chrono::seconds(60);

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

// A child process that exchanges `a` and `b` until it is killed: `a` is the directory for a
// varying 0 to ~2 ms, then the symlink for a varying 0 to ~0.3 ms. In a tight loop nearly
// every run would already be refused while its policy is resolved, and the later window
// (between the plan and bwrap's mounts) would hardly be exercised.
pid_t start_swapper(const std::string& a, const std::string& b) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (unsigned i = 0;; ++i) {
      ::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
      ::usleep((i * 7919u) % 300u);
      ::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE);
      ::usleep((i * 104729u) % 2000u);
    }
  }
  return pid;
}

// Where a refusal came from, for the summary: sbx's message with the paths left out.
std::string reason_of(const std::string& err) {
  std::string line = err.substr(0, err.find('\n'));
  for (const char* marker :
       {"changed while", "is a symlink", "cannot open bind source", "resolved to",
        "planned mount point", "mounted writable", "bwrap failed"}) {
    if (line.find(marker) != std::string::npos || err.find(marker) != std::string::npos)
      return marker;
  }
  return line.substr(0, 120);
}

void stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST(BwrapBindRace, SwappingAWritableRootForASymlinkNeverMountsItsTarget) {
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  TempDir t("/tmp");           // holds the victim and the symlink (outside every writable root)
  TempDir target("/var/tmp");  // outside the policy: must never become writable
  TempDir ws("/var/tmp");      // the cwd (writable)
  ASSERT_FALSE(t.path().empty() || target.path().empty() || ws.path().empty());
  fs::create_directory(t / "victim");
  fs::create_symlink(target.path(), t / "swapl");
  write_file(ws / "policy.json", R"({"version": 1,
    "filesystem": {"kind": "restricted",
      "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
    "network": {"mode": "restricted"}})");
  const std::string script = "touch " + target / "PWNED" + " 2>/dev/null; touch " +
                             t / "victim/via-victim" + " 2>/dev/null; true";

  const pid_t swapper = start_swapper(t / "victim", t / "swapl");
  ASSERT_GT(swapper, 0);
  const auto start = std::chrono::steady_clock::now();
  int attempts = 0, ran = 0, refused = 0;
  std::string unexpected;
  std::map<std::string, int> reasons;
  for (; attempts < kMaxAttempts && std::chrono::steady_clock::now() - start < kMaxWallTime;
       ++attempts) {
    const RunResult r = sbx_exec({"--policy", ws / "policy.json", "--writable-root", t / "victim"},
                                 ws.path(), {"/bin/sh", "-c", script});
    if (r.code == 0) {
      ++ran;
    } else if (r.code == 125) {
      ++refused;
      reasons[reason_of(r.err)]++;
    } else if (unexpected.empty()) {
      unexpected = describe(r);
    }
    if (exists(target / "PWNED")) break;
  }
  stop(swapper);
  std::cout << attempts << " attempts: " << ran << " ran, " << refused << " refused (125)\n";
  for (const auto& [reason, count] : reasons) std::cout << "  " << count << "x " << reason << "\n";
  EXPECT_FALSE(exists(target / "PWNED"))
      << "a run wrote into " << target.path() << " after " << attempts << " attempts";
  EXPECT_TRUE(listing(target.path()).empty()) << "the target directory was written to";
  EXPECT_TRUE(unexpected.empty()) << "neither ran nor refused with 125: " << unexpected;
  EXPECT_GT(attempts, 0);
}

}  // namespace
