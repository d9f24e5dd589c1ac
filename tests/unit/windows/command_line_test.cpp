// Command-line quoting for CreateProcessW: hostile argv round-trips through an independent
// CommandLineToArgvW implementation (and, in the cross-built tests, through the real one).
#include "sbx/windows/command_line.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "windows_test_support.hpp"

namespace sbx::windows {
namespace {

using testing::hostile_arguments;
using testing::reference_command_line_to_argv;
using Argv = std::vector<std::string>;

constexpr const char* kProgram = "C:\\Windows\\System32\\where.exe";

// First, the reference itself against the documented examples and Wine's observed results,
// so the round trips below prove something.
struct ParseCase {
  std::string line;
  Argv expected;
};

class ReferenceParser : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ReferenceParser, SplitsLikeCommandLineToArgvW) {
  EXPECT_EQ(reference_command_line_to_argv(GetParam().line), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Documented, ReferenceParser,
    ::testing::Values(ParseCase{R"(x "a b c" d e)", {"x", "a b c", "d", "e"}},
                      ParseCase{R"(x "ab\"c" "\\" d)", {"x", "ab\"c", "\\", "d"}},
                      ParseCase{R"(x a\\\b d"e f"g h)", {"x", R"(a\\\b)", "de fg", "h"}},
                      ParseCase{R"(x a\\\"b c d)", {"x", R"(a\"b)", "c", "d"}},
                      ParseCase{R"(x a\\\\"b c" d e)", {"x", R"(a\\b c)", "d", "e"}},
                      ParseCase{R"(x a"b"" c d)", {"x", "ab\"", "c", "d"}},
                      ParseCase{R"(x """" y)", {"x", "\" y"}},
                      ParseCase{R"(x "a""b c")", {"x", "a\"b", "c"}},
                      ParseCase{R"("C:\d\" y)", {"C:\\d\\", "y"}},
                      ParseCase{R"("a b"c d)", {"a b", "c", "d"}}, ParseCase{R"(x "")", {"x", ""}},
                      ParseCase{"x  \t ", {"x"}}, ParseCase{"x\ta\t\tb", {"x", "a", "b"}},
                      ParseCase{R"(C:\a\b.exe x\)", {R"(C:\a\b.exe)", "x\\"}}));

// Each hostile argument, alone and between neighbours, must come back unchanged.
class HostileArgument : public ::testing::TestWithParam<std::string> {};

TEST_P(HostileArgument, RoundTripsAlone) {
  const Argv argv = {kProgram, GetParam()};
  Result<std::string> line = build_command_line(argv);
  ASSERT_TRUE(line.ok()) << line.error();
  EXPECT_EQ(reference_command_line_to_argv(*line), argv) << "command line: " << *line;
}

TEST_P(HostileArgument, RoundTripsBetweenNeighbours) {
  const Argv argv = {kProgram, GetParam(), "", GetParam(), "tail\\"};
  Result<std::string> line = build_command_line(argv);
  ASSERT_TRUE(line.ok()) << line.error();
  EXPECT_EQ(reference_command_line_to_argv(*line), argv) << "command line: " << *line;
}

INSTANTIATE_TEST_SUITE_P(Cases, HostileArgument, ::testing::ValuesIn(hostile_arguments()));

TEST(CommandLine, HasAtLeastThirtyHostileCases) { EXPECT_GE(hostile_arguments().size(), 30u); }

TEST(CommandLine, ManyEmptyArgumentsSurvive) {
  const Argv argv = {kProgram, "", "", ""};
  Result<std::string> line = build_command_line(argv);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(*line, std::string(kProgram) + R"( "" "" "")");
  EXPECT_EQ(reference_command_line_to_argv(*line), argv);
}

TEST(CommandLine, ExactQuotingOfBackslashesBeforeQuotes) {
  EXPECT_EQ(quote_argument("plain"), "plain");
  EXPECT_EQ(quote_argument(""), "\"\"");
  EXPECT_EQ(quote_argument("a\\b"), "a\\b");              // no quote: backslashes literal
  EXPECT_EQ(quote_argument("a b\\"), "\"a b\\\\\"");      // doubled before the closing quote
  EXPECT_EQ(quote_argument("a\\\"b"), "\"a\\\\\\\"b\"");  // 2n+1 before an embedded quote
}

// argv[0] follows its own rules: no escapes at all.
class ProgramName : public ::testing::TestWithParam<std::string> {};

TEST_P(ProgramName, RoundTripsWithArgv0Rules) {
  const Argv argv = {GetParam(), "arg"};
  Result<std::string> line = build_command_line(argv);
  ASSERT_TRUE(line.ok()) << line.error();
  EXPECT_EQ(reference_command_line_to_argv(*line), argv) << "command line: " << *line;
}

INSTANTIATE_TEST_SUITE_P(Cases, ProgramName,
                         ::testing::Values("C:\\Windows\\System32\\where.exe",
                                           "C:\\Program Files\\App\\app.exe",
                                           "C:\\dir with\ttab\\x.exe", "C:\\trailing\\",
                                           "C:\\a b\\trailing\\", "C:\\back\\\\slashes\\\\x.exe",
                                           "\\\\server\\share\\tool.exe",
                                           "C:\\\xE6\x97\xA5\xE6\x9C\xAC\\\xF0\x9F\x98\x80.exe"));

TEST(CommandLine, ProgramNameNeverQuotedUnlessNeeded) {
  EXPECT_EQ(*quote_program("C:\\x.exe"), "C:\\x.exe");
  EXPECT_EQ(*quote_program("C:\\Program Files\\x.exe"), "\"C:\\Program Files\\x.exe\"");
}

TEST(CommandLine, RefusesQuoteInProgramName) {
  Result<std::string> line = build_command_line({"C:\\a\"b.exe", "x"});
  ASSERT_FALSE(line.ok());
  EXPECT_NE(line.error().find("argv[0] contains a double quote"), std::string::npos);
}

TEST(CommandLine, RefusesEmptyArgvAndEmptyProgram) {
  EXPECT_FALSE(build_command_line({}).ok());
  Result<std::string> line = build_command_line({"", "x"});
  ASSERT_FALSE(line.ok());
  EXPECT_NE(line.error().find("argv[0] is empty"), std::string::npos);
}

TEST(CommandLine, RefusesNulNamingTheElement) {
  Result<std::string> line = build_command_line({kProgram, "ok", std::string("a\0b", 3)});
  ASSERT_FALSE(line.ok());
  EXPECT_NE(line.error().find("argv[2] contains a NUL byte"), std::string::npos);
}

TEST(CommandLine, RefusesInvalidUtf8NamingTheElement) {
  for (std::string bad : {"\xC3", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF"}) {
    Result<std::string> line = build_command_line({kProgram, bad});
    ASSERT_FALSE(line.ok()) << printable(bad);
    EXPECT_NE(line.error().find("argv[1] is not valid UTF-8"), std::string::npos);
  }
}

TEST(CommandLine, RefusesLinesCreateProcessCannotTake) {
  const std::string fits(kMaxCommandLineUnits - std::string(kProgram).size() - 1, 'a');
  EXPECT_TRUE(build_command_line({kProgram, fits}).ok());
  Result<std::string> line = build_command_line({kProgram, fits + "a"});
  ASSERT_FALSE(line.ok());
  EXPECT_NE(line.error().find("CreateProcessW accepts at most 32766"), std::string::npos);
}

TEST(CommandLine, LengthIsCountedInUtf16Units) {
  // U+1F600 is 4 UTF-8 bytes but 2 UTF-16 units; U+00FC is 2 bytes and 1 unit.
  const std::string base(kMaxCommandLineUnits - std::string(kProgram).size() - 1 - 2, 'a');
  EXPECT_TRUE(build_command_line({kProgram, base + "\xF0\x9F\x98\x80"}).ok());
  EXPECT_FALSE(build_command_line({kProgram, base + "\xF0\x9F\x98\x80" + "a"}).ok());
}

TEST(Utf, ConvertsBothWaysIncludingSurrogatePairs) {
  const std::string text = "a\xC3\xBC\xE6\x97\xA5\xF0\x9F\x98\x80";
  Result<std::u16string> wide = utf8_to_utf16(text);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(*wide, (std::u16string{u'a', 0x00FC, 0x65E5, 0xD83D, 0xDE00}));
  EXPECT_EQ(*utf16_to_utf8(*wide), text);
  EXPECT_FALSE(utf16_to_utf8(std::u16string{0xD83D}).ok());
  EXPECT_FALSE(utf16_to_utf8(std::u16string{0xDE00, u'a'}).ok());
}

TEST(Utf, PrintableEscapesControls) { EXPECT_EQ(printable("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f"); }

}  // namespace
}  // namespace sbx::windows
