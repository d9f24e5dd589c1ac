// The escape suite, once for every Linux backend: each case runs a hostile command through the
// installed `sbx --backends <backend> exec` and then checks, from outside, that the host is
// untouched. Only loopback traffic is ever attempted.
//
// A backend either enforces a rule or refuses the policy that needs it; it never runs the
// command with the rule silently dropped. So a case that needs a capability the backend does
// not list in `sbx backends --probe --json` is skipped (with the reason printed), and the
// matching refusal case checks instead that such a policy is refused with exit 125, the missing
// capability named, and the command never started.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

// How a backend's confinement shows from inside, where the mechanisms differ.
struct BackendTraits {
  // What a write outside the writable roots fails with: bwrap mounts the rest read-only,
  // Landlock denies the access.
  std::string write_refusal;
  // What a read outside the readable roots fails with: bwrap does not mount what is not
  // readable, Landlock denies the access.
  std::string read_refusal;
  // bwrap gives the command a network namespace of its own, whose loopback has no listener, so
  // a connection to a host port is refused there rather than blocked.
  bool own_network_namespace;
  // Landlock keeps host processes out of reach of signals only with ABI scoping (>= 6); bwrap
  // does it with a PID namespace on every kernel it runs on.
  bool signals_need_landlock_scoping;
};

BackendTraits traits_of(const std::string& backend) {
  if (backend == "landlock") return {"Permission denied", "Permission denied", false, true};
  return {"Read-only file system", "No such file or directory", true, false};
}

// A workspace-write policy without protected names (for backends that cannot keep them),
// with `network` as the network mode.
std::string workspace_policy(const std::string& dir, const std::string& network = "restricted") {
  const std::string path = dir + "/workspace-" + network + ".json";
  write_file(path, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                   R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
                   R"({"path":":slash_tmp","access":"write"}],"protected_names":[]},)"
                   R"("network":{"mode":")" + network + R"("}})");
  return path;
}

class Escape : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    // An escape suite that quietly skips an unavailable sandbox would pass on a host where
    // nothing is confined: an unavailable backend fails every case instead.
    const std::optional<std::vector<std::string>> capabilities = backend_capabilities(backend());
    ASSERT_TRUE(capabilities.has_value()) << backend_unavailable(backend());
    capabilities_ = *capabilities;
    write_file(outside_ / "keep.txt", "original\n");
  }

  const std::string& backend() const { return GetParam(); }
  BackendTraits traits() const { return traits_of(backend()); }
  bool enforces(const std::string& capability) const {
    return std::find(capabilities_.begin(), capabilities_.end(), capability) !=
           capabilities_.end();
  }
  // Why a case that needs `capability` cannot run on this backend ("" when it can).
  std::string cannot_enforce(const std::vector<std::string>& needed) const {
    for (const std::string& capability : needed)
      if (!enforces(capability))
        return backend() + " declares it cannot enforce " + capability +
               " (not among its probed capabilities); the refusal cases cover it";
    return "";
  }
  // Why a refusal case does not apply ("" when the backend lacks one of the capabilities).
  std::string enforces_all(const std::vector<std::string>& needed) const {
    std::string all;
    for (const std::string& capability : needed) {
      if (!enforces(capability)) return "";
      all += (all.empty() ? "" : ", ") + capability;
    }
    return backend() + " enforces " + all + ", so it has no policy here to refuse";
  }

  // The workspace-write preset, minus the protected names when the backend cannot keep them.
  std::vector<std::string> workspace_write() {
    if (enforces("protected_names")) return {"--preset", "workspace-write"};
    return {"--policy", workspace_policy(conf_.path())};
  }
  RunResult exec(const std::vector<std::string>& policy, const std::vector<std::string>& command,
                 const std::string& cwd = "", const std::string& input = "",
                 const std::vector<std::string>& env = base_env()) {
    return exec_with(backend(), policy, cwd.empty() ? ws_.path() : cwd, command, env, input);
  }
  RunResult shell(const std::string& script) {
    return exec(workspace_write(), {"/bin/sh", "-c", script});
  }
  // A refused policy: exit 125, `needle` in the message, and the command did not run.
  void expect_refused(const std::vector<std::string>& policy, const std::string& needle) {
    const std::string marker = outside_ / "ran";
    const RunResult r = exec(policy, {"/usr/bin/touch", marker});
    EXPECT_EQ(r.code, 125) << describe(r);
    EXPECT_NE(r.err.find(needle), std::string::npos)
        << "expected '" << needle << "': " << describe(r);
    EXPECT_FALSE(exists(marker)) << "the command ran although the policy was refused";
  }

  TempDir ws_;                   // the workspace (a writable root)
  TempDir outside_{"/var/tmp"};  // a host directory outside every writable root
  TempDir conf_{"/var/tmp"};     // policy files
  std::vector<std::string> capabilities_;
};

// Skips the case, printing why, unless the backend enforces every listed capability.
#define REQUIRE_ENFORCED(...)                                      \
  do {                                                             \
    const std::string why = cannot_enforce({__VA_ARGS__});         \
    if (!why.empty()) GTEST_SKIP() << why;                         \
  } while (0)
// Skips a refusal case, printing why, when the backend enforces every listed capability.
#define REQUIRE_REFUSED(...)                                       \
  do {                                                             \
    const std::string why = enforces_all({__VA_ARGS__});           \
    if (!why.empty()) GTEST_SKIP() << why;                         \
  } while (0)

// ---------------------------------------------------------------------------------------------
// The filesystem

TEST_P(Escape, WritesOutsideWritableRootsAndIntoHomeFail) {
  const std::string home_target = "/root/sbx-escape-" + backend() + std::to_string(::getpid());
  const RunResult r = shell("echo x > " + outside_ / "new.txt" + "; echo x >> " +
                            outside_ / "keep.txt" + "; echo x > " + home_target +
                            "; touch /etc/sbx-escape; truncate -s0 " + outside_ / "keep.txt" +
                            "; echo ok > inside.txt");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(outside_ / "new.txt"));
  EXPECT_EQ(read_file(outside_ / "keep.txt"), "original\n");
  EXPECT_FALSE(exists(home_target));
  EXPECT_FALSE(exists("/etc/sbx-escape"));
  EXPECT_EQ(read_file(ws_ / "inside.txt"), "ok\n") << "the workspace must stay writable";
  EXPECT_NE(r.err.find(traits().write_refusal), std::string::npos) << describe(r);
}

TEST_P(Escape, GitHooksAndConfigStayReadOnly) {
  REQUIRE_ENFORCED("protected_names");
  fs::create_directories(ws_ / ".git/hooks");
  write_file(ws_ / ".git/config", "[core]\n");
  const RunResult r = shell(
      "echo 'curl evil' > .git/hooks/pre-commit; echo '[alias] x=!evil' >> "
      ".git/config; rm -rf .git/hooks; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(ws_ / ".git/hooks/pre-commit"));
  EXPECT_TRUE(exists(ws_ / ".git/hooks"));
  EXPECT_EQ(read_file(ws_ / ".git/config"), "[core]\n");
}

TEST_P(Escape, MissingProtectedNamesCannotBeCreatedAndLeaveNothingBehind) {
  REQUIRE_ENFORCED("protected_names");
  const auto before = listing(ws_.path());
  // Each name as a directory, as a file and as a symlink; below it; and the mask (on bwrap a
  // mount point at the name) removed, renamed or replaced. Every attempt must fail.
  const RunResult r = shell(
      "mkdir .codex; echo rc_mkdir=$?; mkdir .agents; echo rc_mkdir2=$?; touch .codex/x; "
      "echo rc_below=$?; mkdir -p .git/hooks; echo rc_below2=$?; touch .git; echo rc_touch=$?; "
      "(echo x > .agents); echo rc_write=$?; ln -s /tmp .codex; echo rc_symlink=$?; "
      "rm .codex; echo rc_rm=$?; rmdir .agents; echo rc_rmdir=$?; mv .git moved; "
      "echo rc_mv=$?; mv -T .codex .agents; echo rc_mv2=$?; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* rc : {"rc_mkdir=0", "rc_mkdir2=0", "rc_below=0", "rc_below2=0", "rc_touch=0",
                         "rc_write=0", "rc_symlink=0", "rc_rm=0", "rc_rmdir=0", "rc_mv=0",
                         "rc_mv2=0"})
    EXPECT_EQ(r.out.find(rc), std::string::npos) << rc << " " << describe(r);
  EXPECT_EQ(listing(ws_.path()), before) << "the run left mount points or files behind";
  EXPECT_FALSE(exists(ws_ / "moved"));
  EXPECT_FALSE(exists(ws_ / ".codex"));
  EXPECT_FALSE(exists(ws_ / ".agents"));
  EXPECT_FALSE(exists(ws_ / ".git"));
}

TEST_P(Escape, ConcurrentRunsNeverUnmaskEachOther) {
  REQUIRE_ENFORCED("protected_names");
  // Run A holds the mask while run B starts and ends; A must still be unable to create .codex.
  std::thread a([&] {
    const RunResult r = shell("sleep 2; mkdir .codex; echo a-rc=$?");
    EXPECT_NE(r.out.find("a-rc=1"), std::string::npos) << describe(r);
  });
  ::usleep(700 * 1000);
  const RunResult b = shell("true");
  EXPECT_EQ(b.code, 0) << describe(b);
  a.join();
  EXPECT_FALSE(exists(ws_ / ".codex")) << "leftover or created .codex";
}

TEST_P(Escape, WorkspaceWritePresetIsRefusedNamingTheMissingProtectedName) {
  REQUIRE_REFUSED("protected_names");
  expect_refused({"--preset", "workspace-write"}, "protected_names (needed for protected path '");
}

TEST_P(Escape, ExistingGitIsRefusedToo) {
  REQUIRE_REFUSED("protected_names");
  fs::create_directories(ws_ / ".git/hooks");
  // Only the workspace is writable here, so the first protected path is the workspace's .git.
  write_file(conf_ / "git.json", R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                                 R"({"path":":root","access":"read"},{"path":":cwd","access":)"
                                 R"("write"}],"protected_names":[".git"]}})");
  expect_refused({"--policy", conf_ / "git.json"},
                 "protected_names (needed for protected path '" + ws_ / ".git" + "')");
  EXPECT_FALSE(exists(ws_ / ".git/hooks/pre-commit"));
}

TEST_P(Escape, ExplainNamesTheRuleAndTheDefaultOrderStillPicksBwrapForIt) {
  REQUIRE_REFUSED("protected_names");
  const RunResult r = run({sbx_path(), "--backends", backend(), "explain", "--preset",
                           "workspace-write", "--cwd", ws_.path()},
                          base_env());
  EXPECT_NE(r.out.find(backend() + "  cannot enforce what the policy needs here: protected_names"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("final:              none"), std::string::npos) << describe(r);
}

TEST_P(Escape, RenamingGitOrTheWorkspaceFails) {
  REQUIRE_ENFORCED("protected_names");
  fs::create_directories(ws_ / ".git");
  const std::string moved = ws_.path() + ".moved";
  const RunResult r = shell("mv .git git-moved; mv " + ws_.path() + " " + moved + "; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(exists(ws_ / ".git"));
  EXPECT_FALSE(exists(ws_ / "git-moved"));
  EXPECT_FALSE(exists(moved));
}

TEST_P(Escape, RenamingTheWorkspaceFails) {
  // The workspace's parent must be read-only for the policy to forbid the rename: /var/tmp.
  TempDir ws("/var/tmp");
  const std::string moved = ws.path() + ".moved";
  const RunResult r = exec(workspace_write(),
                           {"/bin/sh", "-c", "mv " + ws.path() + " " + moved + "; true"},
                           ws.path());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(exists(ws.path()));
  EXPECT_FALSE(exists(moved));
}

TEST_P(Escape, SymlinkAndHardLinkPointingOutDoNotWriteThrough) {
  const RunResult r = shell("ln -s " + outside_ / "keep.txt" + " sl; echo evil >> sl; ln " +
                            outside_ / "keep.txt" + " hl; echo hl=$?; echo evil >> hl; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("hl=1"), std::string::npos) << "the hard link must be refused";
  EXPECT_FALSE(exists(ws_ / "hl") && fs::hard_link_count(ws_ / "hl") > 1);
  EXPECT_EQ(read_file(outside_ / "keep.txt"), "original\n");
}

TEST_P(Escape, DeniedFileDirectoryAndGlobAreUnreadable) {
  REQUIRE_ENFORCED("write_carveouts", "deny_globs");
  write_file(ws_ / "secret.txt", "TOPSECRET-FILE\n");
  fs::create_directories(ws_ / "vault");
  write_file(ws_ / "vault/inner.txt", "TOPSECRET-DIR\n");
  fs::create_directories(ws_ / "keys");
  write_file(ws_ / "keys/id.pem", "TOPSECRET-GLOB\n");
  std::vector<std::string> policy = workspace_write();
  policy.insert(policy.end(), {"--deny", ws_ / "secret.txt", "--deny", ws_ / "vault", "--deny",
                               ws_.path() + "/**/*.pem"});
  const RunResult r = exec(policy, {"/bin/sh", "-c",
                                    "cat secret.txt; ls vault; cat vault/inner.txt; "
                                    "cat keys/id.pem; echo x > secret.txt; true"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("inner.txt"), std::string::npos) << describe(r);
  EXPECT_EQ(read_file(ws_ / "secret.txt"), "TOPSECRET-FILE\n");
}

TEST_P(Escape, DeniedFileDirectoryAndGlobAreRefusedNamingTheRule) {
  REQUIRE_REFUSED("write_carveouts", "read_carveouts", "deny_globs");
  const std::string policy = workspace_policy(conf_.path());
  write_file(ws_ / "secret.txt", "TOPSECRET\n");
  if (!enforces("write_carveouts"))
    expect_refused({"--policy", policy, "--deny", ws_ / "secret.txt"},
                   "write_carveouts (needed for '" + ws_ / "secret.txt" + "' (deny) inside '" +
                       ws_.path() + "' (write)");
  if (!enforces("read_carveouts"))
    expect_refused({"--policy", policy, "--deny", "/root/.ssh"},
                   "read_carveouts (needed for '/root/.ssh' (deny) inside '/' (read)");
  if (!enforces("deny_globs"))
    expect_refused({"--policy", policy, "--deny", ws_.path() + "/**/*.pem"},
                   "deny_globs (needed for deny glob");
}

TEST_P(Escape, RestrictedReadsHideEverythingOutsideTheReadableRoots) {
  REQUIRE_ENFORCED("read_restriction");
  write_file(outside_ / "secret.txt", "TOPSECRET\n");
  const std::string policy = conf_ / "reads.json";
  write_file(policy, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                     R"({"path":":minimal","access":"read"},{"path":":cwd","access":"write"}],)"
                     R"("protected_names":[]},"network":{"mode":"restricted"}})");
  const RunResult r = exec({"--policy", policy},
                           {"/bin/sh", "-c", "cat " + outside_ / "secret.txt" +
                                                 "; ls /root /var; echo ok > mine; cat mine"});
  EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("ok"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find(traits().read_refusal), std::string::npos) << describe(r);
}

// ---------------------------------------------------------------------------------------------
// The network

// Only loopback is attempted: host listeners on 127.0.0.1/::1 count every connection or
// datagram that reaches them, and must count none.
TEST_P(Escape, LoopbackTcpUdpAndDevTcpReachNothingOnTheHost) {
  Listener tcp4(Listener::kTcp4), tcp6(Listener::kTcp6), udp4(Listener::kUdp4);
  ASSERT_TRUE(tcp4.ok() && udp4.ok());
  const std::string p = probe_path();
  std::string script = "echo tcp4; " + p + " tcp4 127.0.0.1 " + std::to_string(tcp4.port()) +
                       "; " + p + " udp4 127.0.0.1 " + std::to_string(udp4.port()) + "; ";
  if (tcp6.ok()) script += "echo tcp6; " + p + " tcp6 ::1 " + std::to_string(tcp6.port()) + "; ";
  const RunResult r = exec(workspace_write(),
                           {"/bin/bash", "-c",
                            script + "echo x > /dev/tcp/127.0.0.1/" +
                                std::to_string(tcp4.port()) + "; echo x > /dev/udp/127.0.0.1/" +
                                std::to_string(udp4.port()) + "; true"});
  EXPECT_EQ(r.code, 0) << describe(r);
  if (!traits().own_network_namespace) {
    // Sharing the host's network stack, every attempt must be blocked outright.
    EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  } else {
    // In a network namespace of its own the attempts run, but the host's listeners on the same
    // addresses and ports are another namespace's: TCP is refused (no one listens there
    // inside), a UDP datagram lands in the namespace, and the host sees nothing.
    EXPECT_NE(r.out.find("tcp4\nBLOCKED: Connection refused\n"), std::string::npos)
        << describe(r);
    if (tcp6.ok()) {
      EXPECT_NE(r.out.find("tcp6\nBLOCKED: Connection refused\n"), std::string::npos)
          << describe(r);
    }
  }
  ::usleep(200 * 1000);
  EXPECT_EQ(tcp4.hits(), 0);
  EXPECT_EQ(tcp6.hits(), 0);
  EXPECT_EQ(udp4.hits(), 0);
}

// With the network restricted, a backend that shares the host's network namespace (Landlock)
// must refuse every inet socket: its loopback is the host's. A backend with a namespace of its
// own (bwrap) lets the command bind its own loopback, which no host service shares.
TEST_P(Escape, InetSocketsFollowTheBackendsNetworkNamespace) {
  if (!exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the attempts";
  const RunResult r = exec(workspace_write(),
                           {"/usr/bin/python3", "-c",
                            "import socket\n"
                            "for fam, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n"
                            "    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):\n"
                            "        try:\n"
                            "            s = socket.socket(fam, kind); s.bind((host, 0)); print('created', host)\n"
                            "        except PermissionError:\n"
                            "            print('refused', host)\n"});
  EXPECT_EQ(r.code, 0) << describe(r);
  if (!traits().own_network_namespace) {
    EXPECT_EQ(r.out, "refused 127.0.0.1\nrefused 127.0.0.1\nrefused ::1\nrefused ::1\n")
        << describe(r);
  } else {
    EXPECT_EQ(r.out.find("refused 127.0.0.1"), std::string::npos) << describe(r);
    EXPECT_NE(r.out.find("created 127.0.0.1\ncreated 127.0.0.1\n"), std::string::npos)
        << describe(r);
  }
}

TEST_P(Escape, NetlinkPacketAndHostUnixSocketsAreBlocked) {
  Listener unix_sock(Listener::kUnix, ws_ / "host.sock");
  ASSERT_TRUE(unix_sock.ok());
  const std::string p = probe_path();
  const RunResult r =
      shell(p + " netlink; " + p + " packet; " + p + " unix " + ws_ / "host.sock" + "; true");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("BLOCKED"), 0u) << describe(r);
  ::usleep(200 * 1000);
  EXPECT_EQ(unix_sock.hits(), 0);
}

TEST_P(Escape, UnixSocketAllowListIsRefused) {
  REQUIRE_REFUSED("unix_socket_allowlist");
  write_file(conf_ / "sock.json",
             R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
             R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
             R"("protected_names":[]},"network":{"mode":"restricted","unix_sockets":[")" +
                 ws_ / "agent.sock" + R"("]}})");
  expect_refused({"--policy", conf_ / "sock.json"}, "unix_socket_allowlist");
}

// With the network enabled a host unix socket would be a way out; a backend that cannot keep
// them closed (Landlock) is refused for such a policy instead of running it half-confined.
TEST_P(Escape, NetworkEnabledIsRefusedWithoutUnixSocketBlock) {
  REQUIRE_REFUSED("unix_socket_block");
  expect_refused({"--policy", workspace_policy(conf_.path(), "enabled")},
                 "unix_socket_block (needed for network mode enabled");
}

TEST_P(Escape, NetworkEnabledStillConfinesTheFilesystem) {
  REQUIRE_ENFORCED("unix_socket_block");
  Listener tcp4(Listener::kTcp4);
  ASSERT_TRUE(tcp4.ok());
  const RunResult r = exec({"--policy", workspace_policy(conf_.path(), "enabled")},
                           {"/bin/sh", "-c",
                            probe_path() + " tcp4 127.0.0.1 " + std::to_string(tcp4.port()) +
                                "; echo x > " + outside_ / "net.txt" + "; true"});
  EXPECT_NE(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists(outside_ / "net.txt"));
}

// ---------------------------------------------------------------------------------------------
// Processes, privileges and the run itself

TEST_P(Escape, DangerousSyscallsAreDenied) {
  const std::string p = probe_path();
  for (const std::string op : {"ptrace 1", "io_uring", "bpf", "keyctl", "unshare", "mount /tmp"}) {
    const RunResult r = shell(p + " " + op);
    EXPECT_EQ(r.code, 1) << op << ": " << describe(r);
    EXPECT_NE(r.out.find("BLOCKED"), std::string::npos) << op << ": " << describe(r);
  }
  const RunResult u = shell("/usr/bin/unshare -U /bin/true");
  EXPECT_NE(u.code, 0) << describe(u);
}

TEST_P(Escape, NoCapabilityReachesTheCommandEvenAsRoot) {
  const RunResult r = shell("grep -E '^Cap(Prm|Eff|Bnd|Amb|Inh)' /proc/self/status");
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* set : {"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
                          "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000"})
    EXPECT_NE(r.out.find(set), std::string::npos) << set << " " << describe(r);
}

TEST_P(Escape, HostProcessesCannotBeKilled) {
  if (traits().signals_need_landlock_scoping) {
    const RunResult abi = run({sbx_path(), "backends", "--probe"}, base_env());
    if (abi.out.find("pass  scoping") == std::string::npos)
      GTEST_SKIP() << "the kernel's Landlock ABI has no signal scoping (< 6): not enforceable";
  }
  const pid_t victim = ::fork();
  if (victim == 0) {
    ::execl("/bin/sleep", "sleep", "30", nullptr);
    ::_exit(1);
  }
  const RunResult r = shell(probe_path() + " kill " + std::to_string(victim) + "; kill -9 " +
                            std::to_string(victim) + "; true");
  EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  int status = 0;
  EXPECT_EQ(::waitpid(victim, &status, WNOHANG), 0) << "the host process died";
  ::kill(victim, SIGKILL);
  ::waitpid(victim, &status, 0);
}

TEST_P(Escape, GrandchildrenDoNotOutliveTheCommand) {
  const RunResult r = shell("(sleep 1; echo late > late.txt) & (setsid sleep 1; "
                            "echo late > late2.txt) & exit 0");
  EXPECT_EQ(r.code, 0) << describe(r);
  ::sleep(2);
  EXPECT_FALSE(exists(ws_ / "late.txt"));
  EXPECT_FALSE(exists(ws_ / "late2.txt"));
}

TEST_P(Escape, ExitCodesSignalsAndStdinPassThrough) {
  EXPECT_EQ(shell("exit 42").code, 42);
  EXPECT_EQ(shell("kill -TERM $$").code, 128 + SIGTERM);
  const RunResult r = exec(workspace_write(), {"/bin/cat"}, "", "piped\n");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "piped\n");
  EXPECT_EQ(shell("/nonexistent/cmd").code, 127);
}

// The sandbox machinery comes from the installed tree, never from the command's PATH: fake
// `bwrap` and `sbx-stage2` placed first in PATH are not run.
TEST_P(Escape, FakeHelpersEarlierInPathAreIgnored) {
  fs::create_directories(ws_ / "bin");
  for (const char* helper : {"bwrap", "sbx-stage2"}) {
    write_file(ws_ / "bin/" + helper, "#!/bin/sh\ntouch " + ws_ / "fake-" + helper +
                                          "-ran\nshift 999\nexec \"$@\"\n");
    fs::permissions(ws_ / "bin/" + helper, fs::perms::owner_all);
  }
  std::vector<std::string> env = base_env();
  env[0] = "PATH=" + ws_ / "bin" + ":/usr/bin:/bin";
  const RunResult r = exec(workspace_write(),
                           {"/bin/sh", "-c", "echo x > " + outside_ / "via-fake.txt" + "; true"},
                           "", "", env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(ws_ / "fake-bwrap-ran"));
  EXPECT_FALSE(exists(ws_ / "fake-sbx-stage2-ran"));
  EXPECT_FALSE(exists(outside_ / "via-fake.txt"));
}

// The command's environment arrives whole, but not through arguments: whatever supervises the
// command runs for as long as it does, and arguments are world-readable in /proc.
TEST_P(Escape, EnvironmentArrivesWithoutAppearingInAnyArguments) {
  std::vector<std::string> env = base_env();
  env.push_back("SBX_IT_CARRIED=sbx-it-secret-value-4711");
  const RunResult r = exec(workspace_write(),
                           {"/bin/sh", "-c",
                            "printf '%s\\n' \"$SBX_IT_CARRIED\"; tr '\\0' '\\n' < "
                            "/proc/$PPID/cmdline > parent.txt; cat /proc/$PPID/comm > comm.txt"},
                           "", "", env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "sbx-it-secret-value-4711\n") << describe(r);
  const std::string parent = read_file(ws_ / "parent.txt");
  EXPECT_FALSE(parent.empty()) << "the command's parent is not visible to it";
  EXPECT_EQ(parent.find("sbx-it-secret-value"), std::string::npos) << parent;
  if (backend() == "landlock") {
    // Without namespaces the parent is the supervisor, a fork of sbx that never execs: its
    // arguments are sbx's own, and the environment went only into the command's execve.
    EXPECT_EQ(read_file(ws_ / "comm.txt"), "sbx-supervisor\n");
    EXPECT_NE(parent.find("exec"), std::string::npos) << parent;
  }
}

INSTANTIATE_TEST_SUITE_P(LinuxBackends, Escape, ::testing::Values("bwrap", "landlock"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

}  // namespace
