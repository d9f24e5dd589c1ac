// Renames and hard links across directories inside the writable roots work under bwrap, and
// still fail into or out of a protected path. Through the installed `sbx exec`, in every launch
// path (direct with the waiter's write layer, stage 2 as PID 1, network mode proxy), as root
// and as user 65534.
//
// The regression: every cross-directory rename(2) and link(2) inside the workspace failed with
// EXDEV, so rustc could not move `deps/rmetaXXXX/full.rmeta` to `deps/lib<crate>-<hash>.rmeta`
// and `cargo build` of a fresh library crate failed ("failed to write ...rmeta: Invalid
// cross-device link"). The cause was two Landlock domains stacked on the command, the scope and
// the write layer: Landlock denies reparenting in every layer that does not grant
// LANDLOCK_ACCESS_FS_REFER, handled or not, so the scope-only layer (which cannot grant it)
// refused what the write layer allowed (linux/landlock/write_layer.hpp). Bare bwrap and
// Landlock mode (one domain) never did.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "sbx_test/files.hpp"
#include "sbx_test/identity.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using namespace sbx::test;

enum class Launch { kDirect, kStageTwo, kProxy };

struct ReparentCase {
  Launch path;
  Identity who;
};

std::string reparent_case_text(const ReparentCase& c) {
  const char* path = c.path == Launch::kDirect     ? "Direct"
                     : c.path == Launch::kStageTwo ? "StageTwo"
                                                   : "Proxy";
  return std::string(path) + (c.who == Identity::kRoot ? "AsRoot" : "AsUser65534");
}

void PrintTo(const ReparentCase& c, std::ostream* os) { *os << reparent_case_text(c); }

std::string reparent_case_name(const ::testing::TestParamInfo<ReparentCase>& info) {
  return reparent_case_text(info.param);
}

// `sbx_escape_probe OP OLD NEW` as a line of a script, its report prefixed with `label=`.
std::string move(const std::string& label, const std::string& op, const std::string& from,
                 const std::string& to) {
  return "echo \"" + label + "=$(" + probe_path() + " " + op + " '" + from + "' '" + to + "')\"\n";
}

// Whether the probe's line `label=` reports `outcome` ("SUCCEEDED", or "BLOCKED" with any errno).
bool reported(const RunResult& r, const std::string& label, const std::string& outcome) {
  return r.out.find(label + "=" + outcome + (outcome == "BLOCKED" ? ": " : "\n")) !=
         std::string::npos;
}

// cargo as the test's PATH finds it (rustup puts it in ~/.cargo/bin), "" when there is none.
std::string find_cargo() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string list = path;
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t end = std::min(list.find(':', at), list.size());
      if (end > at) dirs.push_back(list.substr(at, end - at));
      at = end + 1;
    }
  }
  if (const char* home = std::getenv("HOME")) dirs.push_back(std::string(home) + "/.cargo/bin");
  for (const std::string& dir : dirs) {
    const std::string cargo = dir + "/cargo";
    if (dir.front() == '/' && ::access(cargo.c_str(), X_OK) == 0) return cargo;
  }
  return "";
}

class BwrapReparent : public ::testing::TestWithParam<ReparentCase> {
 protected:
  void SetUp() override {
    if (!exists(sbx_path())) GTEST_SKIP() << "no installed sbx at " << sbx_path();
    SBX_REQUIRE_IDENTITY(GetParam().who, "bwrap", {probe_path()});
  }

  // Reads everything, writes the working directory and /tmp (so the write layer is on). Direct:
  // PWD at the working directory. Stage 2: PWD set elsewhere, which bwrap 0.8 would overwrite,
  // so stage 2 runs as PID 1 (plugins/bwrap/README.md, "The direct launch"). Proxy: network
  // mode proxy, which always runs stage 2.
  std::vector<std::string> policy_args() const {
    const Launch path = GetParam().path;
    const std::string network = path == Launch::kProxy
                                    ? R"({"mode": "proxy", "allowed_domains": ["127.0.0.1:9"]})"
                                    : R"({"mode": "restricted"})";
    const std::string environment =
        path == Launch::kStageTwo ? R"(, "environment": {"set": {"PWD": "/"}})" : "";
    const std::string policy = config_ / "policy.json";
    write_file(policy,
               R"({"version": 1, "filesystem": {"kind": "restricted", "entries": [)"
               R"({"path": ":root", "access": "read"}, {"path": ":cwd", "access": "write"},)"
               R"( {"path": "/tmp", "access": "write"}]}, "network": )" +
                   network + environment + "}");
    ::chmod(config_.path().c_str(), 0755);
    ::chmod(policy.c_str(), 0644);
    return {"--policy", policy};
  }

  RunResult run_script(const std::string& script, const std::vector<std::string>& env) const {
    return exec_as(GetParam().who, "bwrap", policy_args(), ws_.path(), {"/bin/sh", "-c", script},
                   env);
  }

  TempDir ws_;
  TempDir config_;
};

// What rustc, cargo, git, editors and package managers do: a file written in a subdirectory and
// moved up (rustc's rmeta), moved down, hard-linked across directories (cargo's uplifting,
// rustc's incremental sessions), renameat2 with RENAME_NOREPLACE and RENAME_EXCHANGE across
// directories, a directory moved into another; in the workspace and in /tmp.
TEST_P(BwrapReparent, MovesAndLinksAcrossDirectoriesOfAWritableRootWork) {
  const Identity who = GetParam().who;
  give_to(who, ws_.path());
  const std::string tmp = "/tmp/sbx-reparent-" + std::to_string(::getpid()) + "-" +
                          std::to_string(static_cast<int>(GetParam().path));
  const std::string script =
      "set -e\nrm -rf " + tmp + "\nmkdir -p a/d a/e " + tmp +
      "/d\necho meta > a/d/full.rmeta\necho down > h\necho n > a/n\necho x > a/x\necho y > a/d/y\n"
      "echo t > " +
      tmp + "/d/t\nset +e\n" + move("up", "rename", "a/d/full.rmeta", "a/lib.rmeta") +
      move("down", "rename", "h", "a/d/h") +
      move("link", "link", "a/lib.rmeta", "a/d/lib-uplifted") +
      move("noreplace", "rename_noreplace", "a/n", "a/d/n") +
      move("exchange", "rename_exchange", "a/x", "a/d/y") + move("dir", "rename", "a/e", "a/d/e") +
      move("tmp", "rename", tmp + "/d/t", tmp + "/t") + "rm -rf " + tmp + "\n";
  const RunResult r = run_script(script, env_for(who));
  std::filesystem::remove_all(tmp);
  EXPECT_EQ(r.code, 0) << describe(r);
  std::string refused;
  for (const char* label : {"up", "down", "link", "noreplace", "exchange", "dir", "tmp"})
    if (!reported(r, label, "SUCCEEDED")) refused += std::string(" ") + label;
  EXPECT_EQ(refused, "") << describe(r);
  EXPECT_EQ(read_file(ws_ / "a/lib.rmeta"), "meta\n");
  EXPECT_FALSE(exists(ws_ / "a/d/full.rmeta"));
  EXPECT_EQ(read_file(ws_ / "a/d/h"), "down\n");
  EXPECT_EQ(read_file(ws_ / "a/d/lib-uplifted"), "meta\n");
  EXPECT_EQ(read_file(ws_ / "a/d/n"), "n\n");
  EXPECT_EQ(read_file(ws_ / "a/x"), "y\n");
  EXPECT_EQ(read_file(ws_ / "a/d/y"), "x\n");
  EXPECT_TRUE(exists(ws_ / "a/d/e"));
}

// The same moves into and out of the protected paths stay refused: an existing `.git` (bound
// read-only), a missing `.codex` (masked by /dev/null), and the workspace itself (a mount
// point). Nothing on the host changes.
TEST_P(BwrapReparent, MovesAndLinksIntoOrOutOfProtectedPathsStillFail) {
  const Identity who = GetParam().who;
  ASSERT_EQ(::mkdir((ws_ / ".git").c_str(), 0755), 0);
  write_file(ws_ / ".git/HEAD", "ref: refs/heads/main\n");
  write_file(ws_ / ".git/config", "[core]\n");
  write_file(ws_ / "f", "f\n");
  ASSERT_EQ(::mkdir((ws_ / "sub").c_str(), 0755), 0);
  give_to(who, ws_.path());
  const std::string script =
      move("into_git", "rename", "f", ".git/f") + move("link_into_git", "link", "f", ".git/l") +
      move("noreplace_into_git", "rename_noreplace", "f", ".git/hooks") +
      move("out_of_git", "rename", ".git/HEAD", "sub/HEAD") +
      move("link_out_of_git", "link", ".git/config", "sub/config") +
      move("exchange_git", "rename_exchange", "sub", ".git") +
      move("into_codex", "rename", "f", ".codex") + move("link_codex", "link", "f", ".codex") +
      move("workspace", "rename", ws_.path(), ws_.path() + "-moved");
  const RunResult r = run_script(script, env_for(who));
  EXPECT_EQ(r.code, 0) << describe(r);
  std::string allowed;
  for (const char* label :
       {"into_git", "link_into_git", "noreplace_into_git", "out_of_git", "link_out_of_git",
        "exchange_git", "into_codex", "link_codex", "workspace"})
    if (!reported(r, label, "BLOCKED")) allowed += std::string(" ") + label;
  EXPECT_EQ(allowed, "") << describe(r);
  EXPECT_EQ(read_file(ws_ / ".git/HEAD"), "ref: refs/heads/main\n");
  EXPECT_EQ(read_file(ws_ / ".git/config"), "[core]\n");
  EXPECT_FALSE(exists(ws_ / ".git/f"));
  EXPECT_FALSE(exists(ws_ / ".git/l"));
  EXPECT_FALSE(exists(ws_ / ".git/hooks"));
  EXPECT_FALSE(exists(ws_ / "sub/HEAD"));
  EXPECT_FALSE(exists(ws_ / "sub/config"));
  EXPECT_FALSE(exists(ws_ / ".codex"));
  EXPECT_EQ(read_file(ws_ / "f"), "f\n");
  EXPECT_FALSE(exists(ws_.path() + "-moved"));
}

// The report's case itself: `cargo build` of a fresh library crate (rustc writes its rmeta in a
// temporary directory below deps/ and renames it up). Needs cargo: where the test's PATH or
// ~/.cargo/bin has none, or the identity cannot run it, the test says so and skips.
TEST_P(BwrapReparent, CargoBuildsAFreshLibraryCrate) {
  const Identity who = GetParam().who;
  const std::string cargo = find_cargo();
  if (cargo.empty()) GTEST_SKIP() << "cargo is not installed (not on PATH, not in ~/.cargo/bin)";
  SBX_REQUIRE_IDENTITY(who, "bwrap", {cargo});
  write_file(ws_ / "Cargo.toml",
             "[package]\nname = \"fresh\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
  ASSERT_EQ(::mkdir((ws_ / "src").c_str(), 0755), 0);
  write_file(ws_ / "src/lib.rs", "pub fn answer() -> u32 { 42 }\n");
  give_to(who, ws_.path());
  // cargo's directory first (rustup's proxies find rustc there), and where rustup keeps the
  // toolchains when the test's environment says so.
  std::vector<std::string> env = env_for(who);
  for (std::string& entry : env)
    if (entry.rfind("PATH=", 0) == 0)
      entry = "PATH=" + cargo.substr(0, cargo.rfind('/')) + ":" + entry.substr(5);
  for (const char* name : {"RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "CARGO_HOME"})
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  const RunResult r = run_script(cargo + " build --offline 2>&1 && ls target/debug", env);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out.find("Invalid cross-device link"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("libfresh.rlib"), std::string::npos) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(LaunchPathsAndIdentities, BwrapReparent,
                         ::testing::Values(ReparentCase{Launch::kDirect, Identity::kRoot},
                                           ReparentCase{Launch::kStageTwo, Identity::kRoot},
                                           ReparentCase{Launch::kProxy, Identity::kRoot},
                                           ReparentCase{Launch::kDirect, Identity::kUnprivileged},
                                           ReparentCase{Launch::kStageTwo, Identity::kUnprivileged},
                                           ReparentCase{Launch::kProxy, Identity::kUnprivileged}),
                         reparent_case_name);

}  // namespace
