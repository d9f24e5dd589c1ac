// The lean start of the installed `sbx` (core/cli/README.md, "The executable"):
//  - `--version` and `--help` start no process or thread (the kernel would kill sbx if it tried:
//    sbx_no_new_process_exec), read no settings file (a broken one does not matter to them) and
//    load no plugin and no libsbx.so (the dynamic loader's own LD_DEBUG=files account);
//  - libsbx's code, Boost.JSON, spdlog, fmt and libstdc++ are linked into sbx, not loaded;
//  - the install layout comes from the running file, never from argv[0];
//  - a plugin built with the SDK (its own, shared libstdc++) still loads and runs, and its C++
//    exceptions reach the host's handlers in the statically linked libstdc++ (with a static
//    libgcc too, i.e. a second unwinder, they did not: sbx died of SIGABRT).
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "sbx/sdk/abi.h"
#include "sbx_test/files.hpp"
#include "sbx_test/filtered_run.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;
namespace json = boost::json;

// A HOME and XDG_CONFIG_HOME whose user settings file is not JSON: any verb that reads the
// settings fails on it.
class LeanStart : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    fs::create_directories(home_.path() + "/.config/sbx");
    write_file(home_.path() + "/.config/sbx/settings.json", "{ this is not a settings file");
  }

  std::vector<std::string> hostile_env(const std::string& extra = "") const {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + home_.path(),
                                    "XDG_CONFIG_HOME=" + home_.path() + "/.config", "LANG=C.UTF-8"};
    if (!extra.empty()) env.push_back(extra);
    return env;
  }

  TempDir home_;
};

TEST_F(LeanStart, TheBrokenSettingsAreReadByAVerbThatNeedsThem) {
  // The control: the same environment does break a verb that reads the settings.
  const RunResult r = run({sbx_path(), "config", "show"}, hostile_env());
  EXPECT_EQ(r.code, 2) << describe(r);  // a settings file that does not parse: invalid input
  EXPECT_NE(r.err.find("settings.json"), std::string::npos) << describe(r);
}

TEST_F(LeanStart, VersionAndHelpStartNoProcessAndReadNoSettings) {
  for (const char* flag : {"--version", "--help"}) {
    const RunResult r = run({SBX_NO_NEW_PROCESS_EXEC, sbx_path(), flag}, hostile_env());
    EXPECT_EQ(r.signal, 0) << flag << " tried to start a process or thread: " << describe(r);
    EXPECT_EQ(r.code, 0) << flag << ": " << describe(r);
    EXPECT_EQ(r.err, "") << flag;
  }
  const RunResult version = run({sbx_path(), "--version"}, hostile_env());
  EXPECT_EQ(version.out.rfind("sbx ", 0), 0u) << describe(version);
}

// Only the subcommand a command line names is built (main.cpp, named_verb); it is found before
// parsing by skipping the global options and their values. A value that is also a verb's name
// must not be taken for the verb (only `exec` would be built and `explain` refused), and help
// asked for before any verb lists them all.
TEST_F(LeanStart, TheVerbIsFoundPastGlobalOptionsAndTheirValues) {
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + home_.path(),
                                        "XDG_CONFIG_HOME=" + home_.path() + "/empty"};
  const RunResult r = run({sbx_path(), "--backends", "exec", "--log-level", "error", "explain",
                           "--preset", "read-only", "--json"},
                          env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NO_THROW((void)json::parse(r.out)) << describe(r);
  for (const std::vector<std::string>& help :
       {std::vector<std::string>{sbx_path(), "--help"},
        std::vector<std::string>{sbx_path(), "--log-level", "error", "--help"}}) {
    const RunResult listed = run(help, env);
    EXPECT_EQ(listed.code, 0) << describe(listed);
    for (const char* verb : {"backends", "explain", "exec", "context", "debug", "policy", "config"})
      EXPECT_NE(listed.out.find("\n  " + std::string(verb) + " "), std::string::npos)
          << verb << " missing from " << listed.out;
  }
}

#if defined(__x86_64__) && defined(__GLIBC__)
// Runs `argv` (no environment) in a forked child whose seccomp filter kills it when it grows
// its heap (brk with a non-zero address: the first malloc does; the dynamic loader only asks
// for the break, with 0). Returns the wait status; stdout and stderr go to `out`.
int status_without_heap_growth(const std::vector<std::string>& argv, const std::string& out) {
  return wait_status_under_filter(
      argv, {}, out,
      {
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 5),
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_brk, 0, 3),
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      });
}

// `sbx --version` alone is answered before the program's static initialisers run, which
// allocate (the C++ runtime's exception pool and streams, the parser's tables): with a heap
// that cannot grow it still answers, while `--help`, which needs them, dies at the first malloc.
TEST_F(LeanStart, TheBareVersionIsAnsweredBeforeTheStaticInitialisers) {
  const TempDir out;
  const int version = status_without_heap_growth({sbx_path(), "--version"}, out / "v");
  ASSERT_TRUE(WIFEXITED(version)) << "killed by signal " << WTERMSIG(version);
  EXPECT_EQ(WEXITSTATUS(version), 0);
  EXPECT_EQ(read_file(out / "v").rfind("sbx ", 0), 0u) << read_file(out / "v");
  const int help = status_without_heap_growth({sbx_path(), "--help"}, out / "h");
  EXPECT_TRUE(WIFSIGNALED(help) && WTERMSIG(help) == SIGSYS)
      << "the control: --help should die when it allocates (status " << help << ")";
}
#endif

TEST_F(LeanStart, TheFilterKillsAVerbThatStartsAProcess) {
  // The control for the filter: `sbx exec` must start the command, so it is killed.
  const RunResult r =
      run({SBX_NO_NEW_PROCESS_EXEC, sbx_path(), "--backends", "none-such", "exec", "--sandbox",
           "forbid", "--preset", "danger-full-access", "--", "/bin/true"},
          base_env());
  EXPECT_EQ(r.signal, SIGSYS) << describe(r);
}

// The dynamic loader's account of every object it maps (LD_DEBUG is read by ld.so before sbx
// runs; sbx then drops LD_* from its own environment).
std::string loaded_objects(const std::vector<std::string>& args,
                           const std::vector<std::string>& env) {
  std::vector<std::string> argv = {sbx_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, env).err;
}

TEST_F(LeanStart, VersionLoadsNoPluginAndNoLibsbx) {
  const std::string version = loaded_objects({"--version"}, hostile_env("LD_DEBUG=files"));
  ASSERT_NE(version.find("file=libc.so"), std::string::npos)
      << "LD_DEBUG=files printed nothing here:\n"
      << version;
  // dlopen'ed objects (plugins, loaded through /proc/self/fd/N or by path) show as such.
  EXPECT_EQ(version.find("dynamically loaded by"), std::string::npos) << version;
  EXPECT_EQ(version.find("libsbx.so"), std::string::npos) << version;
  EXPECT_EQ(version.find("libboost_json"), std::string::npos) << version;
#if SBX_TEST_EXPECT_STATIC_CXX
  EXPECT_EQ(version.find("libstdc++.so"), std::string::npos) << version;
#endif
  // The control: a verb that needs the backends does load them, and LD_DEBUG shows it.
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/root", "LD_DEBUG=files"};
  const std::string backends = loaded_objects({"backends"}, env);
  EXPECT_NE(backends.find("dynamically loaded by"), std::string::npos) << backends;
  EXPECT_EQ(backends.find("libsbx.so"), std::string::npos) << backends;
}

// How many objects a command dlopen()s, from the loader's LD_DEBUG=files account (plugins are
// opened as /proc/self/fd/N, so they are counted, not named).
std::size_t dlopened_objects(const std::string& account) {
  std::vector<std::string> files;
  std::size_t at = 0;
  const std::string marker = "dynamically loaded by";
  while ((at = account.find(marker, at)) != std::string::npos) {
    const std::size_t line = account.rfind('\n', at);
    const std::size_t file = account.find("file=", line == std::string::npos ? 0 : line);
    const std::size_t end = account.find(' ', file);
    if (file != std::string::npos && file < at && end != std::string::npos) {
      const std::string name = account.substr(file, end - file);
      if (std::find(files.begin(), files.end(), name) == files.end()) files.push_back(name);
    }
    at += marker.size();
  }
  return files.size();
}

TEST_F(LeanStart, ARunLoadsOnlyTheBackendItNamesAndNoSharedCxxRuntime) {
  TempDir work;
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/root", "LD_DEBUG=files"};
  const RunResult r = run({sbx_path(), "--backends", "landlock", "exec", "--dry-run", "--preset",
                           "read-only", "--cwd", work.path(), "--", "/bin/true"},
                          env);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("\"backend\": \"landlock\""), std::string::npos) << r.out;
  // The one plugin, and nothing it needs: the in-tree plugin carries its own C++ runtime.
  EXPECT_EQ(dlopened_objects(r.err), 1u) << r.err;
#if SBX_TEST_EXPECT_STATIC_CXX
  EXPECT_EQ(r.err.find("libstdc++.so"), std::string::npos) << r.err;
#endif
}

TEST_F(LeanStart, ARunWithTheDefaultOrderLoadsOnlyThePreferredBackendWhenItIsAvailable) {
  TempDir work;
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/root"};
  const RunResult probe =
      run({sbx_path(), "--backends", "bwrap", "backends", "--probe", "--json"}, env);
  bool bwrap_available = false;
  json::error_code ec;
  const json::value doc = json::parse(probe.out, ec);
  if (!ec && doc.is_object() && doc.as_object().contains("backends")) {
    for (const json::value& backend : doc.at("backends").as_array())
      if (backend.at("name").as_string() == "bwrap")
        bwrap_available = backend.at("available").as_bool();
  }
  if (!bwrap_available)
    GTEST_SKIP() << "bwrap is not available here, so the run goes on to the others: "
                 << describe(probe);
  std::vector<std::string> traced = env;
  traced.push_back("LD_DEBUG=files");
  const RunResult r = run({sbx_path(), "exec", "--dry-run", "--preset", "workspace-write", "--cwd",
                           work.path(), "--", "/bin/true"},
                          traced);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("\"backend\": \"bwrap\""), std::string::npos) << r.out;
  EXPECT_EQ(dlopened_objects(r.err), 1u) << r.err;
}

// How many times `calls` (an strace log) names `path` exactly (as a quoted argument).
std::size_t times_named(const std::string& calls, const std::string& path) {
  const std::string quoted = "\"" + path + "\"";
  std::size_t count = 0;
  for (std::size_t at = 0; (at = calls.find(quoted, at)) != std::string::npos; ++at) ++count;
  return count;
}

// The readlink calls (strace log) of a landlock dry run, or "" when the run failed (reported).
std::string readlinks_of_a_dry_run() {
  TempDir work;
  const std::string trace = work.path() + "/trace";
  const RunResult r = run({"/usr/bin/strace", "-f", "-qq", "-e", "trace=readlink,readlinkat", "-o",
                           trace, sbx_path(), "--backends", "landlock", "exec", "--dry-run",
                           "--preset", "read-only", "--cwd", work.path(), "--", "/bin/true"},
                          base_env());
  EXPECT_EQ(r.code, 0) << describe(r);
  return r.code == 0 ? read_file(trace) : std::string();
}

TEST_F(LeanStart, ARunLooksUpTheInstallOnce) {
  // Resolution, the loader and the capability needs all ask for the install layout; the sbx
  // executable reads /proc/self/exe for it once per process (runtime.cpp, executable_install).
  if (!exists("/usr/bin/strace")) GTEST_SKIP() << "strace is not installed (bootstrap-debian.sh)";
  const std::string calls = readlinks_of_a_dry_run();
  EXPECT_EQ(times_named(calls, "/proc/self/exe"), 1u) << calls;
}

TEST_F(LeanStart, ARunResolvesTheInstallPrefixOnce) {
  // The install directories (lib, bin, the plugin directory, libexec/sbx) lie below one
  // prefix; realpath of each readlinked the prefix again (5 times a run). They are resolved
  // with each ancestor looked up once (runtime.cpp, install_directories).
  if (!exists("/usr/bin/strace")) GTEST_SKIP() << "strace is not installed (bootstrap-debian.sh)";
  const std::string calls = readlinks_of_a_dry_run();
  const std::string prefix = fs::canonical(installed_prefix()).string();
  EXPECT_EQ(times_named(calls, prefix), 1u) << calls;
  EXPECT_EQ(times_named(calls, prefix + "/bin"), 1u) << calls;
}

TEST_F(LeanStart, TheCreatedNamesScanStartsOnceBwrapRuns) {
  // The created-names scan (its thread, its descriptor table, its descriptors) starts once the
  // backend says the sandbox's first process exists (run_started): its set-up overlaps bwrap's
  // instead of preceding the vfork, and the vfork child copies none of its descriptors.
  if (!exists("/usr/bin/strace")) GTEST_SKIP() << "strace is not installed (bootstrap-debian.sh)";
  TempDir work;
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/root", "PWD=" + work.path()};
  const RunResult probe =
      run({sbx_path(), "--backends", "bwrap", "backends", "--probe", "--json"}, env);
  if (probe.out.find("\"available\": true") == std::string::npos)
    GTEST_SKIP() << "bwrap is not available here: " << describe(probe);
  const std::string policy = work.path() + "/cwd-only.json";
  write_file(policy, R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [
    {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
    "network": {"mode": "restricted"}})");
  const std::string trace = work.path() + "/trace";
  const RunResult r = run(
      {"/usr/bin/strace", "-f", "-qq", "-e", "trace=vfork,clone,clone3", "-o", trace, sbx_path(),
       "--backends", "bwrap", "exec", "--policy", policy, "--cwd", work.path(), "--", "/bin/true"},
      env);
  ASSERT_EQ(r.code, 0) << describe(r);
  // sbx's own lines: its pid is the first one in the log.
  const std::string calls = read_file(trace);
  const std::string pid = calls.substr(0, calls.find(' '));
  std::size_t vfork_line = 0;
  std::size_t thread_line = 0;
  std::size_t line_number = 0;
  for (std::size_t at = 0; at < calls.size();) {
    const std::size_t end = std::min(calls.find('\n', at), calls.size());
    const std::string line = calls.substr(at, end - at);
    at = end + 1;
    ++line_number;
    if (line.rfind(pid + " ", 0) != 0) continue;
    if (vfork_line == 0 && line.find("vfork(") != std::string::npos) vfork_line = line_number;
    if (thread_line == 0 && line.find("CLONE_THREAD") != std::string::npos)
      thread_line = line_number;
  }
  ASSERT_NE(vfork_line, 0u) << calls;
  ASSERT_NE(thread_line, 0u) << "no scan thread: " << calls;
  EXPECT_LT(vfork_line, thread_line) << calls;
}

TEST_F(LeanStart, AsRootTheCreatedNamesEventsAreMarkedBeforeBwrapStarts) {
  // As root, the created-names check learns what changed from fanotify (created_names.hpp):
  // its filesystem marks must be in place before the sandbox's first process exists, so that
  // every change the command makes is queued; its reading thread starts after the vfork.
  if (!exists("/usr/bin/strace")) GTEST_SKIP() << "strace is not installed (bootstrap-debian.sh)";
  if (::geteuid() != 0) GTEST_SKIP() << "only root may mark a filesystem (CAP_SYS_ADMIN)";
  TempDir work;
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/root", "PWD=" + work.path()};
  const RunResult probe =
      run({sbx_path(), "--backends", "bwrap", "backends", "--probe", "--json"}, env);
  if (probe.out.find("\"available\": true") == std::string::npos)
    GTEST_SKIP() << "bwrap is not available here: " << describe(probe);
  const std::string policy = work.path() + "/cwd-only.json";
  write_file(policy, R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [
    {"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},
    "network": {"mode": "restricted"}})");
  const std::string trace = work.path() + "/trace";
  const RunResult r = run(
      {"/usr/bin/strace", "-f", "-qq", "-e", "trace=vfork,clone,clone3,fanotify_init,fanotify_mark",
       "-o", trace, sbx_path(), "--backends", "bwrap", "exec", "--policy", policy, "--cwd",
       work.path(), "--", "/bin/true"},
      env);
  ASSERT_EQ(r.code, 0) << describe(r);
  const std::string calls = read_file(trace);
  const std::string pid = calls.substr(0, calls.find(' '));
  std::size_t init_line = 0;
  std::size_t mark_line = 0;
  std::size_t vfork_line = 0;
  std::size_t thread_line = 0;
  std::size_t line_number = 0;
  std::string init_call;
  std::string mark_call;
  for (std::size_t at = 0; at < calls.size();) {
    const std::size_t end = std::min(calls.find('\n', at), calls.size());
    const std::string line = calls.substr(at, end - at);
    at = end + 1;
    ++line_number;
    if (line.rfind(pid + " ", 0) != 0) continue;
    if (init_line == 0 && line.find("fanotify_init(") != std::string::npos) {
      init_line = line_number;
      init_call = line;
    }
    if (mark_line == 0 && line.find("FAN_MARK_FILESYSTEM") != std::string::npos) {
      mark_line = line_number;
      mark_call = line;
    }
    if (vfork_line == 0 && line.find("vfork(") != std::string::npos) vfork_line = line_number;
    if (thread_line == 0 && line.find("CLONE_THREAD") != std::string::npos)
      thread_line = line_number;
  }
  ASSERT_NE(init_line, 0u) << "no fanotify group: " << calls;
  if (init_call.find(" = -1 ") != std::string::npos)
    GTEST_SKIP() << "fanotify is not available here: " << init_call;
  ASSERT_NE(mark_line, 0u) << "no filesystem mark: " << calls;
  if (mark_call.find(" = -1 ") != std::string::npos)
    GTEST_SKIP() << "this filesystem cannot be marked here: " << mark_call;
  ASSERT_NE(vfork_line, 0u) << calls;
  EXPECT_LT(mark_line, vfork_line) << calls;
  EXPECT_LT(vfork_line, thread_line) << calls;
}

TEST_F(LeanStart, AsRootAProcessWritingAFileForEveryEventDoesNotHoldTheCheckBack) {
  // strace writing sbx's trace on a filesystem the run watches writes a line for every read
  // of the event queue, which queues another event: the check after the run reads the events
  // queued when it begins, not the ones such a process keeps adding (it read on until 64 MiB
  // of them, ~25 s here).
  if (!exists("/usr/bin/strace")) GTEST_SKIP() << "strace is not installed (bootstrap-debian.sh)";
  if (::geteuid() != 0) GTEST_SKIP() << "only root may mark a filesystem (CAP_SYS_ADMIN)";
  TempDir work;
  const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/root", "PWD=" + work.path()};
  const auto started = std::chrono::steady_clock::now();
  const RunResult r = run(
      {"/usr/bin/strace", "-f", "-qq", "-e", "trace=read", "-o", work.path() + "/trace", sbx_path(),
       "exec", "--preset", "workspace-write", "--cwd", work.path(), "--", "/bin/true"},
      env);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started)
          .count();
  if (r.code == 125) GTEST_SKIP() << "no backend runs here: " << describe(r);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_LT(seconds, 10) << "the run waited for the writer to stop";
}

TEST_F(LeanStart, TheEarlyVersionAnswerIsTheParsersOwn) {
  // `sbx --version` alone is answered before the parser is built; among other arguments the
  // parser answers. Both print the same line.
  const RunResult early = run({sbx_path(), "--version"}, base_env());
  const RunResult parsed = run({sbx_path(), "--log-level", "warn", "--version"}, base_env());
  ASSERT_EQ(early.code, 0) << describe(early);
  ASSERT_EQ(parsed.code, 0) << describe(parsed);
  EXPECT_EQ(early.out, parsed.out);
  EXPECT_EQ(early.out, std::string("sbx ") + SBX_TEST_VERSION + " (plugin ABI " +
                           std::to_string(SBX_ABI_MAJOR) + "." + std::to_string(SBX_ABI_MINOR) +
                           ")\n");
}

// `sbx backends --json`'s plugin paths.
std::vector<std::string> plugin_paths(const RunResult& r) {
  std::vector<std::string> paths;
  json::error_code ec;
  const json::value doc = json::parse(r.out, ec);
  if (ec || !doc.is_object()) return paths;
  for (const json::value& backend : doc.at("backends").as_array())
    paths.emplace_back(backend.at("path").as_string());
  return paths;
}

TEST_F(LeanStart, TheLayoutComesFromTheRunningFileNotFromArgv0OrALink) {
  const std::string real_dir = installed_plugin_dir() + "/";
  const RunResult plain = run({sbx_path(), "backends", "--json"}, base_env());
  ASSERT_EQ(plain.code, 0) << describe(plain);
  const std::vector<std::string> expected = plugin_paths(plain);
  ASSERT_FALSE(expected.empty()) << describe(plain);
  for (const std::string& path : expected) EXPECT_EQ(path.rfind(real_dir, 0), 0u) << path;

  // argv[0] names another install (with no plugins): it is not where sbx looks.
  TempDir elsewhere;
  fs::create_directories(elsewhere.path() + "/bin");
  fs::create_directories(elsewhere.path() + "/" + install_libdir() + "/sbx/backends");
  const RunResult spoofed = run({"/bin/bash", "-c", "exec -a \"$1\" \"$0\" backends --json",
                                 sbx_path(), elsewhere.path() + "/bin/sbx"},
                                base_env());
  ASSERT_EQ(spoofed.code, 0) << describe(spoofed);
  EXPECT_EQ(plugin_paths(spoofed), expected) << describe(spoofed);

  // A symlink elsewhere leads to the real file, and so to the real install.
  fs::create_symlink(sbx_path(), elsewhere.path() + "/bin/sbx");
  const RunResult linked = run({elsewhere.path() + "/bin/sbx", "backends", "--json"}, base_env());
  ASSERT_EQ(linked.code, 0) << describe(linked);
  EXPECT_EQ(plugin_paths(linked), expected) << describe(linked);
}

// A throwing-probe fixture in a trusted directory under the installed tree: the one built like
// a vendor's plugin (the shared libstdc++) and the one built like the in-tree plugins (its own
// static libstdc++, plugins/CMakeLists.txt).
class PluginExceptions : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    dir_ = installed_prefix() + "/lean-start-fixtures-" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directory(dir_);
    ::chmod(dir_.c_str(), 0755);
    const std::string file = "sbx-backend-" + name() + ".so";
    fs::copy_file(std::string(SBX_LOADER_FIXTURE_DIR) + "/" + file, dir_ + "/" + file);
    ::chmod((dir_ + "/" + file).c_str(), 0644);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static std::string name() { return GetParam(); }
  std::string dir_;
};

TEST_P(PluginExceptions, AThrowingProbeIsReportedWithItsMessage) {
  const RunResult r =
      run({sbx_path(), "--plugin-dir", dir_, "--backends", name(), "backends", "--probe", "--json"},
          base_env());
  ASSERT_EQ(r.code, 0) << describe(r);
  const json::value doc = json::parse(r.out);
  bool found = false;
  for (const json::value& backend : doc.at("backends").as_array()) {
    if (backend.at("name").as_string() != name()) continue;
    found = true;
    EXPECT_FALSE(backend.at("available").as_bool());
    EXPECT_EQ(backend.at("summary").as_string(),
              "probe failed with an exception: fixture probe threw");
  }
  EXPECT_TRUE(found) << describe(r);
}

TEST_P(PluginExceptions, AThrowingTransformFailsTheRunWithItsMessage) {
  // transform() of a third-party plugin runs in a child forked from sbx (call_isolation.cpp),
  // which is sbx's own code: the exception crosses from the plugin's libstdc++ into sbx's and is
  // caught, rethrown and caught again there (exception_text), and its text comes back.
  const RunResult r = run({sbx_path(), "--plugin-dir", dir_, "debug", name(), "--preset",
                           "read-only", "--", "/bin/true"},
                          base_env());
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_NE(r.err.find("backend '" + name() + "' failed in transform: fixture transform threw"),
            std::string::npos)
      << describe(r);
}

TEST_P(PluginExceptions, TheFixtureLinksTheRuntimeItStandsFor) {
  // The control: each fixture really is linked the way its name says.
  const std::string file = dir_ + "/sbx-backend-" + name() + ".so";
  const RunResult r = run({"/usr/bin/readelf", "-d", file}, base_env());
  ASSERT_EQ(r.code, 0) << describe(r);
  const bool shared_cxx = r.out.find("[libstdc++.so") != std::string::npos;
#if SBX_TEST_EXPECT_STATIC_CXX
  EXPECT_EQ(shared_cxx, name() == "fixture-probe-throw") << r.out;
#else
  EXPECT_TRUE(shared_cxx) << r.out;
#endif
}

INSTANTIATE_TEST_SUITE_P(Runtimes, PluginExceptions,
                         ::testing::Values("fixture-probe-throw", "fixture-static-throw"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param) == "fixture-probe-throw"
                                      ? std::string("SharedLibstdcxx")
                                      : std::string("StaticLibstdcxx");
                         });

}  // namespace
