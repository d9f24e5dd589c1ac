// The allowlist of programs an excluded command may run unsandboxed (sbx/core/program_grammar.hpp).
// The refused rows are the red teams' findings: each ran a command or wrote a file on the host
// through an excluded-command pattern before the allowlist.
#include "sbx/core/program_grammar.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace sbx::settings {
namespace {

using Argv = std::vector<std::string>;

// Issue #32 round 2, A1-A3: other names of editors and pagers, the dynamic loader run as a
// program, and options of ordinary programs that run a command.
TEST(ProgramGrammar, RefusesWhatTheSecondReviewRanUnsandboxed) {
  for (const Argv& argv : std::vector<Argv>{
           // A1: names that lead to an editor, a pager or a script
           {"vim.basic", "-Es", "-c", "!id", "-c", "qa!"},
           {"editor", "f"},
           {"/etc/alternatives/editor", "f"},
           {"pager", "f"},
           {"sensible-editor", "f"},
           {"zless", "f"},
           {"lesspipe", "f"},
           {"which", "ls"},
           {"egrep", "x"},
           // A2: the dynamic loader runs any program it is given
           {"ld.so", "/bin/sh", "x"},
           {"/lib64/ld-linux-x86-64.so.2", "/bin/sh"},
           {"ldd", "./x"},
           // A3: options of accepted-looking programs that run a command
           {"prove", "-e", "sh", "t"},
           {"pip3", "download", "x"},
           {"split", "--filter=sh", "f"},
           {"git", "ls-remote", "--upload-pack=sh", "r"},
           {"git", "grep", "-O", "x"},
           {"scp", "-S", "sh", "a", "b"},
           {"sort", "--compress-program=sh", "f"},
           {"sort", "--compress=sh", "f"},
           {"sort", "-o", "/home/u/.bashrc", "f"},
           {"sort", "-ro/home/u/.bashrc", "f"},
           {"sort", "--out=/x", "f"},
           {"sort", "-T", "/x", "f"},
           {"uniq", "in", "out"},
           {"uniq", "-c", "in", "--", "-out"},
           {"date", "-s", "2020-01-01"},
           {"date", "--se=2020-01-01"},
           {"find", ".", "-exec", "id", ";"},
           {"find", ".", "-fprint", "/x"},
           {"find", ".", "-delete"},
           {"rg", "--pre", "sh", "x"},
           {"rg", "--pre=sh", "x"},
           {"rg", "-nz", "x"},
           {"rg", "--search-z", "x"},
           {"rg", "--hostname-bin=sh", "x"},
           {"git", "log", "--output=/x"},
           {"git", "diff", "--out=/x"},
           {"git", "diff", "--ext-diff"},
           {"git", "show", "--textconv", "HEAD"},
           {"git", "diff", "--open-files-in-pager"},
           {"git", "-c", "core.pager=sh", "log"},
           {"git", "-C", "/tmp", "status"},
           {"git", "branch", "new-branch"},
           {"git", "branch", "-d", "x"},
           {"git", "branch", "-m", "x"},
           {"git", "push"},
           {"git"},
           {"sed", "s/x/y/", "f"},
           {"sed", "-n", "1e id", "f"},
           {"sed", "-n", "1p", "f", "-i"},
           {"sed", "-n", "1p", "-i"},
           {"sed", "-n", "1w /x", "f"},
           // Round 3: the pager, man and gpg through git; pr through diff; the clock through
           // date's legacy operand; thousands of temporary files through sort -S.
           {"git", "log", "--help"},
           {"git", "status", "--he"},
           {"git", "log", "--show-signature"},
           {"git", "show", "--format=%G?"},
           {"git", "log", "--pretty=format:%GG"},
           // Round 8: for-each-ref's signature atom runs gpg too (git >= 2.42).
           {"git", "branch", "--format=%(signature)"},
           {"git", "branch", "--format", "%(signature:key)"},
           {"git", "log", "--paginate"},
           {"diff", "-l", "a", "b"},
           {"diff", "-ul", "a", "b"},
           {"diff", "--pag", "a", "b"},
           {"date", "010100002030"},
           {"date", "-u", "--", "010100002030"},
           {"sort", "-S", "64K", "f"},
           {"sort", "--buffer=64K", "f"},
           {"awk", "1"},
           {"python3", "-c", "1"},
           {"bash", "x.sh"},
           {"sh"},
           {"env", "ls"},
           {"xargs", "ls"},
           {"busybox", "ls"},
           {"coreutils", "--coreutils-prog=ls"},
           {"tee", "/x"},
           {"cp", "a", "b"},
           {"docker", "ps"},
           {"make", "test"},
           {"npm", "test"}}) {
    std::optional<std::string> why = unknown_grammar(argv);
    ASSERT_TRUE(why.has_value()) << argv.front() << " " << argv.back();
    EXPECT_FALSE(why->empty());
  }
}

TEST(ProgramGrammar, AcceptsReadingCommands) {
  for (const Argv& argv : std::vector<Argv>{{"ls", "-la", "/etc"},
                                            {"/usr/bin/ls"},
                                            {"cat", "a", "b"},
                                            {"head", "-n", "5", "f"},
                                            {"tail", "-f", "f"},
                                            {"wc", "-l"},
                                            {"grep", "-rn", "x", "."},
                                            {"rg", "-n", "x"},
                                            {"rg", "--pretty", "x"},
                                            {"find", ".", "-name", "*.c", "-print"},
                                            {"sort", "-rn", "-k", "2"},
                                            {"sort", "-u", "f"},
                                            {"uniq", "-c"},
                                            {"uniq", "-c", "in"},
                                            {"date", "+%s"},
                                            {"date", "-u", "+%F"},
                                            {"diff", "-u", "a", "b"},
                                            {"git", "log", "--format=%H %s"},
                                            {"sed", "-n", "10p"},
                                            {"sed", "-n", "1,20p", "f"},
                                            {"git", "status"},
                                            {"git", "status", "--porcelain"},
                                            {"git", "log", "--oneline", "-n", "5"},
                                            {"git", "diff", "--stat", "HEAD~1"},
                                            {"git", "diff", "--output-indicator-new=+"},
                                            {"git", "show", "HEAD"},
                                            {"git", "branch"},
                                            {"git", "branch", "--show-current"},
                                            {"git", "branch", "-a", "--format=%(refname)"},
                                            {"echo", "hi"},
                                            {"true"},
                                            {"pwd"}}) {
    EXPECT_EQ(unknown_grammar(argv), std::nullopt) << argv.front() << " " << argv.back();
  }
}

// A shell is no program of the table: sbx reads its script only as `SHELL -c SCRIPT`, which
// programs_of splits (command_patterns.hpp); any other form names a script sbx does not read.
TEST(ProgramGrammar, AShellIsReadOnlyAsTheWholeCommand) {
  std::optional<std::string> why = unknown_grammar({"bash", "-c", "ls"});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("runs a script sbx does not read"), std::string::npos) << *why;
}

TEST(ProgramGrammar, TheRefusalNamesTheProgramsThatRun) {
  std::optional<std::string> why = unknown_grammar({"vim.basic", "f"});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("'vim.basic' is not a program sbx runs without a sandbox"), std::string::npos)
      << *why;
  EXPECT_NE(why->find("git, grep, head"), std::string::npos) << *why;
  why = unknown_grammar({"sort", "-o", "x"});
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "'sort' with the option '-o' writes a file or runs a program");
}

// A1: the arguments are checked for the program the name says, so the file that runs must be
// that program, whatever links lead to it.
TEST(ProgramGrammar, TheFileMustBeTheProgramItsNameSays) {
  EXPECT_TRUE(is_file_of("ls", "ls"));
  EXPECT_TRUE(is_file_of("/usr/bin/ls", "ls"));
  EXPECT_TRUE(is_file_of("./bin/git", "git"));
  EXPECT_FALSE(is_file_of("ls", "vim.basic"));
  EXPECT_FALSE(is_file_of("ls", "busybox"));
  EXPECT_FALSE(is_file_of("cat", "coreutils"));
  EXPECT_FALSE(is_file_of("editor", "vim.basic"));
  EXPECT_FALSE(is_file_of("git", "git-shell"));
  EXPECT_TRUE(is_file_of("sh", "dash"));
  EXPECT_TRUE(is_file_of("sh", "bash"));
  EXPECT_FALSE(is_file_of("sh", "busybox"));
  EXPECT_FALSE(is_file_of("bash", "dash"));
  EXPECT_TRUE(is_file_of("ksh", "ksh93"));
}

TEST(ProgramGrammar, TheNamesAreSortedAndHoldNoShellOrRunner) {
  const std::vector<std::string> names = known_program_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* never : {"sh", "bash", "env", "xargs", "awk", "less", "vim", "tee", "cp"})
    EXPECT_EQ(std::find(names.begin(), names.end(), never), names.end()) << never;
}

}  // namespace
}  // namespace sbx::settings
