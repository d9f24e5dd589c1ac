// The C API with settings (sbx_manager_new_with_settings): the same scopes, locks and excluded
// commands as the `sbx` command line. The managed scope is pointed at a file the test owns
// through libsbx's private test entry (capi/capi_internal.hpp); the public function always reads
// /etc/sbx/managed.json. The preference names no loadable backend, so "wanted but none
// available" is deterministic on every host.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "capi/capi_internal.hpp"
#include "capi_call.hpp"
#include "sbx/sbx.h"
#include "sbx_test/files.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

using sbx_capi_test::Call;
using sbx_capi_test::take;

class CApiSettings : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the managed file must be owned by root";
    ::chmod(tmp_.path().c_str(), 0755);
    fs::create_directories(tmp_.path() + "/etc/sbx");
    fs::create_directories(tmp_.path() + "/home/sbx");
    fs::create_directories(tmp_.path() + "/work");
    sources_.managed_file = tmp_.path() + "/etc/sbx/managed.json";
    sources_.managed_trust_root = tmp_.path();
    sources_.user_file = tmp_.path() + "/home/sbx/settings.json";
    sources_.cwd = work();
  }

  std::string work() const { return tmp_.path() + "/work"; }

  // Runs `body` in a child as uid/gid 65534 with HOME the test's root-owned home/sbx, and
  // returns what it returned ("SKIP: ..." when the child cannot become that user). An
  // excluded command runs unsandboxed only for a user who cannot write what it runs or reads
  // (red team round 2, G1: an earlier, wider run could have written anything the user can;
  // as root, anything): here /bin/sh, the cwd work/ and HOME, all root's and 0755.
  std::string as_nobody(const std::function<std::string()>& body) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return "SKIP: pipe failed";
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(pipe_fds[0]);
      std::string out;
      // Only PATH and HOME: the host's environment may name code to load (GIT_*, PAGER, ...),
      // which refuses an exclusion (review round 3, H6).
      ::clearenv();
      ::setenv("PATH", "/usr/bin:/bin", 1);
      ::setenv("HOME", (tmp_.path() + "/home/sbx").c_str(), 1);
      // libsbx finds its install from its own path: a build tree below a private directory
      // (a clone in `mktemp -d`, mode 0700) is out of the user's reach.
      const std::string exe = fs::read_symlink("/proc/self/exe").string();
      if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
          ::setresuid(65534, 65534, 65534) != 0)
        out = "SKIP: cannot become uid 65534";
      else if (::access(exe.c_str(), R_OK) != 0)
        out = "SKIP: user 65534 cannot reach the build tree (" + exe + ": " + std::strerror(errno) +
              "); build in a directory every user may search";
      else
        out = body();
      const char* data = out.data();
      std::size_t left = out.size();
      while (left > 0) {
        const ssize_t n = ::write(pipe_fds[1], data, left);
        if (n <= 0) break;
        data += n;
        left -= static_cast<std::size_t>(n);
      }
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string got;
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
      got.append(buffer, static_cast<std::size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    return got;
  }

  void managed(const std::string& text, mode_t mode = 0644) {
    sbx::test::write_file(sources_.managed_file, text);
    ::chmod(sources_.managed_file.c_str(), mode);
  }

  // A manager over no loadable backend, with the test's sources.
  sbx_manager* make(const char* settings_json, std::string* error_out = nullptr) {
    std::string error;
    sbx_manager* made =
        sbx::capi::make_manager_with_sources("no-such-backend", sources_, settings_json, error);
    if (error_out != nullptr) *error_out = error;
    return made;
  }

  sbx_manager* make_manager_with_dirs(const char* const* dirs, std::string& error) {
    return sbx::capi::make_manager_with_sources(nullptr, sources_, nullptr, error, dirs);
  }

  Call exec(sbx_manager* manager, const char* policy, const char* script, unsigned flags,
            const char* preference = nullptr) {
    const char* argv[] = {"/bin/sh", "-c", script, nullptr};
    sbx_error* error = nullptr;
    return take(sbx_exec(manager, policy, work().c_str(), argv, preference, flags, &error), &error);
  }

  // Outside /tmp when /srv is root's and not writable by others: a directory above the cwd the
  // user may add entries to (a sticky /tmp) refuses every exclusion (review round 3, H1).
  static std::string root_owned_parent() {
    struct stat st {};
    return ::stat("/srv", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
                   (st.st_mode & 022) == 0
               ? "/srv"
               : "/tmp";
  }

  sbx::test::TempDir tmp_{root_owned_parent()};
  sbx::settings::Sources sources_;
};

TEST_F(CApiSettings, PublicEntryReadsTheProductionPlaces) {
  // No managed file on this host: the public entry point works and uses the caller's scope.
  if (fs::exists("/etc/sbx/managed.json")) GTEST_SKIP() << "this host has managed settings";
  sbx_error* error = nullptr;
  sbx_manager* manager = sbx_manager_new_with_settings("no-such-backend", work().c_str(),
                                                       R"({"excluded_commands":["true"]})", &error);
  ASSERT_NE(manager, nullptr) << sbx_error_message(error);
  const char* argv[] = {"true", nullptr};
  // read-only: an excluded command runs unsandboxed only in a working directory no sandbox of
  // the policy can write (the default policy writes the cwd). As root: never (G1).
  Call call = take(sbx_exec(manager, R"({"version":1,"preset":"read-only"})", work().c_str(), argv,
                            nullptr, 0, &error),
                   &error);
  sbx_manager_free(manager);
  ASSERT_TRUE(call.ok) << call.error;
  json::value report = json::parse(call.text);
  EXPECT_EQ(report.at("excluded_by"), json::array()) << call.text;
  EXPECT_NE(std::string(report.at("reason").as_string()).find("sbx runs as root"),
            std::string::npos)
      << call.text;
  // As a user who cannot write /bin/true, the cwd or HOME, it runs without a sandbox.
  const std::string text = as_nobody([this] {
    sbx_error* child_error = nullptr;
    sbx_manager* child_manager = sbx_manager_new_with_settings(
        "no-such-backend", work().c_str(), R"({"excluded_commands":["true"]})", &child_error);
    if (child_manager == nullptr) return std::string("ERROR: ") + sbx_error_message(child_error);
    const char* child_argv[] = {"true", nullptr};
    Call ran = take(sbx_exec(child_manager, R"({"version":1,"preset":"read-only"})", work().c_str(),
                             child_argv, nullptr, 0, &child_error),
                    &child_error);
    sbx_manager_free(child_manager);
    return ran.ok ? ran.text : "ERROR: " + ran.error;
  });
  if (text.rfind("SKIP: ", 0) == 0) GTEST_SKIP() << text;
  ASSERT_EQ(text.rfind("ERROR: ", 0), std::string::npos) << text;
  report = json::parse(text);
  EXPECT_EQ(report.at("exit").at("code"), 0) << text;
  EXPECT_EQ(report.at("excluded_by"), json::parse(R"(["true"])")) << text;
  // A caller scope may not hold locks (only the administrator's file may).
  manager = sbx_manager_new_with_settings(nullptr, nullptr,
                                          R"({"locks":{"allow_unsandboxed":true}})", &error);
  EXPECT_EQ(manager, nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(sbx_error_message(error)).find("/locks: only the managed settings"),
            std::string::npos)
      << sbx_error_message(error);
  sbx_error_free(error);
}

TEST_F(CApiSettings, ExcludedCommandsRunUnsandboxedOnlyWhenEveryPartMatches) {
  // read-only: the default policy writes the cwd, where no excluded command runs unsandboxed;
  // as a user who cannot write the shell, the cwd or HOME (as_nobody).
  const std::string text = as_nobody([this] {
    sbx_manager* child_manager = make(R"({"excluded_commands":["echo *"]})");
    if (child_manager == nullptr) return std::string("ERROR: no manager");
    Call ran = exec(child_manager, R"({"version":1,"preset":"read-only"})", "echo a && echo b", 0);
    sbx_manager_free(child_manager);
    return ran.ok ? ran.text : "ERROR: " + ran.error;
  });
  if (text.rfind("SKIP: ", 0) == 0) GTEST_SKIP() << text;
  ASSERT_EQ(text.rfind("ERROR: ", 0), std::string::npos) << text;
  json::value report = json::parse(text);
  EXPECT_EQ(report.at("should_sandbox"), false) << text;
  EXPECT_EQ(report.at("excluded_by"), json::parse(R"(["echo *","echo *"])"));
  sbx_manager* manager = make(R"({"excluded_commands":["echo *"]})");
  ASSERT_NE(manager, nullptr);
  // One part that does not match: sandboxed, so refused here (no backend).
  Call refused = exec(manager, nullptr, "echo a && touch x", 0);
  ASSERT_TRUE(refused.ok) << refused.error;
  report = json::parse(refused.text);
  EXPECT_EQ(report.at("should_sandbox"), true) << refused.text;
  EXPECT_EQ(report.at("exit"), nullptr);
  EXPECT_FALSE(fs::exists(work() + "/x"));
  sbx_manager_free(manager);
}

TEST_F(CApiSettings, LocksRefuseTheFlagAndForbidNamingTheLock) {
  managed(R"({"locks":{"allow_unsandboxed":false,"network_modes":["restricted"]}})");
  sbx_manager* manager = make(nullptr);
  ASSERT_NE(manager, nullptr);
  Call flagged = exec(manager, nullptr, "true", SBX_EXEC_ALLOW_UNSANDBOXED);
  EXPECT_FALSE(flagged.ok);
  EXPECT_NE(flagged.error.find("/locks/allow_unsandboxed"), std::string::npos) << flagged.error;
  Call forbidden = exec(manager, nullptr, "true", 0, "forbid");
  EXPECT_FALSE(forbidden.ok);
  EXPECT_NE(forbidden.error.find("/locks/allow_unsandboxed"), std::string::npos) << forbidden.error;
  Call network =
      exec(manager, R"({"version":1,"preset":"read-only","network_access":true})", "true", 0);
  EXPECT_FALSE(network.ok);
  EXPECT_NE(network.error.find("/locks/network_modes"), std::string::npos) << network.error;
  sbx_error* error = nullptr;
  Call explained = take(sbx_explain(manager, nullptr, work().c_str(), nullptr, &error), &error);
  ASSERT_TRUE(explained.ok) << explained.error;
  const json::value report = json::parse(explained.text);
  EXPECT_EQ(report.at("settings").at("escape_hatch_locked"), true);
  EXPECT_EQ(report.at("settings").at("policy_scope"), "built-in");
  sbx_manager_free(manager);
  // Excluded commands asked for by the caller while the hatch is locked: refused up front.
  std::string why;
  EXPECT_EQ(make(R"({"excluded_commands":["true"]})", &why), nullptr);
  EXPECT_NE(why.find("/locks/allow_unsandboxed"), std::string::npos) << why;
}

TEST_F(CApiSettings, TheSettingsBackendsApplyAndTheirLocksRefuseTheManagersArguments) {
  // Issue #39 point 5: the managed order is the manager's; a locked order or locked plugin
  // directories refuse the manager's own arguments by name.
  managed(R"({"backends":{"order":["no-such-backend","other"]},
              "locks":{"backend_order":true,"plugin_dirs":true}})");
  std::string error;
  sbx_manager* manager = sbx::capi::make_manager_with_sources(nullptr, sources_, nullptr, error);
  ASSERT_NE(manager, nullptr) << error;
  sbx_error* c_error = nullptr;
  Call explained = take(sbx_explain(manager, nullptr, work().c_str(), nullptr, &c_error), &c_error);
  ASSERT_TRUE(explained.ok) << explained.error;
  const json::value report = json::parse(explained.text);
  EXPECT_EQ(report.at("settings").at("backend_order"),
            json::parse(R"(["no-such-backend","other"])"));
  EXPECT_EQ(report.at("settings").at("backend_order_scope"), "managed");
  sbx_manager_free(manager);
  EXPECT_EQ(sbx::capi::make_manager_with_sources("bwrap", sources_, nullptr, error), nullptr);
  EXPECT_EQ(error,
            "refused by the administrator's lock /locks/backend_order (managed settings): the "
            "manager's backends argument asks for the order bwrap; the order is "
            "no-such-backend, other (the managed settings)");
  const char* dirs[] = {"/opt/mine", nullptr};
  EXPECT_EQ(make_manager_with_dirs(dirs, error), nullptr);
  EXPECT_EQ(error,
            "refused by the administrator's lock /locks/plugin_dirs (managed settings): the "
            "manager's plugin_dirs adds the plugin directory /opt/mine; plugin directories "
            "allowed: the install's own");
  // The user scope cannot set what the lock keeps either.
  sbx::test::write_file(sources_.user_file, R"({"backends":{"order":["bwrap"]}})");
  EXPECT_EQ(sbx::capi::make_manager_with_sources(nullptr, sources_, nullptr, error), nullptr);
  EXPECT_NE(error.find("/locks/backend_order (managed settings): the user settings set "
                       "backends.order (bwrap)"),
            std::string::npos)
      << error;
}

TEST_F(CApiSettings, AHostileManagedFileIsRefused) {
  managed(R"({"locks":{"allow_unsandboxed":false}})", 0666);
  std::string why;
  EXPECT_EQ(make(nullptr, &why), nullptr);
  EXPECT_NE(why.find("refusing the managed settings"), std::string::npos) << why;
}

// Red team round 2, G4: a manager read the project settings of its own cwd once; a call with a
// trusted project as its cwd then ran without that project's deny rules, silently. A call in
// another directory than the manager's is refused, naming both.
TEST_F(CApiSettings, ACallInAnotherDirectoryThanTheManagersIsRefused) {
  const std::string project = tmp_.path() + "/project";
  fs::create_directories(project + "/.sbx");
  fs::create_directories(project + "/secrets");
  sbx::test::write_file(project + "/secrets/key", "TOPSECRET\n");
  sbx::test::write_file(project + "/.sbx/settings.json",
                        R"({"policy":{"version":1,"filesystem":{"kind":"restricted","entries":[)"
                        R"({"path":":root","access":"read"},{"path":")" +
                            project + R"(/secrets","access":"deny"}]}}})");
  sbx::test::write_file(sources_.user_file, R"({"trusted_projects":[")" + project + R"("]})");
  sbx_manager* manager = make(nullptr);  // read for work(), not the project
  ASSERT_NE(manager, nullptr);
  sbx_error* error = nullptr;
  const char* argv[] = {"cat", "secrets/key", nullptr};
  Call ran = take(sbx_exec(manager, nullptr, project.c_str(), argv, "forbid", 0, &error), &error);
  EXPECT_FALSE(ran.ok) << ran.text;
  EXPECT_EQ(ran.text.find("TOPSECRET"), std::string::npos);
  EXPECT_NE(ran.error.find("cwd '" + project +
                           "' is not the directory this manager read its "
                           "project settings for ('" +
                           work() + "')"),
            std::string::npos)
      << ran.error;
  Call explained = take(sbx_explain(manager, nullptr, project.c_str(), nullptr, &error), &error);
  EXPECT_FALSE(explained.ok);
  EXPECT_NE(explained.error.find("is not the directory this manager read"), std::string::npos);
  // Another spelling through a symlink is not the manager's directory: it could lie in a
  // trusted project the real path leaves, which was checked only for the manager's own.
  const std::string spelled = tmp_.path() + "/link";
  fs::create_symlink(work(), spelled);
  explained = take(sbx_explain(manager, nullptr, spelled.c_str(), nullptr, &error), &error);
  EXPECT_FALSE(explained.ok);
  EXPECT_NE(explained.error.find("is not the directory this manager read"), std::string::npos)
      << explained.error;
  sbx_manager_free(manager);
  // A manager made for the project applies its deny rules there.
  sources_.cwd = project;
  manager = make(nullptr);
  ASSERT_NE(manager, nullptr);
  explained = take(sbx_explain(manager, nullptr, project.c_str(), nullptr, &error), &error);
  ASSERT_TRUE(explained.ok) << explained.error;
  EXPECT_EQ(json::parse(explained.text).at("settings").at("policy_scope"), "project")
      << explained.text;
  sbx_manager_free(manager);
}

// G8: the cwd string the caller gives is the logical path (symlinks kept): one inside a trusted
// project whose real path leaves it (a symlink planted in the project) is refused, as
// `sbx --cwd` is, even without PWD. In a child: the public entry reads HOME.
TEST_F(CApiSettings, ASymlinkedCwdLeavingATrustedProjectIsRefused) {
  const std::string project = tmp_.path() + "/project";
  const std::string victim = tmp_.path() + "/victim";
  fs::create_directories(project + "/.sbx");
  fs::create_directories(victim);
  fs::create_directories(tmp_.path() + "/home2/.config/sbx");
  sbx::test::write_file(project + "/.sbx/settings.json", "{}");
  sbx::test::write_file(tmp_.path() + "/home2/.config/sbx/settings.json",
                        R"({"trusted_projects":[")" + project + R"("]})");
  fs::create_symlink(victim, project + "/tools");
  if (fs::exists("/etc/sbx/managed.json")) GTEST_SKIP() << "this host has managed settings";
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    ::setenv("HOME", (tmp_.path() + "/home2").c_str(), 1);
    ::unsetenv("XDG_CONFIG_HOME");
    ::unsetenv("PWD");
    std::string out;
    sbx_error* error = nullptr;
    const std::string tools = project + "/tools";
    sbx_manager* manager =
        sbx_manager_new_with_settings("no-such-backend", tools.c_str(), nullptr, &error);
    out = manager == nullptr ? std::string("REFUSED: ") + sbx_error_message(error) : "MADE";
    sbx_manager_free(manager);
    sbx_error_free(error);
    (void)!::write(pipe_fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string got;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
    got.append(buffer, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(got.rfind("REFUSED: ", 0), 0u) << got;
  EXPECT_NE(got.find("inside the trusted project " + project), std::string::npos) << got;
}

TEST_F(CApiSettings, ExplainSaysWhichScopeDecided) {
  sbx::test::write_file(sources_.user_file,
                        R"({"policy":{"version":1,"preset":"read-only"},"sandbox":"require"})");
  sbx_manager* manager = make(nullptr);
  ASSERT_NE(manager, nullptr);
  sbx_error* error = nullptr;
  Call call = take(sbx_explain(manager, nullptr, work().c_str(), nullptr, &error), &error);
  ASSERT_TRUE(call.ok) << call.error;
  json::value report = json::parse(call.text);
  EXPECT_EQ(report.at("settings").at("policy_scope"), "user") << call.text;
  EXPECT_EQ(report.at("settings").at("sandbox_scope"), "user");
  EXPECT_EQ(report.at("preference"), "require");
  // The caller's own arguments are the highest scope.
  call = take(sbx_explain(manager, R"({"version":1,"preset":"workspace-write"})", work().c_str(),
                          "auto", &error),
              &error);
  ASSERT_TRUE(call.ok) << call.error;
  report = json::parse(call.text);
  EXPECT_EQ(report.at("settings").at("policy_scope"), "command line");
  EXPECT_EQ(report.at("settings").at("sandbox_scope"), "command line");
  sbx_manager_free(manager);
}

}  // namespace
