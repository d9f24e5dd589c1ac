// Helpers shared by the windows plan tests (built for Linux and, cross-compiled, for Windows).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/types.hpp"
#include "sbx/windows/plan.hpp"
#include "sbx/windows/plan_text.hpp"
#include "sbx_test/golden.hpp"

namespace sbx::windows::testing {

// An independent implementation of how CommandLineToArgvW splits a command line, written from
// its documented rules (and checked against Wine's shell32 in the cross-built tests):
//  * argv[0] is the program name: inside quotes it runs to the next quote, otherwise to the
//    first space or tab; backslashes mean nothing there.
//  * After it, arguments are separated by spaces/tabs outside quotes.
//  * 2n backslashes before a quote give n backslashes and the quote toggles quoting;
//    2n+1 backslashes before a quote give n backslashes and a literal quote;
//    backslashes before anything else are literal.
//  * In a run of unescaped quotes every third quote (counting an open quoted section as one)
//    is a literal quote and leaves quoting: `"a""b"` is a"b followed by an open quote.
inline std::vector<std::string> reference_command_line_to_argv(std::string_view line) {
  std::vector<std::string> argv;
  std::size_t i = 0;
  std::string program;
  if (i < line.size() && line[i] == '"') {
    for (++i; i < line.size() && line[i] != '"'; ++i) program += line[i];
    if (i < line.size()) ++i;  // the closing quote
  } else {
    for (; i < line.size() && line[i] != ' ' && line[i] != '\t'; ++i) program += line[i];
  }
  argv.push_back(program);
  const auto skip_blanks = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  skip_blanks();
  std::string current;
  bool in_argument = false;
  bool in_quotes = false;
  std::size_t backslashes = 0;
  while (i < line.size()) {
    const char c = line[i];
    if ((c == ' ' || c == '\t') && !in_quotes) {
      current.append(backslashes, '\\');
      argv.push_back(current);
      current.clear();
      backslashes = 0;
      in_argument = false;
      skip_blanks();
      continue;
    }
    in_argument = true;
    if (c == '\\') {
      ++backslashes;
      ++i;
      continue;
    }
    if (c != '"') {
      current.append(backslashes, '\\');
      current += c;
      backslashes = 0;
      ++i;
      continue;
    }
    current.append(backslashes / 2, '\\');
    if (backslashes % 2 == 1) {
      current += '"';
      backslashes = 0;
      ++i;
      continue;
    }
    backslashes = 0;
    int quotes = in_quotes ? 1 : 0;
    for (; i < line.size() && line[i] == '"'; ++i) {
      if (++quotes == 3) {
        current += '"';
        quotes = 0;
      }
    }
    in_quotes = quotes == 1;
  }
  if (in_argument) {
    current.append(backslashes, '\\');
    argv.push_back(current);
  }
  return argv;
}

// Arguments that break naive quoting: quotes, backslash runs before quotes and at the end,
// empty strings, whitespace of every kind, shell metacharacters, non-ASCII text.
inline const std::vector<std::string>& hostile_arguments() {
  static const std::vector<std::string> cases = {
      "plain",
      "",
      " ",
      "\t",
      "a b",
      "a\tb",
      "a\nb",
      "a\vb",
      "\"",
      "\"\"",
      "\"\"\"",
      "a\"b",
      "a\"\"b",
      "\\",
      "\\\\",
      "a\\",
      "a b\\",
      "a b\\\\",
      "\\\"",
      "\\\\\"",
      "a\\\\\\\"b",
      "\\\"\\\"",
      "x\\ \"",
      "  leading",
      "trailing  ",
      "C:\\Program Files\\x\\",
      "\\\\server\\share\\",
      "a\\b\\c",
      "-Dx=\"y z\"",
      "\"a b\"",
      "%PATH%",
      "^&|<>()!",
      "\xC3\xBC unicode \xC3\xA9",
      "\xE6\x97\xA5\xE6\x9C\xAC \xE8\xAA\x9E",
      "\xF0\x9F\x98\x80 x",
      "end with quote\"",
      "\"start with quote",
      "tab\tthen quote\"\\",
      "\\\\\\\\\\",
      "*?[]{}",
      std::string(5000, '\\') + "\"" + std::string(5000, ' ')};
  return cases;
}

// Raw command lines, some of which this backend never produces, to compare the reference
// parser with the real CommandLineToArgvW where one exists.
inline const std::vector<std::string>& raw_command_lines() {
  static const std::vector<std::string> lines = {R"(x "a b c" d e)",
                                                 R"(x "ab\"c" "\\" d)",
                                                 R"(x a\\\b d"e f"g h)",
                                                 R"(x a\\\"b c d)",
                                                 R"(x a\\\\"b c" d e)",
                                                 R"(x a"b"" c d)",
                                                 R"(x """" y)",
                                                 R"(x "a""b c")",
                                                 R"("C:\d\" y)",
                                                 R"("a b"c d)",
                                                 R"(x "")",
                                                 "x  \t ",
                                                 "x\ta\t\tb",
                                                 R"(x \""" y)",
                                                 R"(x "\\"" z)",
                                                 R"(x """""" w)",
                                                 R"("unterminated)",
                                                 R"(x "open\)"};
  return lines;
}

inline PathRule rule(std::string path, Access access) { return PathRule{std::move(path), access}; }

// A request with network enabled (the only mode this backend can honour) and ":root" read.
inline TransformRequest request_for(std::vector<PathRule> rules,
                                    std::vector<ProtectedPath> protected_paths = {}) {
  TransformRequest request;
  request.argv = {"C:/Windows/System32/where.exe", "/?"};
  request.cwd = "C:/work/proj";
  request.env = {"PATH=C:\\Windows\\System32", "SystemRoot=C:\\Windows"};
  request.policy.filesystem_kind = FilesystemKind::kRestricted;
  request.policy.rules = std::move(rules);
  request.policy.protected_paths = std::move(protected_paths);
  request.policy.network.mode = NetworkMode::kEnabled;
  request.policy.cwd = request.cwd;
  return request;
}

// The whole ExecPlan as text: what the golden files hold.
inline std::string describe(const ExecPlan& plan) {
  std::ostringstream out;
  for (const std::string& arg : plan.argv) out << "argv: " << arg << "\n";
  out << "cwd: " << plan.cwd << "\n";
  for (const std::string& entry : plan.env) out << "env: " << entry << "\n";
  for (const std::string& note : plan.notes) out << note << "\n";
  return out.str();
}

// Compares `actual` with tests/golden/windows/<name>.txt. SBX_UPDATE_GOLDEN=1 rewrites it.
inline void expect_golden(const std::string& name, const std::string& actual) {
  sbx::test::expect_golden(std::string(SBX_GOLDEN_DIR) + "/windows/" + name + ".txt", actual);
}

}  // namespace sbx::windows::testing
