// The walk behind `exec --json` "protected_names_created", against real temporary trees: what
// counts as created during the run, what is never followed, and the bounds.
#include "sbx/core/created_names.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;

// A scratch tree with a helper to lay out files in it.
class Tree {
 public:
  std::string operator/(const std::string& rel) const { return dir_ / rel; }
  const std::string& root() const { return dir_.path(); }
  void file(const std::string& rel, const std::string& text = "x") const {
    fs::create_directories(fs::path(*this / rel).parent_path());
    std::ofstream(*this / rel) << text;
  }

 private:
  sbx::test::TempDir dir_;
};

CreatedNamesWatch watch_of(const std::vector<std::string>& roots) {
  return CreatedNamesWatch{roots, {".git", ".codex"}};
}

// A start time strictly after everything made so far (past the coarse clock's tick).
std::int64_t start_after_setup() {
  ::usleep(30 * 1000);
  return created_names_clock();
}

TEST(CreatedNames, ListsNestedNamesCreatedAfterTheStart) {
  Tree tree;
  tree.file("old/.git/config");
  const std::int64_t start = start_after_setup();
  tree.file("vendor/lib/.git/config");
  tree.file("a/b/c/.codex/settings");
  tree.file("worktree/.git", "gitdir: /elsewhere\n");  // a .git file counts too
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "a/b/c/.codex", tree / "vendor/lib/.git",
                                                   tree / "worktree/.git"}));
  EXPECT_FALSE(found.truncated);
}

TEST(CreatedNames, ChangeInsideAnExistingNameCounts) {
  Tree tree;
  tree.file("old/.git/hooks/pre-commit", "#!/bin/sh\n");
  tree.file("quiet/.git/config");
  const std::int64_t start = start_after_setup();
  std::ofstream(tree / "old/.git/hooks/pre-commit", std::ios::app) << "touch /tmp/x\n";
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "old/.git"});
}

TEST(CreatedNames, EmptyDirectoriesAndUnwatchedNamesAreLeftOut) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  fs::create_directories(tree / "mount-point/.codex");  // like bwrap's transient mount points
  tree.file("sub/.hg/hgrc");
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start);
  EXPECT_TRUE(found.paths.empty());
}

TEST(CreatedNames, SymlinksAreNeverFollowed) {
  Tree tree;
  Tree outside;
  const std::int64_t start = start_after_setup();
  outside.file("repo/.git/config");
  fs::create_directory_symlink(outside / "repo", tree / "link");
  fs::create_directory_symlink(outside / "repo/.git", tree / ".git");
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start);
  // The symlink named .git is itself a new entry with that name; nothing behind "link" is seen.
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / ".git"});
}

TEST(CreatedNames, NestedRootIsWalkedOnce) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  tree.file("inner/x/.git/config");
  const CreatedNames found = find_created_names(watch_of({tree.root(), tree / "inner"}), start);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "inner/x/.git"});
}

TEST(CreatedNames, EntryBoundTruncates) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  for (int i = 0; i < 50; ++i) tree.file("d" + std::to_string(i) + "/f");
  CreatedNamesLimits limits;
  limits.max_entries = 10;
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start, limits);
  EXPECT_TRUE(found.truncated);
}

TEST(CreatedNames, DepthBoundTruncates) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  tree.file("a/b/c/d/e/.git/config");
  CreatedNamesLimits limits;
  limits.max_depth = 2;
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start, limits);
  EXPECT_TRUE(found.truncated);
  EXPECT_TRUE(found.paths.empty());
}

TEST(CreatedNames, WatchUsesTheWritableRootsAndDefaultNames) {
  Policy policy;
  policy.filesystem.protected_names = {".vscode"};
  ResolvedPolicy resolved;
  resolved.rules = {{"/", Access::kRead}, {"/w", Access::kWrite}, {"/w/ro", Access::kRead}};
  const CreatedNamesWatch watch = created_names_watch(policy, resolved);
  EXPECT_EQ(watch.roots, std::vector<std::string>{"/w"});
  EXPECT_EQ(watch.names, (std::vector<std::string>{".git", ".codex", ".agents", ".vscode"}));
  resolved.filesystem_kind = FilesystemKind::kUnrestricted;
  EXPECT_TRUE(created_names_watch(policy, resolved).roots.empty());
}

TEST(CreatedNames, WarningNamesThePathAndTheRisk) {
  EXPECT_EQ(created_name_warning("/w/vendor/lib/.git"),
            "the command created or changed /w/vendor/lib/.git; a later git command there runs "
            "its hooks/config outside the sandbox");
}

// The walk stats only entries with a watched name and what is inside them, and learns what is a
// directory elsewhere from the directory entry's type (DT_UNKNOWN: a statx). Every test below
// runs the walk both ways, trusting d_type and as if every type were DT_UNKNOWN, and the two
// must agree.
CreatedNames find_created_names_both_ways(const CreatedNamesWatch& watch, std::int64_t start) {
  CreatedNamesLimits stat_everything;
  stat_everything.trust_d_type = false;
  const CreatedNames by_type = find_created_names(watch, start);
  const CreatedNames by_stat = find_created_names(watch, start, stat_everything);
  EXPECT_EQ(by_type.paths, by_stat.paths);
  EXPECT_EQ(by_type.truncated, by_stat.truncated);
  return by_type;
}

TEST(CreatedNamesWalk, DeepNewNameUnderUnchangedDirectoriesIsFound) {
  Tree tree;
  for (int i = 0; i < 20; ++i) tree.file("a/b/c/d/e/f" + std::to_string(i));
  tree.file("a/b/side/g");
  const std::int64_t start = start_after_setup();
  // Only e's own times change (a new entry); a, b, c, d are untouched and not watched.
  tree.file("a/b/c/d/e/.git/hooks/post-checkout", "#!/bin/sh\n");
  const CreatedNames found = find_created_names_both_ways(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "a/b/c/d/e/.git"});
  EXPECT_FALSE(found.truncated);
}

TEST(CreatedNamesWalk, FileChangedDeepInsideAnOldNameMarksTheName) {
  Tree tree;
  tree.file("p/q/.git/objects/ab/cdef", "old");
  tree.file("p/q/.git/objects/ab/other", "old");
  tree.file("p/q/.git/HEAD", "ref: refs/heads/main\n");
  const std::int64_t start = start_after_setup();
  // Rewritten in place: no directory's times change, only the file's (ctime).
  std::ofstream(tree / "p/q/.git/objects/ab/cdef", std::ios::trunc) << "new";
  const CreatedNames found = find_created_names_both_ways(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "p/q/.git"});
}

TEST(CreatedNamesWalk, ChangesOutsideWatchedNamesReportNothing) {
  Tree tree;
  tree.file("src/main.c", "int main;");
  tree.file("src/deep/er/still/lib.c", "x");
  tree.file("repo/.git/config");
  const std::int64_t start = start_after_setup();
  std::ofstream(tree / "src/main.c", std::ios::trunc) << "int main(void);";
  std::ofstream(tree / "src/deep/er/still/lib.c", std::ios::app) << "y";
  tree.file("src/deep/new-dir/new-file");
  tree.file("repo/README");  // next to the old .git, not inside it
  const CreatedNames found = find_created_names_both_ways(watch_of({tree.root()}), start);
  EXPECT_TRUE(found.paths.empty());
  EXPECT_FALSE(found.truncated);
}

TEST(CreatedNamesWalk, OldSymlinkToADirectoryGainingANameIsNotFollowed) {
  Tree tree;
  Tree outside;
  outside.file("target/keep");
  fs::create_directories(tree / "deep/er");
  fs::create_directory_symlink(outside / "target", tree / "deep/er/link");
  const std::int64_t start = start_after_setup();
  outside.file("target/.git/config");  // seen through tree/deep/er/link only by following it
  outside.file("target/sub/.codex/x");
  const CreatedNames found = find_created_names_both_ways(watch_of({tree.root()}), start);
  EXPECT_TRUE(found.paths.empty());
}

TEST(CreatedNamesWalk, SymlinkInsideAWatchedNameIsALeaf) {
  Tree tree;
  Tree outside;
  tree.file("r/.git/config");
  fs::create_directory_symlink(outside.root(), tree / "r/.git/escape");
  const std::int64_t start = start_after_setup();
  outside.file("anything/new");  // changes behind the symlink are not the .git's
  const CreatedNames found = find_created_names_both_ways(watch_of({tree.root()}), start);
  EXPECT_TRUE(found.paths.empty());
}

TEST(CreatedNamesWalk, OddBytesInNamesAreHandled) {
  Tree tree;
  const std::string odd = std::string("we\x01ird\xff name\n");
  tree.file(odd + "/.git/config");
  const std::int64_t start = start_after_setup();
  tree.file(odd + "/x/.codex/y");
  const CreatedNames found = find_created_names_both_ways(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / (odd + "/x/.codex")});
}

TEST(CreatedNamesWalk, ManyEntriesInOneDirectoryAreAllRead) {
  Tree tree;
  // More entries than one getdents64 buffer holds, with the new name listed late or early.
  for (int i = 0; i < 1500; ++i) tree.file("big/entry-with-a-longish-name-" + std::to_string(i));
  const std::int64_t start = start_after_setup();
  tree.file("big/zz/.git/config");
  tree.file("big/aa/.git/config");
  const CreatedNames found = find_created_names_both_ways(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "big/aa/.git", tree / "big/zz/.git"}));
}

// Mount points below a root: another filesystem is never entered, a bind mount of the same one
// is walked like any directory. Run in a child with its own mount namespace; the child reports
// the names it found on a pipe ("SKIP ..." when it cannot set up the mounts).
TEST(CreatedNamesWalk, OtherFilesystemsAreNotEnteredBindMountsOfTheSameAre) {
  Tree tree;
  fs::create_directories(tree / "tmpfs");
  fs::create_directories(tree / "bind");
  tree.file("src/keep");
  const std::int64_t start = start_after_setup();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    std::string out;
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", (tree / "tmpfs").c_str(), "tmpfs", 0, nullptr) != 0 ||
        ::mount((tree / "src").c_str(), (tree / "bind").c_str(), nullptr, MS_BIND, nullptr) != 0) {
      out = std::string("SKIP cannot set up mounts in a mount namespace: ") + std::strerror(errno);
    } else {
      tree.file("tmpfs/.git/config");  // on the tmpfs: another filesystem
      tree.file("src/x/.git/config");  // seen at src/x and, through the bind mount, bind/x
      for (const std::string& path : find_created_names_both_ways(watch_of({tree.root()}), start).paths)
        out += path + "\n";
    }
    [[maybe_unused]] const ssize_t written = ::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char chunk[512];
  for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;)
    got.append(chunk, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (got.rfind("SKIP", 0) == 0) GTEST_SKIP() << got;
  EXPECT_EQ(got, tree / "bind/x/.git" + "\n" + tree / "src/x/.git" + "\n");
}

// A tree deeper than the descriptors the process may still open: the walk cannot see the
// bottom, and says so (truncated) instead of reporting a complete empty list.
TEST(CreatedNamesWalk, RunningOutOfDescriptorsTruncates) {
  Tree tree;
  std::string deep = "x";
  for (int i = 0; i < 40; ++i) deep += "/x";
  fs::create_directories(tree / deep);
  const std::int64_t start = start_after_setup();
  tree.file(deep + "/.git/config");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit few{16, 16};  // the walk keeps one descriptor open per level
    if (::setrlimit(RLIMIT_NOFILE, &few) != 0) ::_exit(3);
    const CreatedNames found = find_created_names(watch_of({tree.root()}), start);
    ::_exit(found.truncated && found.paths.empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: not truncated, 3: setrlimit failed";
  // With descriptors to spare the same tree is walked to the bottom.
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / (deep + "/.git")});
  EXPECT_FALSE(found.truncated);
}

}  // namespace
}  // namespace sbx
