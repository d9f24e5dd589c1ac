// Excluded commands run only programs a sandbox could not have planted
// (core/src/settings/README.md). An excluded command runs without a sandbox, so
// the program it names must be one no sandboxed command could have written or swapped: a
// sandboxed run that writes ./bin/sh, or a `git` in a PATH directory inside a writable root,
// must not run unsandboxed on the next call because its *name* matches a pattern.
//
// Two halves, kept apart like the rest of sbx (pure decisions, OS work at the edge):
//  - plantable() (pure, program_trust.cpp): could a sandboxed command (of this policy, or an
//    earlier run's wider one) have changed one step of a path walk?
//  - find_trusted_program() (OS, program_lookup.cpp): resolves the command's first word to an
//    absolute path like a shell would, but walks every component itself (lstat, readlink), so
//    that each directory consulted on the way (symlinks followed, every directory of every
//    symlink's target included) and the program file are judged by plantable(). PATH entries
//    with a plantable step are skipped. The program is then run by the returned path, never
//    looked up again.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx {

// One directory a path walk looked a name up in, or the file it ended at, as lstat(2) saw it.
// A symlink followed is not a step of its own: it can only be repointed through the directory
// holding it, which is one.
struct PathStep {
  std::string path;  // absolute, symlink-free
  bool directory = false;
  std::uint32_t owner = 0;
  std::uint32_t group = 0;
  std::uint32_t mode = 0;  // st_mode
};

// Who would run the program: the effective uid, and whether it holds any effective capability.
// A user with CAP_DAC_OVERRIDE, CAP_FOWNER or CAP_CHOWN (ambient capabilities, a file
// capability on sbx, setpriv --ambient-caps) writes whatever the mode says, like root
// (capabilities(7)); any effective capability counts, so that none of them is missed.
struct HostUser {
  std::uint32_t uid = 0;
  bool capable = false;
};

// Why a sandboxed command could have changed `step` (a directory's entries, the file's
// content), or nullopt. Not only this run's sandbox: an earlier run of the same user with a wider
// policy (a workspace-write build, danger-full-access) could have written anything the user can
// write on the host, and what it planted stays. So a step is plantable when the policy lets the
// sandbox write it (a write rule covering it, or a filesystem it does not restrict), or when the
// host lets the user write it: root always (CAP_DAC_OVERRIDE: as root nothing on a writable
// filesystem is safe, so an excluded command never runs unsandboxed for a root-run sbx); the
// owner, whatever the mode bits, which it may change at any time (chmod(2)); anyone else
// through the group or the other write bit, whatever their groups (the group bits are the mask
// of any ACL entry, acl(5), so a named ACL entry can grant write only when the group write bit
// is set). One exception: a sticky directory the user does not own (/tmp) keeps an entry the
// user does not own (`next`, the step right below it) from being removed or renamed by the
// user (unlink(2), rename(2): EPERM), so it is not plantable on the way to that entry.
std::optional<std::string> plantable(const PathStep& step, const ResolvedPolicy& policy,
                                     const HostUser& user, const PathStep* next = nullptr);

// The first `plantable` reason among `steps`, naming the step.
std::optional<std::string> first_plantable(const std::vector<PathStep>& steps,
                                           const ResolvedPolicy& policy, const HostUser& user);

// The same for the walk to a directory an excluded program reads and discovers files upward
// from (its cwd, HOME, XDG_CONFIG_HOME), with no sticky exemption: git finds a repository in any
// directory at or above the cwd (setup.c is_git_directory: HEAD, objects/, refs/), npm a
// package.json, cargo .cargo/config.toml, so a directory on the way the user may *add* entries
// to (/tmp, sticky or not) is plantable, even though what others put there stays.
std::optional<std::string> first_plantable_directory(const std::vector<PathStep>& steps,
                                                     const ResolvedPolicy& policy,
                                                     const HostUser& user);

// An entry directly inside an ancestor of the cwd, off the walk itself (`/work/.git` beside
// `/work/proj`), which a program discovering upward could read: plantable when the user may
// change it (root; its owner; a group or other write bit, or, for a symlink, what it leads to).
// One exception: a sticky directory the user does not own (/tmp, /var/tmp): new names can be
// added inside it, but no program discovers upward through such a name. The sandbox runs as the
// user, so it writes no more on the host than the user can.
std::optional<std::string> plantable_beside(const PathStep& entry, const HostUser& user);

// The environment an excluded command runs with, reset like sudo's env_reset (sudoers(5)
// "env_reset", "env_check"): a denylist of variables that load code or configuration cannot be
// complete (BASH_ENV for a bash script started by its #! line, PYTHONPLATLIBDIR, OPENSSL_CONF,
// TAR_OPTIONS, LESS, GIT_ASKPASS, MAKEFLAGS, KRB5_CONFIG, ...), so only an allowlist of names
// known to load neither passes, and only with a value that names no file: PATH (replaced by the
// run with the searched entries), HOME (judged by the run), XDG_CONFIG_HOME when absolute
// (judged by the run), USER, LOGNAME, TERM, LANG, LANGUAGE, the LC_* categories of locale(7)
// without '/' or '%', TZ without a path (tz_is_safe below), COLUMNS and LINES when digits,
// NO_COLOR, and PWD (set to `cwd`). Everything else is dropped and named in `dropped` (each
// name once, in the order found), never its value.
struct ResetEnvironment {
  std::vector<std::string> env;      // NAME=value entries kept
  std::vector<std::string> dropped;  // names dropped
};
ResetEnvironment reset_environment(const std::vector<std::string>& env, const std::string& cwd);

// What find_trusted_program found.
struct TrustedProgram {
  std::optional<std::string> path;  // absolute; set when the program may run unsandboxed
  // `path` with every symlink followed: the file that runs, whose name says which program it is
  // (program_grammar.hpp is_file_of: a link named ls may lead to vim.basic).
  std::string real_path;
  std::string refused;  // else why not (the program could have been planted, ...)
  // PATH without the entries that were skipped (relative, or with a plantable step): the PATH
  // an unsandboxed excluded command gets, so that what it looks up agrees with this lookup.
  std::string trusted_path_env;
  std::vector<std::string> skipped_path_entries;
};

// This process's user (geteuid) and whether its effective capability set (/proc/self/status
// CapEff, proc(5)) is non-empty; when that cannot be read, it counts as capable.
HostUser current_host_user();

// Resolves `command` (a name containing '/' is a path, relative to `cwd`; else searched in
// `path_env`, PATH's value) for a run without a sandbox under `policy`. Relative PATH entries
// (empty ones included: the working directory) and entries with a plantable step are skipped;
// the program is refused when any step to it is plantable, when it is not found in the other
// entries, or when it is not an executable regular file. On Windows nothing is verified yet,
// so every program is refused (the command runs sandboxed).
TrustedProgram find_trusted_program(const std::string& command, const std::string& cwd,
                                    const std::string& path_env, const ResolvedPolicy& policy,
                                    const HostUser& user);

// What lies *below* a directory an excluded program reads (its cwd, HOME, XDG_CONFIG_HOME): the
// first entry a sandboxed command could have changed (plantable, each entry judged as a last
// step), or a symlink whose target's walk has a plantable step; directories are entered, symlinks
// are not (their targets are walked). More than `max_entries` entries: refused, as not verified
// (nullopt only when every entry was judged). The upward walks (walk_path) cannot see a
// user-owned Makefile or target/ inside a directory the user does not own.
std::optional<std::string> first_plantable_below(const std::string& dir,
                                                 const ResolvedPolicy& policy, const HostUser& user,
                                                 std::size_t max_entries);

// Entries directly inside each directory of `ancestors` (the walk to the cwd, its last step, the
// cwd itself, excluded: first_plantable_below covers it) other than the walk's own steps, each
// judged by plantable_beside (a symlink to a missing path: the walk to the directory that would
// hold its target, under `policy`). More than `max_per_directory` in one directory: refused, as
// not verified.
std::optional<std::string> first_plantable_beside(const std::vector<PathStep>& ancestors,
                                                  const ResolvedPolicy& policy,
                                                  const HostUser& user,
                                                  std::size_t max_per_directory);

// The repository git would read from `cwd` (symlink-free), whole: git reads every file of the
// work tree and of .git from any directory inside it, and `git status` recurses into submodules,
// whose `.git` files name directories under the superproject's .git/modules. So the top is the
// outermost directory at or above `cwd` that holds a `.git` entry or is itself a git directory
// (HEAD, objects/, refs/; gitrepository-layout(5)). `refused` is set when a `.git` file on the
// way names a directory outside that top (a linked worktree's: git reads it too, and sbx does
// not follow it), or when a `.git` file anywhere below the top (a submodule's) names one outside
// it (git status reads a submodule's git directory, its configuration included); `top` is empty
// when `cwd` is in no repository.
struct RepositoryTop {
  std::optional<std::string> top;
  std::string refused;
  // The directories below `top` holding a `.git` file (submodules' work trees): git status
  // recurses into them with their own configuration.
  std::vector<std::string> gitfile_dirs;
};
RepositoryTop repository_top(const std::string& cwd);

// The walk find_trusted_program makes, exposed for tests: every step from "/" to the file or
// directory `path` (absolute) names, symlinks followed (at most 40, as the kernel's
// MAXSYMLINKS); an Error when a component is missing, not a directory, or a loop.
Result<std::vector<PathStep>> walk_path(const std::string& path);

}  // namespace sbx
