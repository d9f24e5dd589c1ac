// Kept probe answers (docs/ARCHITECTURE.md, "Kept probe answers"), through the installed sbx:
// a second `sbx --backends landlock exec` reuses the answer the first one kept and starts no
// process before the command (strace counts the forks of a --dry-run, which starts nothing
// else); `sbx backends --probe` always probes and refreshes the answer; a changed key, a foreign
// or writable or symlinked store is ignored and probed afresh; a forged answer cannot make a
// policy Landlock cannot enforce run; the store is read-only in every sandbox.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr const char* kStrace = "/usr/bin/strace";

class KeptProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    if (!exists(kStrace)) GTEST_SKIP() << "no " << kStrace << " to count forks with";
    // mkdtemp: this user's own 0700 directory, so sbx takes it as the runtime directory.
    const RunResult first = dry_run();
    if (first.code != 0) GTEST_SKIP() << "landlock cannot plan here: " << describe(first);
  }

  std::vector<std::string> env() const {
    std::vector<std::string> e = base_env();
    e.push_back("XDG_RUNTIME_DIR=" + runtime_.path());
    return e;
  }
  std::string store() const { return runtime_ / "sbx-probe"; }
  std::string answer() const { return store() + "/landlock.answer"; }

  std::vector<std::string> dry_run_args() const {
    return {sbx_path(), "--backends", "landlock", "exec",          "--dry-run", "--preset",
            "read-only", "--cwd",     ws_.path(), "--",            "/bin/true"};
  }
  RunResult dry_run() const { return run(dry_run_args(), env()); }

  // How many processes `argv` started (clone, clone3, fork, vfork), and its result.
  int forks_of(const std::vector<std::string>& argv, RunResult* result = nullptr) const {
    const std::string log = trace_ / "strace.log";
    std::vector<std::string> traced = {kStrace, "-f", "-qq", "-e",
                                       "trace=clone,clone3,fork,vfork", "-o", log};
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

  TempDir runtime_;
  TempDir ws_{"/var/tmp"};
  TempDir trace_;
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
  const std::vector<std::string> policy = {"--preset", "read-only", "--writable-root", runtime_.path()};
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

}  // namespace
