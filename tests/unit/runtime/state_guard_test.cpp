// The state guard of a run (core/src/run/state_guard.hpp, issue #32 B2): which directories a
// sandboxed command could chmod on the way to sbx's state directories (pure), and setting back
// a mode it widened there once the command has ended; a state directory found replaced below a
// widened one is moved aside, never used.
#include "run/state_guard.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

ResolvedPolicy with_rules(std::vector<PathRule> rules,
                          FilesystemKind kind = FilesystemKind::kRestricted) {
  ResolvedPolicy policy;
  policy.filesystem_kind = kind;
  policy.rules = std::move(rules);
  return policy;
}

mode_t guarded_mode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 07777;
}

// From each writable root holding a state directory down to it; nothing for a state directory
// no writable root holds, nothing above a writable root.
TEST(ChmodableStateAncestors, FromEachWritableRootDownToTheStateDirectory) {
  const ResolvedPolicy policy = with_rules({{"/", Access::kRead},
                                            {"/home/u", Access::kWrite},
                                            {"/home/u/.cache/sbx", Access::kRead},
                                            {"/work", Access::kWrite}});
  EXPECT_EQ(chmodable_state_ancestors(policy, {"/home/u/.cache/sbx/bwrap", "/home/u/.cache/sbx",
                                               "/run/user/1000/sbx-bwrap"}),
            (std::vector<std::string>{"/home/u", "/home/u/.cache", "/home/u/.cache/sbx",
                                      "/home/u/.cache/sbx/bwrap"}));
  EXPECT_TRUE(chmodable_state_ancestors(with_rules({{"/", Access::kRead}}), {"/home/u/.cache/sbx"})
                  .empty());
  // The filesystem not restricted: everything from "/".
  EXPECT_EQ(
      chmodable_state_ancestors(with_rules({}, FilesystemKind::kUnrestricted), {"/run/sbx-bwrap"}),
      (std::vector<std::string>{"/", "/run", "/run/sbx-bwrap"}));
}

// A widened mode (sticky and world-writable, or group-writable) is set back to the one noted,
// with a warning naming the directory, both modes and the reason; a mode that stays private
// (narrowed, or another private one) is left as it is: the next run repairs a narrowed one.
TEST(StateModeGuard, AWidenedModeIsSetBackAndANarrowedOneLeftAlone) {
  TempDir top(test::private_parent());
  const std::string home = top.path() + "/home";
  const std::string cache = home + "/.cache";
  const std::string state = cache + "/sbx";
  fs::create_directories(state);
  for (const std::string& dir : {home, cache, state}) ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  StateModeGuard guard({home, cache, state});
  ASSERT_EQ(::chmod(cache.c_str(), 01777), 0);  // what the sandboxed command did
  ASSERT_EQ(::chmod(home.c_str(), 0770), 0);
  ASSERT_EQ(::chmod(state.c_str(), 0500), 0);
  const std::vector<std::string> warnings = guard.finish();
  EXPECT_EQ(guarded_mode(cache), 0700u);
  EXPECT_EQ(guarded_mode(home), 0700u);
  EXPECT_EQ(guarded_mode(state), 0500u) << "a narrowed mode is the next run's to repair";
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("changed the mode of '" + home + "' from 0700 to 0770: '" + home +
                             "' is writable by its group without the sticky bit"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("changed the mode of '" + cache + "' from 0700 to 1777: '" + cache +
                             "' is writable by others (mode 1777)"),
            std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[1].find("sbx set it back to 0700"), std::string::npos) << warnings[1];
  ::chmod(state.c_str(), 0700);
}

// A mode that was already wide before the run is the user's (or an earlier state's): the guard
// leaves it, and nothing is set back when nothing changed.
TEST(StateModeGuard, AModeAlreadyWideOrUnchangedIsLeftAlone) {
  TempDir top(test::private_parent());
  const std::string cache = top.path() + "/.cache";
  ASSERT_EQ(::mkdir(cache.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(cache.c_str(), 0777), 0);
  StateModeGuard wide({cache});
  ASSERT_EQ(::chmod(cache.c_str(), 01777), 0);
  EXPECT_TRUE(wide.finish().empty());
  EXPECT_EQ(guarded_mode(cache), 01777u);
  ASSERT_EQ(::chmod(cache.c_str(), 0755), 0);
  StateModeGuard unchanged({cache});
  EXPECT_TRUE(unchanged.finish().empty());
  EXPECT_EQ(guarded_mode(cache), 0755u);
}

// While ~/.cache was world-writable another user could rename ~/.cache/sbx away and put one of
// this user's own directories in its place (one a sandboxed command filled): what is at the
// state directory's name afterwards is not the directory noted, so it is moved aside and never
// used; the next run makes a fresh one.
TEST(StateModeGuard, AStateDirectoryReplacedWhileAboveWasWideIsMovedAside) {
  TempDir top(test::private_parent());
  const std::string cache = top.path() + "/.cache";
  const std::string state = cache + "/sbx";
  const std::string bwrap = state + "/bwrap";
  fs::create_directories(bwrap);
  for (const std::string& dir : {cache, state, bwrap}) ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  StateModeGuard guard({cache, state, bwrap});
  ASSERT_EQ(::chmod(cache.c_str(), 0777), 0);
  fs::rename(state, cache + "/genuine");
  fs::create_directories(cache + "/sbx/bwrap");
  std::ofstream(cache + "/sbx/bwrap/probe.cache") << "forged";
  struct stat planted {};
  ASSERT_EQ(::stat(state.c_str(), &planted), 0);
  const std::vector<std::string> warnings = guard.finish();
  EXPECT_EQ(guarded_mode(cache), 0700u);
  EXPECT_FALSE(fs::exists(state)) << "the planted state directory stayed at its name";
  const std::string aside = cache + "/sbx.replaced-" + std::to_string(planted.st_ino);
  EXPECT_TRUE(fs::exists(aside + "/bwrap/probe.cache"));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find("'" + state + "' is not the directory sbx noted before the run"),
            std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[1].find("sbx moved it to '" + aside + "' and never uses it"),
            std::string::npos)
      << warnings[1];
}

// A symlinked ~/.cache (common: the cache on another disk) in a writable home: a command that
// points it at a directory it filled would have a later run trust that directory as sbx's state
// (its own, 0700). The noted link is put back and the replacement moved aside; an unchanged link
// is left alone.
TEST(StateModeGuard, ASymlinkOnTheWayRepointedDuringTheRunIsPutBack) {
  TempDir top(test::private_parent());
  const std::string real_cache = top.path() + "/disk-cache";
  const std::string forged = top.path() + "/forged";
  const std::string link = top.path() + "/.cache";
  fs::create_directories(real_cache + "/sbx");
  fs::create_directories(forged + "/sbx/bwrap");
  fs::create_symlink(real_cache, link);
  StateModeGuard guard({}, {top.path(), link, link + "/sbx"});
  fs::remove(link);
  fs::create_symlink(forged, link);
  struct stat swapped {};
  ASSERT_EQ(::lstat(link.c_str(), &swapped), 0);
  const std::vector<std::string> warnings = guard.finish();
  EXPECT_EQ(fs::read_symlink(link), real_cache);
  const std::string aside = link + ".replaced-" + std::to_string(swapped.st_ino);
  EXPECT_EQ(fs::read_symlink(aside), forged) << "the replacement is kept aside, not deleted";
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("the symlink '" + link + "' (to '" + real_cache + "')"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("sbx put it back and moved what was there to '" + aside + "'"),
            std::string::npos)
      << warnings[0];

  // Replaced by a directory, or removed: put back all the same.
  StateModeGuard again({}, {link});
  fs::remove(link);
  fs::create_directories(link + "/sbx/bwrap");
  EXPECT_EQ(again.finish().size(), 1u);
  EXPECT_EQ(fs::read_symlink(link), real_cache);
  StateModeGuard removed({}, {link});
  fs::remove(link);
  EXPECT_EQ(removed.finish().size(), 1u);
  EXPECT_EQ(fs::read_symlink(link), real_cache);

  // Left as it was: nothing to say.
  StateModeGuard unchanged({}, {link});
  EXPECT_TRUE(unchanged.finish().empty());
  EXPECT_EQ(fs::read_symlink(link), real_cache);
}

}  // namespace
}  // namespace sbx
