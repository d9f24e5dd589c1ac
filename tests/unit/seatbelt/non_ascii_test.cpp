// No byte of a path reaches the profile text unless written as an escaped regex, and no byte
// >= 0x80 reaches it at all: paths with UTF-8, bytes that are not UTF-8, quotes, backslashes and
// newlines in every place a path can come from (rules, protected paths, deny globs, unix
// sockets). The parameters carry them unchanged, and the profile still means what the policy
// says for them (sbpl_eval.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sbpl_eval.hpp"
#include "sbx/seatbelt/profile.hpp"
#include "sexpr.hpp"

namespace seatbelt_non_ascii_test {

using namespace sbx;

// Component spellings: UTF-8 (2, 3 and 4 bytes), not UTF-8 (lone lead, lone continuation,
// 0xFF, truncated sequence), and the ASCII bytes that could break a literal.
const std::vector<std::string> kOddNames = {
    "d\xC3\xA9j\xC3\xA0",        // "déjà"
    "\xE6\x97\xA5\xE6\x9C\xAC",  // "日本"
    "\xF0\x9F\x98\x80 x",        // an emoji and a space
    "bad\xC3",                   // lone lead byte
    "\x80lead",                  // lone continuation byte
    "ff\xFF\xFE",                // never valid in UTF-8
    "cut\xE2\x82",               // truncated 3-byte sequence
    "q\"uote",                   // a quote
    "back\\slash\\",             // backslashes
    "new\nline",                 // a newline
    "mix \xC3\xBC\"\\\n\xFF",    // all of it
};

bool printable_ascii_or_newline(const std::string& text, std::size_t* bad) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c != '\n' && (c < 0x20 || c >= 0x7F)) {
      *bad = i;
      return false;
    }
  }
  return true;
}

// The name as a glob literal: the glob metacharacters escaped with `\`.
std::string glob_literal(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '\\' || c == '*' || c == '?' || c == '[' || c == '{') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

struct Built {
  seatbelt::Profile profile;
  std::vector<seatbelt::testing::Node> forms;
  std::map<std::string, std::string> params;
};

Built build(const ResolvedPolicy& policy) {
  auto profile = seatbelt::build_profile(policy, {});
  if (!profile.ok()) throw std::runtime_error(profile.error());
  Built b{*profile, {}, {}};
  seatbelt::testing::SexprReader reader(b.profile.text);
  if (!reader.read_all(b.forms)) throw std::runtime_error(reader.error());
  for (const auto& p : b.profile.params) b.params[p.key] = p.value;
  return b;
}

TEST(SeatbeltNonAscii, NoPathByteReachesTheTextAndParametersCarryThemIntact) {
  for (const std::string& name : kOddNames) {
    SCOPED_TRACE(testing::PrintToString(name));
    const std::string root = "/Users/me/" + name;
    ResolvedPolicy policy;
    policy.rules = {
        {"/", Access::kRead}, {root, Access::kWrite}, {root + "/" + name, Access::kDeny}};
    policy.protected_paths = {{root + "/.git", root, false, false}};
    policy.deny_globs = {"/Users/me/**/" + glob_literal(name) + "*.pem"};
    policy.network.unix_sockets = {"/Users/me/" + name + ".sock"};
    policy.cwd = root;
    const Built b = build(policy);

    std::size_t bad = 0;
    EXPECT_TRUE(printable_ascii_or_newline(b.profile.text, &bad))
        << "byte " << static_cast<int>(static_cast<unsigned char>(b.profile.text[bad])) << " at "
        << bad;
    EXPECT_EQ(b.profile.text.find(name), std::string::npos);

    // Every path is a parameter, byte for byte.
    std::vector<std::string> values;
    for (const auto& [key, value] : b.params) values.push_back(value);
    for (const std::string& expected :
         {root, root + "/" + name, root + "/.git", "/Users/me/" + name + ".sock"}) {
      EXPECT_NE(std::find(values.begin(), values.end(), expected), values.end()) << expected;
    }

    // And the profile means what the policy says for those paths.
    seatbelt::testing::SbplEvaluator eval(b.forms, b.params);
    EXPECT_TRUE(eval.allows("file-write-create", root + "/src.c"));
    EXPECT_FALSE(eval.allows("file-read-data", root + "/" + name + "/x"));
    EXPECT_FALSE(eval.allows("file-write-create", root + "/.git"));  // protected
    EXPECT_FALSE(eval.allows("file-write-create", root + "/.git/config"));
    EXPECT_FALSE(eval.allows("file-read-data", root + "/k/" + name + "1.pem"));  // glob
    EXPECT_TRUE(eval.allows("file-read-data", root + "/k/other.pem"));
    EXPECT_TRUE(eval.allows("network-outbound", "unix-socket:/Users/me/" + name + ".sock"));
  }
}

// Non-ASCII runs are written as "one or more non-printable bytes", a superset: a protected
// name or deny glob spelled with one also catches a same-shaped name with other non-ASCII bytes
// (fail-closed), never an ASCII-only neighbour.
TEST(SeatbeltNonAscii, EscapedRegexesAreSupersetsThatStayInTheirComponent) {
  ResolvedPolicy policy;
  policy.rules = {{"/", Access::kRead}, {"/Users/me/w", Access::kWrite}};
  policy.protected_paths = {{"/Users/me/w/\xC3\xA9t\xC3\xA9", "/Users/me/w", false, false}};
  policy.deny_globs = {"/Users/me/w/cl\xC3\xA9.pem"};
  policy.cwd = "/Users/me/w";
  const Built b = build(policy);
  seatbelt::testing::SbplEvaluator eval(b.forms, b.params);
  EXPECT_FALSE(eval.allows("file-write-create", "/Users/me/w/\xC3\xA9t\xC3\xA9"));
  EXPECT_FALSE(eval.allows("file-write-create", "/Users/me/w/\xE6\x97\xA5t\xC3\xA9"));  // superset
  EXPECT_TRUE(eval.allows("file-write-create", "/Users/me/w/ete"));
  EXPECT_TRUE(eval.allows("file-write-create", "/Users/me/w/x/\xC3\xA9t\xC3\xA9"));
  EXPECT_FALSE(eval.allows("file-read-data", "/Users/me/w/cl\xC3\xA9.pem"));
  EXPECT_TRUE(eval.allows("file-read-data", "/Users/me/w/cle.pem"));
  EXPECT_TRUE(eval.allows("file-read-data", "/Users/me/w/cl.pem"));
}

}  // namespace seatbelt_non_ascii_test
