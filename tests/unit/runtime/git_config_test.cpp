// What git's configuration names, for an excluded git (core/src/run/git_config.hpp): reading
// `git config --list --show-origin -z` and which keys name a program or a file (pure parts).
#include "run/git_config.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sbx {
namespace {

using namespace std::string_literals;

TEST(GitConfigList, ReadsOriginKeyAndValueAndAKeyWithoutOne) {
  const std::string output =
      "file:/etc/gitconfig\0core.fsmonitor\n/usr/bin/x y\0file:.git/config\0core.bare\0"
      "file:.git/config\0alias.s\nstatus\nwith a newline\0"s;
  const std::optional<std::vector<GitConfigEntry>> entries = parse_git_config_list(output);
  ASSERT_TRUE(entries.has_value());
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].origin, "file:/etc/gitconfig");
  EXPECT_EQ((*entries)[0].key, "core.fsmonitor");
  EXPECT_EQ((*entries)[0].value, "/usr/bin/x y");
  EXPECT_EQ((*entries)[1].key, "core.bare");
  EXPECT_EQ((*entries)[1].value, "");
  EXPECT_EQ((*entries)[2].value, "status\nwith a newline");
  EXPECT_TRUE(parse_git_config_list("").has_value());
}

TEST(GitConfigList, AnythingElseIsNotAList) {
  EXPECT_FALSE(parse_git_config_list("warning: something\n").has_value());
  EXPECT_FALSE(parse_git_config_list("file:/a\0core.x\nv"s).has_value());
  EXPECT_FALSE(parse_git_config_list("\0core.x\nv\0"s).has_value());
  EXPECT_FALSE(parse_git_config_list("file:/a\0\nv\0"s).has_value());
}

TEST(GitKeyKind, ProgramsFilesAndPartialClones) {
  EXPECT_EQ(git_key_kind("core.fsmonitor", "/bin/hook"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("core.fsmonitor", "true"), GitKeyKind::kOther) << "the built-in daemon";
  EXPECT_EQ(git_key_kind("core.fsmonitor", "False"), GitKeyKind::kOther);
  EXPECT_EQ(git_key_kind("core.pager", "less"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("pager.log", "most"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("pager.log", "false"), GitKeyKind::kOther);
  EXPECT_EQ(git_key_kind("diff.external", "difft"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("diff.my.driver.textconv", "exif"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("diff.x.command", "d"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("filter.lfs.clean", "git-lfs clean -- %f"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("filter.lfs.process", "git-lfs filter-process"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("gpg.program", "gpg2"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("gpg.ssh.program", "ssh-keygen"), GitKeyKind::kProgram);
  EXPECT_EQ(git_key_kind("core.attributesfile", "~/.gitattributes"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("core.excludesfile", "/x"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("trace2.eventtarget", "/tmp/trace"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("trace2.normaltarget", "1"), GitKeyKind::kOther) << "stderr";
  EXPECT_EQ(git_key_kind("trace2.normaltarget", "9"), GitKeyKind::kOther) << "a descriptor";
  EXPECT_EQ(git_key_kind("trace2.perftarget", "af_unix:/s"), GitKeyKind::kRefused);
  EXPECT_EQ(git_key_kind("include.path", "extra.config"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("includeif.gitdir:/w/.path", "/x"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("mailmap.file", "/x"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("diff.orderfile", "/x"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("core.hookspath", "/x"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("gpg.ssh.allowedsignersfile", "/x"), GitKeyKind::kPath);
  EXPECT_EQ(git_key_kind("core.worktree", "/elsewhere"), GitKeyKind::kRefused);
  EXPECT_EQ(git_key_kind("extensions.partialclone", "origin"), GitKeyKind::kRefused);
  EXPECT_EQ(git_key_kind("remote.origin.promisor", "true"), GitKeyKind::kRefused);
  EXPECT_EQ(git_key_kind("remote.origin.promisor", "false"), GitKeyKind::kOther);
  // Network-only programs: the excluded subcommands reach no remote (a partial clone is refused).
  EXPECT_EQ(git_key_kind("core.sshcommand", "ssh -i k"), GitKeyKind::kOther);
  EXPECT_EQ(git_key_kind("credential.https://x.example.helper", "store"), GitKeyKind::kOther);
  EXPECT_EQ(git_key_kind("user.name", "A"), GitKeyKind::kOther);
}

}  // namespace
}  // namespace sbx
