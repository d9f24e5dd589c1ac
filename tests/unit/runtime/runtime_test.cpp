// install_layout() and the host-services table plugins receive (core/src/plugins/runtime.cpp).
#include "sbx/core/runtime.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "plugins/loaded_image.hpp"
#include "plugins/trusted_fs.hpp"
#include "sbx/sdk/backend.hpp"
#include "sbx_config.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;

InstallLayout layout_or_die() {
  Result<InstallLayout> layout = install_layout();
  if (!layout) throw std::runtime_error(layout.error());
  return *layout;
}

TEST(InstallLayout, FollowsTheRealLocationOfLibsbx) {
  const InstallLayout layout = layout_or_die();
  const fs::path tree = fs::canonical(SBX_BUILD_TREE);
  // The test links the build tree's libsbx through its SONAME symlink; the layout names the
  // real file, and everything else hangs off its directory. The libdir is "lib" or Debian's
  // "lib/<triplet>" (SBX_MULTIARCH_LIBDIR): CI builds both (asan and ci presets), so the
  // prefix is found above a libdir of one component and of two.
  const fs::path libdir = tree / SBX_INSTALL_LIBDIR;
  EXPECT_EQ(fs::path(layout.libsbx_path).parent_path(), libdir);
  EXPECT_EQ(fs::path(layout.libsbx_path).filename().string().rfind("libsbx.so.", 0), 0u);
  EXPECT_FALSE(fs::is_symlink(layout.libsbx_path));
  EXPECT_EQ(layout.lib_dir, libdir.string());
  EXPECT_EQ(layout.plugin_dir, (libdir / "sbx" / "backends").string());
  EXPECT_EQ(layout.bin_dir, (tree / "bin").string());
  EXPECT_EQ(layout.stage2_path, (tree / "libexec" / "sbx" / "sbx-stage2").string());
  struct stat st {};
  ASSERT_EQ(::stat(layout.libsbx_path.c_str(), &st), 0);
  EXPECT_EQ(layout.libsbx_owner, st.st_uid);
}

// No environment variable can add or change a plugin directory or the stage-2 path: both are
// found from libsbx's real location (core/src/plugins/README.md).
TEST(InstallLayout, EnvironmentChangesNothing) {
  const InstallLayout before = layout_or_die();
  constexpr const char* kNames[] = {"SBX_PLUGIN_DIR", "SBX_PLUGIN_PATH", "SBX_STAGE2",
                                    "SBX_PREFIX",     "SBX_LIBDIR",      "LD_LIBRARY_PATH"};
  for (const char* name : kNames) ::setenv(name, "/tmp/attacker", 1);
  const InstallLayout after = layout_or_die();
  for (const char* name : kNames) ::unsetenv(name);
  EXPECT_EQ(after.libsbx_path, before.libsbx_path);
  EXPECT_EQ(after.plugin_dir, before.plugin_dir);
  EXPECT_EQ(after.stage2_path, before.stage2_path);
}

TEST(HostServices, TableDescribesThisHost) {
  const InstallLayout layout = layout_or_die();
  const sbx_host_v2* host = host_services(layout);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->struct_size, sizeof(sbx_host_v2));
  EXPECT_EQ(host->abi_major, SBX_ABI_MAJOR);
  EXPECT_EQ(host->abi_minor, SBX_ABI_MINOR);
  EXPECT_STREQ(host->host_version, sbx_version());
  EXPECT_TRUE(std::regex_match(sbx_version(), std::regex(R"(\d+\.\d+\.\d+)"))) << sbx_version();
  ASSERT_NE(host->log, nullptr);
  ASSERT_NE(host->spawn, nullptr);
  // The same layout always yields the same table (plugins keep the pointer).
  EXPECT_EQ(host_services(layout), host);
}

TEST(HostServices, LogGoesToTheDefaultLoggerVerbatim) {
  // Build (and cache) the table first: building it may log about the stage-2 helper (e.g. when
  // the build tree lies under /tmp), and only the plugin's lines are under test here.
  const sbx_host_v2* table = host_services(layout_or_die());
  std::ostringstream out;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_pattern("%l|%v");
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  const HostServices host(table);
  host.log(SBX_LOG_WARN, "plugin says {} and %s");
  host.log(SBX_LOG_DEBUG, std::string_view("cut here|not this", 8));
  table->log(table->ctx, 99, "unknown level", 13);
  spdlog::set_default_logger(previous);
  EXPECT_EQ(out.str(), "warning|plugin says {} and %s\ndebug|cut here\nerror|unknown level\n");
}

TEST(HostServices, SpawnRunsAPlanThroughCore) {
  const HostServices host(host_services(layout_or_die()));
  ExecPlan plan{{"/bin/sh", "-c", "exit 3"}, {"PATH=/usr/bin:/bin"}, "/", {}};
  Result<ExitStatus> status = host.spawn(plan, RunContext(nullptr));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->exit_code, 3);
  EXPECT_EQ(status->signal, 0);
  plan.argv = {"/bin/sh", "-c", "kill -TERM $$"};
  status = host.spawn(plan, RunContext(nullptr));
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_EQ(status->signal, SIGTERM);
}

// The host's spawn under a run (the table a backend's exec() was given): the run is told it
// started once the child exists, and only once (a backend saying it again starts nothing).
TEST(RunServices, HostSpawnTellsTheRunItStartedOnce) {
  int started = 0;
  RunServices run(
      nullptr, [&started] { ++started; }, nullptr);
  const HostServices host(host_services(layout_or_die()));
  const ExecPlan plan{{"/bin/sh", "-c", "exit 0"}, {"PATH=/usr/bin:/bin"}, "/", {}};
  ASSERT_TRUE(host.spawn(plan, RunContext(run.table())).ok());
  EXPECT_EQ(started, 1);
  RunContext(run.table()).run_started();
  EXPECT_EQ(started, 1);
  // Without a run (a table core did not make), the spawn still runs, and tells nobody.
  ASSERT_TRUE(host.spawn(plan, RunContext(nullptr)).ok());
  EXPECT_EQ(started, 1);
}

TEST(HostServices, SpawnErrorsComeBackAsText) {
  const sbx_host_v2* table = host_services(layout_or_die());
  const HostServices host(table);
  Result<ExitStatus> status =
      host.spawn(ExecPlan{{"sh", "-c", "true"}, {}, "/", {}}, RunContext(nullptr));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().find("'sh' is not an absolute path"), std::string::npos)
      << status.error();
  char error[16] = {};
  ExitStatus out;
  EXPECT_NE(table->spawn(table->ctx, nullptr, nullptr, &out, error, sizeof error), 0);
  EXPECT_STREQ(error, "spawn: plan and");  // truncated to the buffer, NUL-terminated
}

// The stage-2 path is offered only for a helper that passes the plugin trust rules from "/".
class Stage2Path : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(SBX_TEST_BINARY_DIR) / ("runtime-test-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_ / "libexec" / "sbx");
    for (const fs::path& p : {base_, base_ / "libexec", base_ / "libexec" / "sbx"})
      fs::permissions(p, fs::perms(0755));
    plugins::DirectoryWalk walk = plugins::open_trusted_directory(base_ / "libexec" / "sbx", "/",
                                                                  plugins::Owners{::geteuid()});
    if (!walk.fd.valid()) {
      skip_reason_ = "the build tree is not a trusted chain from / (" + walk.error + ")";
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  fs::path helper(const std::string& name, fs::perms mode) {
    const fs::path path = base_ / "libexec" / "sbx" / name;
    std::ofstream(path) << "#!/bin/sh\n";
    fs::permissions(path, mode);
    return path;
  }
  InstallLayout layout_for(const fs::path& stage2) {
    InstallLayout layout = layout_or_die();
    layout.libsbx_owner = ::geteuid();
    layout.stage2_path = stage2.string();
    return layout;
  }
  fs::path base_;
  std::string skip_reason_;
};

TEST_F(Stage2Path, TrustedHelperIsOffered) {
  if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  const fs::path good = helper("trusted", fs::perms(0755));
  const sbx_host_v2* host = host_services(layout_for(good));
  ASSERT_NE(host->stage2_path, nullptr);
  EXPECT_EQ(host->stage2_path, good.string());
}

TEST_F(Stage2Path, UntrustedOrMissingHelperIsNotOffered) {
  if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  const fs::path writable = helper("group-writable", fs::perms(0775));
  EXPECT_EQ(host_services(layout_for(writable))->stage2_path, nullptr);
  EXPECT_EQ(host_services(layout_for(base_ / "libexec" / "sbx" / "absent"))->stage2_path, nullptr);
  const fs::path target = helper("real", fs::perms(0755));
  fs::create_symlink(target, base_ / "libexec" / "sbx" / "link");
  EXPECT_EQ(host_services(layout_for(base_ / "libexec" / "sbx" / "link"))->stage2_path, nullptr);
}

// Another sbx install on the host is found and kept read-only whichever libdir it was built
// with, whatever this build's own: "lib" (cmake --install's default), or the host's multiarch
// lib/<triplet> (a build for /usr: the .debs). Here neither has libexec/sbx, so only its
// plugin directory marks it as an install.
TEST(InstallPrefixes, AnotherInstallOfEitherLayoutIsFoundAndKept) {
  std::vector<std::string> libdirs = {"lib"};
  if (std::string_view(SBX_MULTIARCH_LIBDIR_RELPATH).empty())
    std::cout << "this toolchain names no multiarch triplet: only the \"lib\" layout\n";
  else
    libdirs.emplace_back(SBX_MULTIARCH_LIBDIR_RELPATH);
  for (const std::string& libdir : libdirs) {
    SCOPED_TRACE(libdir);
    const sbx::test::TempDir tree;
    const std::string prefix = tree.path() + "/other";
    fs::create_directories(prefix + "/bin");
    fs::create_directories(prefix + "/" + libdir + "/sbx/backends");
    tree.write("other/bin/sbx", "", 0755);
    const std::vector<std::string> found = install_prefixes("", prefix + "/bin", "");
    EXPECT_NE(std::find(found.begin(), found.end(), prefix), found.end());
    // "lib" holds the plugins of either layout: kept read-only where the prefix is not.
    const std::vector<std::string> dirs = prefix_directories(prefix);
    EXPECT_NE(std::find(dirs.begin(), dirs.end(), prefix + "/lib"), dirs.end());
    EXPECT_NE(std::find(dirs.begin(), dirs.end(), prefix + "/bin"), dirs.end());
    // A bin/sbx alone is not an install.
    fs::remove_all(prefix + "/lib");
    const std::vector<std::string> without = install_prefixes("", prefix + "/bin", "");
    EXPECT_EQ(std::find(without.begin(), without.end(), prefix), without.end());
  }
}

// What the sbx executable relies on without procfs (install_layout): the file it names is
// accepted only if its bytes are the running program's.
plugins::TrustedFile opened_for_comparison(const std::string& path) {
  plugins::TrustedFile file;
  file.path = path;
  file.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.fd.valid()) ::fstat(file.fd.get(), &file.st);
  return file;
}

TEST(MainProgramImage, TheRunningFileMatchesAndAnotherDoesNot) {
  char self[PATH_MAX] = {0};
  ASSERT_GT(::readlink("/proc/self/exe", self, sizeof self - 1), 0);
  const std::optional<std::string> same =
      plugins::main_program_image_problem(opened_for_comparison(self));
  EXPECT_FALSE(same.has_value()) << *same;
  const std::optional<std::string> other =
      plugins::main_program_image_problem(opened_for_comparison("/bin/true"));
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->find("not the checked file"), std::string::npos) << *other;
}

}  // namespace
}  // namespace sbx
