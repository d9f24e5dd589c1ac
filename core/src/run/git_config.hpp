// The configuration an excluded git reads (issue #32, red team round 5): the files it comes from
// and the programs and files its values name must be ones no sandbox could have planted.
//
// Why: the repository, HOME and XDG_CONFIG_HOME are judged whole (run.cpp), but a value in them
// may name a file elsewhere: `core.fsmonitor = /home/u/bin/fsmon` in a repository config the
// user cannot write (an administrator's), with /home/u/bin writable by a sandbox, ran the
// planted fsmon unsandboxed on `git status`; `include.path` pulls in a config file from
// anywhere. So the effective configuration is listed by git itself (`git config --list
// --includes --show-origin -z`, which reads files and runs nothing, git-config(1)), and
//  - every file it came from is judged like a program's file (first_plantable);
//  - a value that names a program git may run (git_key_kind kProgram) must name a trusted
//    program (find_trusted_program: a compiled program in a searched PATH directory) and be a
//    plain command line, no shell syntax (git runs a value with shell metacharacters through
//    `sh -c`, run-command.c prepare_shell_cmd);
//  - a value that names a file git reads (kPath) is judged like a config file;
//  - a partial clone (extensions.partialClone, remote.*.promisor) is refused: git fetches
//    missing objects over the network, running a transport, from an unsandboxed command.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/program_trust.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

struct GitConfigEntry {
  std::string origin;  // "file:<path>" (relative to the cwd when git prints it so), ...
  std::string key;     // as git prints it: section and variable lower-case
  std::string value;
};

// The entries of `git config --list --show-origin -z` output (origin NUL key LF value NUL, or
// origin NUL key NUL for a key without a value), or nullopt when it is not that.
std::optional<std::vector<GitConfigEntry>> parse_git_config_list(std::string_view output);

enum class GitKeyKind {
  kOther,    // names nothing git runs or reads
  kProgram,  // a command git may run (core.fsmonitor, diff.external, *.textconv, ...)
  kPath,     // a file git reads (core.attributesFile, core.excludesFile, core.hooksPath)
  kRefused,  // a partial clone: missing objects are fetched over the network
};
GitKeyKind git_key_kind(std::string_view key, std::string_view value);

// Why the configuration `git` (the trusted program's absolute path) reads in each of `dirs`
// (the cwd, then the work tree of each submodule git status recurses into: their own
// configuration, commondir and includes; red team round 7) with `env` (the excluded command's
// reset environment) could make it run or read what a sandbox could have planted; nullopt when
// every file and value was judged. Runs git once per directory (config --list).
// `top`: the repository's top (repository_top), judged whole: a core.worktree inside it is the
// repository's own (a submodule's), any other is refused.
std::optional<std::string> git_configuration_refusal(
    const std::string& git, const std::vector<std::string>& dirs, const std::string& top,
    const std::vector<std::string>& env, const std::string& path_env, const ResolvedPolicy& policy,
    const HostUser& user);

}  // namespace sbx
