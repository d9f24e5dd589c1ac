// Root in the sandbox holds no power over the host's own objects (issue #32, finding 1), and
// PID 1 cannot be written by the command (finding 6): through the installed `sbx exec`
// (bwrap), in every launch path (the direct launch, stage 2 as PID 1, network mode proxy), as
// root and as user 65534, the command tries the host's sysctls (core_pattern with a pipe and a
// plain pattern, hostname, drop_caches, modprobe), binfmt_misc registration, sysfs and cgroupfs
// writes, the host's SysV and POSIX IPC and /dev/shm, the kernel keyring and /proc/1/mem. Each
// attempt must be refused, and the test checks the host afterwards: every value unchanged, no
// file created. A value that did change is put back at once, before the test fails.
#include <gtest/gtest.h>
#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr long kKeySpecSessionKeyring = -3;  // keyctl(2)
constexpr long kKeyctlSearch = 10;
constexpr long kKeyctlRead = 11;
constexpr long kKeyctlUnlink = 9;

enum class LaunchPath { kDirect, kStageTwo, kProxy };
enum class Who { kRoot, kNobody };

struct Case {
  LaunchPath path;
  Who who;
};

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
  const char* path = info.param.path == LaunchPath::kDirect     ? "Direct"
                     : info.param.path == LaunchPath::kStageTwo ? "StageTwo"
                                                                : "Proxy";
  return std::string(path) + (info.param.who == Who::kRoot ? "AsRoot" : "AsUser65534");
}

std::optional<std::string> read_if_exists(const std::string& path) {
  if (!exists(path)) return std::nullopt;
  return read_file(path);
}

// The value between brackets of a sysfs choice file ("always [madvise] never"), or the text.
std::string selected_value(const std::string& text) {
  const std::size_t open = text.find('[');
  const std::size_t close = text.find(']');
  if (open != std::string::npos && close != std::string::npos && close > open)
    return text.substr(open + 1, close - open - 1);
  std::string out = text;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The host's objects the command aims at, made before the run and removed after it. SysV, POSIX
// IPC and /dev/shm objects are 0666: only the namespaces keep user 65534 away from them.
class HostObjects {
 public:
  HostObjects() : tag_("sbx-escape-" + std::to_string(::getpid())) {
    key_ = static_cast<key_t>(0x5b000000 | (::getpid() & 0xffff));
    shm_ = ::shmget(key_, 64, IPC_CREAT | IPC_EXCL | 0666);
    if (shm_ >= 0) {
      void* at = ::shmat(shm_, nullptr, 0);
      if (at != reinterpret_cast<void*>(-1)) {
        std::memcpy(at, "host", 5);
        ::shmdt(at);
      }
    }
    msg_ = ::msgget(key_, IPC_CREAT | IPC_EXCL | 0666);
    sem_ = ::semget(key_, 1, IPC_CREAT | IPC_EXCL | 0666);
    mq_attr attr{};
    attr.mq_maxmsg = 4;
    attr.mq_msgsize = 16;
    const mqd_t queue = ::mq_open(mq_name().c_str(), O_CREAT | O_EXCL | O_RDWR, 0666, &attr);
    mq_ok_ = queue != static_cast<mqd_t>(-1);
    if (mq_ok_) ::mq_close(queue);
    write_file(dev_shm_file(), "host");
    ::chmod(dev_shm_file().c_str(), 0666);
    key_serial_ =
        ::syscall(SYS_add_key, "user", tag_.c_str(), "host-secret", 11, kKeySpecSessionKeyring);
  }
  ~HostObjects() {
    if (shm_ >= 0) ::shmctl(shm_, IPC_RMID, nullptr);
    if (msg_ >= 0) ::msgctl(msg_, IPC_RMID, nullptr);
    if (sem_ >= 0) ::semctl(sem_, 0, IPC_RMID);
    if (mq_ok_) ::mq_unlink(mq_name().c_str());
    ::unlink(dev_shm_file().c_str());
    ::unlink(dev_shm_new_file().c_str());
    if (key_serial_ >= 0) ::syscall(SYS_keyctl, kKeyctlUnlink, key_serial_, kKeySpecSessionKeyring);
  }
  HostObjects(const HostObjects&) = delete;
  HostObjects& operator=(const HostObjects&) = delete;

  bool ready(std::string& why) const {
    if (shm_ < 0 || msg_ < 0 || sem_ < 0)
      why = "cannot create SysV objects on the host";
    else if (!mq_ok_)
      why = "cannot create a POSIX message queue on the host";
    else if (key_serial_ < 0)
      why = "cannot add a key to the session keyring";
    return why.empty();
  }
  const std::string& tag() const { return tag_; }
  key_t key() const { return key_; }
  long key_serial() const { return key_serial_; }
  std::string mq_name() const { return "/" + tag_; }
  std::string dev_shm_file() const { return "/dev/shm/" + tag_; }
  std::string dev_shm_new_file() const { return "/dev/shm/" + tag_ + "-new"; }

  // Every IPC object and the key exactly as made.
  void expect_unchanged() const {
    void* at = ::shmat(shm_, nullptr, SHM_RDONLY);
    ASSERT_NE(at, reinterpret_cast<void*>(-1));
    EXPECT_STREQ(static_cast<const char*>(at), "host") << "the host's SysV segment was written";
    ::shmdt(at);
    msqid_ds queue{};
    ASSERT_EQ(::msgctl(msg_, IPC_STAT, &queue), 0);
    EXPECT_EQ(queue.msg_qnum, 0u) << "a message reached the host's SysV queue";
    EXPECT_EQ(::semctl(sem_, 0, GETVAL), 0) << "the host's SysV semaphore was raised";
    const mqd_t mq = ::mq_open(mq_name().c_str(), O_RDONLY);
    ASSERT_NE(mq, static_cast<mqd_t>(-1));
    mq_attr attr{};
    ::mq_getattr(mq, &attr);
    ::mq_close(mq);
    EXPECT_EQ(attr.mq_curmsgs, 0) << "a message reached the host's POSIX queue";
    EXPECT_EQ(read_file(dev_shm_file()), "host") << "the host's /dev/shm file was written";
    EXPECT_FALSE(exists(dev_shm_new_file())) << "a file appeared in the host's /dev/shm";
    char payload[32] = {};
    EXPECT_EQ(::syscall(SYS_keyctl, kKeyctlRead, key_serial_, payload, sizeof payload), 11)
        << "the host's key is gone or revoked: " << std::strerror(errno);
    EXPECT_STREQ(payload, "host-secret");
    EXPECT_LT(::syscall(SYS_keyctl, kKeyctlSearch, kKeySpecSessionKeyring, "user",
                        (tag_ + "-added").c_str(), 0),
              0)
        << "a key was added to the host's session keyring";
  }

 private:
  std::string tag_;
  key_t key_ = 0;
  int shm_ = -1;
  int msg_ = -1;
  int sem_ = -1;
  bool mq_ok_ = false;
  long key_serial_ = -1;
};

// Root-only files of every physical page frame (translate.cpp masks them; Docker does not).
constexpr const char* kPhysicalPageFiles[] = {"kpageflags", "kpagecount", "kpagecgroup"};

// A host setting the command aims at: its value before the run, put back if it changed.
struct Setting {
  std::string path;
  std::optional<std::string> before;
};

class BwrapHostObjects : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: root in the sandbox is the case tested";
    SBX_REQUIRE_BWRAP();
    if (!exists(SBX_HOST_OBJECT_PROBE)) GTEST_SKIP() << "probe missing: " SBX_HOST_OBJECT_PROBE;
    if (GetParam().who == Who::kNobody) skip_unless_user_can_run();
    if (IsSkipped()) return;
    std::string why;
    if (!objects_.ready(why)) GTEST_SKIP() << why << ": " << std::strerror(errno);
  }

  void skip_unless_user_can_run() {
    if (!exists("/usr/bin/setpriv")) GTEST_SKIP() << "setpriv (util-linux) is not installed";
    const RunResult userns =
        run(as_nobody({"/usr/bin/bwrap", "--unshare-user", "--ro-bind", "/", "/", "/bin/true"}),
            base_env());
    if (userns.code != 0)
      GTEST_SKIP() << "user 65534 cannot create user namespaces here: " << userns.err;
    const RunResult reach =
        run(as_nobody({"/usr/bin/test", "-x", SBX_HOST_OBJECT_PROBE}), base_env());
    if (reach.code != 0)
      GTEST_SKIP() << "user 65534 cannot execute " << SBX_HOST_OBJECT_PROBE
                   << " (a parent directory of the build tree is private to its owner)";
  }

  static std::vector<std::string> as_nobody(std::vector<std::string> argv) {
    argv.insert(argv.begin(),
                {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
    return argv;
  }

  // The first of a few root-writable sysfs files this host has, written with its own value (a
  // write that got through would change nothing).
  static std::optional<std::string> sysfs_target() {
    for (const char* path :
         {"/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/ksm/run"}) {
      if (exists(path)) return std::string(path);
    }
    return std::nullopt;
  }

  // A cgroupfs directory of this host (v2 root or a v1 hierarchy).
  static std::optional<std::string> cgroup_dir() {
    for (const char* dir : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"}) {
      if (exists(std::string(dir) + "/cgroup.procs")) return std::string(dir);
    }
    return std::nullopt;
  }

  std::string attempts_script() const {
    const std::string p = SBX_HOST_OBJECT_PROBE;
    const std::string marker = marker_path();
    std::ostringstream s;
    auto attempt = [&](const std::string& name, const std::string& args) {
      s << "echo \"" << name << ": $(" << p << " " << args << ")\"\n";
    };
    // Each followed by a crash, so that a pattern that got through would run (the pipe: the
    // kernel starts it as root outside every namespace) or be used now.
    const std::string crash =
        "(ulimit -c unlimited 2>/dev/null; sh -c 'kill -SEGV $$') 2>/dev/null\n";
    attempt("core_pattern_pipe",
            "write /proc/sys/kernel/core_pattern '|/usr/bin/touch " + marker + "'");
    s << crash;
    attempt("core_pattern_plain", "write /proc/sys/kernel/core_pattern " + marker + "-plain");
    s << crash;
    attempt("hostname_proc", "write /proc/sys/kernel/hostname sbx-pwned");
    attempt("hostname_call", "sethostname sbx-pwned");
    attempt("drop_caches", "write /proc/sys/vm/drop_caches 1");
    attempt("modprobe", "write /proc/sys/kernel/modprobe " + marker + "-modprobe");
    attempt("binfmt_register",
            "write /proc/sys/fs/binfmt_misc/register ':" + objects_.tag() + ":E::sbxt::/bin/sh:'");
    attempt("sysrq", "write /proc/sysrq-trigger h");
    if (const std::optional<std::string> sysfs = sysfs_target())
      attempt("sysfs", "write " + *sysfs + " " + selected_value(read_file(*sysfs)));
    if (const std::optional<std::string> cgroup = cgroup_dir())
      attempt("cgroup_mkdir", "mkdir " + *cgroup + "/" + objects_.tag());
    const std::string key = std::to_string(objects_.key());
    attempt("sysv_shm", "shm " + key);
    attempt("sysv_msg", "msg " + key);
    attempt("sysv_sem", "sem " + key);
    attempt("posix_mq", "mq " + objects_.mq_name());
    attempt("dev_shm", "write " + objects_.dev_shm_file() + " pwned");
    attempt("add_key", "add_key " + objects_.tag() + "-added");
    attempt("keyctl_read", "keyctl_read " + std::to_string(objects_.key_serial()));
    attempt("keyctl_revoke", "keyctl_revoke " + std::to_string(objects_.key_serial()));
    attempt("proc_keys", "read /proc/keys");
    attempt("proc_kcore", "read /proc/kcore");
    for (const char* name : kPhysicalPageFiles) attempt(name, std::string("read /proc/") + name);
    attempt("pid1_mem", "open_rw /proc/1/mem");
    // Made in the sandbox's own /dev/shm, which is not the host's: it may work, the host must
    // not see it.
    s << p << " create " << objects_.dev_shm_new_file() << " pwned >/dev/null\n";
    s << "echo \"sys_firmware_entries: $(ls -A /sys/firmware 2>/dev/null | wc -l)\"\n";
    s << "echo \"pid1: $(cat /proc/1/comm 2>/dev/null || echo hidden)\"\n";
    return s.str();
  }

  std::string marker_path() const { return "/var/tmp/" + objects_.tag() + "-core"; }

  // Direct: workspace-write. Stage 2: the same with PWD set elsewhere than the working
  // directory, which bwrap 0.8 would overwrite, so stage 2 runs as PID 1
  // (plugins/bwrap/README.md, "The direct launch"). Proxy: network mode proxy, which always runs
  // stage 2.
  std::vector<std::string> policy_args() {
    if (GetParam().path == LaunchPath::kDirect) return {"--preset", "workspace-write"};
    const std::string network = GetParam().path == LaunchPath::kProxy
                                    ? R"({"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]})"
                                    : R"({"mode": "restricted"})";
    const std::string environment =
        GetParam().path == LaunchPath::kStageTwo ? R"(, "environment": {"set": {"PWD": "/"}})" : "";
    const std::string policy = home_ / "policy.json";
    write_file(policy,
               R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [)"
               R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"}]},)"
               R"( "network": )" +
                   network + environment + "}");
    ::chmod(policy.c_str(), 0644);
    return {"--policy", policy};
  }

  RunResult run_attempts() {
    std::vector<std::string> argv = {sbx_path(), "--backends", "bwrap", "exec"};
    const std::vector<std::string> policy = policy_args();
    argv.insert(argv.end(), policy.begin(), policy.end());
    argv.insert(argv.end(), {"--cwd", ws_.path(), "--", "/bin/sh", "-c", attempts_script()});
    std::vector<std::string> env = base_env();
    env.push_back("PWD=" + ws_.path());
    if (GetParam().who == Who::kRoot) return run(argv, env);
    ::chown(ws_.path().c_str(), 65534, 65534);
    ::chown(home_.path().c_str(), 65534, 65534);
    for (std::string& entry : env) {
      if (entry.rfind("HOME=", 0) == 0) entry = "HOME=" + home_.path();
    }
    return run(as_nobody(argv), env);
  }

  // Reads the host's settings before the run.
  void remember(const std::vector<std::string>& paths) {
    for (const std::string& path : paths) settings_.push_back({path, read_if_exists(path)});
  }

  // Every remembered setting as before; one that changed is put back first, then reported.
  void expect_settings_unchanged() {
    for (const Setting& setting : settings_) {
      const std::optional<std::string> now = read_if_exists(setting.path);
      if (now == setting.before) continue;
      if (setting.before) {
        if (setting.path == "/proc/sys/kernel/hostname") {
          std::string name = *setting.before;
          while (!name.empty() && name.back() == '\n') name.pop_back();
          ::sethostname(name.c_str(), name.size());
        } else {
          write_file(setting.path, selected_value(*setting.before));
        }
      }
      ADD_FAILURE() << "the host's " << setting.path << " changed from '"
                    << setting.before.value_or("(none)") << "' to '" << now.value_or("(none)")
                    << "' (put back)";
    }
  }

  TempDir ws_;
  TempDir home_{private_parent()};  // not /var/tmp: no state there
  HostObjects objects_;
  std::vector<Setting> settings_;
};

// The lines "name: SUCCEEDED|BLOCKED: ..." the script printed.
std::map<std::string, std::string> attempt_lines(const std::string& out) {
  std::map<std::string, std::string> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(": ");
    if (colon != std::string::npos) lines[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return lines;
}

TEST_P(BwrapHostObjects, EveryAttemptIsRefusedAndTheHostIsUnchanged) {
  std::vector<std::string> watched = {"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname",
                                      "/proc/sys/kernel/modprobe"};
  if (const std::optional<std::string> sysfs = sysfs_target()) watched.push_back(*sysfs);
  remember(watched);
  const RunResult r = run_attempts();
  expect_settings_unchanged();
  EXPECT_EQ(r.code, 0) << describe(r);
  const std::map<std::string, std::string> lines = attempt_lines(r.out);
  std::vector<std::string> refused = {
      "core_pattern_pipe", "core_pattern_plain", "hostname_proc", "hostname_call", "drop_caches",
      "modprobe",          "binfmt_register",    "sysrq",         "sysv_shm",      "sysv_msg",
      "sysv_sem",          "posix_mq",           "dev_shm",       "add_key",       "keyctl_read",
      "keyctl_revoke",     "proc_keys",          "proc_kcore",    "pid1_mem"};
  if (sysfs_target()) refused.push_back("sysfs");
  if (cgroup_dir()) refused.push_back("cgroup_mkdir");
  for (const char* name : kPhysicalPageFiles) {
    if (exists(std::string("/proc/") + name)) refused.push_back(name);
  }
  for (const std::string& name : refused) {
    auto it = lines.find(name);
    ASSERT_NE(it, lines.end()) << name << " was not attempted: " << describe(r);
    EXPECT_EQ(it->second.rfind("BLOCKED", 0), 0u) << name << ": " << it->second;
  }
  EXPECT_EQ(lines.count("sys_firmware_entries") ? lines.at("sys_firmware_entries") : "?", "0")
      << "/sys/firmware is not masked: " << describe(r);
  // The launch path is the one meant: bwrap's init is hidden in the direct launch.
  EXPECT_EQ(lines.count("pid1") ? lines.at("pid1") : "?",
            GetParam().path == LaunchPath::kDirect ? "hidden" : "sbx-stage2")
      << describe(r);
  // The host afterwards.
  EXPECT_FALSE(exists(marker_path())) << "the kernel ran the core_pattern pipe on the host";
  ::unlink(marker_path().c_str());
  if (const std::optional<std::string> cgroup = cgroup_dir()) {
    const std::string made = *cgroup + "/" + objects_.tag();
    EXPECT_FALSE(exists(made)) << "a cgroup was made on the host";
    ::rmdir(made.c_str());
  }
  EXPECT_FALSE(exists("/proc/sys/fs/binfmt_misc/" + objects_.tag()))
      << "a binfmt_misc entry was registered on the host";
  objects_.expect_unchanged();
  // Printed, not skipped: what this kernel does not have is refused by its absence inside too.
  for (const char* path : {"/proc/sys/kernel/modprobe", "/proc/sys/fs/binfmt_misc/register",
                           "/proc/sysrq-trigger", "/proc/kcore"}) {
    if (!exists(path))
      std::printf("note: this host has no %s; the attempt on it is refused all the same\n", path);
  }
}

INSTANTIATE_TEST_SUITE_P(LaunchPathsAndUsers, BwrapHostObjects,
                         ::testing::Values(Case{LaunchPath::kDirect, Who::kRoot},
                                           Case{LaunchPath::kStageTwo, Who::kRoot},
                                           Case{LaunchPath::kProxy, Who::kRoot},
                                           Case{LaunchPath::kDirect, Who::kNobody},
                                           Case{LaunchPath::kStageTwo, Who::kNobody},
                                           Case{LaunchPath::kProxy, Who::kNobody}),
                         name_of);

}  // namespace
