// Policies that restrict reads (":minimal", or no ":root" entry) start, enforce, and let the
// command write where it may; and a failure of bwrap itself before the command starts comes
// back as 125 with bwrap's message, never as an exit status the command could have produced.
#include <gtest/gtest.h>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class BwrapRestrictedReads : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    ASSERT_FALSE(ws_.path().empty() || outside_.path().empty() || pol_.path().empty());
    write_file(outside_ / "secret.txt", "TOPSECRET-OUTSIDE\n");
  }
  // A policy file with these filesystem entries (JSON objects, comma-separated).
  std::string policy(const std::string& entries) {
    write_file(pol_ / "p.json", R"({"version": 1, "filesystem": {"kind": "restricted",
      "entries": [)" + entries + R"(]}, "network": {"mode": "restricted"}})");
    return pol_ / "p.json";
  }
  static std::string entry(const std::string& path, const std::string& access) {
    return R"({"path": ")" + path + R"(", "access": ")" + access + R"("})";
  }
  TempDir ws_{"/var/tmp"};       // the workspace
  TempDir outside_{"/var/tmp"};  // outside every granted path
  TempDir pol_;                  // policy files
};

TEST_F(BwrapRestrictedReads, MinimalPlatformAndWritableCwdRunAndEnforce) {
  const std::string p = policy(entry(":minimal", "read") + "," + entry(":cwd", "write"));
  const RunResult r = sh(ws_.path(),
                         "echo ws > out.txt && cat out.txt && test -r /etc/passwd && echo etc-ok; "
                         "cat " +
                             outside_ / "secret.txt" +
                             "; ls /root /home 2>/dev/null; "
                             "echo x > " +
                             outside_ / "new.txt" + "; true",
                         {"--policy", p});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("ws\netc-ok\n"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << describe(r);
  EXPECT_EQ(read_file(ws_ / "out.txt"), "ws\n");
  EXPECT_FALSE(exists(outside_ / "new.txt"));
}

// Codex's split carve-outs: a readable directory under an unreadable parent, a writable one
// below it, and a denied one next to that.
TEST_F(BwrapRestrictedReads, SplitCarveOutsUnderAnUnreadableParentRunAndEnforce) {
  fs::create_directories(ws_ / "parent/docs/out");
  fs::create_directories(ws_ / "parent/docs/private");
  fs::create_directories(ws_ / "parent/other");
  write_file(ws_ / "parent/docs/readme.txt", "readable\n");
  write_file(ws_ / "parent/docs/private/key", "TOPSECRET-PRIVATE\n");
  write_file(ws_ / "parent/other/file.txt", "TOPSECRET-OTHER\n");
  const std::string p = policy(
      entry(":minimal", "read") + "," + entry(ws_ / "parent/docs", "read") + "," +
      entry(ws_ / "parent/docs/out", "write") + "," + entry(ws_ / "parent/docs/private", "deny"));
  const RunResult r = sh(ws_ / "parent/docs/out",
                         "cat ../readme.txt; echo made > made.txt; cat ../private/key "
                         "../../other/file.txt 2>/dev/null; echo x > ../new.txt; true",
                         {"--policy", p});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("readable"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << describe(r);
  EXPECT_EQ(read_file(ws_ / "parent/docs/out/made.txt"), "made\n");
  EXPECT_FALSE(exists(ws_ / "parent/docs/new.txt"));
}

TEST_F(BwrapRestrictedReads, SeveralDeniedFilesRunAndStayUnreadable) {
  fs::create_directories(ws_ / "sub");
  write_file(ws_ / "a.env", "TOPSECRET-A\n");
  write_file(ws_ / "b.env", "TOPSECRET-B\n");
  write_file(ws_ / "sub/c.env", "TOPSECRET-C\n");
  write_file(ws_ / "plain.txt", "plain\n");
  const std::string p = policy(entry(":minimal", "read") + "," + entry(":cwd", "write") + "," +
                               entry(ws_ / "a.env", "deny") + "," + entry(ws_ / "b.env", "deny") +
                               "," + entry(ws_ / "sub/c.env", "deny"));
  const RunResult r = sh(ws_.path(),
                         "cat plain.txt a.env b.env sub/c.env 2>/dev/null; echo x > a.env; "
                         "echo more >> plain.txt; true",
                         {"--policy", p});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("plain"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << describe(r);
  EXPECT_EQ(read_file(ws_ / "a.env"), "TOPSECRET-A\n");
  EXPECT_EQ(read_file(ws_ / "plain.txt"), "plain\nmore\n");
}

TEST_F(BwrapRestrictedReads, DeniedSlashTmpRunsAndHidesIt) {
  TempDir in_tmp("/tmp");
  ASSERT_FALSE(in_tmp.path().empty());
  write_file(in_tmp / "secret.txt", "TOPSECRET-TMP\n");
  for (const char* base : {":minimal", ":root"}) {
    const std::string p =
        policy(entry(base, "read") + "," + entry(":cwd", "write") + "," + entry("/tmp", "deny"));
    const RunResult r = sh(ws_.path(),
                           "echo ws > out.txt; cat " + in_tmp / "secret.txt" +
                               " 2>/dev/null; ls /tmp; echo x > /tmp/sbx-denied-tmp; true",
                           {"--policy", p});
    EXPECT_EQ(r.code, 0) << base << ": " << describe(r);
    EXPECT_EQ(r.out.find("TOPSECRET"), std::string::npos) << base << ": " << describe(r);
    EXPECT_EQ(r.out.find("sbx-bwrap-it"), std::string::npos) << base << ": " << describe(r);
    EXPECT_EQ(read_file(ws_ / "out.txt"), "ws\n") << base;
    EXPECT_FALSE(exists("/tmp/sbx-denied-tmp")) << base;
    ::unlink((ws_ / "out.txt").c_str());
  }
}

// bwrap cannot create a mount point it needs (the workspace is on a read-only mount, and a
// missing protected name must be masked): bwrap fails before the command starts. That must be
// 125 with bwrap's message, not bwrap's exit status 1. A private mount namespace holds the
// read-only mount, so nothing changes on the host.
TEST_F(BwrapRestrictedReads, BwrapFailingBeforeTheCommandIs125WithItsMessage) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a private mount namespace";
  if (!exists("/usr/bin/unshare")) GTEST_SKIP() << "unshare (util-linux) is not installed";
  const std::string script = "mount --make-rprivate / && mount --bind -o ro " + ws_.path() + " " +
                             ws_.path() + " && exec " + sbx_path() +
                             " --backends bwrap exec --preset workspace-write --cwd " + ws_.path() +
                             " -- /bin/sh -c 'echo ran; exit 1'";
  const RunResult r = run({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, base_env());
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_EQ(r.out.find("ran"), std::string::npos) << describe(r);
  // The mask's mount point is an empty file that bwrap has to create (sbx could not).
  EXPECT_NE(r.err.find("bwrap: Can't create file at"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("bwrap failed before the command started"), std::string::npos)
      << describe(r);
}

}  // namespace
