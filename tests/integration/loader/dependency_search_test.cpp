// dependency_search_problem (core/src/plugins/elf_dynamic.hpp) against real directory trees:
// which DT_RUNPATH/DT_RPATH entries and DT_NEEDED names the loader accepts for a plugin in a
// trusted directory, and the reason it gives for each one it refuses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "plugins/elf_dynamic.hpp"
#include "test_tree.hpp"

namespace sbx::plugins {
namespace {

using testing::TestTree;

const Owners kOwners{::geteuid()};

DynamicSearchInfo runpath(const std::string& list) {
  DynamicSearchInfo info;
  info.runpath = {list};
  info.needed = {"libdep.so.1"};
  return info;
}

void expect_refused(const DynamicSearchInfo& info, const std::string& plugin_dir,
                    const std::vector<std::string>& parts) {
  std::optional<std::string> problem = dependency_search_problem(info, plugin_dir, kOwners);
  ASSERT_TRUE(problem) << "accepted; expected: " << parts.front();
  for (const std::string& part : parts)
    EXPECT_NE(problem->find(part), std::string::npos) << *problem << "\nmissing: " << part;
}

void expect_accepted(const DynamicSearchInfo& info, const std::string& plugin_dir) {
  std::optional<std::string> problem = dependency_search_problem(info, plugin_dir, kOwners);
  EXPECT_FALSE(problem) << *problem;
}

class DependencySearch : public ::testing::Test {
 protected:
  TestTree tree{"dependency-search"};
  std::string plugins = tree.dir("plugins").string();
};

TEST_F(DependencySearch, OriginAndTrustedAbsoluteDirectoriesPass) {
  const std::string lib = tree.dir("lib").string();
  expect_accepted(runpath("$ORIGIN"), plugins);
  // $ORIGIN/sub is missing, but only the plugin directory's owner could create it.
  expect_accepted(runpath("${ORIGIN}/sub:" + lib), plugins);
  tree.dir("plugins/sub");
  expect_accepted(runpath("$ORIGIN/sub:" + lib + ":/"), plugins);
  expect_accepted(DynamicSearchInfo{}, plugins);
}

TEST_F(DependencySearch, UntrustedDirectoriesAreRefusedWithTheReasonAndTheFix) {
  const std::string open = tree.dir("open", 0777).string();
  const std::string grouped = tree.dir("grouped", 0775).string();
  expect_refused(
      runpath("$ORIGIN:" + open), plugins,
      {"RUNPATH entry '" + open + "' (" + open + "): " + open +
           " is writable by group and others (mode 0777)",
       "ld.so searches it for the plugin's libraries (libdep.so.1)",
       "rebuild the plugin without RUNPATH/RPATH, or install it with `cmake --install`"});
  DynamicSearchInfo rpath;
  rpath.rpath = {grouped + "/lib"};
  expect_refused(
      rpath, plugins,
      {"RPATH entry '" + grouped + "/lib'", grouped + " is writable by group (mode 0775)"});
  // Missing below a sticky world-writable directory (passed on the way, like /tmp): anyone
  // could create it there.
  const std::string sticky = tree.dir("sticky", 01777).string();
  expect_refused(runpath(sticky + "/later"), plugins,
                 {sticky + "/later does not exist and could be created by others: " + sticky +
                  " is writable by group and others (mode 1777)"});
  // The plugin directory itself made writable: $ORIGIN is refused with it.
  tree.dir("plugins", 0777);
  expect_refused(runpath("$ORIGIN"), plugins,
                 {"RUNPATH entry '$ORIGIN' (" + plugins + "): ", "mode 0777"});
}

TEST_F(DependencySearch, AMissingDirectoryNobodyElseCanCreatePasses) {
  expect_accepted(runpath(tree.base().string() + "/not/there"), plugins);
}

TEST_F(DependencySearch, SymlinkedComponentsAreRefused) {
  const std::string lib = tree.dir("lib").string();
  std::filesystem::create_directory_symlink(lib, tree.base() / "alias");
  expect_refused(runpath(tree.base().string() + "/alias"), plugins,
                 {"is a symlink", "symlinked components are never followed"});
}

TEST_F(DependencySearch, EntriesThatCannotBeCheckedAreRefused) {
  expect_refused(runpath(""), plugins, {"RUNPATH entry '' is empty", "current directory"});
  expect_refused(runpath("/usr/lib::/lib"), plugins, {"RUNPATH entry '' is empty"});
  expect_refused(runpath("lib"), plugins, {"RUNPATH entry 'lib' is relative"});
  expect_refused(runpath("/opt/$LIB"), plugins, {"uses the $LIB token"});
  expect_refused(runpath("$ORIGIN/${LIB}"), plugins, {"uses the $LIB token"});
  expect_refused(runpath("/opt/$PLATFORM/lib"), plugins, {"uses the $PLATFORM token"});
  expect_refused(runpath("/opt/$HOME"), plugins, {"has a '$' other than a leading $ORIGIN"});
  expect_refused(runpath("/usr/$ORIGIN"), plugins, {"has a '$' other than a leading $ORIGIN"});
  expect_refused(runpath("$ORIGINAL"), plugins, {"has a '$' other than a leading $ORIGIN"});
  expect_refused(runpath("$ORIGIN/../lib"), plugins, {"has a '..' component"});
  expect_refused(runpath("/usr/./lib"), plugins, {"has a '.' component"});
}

TEST_F(DependencySearch, NeededNamesWithASlashAreChecked) {
  const std::string lib = tree.dir("lib").string();
  const std::string open = tree.dir("open", 0777).string();
  DynamicSearchInfo info;
  info.needed = {"libc.so.6", lib + "/libdep.so"};
  expect_accepted(info, plugins);
  info.needed = {"sub/libdep.so"};
  expect_refused(info, plugins, {"DT_NEEDED 'sub/libdep.so' is relative"});
  info.needed = {open + "/libdep.so"};
  expect_refused(info, plugins, {"DT_NEEDED '" + open + "/libdep.so' ", "mode 0777"});
}

}  // namespace
}  // namespace sbx::plugins
