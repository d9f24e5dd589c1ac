// The bwrap escape suite (tests/integration/bwrap/escape_test.cpp) replayed with
// `sbx --backends landlock exec`. What Landlock can enforce is attempted and the host inspected
// afterwards; what it cannot enforce (protected names, carve-outs, deny globs) must be refused:
// exit 125, the rule named, and the command never run (its marker file stays absent).
#include <gtest/gtest.h>
#include <signal.h>

#include "sbx_harness.hpp"

namespace {

using namespace sbx_it;

// Like the workspace-write preset but without protected names (Landlock cannot keep them).
std::string workspace_policy(const std::string& dir, const std::string& network = "restricted",
                             const std::string& protected_names = "") {
  const std::string path = dir + "/policy.json";
  write_file(path, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                   R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
                   R"({"path":":slash_tmp","access":"write"}],"protected_names":[)" +
                       protected_names + R"(]},"network":{"mode":")" + network + R"("}})");
  return path;
}

RunResult ll_exec(const std::vector<std::string>& policy, const std::string& cwd,
                  const std::vector<std::string>& command, const std::string& input = "") {
  std::vector<std::string> argv = {sbx_path(), "--backends", "landlock", "exec"};
  argv.insert(argv.end(), policy.begin(), policy.end());
  argv.insert(argv.end(), {"--cwd", cwd, "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return run(argv, base_env(), input);
}

class LandlockEscape : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    ASSERT_FALSE(ws_.path().empty());
    ASSERT_FALSE(outside_.path().empty());
    write_file(outside_ / "keep.txt", "original\n");
    policy_ = workspace_policy(conf_.path());
  }
  RunResult sh(const std::string& script) {
    return ll_exec({"--policy", policy_}, ws_.path(), {"/bin/sh", "-c", script});
  }
  // A refused policy: exit 125, `needle` in the message, and the command did not run.
  void expect_refused(const std::vector<std::string>& policy, const std::string& needle) {
    const std::string marker = outside_ / "ran";
    const RunResult r = ll_exec(policy, ws_.path(), {"/usr/bin/touch", marker});
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "': "
                                                     << describe(r);
    EXPECT_FALSE(exists(marker)) << "the command ran although the policy was refused";
  }
  TempDir ws_;
  TempDir outside_{"/var/tmp"};
  TempDir conf_{"/var/tmp"};
  std::string policy_;
};

// The command's environment arrives whole, but not through arguments: the supervising
// sbx-stage2 (the command's parent) runs for the whole command, and arguments are
// world-readable in /proc.
TEST_F(LandlockEscape, EnvironmentArrivesWithoutAppearingInAnyArguments) {
  auto env = base_env();
  env.push_back("SBX_IT_PRIVATE=sbx-it-secret-value-4711");
  std::vector<std::string> argv = {sbx_path(), "--backends", "landlock", "exec", "--policy",
                                   policy_,    "--cwd",      ws_.path(),  "--", "/bin/sh", "-c",
                                   "printf '%s\\n' \"$SBX_IT_PRIVATE\"; tr '\\0' '\\n' < "
                                   "/proc/$PPID/cmdline > pid1.txt"};
  const RunResult r = run(argv, env, "");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "sbx-it-secret-value-4711\n") << describe(r);
  const std::string parent = read_file(ws_ / "pid1.txt");
  EXPECT_NE(parent.find("sbx-stage2"), std::string::npos) << parent;
  EXPECT_NE(parent.find("--env-environ"), std::string::npos) << parent;
  EXPECT_EQ(parent.find("sbx-it-secret-value"), std::string::npos) << parent;
}

TEST_F(LandlockEscape, WritesOutsideWritableRootsAndIntoHomeFail) {
  const std::string home_target = "/root/sbx-ll-escape-" + std::to_string(::getpid());
  const RunResult r = sh("echo x > " + outside_ / "new.txt" + "; echo x >> " + outside_ /
                         "keep.txt" + "; echo x > " + home_target + "; touch /etc/sbx-escape; " +
                         "truncate -s0 " + outside_ / "keep.txt" + "; echo ok > inside.txt");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(outside_ / "new.txt"));
  EXPECT_EQ(read_file(outside_ / "keep.txt"), "original\n");
  EXPECT_FALSE(exists(home_target));
  EXPECT_FALSE(exists("/etc/sbx-escape"));
  EXPECT_EQ(read_file(ws_ / "inside.txt"), "ok\n") << "the workspace must stay writable";
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << describe(r);
}

TEST_F(LandlockEscape, WorkspaceWritePresetIsRefusedNamingTheMissingProtectedName) {
  expect_refused({"--preset", "workspace-write"}, "protected_names (needed for protected path '");
}

TEST_F(LandlockEscape, ExistingGitIsRefusedToo) {
  fs::create_directories(ws_ / ".git/hooks");
  // Only the workspace is writable here, so the first protected path is the workspace's .git.
  write_file(conf_ / "git.json", R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                                 R"({"path":":root","access":"read"},{"path":":cwd","access":)"
                                 R"("write"}],"protected_names":[".git"]}})");
  expect_refused({"--policy", conf_ / "git.json"},
                 "protected_names (needed for protected path '" + ws_ / ".git" + "')");
  EXPECT_FALSE(exists(ws_ / ".git/hooks/pre-commit"));
}

TEST_F(LandlockEscape, DeniedFileDirectoryAndGlobAreRefusedNamingTheRule) {
  write_file(ws_ / "secret.txt", "TOPSECRET\n");
  expect_refused({"--policy", policy_, "--deny", ws_ / "secret.txt"},
                 "write_carveouts (needed for '" + ws_ / "secret.txt" + "' (deny) inside '" +
                     ws_.path() + "' (write)");
  expect_refused({"--policy", policy_, "--deny", "/root/.ssh"},
                 "read_carveouts (needed for '/root/.ssh' (deny) inside '/' (read)");
  expect_refused({"--policy", policy_, "--deny", ws_.path() + "/**/*.pem"},
                 "deny_globs (needed for deny glob");
}

TEST_F(LandlockEscape, ExplainNamesTheRuleAndTheDefaultOrderStillPicksBwrapForIt) {
  const RunResult r = run({sbx_path(), "--backends", "landlock", "explain", "--preset",
                           "workspace-write", "--cwd", ws_.path()},
                          base_env());
  EXPECT_NE(r.out.find("landlock  cannot enforce what the policy needs here: protected_names"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("final:              none"), std::string::npos) << describe(r);
}

TEST_F(LandlockEscape, RenamingTheWorkspaceFails) {
  // The workspace's parent must be read-only for the policy to forbid the rename: /var/tmp.
  TempDir ws("/var/tmp");
  const std::string moved = ws.path() + ".moved";
  const RunResult r = ll_exec({"--policy", policy_}, ws.path(),
                              {"/bin/sh", "-c", "mv " + ws.path() + " " + moved + "; true"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(exists(ws.path()));
  EXPECT_FALSE(exists(moved));
}

TEST_F(LandlockEscape, SymlinkAndHardLinkPointingOutDoNotWriteThrough) {
  const RunResult r = sh("ln -s " + outside_ / "keep.txt" + " sl; echo evil >> sl; ln " +
                         outside_ / "keep.txt" + " hl; echo hl=$?; echo evil >> hl; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("hl=1"), std::string::npos) << "the hard link must be refused (REFER)";
  EXPECT_FALSE(exists(ws_ / "hl") && fs::hard_link_count(ws_ / "hl") > 1);
  EXPECT_EQ(read_file(outside_ / "keep.txt"), "original\n");
}

TEST_F(LandlockEscape, RestrictedReadsHideEverythingOutsideTheReadableRoots) {
  write_file(outside_ / "secret.txt", "TOPSECRET\n");
  const std::string policy = conf_ / "reads.json";
  write_file(policy, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                     R"({"path":":minimal","access":"read"},{"path":":cwd","access":"write"}],)"
                     R"("protected_names":[]},"network":{"mode":"restricted"}})");
  const RunResult r = ll_exec({"--policy", policy}, ws_.path(),
                              {"/bin/sh", "-c", "cat " + outside_ / "secret.txt" +
                                                    "; ls /root /var; echo ok > mine; cat mine"});
  EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("ok"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << describe(r);
}

TEST_F(LandlockEscape, LoopbackTcpUdpAndDevTcpReachNothing) {
  Listener tcp4(Listener::kTcp4), tcp6(Listener::kTcp6), udp4(Listener::kUdp4);
  ASSERT_TRUE(tcp4.ok() && udp4.ok());
  const std::string p = probe_path();
  std::string script = p + " tcp4 127.0.0.1 " + std::to_string(tcp4.port()) + "; " + p +
                       " udp4 127.0.0.1 " + std::to_string(udp4.port()) + "; ";
  if (tcp6.ok()) script += p + " tcp6 ::1 " + std::to_string(tcp6.port()) + "; ";
  const RunResult r = ll_exec({"--policy", policy_}, ws_.path(),
                              {"/bin/bash", "-c",
                               script + "echo x > /dev/tcp/127.0.0.1/" +
                                   std::to_string(tcp4.port()) + "; echo x > /dev/udp/127.0.0.1/" +
                                   std::to_string(udp4.port()) + "; true"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  ::usleep(200 * 1000);
  EXPECT_EQ(tcp4.hits(), 0);
  EXPECT_EQ(tcp6.hits(), 0);
  EXPECT_EQ(udp4.hits(), 0);
}

// Landlock shares the host's network namespace, whose loopback is the host's: with the network
// restricted no inet socket may be created at all (bwrap, with a namespace of its own, lets the
// command use its own loopback instead), so a server of the command's own cannot start either.
TEST_F(LandlockEscape, InetSocketsAreRefusedWithTheNetworkRestricted) {
  if (!exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the attempts";
  const RunResult r = ll_exec(
      {"--policy", policy_}, ws_.path(),
      {"/usr/bin/python3", "-c",
       "import socket\n"
       "for fam, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n"
       "    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):\n"
       "        try:\n"
       "            s = socket.socket(fam, kind); s.bind((host, 0)); print('created', host)\n"
       "        except PermissionError:\n"
       "            print('refused', host)\n"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "refused 127.0.0.1\nrefused 127.0.0.1\nrefused ::1\nrefused ::1\n")
      << describe(r);
}

TEST_F(LandlockEscape, NetlinkPacketAndHostUnixSocketsAreBlocked) {
  Listener unix_sock(Listener::kUnix, ws_ / "host.sock");
  ASSERT_TRUE(unix_sock.ok());
  const std::string p = probe_path();
  const RunResult r =
      sh(p + " netlink; " + p + " packet; " + p + " unix " + ws_ / "host.sock" + "; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("BLOCKED"), 0u) << describe(r);
  ::usleep(200 * 1000);
  EXPECT_EQ(unix_sock.hits(), 0);
}

TEST_F(LandlockEscape, UnixSocketAllowListIsRefused) {
  write_file(conf_ / "sock.json",
             R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
             R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
             R"("protected_names":[]},"network":{"mode":"restricted","unix_sockets":[")" +
                 ws_ / "agent.sock" + R"("]}})");
  expect_refused({"--policy", conf_ / "sock.json"}, "unix_socket_allowlist");
}

TEST_F(LandlockEscape, DangerousSyscallsAreDenied) {
  const std::string p = probe_path();
  for (const std::string op : {"ptrace 1", "io_uring", "bpf", "keyctl", "unshare", "mount /tmp"}) {
    const RunResult r = sh(p + " " + op);
    EXPECT_EQ(r.code, 1) << op << ": " << describe(r);
    EXPECT_NE(r.out.find("BLOCKED"), std::string::npos) << op << ": " << describe(r);
  }
  const RunResult u = sh("/usr/bin/unshare -U /bin/true");
  EXPECT_NE(u.code, 0) << describe(u);
}

TEST_F(LandlockEscape, NoCapabilityReachesTheCommandEvenAsRoot) {
  const RunResult r = sh("grep -E '^Cap(Prm|Eff|Bnd|Amb|Inh)' /proc/self/status");
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* set : {"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
                          "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000"})
    EXPECT_NE(r.out.find(set), std::string::npos) << set << " " << describe(r);
}

TEST_F(LandlockEscape, HostProcessesCannotBeKilled) {
  const RunResult abi = run({sbx_path(), "backends", "--probe"}, base_env());
  if (abi.out.find("pass  scoping") == std::string::npos)
    GTEST_SKIP() << "the kernel's Landlock ABI has no signal scoping (< 6): not enforceable";
  const pid_t victim = ::fork();
  if (victim == 0) {
    ::execl("/bin/sleep", "sleep", "30", nullptr);
    ::_exit(1);
  }
  const RunResult r = sh(probe_path() + " kill " + std::to_string(victim) + "; kill -9 " +
                         std::to_string(victim) + "; true");
  EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  int status = 0;
  EXPECT_EQ(::waitpid(victim, &status, WNOHANG), 0) << "the host process died";
  ::kill(victim, SIGKILL);
  ::waitpid(victim, &status, 0);
}

TEST_F(LandlockEscape, GrandchildrenDoNotOutliveTheCommand) {
  const RunResult r = sh("(sleep 1; echo late > late.txt) & (setsid sleep 1; "
                         "echo late > late2.txt) & exit 0");
  EXPECT_EQ(r.code, 0) << describe(r);
  ::sleep(2);
  EXPECT_FALSE(exists(ws_ / "late.txt"));
  EXPECT_FALSE(exists(ws_ / "late2.txt"));
}

TEST_F(LandlockEscape, ExitCodesSignalsAndStdinPassThrough) {
  EXPECT_EQ(sh("exit 42").code, 42);
  EXPECT_EQ(sh("kill -TERM $$").code, 128 + SIGTERM);
  const RunResult r = ll_exec({"--policy", policy_}, ws_.path(), {"/bin/cat"}, "piped\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "piped\n");
  EXPECT_EQ(sh("/nonexistent/cmd").code, 127);
}

TEST_F(LandlockEscape, NetworkEnabledStillConfinesTheFilesystem) {
  Listener tcp4(Listener::kTcp4);
  ASSERT_TRUE(tcp4.ok());
  const RunResult r =
      ll_exec({"--policy", workspace_policy(conf_.path(), "enabled")}, ws_.path(),
              {"/bin/sh", "-c", probe_path() + " tcp4 127.0.0.1 " + std::to_string(tcp4.port()) +
                                    "; echo x > " + outside_ / "net.txt" + "; true"});
  EXPECT_NE(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists(outside_ / "net.txt"));
}

}  // namespace
