// sbx-backend-landlock: the thin module around the pure translator. probe() asks the kernel;
// transform() gathers the host facts (the trusted stage-2 path, device filesystems mounted
// outside /dev, the directories a rule over them is split along) and runs the translator;
// exec() runs the plan itself, inside sbx, with the launcher of linux/landlock/landlock_launch.hpp:
// the plan's argv is `sbx-stage2 --landlock ...` (what a person or an SDK user would run by
// hand), but no helper is exec'd here and the argv is not read back: the typed plan travels in
// the plan's detail (plan.hpp); sbx builds the ruleset, forks the supervisor, and the command's
// child confines itself and execs the command.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "landlock_launch.hpp"
#include "sbx/landlock/plan.hpp"
#include "sbx/landlock/probe.hpp"
#include "sbx/landlock/translate.hpp"
#include "sbx/sdk/plugin.hpp"
#include "steps.hpp"

namespace sbx::landlock {
namespace {

bool is_octal(char c) { return c >= '0' && c <= '7'; }

// A mount table path as the kernel escapes it (\040 for a space, \011, \012, \134).
std::string unescape_mount_path(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && is_octal(field[i + 1]) &&
        is_octal(field[i + 2]) && is_octal(field[i + 3])) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

struct Mount {
  std::string device;  // major:minor of the filesystem
  std::string point;
  std::string type;
};

// The whole of the open mount table `fd`, read from its start; nullopt if a read fails.
std::optional<std::string> read_from_start(int fd) {
  if (::lseek(fd, 0, SEEK_SET) != 0) return std::nullopt;
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return text;
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE ...".
bool parse_mounts(const std::string& table, std::vector<Mount>& mounts) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point, word;
    if (!(fields >> id >> parent >> device >> root >> point)) return false;
    while (fields >> word && word != "-") {
    }
    std::string type;
    if (!(fields >> type)) return false;
    mounts.push_back({device, unescape_mount_path(point), type});
  }
  return in.eof();
}

// Device filesystems mounted outside /dev: devtmpfs and devpts anywhere, and /dev's own
// filesystem bound elsewhere (inside a container /dev may be a tmpfs). Each would open its
// device nodes to a rule that covers it.
// Empty (mounts_known stays false: the translator refuses) when the table cannot be parsed.
std::optional<std::vector<std::string>> device_mounts_in(const std::string& table) {
  std::vector<Mount> mounts;
  if (!parse_mounts(table, mounts)) return std::nullopt;
  std::vector<std::string> device_mounts;
  std::string dev_device;
  for (const Mount& m : mounts) {
    if (m.point == "/dev") dev_device = m.device;  // the last one is on top
  }
  for (const Mount& m : mounts) {
    if (path_is_within(m.point, "/dev")) continue;
    const bool device_fs = m.type == "devtmpfs" || m.type == "devpts";
    if (device_fs || (!dev_device.empty() && m.device == dev_device))
      device_mounts.push_back(m.point);
  }
  return device_mounts;
}

// Which mount namespace and root a mount table was opened in: the table shows that namespace's
// mounts, with paths relative to that root, for as long as it stays open.
struct MountView {
  dev_t ns_dev = 0;
  ino_t ns_ino = 0;
  dev_t root_dev = 0;
  ino_t root_ino = 0;
  friend bool operator==(const MountView&, const MountView&) = default;
};

std::optional<MountView> current_mount_view() {
  struct stat ns {};
  struct stat root {};
  if (::stat("/proc/self/ns/mnt", &ns) != 0 || ::stat("/", &root) != 0) return std::nullopt;
  return MountView{ns.st_dev, ns.st_ino, root.st_dev, root.st_ino};
}

// The device mounts of the mount table, kept between transforms while the kernel reports no
// change. Reading /proc/self/mountinfo costs the kernel a formatted line per mount on every
// run; an open mount table instead signals POLLPRI once any mount or unmount has happened in
// its namespace since it was last polled or opened (proc(5), /proc/pid/mounts), so a kept
// answer is re-read the moment it could be stale, whoever changed the mounts. A change
// between the poll and the run is the same race as between a fresh read and the run. The
// table is tied to the namespace and root it was opened in, so a process that moved to
// another (setns, unshare, chroot) opens it again. A sandboxed command cannot widen the next
// run through this: any mount it could make is signalled like any other.
class DeviceMountTable {
 public:
  DeviceMountTable() = default;
  DeviceMountTable(const DeviceMountTable&) = delete;
  DeviceMountTable& operator=(const DeviceMountTable&) = delete;
  ~DeviceMountTable() {
    if (fd_ >= 0) ::close(fd_);
  }

  void fill(HostFacts& facts) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!current()) refresh();
    if (!device_mounts_) return;  // mounts_known stays false: the translator refuses
    facts.device_mounts = *device_mounts_;
    facts.mounts_known = true;
  }

 private:
  // True when the kept answer still describes this process's mount table.
  bool current() {
    if (fd_ < 0 || !device_mounts_) return false;
    // A forked child shares the open table with its parent, and a poll by either one takes
    // the change signal from both: each process polls only a table it opened itself.
    if (::getpid() != opener_) return false;
    // The descriptor must still be the table (an embedding program may have closed it and
    // opened something else at its number, which would never signal a change).
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || st.st_dev != table_dev_ || st.st_ino != table_ino_) return false;
    if (current_mount_view() != view_) return false;
    pollfd watch{fd_, POLLPRI, 0};
    if (::poll(&watch, 1, 0) < 0) return false;
    return (watch.revents & (POLLPRI | POLLERR | POLLNVAL)) == 0;
  }

  void refresh() {
    device_mounts_.reset();
    const std::optional<MountView> view = current_mount_view();
    if (fd_ < 0 || view != view_ || ::getpid() != opener_) {
      // Closing a forked child's copy leaves the parent's table open.
      if (fd_ >= 0) ::close(fd_);
      // The namespace and root before the open: if the process moves between the two, the
      // next transform sees a view that differs from the table's and opens it again.
      view_ = view;
      opener_ = ::getpid();
      fd_ = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) return;
      struct stat st {};
      if (::fstat(fd_, &st) != 0) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
      table_dev_ = st.st_dev;
      table_ino_ = st.st_ino;
    }
    // A change after this read is signalled at the next poll, and one just before it is
    // already in what is read (and signalled once more: one read too many, never one too few).
    const std::optional<std::string> table = read_from_start(fd_);
    if (!table || !view_) return;
    device_mounts_ = device_mounts_in(*table);
  }

  std::mutex mutex_;
  int fd_ = -1;
  pid_t opener_ = 0;
  dev_t table_dev_ = 0;
  ino_t table_ino_ = 0;
  std::optional<MountView> view_;
  std::optional<std::vector<std::string>> device_mounts_;
};

// The entries of `dir` (names and whether each is a symlink), sorted so the plan is stable.
void list_directory(const std::string& dir_path, HostFacts& facts) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(dir_path.c_str()), ::closedir);
  if (!dir) {
    facts.listing_error = "listing '" + dir_path + "' failed: " + std::strerror(errno);
    return;
  }
  std::vector<DirEntry> entries;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    // The directory's own entry type where the filesystem gives one: no stat, so a mount on
    // an entry (a network filesystem, say) is not touched here.
    bool symlink = entry->d_type == DT_LNK;
    if (entry->d_type == DT_UNKNOWN) {
      struct stat st {};
      // Gone since readdir: nothing to grant.
      if (::fstatat(::dirfd(dir.get()), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      symlink = S_ISLNK(st.st_mode);
    }
    entries.push_back({name, symlink});
  }
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  facts.listings[dir_path] = std::move(entries);
}

HostFacts gather_facts(const TransformRequest& request, std::string stage2_path,
                       DeviceMountTable& mount_table) {
  HostFacts facts;
  facts.stage2_path = std::move(stage2_path);
  if (request.policy.filesystem_kind != FilesystemKind::kRestricted) return facts;
  mount_table.fill(facts);
  for (const std::string& dir : directories_to_list(request.policy, facts.device_mounts))
    list_directory(dir, facts);
  return facts;
}

class LandlockBackend final : public Backend {
 public:
  explicit LandlockBackend(HostServices host) : Backend(host) {}

  ProbeReport probe(const ProbeContext& /*context*/) override {
    return run_probe(std::string(host().stage2_path()));
  }

  Result<ExecPlan> transform(const TransformRequest& request) const override {
    try {
      Result<Translation> t = translate(
          request, gather_facts(request, std::string(host().stage2_path()), mount_table_));
      if (!t.ok()) return t.failure();
      ExecPlan plan;
      plan.argv = std::move(t->argv);
      plan.cwd = request.cwd;
      // Stage 2 (static: no LD_* acts on it) runs with the command's environment and hands it
      // on (--env-environ); as arguments it would be world-readable in /proc.
      plan.env = std::move(t->env);
      plan.notes = std::move(t->notes);
      // What exec() runs, typed (plan.hpp): the printed argv is never read back.
      plan.detail = std::make_shared<const LandlockPlanDetail>(std::move(t->plan));
      return plan;
    } catch (const std::exception& e) {
      return Error{std::string("landlock: transform failed: ") + e.what()};
    }
  }

  // The typed plan transform() made (its detail) becomes the launch sbx-stage2 would make of
  // the printed argv (plan.hpp, launch_of), run by the same launcher; the run is tied to this
  // process (the supervisor's parent-death signal), the command's environment goes only into
  // its execve, and the run's prepare_child (its cgroup and rlimits) runs in the command's
  // child.
  Result<ExitStatus> exec(const ExecPlan& plan, const RunContext& run) override {
    try {
      const LandlockPlan* typed = landlock_plan_of(plan);
      if (typed == nullptr)
        return Error{
            "landlock: the plan has no Landlock plan detail (it must come from this "
            "backend's transform)"};
      Result<stage2::LandlockLaunch> launch = launch_of(*typed);
      if (!launch.ok()) return launch.failure().prefixed("landlock: the plan cannot run: ");
      // What is started, for `--log-level debug` and the tests that compare it with the plan.
      host().log(SBX_LOG_DEBUG,
                 "landlock: launched " + launch_record_json(std::string(host().stage2_path()),
                                                            *typed, *launch, plan.env));
      stage2::LaunchOptions options;
      options.env = plan.env;
      options.cwd = plan.cwd;
      options.guard_program = std::string(host().stage2_path());
      // The run's stdio and its end (ABI 2.1): the launcher gives the command those descriptors
      // and ends the whole run when cancel_fd becomes readable.
      options.stdio = run.stdio_fds();
      options.cancel_fd = run.cancel_fd();
      options.forward_signals = run.forward_signals();  // ABI 2.2: the caller's choice
      RunContext::ChildHook hook = run.child_hook();
      options.prepare_child = &LandlockBackend::prepare_child;
      options.prepare_child_ctx = &hook;
      // The launcher returns only once the command has ended: the host's work alongside the
      // run (the created-names scan) starts now.
      run.run_started();
      std::vector<std::string> unix_refusals;
      options.unix_refusals = &unix_refusals;
      options.trace_fd = confine::trace_fd_from_environment();  // checked builds: steps.hpp
      Result<ExitStatus> status = stage2::run_landlock(*launch, options);
      // Before exec() returns: the host files them under this run's report.
      for (const std::string& refusal : unix_refusals) run.report_network_refusal("unix", refusal);
      return status;
    } catch (const std::exception& e) {
      return Error{std::string("landlock: exec failed: ") + e.what()};
    }
  }

 private:
  // Async-signal-safe: calls the host's hook, which is.
  static int prepare_child(void* ctx) { return (*static_cast<RunContext::ChildHook*>(ctx))(); }

  // Kept by a warm manager between transforms (transform is const: the table is a cache).
  mutable DeviceMountTable mount_table_;
};

}  // namespace
}  // namespace sbx::landlock

SBX_DECLARE_BACKEND(sbx::landlock::LandlockBackend, "landlock", "0.1.0",
                    "Landlock + seccomp, no namespaces (Linux)")
