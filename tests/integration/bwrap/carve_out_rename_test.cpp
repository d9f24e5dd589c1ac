// Carve-outs deeper than one level below a writable root: renaming (or removing) an ancestor in
// one run must not move the denied or read-only path out from under the next run's mask. As
// root and as an unprivileged user (sbx_test/identity.hpp), who owns the workspace and
// everything in it, so that only the sandbox stops the renames and writes.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class BwrapCarveOutRename : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_IDENTITY(GetParam(), "bwrap");
    ASSERT_FALSE(ws_.path().empty());
    ASSERT_FALSE(pol_.path().empty());
  }
  // `script` through `sbx --backends bwrap exec` as the identity, after giving it the test's
  // directories.
  RunResult sh(const std::string& script, const std::vector<std::string>& policy) {
    give_to(GetParam(), ws_.path());
    give_to(GetParam(), pol_.path());
    return exec_as(GetParam(), "bwrap", policy, ws_.path(), {"/bin/sh", "-c", script},
                   env_for(GetParam()));
  }
  TempDir ws_{"/var/tmp"};  // the workspace (writable root)
  TempDir pol_;             // policy files, outside the workspace
};

TEST_P(BwrapCarveOutRename, DeniedPathTwoLevelsDownCannotBeMovedAway) {
  fs::create_directories(ws_ / "config/secrets");
  write_file(ws_ / "config/secrets/key", "TOPSECRET-KEY\n");
  write_file(ws_ / "config/app.toml", "ok\n");
  const std::vector<std::string> policy = {"--preset", "workspace-write", "--deny",
                                           ws_ / "config/secrets"};
  const RunResult first =
      sh("mv config cfg2; echo mv-parent=$?; mv config/secrets s2; echo mv-self=$?; "
         "rm -rf config 2>/dev/null; echo rm=$?",
         policy);
  EXPECT_EQ(first.code, 0) << describe(first);
  EXPECT_NE(first.out.find("mv-parent=1"), std::string::npos) << describe(first);
  EXPECT_NE(first.out.find("mv-self=1"), std::string::npos) << describe(first);
  EXPECT_NE(first.out.find("rm=1"), std::string::npos) << describe(first);
  EXPECT_FALSE(exists(ws_ / "cfg2"));
  // mv falls back to copying across mounts: at most the empty mask was copied.
  EXPECT_FALSE(exists(ws_ / "s2/key"));
  EXPECT_TRUE(exists(ws_ / "config/secrets"));
  EXPECT_EQ(read_file(ws_ / "config/secrets/key"), "TOPSECRET-KEY\n");

  const RunResult second =
      sh("cat cfg2/secrets/key s2/key config/secrets/key 2>/dev/null; true", policy);
  EXPECT_EQ(second.code, 0) << describe(second);
  EXPECT_EQ(second.out.find("TOPSECRET"), std::string::npos) << describe(second);
}

TEST_P(BwrapCarveOutRename, ReadOnlyPathTwoLevelsDownCannotBeMovedAway) {
  fs::create_directories(ws_ / "vendor/lib");
  write_file(ws_ / "vendor/lib/pinned.txt", "original\n");
  write_file(pol_ / "p.json", R"({"version": 1,
    "filesystem": {"kind": "restricted",
      "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},
                  {"path": ")" + ws_.path() +
                                  R"(/vendor/lib", "access": "read"}]},
    "network": {"mode": "restricted"}})");
  const std::vector<std::string> policy = {"--policy", pol_ / "p.json"};
  const RunResult first =
      sh("mv vendor v2; echo mv=$?; echo x >> vendor/lib/pinned.txt; "
         "echo write=$?; echo new > vendor/new.txt; echo sibling=$?",
         policy);
  EXPECT_EQ(first.code, 0) << describe(first);
  EXPECT_NE(first.out.find("mv=1"), std::string::npos) << describe(first);
  EXPECT_EQ(first.out.find("write=0"), std::string::npos) << describe(first);
  // The pinned ancestor keeps its access: writing next to the carve-out still works.
  EXPECT_NE(first.out.find("sibling=0"), std::string::npos) << describe(first);
  EXPECT_FALSE(exists(ws_ / "v2"));
  EXPECT_EQ(read_file(ws_ / "vendor/lib/pinned.txt"), "original\n");

  const RunResult second =
      sh("echo x >> v2/lib/pinned.txt 2>/dev/null; echo x >> vendor/lib/pinned.txt", policy);
  EXPECT_EQ(read_file(ws_ / "vendor/lib/pinned.txt"), "original\n") << describe(second);
}

INSTANTIATE_TEST_SUITE_P(Identities, BwrapCarveOutRename, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
