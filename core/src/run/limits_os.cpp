// The OS side of run limits (run_limits.hpp): finding a cgroup hierarchy sbx may use, creating
// and removing the run's cgroup, the child hook, and the timeout watchdog.
#include "sbx/core/run_limits.hpp"

#ifdef __linux__

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

namespace sbx {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRunsDir = "sbx.runs";  // shared parent of the run cgroups

// ---------------------------------------------------------------------------------------------
// The child hook: everything it reads is prepared by the parent before fork and not changed
// until the run ends; it runs between vfork and execve, so it is async-signal-safe.

struct ChildLimit {
  int resource;
  rlim_t value;
};

struct ChildLimits {
  // The file of the run cgroup the child writes "0" to (RunCgroup::join_path), opened by path
  // in the child: a spawner may have moved its own descriptors onto any number by then, so no
  // descriptor of sbx is relied on.
  std::array<char, 512> cgroup_join{};
  std::array<ChildLimit, 5> limits{};
  std::size_t count = 0;
};

int prepare_child_with(const ChildLimits& armed) noexcept;

// ---------------------------------------------------------------------------------------------
// Files.

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool write_text(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

bool has_word(const std::string& list, std::string_view word) {
  std::istringstream in(list);
  std::string item;
  while (in >> item) {
    if (item == word) return true;
  }
  return false;
}

// The value after `key` in a "key value" per line file (pids.events, memory.events).
std::uint64_t event_count(const std::string& path, std::string_view key) {
  const std::optional<std::string> text = read_text(path);
  if (!text) return 0;
  std::istringstream in(*text);
  std::string name;
  std::uint64_t count = 0;
  while (in >> name >> count) {
    if (name == key) return count;
  }
  return 0;
}

bool is_fs(const char* path, long magic) {
  struct statfs st {};
  return statfs(path, &st) == 0 && static_cast<long>(st.f_type) == magic;
}

// This process's cgroup in the hierarchy whose /proc/self/cgroup line has `controllers`
// ("" for cgroup v2).
std::optional<std::string> own_cgroup(std::string_view controllers) {
  const std::optional<std::string> text = read_text("/proc/self/cgroup");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string list = line.substr(first + 1, second - first - 1);
    bool match = list == controllers;
    for (std::size_t at = 0; !match && !controllers.empty() && at <= list.size();) {
      const std::size_t end = std::min(list.find(',', at), list.size());
      match = list.substr(at, end - at) == controllers;
      at = end + 1;
    }
    if (match) return line.substr(second + 1);
  }
  return std::nullopt;
}

// The highest directory from the mount down to this process's own cgroup in which this user
// may create cgroups and move processes. Moving a process needs write access to cgroup.procs of
// the common ancestor of where it is and where it goes, so the run cgroups go below the highest
// such directory (for root the top of the hierarchy; for a user, systemd's delegated
// user@UID.service when sbx runs inside it).
std::optional<std::string> writable_base(const std::string& mount, const std::string& own) {
  std::string path = mount;
  std::vector<std::string> chain = {path};
  std::istringstream parts(own);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    path += "/" + part;
    chain.push_back(path);
  }
  for (const std::string& dir : chain) {
    if (access(dir.c_str(), W_OK) == 0 && access((dir + "/cgroup.procs").c_str(), W_OK) == 0)
      return dir;
  }
  return std::nullopt;
}

bool make_runs_dir(const std::string& parent) {
  return mkdir(parent.c_str(), 0755) == 0 || errno == EEXIST;
}

// cgroup v2: needs the pids controller delegated down to sbx.runs.
CgroupSupport probe_v2(CgroupSupport out) {
  std::string mount;
  for (const char* candidate : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    if (is_fs(candidate, CGROUP2_SUPER_MAGIC)) {
      mount = candidate;
      break;
    }
  }
  if (mount.empty()) {
    out.reason = "no cgroup2 hierarchy is mounted";
    return out;
  }
  const std::optional<std::string> own = own_cgroup("");
  const std::optional<std::string> base = own ? writable_base(mount, *own) : std::nullopt;
  if (!base) {
    out.reason = "cgroup2 at " + mount + ": no cgroup this user may manage (none delegated)";
    return out;
  }
  const std::string controllers = read_text(*base + "/cgroup.controllers").value_or("");
  if (!has_word(controllers, "pids")) {
    out.reason = "cgroup2 at " + mount + ": the pids controller is not available in " + *base +
                 " (it may be bound to a cgroup v1 hierarchy)";
    return out;
  }
  // Enabling a controller below a cgroup that holds processes fails (EBUSY, "no internal
  // processes"); if it is already enabled, the write is a no-op.
  write_text(*base + "/cgroup.subtree_control", "+pids");
  if (has_word(controllers, "memory")) write_text(*base + "/cgroup.subtree_control", "+memory");
  const std::string parent = *base + "/" + kRunsDir;
  if (!make_runs_dir(parent)) {
    out.reason = "cannot create " + parent + ": " + std::strerror(errno);
    return out;
  }
  const std::string below = read_text(parent + "/cgroup.controllers").value_or("");
  if (!has_word(below, "pids") || !write_text(parent + "/cgroup.subtree_control", "+pids")) {
    out.reason = "cgroup2: the pids controller cannot be enabled for " + parent;
    return out;
  }
  out.memory =
      has_word(below, "memory") && write_text(parent + "/cgroup.subtree_control", "+memory");
  out.available = true;
  out.kind = "cgroup2";
  out.parent = parent;
  out.reason = "cgroup2 under " + parent + (out.memory ? " (pids, memory)" : " (pids)");
  return out;
}

// cgroup v1 pids hierarchy (hosts that still mount the controllers as v1).
CgroupSupport probe_v1_pids(const CgroupSupport& v2) {
  CgroupSupport out;
  const std::string mount = "/sys/fs/cgroup/pids";
  if (!is_fs(mount.c_str(), CGROUP_SUPER_MAGIC)) {
    out.reason = v2.reason + "; no cgroup v1 pids hierarchy either";
    return out;
  }
  const std::optional<std::string> own = own_cgroup("pids");
  const std::optional<std::string> base = own ? writable_base(mount, *own) : std::nullopt;
  if (!base) {
    out.reason = v2.reason + "; cgroup v1 pids: no cgroup this user may manage";
    return out;
  }
  const std::string parent = *base + "/" + kRunsDir;
  if (!make_runs_dir(parent)) {
    out.reason = v2.reason + "; cannot create " + parent + ": " + std::strerror(errno);
    return out;
  }
  out.available = true;
  out.kind = "cgroup1 pids";
  out.parent = parent;
  out.reason = "cgroup v1 pids under " + parent + " (no memory limit: " + v2.reason + ")";
  return out;
}

// ---------------------------------------------------------------------------------------------
// The run's cgroup.

// True while `pid` exists and has not exited (a killed sbx may stay a zombie for a while when
// its parent is slow to reap it). When unsure, alive: a live run is never touched.
bool is_alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const std::optional<std::string> stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  const std::size_t end = stat->rfind(')');
  return end == std::string::npos || end + 2 >= stat->size() || (*stat)[end + 2] != 'Z';
}

ino_t pid_namespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? st.st_ino : 0;
}

// "run-<pid namespace>-<pid>-": the names of this sbx's run cgroups begin with it.
std::string run_prefix() {
  return "run-" + std::to_string(pid_namespace()) + "-" + std::to_string(getpid()) + "-";
}

// How long to wait between looks at a cgroup that is emptying: 50 us at first, doubling up to
// 5 ms. Its last process is usually gone within a fraction of a millisecond; the longer waits
// (and the bound of the loops using them) are for one that is not.
class Backoff {
 public:
  std::chrono::microseconds advance() {
    const std::chrono::microseconds now = next_;
    next_ = std::min(next_ * 2, std::chrono::microseconds(5000));
    return now;
  }
  void wait() { std::this_thread::sleep_for(advance()); }

 private:
  std::chrono::microseconds next_{50};
};

// SIGKILL to each listed process of the run, then waits up to `limit` for the first of them to
// exit. Through pidfds (Linux 5.3) where it can: the signal goes to the process pidfd_open
// found at that pid, never to a later holder of the number, and the wait ends the moment one
// has exited (a process leaves its cgroup before its pidfd reports the exit). Without pidfds,
// kill() and a plain sleep of `limit`.
void kill_and_await_one(const std::vector<pid_t>& pids, std::chrono::microseconds limit) {
  std::vector<pollfd> exits;
  bool one_gone = false;
  bool unpinned = false;
  for (const pid_t pid : pids) {
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (pidfd >= 0) {
      syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
      exits.push_back({pidfd, POLLIN, 0});
    } else if (errno == ESRCH) {
      one_gone = true;  // already gone: the list is looked at again at once
    } else {
      kill(pid, SIGKILL);
      unpinned = true;
    }
  }
  if (!one_gone) {
    if (unpinned || exits.empty()) {
      std::this_thread::sleep_for(limit);
    } else {
      const auto us = limit.count();
      const timespec timeout{static_cast<time_t>(us / 1000000),
                             static_cast<long>(us % 1000000) * 1000};
      ppoll(exits.data(), exits.size(), &timeout, nullptr);
    }
  }
  for (const pollfd& exit : exits) close(exit.fd);
}

class RunCgroup {
 public:
  static std::unique_ptr<RunCgroup> create(const CgroupSupport& support, const Limits& limits,
                                           std::string& error) {
    static std::atomic<unsigned> sequence{0};
    auto group = std::unique_ptr<RunCgroup>(new RunCgroup());
    group->v2_ = support.kind == "cgroup2";
    group->path_ = support.parent + "/" + run_prefix() + std::to_string(sequence++);
    if (mkdir(group->path_.c_str(), 0755) != 0) {
      error = "cannot create the run's cgroup " + group->path_ + ": " + std::strerror(errno);
      return nullptr;
    }
    group->created_ = true;
    if (limits.processes &&
        !write_text(group->path_ + "/pids.max", std::to_string(*limits.processes))) {
      error = "cannot set pids.max in " + group->path_ + ": " + std::strerror(errno);
      return nullptr;
    }
    if (limits.memory_bytes && support.memory &&
        !write_text(group->path_ + "/memory.max", std::to_string(*limits.memory_bytes))) {
      error = "cannot set memory.max in " + group->path_ + ": " + std::strerror(errno);
      return nullptr;
    }
    const std::string join = group->join_path();
    const int fd = open(join.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || join.size() >= ChildLimits{}.cgroup_join.size()) {
      error = "cannot use " + join + ": " + (fd < 0 ? std::strerror(errno) : "path too long");
      if (fd >= 0) close(fd);
      return nullptr;
    }
    close(fd);
    return group;
  }

  // A run cgroup left by an sbx that was killed before it could remove it: whatever still runs
  // in it is killed and it is removed. Its name holds the pid namespace and pid of the sbx that
  // made it; only names from this pid namespace whose pid no longer exists are stale (the
  // hierarchy may be shared with other containers, whose pids mean nothing here).
  static void remove_stale(const CgroupSupport& support) {
    const std::string prefix = "run-" + std::to_string(pid_namespace()) + "-";
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(support.parent, error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      const std::string rest = name.substr(prefix.size());
      const std::string pid_text = rest.substr(0, rest.find('-'));
      if (pid_text.empty() || pid_text.size() > 9 ||
          pid_text.find_first_not_of("0123456789") != std::string::npos)
        continue;
      const pid_t owner = static_cast<pid_t>(std::stol(pid_text));
      if (owner == getpid() || is_alive(owner)) continue;
      auto stale = std::unique_ptr<RunCgroup>(new RunCgroup());
      stale->v2_ = support.kind == "cgroup2";
      stale->path_ = entry.path().string();
      stale->created_ = true;  // the destructor kills and removes
    }
  }

  ~RunCgroup() {
    if (created_) kill_and_remove();
  }
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  // What the child writes "0" to in order to enter the cgroup. On v1 that is `tasks`, which moves
  // only the writing thread: the kernel then skips the global threadgroup lock
  // (kernel/cgroup/cgroup.c, cgroup_procs_write_start(): no lock for the writer's own thread),
  // whose percpu_down_write() waits for an RCU grace period unless the hierarchy is mounted with
  // `favordynmods` (Documentation/admin-guide/cgroup-v2.rst), while `cgroup.procs` takes it. What
  // that wait cost a run: CHANGELOG.md, 2026-12-06. Moving one thread is moving the whole child,
  // because the child that writes is single-threaded (fresh from fork/vfork/clone, before execve;
  // checked in prepare_child). On v2, `cgroup.threads` works only in threaded subtrees, so
  // cgroup.procs it is.
  std::string join_path() const { return path_ + (v2_ ? "/cgroup.procs" : "/tasks"); }
  bool hit_pids_limit() const { return event_count(path_ + "/pids.events", "max") > 0; }
  bool hit_memory_limit() const {
    return v2_ && event_count(path_ + "/memory.events", "oom_kill") > 0;
  }

  // SIGKILL to every process of the run. cgroup.kill (Linux 5.14) does it atomically; without
  // it the list is read and killed until it stays empty (a killed process cannot fork again).
  // At the end of an ordinary run the list is usually empty or holds one process that is
  // already exiting: bwrap's outer process ends as soon as its sandbox's PID 1 has reported the
  // command's status, while that PID 1 may still be tearing its namespaces down (state D, for
  // a fraction of a millisecond). So each round waits for the first of the listed processes to
  // have exited, not for a fixed time (a fixed sleep is paid in full by every run that finds
  // PID 1 still exiting, however soon it goes; CHANGELOG.md, 2026-12-06).
  void kill_all() const {
    if (v2_ && write_text(path_ + "/cgroup.kill", "1")) return;
    Backoff pause;
    for (int round = 0; round < 200; ++round) {
      const std::optional<std::string> procs = read_text(path_ + "/cgroup.procs");
      if (!procs || procs->empty()) return;
      std::istringstream in(*procs);
      pid_t pid = 0;
      std::vector<pid_t> listed;
      while (in >> pid) listed.push_back(pid);
      kill_and_await_one(listed, pause.advance());
    }
  }

 private:
  RunCgroup() = default;

  void kill_and_remove() {
    kill_all();
    // rmdir fails (EBUSY) until the killed processes have left the cgroup; that takes moments.
    Backoff pause;
    for (int attempt = 0; attempt < 400; ++attempt) {
      if (rmdir(path_.c_str()) == 0 || errno == ENOENT) return;
      if (attempt % 20 == 19) kill_all();
      pause.wait();
    }
    spdlog::warn("could not remove the run's cgroup {}: {}", path_, std::strerror(errno));
  }

  std::string path_;
  bool v2_ = false;
  bool created_ = false;
};

// Direct children of sbx (the sandbox's first process, or the isolated exec of a third-party
// plugin). Used by the CLI's watchdog to end a run whose command ignored SIGTERM.
void kill_own_children() {
  const std::string self = std::to_string(getpid());
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::optional<std::string> stat = read_text("/proc/" + name + "/stat");
    if (!stat) continue;
    const std::size_t end = stat->rfind(')');  // the name may hold spaces and parentheses
    if (end == std::string::npos) continue;
    std::istringstream fields(stat->substr(end + 1));
    std::string state;
    std::string parent;
    fields >> state >> parent;
    if (parent == self) kill(static_cast<pid_t>(std::stol(name)), SIGKILL);
  }
}

void ignore_signal(int /*signal*/) {}

// ---------------------------------------------------------------------------------------------

class LimitedRunImpl final : public LimitedRun {
 public:
  LimitedRunImpl(const Limits& limits, CgroupSupport support, Signals signals)
      : limits_(limits), support_(std::move(support)), signals_(signals) {}

  Status start() {
    if (support_.available &&
        (limits_.processes || limits_.memory_bytes || limits_.timeout_seconds)) {
      RunCgroup::remove_stale(support_);
      std::string error;
      cgroup_ = RunCgroup::create(support_, limits_, error);
      // Fail closed: the host offers a cgroup and the policy asks for what only it enforces.
      if (!cgroup_) return Error{error};
      const std::string join = cgroup_->join_path();
      std::copy(join.begin(), join.end(), child_.cgroup_join.begin());  // length checked
    }
    add_rlimits();
    // Run-only: without a cgroup there is nothing the watchdog could end without touching
    // the embedding process (plan_limits says so).
    if (limits_.timeout_seconds && (signals_ == Signals::kProcessWide || cgroup_)) start_watchdog();
    return {};
  }

  ~LimitedRunImpl() override { stop_watchdog(); }

  int prepare_child() const noexcept override { return prepare_child_with(child_); }

  std::optional<std::string> finish(int shell_code) override {
    stop_watchdog();
    std::optional<std::string> hit;
    if (timed_out_) {
      hit = "timeout";
    } else if (cgroup_ && cgroup_->hit_memory_limit()) {
      hit = "memory";
    } else if (cgroup_ && cgroup_->hit_pids_limit()) {
      hit = "processes";
    } else if (shell_code == 128 + SIGXCPU && limits_.cpu_seconds) {
      hit = "cpu_seconds";
    } else if (shell_code == 128 + SIGXFSZ && limits_.file_size_bytes) {
      hit = "file_size_bytes";
    }
    cgroup_.reset();  // kills what is left of the run, removes the cgroup
    return hit;
  }

  const CgroupSupport& cgroups() const override { return support_; }

 private:
  void add(int resource, std::optional<std::uint64_t> value) {
    if (!value) return;
    child_.limits[child_.count++] = {resource, static_cast<rlim_t>(*value)};
  }

  void add_rlimits() {
    add(RLIMIT_NPROC, limits_.processes);
    add(RLIMIT_NOFILE, limits_.open_files);
    add(RLIMIT_FSIZE, limits_.file_size_bytes);
    add(RLIMIT_AS, limits_.address_space_bytes);
    add(RLIMIT_CPU, limits_.cpu_seconds);
  }

  void start_watchdog() {
    if (signals_ == Signals::kProcessWide) {
      // A handler that does nothing: the spawners replace it with their forwarding while the
      // command runs; outside that window a late SIGTERM from the watchdog must not end sbx.
      struct sigaction action {};
      action.sa_handler = ignore_signal;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      sigaction(SIGTERM, &action, &previous_term_);
    }
    // The watchdog thread blocks every signal, so the SIGTERM it sends to sbx is taken by the
    // spawner (its handler or signalfd) and forwarded to the command, never by this thread;
    // nor does it take signals meant for an embedding process.
    sigset_t all;
    sigset_t previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    watchdog_ = std::thread([this] { watch(); });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }

  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto term_at =
        std::chrono::steady_clock::now() + std::chrono::seconds(*limits_.timeout_seconds);
    if (wake_.wait_until(lock, term_at, [this] { return stop_; })) return;
    timed_out_ = true;
    if (signals_ == Signals::kRunOnly) {
      cgroup_->kill_all();
      return;
    }
    kill(getpid(), SIGTERM);  // forwarded to the command by the spawner
    const auto kill_at =
        std::chrono::steady_clock::now() + std::chrono::seconds(limits_.timeout_grace_seconds);
    if (wake_.wait_until(lock, kill_at, [this] { return stop_; })) return;
    if (cgroup_) cgroup_->kill_all();
    // Without a cgroup the sandbox's first process, which takes the sandbox with it; with one,
    // a process of the run outside it: a third-party plugin's isolated exec (its own process,
    // not in the cgroup so as not to count against the run's limits), whose command dies with
    // it (plugins/call_isolation.cpp). sbx's CLI has no other children while a command runs.
    kill_own_children();
  }

  void stop_watchdog() {
    if (!watchdog_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
    if (signals_ == Signals::kProcessWide) sigaction(SIGTERM, &previous_term_, nullptr);
  }

  Limits limits_;
  CgroupSupport support_;
  Signals signals_;
  std::unique_ptr<RunCgroup> cgroup_;
  ChildLimits child_;
  std::thread watchdog_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mutex_
  std::atomic<bool> timed_out_{false};
  struct sigaction previous_term_ {};
};

}  // namespace

CgroupSupport probe_cgroups() {
  CgroupSupport v2 = probe_v2({});
  if (v2.available) return v2;
  return probe_v1_pids(v2);
}

Result<std::unique_ptr<LimitedRun>> LimitedRun::start(const Limits& limits, Signals signals,
                                                      std::optional<CgroupSupport> cgroups) {
  CgroupSupport support = cgroups ? std::move(*cgroups) : probe_cgroups();
  // Fail closed: a limit the policy relies on that cannot hold here refuses the run rather
  // than letting it go unlimited (plan_limits says which hold and why).
  if (Status hold = check_limits_hold(
          plan_limits(limits, support, geteuid() == 0, signals == Signals::kRunOnly));
      !hold.ok())
    return hold.failure();
  auto run = std::make_unique<LimitedRunImpl>(limits, std::move(support), signals);
  if (Status started = run->start(); !started.ok()) return started.failure();
  return std::unique_ptr<LimitedRun>(std::move(run));
}

namespace {

int prepare_child_with(const ChildLimits& limits) noexcept {
  const ChildLimits* armed = &limits;
  // Writing "0" moves the writer itself: the child enters the run's cgroup before it execs, so
  // nothing of the run ever starts outside it.
  if (armed->cgroup_join[0] != '\0') {
    // v1's `tasks` moves this thread alone, which is the whole process only in a child with
    // one thread. A forked child has one, and it is its process's leader; a caller that is not
    // a leader cannot be such a child (a plugin calling the hook from a thread of its own), and
    // is refused rather than half moved.
    if (static_cast<pid_t>(syscall(SYS_gettid)) != getpid()) return EINVAL;
    const int fd = open(armed->cgroup_join.data(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    const bool joined = write(fd, "0", 1) == 1;
    const int error = errno;
    close(fd);
    if (!joined) return error;
  }
  for (std::size_t i = 0; i < armed->count; ++i) {
    const ChildLimit& limit = armed->limits[i];
    struct rlimit current {};
    if (getrlimit(limit.resource, &current) != 0) return errno;
    // Never above the caller's own hard limit: sbx only ever lowers limits.
    const rlim_t value = current.rlim_max < limit.value ? current.rlim_max : limit.value;
    struct rlimit wanted {
      value, value
    };
    // CPU: SIGXCPU at the soft limit, SIGKILL one second later at the hard one.
    if (limit.resource == RLIMIT_CPU && value < current.rlim_max) wanted.rlim_max = value + 1;
    if (setrlimit(limit.resource, &wanted) != 0) return errno;
  }
  return 0;
}

}  // namespace

}  // namespace sbx

#else  // !__linux__

namespace sbx {
namespace {

// Elsewhere no limit is applied yet; `sbx explain` says so (plan_limits with no cgroups still
// names rlimits, which this platform's spawners do not set).
class UnlimitedRun final : public LimitedRun {
 public:
  std::optional<std::string> finish(int) override { return std::nullopt; }
  const CgroupSupport& cgroups() const override { return support_; }
  int prepare_child() const noexcept override { return 0; }
  CgroupSupport support_{false, "", "", false, "cgroups exist only on Linux"};
};

}  // namespace

CgroupSupport probe_cgroups() {
  CgroupSupport out;
  out.reason = "cgroups exist only on Linux";
  return out;
}

Result<std::unique_ptr<LimitedRun>> LimitedRun::start(const Limits& limits, Signals signals,
                                                      std::optional<CgroupSupport> cgroups) {
  // Nothing holds here: every limit that is not best-effort refuses the run.
  if (Status hold = check_limits_hold(plan_limits(limits, cgroups.value_or(probe_cgroups()), false,
                                                  signals == Signals::kRunOnly));
      !hold.ok())
    return hold.failure();
  return std::unique_ptr<LimitedRun>(std::make_unique<UnlimitedRun>());
}

}  // namespace sbx

#endif
