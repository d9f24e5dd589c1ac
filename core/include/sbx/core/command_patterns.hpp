// Excluded commands (settings "excluded_commands"): command patterns that run without a sandbox
// when the merged settings permit unsandboxed runs and the policy has nothing only a sandbox
// can hold (run.hpp never_unsandboxed). A command given as `sh -c SCRIPT` (bash, dash, zsh,
// ksh too) is split into its simple commands by a conservative shell-syntax splitter, and every
// one must match; anything the splitter is not sure about means "sandbox". Pure. A match names
// words, not files: the programs it would run are verified before (program_trust.hpp).
//
// Patterns, compared with the command's words (quotes removed, joined by one space):
//   "git status"   exact: these words and no others
//   "docker *"     prefix: a final " *" (and no other '*') matches these words followed by any
//                  (also none)
//   "npm run t*"   wildcard: any other '*' matches any run of characters of the joined words
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::settings {

// One simple command: its words, quotes removed.
using SimpleCommand = std::vector<std::string>;

// Splits a shell script into simple commands at ;, &&, ||, |, |&, newlines and the
// parentheses of a subshell. nullopt ("in doubt") for a lone & (a background part outlives the
// run) and for anything that could run or name code the
// words do not show: $ (expansions, $(...)), backticks, backslashes, redirections (< >,
// here-docs), braces, glob characters (* ? [ ]), a leading ~ or #, an assignment before the
// command (NAME=value cmd), a reserved word (if, for, while, function, !, ...), control
// characters, unbalanced quotes or parentheses, and empty commands (`a && && b`).
std::optional<std::vector<SimpleCommand>> split_shell_command(std::string_view script);

// True if `pattern` (see above) matches the command `words`.
bool command_pattern_matches(std::string_view pattern, const SimpleCommand& words);

// The pattern that matched each part of `argv`, in order (one per simple command); nullopt
// when some part matches none, the script is in doubt, or there are no patterns.
std::optional<std::vector<std::string>> match_excluded_command(
    const std::vector<std::string>& argv, const std::vector<std::string>& patterns);

// True for `SHELL -c SCRIPT ...` with SHELL (by its last path component) one the splitter
// reads: sh, bash, dash, zsh, ksh.
bool is_shell_script(const std::vector<std::string>& argv);

// The programs a matched excluded command runs, as named (program_trust.hpp verifies each):
// argv[0], then for `sh -c SCRIPT` the first word of each simple command, except the inert
// builtins ':', echo, false, pwd and true. nullopt (with the reason in `why`) when the script
// cannot be split, or when a part starts with any other builtin of bash, zsh, dash, ksh or
// busybox sh (cd, printf, command, hash, export, ...): the shell runs those itself, and they can
// change what later parts run or read. Also nullopt when the command or a part starts with a
// program that runs another one named in its arguments (env, timeout, nice, xargs, sudo, ...),
// git with a global option before its subcommand (-c, -C, ...), or find with -exec/-ok/-delete.
std::optional<std::vector<std::string>> programs_of(const std::vector<std::string>& argv,
                                                    std::string* why = nullptr);

}  // namespace sbx::settings
