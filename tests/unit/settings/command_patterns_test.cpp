// The shell-syntax splitter and the command patterns of excluded commands
// (sbx/core/command_patterns.hpp). Table-driven; the hostile rows are the point: whatever could
// run something the words do not show must come back "in doubt" (nullopt), which sandboxes.
#include "sbx/core/command_patterns.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sbx/core/manager.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/run.hpp"

namespace sbx::settings {
namespace {

using Parts = std::vector<SimpleCommand>;

struct SplitCase {
  std::string script;
  std::optional<Parts> parts;  // nullopt: in doubt
};

TEST(Splitter, Table) {
  const std::vector<SplitCase> cases = {
      // Plain commands and every separator.
      {"docker ps", Parts{{"docker", "ps"}}},
      {"  docker   ps  ", Parts{{"docker", "ps"}}},
      {"a && b", Parts{{"a"}, {"b"}}},
      {"a&&b||c", Parts{{"a"}, {"b"}, {"c"}}},
      {"a | b |& c", Parts{{"a"}, {"b"}, {"c"}}},
      {"a; b;", Parts{{"a"}, {"b"}}},
      // A lone & backgrounds a part, which would outlive the run: in doubt.
      {"a & b &", std::nullopt},
      {"a &", std::nullopt},
      {"a\nb\n\n", Parts{{"a"}, {"b"}}},
      {"a &&\nb", Parts{{"a"}, {"b"}}},
      {"(a; b) && c", Parts{{"a"}, {"b"}, {"c"}}},
      {"a && (b | c)", Parts{{"a"}, {"b"}, {"c"}}},
      // Quotes are removed; what they hold is literal.
      {"echo 'a;b && c'", Parts{{"echo", "a;b && c"}}},
      {"echo \"a | b\" 'x'y", Parts{{"echo", "a | b", "xy"}}},
      {"docker ps --format '{{.ID}} $HOME `x`'",
       Parts{{"docker", "ps", "--format", "{{.ID}} $HOME `x`"}}},
      {"echo ''", Parts{{"echo", ""}}},
      {"a#b", Parts{{"a#b"}}},
      // Expansions and substitutions: in doubt.
      {"echo $(rm -rf ~)", std::nullopt},
      {"echo `rm -rf ~`", std::nullopt},
      {"echo $HOME", std::nullopt},
      {"echo \"$(id)\"", std::nullopt},
      {"echo \"`id`\"", std::nullopt},
      {"echo \"\\\"\"", std::nullopt},
      {"echo $((1+1))", std::nullopt},
      {"((x=1))", std::nullopt},
      {"docker ps <(evil)", std::nullopt},
      // Redirections and here-docs.
      {"docker ps > ~/.bashrc", std::nullopt},
      {"docker ps >out", std::nullopt},
      {"cat <<EOF\nrm -rf /\nEOF", std::nullopt},
      {"docker ps &>log", std::nullopt},
      {"docker ps 2>&1", std::nullopt},
      // Escapes, comments, tildes, globs, braces.
      {"docker ps \\; rm -rf /", std::nullopt},
      {"docker ps \\\nrm", std::nullopt},
      {"docker ps # && rm -rf /", std::nullopt},
      {"~/bin/docker ps", std::nullopt},
      {"doc*er ps", std::nullopt},
      {"docker rm ?", std::nullopt},
      {"docker rm [ab]", std::nullopt},
      {"{ a; b; }", std::nullopt},
      {"echo {a,b}", std::nullopt},
      // Reserved words and assignments.
      {"if true; then rm -rf /; fi", std::nullopt},
      {"for x in a; do b; done", std::nullopt},
      {"while :; do :; done", std::nullopt},
      {"! docker ps", std::nullopt},
      {"function f", std::nullopt},
      {"time docker ps", std::nullopt},
      {"PATH=/tmp docker ps", std::nullopt},
      {"LD_PRELOAD=/x.so docker ps", std::nullopt},
      {"docker ps && X=1 rm", std::nullopt},
      // Malformed: unbalanced, empty commands, case terminators, stray parentheses.
      {"echo 'open", std::nullopt},
      {"echo \"open", std::nullopt},
      {"(a", std::nullopt},
      {"a)", std::nullopt},
      {"a && && b", std::nullopt},
      {"; a", std::nullopt},
      {"a &&", std::nullopt},
      {"a |", std::nullopt},
      {"a ;; b", std::nullopt},
      {"f() (a)", std::nullopt},
      {"(a) b", std::nullopt},
      {"(a)(b)", std::nullopt},
      {"(a) 'b'", std::nullopt},
      {"", std::nullopt},
      {"   \n", std::nullopt},
      // Control characters (a terminal escape, a carriage return, NUL).
      {"docker ps\r\nrm", std::nullopt},
      {std::string("docker ps\0rm", 12), std::nullopt},
      {"docker ps\x1b[2K", std::nullopt},
      {"echo 'a\nb'", std::nullopt},
  };
  for (const SplitCase& c : cases) {
    const std::optional<Parts> got = split_shell_command(c.script);
    EXPECT_EQ(got, c.parts) << "script: [" << c.script << "]";
  }
}

struct PatternCase {
  std::string pattern;
  SimpleCommand words;
  bool matches;
};

TEST(CommandPatterns, Table) {
  const std::vector<PatternCase> cases = {
      {"git status", {"git", "status"}, true},
      {"git status", {"git", "status", "-s"}, false},
      {"git status", {"git"}, false},
      {"docker *", {"docker"}, true},
      {"docker *", {"docker", "ps", "-a"}, true},
      {"docker *", {"dockerd"}, false},
      {"docker *", {"/usr/bin/docker", "ps"}, false},
      {"docker compose *", {"docker", "compose", "up"}, true},
      {"docker compose *", {"docker", "ps"}, false},
      {"npm run test*", {"npm", "run", "test:unit"}, true},
      {"npm run test*", {"npm", "run", "build"}, false},
      {"*", {"anything", "at", "all"}, true},
      {"git * --version", {"git", "x", "--version"}, true},
      {"git * --version", {"git", "--version", "x"}, false},
      {"", {"git"}, false},
      {"git", {}, false},
  };
  for (const PatternCase& c : cases) {
    EXPECT_EQ(command_pattern_matches(c.pattern, c.words), c.matches)
        << "pattern [" << c.pattern << "] words " << testing::PrintToString(c.words);
  }
}

TEST(ExcludedCommand, EveryPartMustMatch) {
  const std::vector<std::string> patterns = {"docker *", "git status"};
  using Match = std::optional<std::vector<std::string>>;
  EXPECT_EQ(match_excluded_command({"docker", "ps"}, patterns), Match({"docker *"}));
  EXPECT_EQ(match_excluded_command({"sh", "-c", "docker ps && git status"}, patterns),
            Match({"docker *", "git status"}));
  EXPECT_EQ(match_excluded_command({"/bin/bash", "-c", "docker ps | docker images"}, patterns),
            Match({"docker *", "docker *"}));
  EXPECT_EQ(match_excluded_command({"sh", "-c", "docker ps && rm -rf ~"}, patterns), std::nullopt);
  EXPECT_EQ(match_excluded_command({"sh", "-c", "docker ps $(rm -rf ~)"}, patterns), std::nullopt);
  EXPECT_EQ(match_excluded_command({"sh", "-c", "docker ps\nrm -rf ~"}, patterns), std::nullopt);
  // Without a shell there is no splitting: the argv is the one command.
  EXPECT_EQ(match_excluded_command({"docker", "ps;", "rm"}, patterns), Match({"docker *"}));
  EXPECT_EQ(match_excluded_command({"rm", "-rf", "/"}, patterns), std::nullopt);
  EXPECT_EQ(match_excluded_command({"docker", "ps"}, {}), std::nullopt);
  EXPECT_EQ(match_excluded_command({}, patterns), std::nullopt);
}

// The programs a matched command runs (program_trust.hpp verifies each before it runs
// unsandboxed): argv[0], and in a shell script every simple command's first word but the
// builtins that run nothing.
TEST(ProgramsOf, TheShellAndEveryProgramItLooksUp) {
  using Programs = std::optional<std::vector<std::string>>;
  EXPECT_EQ(programs_of({"git", "status"}), Programs({"git"}));
  EXPECT_EQ(programs_of({"./bin/sh", "-c", "ls"}), Programs({"./bin/sh", "ls"}));
  EXPECT_EQ(programs_of({"/bin/bash", "-c", "echo a && git status | wc -l; true"}),
            Programs({"/bin/bash", "git", "wc"}));
  // Only the inert builtins are not looked up.
  EXPECT_EQ(programs_of({"sh", "-c", "true && echo a; pwd || : && false"}), Programs({"sh"}));
  // Any other builtin is in doubt, with the reason (red team F3, F4): cd changes what relative
  // names and the working directory's files mean; printf -v, hash -p, command, export, ...
  // change what later parts run; the shell runs its builtin, not the PATH file sbx would check.
  for (const char* script :
       {"cd sub && ./x", "ls && cd sub", "cd sub && /bin/ls", "printf -v PATH /tmp/e; git status",
        "command ./x", "hash -p ./x git; git status", "export PATH=/e; git status", "source ./x",
        ". ./x", "eval ls", "exec ls", "alias git=./x", "set -a", "read x", "test 1 -eq 1",
        "builtin ls", "zmodload zsh/files", "type ls", "ulimit -c 0"}) {
    std::string why;
    EXPECT_EQ(programs_of({"bash", "-c", script}, &why), std::nullopt) << script;
    EXPECT_NE(why.find("the shell builtin"), std::string::npos) << script << ": " << why;
  }
  // A program that runs another one named in its arguments: in doubt, directly or in a script
  // (red team: `timeout *`, `nice *` ran a planted ./build.sh; `git *` allows -c core.fsmonitor).
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"timeout", "5", "./build.sh"},
                                             {"/usr/bin/nice", "./build.sh"},
                                             {"env", "./x"},
                                             {"xargs", "rm"},
                                             {"sudo", "ls"},
                                             {"git", "-c", "core.fsmonitor=id", "status"},
                                             {"git", "-C", "/tmp", "status"},
                                             {"find", ".", "-exec", "id", ";"},
                                             {"sh", "-c", "ls && nohup ./x"},
                                             {"bash", "-c", "git --exec-path=/e status"}}) {
    std::string why;
    EXPECT_EQ(programs_of(argv, &why), std::nullopt) << argv.front();
    EXPECT_FALSE(why.empty()) << argv.front();
  }
  // Red team round 2, G5: the runners it found missing, and the options by which tar, zip and
  // rsync run a command. None is a program sbx knows the arguments of (program_grammar.hpp).
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"prlimit", "--cpu=1", "sh"},
                                             {"linux32", "sh"},
                                             {"setarch", "x86_64", "sh"},
                                             {"fakeroot", "sh"},
                                             {"dbus-run-session", "sh"},
                                             {"ssh-agent", "sh"},
                                             {"perf", "stat", "--", "sh"},
                                             {"run-parts", "/etc/x"},
                                             {"ip", "netns", "exec", "n", "sh"},
                                             {"start-stop-daemon", "-S", "-x", "/bin/sh"},
                                             {"bwrap", "--", "sh"},
                                             {"systemd-run", "sh"},
                                             {"ssh", "-o", "ProxyCommand=x", "h"},
                                             {"watch", "sh"},
                                             {"tar", "-xf", "a.tar", "--to-command=sh"},
                                             {"tar", "-xf", "a.tar"},
                                             {"zip", "-r", "a.zip", "x"},
                                             {"rsync", "-av", "a", "b"},
                                             {"sh", "-c", "tar -xf a --to-command=sh"}}) {
    std::string why;
    EXPECT_EQ(programs_of(argv, &why), std::nullopt) << argv.front() << " " << argv.back();
    EXPECT_NE(why.find("is not a program sbx runs without a sandbox"), std::string::npos)
        << argv.front() << ": " << why;
  }
  EXPECT_EQ(programs_of({"git", "status", "-c"}), Programs({"git"}));
  EXPECT_EQ(programs_of({"find", ".", "-name", "x"}), Programs({"find"}));
  EXPECT_EQ(programs_of({"sh", "-c", "ls $(x)"}), std::nullopt);
  EXPECT_EQ(programs_of({}), std::nullopt);
  // Not a shell script: one program, its arguments are not looked at.
  EXPECT_EQ(programs_of({"grep", "-c", "ls"}), Programs({"grep"}));
}

// Issue #32, A2: programs that run code from their arguments or input (interpreters, pagers,
// editors, multiplexers) and shells in any form but the whole `SHELL -c SCRIPT`: in doubt,
// directly or in a script, versioned names too.
TEST(ProgramsOf, ProgramsThatRunCodeFromTheirArgumentsOrInput) {
  using Programs = std::optional<std::vector<std::string>>;
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"sed", "-n", "1e /tmp/evil/pwn", "/etc/hostname"},
                                             {"/usr/bin/sed", "s/x/y/", "f"},
                                             {"awk", "BEGIN{system(\"id\")}"},
                                             {"gawk", "1"},
                                             {"mawk", "1"},
                                             {"nawk", "1"},
                                             {"perl", "-e", "1"},
                                             {"perl5.36", "x"},
                                             {"python3", "-c", "ls"},
                                             {"python3.11", "x.py"},
                                             {"python", "x"},
                                             {"pypy3", "x"},
                                             {"ruby", "-e", "1"},
                                             {"node", "x.js"},
                                             {"nodejs", "x"},
                                             {"php", "x"},
                                             {"lua5.4", "x"},
                                             {"tclsh8.6", "x"},
                                             {"less", "/etc/hostname"},
                                             {"more", "f"},
                                             {"most", "f"},
                                             {"man", "-P", "id", "ls"},
                                             {"tmux", "new", "id"},
                                             {"screen", "id"},
                                             {"vi", "f"},
                                             {"vim", "-c", ":!id"},
                                             {"nvim", "f"},
                                             {"emacs", "f"},
                                             {"nano", "f"},
                                             {"ed", "f"},
                                             {"ex", "f"},
                                             {"gdb", "-ex", "shell id"},
                                             {"bash", "/tmp/evil/x.sh"},
                                             {"sh", "-s"},
                                             {"bash", "--rcfile", "/x", "-c", "ls"},
                                             {"/bin/dash", "-ec", "ls"},
                                             {"fish", "-c", "id"},
                                             {"sh", "-c", "ls && sed 1d f"},
                                             {"sh", "-c", "echo a | bash -c id"},
                                             {"sh", "-c", "sh -c id"}}) {
    std::string why;
    EXPECT_EQ(programs_of(argv, &why), std::nullopt) << argv.front() << " " << argv.back();
    EXPECT_TRUE(why.find("is not a program sbx runs without a sandbox") != std::string::npos ||
                why.find("runs a script sbx does not read") != std::string::npos ||
                why.find("'sed' runs without a sandbox only as") != std::string::npos)
        << argv.front() << ": " << why;
  }
  std::string why;
  EXPECT_EQ(programs_of({"sed", "-n", "1e id", "f"}, &why), std::nullopt);
  EXPECT_EQ(why,
            "'sed' runs without a sandbox only as `sed -n Np` or `sed -n M,Np` with at most one "
            "file: any other script may run a command or write a file");
  // Programs that only read their arguments as data, and the one shell form sbx reads.
  EXPECT_EQ(programs_of({"cat", "f"}), Programs({"cat"}));
  EXPECT_EQ(programs_of({"sed", "-n", "1,5p", "f"}), Programs({"sed"}));
  // ldd runs the dynamic loader on its argument; an unknown name is no program sbx knows.
  EXPECT_EQ(programs_of({"ldd", "/bin/true"}), std::nullopt);
  EXPECT_EQ(programs_of({"edit-me"}), std::nullopt);
  EXPECT_EQ(programs_of({"bash", "-c", "ls"}), Programs({"bash", "ls"}));
}

// The run pipeline's rule (run.hpp excluded_command): only with auto, only when the settings
// permit unsandboxed runs, never for a policy with deny entries or network mode proxy.
TEST(ExcludedCommand, OnlyWhenTheSettingsAndThePolicyAllowIt) {
  SettingsSummary settings;
  settings.excluded_commands = {"docker *"};
  const Policy workspace = preset_policy("workspace-write").value();
  const std::vector<std::string> docker = {"docker", "ps"};
  EXPECT_TRUE(excluded_command(workspace, SandboxPreference::kAuto, docker, settings));
  EXPECT_FALSE(excluded_command(workspace, SandboxPreference::kRequire, docker, settings));
  Policy denied = workspace;
  denied.filesystem.entries.push_back(PolicyEntry{"~/.ssh", "", Access::kDeny});
  EXPECT_FALSE(excluded_command(denied, SandboxPreference::kAuto, docker, settings));
  Policy proxied = workspace;
  proxied.network.mode = NetworkMode::kProxy;
  EXPECT_FALSE(excluded_command(proxied, SandboxPreference::kAuto, docker, settings));
  SettingsSummary not_permitted = settings;
  not_permitted.unsandboxed_permitted = false;
  EXPECT_FALSE(excluded_command(workspace, SandboxPreference::kAuto, docker, not_permitted));
  SettingsSummary locked = settings;
  locked.escape_hatch_locked = true;
  EXPECT_FALSE(excluded_command(workspace, SandboxPreference::kAuto, docker, locked));
}

}  // namespace
}  // namespace sbx::settings
