// The host's SysV IPC, POSIX message queues and file leases are out of reach (issue #32, points
// 1 and 6a). A sandboxed command, through the installed `sbx --backends <backend> exec`, as root
// and as user 65534, tries on objects of the host that its own identity owns (mode 0600, so that
// only the sandbox keeps it away): read a SysV shared memory segment, receive from and remove a
// SysV message queue, lower and remove a SysV semaphore, open and unlink a POSIX queue, create a
// SysV queue of its own; and takes a read lease on a host file it owns outside every writable
// root while a host writer keeps opening that file. Afterwards, from outside: every object is
// there with its contents, and the writer was never held.
//
// Landlock has no IPC namespace: the host IPC refusals (linux/seccomp/pid_scope_filter.hpp) answer
// EPERM for every IPC call. bwrap's IPC namespace (--unshare-ipc) holds none of the host's
// objects, and the run's own queues work there. F_SETLEASE is refused by both backends' argument
// rules (linux/seccomp/seccomp_filter.cpp); advisory locks on workspace files keep working (sqlite
// runs in the workspace).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

const char kShmText[] = "host-data";

std::string probe() { return SBX_IPC_LEASE_PROBE; }

union SemArg {
  int val;
  semid_ds* buf;
  unsigned short* array;
};

// Objects of the host owned by `who`, made by a child that runs as `who`: a shm segment holding
// kShmText, a msg queue with one message, a semaphore at 1, a POSIX queue with one message.
class HostIpc {
 public:
  explicit HostIpc(Identity who)
      : mq_name_("/sbx-hostipc-" + std::to_string(::getpid()) + "-" + name_of(who)) {
    int ids[3] = {-1, -1, -1};
    int channel[2];
    if (::pipe(channel) != 0) return;
    const pid_t child = ::fork();
    if (child == 0) {
      ::close(channel[0]);
      if (who != Identity::kRoot && (::setresgid(gid_of(who), gid_of(who), gid_of(who)) != 0 ||
                                     ::setresuid(uid_of(who), uid_of(who), uid_of(who)) != 0))
        ::_exit(1);
      make(ids);
      const bool written = ::write(channel[1], ids, sizeof ids) == sizeof ids;
      ::_exit(written ? 0 : 1);
    }
    ::close(channel[1]);
    const bool read_all = ::read(channel[0], ids, sizeof ids) == sizeof ids;
    ::close(channel[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!read_all) return;
    shm_ = ids[0];
    msg_ = ids[1];
    sem_ = ids[2];
  }
  ~HostIpc() {
    if (shm_ >= 0) ::shmctl(shm_, IPC_RMID, nullptr);
    if (msg_ >= 0) ::msgctl(msg_, IPC_RMID, nullptr);
    if (sem_ >= 0) ::semctl(sem_, 0, IPC_RMID);
    ::mq_unlink(mq_name_.c_str());
  }
  HostIpc(const HostIpc&) = delete;
  HostIpc& operator=(const HostIpc&) = delete;

  bool ready() const { return shm_ >= 0 && msg_ >= 0 && sem_ >= 0 && mq_count() == 1; }
  int shm() const { return shm_; }
  int msg() const { return msg_; }
  int sem() const { return sem_; }
  const std::string& mq_name() const { return mq_name_; }

  // Each object still there, as made.
  void expect_unchanged() const {
    void* at = ::shmat(shm_, nullptr, SHM_RDONLY);
    ASSERT_NE(at, reinterpret_cast<void*>(-1)) << "the host's shm segment is gone";
    EXPECT_STREQ(static_cast<const char*>(at), kShmText) << "the host's shm segment changed";
    ::shmdt(at);
    msqid_ds queue{};
    ASSERT_EQ(::msgctl(msg_, IPC_STAT, &queue), 0) << "the host's msg queue is gone";
    EXPECT_EQ(queue.msg_qnum, 1u) << "the host's msg queue lost its message";
    EXPECT_EQ(::semctl(sem_, 0, GETVAL), 1) << "the host's semaphore changed or is gone";
    EXPECT_EQ(mq_count(), 1) << "the host's POSIX queue is gone or lost its message";
  }

 private:
  void make(int ids[3]) const {
    ids[0] = ::shmget(IPC_PRIVATE, 64, IPC_CREAT | 0600);
    if (ids[0] >= 0) {
      void* at = ::shmat(ids[0], nullptr, 0);
      if (at != reinterpret_cast<void*>(-1)) {
        std::memcpy(at, kShmText, sizeof kShmText);
        ::shmdt(at);
      }
    }
    ids[1] = ::msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    struct {
      long type;
      char text[8];
    } message{1, "host"};
    if (ids[1] >= 0) ::msgsnd(ids[1], &message, sizeof message.text, IPC_NOWAIT);
    ids[2] = ::semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
    SemArg one{};
    one.val = 1;
    if (ids[2] >= 0) ::semctl(ids[2], 0, SETVAL, one);
    mq_attr attr{};
    attr.mq_maxmsg = 4;
    attr.mq_msgsize = 16;
    const mqd_t mq = ::mq_open(mq_name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
    if (mq != static_cast<mqd_t>(-1)) {
      ::mq_send(mq, "host", 4, 0);
      ::mq_close(mq);
    }
  }

  // The messages in the POSIX queue, -1 when it is gone.
  long mq_count() const {
    const mqd_t mq = ::mq_open(mq_name_.c_str(), O_RDONLY);
    if (mq == static_cast<mqd_t>(-1)) return -1;
    mq_attr attr{};
    ::mq_getattr(mq, &attr);
    ::mq_close(mq);
    return attr.mq_curmsgs;
  }

  std::string mq_name_;
  int shm_ = -1;
  int msg_ = -1;
  int sem_ = -1;
};

// Keeps opening `path` for writing without blocking (O_NONBLOCK: a lease makes open() fail with
// EWOULDBLOCK instead of waiting, fcntl(2)) until stopped; counts the opens a lease held.
class HostWriter {
 public:
  explicit HostWriter(std::string path) : path_(std::move(path)), thread_([this] { loop(); }) {}
  ~HostWriter() { stop(); }
  HostWriter(const HostWriter&) = delete;
  HostWriter& operator=(const HostWriter&) = delete;

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int held() const { return held_; }
  int opened() const { return opened_; }

 private:
  void loop() {
    while (!stop_) {
      const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        ++opened_;
        ::close(fd);
      } else if (errno == EWOULDBLOCK) {
        ++held_;
      }
      // A pace, not a wait: the writer tries throughout the run (a granted lease's holder waits
      // for one of these tries, ipc_lease_probe.cpp).
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  std::string path_;
  std::atomic<bool> stop_{false};
  std::atomic<int> held_{0};
  std::atomic<int> opened_{0};
  std::thread thread_;
};

std::map<std::string, std::string> attempt_lines(const std::string& out) {
  std::map<std::string, std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const std::size_t colon = line.find(": ");
    if (colon != std::string::npos) lines[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return lines;
}

// backend; filesystem kind ("restricted": Landlock's refusals ride in the metadata guard's
// program; "unrestricted": no guard, the pid scope's own program carries them); who starts sbx.
using Param = std::tuple<std::string, std::string, Identity>;

class HostIpcAndLeases : public ::testing::TestWithParam<Param> {
 protected:
  const std::string& backend() const { return std::get<0>(GetParam()); }
  const std::string& filesystem() const { return std::get<1>(GetParam()); }
  Identity who() const { return std::get<2>(GetParam()); }
  bool landlock() const { return backend() == "landlock"; }

  // The policy, readable by either identity: the working directory writable (restricted) or
  // everything (unrestricted); no protected names (their masks are not what is tested here).
  std::string policy_file() const {
    const std::string path = conf_ / (filesystem() + ".json");
    const std::string filesystem_json =
        filesystem() == "restricted"
            ? R"({"kind":"restricted","entries":[{"path":":root","access":"read"},)"
              R"({"path":":cwd","access":"write"}],"protected_names":[]})"
            : R"({"kind":"unrestricted"})";
    write_file(path, R"({"version":1,"filesystem":)" + filesystem_json +
                         R"(,"network":{"mode":"restricted"}})");
    ::chmod(conf_.path().c_str(), 0755);
    ::chmod(path.c_str(), 0644);
    return path;
  }

  TempDir conf_{"/var/tmp"};

  std::string script(const HostIpc& ipc, const std::string& leased) const {
    const std::string p = probe();
    std::ostringstream s;
    auto attempt = [&](const std::string& name, const std::string& args) {
      s << "echo \"" << name << ": $(" << p << " " << args << ")\"\n";
    };
    attempt("shm_read", "shm_read " + std::to_string(ipc.shm()));
    attempt("shm_rmid", "shm_rmid " + std::to_string(ipc.shm()));
    attempt("msg_receive", "msg_receive " + std::to_string(ipc.msg()));
    attempt("msg_rmid", "msg_rmid " + std::to_string(ipc.msg()));
    attempt("sem_lower", "sem_lower " + std::to_string(ipc.sem()));
    attempt("sem_rmid", "sem_rmid " + std::to_string(ipc.sem()));
    attempt("mq_open", "mq_open " + ipc.mq_name());
    attempt("mq_unlink", "mq_unlink " + ipc.mq_name());
    attempt("msg_private", "msg_private");
    attempt("mq_own", "mq_own " + ipc.mq_name() + "-own");
    attempt("lease", "lease " + leased);
    attempt("flock", "flock lockfile");
    attempt("setlk", "setlk lockfile");
    attempt("ofd_setlk", "ofd_setlk lockfile");
    s << "echo \"sqlite: $(sqlite3 db.sqlite 'create table t(x); insert into t values(7); "
         "select x from t;' 2>&1)\"\n";
    return s.str();
  }
};

TEST_P(HostIpcAndLeases, HostObjectsAreRefusedAndWorkspaceLocksWork) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to make objects owned by either identity)";
  if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  const std::string why = backend_unavailable(backend());
  if (!why.empty()) GTEST_SKIP() << backend() << " is not available here: " << why;
  SBX_REQUIRE_IDENTITY(who(), backend(), {probe()});
  if (!exists("/usr/bin/sqlite3")) GTEST_SKIP() << "sqlite3 is not installed";

  TempDir ws("/var/tmp");
  // The leased file: the identity's own, readable to the run, outside every writable root.
  TempDir outside("/var/tmp");
  const std::string leased = outside.write("owned.txt", "host file\n");
  give_to(who(), ws.path());
  give_to(who(), outside.path());
  HostIpc ipc(who());
  ASSERT_TRUE(ipc.ready()) << "could not make the host's IPC objects: " << std::strerror(errno);

  HostWriter writer(leased);
  const RunResult r = exec_as(who(), backend(), {"--policy", policy_file()}, ws.path(),
                              {"/bin/sh", "-c", script(ipc, leased)}, env_for(who()));
  writer.stop();
  EXPECT_EQ(r.code, 0) << describe(r);
  const std::map<std::string, std::string> lines = attempt_lines(r.out);
  auto line = [&](const std::string& name) {
    auto it = lines.find(name);
    return it == lines.end() ? "(not attempted)" : it->second;
  };
  // The host's objects, by id or name: refused (EPERM under Landlock, no such object in bwrap's
  // IPC namespace).
  for (const char* name : {"shm_read", "shm_rmid", "msg_receive", "msg_rmid", "sem_lower",
                           "sem_rmid", "mq_open", "mq_unlink"}) {
    EXPECT_EQ(line(name).rfind("BLOCKED", 0), 0u) << name << ": " << line(name) << "\n"
                                                  << describe(r);
    if (landlock()) {
      EXPECT_EQ(line(name), "BLOCKED: Operation not permitted") << name;
    }
  }
  // Objects of the run's own: in bwrap's namespace they work; under Landlock they would be the
  // host's, outliving the run. A POSIX queue is a file on the namespace's internal mqueue mount:
  // with writes restricted, bwrap's Landlock write layer grants no write beneath it (it has no
  // path to grant), so creating one is refused there (EACCES, plugins/bwrap/README.md).
  for (const char* name : {"msg_private", "mq_own"}) {
    std::string expected = landlock() ? "BLOCKED: Operation not permitted" : "SUCCEEDED";
    if (!landlock() && filesystem() == "restricted" && std::string(name) == "mq_own")
      expected = "BLOCKED: Permission denied";
    EXPECT_EQ(line(name), expected) << name << "\n" << describe(r);
  }
  EXPECT_EQ(line("lease"), "BLOCKED: Operation not permitted") << describe(r);
  for (const char* name : {"flock", "setlk", "ofd_setlk"})
    EXPECT_EQ(line(name), "SUCCEEDED") << name << "\n" << describe(r);
  EXPECT_EQ(line("sqlite"), "7") << describe(r);
  // The host afterwards.
  ipc.expect_unchanged();
  EXPECT_EQ(writer.held(), 0) << "a lease held the host's writer";
  EXPECT_GT(writer.opened(), 0) << "the host's writer never ran";
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" +
         name_of(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(BackendsFilesystemsAndUsers, HostIpcAndLeases,
                         ::testing::Combine(::testing::Values("bwrap", "landlock"),
                                            ::testing::Values("restricted", "unrestricted"),
                                            ::testing::ValuesIn(kIdentities)),
                         param_name);

}  // namespace
