// Other processes are out of reach (issue #32, 6a): a sandboxed command tries, through the
// installed `sbx --backends <backend> exec`, the calls that change another process — a CPU
// limit of (1, 1) that gets it SIGKILLed, RLIMIT_CORE unlimited with a CPU soft limit that makes
// it dump core into its working directory, its nice value, I/O priority, CPU affinity and
// scheduling policy — on a real victim outside the sandbox, owned by the same user and burning
// CPU. Afterwards, from outside: the victim is alive, every one of those properties is unchanged
// and no core file appeared. The same calls on the command itself (pid 0) still work.
//
// Under Landlock (no pid namespace) the pid scope filter refuses them (linux/seccomp/
// pid_scope_filter.hpp); under bwrap the victim has no pid in the sandbox's namespace. Each case
// runs as root and as user 65534 (skipped with the reason where that user cannot run the
// backend or reach the probe), under bwrap by both launch paths (direct, and sbx-stage2 as
// PID 1).
#include <grp.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/process.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr uid_t kNobody = 65534;
constexpr int kIoprioWhoProcess = 1;

std::string pid_probe() { return SBX_PID_PROBE; }

// What the victim's owner could change about it, read from outside.
struct Snapshot {
  std::string cpu_limit;   // /proc/PID/limits "Max cpu time" line
  std::string core_limit;  // "Max core file size"
  std::string nice;        // field 19 of /proc/PID/stat
  std::string affinity;    // sched_getaffinity as a bit string
  int policy = -1;         // sched_getscheduler
  long ioprio = -1;        // ioprio_get(IOPRIO_WHO_PROCESS)

  bool operator==(const Snapshot&) const = default;
};

std::string limits_line(const std::string& limits, const std::string& name) {
  std::istringstream in(limits);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name, 0) == 0) return line;
  return "(missing " + name + ")";
}

std::string stat_field(pid_t pid, int field) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  // Fields after the command name (which may hold spaces) start after the last ')'.
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string value;
  for (int i = 3; i <= field && in >> value; ++i) {
  }
  return value;
}

Snapshot snapshot(pid_t pid) {
  Snapshot s;
  const std::string limits = read_file("/proc/" + std::to_string(pid) + "/limits");
  s.cpu_limit = limits_line(limits, "Max cpu time");
  s.core_limit = limits_line(limits, "Max core file size");
  s.nice = stat_field(pid, 19);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(pid, sizeof set, &set) == 0)
    for (std::size_t cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      s.affinity += CPU_ISSET(cpu, &set) ? '1' : '0';
  s.policy = ::sched_getscheduler(pid);
  s.ioprio = ::syscall(SYS_ioprio_get, kIoprioWhoProcess, pid);
  return s;
}

std::string describe(const Snapshot& s) {
  return s.cpu_limit + " | " + s.core_limit + " | nice " + s.nice + " | policy " +
         std::to_string(s.policy) + " | ioprio " + std::to_string(s.ioprio) + " | cpus " +
         s.affinity.substr(0, 16);
}

// CPU time the process has used, in clock ticks (utime + stime).
long cpu_ticks(pid_t pid) {
  const std::string user = stat_field(pid, 14);
  const std::string system = stat_field(pid, 15);
  if (user.empty() || system.empty()) return -1;  // gone
  return std::stol(user) + std::stol(system);
}

// Root without any capability, also after execve (SECBIT_NOROOT, capabilities(7)): as root
// the kernel's commoncap cap_safe_nice() already refuses setpriority, ioprio_set and
// sched_setscheduler/setaffinity on a target holding capabilities the caller lacks, so a victim
// with every capability would not tell whether the filter refuses them; prlimit64 has no such
// check. A root daemon that dropped its capabilities is such a target.
bool drop_every_capability() {
  if (::prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0) != 0) return false;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  return ::syscall(SYS_capset, &header, data) == 0;
}

// A process outside the sandbox, owned by `uid`, burning CPU in `dir` (where a core dump would
// land: core_pattern "core" writes it into the working directory).
class Victim {
 public:
  Victim(uid_t uid, const std::string& dir) {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (::chdir(dir.c_str()) != 0) ::_exit(120);
      if (uid != 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
                       ::setresuid(uid, uid, uid) != 0))
        ::_exit(121);
      if (uid == 0 && !drop_every_capability()) ::_exit(123);
      ::execl("/bin/sh", "sh", "-c", "while :; do :; done", nullptr);
      ::_exit(122);
    }
    // Until it runs the loop (exec'd: its name is sh).
    for (int i = 0; i < 200 && read_file("/proc/" + std::to_string(pid_) + "/comm") != "sh\n"; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Victim() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  Victim(const Victim&) = delete;
  Victim& operator=(const Victim&) = delete;

  pid_t pid() const { return pid_; }
  bool alive() const {
    int status = 0;
    return ::waitpid(pid_, &status, WNOHANG) == 0;
  }
  // Waits until it has used `ticks` clock ticks of CPU in all (at most `wall`): a CPU limit of
  // one second set from inside would have ended it by then (the limit counts from its start).
  void burn_until(long ticks, std::chrono::seconds wall) const {
    const auto deadline = std::chrono::steady_clock::now() + wall;
    while (alive() && std::chrono::steady_clock::now() < deadline) {
      if (stat_field(pid_, 3) == "Z" || cpu_ticks(pid_) >= ticks) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

 private:
  pid_t pid_ = -1;
};

std::vector<std::string> core_files(const std::string& dir) {
  std::vector<std::string> cores;
  for (const std::string& name : listing(dir))
    if (name.rfind("core", 0) == 0) cores.push_back(name);
  return cores;
}

using Param = std::tuple<std::string, bool>;  // backend, as user 65534

class PidScope : public ::testing::TestWithParam<Param> {
 protected:
  const std::string& backend() const { return std::get<0>(GetParam()); }
  bool as_nobody() const { return std::get<1>(GetParam()); }
  uid_t uid() const { return as_nobody() ? kNobody : 0; }

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (to run the victim and switch users)";
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    // An unavailable backend is no pass: the shared escape suite fails for it; here it is a
    // printed skip so that this suite says which half it could not run.
    const std::string why = backend_unavailable(backend());
    if (!why.empty()) GTEST_SKIP() << backend() << " is not available here: " << why;
    if (as_nobody()) {
      if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
      const RunResult reach = run(as_user({"/usr/bin/test", "-x", pid_probe()}), base_env());
      if (reach.code != 0)
        GTEST_SKIP() << "user 65534 cannot execute " << pid_probe()
                     << " (a parent directory of the build tree is private to its owner)";
      if (backend() == "bwrap") {
        const RunResult userns =
            run(as_user({"/usr/bin/bwrap", "--unshare-user", "--ro-bind", "/", "/", "/bin/true"}),
                base_env());
        if (userns.code != 0)
          GTEST_SKIP() << "user 65534 cannot create user namespaces here: " << userns.err;
      }
      ::chown(ws_.path().c_str(), kNobody, kNobody);
      ::chown(home_.path().c_str(), kNobody, kNobody);
      ::chown(victim_dir_.path().c_str(), kNobody, kNobody);
    }
    ::chmod(conf_.path().c_str(), 0755);
    policies_.push_back(conf_ / "workspace.json");
    write_file(policies_.back(),
               R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
               R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
               R"("protected_names":[]},"network":{"mode":"restricted"}})");
    // Landlock loads the pid scope in the metadata guard's program when the filesystem is
    // restricted, as a program of its own when it is not: both ways are tried.
    if (backend() == "landlock") {
      policies_.push_back(conf_ / "unrestricted.json");
      write_file(policies_.back(), R"({"version":1,"filesystem":{"kind":"unrestricted"},)"
                                   R"("network":{"mode":"restricted"}})");
    }
    for (const std::string& policy : policies_) ::chmod(policy.c_str(), 0644);
  }

  // Each launch: a policy with an environment (see launch_envs()).
  struct Launch {
    std::string policy;
    std::vector<std::string> env;
    std::string name;
  };
  std::vector<Launch> launches() const {
    std::vector<Launch> all;
    for (const std::string& policy : policies_)
      for (const std::vector<std::string>& env : launch_envs())
        all.push_back(
            {policy, env,
             backend() + (as_nobody() ? " as 65534, " : " as root, ") + policy +
                 (env.size() > base_env().size() ? ", direct launch" : ", stage 2 launch")});
    return all;
  }

  std::vector<std::string> as_user(std::vector<std::string> argv) const {
    if (!as_nobody()) return argv;
    argv.insert(argv.begin(),
                {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
    return argv;
  }

  // The environments of the launch paths: under bwrap PWD selects the direct launch, its
  // absence sbx-stage2 as PID 1 (tests/support/src/installed_sbx.cpp); Landlock has one.
  std::vector<std::vector<std::string>> launch_envs() const {
    std::vector<std::string> env = base_env();
    env[1] = "HOME=" + home_.path();
    std::vector<std::string> direct = env;
    direct.push_back("PWD=" + ws_.path());
    if (backend() == "landlock") return {direct};
    return {direct, env};
  }

  RunResult probe(const std::string& op, pid_t pid, const Launch& launch) const {
    return run(as_user({sbx_path(), "--backends", backend(), "exec", "--policy", launch.policy,
                        "--cwd", ws_.path(), "--", pid_probe(), op, std::to_string(pid)}),
               launch.env);
  }

  // When a change `op` could make would show. A CPU limit acts once the victim has used the CPU
  // time it names (setrlimit(2), RLIMIT_CPU): the victim must burn past it before it is checked.
  // Nice value, I/O priority, affinity and scheduling policy are read back at once
  // (setpriority(2), ioprio_set(2), sched_setaffinity(2), sched_setscheduler(2)).
  enum class Shows { at_once, after_cpu_time };

  // Runs `op` from inside on a fresh victim and checks it from outside afterwards.
  void expect_victim_untouched(const std::string& op, Shows shows) {
    for (const Launch& launch : launches()) {
      SCOPED_TRACE(launch.name);
      Victim victim(uid(), victim_dir_.path());
      const Snapshot before = snapshot(victim.pid());
      const RunResult r = probe(op, victim.pid(), launch);
      EXPECT_EQ(r.code, 1) << describe(r);
      EXPECT_NE(r.out.find(op + " BLOCKED"), std::string::npos) << describe(r);
      EXPECT_EQ(r.out.find("SUCCEEDED"), std::string::npos) << describe(r);
      // One and a half seconds of CPU in all: a limit of one second set from inside would have
      // struck by then.
      const long ticks = ::sysconf(_SC_CLK_TCK) * 3 / 2;
      if (shows == Shows::after_cpu_time) victim.burn_until(ticks, std::chrono::seconds(20));
      const bool alive = victim.alive();
      EXPECT_TRUE(alive) << "the victim outside the sandbox died";
      if (alive) {
        if (shows == Shows::after_cpu_time) {
          EXPECT_GE(cpu_ticks(victim.pid()), ticks)
              << "the victim did not get the CPU time to test";
        }
        const Snapshot after = snapshot(victim.pid());
        EXPECT_EQ(after, before) << "before: " << describe(before)
                                 << "\nafter:  " << describe(after);
      }
      EXPECT_TRUE(core_files(victim_dir_.path()).empty()) << "the victim dumped core";
    }
  }

  TempDir ws_{"/var/tmp"};
  TempDir home_{private_parent()};  // not /var/tmp: no state there
  TempDir conf_{"/var/tmp"};
  TempDir victim_dir_{"/var/tmp"};
  std::vector<std::string> policies_;
};

TEST_P(PidScope, KillByCpuLimitOfAnOutsideProcessIsRefused) {
  expect_victim_untouched("kill-by-limit", Shows::after_cpu_time);
}

TEST_P(PidScope, DumpByCoreLimitOfAnOutsideProcessIsRefused) {
  expect_victim_untouched("dump-by-limit", Shows::after_cpu_time);
}

TEST_P(PidScope, PriorityOfAnOutsideProcessIsRefused) {
  expect_victim_untouched("setpriority", Shows::at_once);
}

TEST_P(PidScope, IoPriorityOfAnOutsideProcessIsRefused) {
  expect_victim_untouched("ioprio_set", Shows::at_once);
}

TEST_P(PidScope, AffinityOfAnOutsideProcessIsRefused) {
  expect_victim_untouched("sched_setaffinity", Shows::at_once);
}

TEST_P(PidScope, SchedulerOfAnOutsideProcessIsRefused) {
  expect_victim_untouched("sched_setscheduler", Shows::at_once);
}

// The same calls naming the caller (pid 0) keep working: nice, ionice, taskset and chrt
// starting a command, setrlimit.
TEST_P(PidScope, TheSameCallsOnTheCommandItselfWork) {
  for (const Launch& launch : launches()) {
    SCOPED_TRACE(launch.name);
    const RunResult r = probe("all", 0, launch);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(r.out.find("BLOCKED"), std::string::npos) << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PidScope,
                         ::testing::Combine(::testing::Values("landlock", "bwrap"),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<Param>& param) {
                           return std::get<0>(param.param) +
                                  (std::get<1>(param.param) ? "_user65534" : "_root");
                         });

}  // namespace
