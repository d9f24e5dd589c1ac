// The shell-syntax splitter and the command patterns of excluded commands
// (sbx/core/command_patterns.hpp). The splitter errs one way only: whatever it cannot read with
// certainty is "in doubt", and a command in doubt runs sandboxed. It never tries to understand
// an expansion, because what an expansion runs is only known when the shell runs it.
#include "sbx/core/command_patterns.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <string>
#include <vector>

#include "sbx/core/program_grammar.hpp"

namespace sbx::settings {
namespace {

// Words that start a compound command or change what follows: a command that starts with one is
// not a simple command, so it is in doubt.
constexpr std::array<std::string_view, 21> kReservedWords = {
    "if", "then", "else", "elif",     "fi",   "case",   "esac", "for", "select", "while", "until",
    "do", "done", "in",   "function", "time", "coproc", "!",    "[[",  "]]",     "{"};

// Characters that are in doubt outside quotes: expansions ($ `), escapes (\), redirections and
// here-docs (< >), brace expansion and groups ({ }), globs (* ? [ ]).
constexpr std::string_view kDoubtful = "$`\\<>{}*?[]";

bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return (byte < 0x20 && c != '\t' && c != '\n') || byte == 0x7f;
}

class Splitter {
 public:
  explicit Splitter(std::string_view script) : script_(script) {}

  std::optional<std::vector<SimpleCommand>> run() {
    while (i_ < script_.size()) {
      if (!step()) return std::nullopt;
    }
    if (depth_ != 0) return std::nullopt;  // unbalanced "("
    end_word();
    // A trailing ";", "&" or newline ends the script; a trailing "&&", "||" or "|" leaves a
    // command unfinished.
    if (!part_.empty()) {
      if (!end_part()) return std::nullopt;
    } else if (pending_operator_) {
      return std::nullopt;
    }
    if (parts_.empty()) return std::nullopt;
    return parts_;
  }

 private:
  // One character (or operator) of the script; false when in doubt.
  bool step() {
    const char c = script_[i_];
    if (is_control(c)) return false;
    if (c == ' ' || c == '\t') {
      ++i_;
      end_word();
      return true;
    }
    if (c == '\n' || c == ';' || c == '&' || c == '|') return separator();
    if (c == '(' || c == ')') return parenthesis(c);
    if (just_closed_) return false;  // "(a) b": a word right after a subshell
    if (c == '\'') return single_quoted();
    if (c == '"') return double_quoted();
    if (kDoubtful.find(c) != std::string_view::npos) return false;
    // A comment ("#") or tilde expansion ("~") at the start of a word changes the words.
    if (!in_word_ && (c == '#' || c == '~')) return false;
    word_ += c;
    in_word_ = true;
    ++i_;
    return true;
  }

  bool single_quoted() {
    const std::size_t close = script_.find('\'', i_ + 1);
    if (close == std::string_view::npos) return false;
    const std::string_view text = script_.substr(i_ + 1, close - i_ - 1);
    if (std::any_of(text.begin(), text.end(), [](char c) { return is_control(c) || c == '\n'; }))
      return false;
    word_.append(text);
    in_word_ = true;
    i_ = close + 1;
    return true;
  }

  // Inside double quotes $, ` and \ still act; each is in doubt.
  bool double_quoted() {
    for (std::size_t j = i_ + 1; j < script_.size(); ++j) {
      const char c = script_[j];
      if (c == '"') {
        word_.append(script_.substr(i_ + 1, j - i_ - 1));
        in_word_ = true;
        i_ = j + 1;
        return true;
      }
      if (c == '$' || c == '`' || c == '\\' || c == '\n' || is_control(c)) return false;
    }
    return false;  // unterminated
  }

  bool separator() {
    const char c = script_[i_];
    end_word();
    std::size_t length = 1;
    if (i_ + 1 < script_.size()) {
      const char next = script_[i_ + 1];
      if ((c == '&' && next == '&') || (c == '|' && next == '|') || (c == '|' && next == '&'))
        length = 2;
      if (c == ';' && next == ';') return false;  // case-arm terminator
      if (c == '&' && next == '>') return false;  // redirection
    }
    // A lone "&" runs its part in the background, where it outlives the run (an excluded part
    // has no sandbox, cgroup or process group that would end it with sbx).
    if (c == '&' && length == 1) return false;
    i_ += length;
    if (part_.empty()) {
      // A newline may follow anything (blank lines, a line continued after && || |); another
      // separator only a subshell's ")". Anything else leaves an empty command, which a shell
      // refuses and a reader might misread.
      const bool after_subshell = just_closed_;
      just_closed_ = false;
      if (c == '\n') return true;
      if (!after_subshell) return false;
    } else if (!end_part()) {
      return false;
    }
    // "&&", "||", "|", "|&" need a command after them; ";", "&" and newlines do not.
    pending_operator_ = c == '|' || length == 2;
    return true;
  }

  // "(" opens a subshell only where a command starts ("((" is arithmetic: in doubt); ")" closes
  // one after a command.
  bool parenthesis(char c) {
    end_word();
    ++i_;
    if (c == '(') {
      if (!part_.empty() || just_closed_) return false;  // "f()", "a (b)", "(a)(b)"
      if (i_ < script_.size() && script_[i_] == '(') return false;
      ++depth_;
      return true;
    }
    if (depth_ == 0 || part_.empty()) return false;
    --depth_;
    if (!end_part()) return false;
    just_closed_ = true;
    return true;
  }

  void end_word() {
    if (!in_word_) return;
    part_.push_back(std::move(word_));
    word_.clear();
    in_word_ = false;
  }

  bool end_part() {
    if (part_.empty()) return false;
    const std::string& first = part_.front();
    if (first.empty()) return false;
    if (std::find(kReservedWords.begin(), kReservedWords.end(), first) != kReservedWords.end())
      return false;
    // NAME=value before the command changes how it runs (PATH, LD_PRELOAD): in doubt.
    if (first.find('=') != std::string::npos) return false;
    parts_.push_back(std::move(part_));
    part_.clear();
    pending_operator_ = false;
    return true;
  }

  std::string_view script_;
  std::size_t i_ = 0;
  std::string word_;
  bool in_word_ = false;
  SimpleCommand part_;
  std::vector<SimpleCommand> parts_;
  int depth_ = 0;
  bool pending_operator_ = false;
  bool just_closed_ = false;  // the last token was a subshell's ")"
};

std::vector<std::string> pattern_words(std::string_view pattern) {
  std::vector<std::string> words;
  std::string current;
  for (char c : pattern) {
    if (c == ' ' || c == '\t') {
      if (!current.empty()) words.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) words.push_back(std::move(current));
  return words;
}

std::string joined_words(const SimpleCommand& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

// '*' matches any run of characters (also none); everything else itself. Iterative, with one
// backtrack point.
bool wildcard_matches(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool is_shell(const std::string& program) {
  const std::size_t slash = program.rfind('/');
  const std::string name = slash == std::string::npos ? program : program.substr(slash + 1);
  return name == "sh" || name == "bash" || name == "dash" || name == "zsh" || name == "ksh";
}

// The only builtins a script part may start with and still run unsandboxed: the words that,
// in every shell is_shell names and busybox sh, neither run nor look up another program, set
// no variable and change no directory (dash(1), bash(1) "SHELL BUILTIN COMMANDS",
// zshbuiltins(1), ksh(1)). Not printf (bash and zsh `printf -v PATH`), not cd (it changes
// what later relative lookups and the working directory's files mean), not test (zsh's test
// evaluates -eq operands as math, which expands subscripts).
constexpr std::string_view kInertBuiltins[] = {":", "echo", "false", "pwd", "true"};

// Every other builtin of bash, zsh (its default modules), dash, ksh and busybox sh: the shell
// runs them itself, so the file of that name sbx would verify in PATH (Fedora and macOS ship
// /usr/bin/command, /usr/bin/hash, ...) is not what runs, and most of them change what later
// parts do (hash -p, alias, export, set, source, eval, exec, command, builtin...). A part that
// starts with one is in doubt.
constexpr std::string_view kOtherBuiltins[] = {
    ".",           "[",        "alias",   "autoload",  "bg",         "bind",      "bindkey",
    "break",       "builtin",  "bye",     "caller",    "cd",         "chdir",     "command",
    "compgen",     "complete", "compopt", "continue",  "declare",    "dirs",      "disable",
    "disown",      "emulate",  "enable",  "eval",      "exec",       "exit",      "export",
    "fc",          "fg",       "float",   "functions", "getln",      "getopts",   "hash",
    "help",        "history",  "integer", "jobs",      "kill",       "let",       "limit",
    "local",       "log",      "logout",  "mapfile",   "noglob",     "nocorrect", "popd",
    "print",       "printf",   "pushd",   "pushln",    "r",          "read",      "readarray",
    "readonly",    "rehash",   "return",  "sched",     "set",        "setopt",    "shift",
    "shopt",       "source",   "suspend", "test",      "times",      "trap",      "type",
    "typeset",     "ulimit",   "umask",   "unalias",   "unfunction", "unhash",    "unlimit",
    "unset",       "unsetopt", "vared",   "wait",      "whence",     "where",     "which",
    "zcompile",    "zformat",  "zle",     "zmodload",  "zparseopts", "zprof",     "zpty",
    "zregexparse", "zsocket",  "zstyle",  "ztcp",      "zcurses",    "zsystem",   "zselect",
    "strftime",    "sysopen",  "sysread", "syswrite",  "stat",       "zstat"};

bool is_inert_builtin(const std::string& word) {
  return std::find(std::begin(kInertBuiltins), std::end(kInertBuiltins), word) !=
         std::end(kInertBuiltins);
}

bool is_other_builtin(const std::string& word) {
  return std::find(std::begin(kOtherBuiltins), std::end(kOtherBuiltins), word) !=
         std::end(kOtherBuiltins);
}

}  // namespace

bool is_shell_script(const std::vector<std::string>& argv) {
  return argv.size() >= 3 && is_shell(argv[0]) && argv[1] == "-c";
}

std::optional<std::vector<std::string>> programs_of(const std::vector<std::string>& argv,
                                                    std::string* why) {
  auto in_doubt = [why](std::string reason) -> std::optional<std::vector<std::string>> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  if (argv.empty()) return in_doubt("the command is empty");
  std::vector<std::string> programs{argv[0]};
  if (!is_shell_script(argv)) {
    if (std::optional<std::string> unknown = unknown_grammar(argv)) return in_doubt(*unknown);
    return programs;
  }
  std::optional<std::vector<SimpleCommand>> parts = split_shell_command(argv[2]);
  if (!parts) return in_doubt("the script cannot be read with certainty");
  for (const SimpleCommand& part : *parts) {
    if (part.empty()) return in_doubt("the script has an empty command");
    const std::string& word = part.front();
    if (is_other_builtin(word))
      return in_doubt("the script runs the shell builtin '" + word +
                      "', which the shell runs itself and which can change what the rest of "
                      "the script runs or reads");
    if (is_inert_builtin(word)) continue;
    if (std::optional<std::string> unknown = unknown_grammar(part)) return in_doubt(*unknown);
    programs.push_back(word);
  }
  return programs;
}

std::optional<std::vector<SimpleCommand>> split_shell_command(std::string_view script) {
  return Splitter(script).run();
}

bool command_pattern_matches(std::string_view pattern, const SimpleCommand& words) {
  const std::vector<std::string> expected = pattern_words(pattern);
  if (expected.empty() || words.empty()) return false;
  const std::size_t stars =
      static_cast<std::size_t>(std::count(pattern.begin(), pattern.end(), '*'));
  if (stars == 0) return words == expected;
  if (stars == 1 && expected.size() > 1 && expected.back() == "*") {
    // Prefix: the words before " *", then anything.
    const std::size_t fixed = expected.size() - 1;
    if (words.size() < fixed) return false;
    return std::equal(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(fixed),
                      words.begin());
  }
  return wildcard_matches(joined_words(expected), joined_words(words));
}

std::optional<std::vector<std::string>> match_excluded_command(
    const std::vector<std::string>& argv, const std::vector<std::string>& patterns) {
  if (argv.empty() || patterns.empty()) return std::nullopt;
  std::vector<SimpleCommand> parts;
  if (is_shell_script(argv)) {
    std::optional<std::vector<SimpleCommand>> split = split_shell_command(argv[2]);
    if (!split) return std::nullopt;
    parts = std::move(*split);
  } else {
    parts.push_back(argv);
  }
  std::vector<std::string> matched;
  for (const SimpleCommand& part : parts) {
    auto pattern = std::find_if(patterns.begin(), patterns.end(), [&](const std::string& p) {
      return command_pattern_matches(p, part);
    });
    if (pattern == patterns.end()) return std::nullopt;
    matched.push_back(*pattern);
  }
  return matched;
}

}  // namespace sbx::settings
