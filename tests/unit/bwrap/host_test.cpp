// The host-facing pieces of the bwrap backend: the deny-glob matcher and expansion, the
// mount-point registry, and the trusted-bwrap lookup.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sbx/bwrap/host.hpp"

namespace {

namespace fs = std::filesystem;
using namespace sbx::bwrap;

struct Scratch {
  Scratch() {
    std::string tmpl = fs::temp_directory_path().string() + "/sbx-bwrap-unit-XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~Scratch() { fs::remove_all(path); }
  std::string path;
};

TEST(BwrapGlob, MatchesGitignoreStylePatterns) {
  EXPECT_TRUE(glob_matches("/w/**/*.pem", "/w/a.pem"));
  EXPECT_TRUE(glob_matches("/w/**/*.pem", "/w/x/y/a.pem"));
  EXPECT_FALSE(glob_matches("/w/**/*.pem", "/w/a.pem.bak"));
  EXPECT_FALSE(glob_matches("/w/*.pem", "/w/x/a.pem"));  // '*' stays within a component
  EXPECT_TRUE(glob_matches("/w/?.key", "/w/a.key"));
  EXPECT_FALSE(glob_matches("/w/?.key", "/w/ab.key"));
  EXPECT_TRUE(glob_matches("/w/[a-c]x", "/w/bx"));
  EXPECT_FALSE(glob_matches("/w/[!a-c]x", "/w/bx"));
  EXPECT_TRUE(glob_matches("/w/{.env,secrets}/**", "/w/secrets/k"));
  EXPECT_TRUE(glob_matches("/w/{.env,secrets}", "/w/.env"));
  EXPECT_FALSE(glob_matches("/w/{.env,secrets}", "/w/other"));
}

TEST(BwrapGlob, ExpandsBraces) {
  EXPECT_EQ(expand_braces("/a/{b,c}/{d,e}"),
            (std::vector<std::string>{"/a/b/d", "/a/b/e", "/a/c/d", "/a/c/e"}));
  EXPECT_EQ(expand_braces("/a/{b"), (std::vector<std::string>{"/a/{b"}));
}

TEST(BwrapGlob, ExpandsAgainstTheFilesystemAndFailsClosed) {
  Scratch s;
  fs::create_directories(s.path + "/k/deep");
  std::ofstream(s.path + "/a.pem") << "x";
  std::ofstream(s.path + "/k/deep/b.pem") << "x";
  std::ofstream(s.path + "/c.txt") << "x";
  auto matches = expand_deny_globs({s.path + "/**/*.pem"});
  ASSERT_TRUE(matches.ok()) << matches.error();
  EXPECT_EQ(*matches, (std::vector<std::string>{s.path + "/a.pem", s.path + "/k/deep/b.pem"}));
  auto root = expand_deny_globs({"/**/*.pem"});
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.error().find("no literal directory prefix"), std::string::npos);
  auto many = expand_deny_globs({s.path + "/**"}, 2);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().find("more than 2"), std::string::npos);
}

TEST(BwrapMountRegistry, RemovesTheMountPointItPlannedOnceLastOut) {
  Scratch state, ws;
  ::chmod(state.path.c_str(), 0700);
  const std::string codex = ws.path + "/.codex";
  MountRegistry first;
  ASSERT_TRUE(first.acquire(state.path, {codex}, {}).ok());
  fs::create_directory(codex);  // what bwrap does on the host
  MountRegistry second;         // a concurrent run that found .codex existing
  ASSERT_TRUE(second.acquire(state.path, {}, {codex}).ok());
  EXPECT_TRUE(first.release_and_cleanup().empty()) << "removed while another run holds it";
  EXPECT_TRUE(fs::exists(codex));
  EXPECT_EQ(second.release_and_cleanup(), std::vector<std::string>{codex});
  EXPECT_FALSE(fs::exists(codex));
}

TEST(BwrapMountRegistry, NeverRemovesContentOrAPersonsDirectory) {
  Scratch state, ws;
  const std::string planned = ws.path + "/.agents";
  MountRegistry run;
  ASSERT_TRUE(run.acquire(state.path, {planned}, {}).ok());
  fs::create_directory(planned);
  std::ofstream(planned + "/real") << "data";
  EXPECT_TRUE(run.release_and_cleanup().empty());
  EXPECT_TRUE(fs::exists(planned + "/real"));

  const std::string mine = ws.path + "/.git";  // existed before: no marker, never removed
  fs::create_directory(mine);
  MountRegistry other;
  ASSERT_TRUE(other.acquire(state.path, {}, {mine}).ok());
  EXPECT_TRUE(other.release_and_cleanup().empty());
  EXPECT_TRUE(fs::exists(mine));
}

TEST(BwrapLookup, TakesBwrapOnlyFromFixedSystemPaths) {
  EXPECT_EQ(bwrap_candidates(), (std::vector<std::string>{"/usr/bin/bwrap", "/bin/bwrap"}));
  auto found = find_trusted_bwrap({});
  if (!found.ok()) GTEST_SKIP() << "bubblewrap is not installed: " << found.error();
  EXPECT_EQ(found->rfind("/usr/bin/", 0), 0u) << *found;
  // A bwrap inside a writable root is refused, whatever its ownership.
  auto refused = find_trusted_bwrap({"/usr"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("inside a writable root"), std::string::npos) << refused.error();
}

TEST(BwrapStateDir, IsPrivateToTheUser) {
  auto dir = ensure_state_dir();
  ASSERT_TRUE(dir.ok()) << dir.error();
  struct stat st {};
  ASSERT_EQ(::lstat(dir->c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 077, 0u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(BwrapStateDir, RootKeepsItOutOfTmp) {
  // /tmp is writable in the workspace-write preset; a Landlock-sandboxed command of the same
  // user must not find bwrap's state there when a private place exists.
  struct stat run {};
  if (::geteuid() != 0 || ::lstat("/run", &run) != 0 || run.st_uid != 0 || (run.st_mode & 022))
    GTEST_SKIP() << "needs root and a root-owned /run not writable by others";
  auto dir = ensure_state_dir();
  ASSERT_TRUE(dir.ok()) << dir.error();
  EXPECT_EQ(dir->rfind("/run/", 0), 0u) << *dir;
}

// A private scratch directory standing in for the state directory.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "sbx-state-XXXXXX").string();
    EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(BwrapRegistry, PlantedMarkerSymlinkIsNotWrittenThrough) {
  // Someone who can write the state directory plants "<hash>.synthetic" as a symlink to a file
  // of their choosing: cleaning up must not create or write that file.
  ScratchDir state;
  ScratchDir work;
  const std::string mount_point = work.path() + "/.codex";
  const std::string victim = work.path() + "/victim";
  MountRegistry registry;
  ASSERT_TRUE(registry.acquire(state.path(), {mount_point}, {}).ok());
  std::string base;
  for (const auto& entry : fs::directory_iterator(state.path())) {
    const std::string name = entry.path().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0)
      base = name.substr(0, name.size() - 5);
  }
  ASSERT_FALSE(base.empty());
  fs::create_symlink(victim, base + ".synthetic");
  fs::create_directory(mount_point);  // as bwrap would have made it
  registry.release_and_cleanup();
  EXPECT_FALSE(fs::exists(fs::symlink_status(victim)))
      << "the marker was written through a symlink";
  EXPECT_TRUE(fs::is_directory(mount_point)) << "an unrecorded mount point was removed";
}

TEST(BwrapRegistry, LockThatIsNotARegularFileIsRefused) {
  ScratchDir state;
  ScratchDir work;
  const std::string mount_point = work.path() + "/.codex";
  {
    MountRegistry first;
    ASSERT_TRUE(first.acquire(state.path(), {mount_point}, {}).ok());
    first.release_and_cleanup();
  }
  std::string lock;
  for (const auto& entry : fs::directory_iterator(state.path())) lock = entry.path().string();
  ASSERT_FALSE(lock.empty());
  fs::remove(lock);
  ASSERT_EQ(::mkfifo(lock.c_str(), 0600), 0);
  MountRegistry registry;
  const sbx::Status status = registry.acquire(state.path(), {mount_point}, {});
  EXPECT_FALSE(status.ok());
}

TEST(BwrapProbeCache, PlantedTemporarySymlinkIsNotWrittenThrough) {
  ScratchDir state;
  ScratchDir work;
  const std::string victim = work.path() + "/precious";
  std::ofstream(victim) << "keep\n";
  const std::string cache = state.path() + "/probe.cache";
  fs::create_symlink(victim, cache + ".tmp");
  const sbx::ProbeReport report = run_probe("", cache);
  bool all_passed = true;
  for (const sbx::ProbeCheck& check : report.checks) {
    if (check.name == "user_namespaces" || check.name == "network_namespace")
      all_passed = all_passed && check.status == sbx::CheckStatus::kPass;
  }
  if (!all_passed) GTEST_SKIP() << "bwrap cannot run here, so nothing would be cached";
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep\n");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(cache))) << "the cache was not stored";
}

}  // namespace
