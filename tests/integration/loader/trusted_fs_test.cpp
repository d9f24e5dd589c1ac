// The fd-based trust walk (core/src/trusted_fs.*) on real directory trees, and the
// check-then-load window of descriptor loading: what was checked is what loads, whatever
// happens to the path. Loading by path (no usable /proc) is path_loading_test.cpp.
#include "plugins/trusted_fs.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "plugins/loader_internal.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "test_tree.hpp"

namespace sbx {
namespace {

using plugins::DirectoryWalk;
using plugins::Owners;
using testing::expect_contains;
using testing::kGood;
using testing::me;
using testing::TestTree;
namespace fs = std::filesystem;

TEST(TrustedFs, ModeStringLooksLikeChmod) {
  EXPECT_EQ(plugins::mode_string(0755), "0755");
  EXPECT_EQ(plugins::mode_string(S_IFDIR | 01777), "1777");
  EXPECT_EQ(plugins::mode_string(0), "0000");
}

TEST(TrustedFs, WalkOpensTheDirectoryItChecked) {
  TestTree tree("walk-ok");
  const fs::path dir = tree.dir("a/b/c");
  DirectoryWalk walk = plugins::open_trusted_directory(dir, tree.base(), me());
  ASSERT_TRUE(walk.fd.valid()) << walk.error;
  struct stat by_fd {};
  struct stat by_path {};
  ASSERT_EQ(::fstat(walk.fd.get(), &by_fd), 0);
  ASSERT_EQ(::stat(dir.c_str(), &by_path), 0);
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
  EXPECT_EQ(by_fd.st_dev, by_path.st_dev);
  // Redundant slashes are harmless; the trust root may be the directory itself.
  EXPECT_TRUE(plugins::open_trusted_directory(dir.string() + "//", tree.base(), me()).fd.valid());
  EXPECT_TRUE(plugins::open_trusted_directory(dir, dir, me()).fd.valid());
}

TEST(TrustedFs, TheTrustRootItselfIsChecked) {
  TestTree tree("walk-root");
  const fs::path dir = tree.dir("plugins");
  testing::chmod_or_throw(tree.base(), 0775);
  DirectoryWalk walk = plugins::open_trusted_directory(dir, tree.base(), me());
  EXPECT_FALSE(walk.fd.valid());
  expect_contains(walk.error, tree.base().string() + " is writable by group (mode 0775)");
}

TEST(TrustedFs, WalkNamesTheFirstBadComponentOnly) {
  TestTree tree("walk-first");
  tree.dir("a", 0777);
  const fs::path dir = tree.dir("a/b", 0775);
  DirectoryWalk walk = plugins::open_trusted_directory(dir, tree.base(), me());
  EXPECT_FALSE(walk.fd.valid());
  EXPECT_FALSE(walk.missing);
  EXPECT_EQ(walk.error, (tree.base() / "a").string() +
                            " is writable by group and others (mode 0777); expected no write "
                            "permission for group or others (chmod go-w)");
}

TEST(TrustedFs, ASharedStickyDirectoryIsRefusedWithoutTheChmodAdvice) {
  // Issue #39: "chmod go-w /tmp" would break every other user of /tmp; the fix is to put the
  // plugins elsewhere.
  TestTree tree("walk-sticky");
  tree.dir("shared", 01777);
  const fs::path dir = tree.dir("shared/plugins", 0755);
  DirectoryWalk walk = plugins::open_trusted_directory(dir, tree.base(), me());
  EXPECT_FALSE(walk.fd.valid());
  EXPECT_EQ(walk.error, (tree.base() / "shared").string() +
                            " is writable by group and others (mode 1777): a shared directory "
                            "(sticky, like /tmp) where anyone can add entries never holds, nor "
                            "lies above, trusted plugins; install them below a directory only "
                            "root or the owner of libsbx can write (the install's "
                            "<libdir>/sbx/backends, or a directory in your home for an sbx you "
                            "installed yourself)");
  EXPECT_EQ(walk.error.find("chmod"), std::string::npos);
}

TEST(TrustedFs, SymlinkedComponentIsNamedNotFollowed) {
  TestTree tree("walk-link");
  tree.dir("real/plugins");
  fs::create_directory_symlink(tree.base() / "real", tree.base() / "link");
  DirectoryWalk walk =
      plugins::open_trusted_directory(tree.base() / "link" / "plugins", tree.base(), me());
  EXPECT_FALSE(walk.fd.valid());
  expect_contains(walk.error, (tree.base() / "link").string() + " is a symlink (to " +
                                  (tree.base() / "real").string() + ")");
  // A symlink as the last component is refused just the same.
  fs::create_directory_symlink(tree.base() / "real" / "plugins", tree.base() / "last");
  walk = plugins::open_trusted_directory(tree.base() / "last", tree.base(), me());
  EXPECT_FALSE(walk.fd.valid());
  expect_contains(walk.error, (tree.base() / "last").string() + " is a symlink");
}

TEST(TrustedFs, BadPathsAreRefusedLexically) {
  TestTree tree("walk-lexical");
  tree.dir("a");
  const std::string base = tree.base().string();
  EXPECT_EQ(plugins::open_trusted_directory(base + "/a/..", base, me()).error,
            "'" + base + "/a/..' contains a '..' component");
  EXPECT_EQ(plugins::open_trusted_directory("relative/dir", base, me()).error,
            "'relative/dir' is not an absolute path");
  EXPECT_EQ(plugins::open_trusted_directory("/usr", base, me()).error,
            "/usr is outside the trust root " + base);
  // A sibling that shares a string prefix is not inside the root.
  EXPECT_EQ(plugins::open_trusted_directory(base + "x", base, me()).error,
            base + "x is outside the trust root " + base);
}

TEST(TrustedFs, MissingDirectoryIsReportedAsMissing) {
  TestTree tree("walk-missing");
  DirectoryWalk walk =
      plugins::open_trusted_directory(tree.base() / "no" / "such", tree.base(), me());
  EXPECT_FALSE(walk.fd.valid());
  EXPECT_TRUE(walk.missing);
  EXPECT_EQ(walk.error, (tree.base() / "no").string() + " does not exist");
}

TEST(TrustedFs, TrustedOwnerIsAcceptedOthersAreNot) {
  if (!testing::running_as_root()) GTEST_SKIP() << "chown to another uid needs root";
  TestTree tree("walk-owner");
  const fs::path dir = tree.dir("vendor");
  ASSERT_EQ(::chown(dir.c_str(), 4242, static_cast<gid_t>(-1)), 0) << std::strerror(errno);
  EXPECT_TRUE(plugins::open_trusted_directory(dir, tree.base(), Owners{4242}).fd.valid());
  DirectoryWalk walk = plugins::open_trusted_directory(dir, tree.base(), Owners{});
  EXPECT_FALSE(walk.fd.valid());
  EXPECT_EQ(walk.error, dir.string() + " is owned by uid 4242; expected root (uid 0)");
  walk = plugins::open_trusted_directory(dir, tree.base(), Owners{1000});
  expect_contains(walk.error, "expected root (uid 0) or uid 1000 (the owner of libsbx)");
}

TEST(TrustedFs, FileChecksNameWhatIsWrong) {
  TestTree tree("file-checks");
  const fs::path dir = tree.dir("d");
  TestTree::copy_fixture(kGood, dir, "good.so");
  TestTree::copy_fixture(kGood, dir, "group.so", 0664);
  { std::ofstream(dir / "empty.so").flush(); }
  testing::chmod_or_throw(dir / "empty.so", 0644);
  tree.dir("d/subdir.so");
  ASSERT_EQ(::mkfifo((dir / "fifo.so").c_str(), 0644), 0);
  fs::create_symlink("good.so", dir / "link.so");
  DirectoryWalk walk = plugins::open_trusted_directory(dir, tree.base(), me());
  ASSERT_TRUE(walk.fd.valid()) << walk.error;
  auto check = [&](const std::string& name) {
    return plugins::open_trusted_file(walk.fd.get(), dir.string(), name, me());
  };
  Result<plugins::TrustedFile> good = check("good.so");
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good->path, (dir / "good.so").string());
  EXPECT_EQ(check("group.so").error(),
            "the file is writable by group (mode 0664); expected no write permission for group "
            "or others (chmod go-w)");
  EXPECT_EQ(check("empty.so").error(), "the file is empty (0 bytes); expected a shared object");
  EXPECT_EQ(check("subdir.so").error(), "the file is a directory; expected a regular file");
  EXPECT_EQ(check("fifo.so").error(), "the file is a FIFO; expected a regular file");
  EXPECT_EQ(check("link.so").error(),
            "the file is a symlink (to good.so); expected a regular file: symlinks are never "
            "followed");
  expect_contains(check("absent.so").error(), "cannot open the file: No such file or directory");
}

TEST(TrustedFs, OpenTrustedPathPrefixesThePath) {
  TestTree tree("path-checks");
  const fs::path dir = tree.dir("libexec", 0775);
  const fs::path helper = TestTree::copy_fixture(kGood, dir, "helper", 0755);
  Result<plugins::TrustedFile> file = plugins::open_trusted_path(helper, tree.base(), me());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().rfind(helper.string() + ": " + dir.string() + " is writable by group", 0),
            0u)
      << file.error();
  testing::chmod_or_throw(dir, 0755);
  file = plugins::open_trusted_path(helper, tree.base(), me());
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(plugins::open_trusted_path("relative", tree.base(), me()).error(),
            "'relative' is not an absolute file path");
}

TEST(TrustedFs, ListDirectoryIsSortedAndComplete) {
  TestTree tree("list");
  const fs::path dir = tree.dir("d");
  for (const char* name : {"b", "a", "sbx-backend-z.so", "C"}) {
    std::ofstream(dir / name) << "x";
  }
  DirectoryWalk walk = plugins::open_trusted_directory(dir, tree.base(), me());
  ASSERT_TRUE(walk.fd.valid());
  Result<std::vector<std::string>> names = plugins::list_directory(walk.fd.get());
  ASSERT_TRUE(names.ok()) << names.error();
  EXPECT_EQ(*names, (std::vector<std::string>{"C", "a", "b", "sbx-backend-z.so"}));
}

// Skips a test of descriptor loading where /proc/self/fd cannot name a descriptor (the suite's
// run with /proc hidden); path_loading_test.cpp covers that mode.
#define SKIP_WITHOUT_DESCRIPTOR_NAMING()                                                   \
  do {                                                                                     \
    const plugins::DescriptorNaming naming = plugins::probe_descriptor_naming();           \
    if (!naming.usable) GTEST_SKIP() << "needs a usable /proc/self/fd: " << naming.reason; \
  } while (false)

TEST(TrustedFs, ProcFdPathLeadsToTheOpenFile) {
  SKIP_WITHOUT_DESCRIPTOR_NAMING();
  TestTree tree("proc");
  const fs::path file = TestTree::copy_fixture(kGood, tree.dir("d"));
  plugins::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  struct stat st {};
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  Result<std::string> path = plugins::proc_fd_path(fd.get(), st);
  ASSERT_TRUE(path.ok()) << path.error();
  EXPECT_EQ(*path, "/proc/self/fd/" + std::to_string(fd.get()));
  struct stat other = st;
  other.st_ino += 1;
  EXPECT_FALSE(plugins::proc_fd_path(fd.get(), other).ok());
}

TEST(LoaderDetail, CandidateNames) {
  EXPECT_TRUE(plugins::is_candidate_name("sbx-backend-bwrap.so"));
  EXPECT_TRUE(plugins::is_candidate_name("sbx-backend-.so"));
  EXPECT_FALSE(plugins::is_candidate_name("sbx-backend-bwrap.so.1"));
  EXPECT_FALSE(plugins::is_candidate_name("libsbx-backend-bwrap.so"));
  EXPECT_FALSE(plugins::is_candidate_name("sbx-backend.so"));
  EXPECT_FALSE(plugins::is_candidate_name("sbx-backend-x.so~"));
}

// The attacker's move: after the loader checked (and opened) a plugin, atomically rename a
// different file over the checked path. The load goes through the open descriptor, so the
// checked inode is what runs; only a new scan sees the new file (and checks it afresh).
TEST(CheckThenLoad, ASwapAfterTheCheckDoesNotChangeWhatLoads) {
  SKIP_WITHOUT_DESCRIPTOR_NAMING();
  TestTree tree("swap");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins, "sbx-backend-target.so");
  TestTree::copy_fixture("sbx-backend-fixture-create-null.so", plugins, "replacement.tmp");
  DirectoryWalk walk = plugins::open_trusted_directory(plugins, tree.base(), me());
  ASSERT_TRUE(walk.fd.valid()) << walk.error;
  Result<plugins::TrustedFile> checked =
      plugins::open_trusted_file(walk.fd.get(), plugins, "sbx-backend-target.so", me());
  ASSERT_TRUE(checked.ok()) << checked.error();

  fs::rename(plugins / "replacement.tmp", plugins / "sbx-backend-target.so");

  auto outcome = plugins::load_descriptor(std::move(checked).value());
  const sbx_plugin_v2* const* descriptor = std::get_if<const sbx_plugin_v2*>(&outcome);
  ASSERT_NE(descriptor, nullptr) << std::get<RejectedPlugin>(outcome).message;
  EXPECT_STREQ((*descriptor)->name, "fixture-good");

  const PluginRegistry rescan = PluginRegistry::load(tree.options({plugins}));
  EXPECT_TRUE(rescan.plugins().empty());
  ASSERT_EQ(rescan.rejected().size(), 1u);
  EXPECT_EQ(rescan.rejected()[0].stage, LoadStage::kCreate);
}

}  // namespace
}  // namespace sbx
