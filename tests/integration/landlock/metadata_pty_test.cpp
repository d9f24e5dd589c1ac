// Through the installed `sbx --backends landlock exec`: metadata changes (mode, owner, times,
// extended attributes) outside the writable roots fail and leave the host's file as it was,
// while the same changes to build outputs inside the workspace work; pseudo-terminals work
// without opening the host's other terminals (plugins/landlock/README.md). As root and as an
// unprivileged user (sbx_test/identity.hpp), who owns the outside file and the other terminal,
// so that only the sandbox stops the changes.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

constexpr const char* kPtyPython = "/usr/bin/python3";

class LandlockMetadata : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_IDENTITY(who(), "landlock");
    ASSERT_FALSE(ws_.path().empty());
    ASSERT_FALSE(outside_.path().empty());
    // `:root` read, `:cwd` write, nothing else: the outside directory is only readable.
    policy_ = conf_ / "policy.json";
    write_file(policy_, R"({"version":1,"filesystem":{"kind":"restricted","entries":[)"
                        R"({"path":":root","access":"read"},{"path":":cwd","access":"write"}],)"
                        R"("protected_names":[]},"network":{"mode":"restricted"}})");
    victim_ = outside_ / "victim";
    write_file(victim_, "original\n");
    ::chmod(victim_.c_str(), 0644);
    ASSERT_EQ(::setxattr(victim_.c_str(), "user.keep", "1", 1, 0), 0) << std::strerror(errno);
    for (const TempDir* dir : {&ws_, &outside_, &conf_}) give_to(who(), dir->path());
  }
  Identity who() const { return GetParam(); }
  RunResult sh(const std::string& script) {
    give_to(who(), ws_.path());
    return exec_as(who(), "landlock", {"--policy", policy_}, ws_.path(), {"/bin/sh", "-c", script},
                   env_for(who()));
  }
  TempDir ws_;
  TempDir outside_{"/var/tmp"};
  TempDir conf_{"/var/tmp"};
  std::string policy_;
  std::string victim_;
};

struct stat stat_of(const std::string& path) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  return st;
}

TEST_P(LandlockMetadata, ChangesOutsideTheWritableRootsFailAndTheHostFileIsUnchanged) {
  const struct stat before = stat_of(victim_);
  const std::string v = victim_;
  const RunResult r = sh(
      "chmod 4777 " + v + "; echo setuid=$?; chmod 0666 " + v + "; echo mode=$?; chown 65534 " + v +
      "; echo chown=$?; chown 0:0 " + v + "; echo chown_self=$?; touch -d 2001-01-01 " + v +
      "; echo touch=$?; " + kPtyPython + " -c \"import os; os.setxattr('" + v +
      "', 'user.evil', b'1')\" 2>/dev/null; echo setxattr=$?; " + kPtyPython +
      " -c \"import os; os.removexattr('" + v + "', 'user.keep')\" 2>/dev/null; echo rmxattr=$?");
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* step :
       {"setuid=0", "mode=0", "chown=0", "chown_self=0", "touch=0", "setxattr=0", "rmxattr=0"})
    EXPECT_EQ(r.out.find(step), std::string::npos) << step << " succeeded: " << describe(r);
  EXPECT_NE(r.out.find("rmxattr="), std::string::npos) << describe(r);
  const struct stat after = stat_of(victim_);
  EXPECT_EQ(after.st_mode, before.st_mode);
  EXPECT_EQ(after.st_uid, before.st_uid);
  EXPECT_EQ(after.st_gid, before.st_gid);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  char value[8] = {};
  EXPECT_EQ(::getxattr(victim_.c_str(), "user.keep", value, sizeof value), 1);
  EXPECT_EQ(::getxattr(victim_.c_str(), "user.evil", value, sizeof value), -1);
}

TEST_P(LandlockMetadata, BuildOutputsInsideTheWorkspaceCanBeMadeExecutableAndTouched) {
  const RunResult r =
      sh("printf '#!/bin/sh\\necho built\\n' > out.sh && chmod +x out.sh && ./out.sh && "
         "touch -d 2001-01-01 out.sh && chown \"$(id -u):$(id -g)\" out.sh && " +
         std::string(kPtyPython) +
         " -c \"import os; os.setxattr('out.sh', 'user.k', b'v')\" && "
         "echo done");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("built\ndone"), std::string::npos) << describe(r);
  const struct stat st = stat_of(ws_ / "out.sh");
  EXPECT_NE(st.st_mode & 0111, 0u);
  EXPECT_LT(st.st_mtim.tv_sec, 1000000000 + 86400 * 365) << "touch -d 2001-01-01 was ignored";
}

TEST_P(LandlockMetadata, ASymlinkInsidePointingOutsideDoesNotLetChmodThrough) {
  const RunResult r = sh("ln -s " + victim_ +
                         " link && chmod 0666 link; echo chmod=$?; "
                         "touch -d 2001-01-01 link; echo touch=$?");
  EXPECT_NE(r.out.find("chmod=1"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("touch=0"), std::string::npos) << describe(r);
  EXPECT_EQ(stat_of(victim_).st_mode & 07777, 0644u);
}

TEST_P(LandlockMetadata, SetuidBitsCannotBeSetInsideTheWorkspaceEither) {
  const RunResult r =
      sh("cp /bin/true t && chmod 4755 t; echo suid=$?; chmod 2755 t; "
         "echo sgid=$?");
  EXPECT_NE(r.out.find("suid=1"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("sgid=1"), std::string::npos) << describe(r);
  EXPECT_EQ(stat_of(ws_ / "t").st_mode & (S_ISUID | S_ISGID), 0u);
}

TEST_P(LandlockMetadata, PseudoTerminalsWork) {
  const RunResult r = sh(std::string(kPtyPython) +
                         " -c 'import os; m, s = os.openpty(); print(\"pty\", os.isatty(s))' && "
                         "script -qc true /dev/null && echo script-ok");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("pty True"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("script-ok"), std::string::npos) << describe(r);
}

// The peer of /dev/ptmx is never granted as a path, so another terminal of the host cannot be
// written to (typed into a user's session); nor read, since `:root` no longer reaches /dev
// (dev_reads_test.cpp).
TEST_P(LandlockMetadata, TheHostsOtherTerminalsCannotBeWritten) {
  int master = -1;
  int peer = -1;
  char name[128] = {};
  ASSERT_EQ(::openpty(&master, &peer, name, nullptr, nullptr), 0) << std::strerror(errno);
  give_to(who(), name);  // as login(1) gives a user's session its terminal
  const RunResult r = sh("echo sbx-it-typed > " + std::string(name) + "; echo write=$?");
  pollfd pfd{master, POLLIN, 0};
  std::string seen;
  char buffer[256];
  while (::poll(&pfd, 1, 0) > 0) {
    const ssize_t n = ::read(master, buffer, sizeof buffer);
    if (n <= 0) break;
    seen.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(peer);
  ::close(master);
  EXPECT_NE(r.out.find("write="), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("write=0"), std::string::npos) << describe(r);
  EXPECT_EQ(seen.find("sbx-it-typed"), std::string::npos) << seen;
}

INSTANTIATE_TEST_SUITE_P(Identities, LandlockMetadata, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
