// The C API's runs (sbx_run_start and friends, sbx/sbx.h) through the installed libsbx
// (dlopen'ed from SBX_TEST_PREFIX, so its plugins and sbx-stage2 are the trusted installed ones)
// and the real bwrap and landlock backends, and core's own spawner (an unsandboxed run):
//  - stdout and stderr captured with a cap: the start of the stream kept, the rest counted and
//    marked as truncated in the report;
//  - a pipe read while the command runs (and a pipe written to its stdin at the same time);
//  - stdin from memory, also more than a pipe holds;
//  - a caller's close-on-exec descriptor handed to the command, /dev/null; a closed stdin stays
//    closed;
//  - names added to and removed from the environment, under the policy's rules (a secret added
//    per call is still taken away);
//  - a time-out and a cancel from another thread end the whole process tree (no process of it
//    is left once sbx_run_wait has returned), reported as timed_out / cancelled;
//  - 8 runs at once on one manager from 8 threads, and two sbx_exec with
//    SBX_EXEC_CAPTURE_STDERR at once.
//  - the embedding program's signals stay its own during a run (its handler runs, its default
//    action happens, sbx_exec included), and go on to the command with SBX_EXEC_FORWARD_SIGNALS.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sbx/sbx.h"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using sbx::test::installed_libsbx;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

// The C API of the installed libsbx, looked up by name.
struct Library {
  void* handle = nullptr;
  decltype(&sbx_manager_new) manager_new = nullptr;
  decltype(&sbx_manager_free) manager_free = nullptr;
  decltype(&sbx_explain) explain = nullptr;
  decltype(&sbx_exec) exec = nullptr;
  decltype(&sbx_run_start) run_start = nullptr;
  decltype(&sbx_run_take_fd) run_take_fd = nullptr;
  decltype(&sbx_run_cancel) run_cancel = nullptr;
  decltype(&sbx_run_wait) run_wait = nullptr;
  decltype(&sbx_run_output) run_output = nullptr;
  decltype(&sbx_run_free) run_free = nullptr;
  decltype(&sbx_string_free) string_free = nullptr;
  decltype(&sbx_error_message) error_message = nullptr;
  decltype(&sbx_error_kind) error_kind = nullptr;
  decltype(&sbx_error_free) error_free = nullptr;
  decltype(&sbx_wrap) wrap = nullptr;
};

template <typename F>
void bind(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
}

// Loaded once for the whole binary: the library stays loaded (its threads are joined, but
// unloading a C++ library with static state mid-process gains nothing for a test).
const Library& library(std::string& why) {
  static Library lib;
  static std::string failure;
  static bool tried = false;
  if (!tried) {
    tried = true;
    const std::string path = installed_libsbx();
    if (path.empty()) {
      failure = "no libsbx.so* under " + std::string(SBX_TEST_PREFIX);
    } else if ((lib.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) == nullptr) {
      failure = std::string("dlopen failed: ") + ::dlerror();
    } else {
      bind(lib.handle, "sbx_manager_new", lib.manager_new);
      bind(lib.handle, "sbx_manager_free", lib.manager_free);
      bind(lib.handle, "sbx_explain", lib.explain);
      bind(lib.handle, "sbx_exec", lib.exec);
      bind(lib.handle, "sbx_run_start", lib.run_start);
      bind(lib.handle, "sbx_run_take_fd", lib.run_take_fd);
      bind(lib.handle, "sbx_run_cancel", lib.run_cancel);
      bind(lib.handle, "sbx_run_wait", lib.run_wait);
      bind(lib.handle, "sbx_run_output", lib.run_output);
      bind(lib.handle, "sbx_run_free", lib.run_free);
      bind(lib.handle, "sbx_string_free", lib.string_free);
      bind(lib.handle, "sbx_error_message", lib.error_message);
      bind(lib.handle, "sbx_error_kind", lib.error_kind);
      bind(lib.handle, "sbx_error_free", lib.error_free);
      bind(lib.handle, "sbx_wrap", lib.wrap);
      if (lib.run_start == nullptr) failure = "the installed libsbx has no sbx_run_start";
    }
  }
  why = failure;
  return lib;
}

// Restricted filesystem (read everywhere, write the cwd), no network; protected_names [] so
// that the landlock backend can express it.
const char* const kPolicy =
    R"({"version": 1, "filesystem": {"kind": "restricted", "protected_names": [],)"
    R"( "entries": [{"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},)"
    R"( "network": {"mode": "restricted"}})";

// A number no other process on the host has in its command line: the processes of one test.
std::string marker() {
  static std::atomic<int> next{0};
  return "86399." + std::to_string(::getpid() % 10000) + std::to_string(100 + next++);
}

// The pids whose command line holds `needle` (e.g. "sleep\0<marker>").
std::vector<std::string> processes_with(const std::string& needle) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find(needle) != std::string::npos) found.push_back(pid);
  }
  return found;
}

// Kills what an unsandboxed run left (core's spawner ends the command it started, not what that
// started: that is left to a cgroup), so that the test leaves nothing behind.
void kill_marked(const std::string& mark) {
  for (const std::string& pid : processes_with("sleep" + std::string(1, '\0') + mark))
    ::kill(std::stoi(pid), SIGKILL);
}

std::string read_until_eof(int fd) {
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

// Reads `fd` until `text` has come (or end of file, or 60 s); what was read.
std::string read_until(int fd, const std::string& text) {
  std::string out;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (out.find(text) == std::string::npos && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buffer[256];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

struct Outcome {
  bool ok = false;
  std::string report_text;
  json::object report;
  std::string error;
  int kind = -1;
  std::string out;  // captured stdout
  std::string err;  // captured stderr
  double seconds = 0;
};

// One test's run: the options, each kept string alive as long as the options.
class Command {
 public:
  explicit Command(std::vector<std::string> argv) : argv_(std::move(argv)) {
    for (const std::string& arg : argv_) c_argv_.push_back(arg.c_str());
    c_argv_.push_back(nullptr);
    options_.struct_size = sizeof options_;
    options_.policy_json = kPolicy;
    options_.argv = c_argv_.data();
  }
  sbx_run_options& options() { return options_; }
  void set_env(std::vector<std::string> set, std::vector<std::string> unset) {
    set_ = std::move(set);
    unset_ = std::move(unset);
    for (const std::string& entry : set_) c_set_.push_back(entry.c_str());
    c_set_.push_back(nullptr);
    for (const std::string& name : unset_) c_unset_.push_back(name.c_str());
    c_unset_.push_back(nullptr);
    options_.env_set = c_set_.data();
    options_.env_unset = c_unset_.data();
  }
  void capture(int which, std::size_t max_bytes = 0) {
    options_.stdio[which].mode = SBX_STDIO_CAPTURE;
    options_.stdio[which].max_bytes = max_bytes;
  }
  void stdin_data(std::string data) {
    data_ = std::move(data);
    options_.stdio[0].mode = SBX_STDIO_DATA;
    options_.stdio[0].data = data_.data();
    options_.stdio[0].length = data_.size();
  }

 private:
  std::vector<std::string> argv_;
  std::vector<const char*> c_argv_;
  std::vector<std::string> set_, unset_;
  std::vector<const char*> c_set_, c_unset_;
  std::string data_;
  sbx_run_options options_{};
};

// The backends, and "none": an unsandboxed run through core's spawner (a manager without
// backends, SBX_EXEC_ALLOW_UNSANDBOXED).
class CApiRun : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    lib_ = &library(why);
    ASSERT_TRUE(why.empty()) << why;
    const bool bare = GetParam() == "none";
    sbx_error* error = nullptr;
    manager_ = lib_->manager_new(bare ? "no-such-backend" : GetParam().c_str(), &error);
    ASSERT_NE(manager_, nullptr) << lib_->error_message(error);
    if (bare) return;
    char* explained = lib_->explain(manager_, kPolicy, dir_.c_str(), nullptr, &error);
    ASSERT_NE(explained, nullptr) << lib_->error_message(error);
    const std::string text = explained;
    lib_->string_free(explained);
    const json::value* available = json::parse(text).as_object().if_contains("available_backend");
    if (available == nullptr || !available->is_string() || available->as_string() != GetParam())
      GTEST_SKIP() << GetParam() << " cannot run the test policy here: " << text;
  }
  void TearDown() override {
    if (manager_ != nullptr) lib_->manager_free(manager_);
  }

  // Starts the run (in dir_, with SBX_EXEC_ALLOW_UNSANDBOXED for "none"); nullptr on failure.
  sbx_run* start(Command& run, std::string* error_text = nullptr, int* kind = nullptr) {
    run.options().cwd = dir_.c_str();
    if (GetParam() == "none") run.options().flags |= SBX_EXEC_ALLOW_UNSANDBOXED;
    sbx_error* error = nullptr;
    sbx_run* handle = lib_->run_start(manager_, &run.options(), &error);
    if (handle == nullptr) {
      if (error_text != nullptr) *error_text = lib_->error_message(error);
      if (kind != nullptr) *kind = lib_->error_kind(error);
      ADD_FAILURE_AT(__FILE__, __LINE__) << "sbx_run_start: " << lib_->error_message(error);
    }
    lib_->error_free(error);
    return handle;
  }

  // Waits, takes the report and the captures, frees the handle.
  Outcome finish(sbx_run* handle, Clock::time_point started = Clock::now()) {
    Outcome outcome;
    sbx_error* error = nullptr;
    char* report = lib_->run_wait(handle, &error);
    outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    outcome.ok = report != nullptr;
    if (report != nullptr) {
      outcome.report_text = report;
      outcome.report = json::parse(outcome.report_text).as_object();
    } else {
      outcome.error = lib_->error_message(error);
      outcome.kind = lib_->error_kind(error);
    }
    lib_->string_free(report);
    lib_->error_free(error);
    std::size_t length = 0;
    if (const char* out = lib_->run_output(handle, 1, &length)) outcome.out.assign(out, length);
    if (const char* err = lib_->run_output(handle, 2, &length)) outcome.err.assign(err, length);
    lib_->run_free(handle);
    return outcome;
  }

  Outcome run_to_end(Command& run) {
    const auto started = Clock::now();
    sbx_run* handle = start(run);
    if (handle == nullptr) return {};
    return finish(handle, started);
  }

  static std::string describe(const Outcome& o) {
    return "report: " + o.report_text + "\nerror: " + o.error + "\nstdout: " + o.out +
           "\nstderr: " + o.err;
  }
  static std::int64_t exit_code(const Outcome& o) {
    const json::value& exit = o.report.at("exit");
    return exit.is_null() ? -1 : exit.as_object().at("shell_code").as_int64();
  }

  const Library* lib_ = nullptr;
  sbx_manager* manager_ = nullptr;
  sbx::test::TempDir work_;
  const std::string dir_ = work_.path();
};

TEST_P(CApiRun, CaptureKeepsTheStartUpToTheCapAndMarksTheRestDropped) {
  Command run({"/bin/sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo oops >&2"});
  run.capture(1, 1000);
  run.capture(2);
  run.options().flags |= SBX_EXEC_CAPTURE_STDERR;
  const Outcome o = run_to_end(run);
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(exit_code(o), 0) << describe(o);
  EXPECT_EQ(o.out, std::string(1000, 'x'));
  const json::object& out = o.report.at("stdout_capture").as_object();
  EXPECT_EQ(out.at("bytes").as_int64(), 1000);
  EXPECT_EQ(out.at("dropped_bytes").as_int64(), 299000);
  EXPECT_TRUE(out.at("truncated").as_bool());
  EXPECT_EQ(o.err, "oops\n");
  const json::object& err = o.report.at("stderr_capture").as_object();
  EXPECT_EQ(err.at("bytes").as_int64(), 5);
  EXPECT_FALSE(err.at("truncated").as_bool());
  EXPECT_EQ(o.report.at("stderr_tail").as_string(), "oops\n");
  EXPECT_TRUE(o.report.at("error").is_null()) << describe(o);
}

TEST_P(CApiRun, APipeIsReadWhileTheCommandRunsAndItsStdinIsAPipeToo) {
  Command run({"/bin/sh", "-c", "echo first; read line; echo \"got $line\""});
  run.options().stdio[0].mode = SBX_STDIO_PIPE;
  run.options().stdio[1].mode = SBX_STDIO_PIPE;
  sbx_run* handle = start(run);
  ASSERT_NE(handle, nullptr);
  const int in = lib_->run_take_fd(handle, 0);
  const int out = lib_->run_take_fd(handle, 1);
  ASSERT_GE(in, 0);
  ASSERT_GE(out, 0);
  EXPECT_EQ(lib_->run_take_fd(handle, 1), -1) << "handed over once";
  EXPECT_EQ(lib_->run_take_fd(handle, 2), -1) << "stderr is not a pipe";
  // The command waits for its stdin: "first" can only have come while it runs.
  EXPECT_EQ(read_until(out, "first\n"), "first\n");
  ASSERT_EQ(::write(in, "hello\n", 6), 6);
  ::close(in);
  const std::string rest = read_until_eof(out);  // end of file once the run has ended
  ::close(out);
  EXPECT_EQ(rest, "got hello\n");
  const Outcome o = finish(handle);
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(exit_code(o), 0) << describe(o);
  EXPECT_TRUE(o.report.at("stdout_capture").is_null());
}

TEST_P(CApiRun, StdinDataIsWrittenWholeEvenBeyondAPipesBuffer) {
  Command small({"/bin/cat"});
  small.stdin_data("alpha\nbeta\n");
  small.capture(1);
  const Outcome a = run_to_end(small);
  ASSERT_TRUE(a.ok) << describe(a);
  EXPECT_EQ(a.out, "alpha\nbeta\n");
  Command large({"/usr/bin/wc", "-c"});
  large.stdin_data(std::string(1 << 20, 'y'));  // 16 times a default pipe buffer
  large.capture(1);
  const Outcome b = run_to_end(large);
  ASSERT_TRUE(b.ok) << describe(b);
  EXPECT_EQ(b.out, "1048576\n");
  // A command that never reads its stdin: the rest is dropped, the run ends normally.
  Command ignoring({"/bin/true"});
  ignoring.stdin_data(std::string(1 << 20, 'z'));
  const Outcome c = run_to_end(ignoring);
  ASSERT_TRUE(c.ok) << describe(c);
  EXPECT_EQ(exit_code(c), 0);
}

TEST_P(CApiRun, ACallersCloseOnExecDescriptorAndNullAreHandedOver) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  Command run({"/bin/sh", "-c", "cat; echo via-fd"});
  run.options().stdio[0].mode = SBX_STDIO_NULL;
  run.options().stdio[1].mode = SBX_STDIO_FD;
  run.options().stdio[1].fd = fds[1];
  const Outcome o = run_to_end(run);
  ::close(fds[1]);
  const std::string text = read_until_eof(fds[0]);
  ::close(fds[0]);
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(exit_code(o), 0) << describe(o);
  EXPECT_EQ(text, "via-fd\n");
}

// This process's stdin closed: the command has none either, and none of sbx's own descriptors
// (a capture's pipe, the launcher's) takes its place, whatever number they get here.
TEST_P(CApiRun, AClosedStdinStaysClosedForTheCommand) {
  // Made while 0 is open, so that they are not there themselves.
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const int saved = ::fcntl(0, F_DUPFD_CLOEXEC, 10);
  ASSERT_GE(saved, 0);
  ::close(0);
  Command run({"/bin/sh", "-c", "if [ -e /proc/self/fd/0 ]; then echo open; else echo closed; fi"});
  run.capture(1);
  const Outcome o = run_to_end(run);
  // sbx_exec: no pipe or timer of the run's takes 0 first; the launcher's own descriptors (its
  // report pipe, the Landlock ruleset, ...) would, and are moved up. Its stdout is this
  // process's, for a moment a pipe.
  const int saved_out = ::fcntl(1, F_DUPFD_CLOEXEC, 10);
  ASSERT_EQ(::dup2(out[1], 1), 1);
  ::close(out[1]);
  const char* argv[] = {"/bin/sh", "-c",
                        "if [ -e /proc/self/fd/0 ]; then echo open; else echo closed; fi", nullptr};
  const unsigned flags = GetParam() == "none" ? SBX_EXEC_ALLOW_UNSANDBOXED : 0;
  sbx_error* error = nullptr;
  char* report = lib_->exec(manager_, kPolicy, dir_.c_str(), argv, nullptr, flags, &error);
  ASSERT_EQ(::dup2(saved_out, 1), 1);
  ::close(saved_out);
  ASSERT_EQ(::dup2(saved, 0), 0);
  ::close(saved);
  const std::string exec_out = read_until_eof(out[0]);
  ::close(out[0]);
  const std::string exec_report = report != nullptr ? report : lib_->error_message(error);
  lib_->string_free(report);
  lib_->error_free(error);
  EXPECT_EQ(exec_out, "closed\n") << exec_report;
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(exit_code(o), 0) << describe(o);
  EXPECT_EQ(o.out, "closed\n") << describe(o);
}

// This process's stdin closed before the manager loads its plugins: the descriptor a plugin
// keeps for its life must not take number 0, or every later run would hand the plugin's file
// to its command as stdin (found by the lead's review, session 20: the CLI's command got
// sbx-backend-bwrap.so). The command has no stdin, and 0 is closed again once libsbx returns.
TEST_P(CApiRun, AStdinClosedWhilePluginsLoadStaysClosedForTheCommand) {
  const bool bare = GetParam() == "none";
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const int saved = ::fcntl(0, F_DUPFD_CLOEXEC, 10);
  ASSERT_GE(saved, 0);
  ::close(0);
  sbx_error* error = nullptr;
  sbx_manager* manager = lib_->manager_new(bare ? "no-such-backend" : GetParam().c_str(), &error);
  const bool closed_after_load = ::fcntl(0, F_GETFD) == -1;
  std::string exec_out;
  std::string exec_report;
  if (manager != nullptr) {
    const int saved_out = ::fcntl(1, F_DUPFD_CLOEXEC, 10);
    ::dup2(out[1], 1);
    const char* argv[] = {"/bin/sh", "-c",
                          "if [ -e /proc/self/fd/0 ]; then readlink /proc/self/fd/0; else echo "
                          "closed; fi",
                          nullptr};
    const unsigned flags = bare ? SBX_EXEC_ALLOW_UNSANDBOXED : 0;
    char* report = lib_->exec(manager, kPolicy, dir_.c_str(), argv, nullptr, flags, &error);
    ::dup2(saved_out, 1);
    ::close(saved_out);
    exec_report = report != nullptr ? report : lib_->error_message(error);
    lib_->string_free(report);
    lib_->manager_free(manager);
  } else {
    exec_report = lib_->error_message(error);
  }
  const bool closed_after_run = ::fcntl(0, F_GETFD) == -1;
  ASSERT_EQ(::dup2(saved, 0), 0);
  ::close(saved);
  ::close(out[1]);
  exec_out = read_until_eof(out[0]);
  ::close(out[0]);
  lib_->error_free(error);
  ASSERT_NE(manager, nullptr) << exec_report;
  EXPECT_EQ(exec_out, "closed\n") << exec_report;
  EXPECT_TRUE(closed_after_load) << "libsbx left a descriptor at 0 after loading its plugins";
  EXPECT_TRUE(closed_after_run) << "libsbx left a descriptor at 0 after the run";
}

TEST_P(CApiRun, EnvironmentNamesAreAddedAndRemovedUnderThePolicysRules) {
  ::setenv("SBX_RUN_TEST_REMOVED", "1", 1);
  ::setenv("SBX_RUN_TEST_REPLACED", "old", 1);
  Command run({"/bin/sh", "-c",
               "echo \"a=${SBX_RUN_TEST_ADDED-none} r=${SBX_RUN_TEST_REMOVED-none} "
               "p=${SBX_RUN_TEST_REPLACED-none} t=${SBX_RUN_TEST_TOKEN-none}\""});
  // The token is a secret by name: the policy's default filter takes it away, per call or not.
  run.set_env({"SBX_RUN_TEST_ADDED=yes", "SBX_RUN_TEST_REPLACED=new", "SBX_RUN_TEST_TOKEN=hunter2"},
              {"SBX_RUN_TEST_REMOVED"});
  run.capture(1);
  const Outcome o = run_to_end(run);
  ::unsetenv("SBX_RUN_TEST_REMOVED");
  ::unsetenv("SBX_RUN_TEST_REPLACED");
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(o.out, "a=yes r=none p=new t=none\n") << describe(o);
  // A malformed entry is the caller's error, before anything runs.
  Command bad({"/bin/true"});
  bad.set_env({"NOEQUALS"}, {});
  bad.options().cwd = dir_.c_str();
  sbx_error* error = nullptr;
  EXPECT_EQ(lib_->run_start(manager_, &bad.options(), &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(lib_->error_kind(error), SBX_ERROR_INVALID_INPUT);
  EXPECT_NE(std::string(lib_->error_message(error)).find("NAME=VALUE"), std::string::npos);
  lib_->error_free(error);
}

TEST_P(CApiRun, ATimeOutEndsTheWholeProcessTree) {
  const std::string mark = marker();
  Command run(
      {"/bin/sh", "-c", "sleep " + mark + " & (sleep " + mark + " &); sleep " + mark + "; wait"});
  run.options().timeout_ms = 1500;
  run.capture(1);
  const Outcome o = run_to_end(run);
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(o.report.at("error_kind").as_string(), "timed_out") << describe(o);
  EXPECT_NE(o.report.at("error").as_string().find("timed out after 1500 ms"), std::string::npos);
  EXPECT_FALSE(o.report.at("exit").is_null()) << "the command ran: " << describe(o);
  // Ended by sbx's SIGKILL: reported as that signal, never as a folded exit code 137.
  if (!o.report.at("exit").is_null()) {
    EXPECT_TRUE(o.report.at("exit").at("code").is_null()) << describe(o);
    EXPECT_EQ(o.report.at("exit").at("signal"), 9) << describe(o);
  }
  EXPECT_LT(o.seconds, 30.0);
  if (GetParam() == "none") {
    // Core's spawner ends the command itself; what it started is left to a cgroup.
    kill_marked(mark);
    return;
  }
  EXPECT_EQ(processes_with("sleep" + std::string(1, '\0') + mark), std::vector<std::string>{})
      << "a process of the run survived it";
}

TEST_P(CApiRun, ACancelFromAnotherThreadEndsTheRun) {
  const std::string mark = marker();
  Command run({"/bin/sh", "-c", "sleep " + mark + " & echo ready; sleep " + mark + "; wait"});
  run.options().stdio[1].mode = SBX_STDIO_PIPE;
  const auto started = Clock::now();
  sbx_run* handle = start(run);
  ASSERT_NE(handle, nullptr);
  const int out = lib_->run_take_fd(handle, 1);
  ASSERT_GE(out, 0);
  std::string seen;
  std::thread canceller([&] {
    seen = read_until(out, "ready\n");
    lib_->run_cancel(handle);
    lib_->run_cancel(handle);  // any number of times
  });
  const Outcome o = finish(handle, started);
  canceller.join();
  EXPECT_EQ(read_until_eof(out), "") << "end of file once the run has ended";
  ::close(out);
  EXPECT_EQ(seen, "ready\n");
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(o.report.at("error_kind").as_string(), "cancelled") << describe(o);
  // Ended by sbx's SIGKILL: reported as that signal, never as a folded exit code 137.
  ASSERT_FALSE(o.report.at("exit").is_null()) << "the command ran: " << describe(o);
  EXPECT_TRUE(o.report.at("exit").at("code").is_null()) << describe(o);
  EXPECT_EQ(o.report.at("exit").at("signal"), 9) << describe(o);
  EXPECT_LT(o.seconds, 30.0);
  if (GetParam() != "none") {
    EXPECT_EQ(processes_with("sleep" + std::string(1, '\0') + mark), std::vector<std::string>{})
        << "a process of the run survived it";
  }
  kill_marked(mark);
}

TEST_P(CApiRun, ACancelBeforeTheCommandStartsRunsNothing) {
  const std::string file = dir_ + "/ran";
  Command run({"/bin/sh", "-c", "touch " + file});
  sbx_run* handle = start(run);
  ASSERT_NE(handle, nullptr);
  lib_->run_cancel(handle);
  const Outcome o = finish(handle);
  ASSERT_TRUE(o.ok) << describe(o);
  EXPECT_EQ(o.report.at("error_kind").as_string(), "cancelled") << describe(o);
  // Planning may have been done already; the command itself starts only if the cancel came
  // after it was running, which the report then says (exit set).
  if (o.report.at("exit").is_null()) {
    EXPECT_FALSE(fs::exists(file));
  }
}

TEST_P(CApiRun, EightRunsAtOnceOnOneManager) {
  constexpr int kRuns = 8;
  std::vector<Outcome> outcomes(kRuns);
  std::vector<std::thread> threads;
  const auto started = Clock::now();
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([this, i, &outcomes] {
      Command run({"/bin/sh", "-c", "echo run-" + std::to_string(i) + "; sleep 2; echo done >&2"});
      run.capture(1);
      run.capture(2);
      outcomes[static_cast<std::size_t>(i)] = run_to_end(run);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  for (int i = 0; i < kRuns; ++i) {
    const Outcome& o = outcomes[static_cast<std::size_t>(i)];
    ASSERT_TRUE(o.ok) << i << ": " << describe(o);
    EXPECT_EQ(exit_code(o), 0) << describe(o);
    EXPECT_EQ(o.out, "run-" + std::to_string(i) + "\n");
    EXPECT_EQ(o.err, "done\n");
  }
  // One after the other they would take 16 s and more.
  EXPECT_LT(seconds, 12.0) << "the runs did not go on side by side";
}

TEST_P(CApiRun, TwoExecsWithCaptureStderrAtOnce) {
  std::vector<std::string> tails(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([this, i, &tails, &errors] {
      const std::string script = "echo tail-" + std::to_string(i) + " >&2; sleep 1";
      const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
      unsigned flags = SBX_EXEC_CAPTURE_STDERR;
      if (GetParam() == "none") flags |= SBX_EXEC_ALLOW_UNSANDBOXED;
      sbx_error* error = nullptr;
      char* report = lib_->exec(manager_, kPolicy, dir_.c_str(), argv, nullptr, flags, &error);
      if (report == nullptr) {
        errors[static_cast<std::size_t>(i)] = lib_->error_message(error);
      } else {
        const json::value& tail = json::parse(report).as_object().at("stderr_tail");
        if (tail.is_string()) tails[static_cast<std::size_t>(i)] = tail.as_string().c_str();
      }
      lib_->string_free(report);
      lib_->error_free(error);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(errors[static_cast<std::size_t>(i)], "");
    EXPECT_EQ(tails[static_cast<std::size_t>(i)], "tail-" + std::to_string(i) + "\n");
  }
}

TEST_P(CApiRun, BadOptionsAreTheCallersErrors) {
  struct Case {
    const char* what;
    void (*edit)(sbx_run_options&);
  };
  const Case cases[] = {
      {"struct_size", [](sbx_run_options& o) { o.struct_size = 8; }},
      {"stdin cannot be captured", [](sbx_run_options& o) { o.stdio[0].mode = SBX_STDIO_CAPTURE; }},
      {"cannot be given data", [](sbx_run_options& o) { o.stdio[1].mode = SBX_STDIO_DATA; }},
      {"is not open",
       [](sbx_run_options& o) {
         o.stdio[2].mode = SBX_STDIO_FD;
         o.stdio[2].fd = 9999;
       }},
      {"not a sbx_stdio_mode_t", [](sbx_run_options& o) { o.stdio[1].mode = 42; }},
  };
  for (const Case& c : cases) {
    Command run({"/bin/true"});
    run.options().cwd = dir_.c_str();
    c.edit(run.options());
    sbx_error* error = nullptr;
    EXPECT_EQ(lib_->run_start(manager_, &run.options(), &error), nullptr) << c.what;
    ASSERT_NE(error, nullptr) << c.what;
    EXPECT_EQ(lib_->error_kind(error), SBX_ERROR_INVALID_INPUT) << c.what;
    EXPECT_NE(std::string(lib_->error_message(error)).find(c.what), std::string::npos)
        << lib_->error_message(error);
    lib_->error_free(error);
  }
  sbx_error* error = nullptr;
  EXPECT_EQ(lib_->run_start(manager_, nullptr, &error), nullptr);
  lib_->error_free(error);
  EXPECT_EQ(lib_->run_cancel(nullptr), -1);
  EXPECT_EQ(lib_->run_take_fd(nullptr, 1), -1);
  lib_->run_free(nullptr);
}

// ---------------------------------------------------------------------------------------------
// The embedding process's signals (issue #33 A). Each test forks the embedding program: the
// library is loaded and the manager made here, the run and the signal happen in the child, which
// says what went wrong on a pipe (nothing: it held) and is killed if it takes longer than
// kChildSeconds. A signal is raised with kill(getpid()): process-directed, as a Ctrl-C or a
// supervisor's SIGTERM is.

constexpr int kChildSeconds = 90;
volatile sig_atomic_t g_caught = 0;
void note_signal(int /*sig*/) { g_caught = g_caught + 1; }

struct ChildEnd {
  int status = 0;       // the child's wait status
  std::string failure;  // what it wrote: empty when every check held
};

ChildEnd in_child(const std::function<std::string()>& body) {
  ChildEnd end;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    end.failure = "pipe2 failed";
    return end;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string failure = body();
    (void)!::write(fds[1], failure.data(), failure.size());
    ::_exit(failure.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  const auto deadline = Clock::now() + std::chrono::seconds(kChildSeconds);
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      end.failure +=
          " (the embedding program was killed after " + std::to_string(kChildSeconds) + " s)";
      break;
    }
    if (::poll(&p, 1, 200) <= 0) continue;
    char buffer[512];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    end.failure.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  while (::waitpid(pid, &end.status, 0) < 0 && errno == EINTR) {
  }
  return end;
}

// Waits up to `ms` until processes with `needle` in their command line exist (`present`) or
// are all gone.
bool await_processes(const std::string& needle, bool present, int ms) {
  for (int waited = 0; waited <= ms; waited += 20) {
    if (processes_with(needle).empty() != present) return true;
    ::usleep(20000);
  }
  return false;
}

// Waits up to `ms` until `sleep MARK` itself runs: a process named sleep (bwrap's own command
// line names the command too, and so does the sandbox's first process before its execve).
bool await_sleeping(const std::string& mark, int ms) {
  for (int waited = 0; waited <= ms; waited += 20) {
    for (const std::string& pid : processes_with("sleep" + std::string(1, '\0') + mark)) {
      std::ifstream comm("/proc/" + pid + "/comm");
      std::string name;
      if (std::getline(comm, name) && name == "sleep") return true;
    }
    ::usleep(20000);
  }
  return false;
}

// Waits up to `ms` for g_caught, sleeping in steps (a handler ends a step early).
bool await_caught(int ms) {
  for (int waited = 0; waited <= ms && g_caught == 0; waited += 10) ::usleep(10000);
  return g_caught != 0;
}

std::string sleep_needle(const std::string& mark) { return "sleep" + std::string(1, '\0') + mark; }

// The child's run_start (no gtest assertions in the child: its failure is what it returns).
sbx_run* start_in_child(const Library& lib, sbx_manager* manager, Command& run,
                        std::string& failure) {
  sbx_error* error = nullptr;
  sbx_run* handle = lib.run_start(manager, &run.options(), &error);
  if (handle == nullptr) failure = std::string("sbx_run_start: ") + lib.error_message(error);
  lib.error_free(error);
  return handle;
}

std::string report_of(const Library& lib, sbx_run* handle, json::object& report) {
  sbx_error* error = nullptr;
  char* text = lib.run_wait(handle, &error);
  std::string failure;
  if (text == nullptr) {
    failure = std::string("sbx_run_wait: ") + lib.error_message(error);
  } else {
    report = json::parse(text).as_object();
  }
  lib.string_free(text);
  lib.error_free(error);
  lib.run_free(handle);
  return failure;
}

// A Ctrl-C on the agent reaches the agent: its own SIGINT handler runs, promptly, while the
// command goes on; the agent then ends the run itself (cancel). Before issue #33, core's spawner
// replaced the handler with its forwarding for the whole run (the agent never saw the signal and
// the command got it), and the sandboxes' signalfds could take it from the agent's threads.
TEST_P(CApiRun, TheEmbeddingProgramsOwnSigintHandlerRunsAndTheRunGoesOn) {
  const std::string mark = marker();
  Command run({"sleep", mark});
  run.options().cwd = dir_.c_str();
  if (GetParam() == "none") run.options().flags |= SBX_EXEC_ALLOW_UNSANDBOXED;
  const ChildEnd end = in_child([&]() -> std::string {
    struct sigaction action {};
    action.sa_handler = note_signal;
    sigemptyset(&action.sa_mask);
    if (::sigaction(SIGINT, &action, nullptr) != 0) return "sigaction failed";
    std::string failure;
    sbx_run* handle = start_in_child(*lib_, manager_, run, failure);
    if (handle == nullptr) return failure;
    if (!await_sleeping(mark, 30000)) failure = "the command never started";
    if (failure.empty()) {
      ::kill(::getpid(), SIGINT);
      if (!await_caught(2000)) {
        failure = "the program's own SIGINT handler did not run within 2 s of its SIGINT";
      } else if (::usleep(300000), processes_with(sleep_needle(mark)).empty()) {
        failure = "the command ended after the program's SIGINT: the run passed it on";
      }
    }
    lib_->run_cancel(handle);
    json::object report;
    const std::string waited = report_of(*lib_, handle, report);
    if (!failure.empty()) return failure;
    if (!waited.empty()) return waited;
    if (report.at("error_kind") != "cancelled")
      return "the run did not end by the cancel: " + json::serialize(report);
    return {};
  });
  kill_marked(mark);
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0)
      << "status " << end.status << ": " << end.failure;
}

// The embedding program's default action still happens: a SIGTERM it has no handler for ends
// it during a run, as without one. The sandbox's tree ends with it (bwrap's --die-with-parent,
// the Landlock supervisor's parent-death signal): nothing of the command is left running.
TEST_P(CApiRun, TheEmbeddingProgramsDefaultActionStillEndsIt) {
  const std::string mark = marker();
  Command run({"sleep", mark});
  run.options().cwd = dir_.c_str();
  if (GetParam() == "none") run.options().flags |= SBX_EXEC_ALLOW_UNSANDBOXED;
  const ChildEnd end = in_child([&]() -> std::string {
    std::string failure;
    sbx_run* handle = start_in_child(*lib_, manager_, run, failure);
    if (handle == nullptr) return failure;
    if (!await_sleeping(mark, 30000)) return "the command never started";
    ::kill(::getpid(), SIGTERM);
    ::usleep(5000000);
    return "the program survived its SIGTERM (SIG_DFL) for 5 s: the run took the signal";
  });
  EXPECT_TRUE(WIFSIGNALED(end.status) && WTERMSIG(end.status) == SIGTERM)
      << "status " << end.status << ": " << end.failure;
  if (GetParam() != "none") {
    EXPECT_TRUE(await_processes(sleep_needle(mark), false, 20000))
        << "the sandboxed command outlived the program that ran it";
  }
  kill_marked(mark);
}

// sbx_exec (the run on the calling thread) leaves the signals alone too: the program's handler
// runs while a command started on another of its threads goes on and ends by itself.
TEST_P(CApiRun, SbxExecLeavesTheEmbeddingProgramsSignalsAlone) {
  const std::string mark = "3." + marker().substr(6);
  const std::vector<std::string> argv = {"sleep", mark};
  const ChildEnd end = in_child([&]() -> std::string {
    struct sigaction action {};
    action.sa_handler = note_signal;
    sigemptyset(&action.sa_mask);
    if (::sigaction(SIGINT, &action, nullptr) != 0) return "sigaction failed";
    std::atomic<bool> done{false};
    std::string report_text;
    std::thread runner([&] {
      const char* c_argv[] = {argv[0].c_str(), argv[1].c_str(), nullptr};
      sbx_error* error = nullptr;
      char* report =
          lib_->exec(manager_, kPolicy, dir_.c_str(), c_argv, nullptr,
                     GetParam() == "none" ? unsigned{SBX_EXEC_ALLOW_UNSANDBOXED} : 0u, &error);
      report_text = report != nullptr ? report : lib_->error_message(error);
      lib_->string_free(report);
      lib_->error_free(error);
      done = true;
    });
    std::string failure;
    if (!await_sleeping(mark, 30000)) failure = "the command never started";
    if (failure.empty()) {
      ::kill(::getpid(), SIGINT);
      if (!await_caught(1500))
        failure = "the program's own SIGINT handler did not run within 1.5 s of its SIGINT";
      else if (done)
        failure = "sbx_exec had returned when the handler ran: " + report_text;
    }
    runner.join();
    if (!failure.empty()) return failure;
    const json::value report = json::parse(report_text);
    if (!report.is_object() || report.at("exit") != json::parse(R"({"code":0,"signal":null,
        "shell_code":0})"))
      return "the command did not end by itself: " + report_text;
    return {};
  });
  kill_marked(mark);
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0)
      << "status " << end.status << ": " << end.failure;
}

// SBX_EXEC_FORWARD_SIGNALS: a program that is only a wrapper around the command asks for its
// signals to go on to it (blocking them on its own threads, sbx.h), as `sbx exec` does.
TEST_P(CApiRun, WithForwardSignalsTheCommandGetsTheProgramsSignals) {
  const std::string mark = marker();
  Command run({"sleep", mark});
  run.options().cwd = dir_.c_str();
  run.options().flags |= SBX_EXEC_FORWARD_SIGNALS;
  if (GetParam() == "none") run.options().flags |= SBX_EXEC_ALLOW_UNSANDBOXED;
  const ChildEnd end = in_child([&]() -> std::string {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    if (::pthread_sigmask(SIG_BLOCK, &term, nullptr) != 0) return "pthread_sigmask failed";
    std::string failure;
    sbx_run* handle = start_in_child(*lib_, manager_, run, failure);
    if (handle == nullptr) return failure;
    if (!await_sleeping(mark, 30000)) {
      lib_->run_cancel(handle);
      failure = "the command never started";
    } else {
      ::kill(::getpid(), SIGTERM);
    }
    json::object report;
    const std::string waited = report_of(*lib_, handle, report);
    if (!failure.empty()) return failure;
    if (!waited.empty()) return waited;
    if (!report.at("error").is_null() || report.at("exit").is_null() ||
        report.at("exit").at("shell_code") != 128 + SIGTERM)
      return "the command did not end by the forwarded SIGTERM: " + json::serialize(report);
    return {};
  });
  kill_marked(mark);
  EXPECT_TRUE(WIFEXITED(end.status) && WEXITSTATUS(end.status) == 0)
      << "status " << end.status << ": " << end.failure;
}

// Reads `fd` to its end.
std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

// Issue #33 point 3: sbx_wrap gives a caller that spawns processes itself a command line
// through the installed `sbx exec`: the policy read from descriptor 3 (a pipe), the report
// written to descriptor 4, the command's stdio the spawned process's own. Spawned here by hand
// as such a caller would: the policy holds (a write outside the cwd fails), the report arrives.
TEST(CApiWrap, TheWrappedCommandRunsUnderThePolicyAndReportsOnItsDescriptor) {
  std::string why;
  const Library& lib = library(why);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_NE(lib.wrap, nullptr) << "the installed libsbx has no sbx_wrap";
  const sbx::test::TempDir dir;
  const std::string outside = std::string(SBX_TEST_PREFIX) + "/wrap-outside-" + marker();
  const std::string script = "echo out; touch inside; touch " + outside + " || echo refused >&2";
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  sbx_error* error = nullptr;
  char* text = lib.wrap(kPolicy, dir.path().c_str(), argv, &error);
  ASSERT_NE(text, nullptr) << (error ? lib.error_message(error) : "");
  const json::object wrapped = json::parse(text).as_object();
  lib.string_free(text);
  EXPECT_EQ(wrapped.at("policy_fd").as_int64(), 3);
  EXPECT_EQ(wrapped.at("report_fd").as_int64(), 4);
  std::vector<std::string> words;
  for (const json::value& word : wrapped.at("argv").as_array())
    words.emplace_back(word.as_string().c_str());
  ASSERT_GE(words.size(), 2u);
  EXPECT_EQ(words[0], std::string(SBX_TEST_PREFIX) + "/bin/sbx");
  EXPECT_EQ(words[1], "exec");
  const std::string policy(wrapped.at("policy").as_string().c_str());

  int policy_pipe[2], report_pipe[2], out_pipe[2];
  ASSERT_EQ(::pipe2(policy_pipe, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(report_pipe, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  std::vector<char*> c_argv;
  for (std::string& word : words) c_argv.push_back(word.data());
  c_argv.push_back(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // dup2 clears close-on-exec on the copies: exactly 0-4 reach sbx.
    if (::dup2(out_pipe[1], 1) < 0 || ::dup2(policy_pipe[0], 3) < 0 ||
        ::dup2(report_pipe[1], 4) < 0)
      ::_exit(90);
    ::execv(c_argv[0], c_argv.data());
    ::_exit(91);
  }
  ::close(policy_pipe[0]);
  ::close(report_pipe[1]);
  ::close(out_pipe[1]);
  ASSERT_EQ(::write(policy_pipe[1], policy.data(), policy.size()),
            static_cast<ssize_t>(policy.size()));
  ::close(policy_pipe[1]);
  const std::string out = read_all(out_pipe[0]);
  const std::string report_text = read_all(report_pipe[0]);
  ::close(out_pipe[0]);
  ::close(report_pipe[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(out, "out\n");
  EXPECT_TRUE(fs::exists(dir.path() + "/inside"));
  EXPECT_FALSE(fs::exists(outside)) << "the policy did not hold";
  const json::object report = json::parse(report_text).as_object();
  EXPECT_TRUE(report.at("should_sandbox").as_bool()) << report_text;
  EXPECT_EQ(report.at("exit").at("code").as_int64(), 0) << report_text;

  // Bad input: an error, no command line.
  const char* empty[] = {nullptr};
  error = nullptr;
  EXPECT_EQ(lib.wrap(kPolicy, nullptr, empty, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(lib.error_kind(error), SBX_ERROR_INVALID_INPUT);
  lib.error_free(error);
  error = nullptr;
  EXPECT_EQ(lib.wrap("{\"version\": 2}", nullptr, argv, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(lib.error_kind(error), SBX_ERROR_INVALID_INPUT);
  lib.error_free(error);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiRun, ::testing::Values("bwrap", "landlock", "none"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
