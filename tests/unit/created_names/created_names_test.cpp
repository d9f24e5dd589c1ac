// The walk behind `exec --json` "protected_names_created", against real temporary trees: what
// counts as created during the run, what is never followed, and the bounds.
#include "sbx/core/created_names.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

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

}  // namespace
}  // namespace sbx
