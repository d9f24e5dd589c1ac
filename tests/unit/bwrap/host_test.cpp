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

}  // namespace
