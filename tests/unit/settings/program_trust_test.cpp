// Excluded commands run only programs no sandbox could have planted (sbx/core/program_trust.hpp,
// issue #32 finding 3): the pure judgement of one step (plantable), then the walk and the PATH
// search on real files in a temporary directory the test policy makes writable.
#include "sbx/core/program_trust.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sbx_test/temp_dir.hpp"

namespace sbx {
namespace {

namespace fs = std::filesystem;

ResolvedPolicy writable(const std::vector<std::string>& roots) {
  ResolvedPolicy policy;
  policy.filesystem_kind = FilesystemKind::kRestricted;
  policy.rules.push_back(PathRule{"/", Access::kRead});
  for (const std::string& root : roots) policy.rules.push_back(PathRule{root, Access::kWrite});
  return policy;
}

PathStep dir(const std::string& path, std::uint32_t owner, std::uint32_t mode) {
  return PathStep{path, true, owner, owner, S_IFDIR | mode};
}

// Red team round 2, G1: an earlier run with a wider policy could have written anything the user
// can write, so the policy *or* the host letting the user write a step makes it plantable.
TEST(Plantable, ThePolicyOrTheHostLettingTheUserWriteIsEnough) {
  const ResolvedPolicy policy = writable({"/ws"});
  const HostUser root{0}, owner{1000}, other{2000};
  // Inside the writable root: plantable for everyone, whoever owns it and whatever the mode.
  EXPECT_TRUE(plantable(dir("/ws/bin", 1000, 0755), policy, root));
  EXPECT_TRUE(plantable(dir("/ws/bin", 1000, 0755), policy, owner));
  EXPECT_TRUE(plantable(dir("/ws/bin", 0, 0755), policy, other));
  // Outside every write rule the host decides: root writes anything; the owner whatever the
  // mode bits (a sandboxed `chmod 555` is undone by the next `chmod 755`; red team F2); anyone
  // else through the group or other bit (the group bits are an ACL's mask, acl(5)).
  EXPECT_TRUE(plantable(dir("/usr/bin", 0, 0755), policy, root));
  EXPECT_TRUE(plantable(dir("/home/u/bin", 1000, 0555), policy, owner));
  EXPECT_TRUE(plantable(dir("/home/u/bin", 1000, 0), policy, owner));
  EXPECT_FALSE(plantable(dir("/home/u/bin", 1000, 0755), policy, other));
  EXPECT_TRUE(plantable(dir("/home/u/bin", 1000, 0775), policy, other));
  EXPECT_TRUE(plantable(dir("/home/u/bin", 1000, 0757), policy, other));
  EXPECT_FALSE(plantable(dir("/usr/bin", 0, 0755), policy, owner));
  // The reasons name the step and what could write it.
  const std::optional<std::string> why = plantable(dir("/ws/bin", 0, 0755), policy, other);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("/ws/bin"), std::string::npos) << *why;
  EXPECT_NE(why->find("writable root /ws"), std::string::npos) << *why;
  const std::optional<std::string> as_root = plantable(dir("/usr/bin", 0, 0755), policy, root);
  ASSERT_TRUE(as_root);
  EXPECT_NE(as_root->find("sbx runs as root"), std::string::npos) << *as_root;
  const std::optional<std::string> owned = plantable(dir("/home/u", 1000, 0500), policy, owner);
  ASSERT_TRUE(owned);
  EXPECT_NE(owned->find("the user owns it"), std::string::npos) << *owned;
  // A read carve-out inside the root keeps its entries from the policy; the root above it is
  // still plantable.
  ResolvedPolicy carved = policy;
  carved.rules.push_back(PathRule{"/ws/tools", Access::kRead});
  EXPECT_FALSE(plantable(dir("/ws/tools", 0, 0755), carved, other));
  const std::optional<std::string> first = first_plantable(
      {dir("/", 0, 0755), dir("/ws", 0, 0755), dir("/ws/tools", 0, 0755)}, carved, other);
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("the directory /ws "), std::string::npos) << *first;
}

// unlink(2), rename(2): in a sticky directory only the entry's (or the directory's) owner may
// remove or rename an entry, so /tmp keeps another user's directory in place; a missing name
// in it could still be created, and a symlink's own owner is not known.
TEST(Plantable, AStickyDirectoryKeepsEntriesTheUserDoesNotOwn) {
  const ResolvedPolicy policy = writable({"/ws"});
  const HostUser user{1000};
  const PathStep tmp = dir("/tmp", 0, 01777);
  EXPECT_FALSE(first_plantable({dir("/", 0, 0755), tmp, dir("/tmp/a", 0, 0755)}, policy, user));
  EXPECT_TRUE(first_plantable({dir("/", 0, 0755), tmp, dir("/tmp/a", 1000, 0755)}, policy, user));
  EXPECT_TRUE(first_plantable({dir("/", 0, 0755), tmp}, policy, user));  // a name to create
  // Reached through a symlink in /tmp (the next step is not the entry itself).
  EXPECT_TRUE(first_plantable({dir("/", 0, 0755), tmp, dir("/usr", 0, 0755)}, policy, user));
  // Root is not held by the sticky bit (CAP_FOWNER).
  EXPECT_TRUE(
      first_plantable({dir("/", 0, 0755), tmp, dir("/tmp/a", 0, 0755)}, policy, HostUser{0}));
}

TEST(Plantable, AnUnrestrictedFilesystemMakesEverythingPlantable) {
  ResolvedPolicy policy;
  policy.filesystem_kind = FilesystemKind::kUnrestricted;
  EXPECT_TRUE(plantable(dir("/usr/bin", 0, 0755), policy, HostUser{0}));
  EXPECT_TRUE(plantable(dir("/usr/bin", 0, 0755), policy, HostUser{1000}));
  policy.filesystem_kind = FilesystemKind::kExternal;  // not known: taken as writable
  EXPECT_TRUE(plantable(dir("/usr/bin", 0, 0755), policy, HostUser{1000}));
}

// Review round 3, H1: a sticky /tmp above the cwd takes new names from the user (a bare repo's
// HEAD, objects/, refs/, config; a package.json), which git and npm discover upward.
TEST(Plantable, ADirectoryTheUserCanAddEntriesToIsPlantableForDiscovery) {
  const ResolvedPolicy policy = writable({"/ws"});
  const HostUser user{65534};
  const std::vector<PathStep> via_tmp{dir("/", 0, 0755), dir("/tmp", 0, 01777),
                                      dir("/tmp/build", 0, 0755)};
  EXPECT_EQ(first_plantable(via_tmp, policy, user), std::nullopt);  // a program's own path
  std::optional<std::string> why = first_plantable_directory(via_tmp, policy, user);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the directory /tmp "), std::string::npos) << *why;
  EXPECT_NE(why->find("discover files upward"), std::string::npos) << *why;
  const std::vector<PathStep> clean{dir("/", 0, 0755), dir("/work", 0, 0755)};
  EXPECT_EQ(first_plantable_directory(clean, policy, user), std::nullopt);
}

// Review round 3, H1b: a user-owned /a/.git beside the walk to /a/sub.
TEST(Plantable, AnEntryBesideTheWalkTheUserCanChangeIsPlantable) {
  const HostUser user{65534};
  EXPECT_TRUE(plantable_beside(dir("/a/.git", 65534, 0755), user));
  EXPECT_TRUE(plantable_beside(PathStep{"/a/package.json", false, 0, 0, S_IFREG | 0666}, user));
  EXPECT_FALSE(plantable_beside(PathStep{"/a/package.json", false, 0, 0, S_IFREG | 0644}, user));
  EXPECT_FALSE(plantable_beside(dir("/etc", 0, 0755), user));
  // Another's sticky directory (/tmp in /): names can be added inside, none is discovered.
  EXPECT_FALSE(plantable_beside(dir("/tmp", 0, 01777), user));
  EXPECT_TRUE(plantable_beside(dir("/tmp", 65534, 01777), user));
  EXPECT_TRUE(plantable_beside(dir("/etc", 0, 0755), HostUser{0}));
}

// Issue #32, A1: an excluded command runs with a reset environment (sudoers(5) env_reset): only
// the allowlist passes, with values that name no file; every other name is dropped and named.
TEST(ResetEnvironment, OnlyTheAllowlistPassesAndEveryDroppedNameIsReported) {
  const ResetEnvironment reset = reset_environment(
      {"PATH=/usr/bin:/bin", "HOME=/home/u", "XDG_CONFIG_HOME=/home/u/.config", "USER=u",
       "LOGNAME=u", "TERM=xterm-256color", "LANG=en_US.UTF-8", "LANGUAGE=de:en", "LC_ALL=C.UTF-8",
       "LC_TIME=de_DE.UTF-8", "TZ=:Europe/Berlin", "COLUMNS=80", "LINES=24", "NO_COLOR=1",
       "PWD=/somewhere/else"},
      "/work/proj");
  EXPECT_EQ(reset.env,
            (std::vector<std::string>{"PATH=/usr/bin:/bin", "HOME=/home/u",
                                      "XDG_CONFIG_HOME=/home/u/.config", "USER=u", "LOGNAME=u",
                                      "TERM=xterm-256color", "LANG=en_US.UTF-8", "LANGUAGE=de:en",
                                      "LC_ALL=C.UTF-8", "LC_TIME=de_DE.UTF-8", "TZ=:Europe/Berlin",
                                      "COLUMNS=80", "LINES=24", "NO_COLOR=1", "PWD=/work/proj"}));
  EXPECT_EQ(reset.dropped, std::vector<std::string>{});
}

TEST(ResetEnvironment, DropsWhatLoadsCodeOrConfiguration) {
  // The red team's variables (A1), then those the old denylist named (review round 3, H6).
  const std::vector<std::string> steering = {"BASH_ENV=/tmp/evil/bashenv",
                                             "PYTHONPLATLIBDIR=../tmp/evil/pl",
                                             "OPENSSL_CONF=/tmp/evil/openssl.cnf",
                                             "TAR_OPTIONS=--checkpoint-action=exec=id",
                                             "LESS=--lesskey-src=/tmp/evil/k",
                                             "GIT_ASKPASS=/tmp/evil/x",
                                             "SSH_ASKPASS=/tmp/evil/x",
                                             "VIMINIT=:!id",
                                             "EXINIT=:!id",
                                             "MAKEFLAGS=--eval=$(shell id)",
                                             "KRB5_CONFIG=/tmp/evil/k",
                                             "PYTHONPYCACHEPREFIX=/tmp/evil",
                                             "LESSKEYIN=/tmp/evil/k",
                                             "CURL_HOME=/tmp/evil",
                                             "WGETRC=/tmp/evil/w",
                                             "XDG_DATA_HOME=/tmp/evil",
                                             "XDG_CONFIG_DIRS=/tmp/evil",
                                             "BASH_FUNC_git%%=() { id; }",
                                             "SHELLOPTS=xtrace",
                                             "BASHOPTS=extdebug",
                                             "PS4=$(id)",
                                             "ENV=/x",
                                             "PROMPT_COMMAND=id",
                                             "GIT_DIR=/x",
                                             "GIT_CONFIG_COUNT=1",
                                             "GIT_PAGER=id",
                                             "GIT_SSH_COMMAND=id",
                                             "GIT_EDITOR=id",
                                             "GIT_AUTHOR_NAME=a",
                                             "NODE_OPTIONS=--require=/x",
                                             "NODE_PATH=/x",
                                             "PYTHONPATH=/x",
                                             "PYTHONSTARTUP=/x",
                                             "PERL5OPT=-M",
                                             "RUBYOPT=-r/x",
                                             "JAVA_TOOL_OPTIONS=-javaagent:/x",
                                             "CLASSPATH=/x",
                                             "npm_config_userconfig=/x",
                                             "NPM_CONFIG_GLOBALCONFIG=/x",
                                             "CARGO_HOME=/x",
                                             "RUSTC_WRAPPER=/x",
                                             "GOFLAGS=-toolexec=id",
                                             "EDITOR=id",
                                             "VISUAL=id",
                                             "PAGER=id",
                                             "LD_PRELOAD=/x",
                                             "LD_LIBRARY_PATH=/x",
                                             "GCONV_PATH=/x",
                                             "LOCPATH=/x",
                                             "NLSPATH=/x",
                                             "TZDIR=/x",
                                             "TERMINFO=/x",
                                             "ZDOTDIR=/x",
                                             "SHELL=/tmp/evil/sh",
                                             "TMPDIR=/tmp/evil",
                                             "SSH_CLIENT=1 2 3",
                                             "LC_EVIL=x"};
  std::vector<std::string> env = {"PATH=/usr/bin", "HOME=/h"};
  env.insert(env.end(), steering.begin(), steering.end());
  const ResetEnvironment reset = reset_environment(env, "/w");
  EXPECT_EQ(reset.env, (std::vector<std::string>{"PATH=/usr/bin", "HOME=/h"}));
  std::vector<std::string> names;
  for (const std::string& entry : steering) names.push_back(entry.substr(0, entry.find('=')));
  EXPECT_EQ(reset.dropped, names);
}

TEST(ResetEnvironment, DropsAllowedNamesWhoseValueNamesAFile) {
  for (const char* entry : {"TZ=/tmp/evil/zone",
                            "TZ=:/tmp/evil/zone",
                            "TZ=../../tmp/evil/zone",
                            "TZ=Europe/../../x",
                            "TZ=:..",
                            "TZ=a b",
                            "TZ=",
                            "LANG=/tmp/evil/locale",
                            "LANG=en_US%s",
                            "LC_ALL=../x/y",
                            "LC_MESSAGES=/x",
                            "LANGUAGE=../../tmp/evil",
                            "TERM=../../tmp/evil/t",
                            "USER=../x",
                            "LOGNAME=a/b",
                            "COLUMNS=80x",
                            "LINES=",
                            "XDG_CONFIG_HOME=rel/config",
                            "XDG_CONFIG_HOME=",
                            "NOEQUALS"}) {
    const ResetEnvironment reset = reset_environment({"PATH=/usr/bin", entry}, "/w");
    const std::string text = entry;
    EXPECT_EQ(reset.env, std::vector<std::string>{"PATH=/usr/bin"}) << entry;
    EXPECT_EQ(reset.dropped, std::vector<std::string>{text.substr(0, text.find('='))}) << entry;
  }
  // A zone name, or a POSIX TZ rule, below the system's zoneinfo: kept.
  for (const char* entry : {"TZ=UTC", "TZ=Europe/Berlin", "TZ=EST5EDT,M3.2.0/2,M11.1.0"}) {
    EXPECT_EQ(reset_environment({entry}, "/w").env, std::vector<std::string>{entry}) << entry;
  }
  // getenv(3) returns the first entry of a name: a second one is dropped and named.
  const ResetEnvironment twice = reset_environment({"HOME=/h", "HOME=/tmp/evil"}, "/w");
  EXPECT_EQ(twice.env, std::vector<std::string>{"HOME=/h"});
  EXPECT_EQ(twice.dropped, std::vector<std::string>{"HOME"});
}

// Files on disk: `tmp_` is the sandbox's writable root, `outside_` is not.
class Lookup : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tmp_.path() + "/bin");
    fs::create_directories(outside_.path() + "/bin");
    policy_ = writable({tmp_.path()});
    // The system's ls: the program a planted one pretends to be.
    system_ls_ = ::access("/usr/bin/ls", X_OK) == 0 ? "/usr/bin/ls" : "/bin/ls";
  }

  std::string plant(const sbx::test::TempDir& dir, const std::string& name) {
    return dir.write("bin/" + name, "#!/bin/sh\necho planted\n", 0755);
  }

  // A compiled program (a copy of the system's ls) at dir/bin/name.
  std::string install_elf(const sbx::test::TempDir& dir, const std::string& name) {
    const std::string path = dir.path() + "/bin/" + name;
    fs::copy_file(system_ls_, path);
    fs::permissions(path, fs::perms(0755));
    return path;
  }

  TrustedProgram find(const std::string& command, const std::string& path_env) {
    return find_trusted_program(command, tmp_.path(), path_env, policy_, user_);
  }

  sbx::test::TempDir tmp_;
  sbx::test::TempDir outside_;
  ResolvedPolicy policy_;
  // Not root (as root everything is plantable) and not the files' owner: the walk's judgement
  // on real files, for a user who cannot write them (the test creates them as root, 0755, in a
  // sticky /tmp).
  HostUser user_{65534};
  std::string system_ls_;
};

TEST_F(Lookup, AProgramInAWritableRootIsRefused) {
  plant(tmp_, "sh");
  for (const std::string& named :
       {std::string("./bin/sh"), std::string("bin/sh"), tmp_.path() + "/bin/sh"}) {
    const TrustedProgram found = find(named, "/usr/bin:/bin");
    EXPECT_FALSE(found.path) << named;
    EXPECT_NE(found.refused.find("could have been planted by a sandboxed command"),
              std::string::npos)
        << found.refused;
    EXPECT_NE(found.refused.find(tmp_.path() + "/bin/sh"), std::string::npos) << found.refused;
  }
}

TEST_F(Lookup, ASymlinkInAWritableDirectoryIsPlantedWhateverItNames) {
  fs::create_symlink(system_ls_, tmp_.path() + "/bin/ls");
  EXPECT_FALSE(find("./bin/ls", "").path);
  // A trusted directory's symlink into a writable one: the target's directory is judged too.
  plant(tmp_, "tool");
  fs::create_symlink(tmp_.path() + "/bin/tool", outside_.path() + "/bin/tool");
  const TrustedProgram found = find(outside_.path() + "/bin/tool", "");
  EXPECT_FALSE(found.path);
  EXPECT_NE(found.refused.find("writable root " + tmp_.path()), std::string::npos) << found.refused;
}

TEST_F(Lookup, ATrustedProgramIsReturnedByThePathFound) {
  const std::string tool = install_elf(outside_, "tool");
  const std::string bin = outside_.path() + "/bin";
  const TrustedProgram found = find(tool, bin);
  ASSERT_TRUE(found.path) << found.refused;
  EXPECT_EQ(*found.path, tool);
  // Found through PATH, by the entry's path (not the symlink-free one).
  const TrustedProgram searched = find("tool", bin);
  ASSERT_TRUE(searched.path) << searched.refused;
  EXPECT_EQ(*searched.path, tool);
}

// Red team round 3: a root-owned script named like a program of the allowlist (a test fixture
// `diff` that starts `#!/usr/bin/env python`) ran env unsandboxed; so did a copy of env named
// ls outside PATH. Only an ELF file in a searched PATH directory runs.
TEST_F(Lookup, AScriptOrAProgramOutsideThePathDirectoriesIsRefused) {
  const std::string script = outside_.write("bin/diff", "#!/bin/sh\necho x\n", 0755);
  const TrustedProgram by_name = find("diff", outside_.path() + "/bin");
  EXPECT_FALSE(by_name.path);
  EXPECT_NE(by_name.refused.find("is not a compiled program"), std::string::npos)
      << by_name.refused;
  const std::string elf = install_elf(outside_, "ls");
  const TrustedProgram elsewhere = find(elf, "/usr/bin:/bin");
  EXPECT_FALSE(elsewhere.path);
  EXPECT_NE(elsewhere.refused.find("outside the PATH directories searched"), std::string::npos)
      << elsewhere.refused;
  EXPECT_TRUE(find(elf, outside_.path() + "/bin").path);
}

// Red team round 3: a user holding CAP_DAC_OVERRIDE (ambient capabilities) writes a root-owned
// .git/config whatever its mode; such a user is judged like root.
TEST_F(Lookup, AUserWithCapabilitiesIsJudgedLikeRoot) {
  const std::string tool = install_elf(outside_, "tool");
  const HostUser capable{65534, true};
  const TrustedProgram found =
      find_trusted_program(tool, tmp_.path(), outside_.path() + "/bin", policy_, capable);
  EXPECT_FALSE(found.path);
  EXPECT_NE(found.refused.find("effective capabilities"), std::string::npos) << found.refused;
  // Root's effective set is never empty; an ordinary user's is.
  EXPECT_EQ(current_host_user().capable, ::geteuid() == 0);
}

// Red team round 3: `git status` in repo/src ran a core.fsmonitor planted in a user-owned
// submodule beside src. git reads the whole repository, so its top is found and judged whole.
TEST_F(Lookup, TheRepositoryTopIsTheOutermostDirectoryHoldingGit) {
  fs::create_directories(outside_.path() + "/repo/.git");
  fs::create_directories(outside_.path() + "/repo/src/deep");
  fs::create_directories(outside_.path() + "/repo/lib");
  outside_.write("repo/lib/.git", "gitdir: ../.git/modules/lib\n", 0644);
  fs::create_directories(outside_.path() + "/repo/.git/modules/lib");
  const RepositoryTop top = repository_top(outside_.path() + "/repo/lib");
  EXPECT_EQ(top.top, outside_.path() + "/repo") << top.refused;
  EXPECT_EQ(top.refused, "");
  EXPECT_EQ(repository_top(outside_.path() + "/repo/src/deep").top, outside_.path() + "/repo");
  EXPECT_EQ(repository_top(outside_.path() + "/bin").top, std::nullopt);
  // A bare repository is a git directory itself.
  fs::create_directories(outside_.path() + "/bare.git/objects");
  fs::create_directories(outside_.path() + "/bare.git/refs");
  outside_.write("bare.git/HEAD", "ref: refs/heads/main\n", 0644);
  EXPECT_EQ(repository_top(outside_.path() + "/bare.git/refs").top, outside_.path() + "/bare.git");
  // A linked worktree's .git file names a directory outside: not followed, refused.
  fs::create_directories(outside_.path() + "/wt");
  outside_.write("wt/.git", "gitdir: " + outside_.path() + "/repo/.git\n", 0644);
  EXPECT_NE(repository_top(outside_.path() + "/wt").refused.find("a linked worktree"),
            std::string::npos);
}

TEST_F(Lookup, PathEntriesTheSandboxCanWriteAreSkipped) {
  plant(tmp_, "ls");
  const std::string path_env = tmp_.path() + "/bin::bin:/usr/bin:/bin";
  const TrustedProgram found = find("ls", path_env);
  ASSERT_TRUE(found.path) << found.refused;
  EXPECT_EQ(*found.path, system_ls_);
  EXPECT_EQ(found.skipped_path_entries,
            (std::vector<std::string>{tmp_.path() + "/bin", "(empty)", "bin"}));
  // The PATH the unsandboxed command gets holds only the entries searched.
  EXPECT_EQ(found.trusted_path_env, "/usr/bin:/bin");
  // Only there: not found elsewhere, so refused (the command runs sandboxed).
  plant(tmp_, "only-planted");
  const TrustedProgram missing = find("only-planted", path_env);
  EXPECT_FALSE(missing.path);
  EXPECT_NE(missing.refused.find("not found in PATH"), std::string::npos) << missing.refused;
  EXPECT_NE(missing.refused.find(tmp_.path() + "/bin"), std::string::npos) << missing.refused;
}

TEST_F(Lookup, NotAnExecutableFileIsRefused) {
  outside_.write("bin/data", "x", 0644);
  EXPECT_FALSE(find(outside_.path() + "/bin/data", "").path);
  EXPECT_FALSE(find(outside_.path() + "/bin", "").path);
  EXPECT_FALSE(find(outside_.path() + "/bin/absent", "").path);
}

// Below a directory the user cannot write, a file, a directory or a symlink's target the user
// can write is what an earlier, wider run could have rewritten (a Makefile, .git/config).
TEST_F(Lookup, AnEntryBelowThatTheUserCanWriteIsFound) {
  fs::create_directories(outside_.path() + "/tree/a/b");
  outside_.write("tree/a/b/Makefile", "all:\n", 0644);
  EXPECT_EQ(first_plantable_below(outside_.path() + "/tree", policy_, user_, 100), std::nullopt);
  // Another user's file, by its owner (the user of the check is 65534).
  ASSERT_EQ(::chown((outside_.path() + "/tree/a/b/Makefile").c_str(), 65534, 65534), 0);
  std::optional<std::string> why =
      first_plantable_below(outside_.path() + "/tree", policy_, user_, 100);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the file " + outside_.path() + "/tree/a/b/Makefile"), std::string::npos)
      << *why;
  ASSERT_EQ(::chown((outside_.path() + "/tree/a/b/Makefile").c_str(), 0, 0), 0);
  // A symlink leading into the writable root.
  fs::create_symlink(tmp_.path() + "/bin", outside_.path() + "/tree/a/link");
  why = first_plantable_below(outside_.path() + "/tree", policy_, user_, 100);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the symlink " + outside_.path() + "/tree/a/link"), std::string::npos)
      << *why;
  fs::remove(outside_.path() + "/tree/a/link");
  // Too many entries to verify: refused, never taken as clean.
  why = first_plantable_below(outside_.path() + "/tree", policy_, user_, 2);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("more than 2 entries"), std::string::npos) << *why;
}

TEST_F(Lookup, TheWalkFollowsEverySymlinkAndStopsALoop) {
  fs::create_directories(outside_.path() + "/real/dir");
  plant(outside_, "x");
  fs::rename(outside_.path() + "/bin/x", outside_.path() + "/real/dir/x");
  fs::create_symlink("../real", outside_.path() + "/bin/rel");
  fs::create_symlink(outside_.path() + "/bin/rel/dir", tmp_.path() + "/abs");
  Result<std::vector<PathStep>> steps = walk_path(tmp_.path() + "/abs/x");
  ASSERT_TRUE(steps.ok()) << steps.error();
  std::vector<std::string> paths;
  for (const PathStep& step : *steps) paths.push_back(step.path);
  // Every directory a name was looked up in: the symlinks' own directories included.
  for (const std::string& expected :
       {tmp_.path(), outside_.path() + "/bin", outside_.path() + "/real",
        outside_.path() + "/real/dir", outside_.path() + "/real/dir/x"})
    EXPECT_NE(std::find(paths.begin(), paths.end(), expected), paths.end()) << expected;
  EXPECT_FALSE(steps->back().directory);
  fs::create_symlink(tmp_.path() + "/loop-b", tmp_.path() + "/loop-a");
  fs::create_symlink(tmp_.path() + "/loop-a", tmp_.path() + "/loop-b");
  Result<std::vector<PathStep>> loop = walk_path(tmp_.path() + "/loop-a/x");
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.error().find("too many symlinks"), std::string::npos) << loop.error();
}

// Review round 3, H1b: the entries directly inside each ancestor of the cwd, beside the walk.
TEST_F(Lookup, AnEntryBesideTheWalkTheUserCanWriteIsFound) {
  fs::create_directories(outside_.path() + "/a/sub");
  fs::create_directories(outside_.path() + "/a/.git");
  Result<std::vector<PathStep>> walk = walk_path(outside_.path() + "/a/sub");
  ASSERT_TRUE(walk.ok()) << walk.error();
  // From the test's own directory down: /tmp above it holds other tests' files.
  std::vector<PathStep> steps_from_here;
  for (const PathStep& step : *walk)
    if (step.path.size() >= outside_.path().size()) steps_from_here.push_back(step);
  const std::vector<PathStep>* steps = &steps_from_here;
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ(first_plantable_beside(*steps, policy_, user_, 100), std::nullopt);
  ASSERT_EQ(::chown((outside_.path() + "/a/.git").c_str(), 65534, 65534), 0);
  std::optional<std::string> why = first_plantable_beside(*steps, policy_, user_, 100);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the directory " + outside_.path() + "/a/.git"), std::string::npos) << *why;
  ASSERT_EQ(::chown((outside_.path() + "/a/.git").c_str(), 0, 0), 0);
  // A symlink is judged by what it leads to.
  fs::create_symlink(tmp_.path(), outside_.path() + "/a/package.json");
  ASSERT_EQ(::chown(tmp_.path().c_str(), 65534, 65534), 0);
  why = first_plantable_beside(*steps, policy_, user_, 100);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the directory " + outside_.path() + "/a/package.json"), std::string::npos)
      << *why;
  ASSERT_EQ(::chown(tmp_.path().c_str(), 0, 0), 0);
  fs::remove(outside_.path() + "/a/package.json");
  // A symlink to a missing path in a directory the user can add names to (/tmp-like).
  fs::create_directories(outside_.path() + "/drop");
  ::chmod((outside_.path() + "/drop").c_str(), 01777);
  fs::create_symlink(outside_.path() + "/drop/planted", outside_.path() + "/a/.npmrc");
  why = first_plantable_beside(*steps, policy_, user_, 100);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the symlink " + outside_.path() + "/a/.npmrc"), std::string::npos) << *why;
  fs::remove(outside_.path() + "/a/.npmrc");
  fs::remove(outside_.path() + "/drop");
  // The cwd's own entries are first_plantable_below's; more entries than the cap: refused.
  why = first_plantable_beside(*steps, policy_, user_, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("more than 0 entries in " + outside_.path() + ","), std::string::npos)
      << *why;
}

}  // namespace
}  // namespace sbx
