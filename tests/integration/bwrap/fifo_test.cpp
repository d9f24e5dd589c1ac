// Host FIFOs outside the writable roots cannot be written from a bwrap sandbox (issue #32,
// point 1): a read-only bind does not stop opening a FIFO for writing (fs/open.c
// do_dentry_open() takes write access to the mount only for !special_file()), so sbx-stage2's
// Landlock write layer (linux/landlock/write_layer.hpp) does. Through the installed `sbx exec`, in
// every launch path (the direct launch, where bwrap execs `sbx-stage2 --waiter --write-layer`;
// stage 2 as PID 1; network mode proxy), as root and as user 65534: a FIFO in /var/tmp owned by
// the identity (0600, so only the sandbox stands in the way) with a reader held open on the host
// cannot be opened for writing, and the reader receives nothing; a FIFO made in the workspace,
// workspace and /tmp writes, /dev/null and a reopened /dev/stdout still work.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

enum class FifoLaunch { kDirect, kStageTwo, kProxy };

struct FifoCase {
  FifoLaunch path;
  Identity who;
};

std::string fifo_case_name(const ::testing::TestParamInfo<FifoCase>& info) {
  const char* path = info.param.path == FifoLaunch::kDirect     ? "Direct"
                     : info.param.path == FifoLaunch::kStageTwo ? "StageTwo"
                                                                : "Proxy";
  return std::string(path) + (info.param.who == Identity::kRoot ? "AsRoot" : "AsUser65534");
}

// A FIFO on the host, outside every writable root, with a non-blocking reader held open for the
// run: a writer's open() inside does not block (a reader exists), and whatever it wrote is
// waiting in the pipe afterwards.
class HostFifo {
 public:
  explicit HostFifo(Identity who)
      : path_("/var/tmp/sbx-fifo-test-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter_++)) {
    ::unlink(path_.c_str());
    if (::mkfifo(path_.c_str(), 0600) != 0) return;
    if (::chown(path_.c_str(), uid_of(who), gid_of(who)) != 0) return;
    reader_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  }
  ~HostFifo() {
    if (reader_ >= 0) ::close(reader_);
    ::unlink(path_.c_str());
  }
  HostFifo(const HostFifo&) = delete;
  HostFifo& operator=(const HostFifo&) = delete;

  bool ready() const { return reader_ >= 0; }
  const std::string& path() const { return path_; }
  // What reached the reader (non-blocking: empty when nothing was written).
  std::string received() const {
    std::string out;
    char buffer[256];
    for (;;) {
      const ssize_t n = ::read(reader_, buffer, sizeof buffer);
      if (n <= 0) break;
      out.append(buffer, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  static inline int counter_ = 0;
  std::string path_;
  int reader_ = -1;
};

class BwrapHostFifo : public ::testing::TestWithParam<FifoCase> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_IDENTITY(GetParam().who, "bwrap");
  }

  // Reads everything, writes the working directory and /tmp. Direct: network restricted, PWD at
  // the working directory. Stage 2: PWD set elsewhere, which bwrap 0.8 would overwrite, so stage 2
  // runs as PID 1 (plugins/bwrap/README.md, "The direct launch"). Proxy: network mode
  // proxy, which always runs stage 2.
  std::vector<std::string> policy_args(const TempDir& dir) const {
    const FifoLaunch path = GetParam().path;
    const std::string network = path == FifoLaunch::kProxy
                                    ? R"({"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]})"
                                    : R"({"mode": "restricted"})";
    const std::string environment =
        path == FifoLaunch::kStageTwo ? R"(, "environment": {"set": {"PWD": "/"}})" : "";
    const std::string policy = dir / "policy.json";
    write_file(policy,
               R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [)"
               R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},)"
               R"( {"path": "/tmp", "access": "write"}]}, "network": )" +
                   network + environment + "}");
    ::chmod(dir.path().c_str(), 0755);
    ::chmod(policy.c_str(), 0644);
    return {"--policy", policy};
  }
};

TEST_P(BwrapHostFifo, HostFifoOutsideWritableRootsCannotBeWritten) {
  const Identity who = GetParam().who;
  HostFifo fifo(who);
  ASSERT_TRUE(fifo.ready()) << "cannot make " << fifo.path() << ": " << std::strerror(errno);
  TempDir ws;
  TempDir config;
  give_to(who, ws.path());
  const std::string tmp_file = "/tmp/sbx-fifo-test-tmp-" + std::to_string(::getpid());
  // The host FIFO: refused to open for writing (sh reports the failed redirection). A FIFO of
  // the workspace's own: made, written and read inside. Then ordinary writes.
  const std::string host_fifo = "if echo injected > " + fifo.path() +
                                "; then echo host_fifo=written; else echo host_fifo=refused; fi\n";
  const std::string own_fifo =
      "mkfifo own && { cat own > got & echo inside > own; wait; }; echo \"own_fifo=$(cat got)\"\n";
  const std::string tmp_write =
      "echo t > " + tmp_file + " && echo \"tmp=$(cat " + tmp_file + ")\"; rm -f " + tmp_file + "\n";
  const std::string script = host_fifo + own_fifo +
                             "echo data > file && echo \"workspace=$(cat file)\"\n" + tmp_write +
                             "echo x > /dev/null && echo dev_null=ok\n";
  const RunResult r = exec_as(who, "bwrap", policy_args(config), ws.path(),
                              {"/bin/sh", "-c", script}, env_for(who));
  ::unlink(tmp_file.c_str());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("host_fifo=refused"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << describe(r);
  EXPECT_EQ(fifo.received(), "") << "the host's reader got data from inside the sandbox";
  EXPECT_NE(r.out.find("own_fifo=inside"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("workspace=data"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("tmp=t"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("dev_null=ok"), std::string::npos) << describe(r);
}

// The caller's own descriptors, on host files outside every writable root: the output file
// opened for writing stays writable when the command reopens it as /dev/stdout (the layer grants
// the file behind a writable descriptor 0-2), the input file opened read-only does not become
// writable as /dev/stdin (a reopen goes through the host's mount, not the sandbox's read-only
// view, so without the layer root could write it).
TEST_P(BwrapHostFifo, CallerDescriptorsKeepTheirAccessWhenReopened) {
  const Identity who = GetParam().who;
  TempDir ws;
  TempDir config;
  give_to(who, ws.path());
  const std::string stem = "/var/tmp/sbx-fifo-test-" + std::to_string(::getpid());
  const std::string in = stem + "-in";
  const std::string out = stem + "-out";
  write_file(in, "original\n");
  write_file(out, "");
  for (const std::string& file : {in, out}) {
    ::chmod(file.c_str(), 0600);
    ASSERT_EQ(::chown(file.c_str(), uid_of(who), gid_of(who)), 0) << std::strerror(errno);
  }
  const std::string script =
      "echo reopened > /dev/stdout; "
      "if echo overwritten > /dev/stdin; then echo stdin=written >&2; "
      "else echo stdin=refused >&2; fi";
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$@\" < " + in + " > " + out, "sh"};
  const std::vector<std::string> sbx =
      exec_argv("bwrap", policy_args(config), ws.path(), {"/bin/sh", "-c", script});
  argv.insert(argv.end(), sbx.begin(), sbx.end());
  const RunResult r = run_as(who, argv, with_pwd(env_for(who), ws.path()));
  const std::string written = read_file(out);
  const std::string input = read_file(in);
  ::unlink(in.c_str());
  ::unlink(out.c_str());
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(written, "reopened\n") << describe(r);
  EXPECT_NE(r.err.find("stdin=refused"), std::string::npos) << describe(r);
  EXPECT_EQ(input, "original\n") << describe(r);
}

INSTANTIATE_TEST_SUITE_P(LaunchPathsAndIdentities, BwrapHostFifo,
                         ::testing::Values(FifoCase{FifoLaunch::kDirect, Identity::kRoot},
                                           FifoCase{FifoLaunch::kStageTwo, Identity::kRoot},
                                           FifoCase{FifoLaunch::kProxy, Identity::kRoot},
                                           FifoCase{FifoLaunch::kDirect, Identity::kUnprivileged},
                                           FifoCase{FifoLaunch::kStageTwo, Identity::kUnprivileged},
                                           FifoCase{FifoLaunch::kProxy, Identity::kUnprivileged}),
                         fifo_case_name);

}  // namespace
