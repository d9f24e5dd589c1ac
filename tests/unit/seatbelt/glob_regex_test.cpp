// Glob -> regex: every table case is checked three ways: the expected match/non-match lists
// against an independent reference matcher (written here, plain recursive gitignore
// semantics), and the compiled regex under both std::regex ECMAScript and POSIX extended.
#include "sbx/seatbelt/glob_regex.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

namespace {

using sbx::seatbelt::expand_braces;
using sbx::seatbelt::glob_to_regex;

// ---- reference matcher -------------------------------------------------------------------

// Brace expansion by repeated textual substitution (independent of the library's scanner).
std::vector<std::string> ref_expand(const std::string& p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\') {
      ++i;
      continue;
    }
    if (p[i] == '[') {
      std::size_t j = i + 1;
      if (j < p.size() && (p[j] == '!' || p[j] == '^')) ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2u : 1u;
      if (j < p.size()) i = j;
      continue;
    }
    if (p[i] != '{') continue;
    int depth = 0;
    std::vector<std::size_t> cuts{i};
    std::size_t close = std::string::npos;
    for (std::size_t j = i + 1; j < p.size() && close == std::string::npos; ++j) {
      if (p[j] == '\\')
        ++j;
      else if (p[j] == '{')
        ++depth;
      else if (p[j] == '}' && depth-- == 0)
        close = j;
      else if (p[j] == ',' && depth == 0)
        cuts.push_back(j);
    }
    if (close == std::string::npos || cuts.size() == 1) continue;
    cuts.push_back(close);
    std::vector<std::string> out;
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      auto sub = ref_expand(p.substr(0, i) + p.substr(cuts[k] + 1, cuts[k + 1] - cuts[k] - 1) +
                            p.substr(close + 1));
      out.insert(out.end(), sub.begin(), sub.end());
    }
    return out;
  }
  return {p};
}

bool class_match(const std::string& body, char c) {
  std::size_t i = 0;
  bool neg = false;
  if (i < body.size() && (body[i] == '!' || body[i] == '^')) {
    neg = true;
    ++i;
  }
  bool hit = false;
  while (i < body.size()) {
    char lo = body[i] == '\\' && i + 1 < body.size() ? body[++i] : body[i];
    ++i;
    char hi = lo;
    if (i + 1 < body.size() && body[i] == '-') {
      hi = body[i + 1] == '\\' && i + 2 < body.size() ? body[i + 2] : body[i + 1];
      i += body[i + 1] == '\\' && i + 2 < body.size() ? 3u : 2u;
    }
    if (c >= lo && c <= hi) hit = true;
  }
  return c != '/' && hit != neg;
}

// Not printable ASCII, or one of the printable bytes a bracket cannot hold (glob_regex.cpp's
// kNonPrintable): the bytes of a multi-byte UTF-8 character are all of this kind.
bool non_printable(char c) {
  const auto b = static_cast<unsigned char>(c);
  return b < 0x20 || b >= 0x7F || c == '"' || c == '\\' || c == ']';
}

bool wildmatch(const std::string& p, std::size_t pi, const std::string& s, std::size_t si);
bool non_printable_run(const std::string& p, std::size_t next, const std::string& s,
                       std::size_t si);

// The documented meaning of `?` and of a negated class at s[si]: one byte (for which `one_byte`
// holds), or a run of 2 to 4 non-printable bytes: a multi-byte UTF-8 character, with a
// superset (any such run) because the profile's regex can only be written in printable ASCII.
template <typename OneByte>
bool one_character(const std::string& p, std::size_t next, const std::string& s, std::size_t si,
                   OneByte one_byte) {
  if (one_byte(s[si]) && wildmatch(p, next, s, si + 1)) return true;
  std::size_t run = 0;
  while (run < 4 && si + run < s.size() && non_printable(s[si + run])) {
    ++run;
    if (run >= 2 && wildmatch(p, next, s, si + run)) return true;
  }
  return false;
}

bool wildmatch(const std::string& p, std::size_t pi, const std::string& s, std::size_t si) {
  if (pi == p.size()) return si == s.size();
  const char c = p[pi];
  if (c == '*') {
    std::size_t end = pi;
    while (end < p.size() && p[end] == '*') ++end;
    const bool component =
        end - pi >= 2 && (pi == 0 || p[pi - 1] == '/') && (end == p.size() || p[end] == '/');
    if (component && end == p.size()) return true;
    if (component) {  // "**/": zero or more directories
      if (wildmatch(p, end + 1, s, si)) return true;
      for (std::size_t k = si; k < s.size(); ++k)
        if (s[k] == '/' && wildmatch(p, end + 1, s, k + 1)) return true;
      return false;
    }
    for (std::size_t k = si;; ++k) {
      if (wildmatch(p, end, s, k)) return true;
      if (k == s.size() || s[k] == '/') return false;
    }
  }
  if (si == s.size()) return false;
  if (c == '?') return one_character(p, pi + 1, s, si, [](char b) { return b != '/'; });
  if (c == '[') {
    std::size_t j = pi + 1;
    const bool negated = j < p.size() && (p[j] == '!' || p[j] == '^');
    if (negated) ++j;
    if (j < p.size() && p[j] == ']') ++j;
    while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2u : 1u;
    if (j < p.size()) {
      const std::string body = p.substr(pi + 1, j - pi - 1);
      if (negated)
        return one_character(p, j + 1, s, si, [&](char b) { return class_match(body, b); });
      // A positive class with a non-ASCII member also takes any non-printable run.
      const bool wide = std::any_of(body.begin(), body.end(),
                                    [](char b) { return static_cast<unsigned char>(b) >= 0x80; });
      if (wide && non_printable_run(p, j + 1, s, si)) return true;
      return class_match(body, s[si]) && wildmatch(p, j + 1, s, si + 1);
    }
  }
  if (c == '\\' && pi + 1 < p.size() && static_cast<unsigned char>(p[pi + 1]) < 0x80)
    return p[pi + 1] == s[si] && wildmatch(p, pi + 2, s, si + 1);
  if (c == '\\' && pi + 1 < p.size()) return wildmatch(p, pi + 1, s, si);
  if (static_cast<unsigned char>(c) >= 0x80) {
    // A literal run of non-ASCII bytes is written as "one or more non-printable bytes" (no
    // such byte may enter the profile text): any run of them matches (a superset).
    std::size_t end = pi;
    while (end < p.size() && static_cast<unsigned char>(p[end]) >= 0x80) ++end;
    return non_printable_run(p, end, s, si);
  }
  return c == s[si] && wildmatch(p, pi + 1, s, si + 1);
}

bool non_printable_run(const std::string& p, std::size_t next, const std::string& s,
                       std::size_t si) {
  for (std::size_t k = si; k < s.size() && non_printable(s[k]); ++k)
    if (wildmatch(p, next, s, k + 1)) return true;
  return false;
}

// gitignore: a pattern matching a directory covers everything below it.
bool reference_match(const std::string& glob, const std::string& path) {
  for (std::string alt : ref_expand(glob)) {
    while (alt.size() > 1 && alt.back() == '/') alt.pop_back();
    for (std::size_t cut = 1; cut <= path.size(); ++cut) {
      if (cut < path.size() && path[cut] != '/') continue;
      if (wildmatch(alt, 0, path.substr(0, cut), 0)) return true;
    }
  }
  return false;
}

bool regex_match(const std::string& regex, const std::string& path, std::regex::flag_type dialect) {
  return std::regex_search(path, std::regex(regex, dialect));
}

struct Case {
  std::string glob;
  std::vector<std::string> match;
  std::vector<std::string> no_match;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"/a/b", {"/a/b", "/a/b/c", "/a/b/c/d"}, {"/a", "/a/bc", "/a/c", "/x/a/b"}},
      {"/a/*.pem",
       {"/a/k.pem", "/a/.pem", "/a/k.pem/inner"},
       {"/a/b/k.pem", "/a/k.pemx", "/b/k.pem"}},
      {"/a/**/x", {"/a/x", "/a/b/x", "/a/b/c/x", "/a/x/y"}, {"/a/bx", "/x", "/b/x", "/a/b/xy"}},
      {"/**/*.pem", {"/k.pem", "/a/k.pem", "/a/b/c/k.pem"}, {"/a/k.pemx", "/a/kpem", "/a/k.pe"}},
      {"/a/**", {"/a/b", "/a/b/c"}, {"/a", "/ab", "/b/a"}},
      {"/a/?", {"/a/b", "/a/c/d"}, {"/a/bc", "/a", "/a/"}},
      {"/a/?.txt", {"/a/1.txt"}, {"/a/10.txt", "/a/.txt"}},
      {"/a/[abc]", {"/a/a", "/a/c"}, {"/a/d", "/a/ab", "/a/A"}},
      {"/a/[a-c]x", {"/a/ax", "/a/bx", "/a/cx"}, {"/a/dx", "/a/x", "/a/-x"}},
      {"/a/[!a-c]x", {"/a/dx", "/a/Zx", "/a/-x"}, {"/a/ax", "/a/cx", "/a//x", "/a/x"}},
      {"/a/[^0-9]", {"/a/b", "/a/_"}, {"/a/5", "/a/0"}},
      {"/a/[]]x", {"/a/]x"}, {"/a/x", "/a/ax"}},
      {"/a/[]a]x", {"/a/]x", "/a/ax"}, {"/a/bx"}},
      {"/a/[a-]x", {"/a/ax", "/a/-x"}, {"/a/bx"}},
      {"/a/[^]x", {"/a/[^]x"}, {"/a/bx", "/a/^x"}},  // unclosed class: literal
      {"/a/[x", {"/a/[x", "/a/[x/y"}, {"/a/x", "/a/[y"}},
      {"/a/x]", {"/a/x]"}, {"/a/x"}},
      {"/a/{b,c}", {"/a/b", "/a/c", "/a/c/d"}, {"/a/bc", "/a/d", "/a/{b,c}"}},
      {"/a/{b,c/d}/e", {"/a/b/e", "/a/c/d/e"}, {"/a/c/e", "/a/d/e"}},
      {"/a/{x,{y,z}w}", {"/a/x", "/a/yw", "/a/zw"}, {"/a/y", "/a/w", "/a/xw"}},
      {"/a/{b}", {"/a/{b}"}, {"/a/b"}},  // no comma: literal braces
      {"/a/{b,c", {"/a/{b,c"}, {"/a/b", "/a/c"}},
      {"/a/{,x}y", {"/a/y", "/a/xy"}, {"/a/x"}},
      {"/a/\\*", {"/a/*"}, {"/a/b", "/a/**"}},
      {"/a/\\?x", {"/a/?x"}, {"/a/bx"}},
      {"/a/\\[b]", {"/a/[b]"}, {"/a/b"}},
      {"/a/\\{b,c}", {"/a/{b,c}"}, {"/a/b", "/a/c"}},
      {"/a/b c", {"/a/b c", "/a/b c/d"}, {"/a/b", "/a/bxc", "/a/b  c"}},
      {"/a/x.y", {"/a/x.y"}, {"/a/xzy", "/a/x"}},
      {"/a/x+y(1)$^|", {"/a/x+y(1)$^|"}, {"/a/xy1", "/a/xxy(1)$^|"}},
      {"/a/;#'=%@,~!", {"/a/;#'=%@,~!"}, {"/a/;#"}},
      {"/a/b**c", {"/a/bc", "/a/bxxc"}, {"/a/b/c", "/a/bx/c"}},  // not a whole component
      {"/a/**/b/**/c", {"/a/b/c", "/a/x/b/y/z/c"}, {"/a/c", "/a/bc"}},
      {"/h/*/secret", {"/h/u/secret", "/h/u/secret/k"}, {"/h/secret", "/h/u/v/secret"}},
      {"/a/dir/", {"/a/dir", "/a/dir/f"}, {"/a/di", "/a/dirx"}},  // trailing slash: superset
      {"/a/д*", {"/a/дом", "/a/д"}, {"/a/xд", "/a/b"}},
      {"/*", {"/a", "/a/b"}, {}},
      {"/a/[[]x", {"/a/[x"}, {"/a/x"}},
      {"/a/[.]x", {"/a/.x"}, {"/a/ax"}},
      {"/a/[!.]*", {"/a/b", "/a/bc"}, {"/a/.b"}},
      // Found by the fuzzer: a positive class whose first written member is `^`.
      {"/a/[\\^]x", {"/a/^x"}, {"/a/bx", "/a/\\x"}},
      {"/a/[]\\^/]x", {"/a/]x", "/a/^x"}, {"/a/bx", "/a//x"}},
      {"/a/[\\^-]x", {"/a/^x", "/a/-x"}, {"/a/bx"}},
      {"/a/[\\^[]x", {"/a/^x", "/a/[x"}, {"/a/bx"}},
      // `?` and negated classes match one character, also a multi-byte one (2, 3, 4 bytes);
      // a deny glob that missed them would fail open.
      {"/a/secret?.txt",
       {"/a/secretx.txt", "/a/secretü.txt", "/a/secret€.txt", "/a/secret😀.txt"},
       {"/a/secret.txt", "/a/secretab.txt", "/a/secretüx.txt", "/a/secret/.txt"}},
      {"/a/[!x].md",
       {"/a/y.md", "/a/ü.md", "/a/€.md", "/a/😀.md"},
       {"/a/x.md", "/a/yy.md", "/a/.md"}},
      {"/a/??", {"/a/üü", "/a/xü", "/a/ab"}, {"/a/abc", "/a/x"}},
      // Non-ASCII literals and class members: "one or more non-printable bytes" (a superset;
      // no byte >= 0x80 may enter the profile text).
      {"/a/ü.txt",
       {"/a/ü.txt", "/a/日本.txt", "/a/\xff.txt"},
       {"/a/u.txt", "/a/.txt", "/a/üx.txt"}},
      {"/a/[äx]y", {"/a/äy", "/a/xy", "/a/€y"}, {"/a/ay", "/a/y", "/a/xxy"}},
      {"/a/\\ü", {"/a/ü"}, {"/a/u", "/a/x"}},
  };
  return kCases;
}

TEST(GlobRegex, TableHasAtLeastThirtyCases) { EXPECT_GE(cases().size(), 30u); }

TEST(GlobRegex, ReferenceMatcherAgreesWithTable) {
  for (const Case& c : cases()) {
    for (const auto& p : c.match) EXPECT_TRUE(reference_match(c.glob, p)) << c.glob << " vs " << p;
    for (const auto& p : c.no_match)
      EXPECT_FALSE(reference_match(c.glob, p)) << c.glob << " vs " << p;
  }
}

TEST(GlobRegex, CompiledRegexAgreesWithTableInBothDialects) {
  for (const Case& c : cases()) {
    auto regex = glob_to_regex(c.glob);
    ASSERT_TRUE(regex.ok()) << c.glob << ": " << regex.error();
    for (auto dialect : {std::regex::ECMAScript, std::regex::extended}) {
      for (const auto& p : c.match)
        EXPECT_TRUE(regex_match(*regex, p, dialect)) << c.glob << " => " << *regex << " vs " << p;
      for (const auto& p : c.no_match)
        EXPECT_FALSE(regex_match(*regex, p, dialect)) << c.glob << " => " << *regex << " vs " << p;
    }
  }
}

// Every glob against every sample path of every case: regex and reference agree.
TEST(GlobRegex, CompiledRegexAgreesWithReferenceOnAllSamples) {
  std::vector<std::string> samples;
  for (const Case& c : cases()) {
    samples.insert(samples.end(), c.match.begin(), c.match.end());
    samples.insert(samples.end(), c.no_match.begin(), c.no_match.end());
  }
  for (const Case& c : cases()) {
    const std::string regex = glob_to_regex(c.glob).value();
    const std::regex compiled(regex, std::regex::extended);
    for (const auto& p : samples)
      EXPECT_EQ(std::regex_search(p, compiled), reference_match(c.glob, p))
          << c.glob << " => " << regex << " vs " << p;
  }
}

TEST(GlobRegex, OutputUsesOnlyTheCommonSubsetAndNoLiteralBreakers) {
  for (const Case& c : cases()) {
    const std::string regex = glob_to_regex(c.glob).value();
    for (char ch : regex)
      EXPECT_TRUE(ch >= 0x20 && ch < 0x7F) << "not printable ASCII in " << regex;
    EXPECT_EQ(regex.find('"'), std::string::npos) << regex;
    EXPECT_EQ(regex.find("\\]"), std::string::npos) << regex;  // not valid POSIX ERE
    for (std::size_t i = 0; i + 1 < regex.size(); ++i) {
      if (regex[i] == '\\') {
        EXPECT_EQ(regex[i + 1], '^') << "unexpected escape in " << regex;
      }
    }
    for (char ch : regex) EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20) << regex;
  }
}

TEST(GlobRegex, ExactOutputForTypicalPatterns) {
  EXPECT_EQ(glob_to_regex("/w/**/*.pem").value(), "^/w/(.*/)?[^/]*[.]pem(/.*)?$");
  EXPECT_EQ(glob_to_regex("/w/{a,b}/.env").value(), "^(/w/a/[.]env|/w/b/[.]env)(/.*)?$");
  // `?` and a negated class: one byte, or 2-4 non-printable bytes (a multi-byte character).
  const std::string nb =
      "[^ "
      "!#$%&'()*+,./"
      "0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ_`abcdefghijklmnopqrstuvwxyz{|}~^[-]";
  auto one = [&](const std::string& byte) {
    return "(" + byte + "|" + nb + nb + "(" + nb + nb + "?)?)";
  };
  EXPECT_EQ(glob_to_regex("/w/[!x]?").value(), "^/w/" + one("[^/x]") + one("[^/]") + "(/.*)?$");
}

// Characters the common subset cannot spell make the regex match MORE (fail-closed for denies).
TEST(GlobRegex, UnrepresentableCharactersWidenToASuperset) {
  struct Wide {
    std::string glob, must_match;
  };
  const std::vector<Wide> kWide = {
      {"/a/q\"b", "/a/q\"b"}, {"/a/back\\\\slash", "/a/back\\slash"}, {"/a/[\"x]", "/a/\""},
      {"/a/[!]x]", "/a/y"},   {"/a/line\nbreak", "/a/line\nbreak"},
  };
  for (const Wide& w : kWide) {
    const std::string regex = glob_to_regex(w.glob).value();
    EXPECT_EQ(regex.find('"'), std::string::npos) << regex;
    EXPECT_EQ(regex.find('\n'), std::string::npos) << regex;
    EXPECT_TRUE(regex_match(regex, w.must_match, std::regex::extended)) << regex;
    EXPECT_TRUE(reference_match(w.glob, w.must_match)) << w.glob;
  }
  // Superset: the widened `"` also matches another byte, and that is the only loss.
  EXPECT_TRUE(regex_match(glob_to_regex("/a/q\"b").value(), "/a/qxb", std::regex::extended));
}

TEST(GlobRegex, RejectsRelativeEmptyAndOversizedGlobs) {
  EXPECT_FALSE(glob_to_regex("").ok());
  auto relative = glob_to_regex("**/*.pem");
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.error().find("not absolute"), std::string::npos);
  EXPECT_FALSE(glob_to_regex("/" + std::string(5000, 'a')).ok());
}

TEST(GlobRegex, BraceExpansionIsCapped) {
  auto many = expand_braces("/{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}");  // 128 alternatives
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().find("more than 64"), std::string::npos);
  auto fine = expand_braces("/{a,b}{c,d}{e,f}");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->size(), 8u);
}

TEST(GlobRegex, StaticAncestorsStopAtTheFirstWildcard) {
  using sbx::seatbelt::glob_static_ancestors;
  EXPECT_EQ(glob_static_ancestors("/w/a/b/*.pem"),
            (std::vector<std::string>{"/w", "/w/a", "/w/a/b"}));
  EXPECT_EQ(glob_static_ancestors("/w/x*/b"), (std::vector<std::string>{"/w"}));
  EXPECT_EQ(glob_static_ancestors("/w/{a,b}/c"), (std::vector<std::string>{"/w"}));
  EXPECT_EQ(glob_static_ancestors("/*.pem"), std::vector<std::string>{});
  EXPECT_EQ(glob_static_ancestors("/w/secret"), (std::vector<std::string>{"/w"}));
}

}  // namespace
