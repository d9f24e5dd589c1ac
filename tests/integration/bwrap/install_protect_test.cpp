// sbx's own install stays read-only in every sandbox, whatever the policy grants: a copy of the
// installed tree is put inside a directory the policy makes writable and driven from there.
// Through bwrap every attempt to replace, remove or rename sbx's files fails and the host files
// are unchanged afterwards; through Landlock (which cannot carve out) the run is refused with
// the install path named.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

// <prefix>/<libdir>/sbx/backends of an install under `prefix` laid out like the installed tree.
std::string plugin_dir_of(const std::string& prefix) {
  return prefix + "/" + install_libdir() + "/sbx/backends";
}

// The workspace-write shape without protected names, so only the install carve-out could stop
// Landlock from running it.
std::string write_install_policy(const std::string& dir) {
  const std::string path = dir + "/policy.json";
  write_file(path, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                   R"({"path":":root","access":"read"},{"path":":cwd","access":"write"},)"
                   R"({"path":":slash_tmp","access":"write"}],"protected_names":[]},)"
                   R"("network":{"mode":"restricted"}})");
  return path;
}

class InstallProtect : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "needs root: the copied install must sit in a root-owned chain the plugin "
                      "loader trusts";
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    // Next to the test prefix (root-owned, not group/world-writable, unlike /tmp), so the
    // plugin loader trusts the copy.
    const std::string parent = fs::path(SBX_TEST_PREFIX).parent_path();
    workspace_ = std::make_unique<TempDir>(parent);
    ws_ = workspace_->path();
    prefix_ = ws_ + "/prefix";
    const RunResult copied = run({"/bin/cp", "-a", SBX_TEST_PREFIX, prefix_}, base_env());
    ASSERT_EQ(copied.code, 0) << describe(copied);
    policy_ = write_install_policy(conf_.path());
    targets_ = {prefix_ + "/bin/sbx", prefix_ + "/libexec/sbx/sbx-stage2",
                plugin_dir_of(prefix_) + "/sbx-backend-bwrap.so",
                plugin_dir_of(prefix_) + "/sbx-backend-landlock.so"};
    for (const auto& entry : fs::directory_iterator(prefix_ + "/" + install_libdir())) {
      if (entry.path().filename().string().rfind("libsbx.so", 0) == 0)
        targets_.push_back(entry.path());
    }
    for (const std::string& target : targets_) before_[target] = state_of(target);
  }
  RunResult copied_sbx(const std::string& backend, const std::string& script) {
    return run({prefix_ + "/bin/sbx", "--backends", backend, "exec", "--policy", policy_, "--cwd",
                ws_, "--", "/bin/sh", "-c", script},
               base_env());
  }
  std::unique_ptr<TempDir> workspace_;  // made in SetUp: its parent is known only there
  std::string ws_;
  std::string prefix_;
  TempDir conf_{"/var/tmp"};
  std::string policy_;
  std::vector<std::string> targets_;
  std::map<std::string, FileState> before_;
};

TEST_F(InstallProtect, BwrapCannotReplaceRemoveOrRenameSbxFiles) {
  // Every attempt prints "WROTE <what>" when it succeeds; none may.
  std::string script = "echo evil > /tmp/sbx-evil-$$; ";
  for (const std::string& t : targets_) {
    script += "cp /tmp/sbx-evil-$$ '" + t + "' 2>/dev/null && echo 'WROTE cp " + t + "'; ";
    script += "mv /tmp/sbx-evil-$$ '" + t + "' 2>/dev/null && echo 'WROTE mv-over " + t +
              "'; echo evil > /tmp/sbx-evil-$$; ";
    script += "mv '" + t + "' '" + t + ".old' 2>/dev/null && echo 'WROTE mv-away " + t + "'; ";
    script += "rm -f '" + t + "' 2>/dev/null; [ -e '" + t + "' ] || echo 'WROTE rm " + t + "'; ";
  }
  // lib, and lib/<triplet> when that is the libdir: moving either would move the plugins.
  std::vector<std::string> dirs = {prefix_, prefix_ + "/bin", prefix_ + "/lib",
                                   prefix_ + "/libexec/sbx", plugin_dir_of(prefix_)};
  if (install_libdir() != "lib") dirs.push_back(prefix_ + "/" + install_libdir());
  for (const std::string& dir : dirs) {
    script += "mv '" + dir + "' '" + dir + ".old' 2>/dev/null && echo 'WROTE mv-dir " + dir + "'; ";
  }
  script += "cp /tmp/sbx-evil-$$ '" + plugin_dir_of(prefix_) +
            "/sbx-backend-evil.so' 2>/dev/null && echo 'WROTE new plugin'; ";
  script += "echo planted > '" + ws_ + "/workspace-ok' && echo 'workspace writable'; ";
  script += "rm -f /tmp/sbx-evil-$$";
  const RunResult r = copied_sbx("bwrap", script);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << describe(r);
  // The policy itself still works: the rest of the workspace is writable.
  EXPECT_NE(r.out.find("workspace writable"), std::string::npos) << describe(r);
  for (const std::string& t : targets_) {
    const FileState after = state_of(t);
    EXPECT_EQ(after.inode, before_[t].inode) << t << " was replaced";
    EXPECT_TRUE(after.content == before_[t].content) << t << " was changed";
  }
  EXPECT_FALSE(exists(plugin_dir_of(prefix_) + "/sbx-backend-evil.so"));
}

// The whole prefix, not only the directories holding code: the host's shells source the
// completions in share/ (bash-completion loads share/bash-completion/completions/sbx when `sbx`
// is completed), and share/sbx holds the policy schema; include/ is what a later build uses.
TEST_F(InstallProtect, BwrapCannotWriteAnythingElseInThePrefix) {
  const std::vector<std::string> dirs = {prefix_ + "/share/bash-completion/completions",
                                         prefix_ + "/share/sbx",
                                         prefix_ + "/include/sbx",
                                         prefix_ + "/share",
                                         prefix_ + "/include",
                                         prefix_};
  std::string script;
  for (const std::string& dir : dirs) {
    ASSERT_TRUE(fs::is_directory(dir)) << dir << " is not in the installed tree";
    script += "echo 'echo pwned' > '" + dir + "/planted' 2>/dev/null && echo 'WROTE " + dir +
              "'; mkdir '" + dir + "/planted.d' 2>/dev/null && echo 'WROTE dir in " + dir + "'; ";
  }
  const std::string completion = prefix_ + "/share/bash-completion/completions/sbx";
  const std::string schema = prefix_ + "/share/sbx/policy.schema.json";
  const FileState completion_before = state_of(completion);
  script += "echo 'touch /tmp/pwned' >> '" + completion + "' 2>/dev/null && echo 'WROTE " +
            completion + "'; ";
  script += "rm -f '" + schema + "' 2>/dev/null; [ -e '" + schema + "' ] || echo 'WROTE rm " +
            schema + "'; ";
  script += "echo planted > '" + ws_ + "/workspace-ok' && echo 'workspace writable'";
  const RunResult r = copied_sbx("bwrap", script);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("workspace writable"), std::string::npos) << describe(r);
  for (const std::string& dir : dirs) {
    EXPECT_FALSE(exists(dir + "/planted")) << dir;
    EXPECT_FALSE(exists(dir + "/planted.d")) << dir;
  }
  EXPECT_TRUE(state_of(completion).content == completion_before.content);
  EXPECT_TRUE(exists(schema));
}

// Another sbx install on the host (here: a copy in the workspace, reached through a symlink on
// PATH, as `ln -s /opt/sbx/bin/sbx ~/bin/sbx` would) is as read-only as the running one: the
// user's shell or a later run would start it.
TEST_F(InstallProtect, BwrapKeepsAnotherInstallFoundOnPathReadOnly) {
  const std::string other = ws_ + "/other";
  const RunResult copied = run({"/bin/cp", "-a", SBX_TEST_PREFIX, other}, base_env());
  ASSERT_EQ(copied.code, 0) << describe(copied);
  const std::string path_dir = ws_ + "/path-bin";
  fs::create_directories(path_dir);
  fs::create_symlink(other + "/bin/sbx", path_dir + "/sbx");
  std::vector<std::string> env = base_env();
  for (std::string& entry : env) {
    if (entry.rfind("PATH=", 0) == 0) entry = "PATH=" + path_dir + ":/usr/bin:/bin";
  }
  const std::string stage2 = other + "/libexec/sbx/sbx-stage2";
  const FileState before = state_of(stage2);
  std::string script;
  for (const std::string& target :
       {other + "/bin/sbx", stage2, other + "/share/bash-completion/completions/sbx"}) {
    script += "echo evil > '" + target + "' 2>/dev/null && echo 'WROTE " + target + "'; ";
    script += "rm -f '" + target + "' 2>/dev/null; [ -e '" + target + "' ] || echo 'WROTE rm " +
              target + "'; ";
  }
  script += "echo x > '" + plugin_dir_of(other) +
            "/sbx-backend-evil.so' 2>/dev/null && "
            "echo 'WROTE plugin'; ";
  script += "mv '" + other + "' '" + other + ".old' 2>/dev/null && echo 'WROTE mv prefix'; ";
  script += "echo planted > '" + ws_ + "/workspace-ok' && echo 'workspace writable'";
  // The installed sbx runs (outside the workspace): only the other install lies in it.
  const RunResult r = run({sbx_path(), "--backends", "bwrap", "exec", "--policy", policy_, "--cwd",
                           ws_, "--", "/bin/sh", "-c", script},
                          env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("workspace writable"), std::string::npos) << describe(r);
  EXPECT_TRUE(state_of(stage2).content == before.content);
  EXPECT_FALSE(exists(plugin_dir_of(other) + "/sbx-backend-evil.so"));
  // Under Landlock, which cannot carve it out, the same policy is refused with the reason.
  const std::string marker = ws_ + "/ran";
  const RunResult refused = run({sbx_path(), "--backends", "landlock", "exec", "--policy", policy_,
                                 "--cwd", ws_, "--", "/bin/touch", marker},
                                env);
  EXPECT_EQ(refused.code, 125) << describe(refused);
  EXPECT_NE(refused.err.find("sbx's install '" + other), std::string::npos) << describe(refused);
  EXPECT_FALSE(exists(marker));
}

TEST_F(InstallProtect, BwrapPlanBindsTheInstallReadOnly) {
  const RunResult r = run({prefix_ + "/bin/sbx", "--backends", "bwrap", "exec", "--dry-run",
                           "--policy", policy_, "--cwd", ws_, "--", "/bin/true"},
                          base_env());
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("\"--ro-bind\",\n    \"" + prefix_ + "\""), std::string::npos)
      << describe(r);
}

TEST_F(InstallProtect, ExplainMarksTheInstallReadOnlyAlways) {
  const RunResult r =
      run({prefix_ + "/bin/sbx", "explain", "--policy", policy_, "--cwd", ws_}, base_env());
  ASSERT_EQ(r.code, 0) << describe(r);
  for (const std::string& dir : {prefix_}) {
    const std::size_t at = r.out.find("  " + dir + " ");
    ASSERT_NE(at, std::string::npos) << dir << "\n" << describe(r);
    const std::size_t end = r.out.find('\n', at);
    EXPECT_NE(r.out.substr(at, end - at).find("sbx's install: read only (always)"),
              std::string::npos)
        << describe(r);
  }
}

// The same for an unprivileged user's own install (demo.sh's ~/.local/opt/sbx case): user
// 65534 owns the copied prefix and the workspace around it and runs that copy.
TEST_F(InstallProtect, UnprivilegedUsersOwnPrefixStaysReadOnly) {
  if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
  const std::vector<std::string> as_user = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                            "--clear-groups"};
  std::vector<std::string> probe_argv = as_user;
  probe_argv.insert(probe_argv.end(),
                    {"/usr/bin/bwrap", "--unshare-user", "--ro-bind", "/", "/", "/bin/true"});
  const RunResult probe = run(probe_argv, base_env());
  if (probe.code != 0)
    GTEST_SKIP() << "user 65534 cannot create user namespaces here: " << probe.err;
  ASSERT_EQ(::chmod(ws_.c_str(), 0755), 0);
  const RunResult owned = run({"/bin/chown", "-R", "65534:65534", ws_}, base_env());
  ASSERT_EQ(owned.code, 0) << describe(owned);
  const std::string policy = ws_ + "/policy.json";
  write_file(policy, read_file(policy_));
  ASSERT_EQ(::chmod(policy.c_str(), 0644), 0);
  std::string script;
  for (const std::string& dir :
       {prefix_ + "/share/bash-completion/completions", prefix_ + "/include/sbx",
        plugin_dir_of(prefix_), prefix_ + "/bin", prefix_}) {
    script += "echo x > '" + dir + "/planted' 2>/dev/null && echo 'WROTE " + dir + "'; ";
  }
  script += "echo planted > '" + ws_ + "/workspace-ok' && echo 'workspace writable'";
  std::vector<std::string> argv = as_user;
  argv.insert(argv.end(), {prefix_ + "/bin/sbx", "--backends", "bwrap", "exec", "--policy", policy,
                           "--cwd", ws_, "--", "/bin/sh", "-c", script});
  std::vector<std::string> env = base_env();
  for (std::string& entry : env) {
    if (entry.rfind("HOME=", 0) == 0) entry = "HOME=" + ws_;
  }
  const RunResult r = run(argv, env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("workspace writable"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists(prefix_ + "/planted"));
  EXPECT_FALSE(exists(prefix_ + "/share/bash-completion/completions/planted"));
}

TEST_F(InstallProtect, LandlockRefusesNamingTheInstall) {
  const std::string marker = ws_ + "/ran";  // writable: only a refusal keeps it absent
  const RunResult r = copied_sbx("landlock", "touch '" + marker + "'");
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("sbx's install '" + prefix_), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("install sbx outside the writable roots"), std::string::npos) << describe(r);
  EXPECT_FALSE(exists(marker)) << "the command ran although the policy was refused";
}

}  // namespace
