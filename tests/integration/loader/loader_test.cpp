// PluginRegistry::load against real plugin files: every fixture is
// rejected at its own stage with its own message, while the good plugin next to it still loads
// and its create() works -- all bad ones together in one scan, and each one on its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "plugins/elf_dynamic.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/runtime.hpp"
#include "test_tree.hpp"

namespace sbx {
namespace {

using testing::kGood;
using testing::TestTree;
namespace fs = std::filesystem;

// What one case set up: extra directories to scan and the path the loader must reject.
struct Arranged {
  std::vector<fs::path> extra_dirs;
  fs::path rejected;
};

struct FixtureCase {
  std::string label;
  LoadStage stage;
  bool needs_root;
  // Puts the bad candidate in place; `plugins` already holds the good plugin.
  std::function<Arranged(const TestTree&, const fs::path& plugins)> arrange;
  // Parts the message must contain (the path and stage prefix are checked for every case).
  std::function<std::vector<std::string>(const TestTree&, const Arranged&)> expected;
};

// gtest prints parameters of failing cases; the label is all a reader needs.
void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.label; }

std::function<Arranged(const TestTree&, const fs::path&)> copy_of(const std::string& fixture) {
  return [fixture](const TestTree&, const fs::path& plugins) {
    return Arranged{{}, TestTree::copy_fixture(fixture, plugins)};
  };
}

std::function<std::vector<std::string>(const TestTree&, const Arranged&)> parts(
    std::vector<std::string> expected) {
  return [expected](const TestTree&, const Arranged&) { return expected; };
}

std::vector<FixtureCase> descriptor_cases() {
  return {
      {"abi_major", LoadStage::kAbi, false, copy_of("sbx-backend-fixture-abi-major.so"),
       parts({"ABI major is " + std::to_string(SBX_ABI_MAJOR + 1),
              "expected " + std::to_string(SBX_ABI_MAJOR)})},
      {"abi_minor", LoadStage::kAbi, false, copy_of("sbx-backend-fixture-abi-minor.so"),
       parts({"ABI minor is " + std::to_string(SBX_ABI_MINOR + 1),
              "expected at most " + std::to_string(SBX_ABI_MINOR), "built for a newer sbx"})},
      {"abi_1_x", LoadStage::kAbi, false, copy_of("sbx-backend-fixture-abi-1-4.so"),
       parts({"plugin 'fixture-abi-1-4' was built for sbx plugin ABI 1.4",
              "exports sbx_plugin_entry_v1",
              "this sbx loads ABI 2.0 to 2." + std::to_string(SBX_ABI_MINOR) + " plugins only",
              "rebuild it against the sbx SDK 2." + std::to_string(SBX_ABI_MINOR)})},
      {"short_struct", LoadStage::kAbi, false, copy_of("sbx-backend-fixture-short-struct.so"),
       parts({"struct_size is " + std::to_string(offsetof(sbx_plugin_v2, create)),
              "expected at least " + std::to_string(SBX_PLUGIN_V2_MIN_SIZE), "short struct"})},
      {"reserved", LoadStage::kAbi, false, copy_of("sbx-backend-fixture-reserved.so"),
       parts({"reserved[1] is not NULL", "expected every reserved field NULL"})},
      {"fingerprint", LoadStage::kFingerprint, false, copy_of("sbx-backend-fixture-fingerprint.so"),
       parts({"toolchain fingerprint is 'sbx-abi1;libstdc++-cxx11abi0;ptr8'",
              std::string("expected '") + SBX_TOOLCHAIN_FINGERPRINT + "'"})},
      {"no_entry", LoadStage::kInspect, false, copy_of("sbx-backend-fixture-no-entry.so"),
       parts({"does not export sbx_plugin_entry_v2", "exported: sbx_plugin_entry"})},
      {"garbage", LoadStage::kInspect, false, copy_of("sbx-backend-garbage.so"),
       parts({"is not a shared object", "expected an ELF shared object"})},
      {"unresolved", LoadStage::kLoad, false, copy_of("sbx-backend-fixture-unresolved.so"),
       parts({": load: dlopen failed: undefined symbol: sbx_fixture_symbol_nobody_defines"})},
      {"entry_null", LoadStage::kEntry, false, copy_of("sbx-backend-fixture-entry-null.so"),
       parts({"sbx_plugin_entry_v2() returned NULL"})},
      {"bad_name", LoadStage::kName, false, copy_of("sbx-backend-fixture-bad-name.so"),
       parts({"name 'Fixture_Bad' is invalid", "[a-z0-9-]"})},
      {"duplicate_name", LoadStage::kName, false, copy_of("sbx-backend-fixture-same-name.so"),
       [](const TestTree&, const Arranged& a) {
         return std::vector<std::string>{"name 'fixture-good' is already taken by " +
                                         (a.rejected.parent_path() / kGood).string()};
       }},
      {"create_null", LoadStage::kCreate, false, copy_of("sbx-backend-fixture-create-null.so"),
       parts({"create() returned NULL"})},
      {"create_throws", LoadStage::kCreate, false, copy_of("sbx-backend-fixture-create-throws.so"),
       parts({"create() threw an exception: fixture create() failure"})},
      // Through the SDK: the exception is caught in the plugin (no C++ exception crosses the C
      // ABI) and its text reaches the rejection through the host's log.
      {"sdk_constructor_throws", LoadStage::kCreate, false,
       copy_of("sbx-backend-fixture-ctor-throws.so"),
       parts(
           {"create() returned NULL", "create() failed: the fixture's configuration is missing"})},
  };
}

// A fixture whose RUNPATH/RPATH names SBX_FIXTURE_WORLD_WRITABLE_LIBDIR, made world-writable.
std::function<Arranged(const TestTree&, const fs::path&)> with_world_writable_libdir(
    const std::string& fixture) {
  return [fixture](const TestTree&, const fs::path& plugins) {
    fs::create_directories(SBX_FIXTURE_WORLD_WRITABLE_LIBDIR);
    testing::chmod_or_throw(SBX_FIXTURE_WORLD_WRITABLE_LIBDIR, 0777);
    return Arranged{{}, TestTree::copy_fixture(fixture, plugins)};
  };
}

// Good plugins that would make ld.so look for their libraries somewhere untrusted (issue #39):
// refused before dlopen, naming the entry, why, and the fix.
std::vector<FixtureCase> search_path_cases() {
  const std::string world = SBX_FIXTURE_WORLD_WRITABLE_LIBDIR;
  const std::string fix =
      "install it with `cmake --install`, which strips the build tree's RUNPATH";
  return {
      {"runpath_world_writable", LoadStage::kInspect, false,
       with_world_writable_libdir("sbx-backend-fixture-runpath-world.so"),
       parts({"RUNPATH entry '" + world + "' (" + world + "): " + world +
                  " is writable by group and others (mode 0777)",
              "whoever can write there runs code inside sbx", fix})},
      {"rpath_world_writable", LoadStage::kInspect, false,
       with_world_writable_libdir("sbx-backend-fixture-rpath-world.so"),
       parts({"RPATH entry '" + world + "' (" + world + "): " + world +
                  " is writable by group and others (mode 0777)",
              fix})},
      {"runpath_relative", LoadStage::kInspect, false,
       copy_of("sbx-backend-fixture-runpath-relative.so"),
       parts({"RUNPATH entry 'fixture-libs' is relative, so ld.so resolves it against the "
              "current directory",
              fix})},
  };
}

std::vector<FixtureCase> trust_cases() {
  return {
      {"world_writable_file", LoadStage::kTrust, false,
       [](const TestTree&, const fs::path& plugins) {
         return Arranged{{}, TestTree::copy_fixture(kGood, plugins, "sbx-backend-world.so", 0666)};
       },
       parts({"the file is writable by group and others (mode 0666)", "chmod go-w"})},
      {"symlinked_file", LoadStage::kTrust, false,
       [](const TestTree& tree, const fs::path& plugins) {
         const fs::path real = TestTree::copy_fixture(kGood, tree.dir("elsewhere"));
         fs::create_symlink(real, plugins / "sbx-backend-linked.so");
         return Arranged{{}, plugins / "sbx-backend-linked.so"};
       },
       [](const TestTree& tree, const Arranged&) {
         return std::vector<std::string>{
             "the file is a symlink (to " + (tree.base() / "elsewhere" / kGood).string() + ")",
             "symlinks are never followed"};
       }},
      {"group_writable_dir", LoadStage::kDirectory, false,
       [](const TestTree& tree, const fs::path&) {
         tree.dir("shared", 0775);
         const fs::path dir = tree.dir("shared/plugins");
         return Arranged{{dir}, TestTree::copy_fixture(kGood, dir, "sbx-backend-grouped.so")};
       },
       [](const TestTree& tree, const Arranged&) {
         return std::vector<std::string>{(tree.base() / "shared").string() +
                                         " is writable by group (mode 0775)"};
       }},
      {"sticky_world_writable_dir", LoadStage::kDirectory, false,
       [](const TestTree& tree, const fs::path&) {
         const fs::path dir = tree.dir("scratch", 01777);
         return Arranged{{dir}, TestTree::copy_fixture(kGood, dir, "sbx-backend-sticky.so")};
       },
       [](const TestTree& tree, const Arranged&) {
         return std::vector<std::string>{(tree.base() / "scratch").string() +
                                         " is writable by group and others (mode 1777)"};
       }},
      {"symlinked_dir_component", LoadStage::kDirectory, false,
       [](const TestTree& tree, const fs::path&) {
         TestTree::copy_fixture(kGood, tree.dir("real/plugins"), "sbx-backend-via-link.so");
         fs::create_directory_symlink("real", tree.base() / "alias");
         const fs::path dir = tree.base() / "alias" / "plugins";
         return Arranged{{dir}, dir / "sbx-backend-via-link.so"};
       },
       [](const TestTree& tree, const Arranged&) {
         return std::vector<std::string>{
             (tree.base() / "alias").string() + " is a symlink (to real)",
             "symlinked components are never followed"};
       }},
      {"file_owned_by_other_uid", LoadStage::kTrust, true,
       [](const TestTree&, const fs::path& plugins) {
         const fs::path file = TestTree::copy_fixture(kGood, plugins, "sbx-backend-owned.so");
         if (::chown(file.c_str(), 4242, static_cast<gid_t>(-1)) != 0) ADD_FAILURE() << "chown";
         return Arranged{{}, file};
       },
       parts({"the file is owned by uid 4242; expected root (uid 0)"})},
      {"dir_owned_by_other_uid", LoadStage::kDirectory, true,
       [](const TestTree& tree, const fs::path&) {
         const fs::path dir = tree.dir("foreign");
         if (::chown(dir.c_str(), 4242, static_cast<gid_t>(-1)) != 0) ADD_FAILURE() << "chown";
         return Arranged{{dir}, TestTree::copy_fixture(kGood, dir, "sbx-backend-foreign.so")};
       },
       [](const TestTree& tree, const Arranged&) {
         return std::vector<std::string>{(tree.base() / "foreign").string() +
                                         " is owned by uid 4242; expected root (uid 0)"};
       }},
  };
}

std::vector<FixtureCase> all_cases() {
  std::vector<FixtureCase> cases = descriptor_cases();
  for (FixtureCase& c : trust_cases()) cases.push_back(std::move(c));
  for (FixtureCase& c : search_path_cases()) cases.push_back(std::move(c));
  return cases;
}

const RejectedPlugin* find_rejected(const PluginRegistry& registry, const fs::path& path) {
  for (const RejectedPlugin& r : registry.rejected()) {
    if (r.path == path.string()) return &r;
  }
  return nullptr;
}

void expect_rejected(const PluginRegistry& registry, const FixtureCase& c, const TestTree& tree,
                     const Arranged& arranged) {
  SCOPED_TRACE(c.label);
  const RejectedPlugin* r = find_rejected(registry, arranged.rejected);
  ASSERT_NE(r, nullptr) << "no rejection for " << arranged.rejected;
  EXPECT_EQ(r->stage, c.stage) << r->message;
  const std::string prefix = r->path + ": " + std::string(to_string(c.stage)) + ": ";
  EXPECT_EQ(r->message.rfind(prefix, 0), 0u) << r->message;
  for (const std::string& part : c.expected(tree, arranged))
    EXPECT_NE(r->message.find(part), std::string::npos) << r->message << "\nmissing: " << part;
  // Boost's and the /proc loading mechanics are not the reader's business.
  EXPECT_EQ(r->message.find("boost::"), std::string::npos) << r->message;
  EXPECT_EQ(r->message.find("/proc/self/fd"), std::string::npos) << r->message;
}

// The good plugin loaded, and the Backend its create() returned works and got the host table.
void expect_good_loaded(const PluginRegistry& registry, const fs::path& plugins) {
  ASSERT_EQ(registry.plugins().size(), 1u);
  const LoadedPlugin& plugin = registry.plugins().front();
  EXPECT_EQ(plugin.name, "fixture-good");
  EXPECT_EQ(plugin.version, "1.0.0");
  EXPECT_EQ(plugin.description, "Loader test fixture (never installed)");
  EXPECT_EQ(plugin.path, (plugins / kGood).string());
  ASSERT_NE(plugin.backend, nullptr);
  const ProbeReport report = plugin.backend->probe(ProbeContext{});
  EXPECT_FALSE(report.available);
  EXPECT_EQ(report.summary, "test fixture only");
  ASSERT_FALSE(report.checks.empty());
  EXPECT_EQ(report.checks.front().observed, sbx_version());
  EXPECT_EQ(registry.find("fixture-good"), &plugin);
}

TEST(PluginLoader, AllBadFixturesInOneScanLeaveTheGoodOneLoaded) {
  TestTree tree("all-in-one");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins);
  std::vector<fs::path> dirs = {plugins};
  std::vector<std::pair<const FixtureCase*, Arranged>> arranged;
  const std::vector<FixtureCase> cases = all_cases();
  for (const FixtureCase& c : cases) {
    if (c.needs_root && !testing::running_as_root()) {
      std::cout << "[ note ] " << c.label << " left out: chown needs root\n";
      continue;
    }
    Arranged a = c.arrange(tree, plugins);
    dirs.insert(dirs.end(), a.extra_dirs.begin(), a.extra_dirs.end());
    arranged.emplace_back(&c, std::move(a));
  }
  const PluginRegistry registry = PluginRegistry::load(tree.options(dirs));
  expect_good_loaded(registry, plugins);
  for (const auto& [c, a] : arranged) expect_rejected(registry, *c, tree, a);
  EXPECT_EQ(registry.rejected().size(), arranged.size());
}

class EachFixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(EachFixture, RejectedAtItsOwnStageWhileTheGoodOneLoads) {
  const FixtureCase& c = GetParam();
  if (c.needs_root && !testing::running_as_root()) GTEST_SKIP() << "chown needs root";
  TestTree tree(c.label);
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins);
  const Arranged a = c.arrange(tree, plugins);
  std::vector<fs::path> dirs = {plugins};
  dirs.insert(dirs.end(), a.extra_dirs.begin(), a.extra_dirs.end());
  const PluginRegistry registry = PluginRegistry::load(tree.options(dirs));
  expect_good_loaded(registry, plugins);
  expect_rejected(registry, c, tree, a);
  EXPECT_EQ(registry.rejected().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(PluginLoader, EachFixture, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<FixtureCase>& param_info) {
                           return param_info.param.label;
                         });

std::string messages(const PluginRegistry& registry) {
  std::string out;
  for (const RejectedPlugin& r : registry.rejected()) out += r.message + "\n";
  return out;
}

// RUNPATH $ORIGIN names the plugin's own directory, which passed the trust walk: loaded.
TEST(PluginLoader, OriginRunpathInATrustedDirectoryLoads) {
  TestTree tree("origin");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture("sbx-backend-fixture-runpath-origin.so", plugins);
  const PluginRegistry registry = PluginRegistry::load(tree.options({plugins}));
  EXPECT_TRUE(registry.rejected().empty()) << messages(registry);
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins().front().name, "fixture-good");
}

// The fixtures carry what their names say (the linker's dtags choice), so the cases above test
// DT_RUNPATH and DT_RPATH each, and the good plugin carries neither.
TEST(PluginLoader, SearchPathFixturesCarryTheirEntries) {
  auto read = [](const std::string& fixture) {
    const std::string path = std::string(SBX_LOADER_FIXTURE_DIR) + "/" + fixture;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << path;
    Result<plugins::DynamicSearchInfo> info = plugins::read_dynamic_search_info_fd(fd);
    ::close(fd);
    EXPECT_TRUE(info) << info.error();
    return info ? *info : plugins::DynamicSearchInfo{};
  };
  const std::vector<std::string> world = {SBX_FIXTURE_WORLD_WRITABLE_LIBDIR};
  const plugins::DynamicSearchInfo runpath = read("sbx-backend-fixture-runpath-world.so");
  EXPECT_EQ(runpath.runpath, world);
  EXPECT_TRUE(runpath.rpath.empty());
  const plugins::DynamicSearchInfo rpath = read("sbx-backend-fixture-rpath-world.so");
  EXPECT_EQ(rpath.rpath, world);
  EXPECT_TRUE(rpath.runpath.empty());
  EXPECT_EQ(read("sbx-backend-fixture-runpath-origin.so").runpath,
            std::vector<std::string>{"$ORIGIN"});
  EXPECT_EQ(read("sbx-backend-fixture-runpath-relative.so").runpath,
            std::vector<std::string>{"fixture-libs"});
  const plugins::DynamicSearchInfo good = read(kGood);
  EXPECT_TRUE(good.runpath.empty() && good.rpath.empty());
}

TEST(PluginLoader, IgnoresFilesNotNamedLikePlugins) {
  TestTree tree("names");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins);
  TestTree::copy_fixture("sbx-backend-garbage.so", plugins, "README.txt");
  TestTree::copy_fixture("sbx-backend-garbage.so", plugins, "libsbx-backend-x.so");
  TestTree::copy_fixture("sbx-backend-garbage.so", plugins, "sbx-backend-x.so.1");
  const PluginRegistry registry = PluginRegistry::load(tree.options({plugins}));
  expect_good_loaded(registry, plugins);
  EXPECT_TRUE(registry.rejected().empty());
}

TEST(PluginLoader, OnlyNamesOpensJustTheWantedFiles) {
  TestTree tree("only-names");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins);
  // A broken candidate next to it: a full scan rejects it; a scan for other names never
  // opens it, so it is neither loaded nor rejected.
  TestTree::copy_fixture("sbx-backend-garbage.so", plugins);
  LoaderOptions full = tree.options({plugins});
  ASSERT_EQ(PluginRegistry::load(full).rejected().size(), 1u);

  LoaderOptions wanted = tree.options({plugins});
  wanted.only_names = {"fixture-good"};
  const PluginRegistry registry = PluginRegistry::load(wanted);
  expect_good_loaded(registry, plugins);
  EXPECT_TRUE(registry.rejected().empty());

  LoaderOptions other = tree.options({plugins});
  other.only_names = {"bwrap"};
  const PluginRegistry none = PluginRegistry::load(other);
  EXPECT_TRUE(none.plugins().empty());
  EXPECT_TRUE(none.rejected().empty());
}

TEST(PluginLoader, MissingDirectoryContributesNothing) {
  TestTree tree("missing");
  const PluginRegistry registry = PluginRegistry::load(tree.options({tree.base() / "nope"}));
  EXPECT_TRUE(registry.plugins().empty());
  EXPECT_TRUE(registry.rejected().empty());
}

TEST(PluginLoader, DirectoryOutsideTheTrustRootIsRejected) {
  TestTree tree("outside");
  const PluginRegistry registry = PluginRegistry::load(tree.options({"/usr/lib"}));
  ASSERT_EQ(registry.rejected().size(), 1u);
  EXPECT_EQ(registry.rejected()[0].stage, LoadStage::kDirectory);
  EXPECT_NE(registry.rejected()[0].message.find("/usr/lib is outside the trust root"),
            std::string::npos)
      << registry.rejected()[0].message;
}

TEST(PluginLoader, DuplicateAcrossDirectoriesKeepsTheFirstDirectory) {
  TestTree tree("two-dirs");
  const fs::path first = tree.dir("first");
  const fs::path second = tree.dir("second");
  TestTree::copy_fixture(kGood, first);
  TestTree::copy_fixture(kGood, second);
  const PluginRegistry registry = PluginRegistry::load(tree.options({first, second}));
  expect_good_loaded(registry, first);
  ASSERT_EQ(registry.rejected().size(), 1u);
  EXPECT_EQ(registry.rejected()[0].path, (second / kGood).string());
  EXPECT_NE(registry.rejected()[0].message.find("already taken by " + (first / kGood).string()),
            std::string::npos);
}

// glibc knows a loaded object by the name given to dlopen(). Each scan below opens its file at
// the same descriptor number; if that name were reused, the second scan would get the first
// scan's library back and "load" the good plugin from a file that throws in create().
TEST(PluginLoader, SeparateScansLoadTheirOwnFiles) {
  TestTree tree("rescan");
  const fs::path a = tree.dir("a");
  const fs::path b = tree.dir("b");
  TestTree::copy_fixture(kGood, a);
  TestTree::copy_fixture("sbx-backend-fixture-create-throws.so", b);
  const PluginRegistry first = PluginRegistry::load(tree.options({a}));
  expect_good_loaded(first, a);
  const PluginRegistry second = PluginRegistry::load(tree.options({b}));
  EXPECT_TRUE(second.plugins().empty());
  ASSERT_EQ(second.rejected().size(), 1u);
  EXPECT_EQ(second.rejected()[0].stage, LoadStage::kCreate);
  // And the same file again: the loaded object is reused, create() runs again.
  const PluginRegistry third = PluginRegistry::load(tree.options({a}));
  expect_good_loaded(third, a);
  EXPECT_NE(third.plugins()[0].backend, first.plugins()[0].backend);
}

TEST(PluginLoader, BackendOutlivesItsRegistry) {
  TestTree tree("outlive");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins);
  std::shared_ptr<Backend> backend;
  {
    const PluginRegistry registry = PluginRegistry::load(tree.options({plugins}));
    ASSERT_EQ(registry.plugins().size(), 1u);
    backend = registry.plugins()[0].backend;
  }
  // The library is never unloaded, so the object's code is still there.
  EXPECT_EQ(backend->probe(ProbeContext{}).summary, "test fixture only");
  TransformRequest request;
  Result<ExecPlan> plan = backend->transform(request);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().find("enforces nothing"), std::string::npos);
}

// A plugin built for an older minor (sbx_add_backend_plugin's ABI_MINOR) loads, as that minor.
TEST(PluginLoader, APluginBuiltForAnOlderMinorLoadsAsThatMinor) {
  TestTree tree("older-minor");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture("sbx-backend-fixture-abi-target-0.so", plugins);
  TestTree::copy_fixture("sbx-backend-fixture-abi-target-1.so", plugins);
  const PluginRegistry registry = PluginRegistry::load(tree.options({plugins}));
  EXPECT_TRUE(registry.rejected().empty()) << messages(registry);
  ASSERT_EQ(registry.plugins().size(), 2u);
  for (const std::uint16_t minor : {std::uint16_t{0}, std::uint16_t{1}}) {
    const LoadedPlugin* plugin = registry.find("fixture-abi-target-" + std::to_string(minor));
    ASSERT_NE(plugin, nullptr) << minor;
    EXPECT_EQ(plugin->abi_minor, minor);
    EXPECT_EQ(plugin_abi(*plugin), std::to_string(SBX_ABI_MAJOR) + "." + std::to_string(minor));
  }
  EXPECT_EQ(host_plugin_abi(), std::to_string(SBX_ABI_MAJOR) + "." + std::to_string(SBX_ABI_MINOR));
}

// Only a plugin under one of sbx's own names in the install's own plugin directory runs in
// process; the same file elsewhere, or another name there, runs isolated.
TEST(PluginLoader, OnlySbxsOwnBackendsInTheOwnDirectoryRunInProcess) {
  TestTree tree("own-backends");
  const fs::path own = tree.dir("own");
  const fs::path other = tree.dir("other");
  TestTree::copy_fixture("sbx-backend-fixture-named-bwrap.so", own, "sbx-backend-bwrap.so");
  TestTree::copy_fixture(kGood, own);
  LoaderOptions options = tree.options({own});
  options.own_plugin_directory = own.string();
  PluginRegistry registry = PluginRegistry::load(options);
  ASSERT_NE(registry.find("bwrap"), nullptr) << messages(registry);
  ASSERT_NE(registry.find("fixture-good"), nullptr) << messages(registry);
  EXPECT_FALSE(registry.find("bwrap")->isolated);
  EXPECT_TRUE(registry.find("fixture-good")->isolated);

  TestTree::copy_fixture("sbx-backend-fixture-named-bwrap.so", other, "sbx-backend-bwrap.so");
  options = tree.options({other});
  options.own_plugin_directory = own.string();
  registry = PluginRegistry::load(options);
  ASSERT_NE(registry.find("bwrap"), nullptr) << messages(registry);
  EXPECT_TRUE(registry.find("bwrap")->isolated);
}

}  // namespace
}  // namespace sbx
