// Resource limits through the installed sbx, on each Linux backend (each skipped, with the
// reason, when its probe says it is unavailable): a bounded fork bomb stops near the process
// limit and leaves nothing behind on the host; a wall-clock timeout ends the command (SIGTERM,
// then SIGKILL for one that ignores it); the command sees its open-files and file-size limits.
// Every run is bounded in time: a timeout in the policy and a cap in every loop.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sbx/core/run_limits.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;
using namespace sbx::test;  // NOLINT: test helpers

// A process that exits while /proc is read makes its entries fail with ENOENT or ESRCH: it is
// gone, which is not an error for a scan that looks for live processes.
bool process_gone(int error) { return error == ENOENT || error == ESRCH; }

bool is_pid(const char* name) {
  if (*name == '\0') return false;
  for (; *name != '\0'; ++name) {
    if (*name < '0' || *name > '9') return false;
  }
  return true;
}

// /proc/<pid>/cmdline, or nullopt when the process is gone. Any other error fails the test.
std::optional<std::string> read_cmdline(const std::string& pid) {
  const std::string path = "/proc/" + pid + "/cmdline";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (!process_gone(errno)) ADD_FAILURE() << "open " << path << ": " << std::strerror(errno);
    return std::nullopt;
  }
  std::string cmdline;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      cmdline.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int error = n < 0 ? errno : 0;
    ::close(fd);
    if (error == 0) return cmdline;
    if (!process_gone(error)) ADD_FAILURE() << "read " << path << ": " << std::strerror(error);
    return std::nullopt;
  }
}

// One pass over /proc counting the processes whose command line is `wanted`. nullopt when the
// listing itself failed because a process vanished under it (the pass is then unreliable).
std::optional<int> count_in_one_pass(const std::string& wanted) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) {
    ADD_FAILURE() << "opendir /proc: " << std::strerror(errno);
    return 0;
  }
  int count = 0;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(proc);
    if (entry == nullptr) break;
    if (!is_pid(entry->d_name)) continue;
    const std::optional<std::string> cmdline = read_cmdline(entry->d_name);
    if (cmdline && *cmdline == wanted) ++count;
  }
  const int error = errno;
  ::closedir(proc);
  if (error == 0) return count;
  if (!process_gone(error)) ADD_FAILURE() << "readdir /proc: " << std::strerror(error);
  return std::nullopt;
}

// Processes on the host whose command line is exactly `argv` (joined by NULs), seen from the
// test, outside any sandbox. Processes that exit during the scan are simply not counted.
int count_host_processes(const std::vector<std::string>& argv) {
  std::string wanted;
  for (const std::string& arg : argv) wanted += arg + '\0';
  constexpr int kPasses = 10;
  for (int pass = 0; pass < kPasses; ++pass) {
    if (const std::optional<int> count = count_in_one_pass(wanted)) return *count;
  }
  ADD_FAILURE() << "/proc could not be listed in " << kPasses << " passes";
  return -1;
}

// How `sbx explain` says the limit `name` holds here for `policy` (empty if not listed).
boost::json::object explained_limit(const std::string& policy, const std::string& name) {
  const RunResult explained = run({sbx_path(), "explain", "--policy", policy, "--json"});
  boost::json::error_code ec;
  const boost::json::value report = boost::json::parse(explained.out, ec);
  if (ec) return {};
  for (const boost::json::value& limit : report.at("limits").as_array()) {
    if (limit.at("name").as_string() == name.c_str()) return limit.as_object();
  }
  return {};
}

std::string text_of(const boost::json::object& object, const char* key) {
  return object.contains(key) && object.at(key).is_string()
             ? std::string(object.at(key).as_string())
             : std::string("(none)");
}

class Limits : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_BACKEND(GetParam());
  }
  void TearDown() override {
    if (!workdir_.empty()) fs::remove(workdir_ + ".policy.json");
  }

  // A policy every Linux backend can enforce (read everywhere, write the working directory, no
  // protected names, which Landlock cannot enforce) with `limits` as its /limits members.
  std::string policy(const std::string& limits) {
    const std::string path = workdir_ + ".policy.json";  // beside the workspace: a --policy
    // file inside a writable root is kept read-only, which Landlock cannot do
    std::ofstream(path) << R"({"version":1,"filesystem":{"kind":"restricted","entries":[
        {"path":":root","access":"read"},{"path":":cwd","access":"write"}],
        "protected_names":[]},"limits":{)"
                        << limits << "}}";
    return path;
  }

  JsonExec under(const std::string& limits, const std::string& script) {
    const std::string file = policy(limits);
    return sbx_exec_json({"--backends", GetParam(), "exec", "--policy", file, "--sandbox",
                          "require", "--json", "--", "/bin/sh", "-c", script},
                         workdir_);
  }

  // A sleep argument unique to this test and backend (ctest may run the variants at once), so
  // the host's processes can be counted from outside.
  std::string marker(const std::string& base) const {
    return base + (GetParam() == "bwrap" ? "1" : "2");
  }

  TempDir work_;
  const std::string workdir_ = work_.path();
};

TEST_P(Limits, ForkBombStopsNearTheProcessLimitAndLeavesNothingOnTheHost) {
  const std::string limits = R"("processes": 200, "timeout_seconds": 60)";
  const boost::json::object how = explained_limit(policy(limits), "processes");
  ASSERT_FALSE(how.empty()) << "sbx explain --json lists no processes limit";
  // Never run the fork bomb where nothing would stop it (root without a cgroup).
  if (!how.at("enforced").as_bool())
    GTEST_SKIP() << "no process limit here: " << text_of(how, "how");
  if (text_of(how, "how").find("cgroup pids.max") == std::string::npos)
    GTEST_SKIP() << "the process limit is RLIMIT_NPROC only here, which counts every process "
                    "of the user and cannot be attributed to the run: "
                 << text_of(how, "how");
  // Up to 10000 sleeping children, each fork counted in a file (echo is a builtin: no fork).
  // dash gives up at the first fork that fails.
  const JsonExec result =
      under(limits, "i=0; while [ $i -lt 10000 ]; do sleep " + marker("314159") +
                        " & i=$((i+1)); echo $i > forks; done");
  EXPECT_EQ(text_of(result.report, "limit_hit"), "processes") << result.run.err;
  EXPECT_NE(result.run.code, 0) << result.run.err;
  std::ifstream in(workdir_ + "/forks");
  int forks = 0;
  in >> forks;
  // bwrap, sbx-stage2 and the shell count too: the bomb stops a few short of 200.
  EXPECT_GE(forks, 150) << result.run.err;
  EXPECT_LE(forks, 200) << result.run.err;
  // The host from outside: no sleeper outlived the run, and the host still forks.
  EXPECT_EQ(count_host_processes({"sleep", marker("314159")}), 0);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0) << "the host cannot fork after the run";
  int status = 0;
  ::waitpid(child, &status, 0);
}

TEST_P(Limits, TimeoutEndsTheCommandWithSigtermAndSaysSo) {
  const auto start = std::chrono::steady_clock::now();
  const JsonExec result =
      under(R"("timeout_seconds": 1, "timeout_grace_seconds": 5)", "exec sleep 100");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(text_of(result.report, "limit_hit"), "timeout") << result.run.err;
  EXPECT_EQ(result.run.code, 128 + SIGTERM) << result.run.err;
  EXPECT_LT(elapsed, std::chrono::seconds(5)) << "SIGTERM should end sleep at once";
}

TEST_P(Limits, TimeoutKillsACommandThatIgnoresSigtermAfterTheGracePeriod) {
  const auto start = std::chrono::steady_clock::now();
  const JsonExec result = under(R"("timeout_seconds": 1, "timeout_grace_seconds": 1)",
                                "trap '' TERM; sleep " + marker("271828") + "; echo survived");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(text_of(result.report, "limit_hit"), "timeout") << result.run.err;
  EXPECT_EQ(result.run.code, 128 + SIGKILL) << result.run.err;
  EXPECT_EQ(result.run.out.find("survived"), std::string::npos);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  // The sleeper (which ignored SIGTERM too) did not outlive the run. Landlock mode without a
  // cgroup relies on the tree being tied to sbx; give the kernel a moment to reap.
  for (int i = 0; i < 100 && count_host_processes({"sleep", marker("271828")}) > 0; ++i)
    ::usleep(20 * 1000);
  EXPECT_EQ(count_host_processes({"sleep", marker("271828")}), 0);
}

TEST_P(Limits, TheCommandSeesItsOpenFilesAndFileSizeLimits) {
  const JsonExec result =
      under(R"("open_files": 64, "file_size_bytes": 4096, "timeout_seconds": 30)",
            "ulimit -n; head -c 10000 /dev/zero > big; echo signalled=$?; "
            "(trap '' XFSZ; exec head -c 10000 /dev/zero > quiet); echo ignored=$?");
  EXPECT_EQ(result.run.code, 0) << result.run.err;
  EXPECT_NE(result.run.out.find("64\n"), std::string::npos) << result.run.out;
  // Past the limit the writer gets SIGXFSZ; with it ignored, write() fails with EFBIG.
  EXPECT_NE(result.run.out.find("signalled=" + std::to_string(128 + SIGXFSZ)), std::string::npos)
      << result.run.out;
  EXPECT_NE(result.run.out.find("ignored=1"), std::string::npos) << result.run.out;
  EXPECT_NE(result.command_stderr.find("File too large"), std::string::npos)
      << result.command_stderr;
  EXPECT_EQ(fs::file_size(workdir_ + "/big"), 4096u);
  EXPECT_EQ(fs::file_size(workdir_ + "/quiet"), 4096u);
  EXPECT_EQ(result.report.at("limit_hit"), nullptr) << "the command itself went on";
}

// Starts sbx in the background (output discarded); the caller reaps it.
pid_t start_sbx(const std::vector<std::string>& args, const std::string& cwd) {
  const std::string sbx = sbx_path();  // outlives the argv that points into it
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 1);
    ::dup2(null, 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    std::vector<char*> argv = {const_cast<char*>(sbx.c_str())};
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(121);
  }
  return pid;
}

TEST_P(Limits, TheNextRunRemovesTheCgroupOfAKilledRunAndWhatStillRunsInIt) {
  const std::string file = policy(R"("timeout_seconds": 60)");
  const RunResult explained = run({sbx_path(), "explain", "--policy", file, "--json"});
  const boost::json::value report = boost::json::parse(explained.out);
  const boost::json::object& cgroups = report.at("cgroups").as_object();
  if (!cgroups.at("available").as_bool())
    GTEST_SKIP() << "no cgroup for sbx here: " << text_of(cgroups, "reason");
  const std::string parent = text_of(cgroups, "parent");
  const pid_t sbx = start_sbx({"--backends", GetParam(), "exec", "--policy", file, "--sandbox",
                               "require", "--", "/bin/sleep", marker("161803")},
                              workdir_);
  ASSERT_GT(sbx, 0);
  for (int i = 0; i < 250 && count_host_processes({"/bin/sleep", marker("161803")}) == 0; ++i)
    ::usleep(20 * 1000);
  ASSERT_EQ(count_host_processes({"/bin/sleep", marker("161803")}), 1)
      << "the command did not start";
  ::kill(sbx, SIGKILL);
  int status = 0;
  ::waitpid(sbx, &status, 0);
  auto leftovers = [&] {
    int count = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(parent)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("run-", 0) == 0 &&
          name.find("-" + std::to_string(sbx) + "-") != std::string::npos)
        ++count;
    }
    return count;
  };
  // (Not checked here that the killed run's cgroup is still there: a run of another test in
  // parallel may already have removed it, which is the behaviour under test.)
  const JsonExec next = under(R"("timeout_seconds": 30)", "true");
  EXPECT_EQ(next.run.code, 0) << next.run.err;
  EXPECT_EQ(leftovers(), 0) << "the next run did not remove the killed run's cgroup";
  for (int i = 0; i < 100 && count_host_processes({"/bin/sleep", marker("161803")}) > 0; ++i)
    ::usleep(20 * 1000);
  EXPECT_EQ(count_host_processes({"/bin/sleep", marker("161803")}), 0);
}

TEST_P(Limits, ACommandKilledByItsFileSizeOrCpuLimitIsReportedAsSuch) {
  const JsonExec big = under(R"("file_size_bytes": 4096, "timeout_seconds": 30)",
                             "exec head -c 10000 /dev/zero > big");
  EXPECT_EQ(big.run.code, 128 + SIGXFSZ) << big.run.err;
  EXPECT_EQ(text_of(big.report, "limit_hit"), "file_size_bytes") << big.run.err;
  const auto start = std::chrono::steady_clock::now();
  const JsonExec busy = under(R"("cpu_seconds": 1, "timeout_seconds": 30)", "while :; do :; done");
  EXPECT_EQ(busy.run.code, 128 + SIGXCPU) << busy.run.err;
  EXPECT_EQ(text_of(busy.report, "limit_hit"), "cpu_seconds") << busy.run.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// The child joins the run's cgroup before its exec (on cgroup v1 through `tasks`, which moves
// one thread): the command and what it starts are all in it, not only the first process.
TEST_P(Limits, EveryProcessOfTheRunIsInTheRunsCgroup) {
  const std::string file = policy(R"("timeout_seconds": 30)");
  const RunResult explained = run({sbx_path(), "explain", "--policy", file, "--json"});
  const boost::json::value report = boost::json::parse(explained.out);
  const boost::json::object& cgroups = report.at("cgroups").as_object();
  if (!cgroups.at("available").as_bool())
    GTEST_SKIP() << "no cgroup for sbx here: " << text_of(cgroups, "reason");
  // The command, its child and its grandchild each write their cgroup lines to a file.
  const JsonExec result = under(R"("timeout_seconds": 30)",
                                "cat /proc/self/cgroup > c0; sh -c 'cat /proc/self/cgroup > c1; "
                                "sh -c \"cat /proc/self/cgroup > c2\"'");
  ASSERT_EQ(result.run.code, 0) << result.run.err;
  const bool v2 = text_of(cgroups, "kind") == "cgroup2";
  for (const char* name : {"c0", "c1", "c2"}) {
    std::ifstream in(workdir_ + "/" + name);
    std::string line;
    bool in_run = false;
    while (std::getline(in, line)) {
      // "0::/..." on v2, "N:pids:/..." on v1; the run's cgroup is sbx.runs/run-<...>.
      const bool hierarchy =
          v2 ? line.rfind("0::", 0) == 0 : line.find(":pids:") != std::string::npos;
      if (hierarchy && line.find("/sbx.runs/run-") != std::string::npos) in_run = true;
    }
    EXPECT_TRUE(in_run) << name << " was written outside the run's cgroup";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Limits, ::testing::Values("bwrap", "landlock"),
                         [](const auto& test_info) { return test_info.param; });

// The child hook moves one thread on cgroup v1, which is the whole process only in a child with
// one thread: a caller that is not its process's leader (a thread calling the hook without
// forking) is refused and stays where it was. In a forked child: were the hook to move it, the
// end of the run would kill it.
TEST(ChildHook, RefusesACallerThatIsNotItsProcesssLeader) {
  if (!probe_cgroups().available)
    GTEST_SKIP() << "no cgroup for sbx here: " << probe_cgroups().reason;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 1;
    std::thread([&code] {
      sbx::Limits limits;
      limits.processes = 50;
      auto run = LimitedRun::start(limits, LimitedRun::Signals::kRunOnly);
      if (!run.ok()) {
        code = 2;
        return;
      }
      std::ifstream before_in("/proc/thread-self/cgroup");
      const std::string before((std::istreambuf_iterator<char>(before_in)), {});
      const int error = (*run)->prepare_child();
      std::ifstream after_in("/proc/thread-self/cgroup");
      const std::string after((std::istreambuf_iterator<char>(after_in)), {});
      code = error == EINVAL && before == after ? 0 : 3;
      (*run)->finish(0);
    }).join();
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed: the hook moved it into the run";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no run started; 3: the hook did not refuse";
}

}  // namespace
}  // namespace sbx
