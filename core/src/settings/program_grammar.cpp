// The allowlist of programs an excluded command may run unsandboxed, with the arguments each may
// take (sbx/core/program_grammar.hpp). Every check errs one way: an argument it cannot place is
// refused, and a refused command only runs sandboxed.
#include "sbx/core/program_grammar.hpp"

#include <algorithm>
#include <initializer_list>
#include <iterator>

namespace sbx::settings {
namespace {

using Words = std::vector<std::string>;
using Refusal = std::optional<std::string>;

std::string base_name(std::string_view program) {
  const std::size_t slash = program.rfind('/');
  return std::string(slash == std::string_view::npos ? program : program.substr(slash + 1));
}

// True when `word` is the long option `option` or an abbreviation of it, with or without
// "=value": getopt_long(3) and git's parse-options accept any unambiguous prefix ("--out=F" for
// --output), so an exact comparison would miss one. "--" and "--x" are too short to name one.
bool is_long_option(std::string_view word, std::string_view option) {
  if (word.rfind("--", 0) != 0) return false;
  const std::string_view name = word.substr(0, word.find('='));
  return name.size() >= 3 && option.rfind(name, 0) == 0;
}

// True when `word` is a cluster of short options ("-rnz") holding one of `letters`. A letter that
// is the value of an earlier option in the cluster ("-tz": separator z) counts too: refusing a
// harmless command is the side this errs on.
bool cluster_has(std::string_view word, std::string_view letters) {
  if (word.size() < 2 || word[0] != '-' || word[1] == '-') return false;
  return word.find_first_of(letters, 1) != std::string_view::npos;
}

// The first argument after the program that is one of `longs` (or an abbreviation) or a cluster
// holding one of `shorts`, up to "--" (after it every word is an operand).
std::optional<std::string> first_option(const Words& words, std::string_view shorts,
                                        std::initializer_list<std::string_view> longs) {
  for (std::size_t i = 1; i < words.size() && words[i] != "--"; ++i) {
    const std::string& word = words[i];
    if (!shorts.empty() && cluster_has(word, shorts)) return word;
    for (std::string_view option : longs) {
      if (is_long_option(word, option)) return word;
    }
  }
  return std::nullopt;
}

std::string option_refusal(const Words& words, const std::string& option, std::string_view does) {
  return "'" + base_name(words.front()) + "' with the option '" + option + "' " + std::string(does);
}

// Programs that only read the files and text their arguments name and write to standard output:
// no option of theirs runs a program or writes a file (GNU coreutils(1), grep(1), diffutils,
// util-linux rev(1); checked against each manual's option list).
Refusal any_arguments(const Words&) { return std::nullopt; }

// sort(1): -o/--output writes a file, --compress-program runs one, -T/--temporary-directory
// writes below a directory the caller names, and a small -S/--buffer-size makes it spill
// thousands of temporary files into /tmp (TMPDIR is dropped by the reset environment).
Refusal sort_arguments(const Words& words) {
  if (std::optional<std::string> option = first_option(
          words, "oST",
          {"--output", "--compress-program", "--temporary-directory", "--buffer-size"}))
    return option_refusal(words, *option, "writes a file or runs a program");
  return std::nullopt;
}

// uniq(1): a second operand is the output file. Every word that is not an option counts as an
// operand, option values included ("-f 2"): a count too high only refuses.
Refusal uniq_arguments(const Words& words) {
  std::size_t operands = 0;
  bool after_dashes = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (!after_dashes && word == "--") {
      after_dashes = true;
      continue;
    }
    if (after_dashes || word == "-" || word.empty() || word[0] != '-') ++operands;
  }
  if (operands > 1) return std::string("'uniq' with two operands writes the second one");
  return std::nullopt;
}

// date(1): -s/--set sets the system clock, and so does an operand that is not a +FORMAT (the
// legacy MMDDhhmm[[CC]YY][.ss], also after "--"). Every word that is not an option counts as an
// operand, option values included ("-d tomorrow"): refusing is the side this errs on.
Refusal date_arguments(const Words& words) {
  if (std::optional<std::string> option = first_option(words, "s", {"--set"}))
    return option_refusal(words, *option, "sets the clock");
  bool after_dashes = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (!after_dashes && word == "--") {
      after_dashes = true;
      continue;
    }
    const bool operand = after_dashes || word.empty() || word[0] != '-';
    if (operand && (word.empty() || word[0] != '+'))
      return "'date' with the operand '" + word + "' sets the clock (only +FORMAT is read)";
  }
  return std::nullopt;
}

// diff(1): -l/--paginate pipes the output through pr(1), another program.
Refusal diff_arguments(const Words& words) {
  if (std::optional<std::string> option = first_option(words, "l", {"--paginate"}))
    return option_refusal(words, *option, "runs another program");
  return std::nullopt;
}

// find(1) ACTIONS: -exec, -execdir, -ok and -okdir run a program; -delete removes; -fls,
// -fprint, -fprint0 and -fprintf write a file. Primaries are whole words, never abbreviated.
Refusal find_arguments(const Words& words) {
  constexpr std::string_view kActions[] = {"-exec", "-execdir", "-ok",      "-okdir",  "-delete",
                                           "-fls",  "-fprint",  "-fprint0", "-fprintf"};
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (std::find(std::begin(kActions), std::end(kActions), words[i]) != std::end(kActions))
      return "find's action '" + words[i] + "' runs a program or writes";
  }
  return std::nullopt;
}

// rg(1): --pre runs a program on each file, --hostname-bin runs one for hyperlinks, -z and
// --search-zip run decompressors.
Refusal rg_arguments(const Words& words) {
  if (std::optional<std::string> option =
          first_option(words, "z", {"--pre", "--hostname-bin", "--search-zip"}))
    return option_refusal(words, *option, "runs another program");
  return std::nullopt;
}

// `sed -n Np` and `sed -n M,Np` with at most one file: printing lines, the one sed form agents
// use to read part of a file. Any other script may hold `e`, `w` or `s///e` (sed(1) COMMANDS).
bool is_line_range_print(std::string_view script) {
  if (script.size() < 2 || script.back() != 'p') return false;
  script.remove_suffix(1);
  const std::size_t comma = script.find(',');
  const auto digits = [](std::string_view part) {
    return !part.empty() &&
           std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (comma == std::string_view::npos) return digits(script);
  return digits(script.substr(0, comma)) && digits(script.substr(comma + 1));
}

Refusal sed_arguments(const Words& words) {
  const bool prints_lines = (words.size() == 3 || words.size() == 4) && words[1] == "-n" &&
                            is_line_range_print(words[2]) &&
                            (words.size() == 3 || (!words[3].empty() && words[3][0] != '-'));
  if (prints_lines) return std::nullopt;
  return std::string(
      "'sed' runs without a sandbox only as `sed -n Np` or `sed -n M,Np` with at "
      "most one file: any other script may run a command or write a file");
}

// git: only the read-only subcommands status, log, diff, show and branch (listing), with no
// global option before them (git(1) OPTIONS: -c core.fsmonitor=CMD and -c alias.x=!CMD run a
// command, -C/--git-dir/--work-tree point git at other inputs, --exec-path at other programs),
// and none of the options by which they write a file (--output) or run a program (--ext-diff,
// --textconv, --open-files-in-pager, --paginate; --help runs man and a pager; --show-signature
// and %G formats run gpg). The configuration git reads is judged by the run
// (program_trust.hpp): diff.external or a textconv driver there is a file sbx verified.
Refusal git_branch_arguments(const Words& words);

Refusal git_arguments(const Words& words) {
  constexpr std::string_view kSubcommands[] = {"status", "log", "diff", "show", "branch"};
  if (words.size() < 2 || std::find(std::begin(kSubcommands), std::end(kSubcommands), words[1]) ==
                              std::end(kSubcommands)) {
    if (words.size() >= 2 && !words[1].empty() && words[1][0] == '-')
      return "git's global option '" + words[1] +
             "' can run a command (-c core.fsmonitor=..., -c alias.x=!...) or point git at "
             "another directory";
    return std::string(
        "git runs without a sandbox only as git status, log, diff, show or "
        "branch (listing)");
  }
  if (std::optional<std::string> option =
          first_option(words, "",
                       {"--output", "--ext-diff", "--textconv", "--open-files-in-pager", "--exec",
                        "--help", "--show-signature", "--paginate"}))
    return option_refusal(words, *option, "writes a file or runs a program");
  // %G placeholders of --format/--pretty verify signatures: git runs gpg (or gpgsm) on them
  // and writes the signature to a temporary file (pretty-formats(5)); so does the
  // %(signature...) atom of for-each-ref formats (`git branch --format`, git >= 2.42).
  for (std::size_t i = 2; i < words.size() && words[i] != "--"; ++i) {
    if (words[i].find("%G") != std::string::npos ||
        words[i].find("%(signature") != std::string::npos)
      return option_refusal(words, words[i], "runs gpg to verify signatures");
  }
  if (words[1] == "branch") return git_branch_arguments(words);
  return std::nullopt;
}

// `git branch` lists only with these flags and no operand: a name creates a branch, -d, -m,
// -c, -u and the rest change them (git-branch(1)).
Refusal git_branch_arguments(const Words& words) {
  constexpr std::string_view kListing[] = {
      "--list", "-l", "--show-current", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose"};
  for (std::size_t i = 2; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.rfind("--format=", 0) == 0) continue;
    if (std::find(std::begin(kListing), std::end(kListing), word) == std::end(kListing))
      return "'git branch " + word + "' may change branches: only listing runs without a sandbox";
  }
  return std::nullopt;
}

struct KnownProgram {
  std::string_view name;
  Refusal (*check)(const Words&);
};

// Sorted by name.
const KnownProgram kKnownPrograms[] = {
    {"base64", any_arguments},    {"basename", any_arguments}, {"cat", any_arguments},
    {"cksum", any_arguments},     {"cmp", any_arguments},      {"comm", any_arguments},
    {"cut", any_arguments},       {"date", date_arguments},    {"df", any_arguments},
    {"diff", diff_arguments},     {"dirname", any_arguments},  {"du", any_arguments},
    {"echo", any_arguments},      {"expr", any_arguments},     {"false", any_arguments},
    {"find", find_arguments},     {"fold", any_arguments},     {"git", git_arguments},
    {"grep", any_arguments},      {"head", any_arguments},     {"id", any_arguments},
    {"join", any_arguments},      {"ls", any_arguments},       {"md5sum", any_arguments},
    {"nl", any_arguments},        {"nproc", any_arguments},    {"numfmt", any_arguments},
    {"od", any_arguments},        {"paste", any_arguments},    {"printenv", any_arguments},
    {"pwd", any_arguments},       {"readlink", any_arguments}, {"realpath", any_arguments},
    {"rev", any_arguments},       {"rg", rg_arguments},        {"sed", sed_arguments},
    {"seq", any_arguments},       {"sha1sum", any_arguments},  {"sha256sum", any_arguments},
    {"sha512sum", any_arguments}, {"sort", sort_arguments},    {"stat", any_arguments},
    {"tac", any_arguments},       {"tail", any_arguments},     {"tr", any_arguments},
    {"true", any_arguments},      {"uname", any_arguments},    {"uniq", uniq_arguments},
    {"wc", any_arguments},        {"whoami", any_arguments},
};

// The shells whose `-c SCRIPT` the splitter reads (command_patterns.hpp is_shell_script), with
// the files each name is installed as: /bin/sh is dash on Debian and bash on Fedora; ksh is
// ksh93 through Debian's alternatives.
struct KnownShell {
  std::string_view name;
  std::vector<std::string_view> files;
};
const KnownShell kShells[] = {{"sh", {"sh", "dash", "bash"}},
                              {"bash", {"bash"}},
                              {"dash", {"dash"}},
                              {"zsh", {"zsh"}},
                              {"ksh", {"ksh", "ksh93"}}};

const KnownProgram* find_program(std::string_view name) {
  for (const KnownProgram& program : kKnownPrograms) {
    if (program.name == name) return &program;
  }
  return nullptr;
}

const KnownShell* find_shell(std::string_view name) {
  for (const KnownShell& shell : kShells) {
    if (shell.name == name) return &shell;
  }
  return nullptr;
}

}  // namespace

std::optional<std::string> unknown_grammar(const std::vector<std::string>& words) {
  if (words.empty()) return std::string("the command is empty");
  const std::string name = base_name(words.front());
  if (find_shell(name) != nullptr)
    return "'" + name + "' runs a script sbx does not read (sbx reads a shell's script only " +
           "as the whole command, `" + name + " -c SCRIPT`)";
  const KnownProgram* program = find_program(name);
  if (program == nullptr) {
    std::string names;
    for (const std::string& known : known_program_names())
      names += (names.empty() ? "" : ", ") + known;
    return "'" + name +
           "' is not a program sbx runs without a sandbox: only programs whose arguments it "
           "knows to run no other program and write no file are (" +
           names + ")";
  }
  return program->check(words);
}

bool is_file_of(std::string_view name, std::string_view file_name) {
  const std::string own = base_name(name);
  if (const KnownShell* shell = find_shell(own))
    return std::find(shell->files.begin(), shell->files.end(), file_name) != shell->files.end();
  const KnownProgram* program = find_program(own);
  return program != nullptr && file_name == program->name;
}

std::vector<std::string> known_program_names() {
  std::vector<std::string> names;
  for (const KnownProgram& program : kKnownPrograms) names.emplace_back(program.name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace sbx::settings
