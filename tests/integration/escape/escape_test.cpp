// The escape suite, once for every Linux backend and every identity that starts sbx: each case
// runs a hostile command through the installed `sbx --backends <backend> exec` and then checks,
// from outside, that the host is untouched. Only loopback traffic is ever attempted.
//
// Identities (sbx_test/identity.hpp): every case runs as root and as an unprivileged user
// (LinuxBackends/Escape.<case>/<backend>_root and .../<backend>_user). As root the user is 65534,
// through setpriv, with a HOME of its own and no XDG_RUNTIME_DIR; run by an ordinary user the
// "user" cases are that user and the "root" ones are skipped, each with the reason printed, as
// are the user's when 65534 cannot create user namespaces (bwrap) or execute the install tree.
// Everything a command attacks on the host belongs to the identity running it (the workspace,
// the "outside" directory and its files, the home, the victim processes), so that what fails,
// fails because of the sandbox and not because the file or process is someone else's; where a
// check can only show something for root (/etc), or the host refuses an attempt to the
// identity anyway (e.g. unprivileged bpf), the case says so. UserIsWhoItSaysItIs checks once
// per backend and identity that the run really is the identity's, inside and outside; after
// each user case, no sbx state of the user's may have appeared in /tmp.
//
// A backend either enforces a rule or refuses the policy that needs it; it never runs the
// command with the rule silently dropped. So a case that needs a capability the backend does
// not list in `sbx backends --probe --json` is skipped (with the reason printed), and the
// matching refusal case checks instead that such a policy is refused with exit 125, the missing
// capability named, and the command never started.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
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
                   R"("network":{"mode":")" +
                       network + R"("}})");
  return path;
}

// Entries directly in /tmp that `uid` owns and sbx may have made: anything but the tests'
// own scratch directories.
std::vector<std::string> sbx_entries_in_tmp(uid_t uid) {
  std::vector<std::string> found;
  for (const std::string& name : listing("/tmp")) {
    struct stat st {};
    // sbx-landlock-probe-*: the Landlock probe's trial of its unix connect guard, made and
    // removed within one probe; another suite's probe as the same user may hold one meanwhile.
    if (name.rfind("sbx", 0) != 0 || name.rfind("sbx-test-", 0) == 0 ||
        name.rfind("sbx-landlock-probe-", 0) == 0)
      continue;
    if (::lstat(("/tmp/" + name).c_str(), &st) == 0 && st.st_uid == uid) found.push_back(name);
  }
  return found;
}

using Param = std::tuple<std::string, Identity>;

class Escape : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_IDENTITY(who(), backend(), {probe_path()});
    // An escape suite that quietly skips an unavailable sandbox would pass on a host where
    // nothing is confined: an unavailable backend fails every case instead. Probed as the
    // identity: what a backend can enforce may depend on who starts it.
    const std::optional<std::vector<std::string>> capabilities = backend_capabilities(
        backend(),
        [&](const std::vector<std::string>& argv) { return run_as(who(), argv, env_for(who())); });
    ASSERT_TRUE(capabilities.has_value()) << backend_unavailable(backend());
    capabilities_ = *capabilities;
    write_file(outside_ / "keep.txt", "original\n");
    tmp_before_ = sbx_entries_in_tmp(uid_of(who()));
  }

  void TearDown() override {
    // sbx keeps per-user state in the runtime directory or below HOME, never in the shared
    // /tmp. Checked for the unprivileged user only: root's entries may be other suites' runs
    // on this host at the same time.
    if (who() == Identity::kUnprivileged && !IsSkipped()) {
      EXPECT_EQ(sbx_entries_in_tmp(uid_of(who())), tmp_before_) << "sbx state left in /tmp";
    }
  }

  const std::string& backend() const { return std::get<0>(GetParam()); }
  Identity who() const { return std::get<1>(GetParam()); }
  BackendTraits traits() const { return traits_of(backend()); }
  bool enforces(const std::string& capability) const {
    return std::find(capabilities_.begin(), capabilities_.end(), capability) != capabilities_.end();
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
  // Runs sbx as the identity, after handing it everything the test made in its directories.
  RunResult exec(const std::vector<std::string>& policy, const std::vector<std::string>& command,
                 const std::string& cwd = "", const std::string& input = "",
                 const std::optional<std::vector<std::string>>& env = std::nullopt) {
    for (const TempDir* dir : {&ws_, &outside_, &conf_}) give_to(who(), dir->path());
    if (!cwd.empty()) give_to(who(), cwd);
    return exec_as(who(), backend(), policy, cwd.empty() ? ws_.path() : cwd, command,
                   env ? *env : env_for(who()), input);
  }
  // A host process of the identity's own (so that only the sandbox keeps the command from it):
  // `sleep 30`, killed by the caller.
  pid_t victim() const {
    const std::vector<std::string> argv = argv_as(who(), {"/bin/sleep", "30"});
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    // Once it runs `sleep` (setpriv switched first), it is the identity's.
    const std::string status = "/proc/" + std::to_string(pid) + "/status";
    for (int i = 0; i < 200 && read_file("/proc/" + std::to_string(pid) + "/comm") != "sleep\n";
         ++i)
      ::usleep(10 * 1000);
    EXPECT_NE(read_file(status).find("Uid:\t" + std::to_string(uid_of(who())) + "\t"),
              std::string::npos)
        << "the victim is not the identity's: " << read_file(status);
    return pid;
  }
  static void end(pid_t pid) {
    int status = 0;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
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
  std::vector<std::string> tmp_before_;
};

// Skips the case, printing why, unless the backend enforces every listed capability.
#define REQUIRE_ENFORCED(...)                              \
  do {                                                     \
    const std::string why = cannot_enforce({__VA_ARGS__}); \
    if (!why.empty()) GTEST_SKIP() << why;                 \
  } while (0)
// Skips a refusal case, printing why, when the backend enforces every listed capability.
#define REQUIRE_REFUSED(...)                             \
  do {                                                   \
    const std::string why = enforces_all({__VA_ARGS__}); \
    if (!why.empty()) GTEST_SKIP() << why;               \
  } while (0)

// ---------------------------------------------------------------------------------------------
// The filesystem

// The run really is the identity's: `id -u` inside, the sbx process and the files the command
// creates outside.
TEST_P(Escape, UserIsWhoItSaysItIs) {
  give_to(who(), ws_.path());
  give_to(who(), conf_.path());
  EXPECT_EQ(runs_as_problem(who(), backend(), workspace_write(), ws_.path()), "");
}

TEST_P(Escape, WritesOutsideWritableRootsAndIntoHomeFail) {
  // The outside directory, its file and the home belong to the identity: only the sandbox stops
  // these writes. /etc is root's: for the user it is closed by permission as well.
  const std::string home_target =
      home_of(who()) + "/sbx-escape-" + backend() + std::to_string(::getpid());
  const RunResult r =
      shell("echo x > " + outside_ / "new.txt" + "; echo x >> " + outside_ / "keep.txt" +
            "; echo x > " + home_target + "; touch /etc/sbx-escape; truncate -s0 " +
            outside_ / "keep.txt" + "; echo ok > inside.txt");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(outside_ / "new.txt"));
  EXPECT_EQ(read_file(outside_ / "keep.txt"), "original\n");
  EXPECT_FALSE(exists(home_target));
  EXPECT_FALSE(exists("/etc/sbx-escape"));
  EXPECT_EQ(read_file(ws_ / "inside.txt"), "ok\n") << "the workspace must stay writable";
  EXPECT_NE(r.err.find(traits().write_refusal), std::string::npos) << describe(r);
}

// A host FIFO outside every writable root (the identity's own, 0600, with a reader on the host):
// a read-only mount does not stop opening a FIFO for writing, so bwrap's write layer and
// Landlock's WRITE_FILE right must (plugins/bwrap/README.md, "Host FIFOs: the write layer").
TEST_P(Escape, HostFifoOutsideWritableRootsTakesNoWrite) {
  const std::string fifo = outside_ / "control.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  const RunResult r =
      shell("if echo injected > " + fifo + "; then echo fifo=written; else echo fifo=refused; fi");
  char buffer[64];
  const ssize_t received = ::read(reader, buffer, sizeof buffer);
  ::close(reader);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("fifo=refused"), std::string::npos) << describe(r);
  EXPECT_LE(received, 0) << "the host's reader got data from inside the sandbox";
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
  for (const char* rc :
       {"rc_mkdir=0", "rc_mkdir2=0", "rc_below=0", "rc_below2=0", "rc_touch=0", "rc_write=0",
        "rc_symlink=0", "rc_rm=0", "rc_rmdir=0", "rc_mv=0", "rc_mv2=0"})
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
  // A says it runs (a-running), then waits for the host to say B has ended (b-ended).
  std::thread a([&] {
    const RunResult r = shell(
        "touch a-running; i=0; while [ ! -e b-ended ] && [ $i -lt 6000 ]; do sleep 0.01; "
        "i=$((i+1)); done; [ -e b-ended ] && echo b-ended; mkdir .codex; echo a-rc=$?");
    EXPECT_NE(r.out.find("b-ended\n"), std::string::npos) << describe(r);
    EXPECT_NE(r.out.find("a-rc=1"), std::string::npos) << describe(r);
  });
  const bool a_runs = wait_for_file(ws_ / "a-running", 60 * 1000);
  EXPECT_TRUE(a_runs) << "run A never started";
  const RunResult b = shell("true");
  EXPECT_EQ(b.code, 0) << describe(b);
  write_file(ws_ / "b-ended", "");
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
  give_to(who(), ws_.path());
  const RunResult r = run_as(who(),
                             {sbx_path(), "--backends", backend(), "explain", "--preset",
                              "workspace-write", "--cwd", ws_.path()},
                             env_for(who()));
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
  // /var/tmp is sticky: the identity owns the workspace, so it may rename it but for the sandbox.
  TempDir ws("/var/tmp");
  const std::string moved = ws.path() + ".moved";
  const RunResult r = exec(
      workspace_write(), {"/bin/sh", "-c", "mv " + ws.path() + " " + moved + "; true"}, ws.path());
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
  const RunResult r = exec({"--policy", policy}, {"/bin/sh", "-c",
                                                  "cat " + outside_ / "secret.txt" +
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
  std::string script = "echo tcp4; " + p + " tcp4 127.0.0.1 " + std::to_string(tcp4.port()) + "; " +
                       p + " udp4 127.0.0.1 " + std::to_string(udp4.port()) + "; ";
  if (tcp6.ok()) script += "echo tcp6; " + p + " tcp6 ::1 " + std::to_string(tcp6.port()) + "; ";
  const RunResult r =
      exec(workspace_write(),
           {"/bin/bash", "-c",
            script + "echo x > /dev/tcp/127.0.0.1/" + std::to_string(tcp4.port()) +
                "; echo x > /dev/udp/127.0.0.1/" + std::to_string(udp4.port()) + "; true"});
  EXPECT_EQ(r.code, 0) << describe(r);
  if (!traits().own_network_namespace) {
    // Sharing the host's network stack, every attempt must be blocked outright.
    EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
  } else {
    // In a network namespace of its own the attempts run, but the host's listeners on the same
    // addresses and ports are another namespace's: TCP is refused (no one listens there
    // inside), a UDP datagram lands in the namespace, and the host sees nothing.
    EXPECT_NE(r.out.find("tcp4\nBLOCKED: Connection refused\n"), std::string::npos) << describe(r);
    if (tcp6.ok()) {
      EXPECT_NE(r.out.find("tcp6\nBLOCKED: Connection refused\n"), std::string::npos)
          << describe(r);
    }
  }
  EXPECT_EQ(tcp4.hits_before_now(), 0);
  if (tcp6.ok()) {
    EXPECT_EQ(tcp6.hits_before_now(), 0);
  }
  EXPECT_EQ(udp4.hits_before_now(), 0);
}

// With the network restricted, a backend that shares the host's network namespace (Landlock)
// must refuse every inet socket: its loopback is the host's. A backend with a namespace of its
// own (bwrap) lets the command bind its own loopback, which no host service shares.
TEST_P(Escape, InetSocketsFollowTheBackendsNetworkNamespace) {
  if (!exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the attempts";
  const RunResult r =
      exec(workspace_write(),
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
  EXPECT_EQ(unix_sock.hits_before_now(), 0);
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

// With the network enabled the host's unix sockets stay closed under every backend that takes
// the policy (unix_socket_block): a host socket outside the writable roots, one a host process
// bound inside the workspace and a symlink to one are all refused by the sandbox (EACCES), and
// neither listener sees anything.
TEST_P(Escape, NetworkEnabledKeepsHostUnixSocketsClosed) {
  REQUIRE_ENFORCED("unix_socket_block");
  Listener outside_sock(Listener::kUnix, outside_ / "host.sock");
  Listener inside_sock(Listener::kUnix, ws_ / "host.sock");
  ASSERT_TRUE(outside_sock.ok() && inside_sock.ok());
  const std::string p = probe_path();
  const std::string host = outside_ / "host.sock";
  const RunResult r =
      exec({"--policy", workspace_policy(conf_.path(), "enabled")},
           {"/bin/sh", "-c",
            p + " unix " + host + "; " + p + " unix " + ws_ / "host.sock" + "; ln -s " + host +
                " " + ws_ / "link.sock" + " && " + p + " unix " + ws_ / "link.sock" + "; true"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out,
            "BLOCKED: Permission denied\nBLOCKED: Permission denied\nBLOCKED: Permission denied\n")
      << describe(r);
  EXPECT_EQ(outside_sock.hits_before_now(), 0);
  EXPECT_EQ(inside_sock.hits_before_now(), 0);
}

// ---------------------------------------------------------------------------------------------
// Processes, privileges and the run itself

// Every attempt in one sandboxed run. Those harmless on the host are tried there too, as the
// same identity without the sandbox: one the host already refuses to the identity (e.g.
// unprivileged bpf) shows nothing about the sandbox for it, and the case says so.
TEST_P(Escape, DangerousSyscallsAreDenied) {
  const pid_t target = victim();
  const std::string p = probe_path();
  // Harmless outside: a map, a ring, a keyring id, a user namespace of the probe's own, a
  // trace of the identity's own sleeping process.
  const std::vector<std::string> also_outside = {"io_uring", "bpf", "keyctl", "unshare",
                                                 "ptrace " + std::to_string(target)};
  // Never outside: the host's init and the host's /tmp.
  std::vector<std::string> attempts = {"ptrace 1", "mount /tmp"};
  attempts.insert(attempts.end(), also_outside.begin(), also_outside.end());
  std::string script;
  for (const std::string& op : attempts) script += "echo '== " + op + "'; " + p + " " + op + "; ";
  const RunResult r = shell(script + "/usr/bin/unshare -U /bin/true; echo unshare_rc=$?");
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const std::string& op : attempts)
    EXPECT_NE(r.out.find("== " + op + "\nBLOCKED: "), std::string::npos)
        << op << ": " << describe(r);
  EXPECT_NE(r.out.find("unshare_rc="), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("unshare_rc=0"), std::string::npos) << describe(r);
  for (const std::string& op : also_outside) {
    std::vector<std::string> argv = {p};
    std::istringstream words(op);
    for (std::string word; words >> word;) argv.push_back(word);
    const RunResult outside = run_as(who(), argv, env_for(who()));
    if (outside.out.find("SUCCEEDED") == std::string::npos)
      std::cout << "[ note     ] " << op << " fails for " << name_of(who())
                << " without the sandbox too (" << outside.out.substr(0, outside.out.find('\n'))
                << "): here it shows nothing about the sandbox\n";
  }
  end(target);
}

// No capability is held, and none can be gained by executing a set-user-ID or file-capability
// program (no_new_privs, prctl(2) PR_SET_NO_NEW_PRIVS). bwrap empties the bounding set too;
// Landlock started by an ordinary user cannot (PR_CAPBSET_DROP needs CAP_SETPCAP,
// capabilities(7)), and with no_new_privs the bounding set grants nothing at execve.
TEST_P(Escape, NoCapabilityReachesTheCommandEvenAsRoot) {
  const RunResult r = shell("grep -E '^(Cap(Prm|Eff|Bnd|Amb|Inh)|NoNewPrivs)' /proc/self/status");
  EXPECT_EQ(r.code, 0) << describe(r);
  std::vector<std::string> sets = {"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
                                   "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"};
  if (backend() == "bwrap" || who() == Identity::kRoot) sets.push_back("CapBnd:\t0000000000000000");
  for (const std::string& set : sets)
    EXPECT_NE(r.out.find(set), std::string::npos) << set << " " << describe(r);
}

// The victim is the identity's own: the host would let the identity kill it.
TEST_P(Escape, HostProcessesCannotBeKilled) {
  if (traits().signals_need_landlock_scoping) {
    const RunResult abi = run_as(who(), {sbx_path(), "backends", "--probe"}, env_for(who()));
    if (abi.out.find("pass  scoping") == std::string::npos)
      GTEST_SKIP() << "the kernel's Landlock ABI has no signal scoping (< 6): not enforceable";
  }
  const pid_t target = victim();
  const std::string pid = std::to_string(target);
  ASSERT_EQ(::kill(target, 0), 0) << "the victim is not running before the attack";
  const RunResult r = shell("echo probe; " + probe_path() + " kill " + pid +
                            "; echo probe_rc=$?; kill -9 " + pid + "; echo kill_rc=$?; true");
  // Both attempts ran to their end, and both were refused: the probe said BLOCKED and exited 1
  // (its code for a refused operation), the shell's kill exited non-zero.
  EXPECT_NE(r.out.find("probe\nBLOCKED: "), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("\nprobe_rc=1\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("kill_rc="), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("kill_rc=0"), std::string::npos) << describe(r);
  int status = 0;
  EXPECT_EQ(::waitpid(target, &status, WNOHANG), 0) << "the host process died";
  end(target);
  // The same probe, as the same identity without the sandbox, kills a victim just like it: so
  // the refusal above was the sandbox's, not a probe or a victim that cannot be killed anyway.
  const pid_t control = victim();
  const RunResult outside =
      run_as(who(), {probe_path(), "kill", std::to_string(control)}, env_for(who()));
  EXPECT_EQ(outside.code, 0) << describe(outside);
  EXPECT_EQ(outside.out, "SUCCEEDED\n") << describe(outside);
  EXPECT_EQ(::waitpid(control, &status, 0), control);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
}

// Two grandchildren (one in a session of its own) hold the write end of a host FIFO, say they
// run, and would write late*.txt after 3 s. The command ends once both run. The host reads the
// FIFO to its end: the end comes when the last writer is gone, at once if the run's end took
// them, after their late write if not.
TEST_P(Escape, GrandchildrenDoNotOutliveTheCommand) {
  const std::string fifo = ws_ / "alive";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  give_to(who(), fifo);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  const RunResult r = shell(
      "(exec 3>alive; touch started1; sleep 3; echo late > late.txt) & "
      "setsid sh -c 'exec 3>alive; touch started2; sleep 3; echo late > late2.txt' & "
      "i=0; while { [ ! -e started1 ] || [ ! -e started2 ]; } && [ $i -lt 3000 ]; do "
      "sleep 0.01; i=$((i+1)); done; exit 0");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(exists(ws_ / "started1") && exists(ws_ / "started2"))
      << "the grandchildren never ran: " << describe(r);
  bool ended = false;
  for (int waited = 0; waited < 30000 && !ended; waited += 10) {
    pollfd p{reader, POLLIN, 0};
    ::poll(&p, 1, 10);
    char byte = 0;
    ended = (p.revents & POLLHUP) != 0 && ::read(reader, &byte, 1) == 0;
  }
  ::close(reader);
  EXPECT_TRUE(ended) << "a grandchild still holds the FIFO 30 s after the command ended";
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
    write_file(ws_ / "bin/" + helper,
               "#!/bin/sh\ntouch " + ws_ / "fake-" + helper + "-ran\nshift 999\nexec \"$@\"\n");
    fs::permissions(ws_ / "bin/" + helper, fs::perms::owner_all);
  }
  std::vector<std::string> env = env_for(who());
  env[0] = "PATH=" + ws_ / "bin" + ":/usr/bin:/bin";
  const RunResult r =
      exec(workspace_write(), {"/bin/sh", "-c", "echo x > " + outside_ / "via-fake.txt" + "; true"},
           "", "", env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(ws_ / "fake-bwrap-ran"));
  EXPECT_FALSE(exists(ws_ / "fake-sbx-stage2-ran"));
  EXPECT_FALSE(exists(outside_ / "via-fake.txt"));
}

// The command's environment arrives whole, but not through arguments: whatever supervises the
// command runs for as long as it does, and arguments are world-readable in /proc.
TEST_P(Escape, EnvironmentArrivesWithoutAppearingInAnyArguments) {
  std::vector<std::string> env = env_for(who());
  env.push_back("SBX_IT_CARRIED=sbx-it-secret-value-4711");
  // Under bwrap every process the command can see is read: its parent, the direct launch's
  // waiter, and the rest of the sandbox (bwrap's PID 1 is hidden: plugins/bwrap/README.md, "The
  // direct launch"). Landlock shares the host's pid namespace: only the parent is read.
  const std::string whose = backend() == "bwrap" ? "/proc/[0-9]*" : "/proc/$PPID";
  const RunResult r = exec(workspace_write(),
                           {"/bin/sh", "-c",
                            "printf '%s\\n' \"$SBX_IT_CARRIED\"; for p in " + whose +
                                "; do tr '\\0' '\\n' < $p/cmdline; done > parent.txt; cat "
                                "/proc/$PPID/comm > comm.txt 2>/dev/null; true"},
                           "", "", env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, "sbx-it-secret-value-4711\n") << describe(r);
  const std::string parent = read_file(ws_ / "parent.txt");
  EXPECT_FALSE(parent.empty()) << "no process's arguments are visible to the command";
  EXPECT_EQ(parent.find("sbx-it-secret-value"), std::string::npos) << parent;
  if (backend() == "landlock") {
    // Without namespaces the parent is the supervisor, a fork of sbx that never execs: its
    // arguments are sbx's own, and the environment went only into the command's execve.
    EXPECT_EQ(read_file(ws_ / "comm.txt"), "sbx-supervisor\n");
    EXPECT_NE(parent.find("exec"), std::string::npos) << parent;
  }
}

INSTANTIATE_TEST_SUITE_P(LinuxBackends, Escape,
                         ::testing::Combine(::testing::Values("bwrap", "landlock"),
                                            ::testing::Values(Identity::kRoot,
                                                              Identity::kUnprivileged)),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::get<0>(param_info.param) + "_" +
                                  name_of(std::get<1>(param_info.param));
                         });

}  // namespace
