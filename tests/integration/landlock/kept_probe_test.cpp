// Kept probe answers (core/src/plugins/README.md), through the installed sbx,
// for Landlock and bwrap (KeptBwrapProbe: its key also holds the bwrap binary and the namespace
// sysctls): a second `sbx --backends landlock exec` reuses the answer the first one kept and starts
// no process before the command (strace counts the forks of a --dry-run, which starts nothing
// else); `sbx backends --probe` always probes and refreshes the answer; a changed key, a foreign
// or writable or symlinked store is ignored and probed afresh; a forged answer cannot make a
// policy Landlock cannot enforce run; the store is read-only in every sandbox.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/filtered_run.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr const char* kStrace = "/usr/bin/strace";

class KeptProbe : public ::testing::Test {
 protected:
  explicit KeptProbe(std::string backend = "landlock") : backend_(std::move(backend)) {}

  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (!exists(kStrace)) GTEST_SKIP() << "no " << kStrace << " to count forks with";
    // mkdtemp: this user's own 0700 directory, so sbx takes it as the runtime directory.
    const RunResult first = dry_run();
    if (first.code != 0) GTEST_SKIP() << backend_ << " cannot plan here: " << describe(first);
    // The one answer kept: <backend>-<hash of this install>.answer.
    for (const std::string& name : listing(store())) {
      if (name.rfind(backend_ + "-", 0) == 0 && name.size() > backend_.size() + 8 &&
          name.compare(name.size() - 7, 7, ".answer") == 0)
        answer_ = store() + "/" + name;
    }
    ASSERT_FALSE(answer_.empty()) << "no kept answer in " << store();
  }

  std::vector<std::string> env() const {
    std::vector<std::string> e = base_env();
    e.push_back("XDG_RUNTIME_DIR=" + runtime_.path());
    return e;
  }
  std::string store() const { return runtime_ / "sbx-probe"; }
  const std::string& answer() const { return answer_; }

  std::vector<std::string> dry_run_args() const {
    return {sbx_path(),  "--backends", backend_,   "exec", "--dry-run", "--preset",
            "read-only", "--cwd",      ws_.path(), "--",   "/bin/true"};
  }
  RunResult dry_run() const { return run(dry_run_args(), env()); }

  // How many processes `argv` started (clone, clone3, fork, vfork), and its result.
  int forks_of(const std::vector<std::string>& argv, RunResult* result = nullptr) const {
    const std::string log = trace_ / "strace.log";
    std::vector<std::string> traced = {kStrace, "-f", "-qq", "-e", "trace=clone,clone3,fork,vfork",
                                       "-o",    log};
    traced.insert(traced.end(), argv.begin(), argv.end());
    const RunResult r = run(traced, env());
    if (result != nullptr) *result = r;
    int count = 0;
    const std::string text = read_file(log);
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = text.find('\n', at);
      const std::string line = text.substr(at, end == std::string::npos ? end : end - at);
      if (line.find("clone") != std::string::npos || line.find("fork") != std::string::npos)
        ++count;
      if (end == std::string::npos) break;
      at = end + 1;
    }
    return count;
  }
  int dry_run_forks() const {
    RunResult r;
    const int n = forks_of(dry_run_args(), &r);
    EXPECT_EQ(r.code, 0) << describe(r);
    return n;
  }

  // The kept answer with its wire text changed by `edit` (key kept).
  void rewrite_answer(const std::string& from, const std::string& to) const {
    std::string text = read_file(answer());
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, from.size(), to);
    ::unlink(answer().c_str());
    write_file(answer(), text);
    ::chmod(answer().c_str(), 0600);
  }

  // The kept answer's key (its first line).
  std::string key() const {
    const std::string text = read_file(answer());
    return text.substr(0, text.find('\n'));
  }

  // The kept answer with its key's field that begins with `field` (up to the next '|')
  // replaced by `replacement`.
  void rewrite_key_field(const std::string& field, const std::string& replacement) const {
    std::string text = read_file(answer());
    const std::size_t at = text.find("|" + field);
    ASSERT_NE(at, std::string::npos) << text.substr(0, text.find('\n'));
    ASSERT_LT(at, text.find('\n'));
    const std::size_t end = text.find_first_of("|\n", at + 1);
    text.replace(at + 1, end - at - 1, replacement);
    ::unlink(answer().c_str());
    write_file(answer(), text);
    ::chmod(answer().c_str(), 0600);
  }

  std::string backend_;
  TempDir runtime_{private_parent()};  // below /tmp it would not count as a runtime directory
  TempDir ws_{"/var/tmp"};
  TempDir trace_;
  std::string answer_;
};

// The same store, bwrap's answer: kept with the bwrap binary and the namespace sysctls in its
// key (its answer_depends_on check).
class KeptBwrapProbe : public KeptProbe {
 protected:
  KeptBwrapProbe() : KeptProbe("bwrap") {}
};

TEST_F(KeptProbe, SecondRunStartsNoProcessBeforeTheCommand) {
  ASSERT_TRUE(exists(answer()));
  struct stat st {};
  ASSERT_EQ(::stat(answer().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_EQ(dry_run_forks(), 0) << "the kept answer must spare the guarded probe's fork";
  // Without a store the same dry run forks the guarded probe (which vforks the trial domain).
  ::unlink(answer().c_str());
  EXPECT_GE(dry_run_forks(), 1);
  EXPECT_TRUE(exists(answer())) << "a fresh probe keeps its answer";
  // And a real run with the kept answer still confines the command.
  const RunResult r =
      run({sbx_path(), "--backends", "landlock", "exec", "--preset", "read-only", "--cwd",
           ws_.path(), "--", "/bin/sh", "-c", "echo x > " + ws_.path() + "/out; echo $?"},
          env());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(ws_ / "out")) << describe(r);
}

TEST_F(KeptProbe, BackendsProbeAlwaysProbesAndRefreshesTheAnswer) {
  rewrite_answer("\"summary\":\"", "\"summary\":\"STALE ");
  RunResult r;
  const int forks =
      forks_of({sbx_path(), "--backends", "landlock", "backends", "--probe", "--json"}, &r);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_GE(forks, 1) << "diagnostics must probe for real";
  EXPECT_EQ(r.out.find("STALE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("kept: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("answer_keepable"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(answer()).find("STALE"), std::string::npos) << "the answer is refreshed";
  EXPECT_EQ(dry_run_forks(), 0);
}

TEST_F(KeptProbe, AnotherKeyIsProbedAfreshAndReplaced) {
  // Another boot (the key's boot id field).
  std::string text = read_file(answer());
  const std::size_t bar = text.find('|', text.find('|', text.find('|') + 1) + 1);
  ASSERT_NE(bar, std::string::npos);
  text.replace(bar + 1, 8, "00000000");
  ::unlink(answer().c_str());
  write_file(answer(), text);
  ::chmod(answer().c_str(), 0600);
  EXPECT_GE(dry_run_forks(), 1);
  EXPECT_EQ(read_file(answer()).find("|00000000"), std::string::npos) << "rewritten, new key";
  EXPECT_EQ(dry_run_forks(), 0);
}

TEST_F(KeptProbe, ChangedPluginFileIsProbedAfresh) {
  // The plugin file named in the key, touched: its identity (mtime, ctime) changes.
  const std::string key = read_file(answer()).substr(0, read_file(answer()).find('\n'));
  const std::size_t so = key.find("sbx-backend-landlock.so,");
  ASSERT_NE(so, std::string::npos) << key;
  const std::size_t start = key.rfind('|', so) + 1;
  const std::string plugin = key.substr(start, key.find(',', start) - start);
  ASSERT_EQ(::utimensat(AT_FDCWD, plugin.c_str(), nullptr, 0), 0) << plugin;
  EXPECT_GE(dry_run_forks(), 1);
  EXPECT_EQ(dry_run_forks(), 0);
}

TEST_F(KeptProbe, ForeignWritableOrSymlinkedStoreIsIgnored) {
  const std::string good = read_file(answer());
  auto reset = [&] {
    ::unlink(answer().c_str());
    write_file(answer(), good);
    ::chmod(answer().c_str(), 0600);
  };
  // Owned by another user (only root can give a file away).
  if (::geteuid() == 0) {
    reset();
    ASSERT_EQ(::chown(answer().c_str(), 65534, 65534), 0);
    EXPECT_GE(dry_run_forks(), 1) << "another user's answer is not used";
  }
  // Writable by group or others.
  reset();
  ::chmod(answer().c_str(), 0620);
  EXPECT_GE(dry_run_forks(), 1) << "a group-writable answer is not used";
  // A symlink to a good answer elsewhere.
  write_file(trace_ / "elsewhere", good);
  ::chmod((trace_ / "elsewhere").c_str(), 0600);
  ::unlink(answer().c_str());
  ASSERT_EQ(::symlink((trace_ / "elsewhere").c_str(), answer().c_str()), 0);
  EXPECT_GE(dry_run_forks(), 1) << "an answer reached through a symlink is not used";
  struct stat st {};
  ASSERT_EQ(::lstat(answer().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the symlink was replaced, not written through";
  EXPECT_EQ(read_file(trace_ / "elsewhere"), good);
  // A store directory that is a symlink, or writable by others: nothing is kept there.
  reset();
  ASSERT_EQ(::chmod(store().c_str(), 0777), 0);
  EXPECT_GE(dry_run_forks(), 1) << "a store others can write is not used";
  EXPECT_GE(dry_run_forks(), 1) << "nor written to";
  ASSERT_EQ(::chmod(store().c_str(), 0700), 0);
  ASSERT_EQ(::rename(store().c_str(), (runtime_ / "real-store").c_str()), 0);
  ASSERT_EQ(::symlink((runtime_ / "real-store").c_str(), store().c_str()), 0);
  EXPECT_GE(dry_run_forks(), 1) << "a symlinked store is not used";
  EXPECT_GE(dry_run_forks(), 1);
  // Through all of it the runs themselves went on (dry_run_forks checks exit 0).
}

TEST_F(KeptProbe, ForgedCapabilitiesCannotMakeAnUnenforceablePolicyRun) {
  // An answer claiming every capability (carve-outs, protected names, deny globs: nothing
  // Landlock has) and a higher ABI than any kernel has.
  rewrite_answer("\"capabilities\":", "\"capabilities\":4294967295,\"was\":");
  rewrite_answer("\"summary\":\"", "\"summary\":\"Landlock ABI 99 ");
  // It is used (no probe)...
  EXPECT_EQ(dry_run_forks(), 0);
  // ...and still a policy with protected names and carve-outs is refused, nothing runs.
  const RunResult r =
      run({sbx_path(), "--backends", "landlock", "exec", "--preset", "workspace-write", "--cwd",
           ws_.path(), "--", "/bin/sh", "-c", "touch " + ws_.path() + "/ran"},
          env());
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("landlock cannot enforce"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists(ws_ / "ran"));
}

TEST_F(KeptProbe, StoreIsReadOnlyInEverySandbox) {
  // A policy whose writable root holds the runtime directory, and with it the store.
  const std::vector<std::string> policy = {"--preset", "read-only", "--writable-root",
                                           runtime_.path()};
  const std::string script = "echo forged > " + answer() + "; echo forged > " + store() + "/x";
  // Landlock cannot carve the store out of the writable root: the policy goes elsewhere or,
  // with landlock alone, is refused.
  std::vector<std::string> argv = {sbx_path(), "--backends", "landlock", "exec"};
  argv.insert(argv.end(), policy.begin(), policy.end());
  argv.insert(argv.end(), {"--cwd", ws_.path(), "--", "/bin/sh", "-c", script});
  const RunResult landlock = run(argv, env());
  EXPECT_EQ(landlock.code, 125) << describe(landlock);
  EXPECT_NE(landlock.err.find("sbx-probe"), std::string::npos) << describe(landlock);
  // bwrap keeps it read-only inside the writable root.
  if (exists("/usr/bin/bwrap")) {
    argv[2] = "bwrap";
    const RunResult bwrap = run(argv, env());
    EXPECT_NE(bwrap.err.find("Read-only file system"), std::string::npos) << describe(bwrap);
  }
  EXPECT_EQ(read_file(answer()).find("forged"), std::string::npos);
  EXPECT_FALSE(exists(store() + "/x"));
  EXPECT_EQ(dry_run_forks(), 0) << "the kept answer is intact";
}

// argv where every Landlock system call fails with ENOSYS, as on a kernel without Landlock.
int run_without_landlock(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& out) {
  return exit_code_under_filter(
      argv, env, out,
      {
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 5),
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_create_ruleset, 3, 0),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_add_rule, 2, 0),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_landlock_restrict_self, 1, 0),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      });
}

// argv where no new user namespace can be made, as on a host that forbids them: clone and
// unshare with CLONE_NEWUSER fail with EPERM, clone3 (whose flags a filter cannot read) with
// ENOSYS, which makes callers fall back to clone.
int run_without_user_namespaces(const std::vector<std::string>& argv,
                                const std::vector<std::string>& env, const std::string& out) {
  return exit_code_under_filter(
      argv, env, out,
      {
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 7),
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 6, 0),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 1, 0),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 3),
          // Both take their flags in the first argument (the low 32 bits hold CLONE_NEWUSER).
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
          BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      });
}

// The confinement fields of a kept answer's key (private_state::caller_confinement) for a
// process under no seccomp filter, and as they read under one filter with no_new_privs.
constexpr std::string_view kUnconfined = "NoNewPrivs:0;Seccomp:0;Seccomp_filters:0;";
constexpr std::string_view kUnderOneFilter = "NoNewPrivs:1;Seccomp:2;Seccomp_filters:1;";

#if defined(__x86_64__)
TEST_F(KeptProbe, AnAnswerClaimingLandlockOnAKernelWithoutItFailsClosed) {
  // The answer kept on this host, under the key of a process whose filter hides Landlock (the
  // key's confinement fields become "NoNewPrivs:1;Seccomp:2;Seccomp_filters:1;"): a store
  // forged or left behind for exactly that process. It claims Landlock ABI and capabilities the
  // "kernel" does not have.
  std::string text = read_file(answer());
  const std::size_t field = text.find(kUnconfined);
  if (field == std::string::npos) GTEST_SKIP() << "this test already runs under seccomp";
  text.replace(field, kUnconfined.size(), kUnderOneFilter);
  ::unlink(answer().c_str());
  write_file(answer(), text);
  ::chmod(answer().c_str(), 0600);
  const std::vector<std::string> argv = {
      sbx_path(), "--backends", "landlock", "exec",
      "--preset", "read-only",  "--cwd",    ws_.path(),
      "--",       "/bin/sh",    "-c",       "echo ran > " + ws_.path() + "/ran"};
  std::vector<std::string> e = env();
  const int code = run_without_landlock(argv, e, trace_ / "out");
  const std::string out = read_file(trace_ / "out");
  EXPECT_EQ(code, 125) << out;
  EXPECT_FALSE(exists(ws_ / "ran")) << out;
  // The kept answer was used (the launcher, not the probe, refused): a fresh probe would have
  // passed Landlock over as unavailable.
  EXPECT_NE(out.find("abi: Landlock is not built into this kernel"), std::string::npos) << out;
  // Control: without the forged answer the probe runs under the filter and finds no Landlock.
  ::unlink(answer().c_str());
  const int fresh = run_without_landlock(argv, e, trace_ / "out2");
  const std::string out2 = read_file(trace_ / "out2");
  EXPECT_EQ(fresh, 125) << out2;
  EXPECT_NE(out2.find("unavailable: landlock_abi: ENOSYS"), std::string::npos) << out2;
  EXPECT_FALSE(exists(ws_ / "ran"));
}
#endif

TEST_F(KeptBwrapProbe, SecondRunStartsNoProcessBeforeTheCommand) {
  struct stat st {};
  ASSERT_EQ(::stat(answer().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(key().find("/proc/sys/user/max_user_namespaces="), std::string::npos) << key();
  EXPECT_NE(key().find("/bwrap,"), std::string::npos) << "the bwrap binary's identity: " << key();
  EXPECT_EQ(dry_run_forks(), 0) << "the kept answer must spare the guarded probe's fork";
  ::unlink(answer().c_str());
  EXPECT_GE(dry_run_forks(), 1);
  EXPECT_TRUE(exists(answer())) << "a fresh probe keeps its answer";
  const RunResult r =
      run({sbx_path(), "--backends", "bwrap", "exec", "--preset", "read-only", "--cwd", ws_.path(),
           "--", "/bin/sh", "-c", "echo x > " + ws_.path() + "/out; echo $?"},
          env());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_FALSE(exists(ws_ / "out")) << describe(r);
}

TEST_F(KeptBwrapProbe, AChangedSysctlOrBwrapBinaryIsProbedAfresh) {
  // As if user.max_user_namespaces had another value when the answer was kept.
  const std::string sysctl = "/proc/sys/user/max_user_namespaces=";
  rewrite_key_field(sysctl, sysctl + "12345678");
  EXPECT_GE(dry_run_forks(), 1);
  EXPECT_EQ(key().find(sysctl + "12345678"), std::string::npos) << "rewritten with the value now";
  EXPECT_EQ(dry_run_forks(), 0);
  // As if the bwrap binary had been another file (another inode and times).
  const std::size_t at = key().find("/bwrap,");
  ASSERT_NE(at, std::string::npos) << key();
  const std::size_t start = key().rfind('|', at) + 1;
  const std::string path = key().substr(start, at + 6 - start);
  rewrite_key_field(path + ",", path + ",1,1,1,1,1,1.1,1.1");
  EXPECT_GE(dry_run_forks(), 1);
  EXPECT_EQ(dry_run_forks(), 0);
}

TEST_F(KeptBwrapProbe, DependenciesThatCannotBeKeyedOnAreNotKept) {
  // A relative path in answer_depends_on (key untouched): not an answer sbx may key on.
  rewrite_answer(", /proc/sys/user/max_user_namespaces", ", proc/sys/user/max_user_namespaces");
  EXPECT_GE(dry_run_forks(), 1);
  EXPECT_NE(read_file(answer()).find(", /proc/sys/user/max_user_namespaces"), std::string::npos)
      << "replaced by a fresh answer";
  EXPECT_EQ(dry_run_forks(), 0);
}

#if defined(__x86_64__)
TEST_F(KeptBwrapProbe, AnAnswerKeptWhereUserNamespacesWorkedFailsClosedWhereTheyDoNot) {
  // The answer kept here, under the key of a process whose filter forbids user namespaces (the
  // key's confinement fields as under one filter): it claims a bwrap that cannot start there.
  const std::string text = read_file(answer());
  if (text.find(kUnconfined) == std::string::npos)
    GTEST_SKIP() << "this test already runs under seccomp";
  rewrite_answer(std::string(kUnconfined), std::string(kUnderOneFilter));
  const std::vector<std::string> argv = {
      sbx_path(), "--backends", "bwrap", "exec",    "--preset", "read-only",
      "--cwd",    ws_.path(),   "--",    "/bin/sh", "-c",       "echo kept-bwrap-$((6*7))"};
  const std::vector<std::string> e = env();
  const int code = run_without_user_namespaces(argv, e, trace_ / "out");
  const std::string out = read_file(trace_ / "out");
  EXPECT_EQ(code, 125) << out;
  EXPECT_EQ(out.find("kept-bwrap-42"), std::string::npos) << "the command ran: " << out;
  // The kept answer was used: bwrap itself failed to start, the run failed with it.
  EXPECT_NE(out.find("bwrap"), std::string::npos) << out;
  // Control: without the kept answer the probe under the same filter passes bwrap over, and
  // names the filter as the cause.
  ::unlink(answer().c_str());
  const int fresh = run_without_user_namespaces(argv, e, trace_ / "out2");
  const std::string out2 = read_file(trace_ / "out2");
  EXPECT_EQ(fresh, 125) << out2;
  EXPECT_NE(out2.find("passed over bwrap: unavailable: user_namespaces: this process's seccomp "
                      "filter refuses them"),
            std::string::npos)
      << out2;
  EXPECT_EQ(out2.find("kept-bwrap-42"), std::string::npos) << "the command ran: " << out2;
}
#endif

#if defined(__x86_64__)
// Issue #38: an answer kept outside a container-like confinement (here: a filter that forbids
// new user namespaces, as Docker's default profile does) is not reused inside it, neither
// core's kept answer nor bwrap's own probe cache: the probe runs there and names the real
// cause.
TEST_F(KeptBwrapProbe, AnAnswerKeptOutsideIsNotReusedUnderAContainerLikeFilter) {
  ASSERT_TRUE(exists(answer()));
  if (read_file(answer()).find(kUnconfined) == std::string::npos)
    GTEST_SKIP() << "this test already runs under seccomp";
  const std::vector<std::string> e = env();
  const int code = run_without_user_namespaces(
      {sbx_path(), "--backends", "bwrap", "exec", "--preset", "read-only", "--cwd", ws_.path(),
       "--", "/bin/sh", "-c", "echo kept-bwrap-$((6*7))"},
      e, trace_ / "out");
  const std::string out = read_file(trace_ / "out");
  EXPECT_EQ(code, 125) << out;
  EXPECT_NE(out.find("passed over bwrap"), std::string::npos) << out;
  EXPECT_EQ(out.find("kept-bwrap-42"), std::string::npos) << "the command ran: " << out;
  run_without_user_namespaces({sbx_path(), "--backends", "bwrap", "backends", "--probe"}, e,
                              trace_ / "probe");
  const std::string probe = read_file(trace_ / "probe");
  EXPECT_EQ(probe.find("tried earlier this boot; cached"), std::string::npos) << probe;
  EXPECT_EQ(probe.find("kept: the answer of an earlier probe"), std::string::npos) << probe;
  EXPECT_NE(probe.find("NOT AVAILABLE - user_namespaces: this process's seccomp filter refuses "
                       "them"),
            std::string::npos)
      << probe;
  // The caller's filter is no reason to fail bwrap's seccomp check (filters stack).
  EXPECT_EQ(probe.find("FAIL  seccomp"), std::string::npos) << probe;
}
#endif

}  // namespace
