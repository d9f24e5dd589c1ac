// Loading by path (LoadingMode::kPath): the mode the loader uses where /proc/self/fd cannot name
// a checked descriptor (macOS; Linux without procfs at /proc). The chain walk from "/", the
// comparison of the loaded image with the checked file, and the registry choosing the mode:
// with /proc hidden in a private mount namespace (a forked child) the trusted plugin loads by
// path, and a fake /proc full of links is never believed. The whole loader suite also runs
// with /proc hidden (ctest sbx_integration_loader_without_procfs, see extra.cmake), so every
// hostile fixture is refused with its reason in this mode too.
#include <dlfcn.h>
#include <gtest/gtest.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/mount.h>
#endif
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <variant>

#include "plugins/loaded_image.hpp"
#include "plugins/loader_internal.hpp"
#include "plugins/trusted_fs.hpp"
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

// The checks the registry makes in path mode: the chain from "/", then the file.
Result<plugins::TrustedFile> check_by_chain(const TestTree& tree, const fs::path& dir,
                                            const std::string& name) {
  DirectoryWalk walk = plugins::open_trusted_directory_chain(dir, tree.base(), me());
  if (!walk.fd.valid()) return Error{walk.error};
  return plugins::open_trusted_file(walk.fd.get(), dir, name, me());
}

using Outcome = std::variant<const sbx_plugin_v2*, RejectedPlugin>;

std::string describe(const Outcome& outcome) {
  if (const auto* rejected = std::get_if<RejectedPlugin>(&outcome)) return rejected->message;
  return std::string("loaded ") + std::get<const sbx_plugin_v2*>(outcome)->name;
}

TEST(PathLoading, TheChainWalkChecksEveryDirectoryAboveTheTrustRoot) {
  TestTree tree("chain");
  tree.dir("loose", 0775);
  const fs::path root = tree.dir("loose/root");
  const fs::path dir = tree.dir("loose/root/plugins");
  // Below the trust root everything is fine, and that is all the descriptor walk looks at.
  EXPECT_TRUE(plugins::open_trusted_directory(dir, root, me()).fd.valid());
  // A lookup by path passes through loose/, which the group could rewrite: refused.
  DirectoryWalk walk = plugins::open_trusted_directory_chain(dir, root, me());
  EXPECT_FALSE(walk.fd.valid());
  EXPECT_EQ(walk.error, (tree.base() / "loose").string() +
                            " is writable by group (mode 0775); expected no write permission "
                            "for group or others (chmod go-w)");
  // The trust root still bounds where a plugin directory may be, with the same words.
  EXPECT_EQ(plugins::open_trusted_directory_chain("/usr", root, me()).error,
            "/usr is outside the trust root " + root.string());
  testing::chmod_or_throw(tree.base() / "loose", 0755);
  walk = plugins::open_trusted_directory_chain(dir, root, me());
  ASSERT_TRUE(walk.fd.valid()) << walk.error;
}

// A sticky directory above the trust root (a checkout in /tmp) passes: others cannot rename or
// remove the entry below it, which must be owned by root or the trusted owner anyway. The same
// mode without the sticky bit, or on the trust root itself (others could add plugins), fails.
TEST(PathLoading, AStickyDirectoryAboveTheTrustRootPassesButNotAsTheTrustRoot) {
  TestTree tree("sticky");
  const fs::path shared = tree.dir("shared", 01777);
  const fs::path root = tree.dir("shared/root");
  const fs::path dir = tree.dir("shared/root/plugins");
  DirectoryWalk walk = plugins::open_trusted_directory_chain(dir, root, me());
  EXPECT_TRUE(walk.fd.valid()) << walk.error;

  DirectoryWalk as_root = plugins::open_trusted_directory_chain(dir, shared, me());
  EXPECT_FALSE(as_root.fd.valid());
  expect_contains(as_root.error, shared.string() + " is writable by group and others (mode 1777)");

  testing::chmod_or_throw(shared, 0777);
  walk = plugins::open_trusted_directory_chain(dir, root, me());
  EXPECT_FALSE(walk.fd.valid());
  expect_contains(walk.error, shared.string() + " is writable by group and others (mode 0777)");
}

TEST(PathLoading, LoadsTheCheckedFile) {
  TestTree tree("path-load");
  const fs::path dir = tree.dir("plugins");
  TestTree::copy_fixture(kGood, dir, "sbx-backend-by-path.so");
  Result<plugins::TrustedFile> file = check_by_chain(tree, dir, "sbx-backend-by-path.so");
  ASSERT_TRUE(file.ok()) << file.error();
  const Outcome outcome = plugins::load_descriptor(std::move(file).value(), LoadingMode::kPath);
  const sbx_plugin_v2* const* descriptor = std::get_if<const sbx_plugin_v2*>(&outcome);
  ASSERT_NE(descriptor, nullptr) << describe(outcome);
  EXPECT_STREQ((*descriptor)->name, "fixture-good");
}

// Only root or the trusted owner can rename over a checked path in a trusted chain (this test
// runs as one of them). dlopen then maps the other file and runs its constructors -- the chain
// rule is what prevents that -- but the comparison refuses the image before anything in it is
// called: its bytes are not the checked file's.
TEST(PathLoading, AFileSwappedAfterTheCheckIsRefusedBeforeItsEntryIsCalled) {
  TestTree tree("path-swap");
  const fs::path dir = tree.dir("plugins");
  TestTree::copy_fixture(kGood, dir, "sbx-backend-target.so");
  TestTree::copy_fixture("sbx-backend-fixture-create-null.so", dir, "replacement.tmp");
  Result<plugins::TrustedFile> file = check_by_chain(tree, dir, "sbx-backend-target.so");
  ASSERT_TRUE(file.ok()) << file.error();

  fs::rename(dir / "replacement.tmp", dir / "sbx-backend-target.so");

  const Outcome outcome = plugins::load_descriptor(std::move(file).value(), LoadingMode::kPath);
  const auto* rejected = std::get_if<RejectedPlugin>(&outcome);
  ASSERT_NE(rejected, nullptr) << describe(outcome);
  EXPECT_EQ(rejected->stage, LoadStage::kLoad);
  expect_contains(rejected->message,
                  (dir / "sbx-backend-target.so").string() +
                      ": load: the loaded image is not the checked file (its bytes at file offset");
}

// The same bytes under the checked name, but another inode: the path no longer names what was
// checked, so the chain assumption broke and the image is refused all the same.
TEST(PathLoading, AnIdenticalCopyUnderTheCheckedNameIsStillAnotherFile) {
  TestTree tree("path-copy");
  const fs::path dir = tree.dir("plugins");
  TestTree::copy_fixture(kGood, dir, "sbx-backend-copied.so");
  TestTree::copy_fixture(kGood, dir, "copy.tmp");
  Result<plugins::TrustedFile> file = check_by_chain(tree, dir, "sbx-backend-copied.so");
  ASSERT_TRUE(file.ok()) << file.error();

  fs::rename(dir / "copy.tmp", dir / "sbx-backend-copied.so");

  const Outcome outcome = plugins::load_descriptor(std::move(file).value(), LoadingMode::kPath);
  const auto* rejected = std::get_if<RejectedPlugin>(&outcome);
  ASSERT_NE(rejected, nullptr) << describe(outcome);
  EXPECT_EQ(rejected->stage, LoadStage::kLoad);
  expect_contains(rejected->message,
                  ": load: the checked path names another file after loading; refusing the image");
}

// glibc hands back an object it already has under the name it was given; an image loaded under
// one name is never taken for a file checked under another.
TEST(PathLoading, AnImageLoadedUnderAnotherNameIsNotTheCheckedFile) {
  TestTree tree("path-name");
  const fs::path dir = tree.dir("plugins");
  TestTree::copy_fixture(kGood, dir, "sbx-backend-first.so");
  TestTree::copy_fixture(kGood, dir, "sbx-backend-second.so");
  Result<plugins::TrustedFile> first = check_by_chain(tree, dir, "sbx-backend-first.so");
  Result<plugins::TrustedFile> second = check_by_chain(tree, dir, "sbx-backend-second.so");
  ASSERT_TRUE(first.ok() && second.ok());
  const std::string first_path = first->path;
  const Outcome loaded = plugins::load_descriptor(std::move(first).value(), LoadingMode::kPath);
  ASSERT_TRUE(std::holds_alternative<const sbx_plugin_v2*>(loaded)) << describe(loaded);

  void* handle = ::dlopen(first_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_EQ(plugins::loaded_image_problem(handle, *second).value_or("(no problem)"),
            "the loader returned an image named " + first_path + "; expected the checked path");
  // The first file, checked again, is the image.
  Result<plugins::TrustedFile> again = check_by_chain(tree, dir, "sbx-backend-first.so");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(plugins::loaded_image_problem(handle, *again), std::nullopt);
}

// What the registry reports about the mode: "descriptor" on a Linux with procfs; the run with
// /proc hidden sets SBX_EXPECT_LOADING_MODE=path, so a silent fall back to the descriptor (or
// the other way round) fails here.
TEST(PathLoading, TheRegistryReportsTheModeItUsed) {
  const char* expected = std::getenv("SBX_EXPECT_LOADING_MODE");
#if defined(__linux__)
  const std::string want = expected != nullptr ? expected : "descriptor";
#else
  const std::string want = expected != nullptr ? expected : "path";
#endif
  TestTree tree("mode");
  const fs::path dir = tree.dir("plugins");
  TestTree::copy_fixture(kGood, dir);
  const PluginRegistry registry = PluginRegistry::load(tree.options({dir}));
  EXPECT_EQ(to_string(registry.loading().mode), want) << registry.loading().reason;
  EXPECT_FALSE(registry.loading().reason.empty());
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0].name, "fixture-good");
  EXPECT_TRUE(registry.rejected().empty());
  EXPECT_EQ(PluginRegistry::from_plugins({}).loading().mode, LoadingMode::kNone);
}

#if defined(__linux__)
constexpr int kCannotHideProc = 77;

// Runs `body` in a forked child whose private mount namespace has an empty tmpfs on /proc;
// `plant` may fill it first. The child's exit code is body's (kCannotHideProc if /proc cannot
// be hidden here). Failures inside the child are printed by it to stderr.
int in_child_without_procfs(const std::function<bool()>& plant, const std::function<bool()>& body) {
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(kCannotHideProc);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(kCannotHideProc);
    if (::mount("none", "/proc", "tmpfs", 0, nullptr) != 0) ::_exit(kCannotHideProc);
    if (!plant()) ::_exit(2);
    ::_exit(body() ? 0 : 1);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

bool report(bool ok, const std::string& what) {
  if (!ok) std::fprintf(stderr, "child: %s\n", what.c_str());
  return ok;
}

// The registry's view in the child, checked there (gtest assertions do not cross a fork).
bool loaded_by_path_only_the_good_one(const PluginRegistry& registry, const std::string& reason) {
  const PluginLoading& loading = registry.loading();
  std::string rejected;
  for (const RejectedPlugin& r : registry.rejected()) rejected += r.message + "\n";
  return report(loading.mode == LoadingMode::kPath,
                "mode is " + std::string(to_string(loading.mode))) &&
         report(loading.reason.find(reason) != std::string::npos, "reason: " + loading.reason) &&
         report(registry.rejected().empty(), "rejected:\n" + rejected) &&
         report(registry.plugins().size() == 1 && registry.plugins()[0].name == "fixture-good",
                "the good fixture did not load") &&
         report(registry.plugins()[0].backend->probe(ProbeContext{}).summary == "test fixture only",
                "the loaded backend does not answer as the good fixture");
}

// /proc hidden: the trusted plugin loads by path (the registry says so, and why), and a plugin
// directory whose chain above the trust root is group-writable is refused in this mode.
TEST(PathLoading, WithoutProcfsTheTrustedPluginLoadsByPath) {
  TestTree tree("no-procfs");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins);
  const LoaderOptions options = tree.options({plugins});
  tree.dir("loose", 0775);
  const fs::path root = tree.dir("loose/root");
  const fs::path loose_plugins = tree.dir("loose/root/plugins");
  TestTree::copy_fixture(kGood, loose_plugins);
  LoaderOptions loose = tree.options({loose_plugins});
  loose.trust_root = root.string();
  const std::string loose_reason = (tree.base() / "loose").string() + " is writable by group";

  const int status = in_child_without_procfs(
      [] { return true; },
      [&] {
        const PluginRegistry registry = PluginRegistry::load(options);
        if (!loaded_by_path_only_the_good_one(registry, "/proc/self/fd is not reachable"))
          return false;
        const PluginRegistry refused = PluginRegistry::load(loose);
        return report(refused.plugins().empty(), "a plugin below a loose ancestor loaded") &&
               report(refused.rejected().size() == 1 &&
                          refused.rejected()[0].stage == LoadStage::kDirectory &&
                          refused.rejected()[0].message.find(loose_reason) != std::string::npos,
                      "the loose ancestor was not named");
      });
  if (status == kCannotHideProc) GTEST_SKIP() << "cannot hide /proc here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << "see the child's message above";
}

// Something that is not procfs mounted at /proc, with /proc/self/fd/N links to a file of its
// choosing for every descriptor number, is never believed: had the loader named descriptors
// through it, it would have loaded the create-null fixture in place of the checked file.
TEST(PathLoading, AFakeProcIsNeverBelieved) {
  TestTree tree("fake-proc");
  const fs::path plugins = tree.dir("plugins");
  TestTree::copy_fixture(kGood, plugins);
  const fs::path decoy =
      TestTree::copy_fixture("sbx-backend-fixture-create-null.so", tree.dir("decoy"));
  const LoaderOptions options = tree.options({plugins});
  const auto plant = [&] {
    std::error_code error;
    fs::create_directories("/proc/self/fd", error);
    for (int fd = 0; fd < 256 && !error; ++fd)
      fs::create_symlink(decoy, "/proc/self/fd/" + std::to_string(fd), error);
    return report(!error, "cannot plant the fake /proc: " + error.message());
  };
  const int status = in_child_without_procfs(plant, [&] {
    return loaded_by_path_only_the_good_one(PluginRegistry::load(options), "is not on a procfs");
  });
  if (status == kCannotHideProc) GTEST_SKIP() << "cannot hide /proc here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << "see the child's message above";
}
// Descriptor loading asked for without procfs refuses the file; it never falls back to the
// path on its own (only the registry chooses path mode, and then walks the chain from "/").
TEST(PathLoading, DescriptorLoadingWithoutProcfsRefusesRatherThanFallsBack) {
  TestTree tree("no-fallback");
  const fs::path dir = tree.dir("plugins");
  TestTree::copy_fixture(kGood, dir);
  const int status = in_child_without_procfs(
      [] { return true; },
      [&] {
        Result<plugins::TrustedFile> file = check_by_chain(tree, dir, kGood);
        if (!report(file.ok(), "check: " + (file.ok() ? std::string() : file.error())))
          return false;
        const Outcome outcome = plugins::load_descriptor(std::move(file).value());
        const auto* rejected = std::get_if<RejectedPlugin>(&outcome);
        return report(rejected != nullptr && rejected->stage == LoadStage::kInspect &&
                          rejected->message.find("is /proc mounted?") != std::string::npos,
                      "outcome: " + describe(outcome));
      });
  if (status == kCannotHideProc) GTEST_SKIP() << "cannot hide /proc here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(status, 0) << "see the child's message above";
}
#endif  // __linux__

}  // namespace
}  // namespace sbx
