// Through the installed `sbx --backends landlock exec` with `:root` read: /dev is never readable
// wholesale. The host's other terminals and its raw block devices stay closed (a raw disk read
// would bypass every read restriction), while `ls /`, `ls /dev`, the granted device files,
// openpty() and ordinary programs keep working (plugins/landlock/README.md, "/dev").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr const char* kPython = "/usr/bin/python3";

// Opens each argument for reading (no controlling terminal, non-blocking), reads a byte and
// prints "PATH opened" or "PATH ERRNO_NAME".
constexpr const char* kOpenEach =
    "import errno, os, sys\n"
    "for p in sys.argv[1:]:\n"
    "    try:\n"
    "        fd = os.open(p, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)\n"
    "        try:\n"
    "            os.read(fd, 1)\n"
    "        except OSError:\n"
    "            pass\n"
    "        print(p, 'opened')\n"
    "    except OSError as e:\n"
    "        print(p, errno.errorcode[e.errno])\n";

std::string policy_json(const std::string& extra_entries) {
  return R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
         R"({"path":":root","access":"read"},{"path":":cwd","access":"write"})" +
         extra_entries + R"(],"protected_names":[]},"network":{"mode":"restricted"}})";
}

// A block device under /dev that this (root) process can open for reading: the sandboxed
// command, with the same uid, must not. One with data first; else any (an idle loop device
// still shows whether the node opens). Empty if the host has none.
std::string openable_block_device() {
  for (const bool want_data : {true, false}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
      const std::string name = entry.path().filename();
      if (want_data && std::atoll(read_file(entry.path() / "size").c_str()) <= 0) continue;
      const std::string dev = "/dev/" + name;
      struct stat st {};
      if (::stat(dev.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) continue;
      const int fd = ::open(dev.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;  // e.g. refused by a container's device rules
      ::close(fd);
      return dev;
    }
  }
  return {};
}

class LandlockDev : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    ASSERT_FALSE(ws_.path().empty());
    use_policy("");
  }
  void use_policy(const std::string& extra_entries) {
    policy_ = conf_ / "policy.json";
    write_file(policy_, policy_json(extra_entries));
  }
  RunResult run_sandboxed(const std::vector<std::string>& command, const std::string& input = "") {
    std::vector<std::string> argv = {sbx_path(), "--backends", "landlock", "exec", "--policy",
                                     policy_,    "--cwd",      ws_.path(), "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    return run(argv, base_env(), input);
  }
  RunResult open_each(const std::vector<std::string>& paths) {
    std::vector<std::string> command = {kPython, "-c", kOpenEach};
    command.insert(command.end(), paths.begin(), paths.end());
    return run_sandboxed(command);
  }
  TempDir ws_;
  TempDir conf_{"/var/tmp"};
  std::string policy_;
};

// A pseudo-terminal opened here stands for another session of the same user (as root: any
// session on the host); reading it would consume what is typed there, passwords included.
class HostTerminal {
 public:
  HostTerminal() {
    char name[128] = {};
    if (::openpty(&master_, &peer_, name, nullptr, nullptr) == 0) name_ = name;
  }
  ~HostTerminal() {
    if (peer_ >= 0) ::close(peer_);
    if (master_ >= 0) ::close(master_);
  }
  HostTerminal(const HostTerminal&) = delete;
  HostTerminal& operator=(const HostTerminal&) = delete;
  const std::string& name() const { return name_; }
  int master() const { return master_; }

 private:
  int master_ = -1;
  int peer_ = -1;
  std::string name_;
};

TEST_F(LandlockDev, TheHostsOtherTerminalsCannotBeRead) {
  HostTerminal terminal;
  ASSERT_FALSE(terminal.name().empty()) << std::strerror(errno);
  const RunResult r = open_each({terminal.name()});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(terminal.name() + " EACCES"), std::string::npos) << describe(r);
  // Something typed and waiting on that terminal: the sandbox must not get to it (bounded in
  // time: where the read is allowed it would wait for more input).
  ASSERT_EQ(::write(terminal.master(), "hunter2\n", 8), 8);
  const RunResult c = run_sandboxed(
      {"/bin/sh", "-c", "timeout 5 head -c 7 " + terminal.name() + " 2>/dev/null; echo read=$?"});
  EXPECT_EQ(c.out.find("hunter2"), std::string::npos) << describe(c);
  EXPECT_NE(c.out.find("read="), std::string::npos) << describe(c);
  EXPECT_EQ(c.out.find("read=0"), std::string::npos) << describe(c);
}

TEST_F(LandlockDev, RawBlockDevicesCannotBeRead) {
  const std::string device = openable_block_device();
  if (device.empty())
    GTEST_SKIP() << "this host has no block device under /dev (see /sys/block) that root can open";
  const RunResult r = open_each({device});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(device + " EACCES"), std::string::npos) << describe(r);
}

TEST_F(LandlockDev, DeviceNodesBeyondTheGrantedFilesStayClosed) {
  // Whatever exists of these on the host (kernel log, consoles, shared memory, fuse...).
  std::vector<std::string> present;
  for (const char* p : {"/dev/kmsg", "/dev/console", "/dev/tty1", "/dev/fuse", "/dev/vcs",
                        "/dev/mem", "/dev/port", "/dev/hwrng", "/dev/zram0", "/dev/loop0"})
    if (exists(p)) present.push_back(p);
  if (present.empty()) GTEST_SKIP() << "none of the probed device nodes exists on this host";
  const RunResult r = open_each(present);
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const std::string& p : present)
    EXPECT_NE(r.out.find(p + " EACCES"), std::string::npos) << p << ": " << describe(r);
}

TEST_F(LandlockDev, ListingAndTheGrantedDevicesKeepWorking) {
  const std::string script =
      "ls / > /dev/null && echo ls-root=ok; "
      "ls /dev | grep -qx null && echo ls-dev=ok; "
      "cat /dev/null && echo cat-null=ok; "
      "test \"$(head -c1 /dev/urandom | wc -c)\" = 1 && echo urandom=ok; "
      "head -c4 /dev/zero | od -An -tx1 | grep -q '00 00 00 00' && echo zero=ok; "
      "echo x > /dev/null && echo write-null=ok; "
      "echo piped | cat /dev/stdin | grep -q piped && echo stdin=ok; "
      "echo to-stderr > /dev/stderr && echo stderr=ok; "
      "ls /dev/fd/ > /dev/null && echo dev-fd=ok; " +
      std::string(kPython) +
      " -c 'import os; m, s = os.openpty(); print(\"openpty=\" + str(os.isatty(s)))'";
  const RunResult r = run_sandboxed({"/bin/sh", "-c", script});
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* step : {"ls-root=ok", "ls-dev=ok", "cat-null=ok", "urandom=ok", "zero=ok",
                           "write-null=ok", "stdin=ok", "stderr=ok", "dev-fd=ok", "openpty=True"})
    EXPECT_NE(r.out.find(step), std::string::npos) << step << ": " << describe(r);
  EXPECT_NE(r.err.find("to-stderr"), std::string::npos) << describe(r);
}

TEST_F(LandlockDev, OrdinaryProgramsAndTopLevelSymlinksKeepWorking) {
  // /bin, /lib, /lib64, /sbin are symlinks into /usr on merged-/usr systems: reached through
  // them, programs and libraries must still run and read.
  const std::string script =
      "/bin/ls /usr > /dev/null && echo bin=ok; "
      "ls /lib/ > /dev/null && echo lib=ok; "
      "head -c1 /etc/hostname > /dev/null && echo etc=ok; "
      "cat /proc/self/status | grep -q '^Pid:' && echo proc=ok; "
      "ls /sys/class > /dev/null && echo sys=ok; "
      "ls /tmp > /dev/null && echo tmp=ok; "
      "echo built > out.txt && cat out.txt && "
      "/usr/bin/env python3 -c 'import json, ssl, subprocess; print(\"python=ok\")'; "
      "sh -c 'exit 3'; echo sh=$?";
  const RunResult r = run_sandboxed({"/bin/sh", "-c", script});
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* step :
       {"bin=ok", "lib=ok", "etc=ok", "proc=ok", "sys=ok", "tmp=ok", "built", "python=ok", "sh=3"})
    EXPECT_NE(r.out.find(step), std::string::npos) << step << ": " << describe(r);
  EXPECT_EQ(read_file(ws_ / "out.txt"), "built\n");
}

// A second mount of the device filesystem (a chroot's /dev, say) opens the same nodes: it is
// closed like /dev. The mount is made in a private mount namespace of the test's own, in which
// sbx (no namespaces of its own under Landlock) then runs.
TEST_F(LandlockDev, ADeviceFilesystemMountedElsewhereIsClosedToo) {
  TempDir chroot{"/var/tmp"};
  const std::string dev = chroot / "dev";
  ASSERT_EQ(::mkdir(dev.c_str(), 0755), 0) << std::strerror(errno);
  HostTerminal terminal;
  ASSERT_FALSE(terminal.name().empty()) << std::strerror(errno);
  const std::string pts = dev + terminal.name().substr(std::strlen("/dev"));
  const std::string device = openable_block_device();
  std::vector<std::string> argv = {"/usr/bin/unshare",
                                   "--mount",
                                   "--propagation",
                                   "private",
                                   "/bin/sh",
                                   "-c",
                                   "mount --rbind /dev \"$1\" || exit 99; shift; exec \"$@\"",
                                   "sh",
                                   dev,
                                   sbx_path(),
                                   "--backends",
                                   "landlock",
                                   "exec",
                                   "--policy",
                                   policy_,
                                   "--cwd",
                                   ws_.path(),
                                   "--",
                                   kPython,
                                   "-c",
                                   kOpenEach,
                                   pts,
                                   dev + "/tty1",
                                   dev + "/null"};
  if (!device.empty()) argv.push_back(dev + device.substr(std::strlen("/dev")));
  if (!exists("/usr/bin/unshare")) GTEST_SKIP() << "no /usr/bin/unshare to make a mount namespace";
  const RunResult r = run(argv, base_env());
  if (r.code == 99) GTEST_SKIP() << "could not bind /dev in a private mount namespace: " << r.err;
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(pts + " EACCES"), std::string::npos) << describe(r);
  if (exists("/dev/tty1")) {
    EXPECT_NE(r.out.find(dev + "/tty1 EACCES"), std::string::npos) << describe(r);
  }
  if (!device.empty()) {
    EXPECT_NE(r.out.find(dev + device.substr(4) + " EACCES"), std::string::npos) << describe(r);
  }
  // A granted device file is granted as a file (its inode), whichever mount reaches it.
  EXPECT_NE(r.out.find(dev + "/null opened"), std::string::npos) << describe(r);
}

TEST_F(LandlockDev, AnExplicitEntryBeneathDevIsTheUsersChoiceAndStays) {
  use_policy(R"(,{"path":"/dev/pts","access":"read"})");
  HostTerminal terminal;
  ASSERT_FALSE(terminal.name().empty()) << std::strerror(errno);
  const RunResult r = open_each({terminal.name()});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find(terminal.name() + " opened"), std::string::npos) << describe(r);
}

}  // namespace
