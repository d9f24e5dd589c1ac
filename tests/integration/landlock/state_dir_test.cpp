// sbx's per-user state directories (sbx/sdk/private_state.hpp: bwrap's registry and probe
// cache, the proxy's sockets, the kept probe answers, and ~/.cache/sbx holding them when there
// is no runtime directory) are out of every sandbox's reach (issue #32 B2). Landlock cannot
// keep a directory inside a writable root read-only, so it refuses a writable root that holds
// one (125, the directory and what to do: XDG_RUNTIME_DIR or XDG_CACHE_HOME outside the
// workspace), and every backend refuses a writable root inside one. Nothing is written there.
// As root (state in /run: HOME as the workspace still runs) and as user 65534 without a
// runtime directory (state in ~/.cache/sbx); and with a runtime directory in use, the place a
// later run without it would use (issue #32 B3).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/private_home.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

class LandlockStateDir : public ::testing::TestWithParam<Identity> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
  }
};

// ":root" readable, ":cwd" and `also` (if given) writable, no protected names (Landlock
// cannot keep them).
std::string write_policy(const TempDir& dir, const std::string& also = "") {
  std::string entries = R"({"path":":root","access":"read"},{"path":":cwd","access":"write"})";
  if (!also.empty()) entries += R"(,{"path":")" + also + R"(","access":"write"})";
  return dir.write("policy.json",
                   R"({"version":1,"filesystem":{"kind":"restricted","entries":[)" + entries +
                       R"(],"protected_names":[]},"network":{"mode":"restricted"}})");
}

// env_for(who) with HOME=`home` and no XDG_* variable (no runtime directory for user 65534).
std::vector<std::string> env_with_home(Identity who, const std::string& home) {
  std::vector<std::string> env;
  for (const std::string& entry : env_for(who))
    if (entry.rfind("HOME=", 0) != 0 && entry.rfind("XDG_", 0) != 0) env.push_back(entry);
  env.push_back("HOME=" + home);
  return env;
}

// Where the installed sbx keeps bwrap's state for `who` with HOME=`home`: root's /run, else
// the cache (user 65534 has no /run/user/65534 here; skipped by the caller otherwise).
std::string bwrap_state_dir(Identity who, const std::string& home) {
  return who == Identity::kRoot ? "/run/sbx-bwrap" : home + "/.cache/sbx/bwrap";
}

const char* kPlant =
    "for f in \"$S/planted\" \"$S/probe.cache\"; do echo forged > \"$f\"; done; "
    "echo ran";

TEST_P(LandlockStateDir, AWritableRootInsideTheStateDirectoryIsRefused) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "landlock");
  if (who != Identity::kRoot && exists("/run/user/" + std::to_string(uid_of(who))))
    GTEST_SKIP() << "/run/user/" << uid_of(who) << " exists here: the state would go there";
  PrivateHome home(who);
  TempDir conf, ws;
  give_to(who, conf.path());
  give_to(who, ws.path());
  std::vector<std::string> env = env_with_home(who, home.path());
  // A first run makes the state directories (resolution does, before any policy is applied).
  const RunResult first =
      exec_as(who, "landlock", {"--policy", write_policy(conf)}, ws.path(), {"/bin/true"}, env);
  ASSERT_EQ(first.code, 0) << describe(first);
  const std::string state = bwrap_state_dir(who, home.path());
  ASSERT_TRUE(exists(state)) << state;
  const std::string policy = write_policy(conf, state);
  env.push_back("S=" + state);
  const RunResult r =
      exec_as(who, "landlock", {"--policy", policy}, ws.path(), {"/bin/sh", "-c", kPlant}, env);
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_EQ(r.out.find("ran"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("writable root '" + state + "' lies inside sbx's state directory '"),
            std::string::npos)
      << describe(r);
  EXPECT_FALSE(exists(state + "/planted"));
  EXPECT_EQ(read_file(state + "/probe.cache").find("forged"), std::string::npos);
}

// HOME as the workspace. As user 65534 without a runtime directory ~/.cache/sbx lies inside it:
// refused, naming the directory and the fix, and the command never runs. As root the state is
// in /run: the run goes ahead.
TEST_P(LandlockStateDir, AWorkspaceHoldingTheStateDirectoryIsRefusedWithTheFix) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "landlock");
  if (who != Identity::kRoot && exists("/run/user/" + std::to_string(uid_of(who))))
    GTEST_SKIP() << "/run/user/" << uid_of(who) << " exists here: the state would go there";
  PrivateHome home(who);
  TempDir conf;
  give_to(who, conf.path());
  std::vector<std::string> env = env_with_home(who, home.path());
  // sbx's settings directory (~/.config/sbx) is kept out of the writable home too, which
  // Landlock cannot do either: outside it here, so that only the state decides.
  env.push_back("XDG_CONFIG_HOME=" + conf.path() + "/config");
  const std::string state = bwrap_state_dir(who, home.path());
  env.push_back("S=" + state);
  const RunResult r = exec_as(who, "landlock", {"--policy", write_policy(conf)}, home.path(),
                              {"/bin/sh", "-c", kPlant}, env);
  if (who == Identity::kRoot) {
    EXPECT_EQ(r.code, 0) << "root's state is in /run, outside HOME: " << describe(r);
    EXPECT_EQ(r.out, "ran\n") << describe(r);
    EXPECT_FALSE(exists(state + "/planted")) << "the command wrote /run/sbx-bwrap";
    return;
  }
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_EQ(r.out.find("ran"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("sbx's state directory '" + home.path() + "/.cache/sbx"), std::string::npos)
      << describe(r);
  EXPECT_NE(r.err.find("', which lies inside the writable root '" + home.path() + "'"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.err.find("and ~/.cache/sbx or $XDG_CACHE_HOME/sbx, which a run without a private "
                       "runtime directory uses): choose writable roots that do not hold it, or "
                       "use a backend that can carve out (bwrap)"),
            std::string::npos)
      << describe(r);
  EXPECT_FALSE(exists(state + "/planted"));
  EXPECT_EQ(read_file(state + "/probe.cache").find("forged"), std::string::npos);
}

// Issue #32 B3: with XDG_RUNTIME_DIR in use, the place a later run without it keeps its state
// (the user's ~/.cache/sbx, root's /run/sbx-*) was not among the state directories, so Landlock
// ran with a writable root holding it, and the command could plant a state directory there that
// the later run trusted. Every place a run of the user could use counts: refused (125), naming
// it, and the command never runs.
TEST_P(LandlockStateDir, AWritableRootHoldingALaterRunsStateDirectoryIsRefused) {
  const Identity who = GetParam();
  SBX_REQUIRE_IDENTITY(who, "landlock");
  PrivateHome home(who);
  TempDir runtime(private_parent());  // mkdtemp: 0700
  give_to(who, runtime.path());
  TempDir conf, ws;
  give_to(who, conf.path());
  give_to(who, ws.path());
  const bool root = who == Identity::kRoot;
  std::vector<std::string> env = env_with_home(who, home.path());
  env.push_back("XDG_RUNTIME_DIR=" + runtime.path());
  env.push_back("XDG_CONFIG_HOME=" + conf.path() + "/config");  // as above: only the state
  const std::string fallback = root ? "/run/sbx-bwrap" : home.path() + "/.cache/sbx";
  const std::string planted = fallback + "/planted-" + std::to_string(::getpid());
  env.push_back("P=" + planted);
  // The user's HOME as the workspace; root's /run writable.
  const std::string policy = write_policy(conf, root ? "/run" : "");
  const RunResult r = exec_as(who, "landlock", {"--policy", policy}, root ? ws.path() : home.path(),
                              {"/bin/sh", "-c", "echo forged > \"$P\" 2>/dev/null; echo ran"}, env);
  const bool planted_file = exists(planted);
  ::unlink(planted.c_str());
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_EQ(r.out.find("ran"), std::string::npos) << describe(r);
  // Root's first: /run/sbx-probe.
  const std::string named = root ? "/run/sbx-" : fallback;
  EXPECT_NE(r.err.find("sbx's state directory '" + named), std::string::npos) << describe(r);
  EXPECT_FALSE(planted_file) << planted;
}

INSTANTIATE_TEST_SUITE_P(Identities, LandlockStateDir, ::testing::ValuesIn(kIdentities),
                         identity_test_name);

}  // namespace
