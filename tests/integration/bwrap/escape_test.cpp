// The escape suite: every test runs a hostile command through the
// installed `sbx exec` with the bwrap backend and then checks, from outside, that the host is
// untouched. Only loopback traffic is ever attempted.
#include <gtest/gtest.h>
#include <signal.h>

#include "sbx_harness.hpp"

namespace {

using namespace sbx_it;

class BwrapEscape : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    ASSERT_FALSE(ws_.path().empty());
    ASSERT_FALSE(outside_.path().empty());
    write_file(outside_ / "keep.txt", "original\n");
  }
  TempDir ws_;                  // the workspace (a writable root)
  TempDir outside_{"/var/tmp"};  // a host directory outside every writable root
};

TEST_F(BwrapEscape, WritesOutsideWritableRootsAndIntoHomeFail) {
  const std::string home_target = "/root/sbx-escape-" + std::to_string(::getpid());
  const RunResult r = sh(ws_.path(), "echo x > " + outside_ / "new.txt" + "; echo x >> " +
                                   outside_ / "keep.txt" + "; echo x > " + home_target +
                                   "; touch /etc/sbx-escape; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(outside_ / "new.txt"));
  EXPECT_EQ(read_file(outside_ / "keep.txt"), "original\n");
  EXPECT_FALSE(exists(home_target));
  EXPECT_FALSE(exists("/etc/sbx-escape"));
  EXPECT_NE(r.err.find("Read-only file system"), std::string::npos) << describe(r);
}

TEST_F(BwrapEscape, GitHooksAndConfigStayReadOnly) {
  fs::create_directories(ws_ / ".git/hooks");
  write_file(ws_ / ".git/config", "[core]\n");
  const RunResult r = sh(ws_.path(),
                   "echo 'curl evil' > .git/hooks/pre-commit; echo '[alias] x=!evil' >> "
                   ".git/config; rm -rf .git/hooks; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(ws_ / ".git/hooks/pre-commit"));
  EXPECT_TRUE(exists(ws_ / ".git/hooks"));
  EXPECT_EQ(read_file(ws_ / ".git/config"), "[core]\n");
}

TEST_F(BwrapEscape, MissingProtectedNamesCannotBeCreatedAndLeaveNothingBehind) {
  const auto before = listing(ws_.path());
  const RunResult r = sh(ws_.path(),
                   "mkdir .codex; echo rc1=$?; mkdir .agents; echo rc2=$?; touch .codex/x; "
                   "echo rc3=$?; mkdir -p .git/hooks; echo rc4=$?");
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* rc : {"rc1=0", "rc2=0", "rc3=0", "rc4=0"})
    EXPECT_EQ(r.out.find(rc), std::string::npos) << rc << " " << describe(r);
  EXPECT_EQ(listing(ws_.path()), before) << "the run left mount points or files behind";
  EXPECT_FALSE(exists(ws_ / ".codex"));
  EXPECT_FALSE(exists(ws_ / ".agents"));
  EXPECT_FALSE(exists(ws_ / ".git"));
}

TEST_F(BwrapEscape, ConcurrentRunsNeverUnmaskEachOther) {
  // RunResult A holds the mask while run B starts and ends; A must still be unable to create .codex.
  std::thread a([&] {
    const RunResult r = sh(ws_.path(), "sleep 2; mkdir .codex; echo a-rc=$?");
    EXPECT_NE(r.out.find("a-rc=1"), std::string::npos) << describe(r);
  });
  ::usleep(700 * 1000);
  const RunResult b = sh(ws_.path(), "true");
  EXPECT_EQ(b.code, 0) << describe(b);
  a.join();
  EXPECT_FALSE(exists(ws_ / ".codex")) << "leftover or created .codex";
}

TEST_F(BwrapEscape, RenamingGitOrTheWorkspaceFails) {
  fs::create_directories(ws_ / ".git");
  const std::string moved = ws_.path() + ".moved";
  const RunResult r = sh(ws_.path(), "mv .git git-moved; mv " + ws_.path() + " " + moved + "; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(exists(ws_ / ".git"));
  EXPECT_FALSE(exists(ws_ / "git-moved"));
  EXPECT_FALSE(exists(moved));
}

TEST_F(BwrapEscape, SymlinkAndHardLinkPointingOutDoNotWriteThrough) {
  const RunResult r = sh(ws_.path(), "ln -s " + outside_ / "keep.txt" + " sl; echo evil >> sl; ln " +
                                   outside_ / "keep.txt" + " hl; echo evil >> hl; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(read_file(outside_ / "keep.txt"), "original\n");
}

TEST_F(BwrapEscape, DeniedFileDirectoryAndGlobAreUnreadable) {
  write_file(ws_ / "secret.txt", "TOPSECRET-FILE\n");
  fs::create_directories(ws_ / "vault");
  write_file(ws_ / "vault/inner.txt", "TOPSECRET-DIR\n");
  fs::create_directories(ws_ / "keys");
  write_file(ws_ / "keys/id.pem", "TOPSECRET-GLOB\n");
  const RunResult r = sh(ws_.path(),
                   "cat secret.txt; ls vault; cat vault/inner.txt; cat keys/id.pem; "
                   "echo x > secret.txt; true",
                   {"--preset", "workspace-write", "--deny", ws_ / "secret.txt", "--deny",
                    ws_ / "vault", "--deny", ws_.path() + "/**/*.pem"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("inner.txt"), std::string::npos) << describe(r);
  EXPECT_EQ(read_file(ws_ / "secret.txt"), "TOPSECRET-FILE\n");
}

// The command has loopback TCP/UDP of its own network namespace, so the attempts run, but the
// host's listeners on the same addresses and ports are another namespace's: TCP is refused (no
// one listens there inside), a UDP datagram lands in the namespace, and the host sees nothing.
TEST_F(BwrapEscape, LoopbackTcpUdpAndDevTcpReachNothingOnTheHost) {
  Listener tcp4(Listener::kTcp4), tcp6(Listener::kTcp6), udp4(Listener::kUdp4);
  ASSERT_TRUE(tcp4.ok() && udp4.ok());
  const std::string p = probe_path();
  std::string script = "echo tcp4; " + p + " tcp4 127.0.0.1 " + std::to_string(tcp4.port()) +
                       "; " + p + " udp4 127.0.0.1 " + std::to_string(udp4.port()) + "; ";
  if (tcp6.ok()) script += "echo tcp6; " + p + " tcp6 ::1 " + std::to_string(tcp6.port()) + "; ";
  const RunResult r = sbx_exec({"--preset", "workspace-write"}, ws_.path(),
                         {"/bin/bash", "-c",
                          script + "echo x > /dev/tcp/127.0.0.1/" + std::to_string(tcp4.port()) +
                              "; echo x > /dev/udp/127.0.0.1/" + std::to_string(udp4.port()) +
                              "; true"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("tcp4\nBLOCKED: Connection refused\n"), std::string::npos) << describe(r);
  if (tcp6.ok()) {
    EXPECT_NE(r.out.find("tcp6\nBLOCKED: Connection refused\n"), std::string::npos)
        << describe(r);
  }
  ::usleep(200 * 1000);
  EXPECT_EQ(tcp4.hits(), 0);
  EXPECT_EQ(tcp6.hits(), 0);
  EXPECT_EQ(udp4.hits(), 0);
}

TEST_F(BwrapEscape, NetlinkPacketAndHostUnixSocketsAreBlocked) {
  Listener unix_sock(Listener::kUnix, ws_ / "host.sock");
  ASSERT_TRUE(unix_sock.ok());
  const std::string p = probe_path();
  const RunResult r = sh(ws_.path(), p + " netlink; " + p + " packet; " + p + " unix " +
                                   ws_ / "host.sock" + "; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("BLOCKED"), 0u) << describe(r);
  ::usleep(200 * 1000);
  EXPECT_EQ(unix_sock.hits(), 0);
}

TEST_F(BwrapEscape, DangerousSyscallsAreDenied) {
  const std::string p = probe_path();
  for (const std::string op : {"ptrace 1", "io_uring", "bpf", "keyctl", "unshare",
                               "mount /tmp"}) {
    const RunResult r = sh(ws_.path(), p + " " + op);
    EXPECT_EQ(r.code, 1) << op << ": " << describe(r);
    EXPECT_NE(r.out.find("BLOCKED"), std::string::npos) << op << ": " << describe(r);
  }
  const RunResult u = sh(ws_.path(), "/usr/bin/unshare -U /bin/true");
  EXPECT_NE(u.code, 0) << describe(u);
}

TEST_F(BwrapEscape, HostProcessesCannotBeKilled) {
  const pid_t victim = ::fork();
  if (victim == 0) {
    ::execl("/bin/sleep", "sleep", "30", nullptr);
    ::_exit(1);
  }
  const RunResult r = sh(ws_.path(), probe_path() + " kill " + std::to_string(victim) +
                                   "; kill -9 " + std::to_string(victim) + "; true");
  EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  int status = 0;
  EXPECT_EQ(::waitpid(victim, &status, WNOHANG), 0) << "the host process died";
  ::kill(victim, SIGKILL);
  ::waitpid(victim, &status, 0);
}

TEST_F(BwrapEscape, GrandchildrenDoNotOutliveTheCommand) {
  const RunResult r = sh(ws_.path(), "(sleep 1; echo late > late.txt) & (setsid sleep 1; "
                               "echo late > late2.txt) & exit 0");
  EXPECT_EQ(r.code, 0) << describe(r);
  ::sleep(2);
  EXPECT_FALSE(exists(ws_ / "late.txt"));
  EXPECT_FALSE(exists(ws_ / "late2.txt"));
}

TEST_F(BwrapEscape, FakeBwrapEarlierInPathIsIgnored) {
  fs::create_directories(ws_ / "bin");
  write_file(ws_ / "bin/bwrap", "#!/bin/sh\ntouch " + ws_ / "fake-bwrap-ran" + "\nshift 999\n"
                                "exec \"$@\"\n");
  fs::permissions(ws_ / "bin/bwrap", fs::perms::owner_all);
  auto env = base_env();
  env[0] = "PATH=" + ws_ / "bin" + ":/usr/bin:/bin";
  const RunResult r = sh(ws_.path(), "echo x > " + outside_ / "via-fake.txt" + "; true",
                   {"--preset", "workspace-write"}, env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(ws_ / "fake-bwrap-ran"));
  EXPECT_FALSE(exists(outside_ / "via-fake.txt"));
}

}  // namespace
