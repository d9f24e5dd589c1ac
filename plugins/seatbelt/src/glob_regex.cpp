// Glob -> SBPL regex. See glob_regex.hpp for the emitted subset and why approximations are
// always supersets.
#include "sbx/seatbelt/glob_regex.hpp"

#include <algorithm>
#include <bitset>
#include <string>
#include <vector>

namespace sbx::seatbelt {
namespace {

// Matches any single path-component byte: the superset used for unrepresentable characters.
constexpr std::string_view kAnyByte = "[^/]";
// Matches one or more component bytes: a superset of "one character" under both byte- and
// character-oriented regex engines (a UTF-8 character is 1-4 bytes).
constexpr std::string_view kAnyChars = "[^/]+";
// Matches any byte that is not printable ASCII (a byte of a multi-byte UTF-8 character, a
// control character, or one of the few printable bytes a bracket cannot hold: `"`, `\`, `]`).
// Never `/`.
constexpr std::string_view kNonPrintable =
    "[^ "
    "!#$%&'()*+,./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ_`abcdefghijklmnopqrstuvwxyz{|}~^[-]";

// A run of one or more non-printable bytes: how every non-ASCII byte of a path or glob is
// written, because no byte >= 0x80 may enter the profile text. A run of N such bytes is one to
// N characters, depending on whether the regex engine reads bytes or UTF-8 characters, so the
// run cannot be pinned to its exact length; "one or more" matches it under both readings (a
// superset: fail-closed, since these regexes only take permissions away).
std::string non_ascii_run() { return std::string(kNonPrintable) + "+"; }

// `one_byte` (a bracket expression for one ASCII byte) or a run of 2 to 4 non-printable bytes:
// one character of a path component. Why: `?` and negated classes must also match a
// multi-byte UTF-8 character, or a deny glob like `secret?.txt` would miss `secretü.txt`
// (fail-open) under a byte-oriented engine. The run is a superset (it also takes 2-4 control
// bytes), which for a deny glob is fail-closed; for ASCII names the match stays exact.
std::string one_character(std::string_view one_byte) {
  const std::string nb(kNonPrintable);
  return "(" + std::string(one_byte) + "|" + nb + nb + "(" + nb + nb + "?)?)";
}

bool is_plain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
         c == '_' || c == '-';
}

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if malformed.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  std::size_t len = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (c < 0x80 || c > 0xBF) return 0;
  }
  return len;
}

// One printable ASCII byte outside any bracket expression. In path mode nothing but
// [A-Za-z0-9/_-] is copied, so a path's own spelling never appears in the policy text.
void append_ascii_literal(unsigned char c, bool path_mode, std::string& out) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (path_mode && letter) {
    // Both cases: APFS volumes are case-insensitive by default, so `mkdir .GIT` would create
    // what git later opens as `.git`. A superset on case-sensitive volumes (fail-closed).
    out += {'[', static_cast<char>(c & ~0x20), static_cast<char>(c | 0x20), ']'};
  } else if (is_plain(c)) {
    out.push_back(static_cast<char>(c));
  } else if (c == '^') {
    out += "\\^";  // `[^]` would be a negation; `\^` is defined in ERE and ECMAScript
  } else if (c == ']') {
    // Literal outside brackets in both dialects (`\]` is not valid ERE, `[]]` not ECMAScript).
    // Paths take the superset instead, so that no byte of them is copied unchanged.
    out += path_mode ? kAnyByte : "]";
  } else if (c == '[') {
    // In a path, parenthesised: `[[]` right after the preceding bytes would spell the path up
    // to and including its `[`, and no path may appear in the text.
    out += path_mode ? "([[])" : "[[]";
  } else if (c == '"' || c == '\\' || c < 0x20 || c == 0x7F) {
    // `"` would end the SBPL literal; `\` handling by the SBPL reader is undocumented.
    out += kAnyByte;
  } else {
    out.push_back('[');
    out.push_back(static_cast<char>(c));
    out.push_back(']');
  }
}

std::size_t find_class_end(std::string_view s, std::size_t open);

}  // namespace

namespace {

void append_literal(std::string_view text, bool path_mode, std::string& out) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      append_ascii_literal(c, path_mode, out);
      ++i;
      continue;
    }
    // Non-ASCII (well-formed UTF-8 or not): the whole run becomes one non_ascii_run(), so the
    // profile text stays printable ASCII and the path's own bytes never appear in it.
    while (i < text.size() && static_cast<unsigned char>(text[i]) >= 0x80) ++i;
    out += non_ascii_run();
  }
}

}  // namespace

void append_literal_regex(std::string_view text, std::string& out) {
  append_literal(text, false, out);
}

std::string subtree_regex_for_path(std::string_view path) {
  std::string out = "^";
  append_literal(path, true, out);
  out += "(/.*)?$";
  return out;
}

namespace {

// Index of the `]` closing the class opened at s[open], or npos if it is not closed (then the
// `[` is a literal). A `]` right after `[`, `[!` or `[^` is a member, not the end.
std::size_t find_class_end(std::string_view s, std::size_t open) {
  std::size_t j = open + 1;
  if (j < s.size() && (s[j] == '!' || s[j] == '^')) ++j;
  if (j < s.size() && s[j] == ']') ++j;
  while (j < s.size()) {
    if (s[j] == '\\') {
      j += 2;
    } else if (s[j] == ']') {
      return j;
    } else {
      ++j;
    }
  }
  return std::string_view::npos;
}

struct BraceGroup {
  std::size_t open = 0;
  std::size_t close = 0;
  std::vector<std::size_t> commas;  // top-level commas
};

// Scans a candidate group at s[open] == '{'. Returns false if it is unclosed.
bool scan_group(std::string_view s, std::size_t open, BraceGroup& group) {
  group = BraceGroup{open, 0, {}};
  int depth = 0;
  for (std::size_t j = open + 1; j < s.size(); ++j) {
    const char c = s[j];
    if (c == '\\') {
      ++j;
    } else if (c == '[') {
      const std::size_t end = find_class_end(s, j);
      if (end != std::string_view::npos) j = end;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (depth == 0) {
        group.close = j;
        return true;
      }
      --depth;
    } else if (c == ',' && depth == 0) {
      group.commas.push_back(j);
    }
  }
  return false;
}

// The first `{...}` with a top-level comma, skipping escapes, classes and literal braces.
bool find_group(std::string_view s, BraceGroup& group) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '[') {
      const std::size_t end = find_class_end(s, i);
      if (end != std::string_view::npos) i = end;
    } else if (s[i] == '{' && scan_group(s, i, group) && !group.commas.empty()) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> expand_one(std::string_view s, const BraceGroup& g) {
  std::vector<std::string> out;
  const std::string_view prefix = s.substr(0, g.open);
  const std::string_view suffix = s.substr(g.close + 1);
  std::size_t start = g.open + 1;
  for (std::size_t k = 0; k <= g.commas.size(); ++k) {
    const std::size_t end = k < g.commas.size() ? g.commas[k] : g.close;
    std::string alt(prefix);
    alt.append(s.substr(start, end - start));
    alt.append(suffix);
    out.push_back(std::move(alt));
    start = end + 1;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> expand_braces(std::string_view glob, std::size_t limit) {
  // Breadth-first, one group per string per round: each round removes a group from every
  // string (and never lengthens it), so the loop ends; the limit is checked every round.
  std::vector<std::string> work{std::string(glob)};
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<std::string> next;
    for (const std::string& s : work) {
      BraceGroup g;
      if (!find_group(s, g)) {
        next.push_back(s);
        continue;
      }
      changed = true;
      for (std::string& alt : expand_one(s, g)) next.push_back(std::move(alt));
      if (next.size() > limit) {
        return Error{"glob '" + std::string(glob) + "' expands to more than " +
                     std::to_string(limit) + " alternatives; split it into several globs"};
      }
    }
    work = std::move(next);
  }
  return work;
}

namespace {

// A parsed bracket expression: ASCII members as a bit set, plus what could not be written.
struct ClassSet {
  bool negated = false;
  std::bitset<128> ascii;
  std::vector<std::string> wide;  // well-formed non-ASCII members (UTF-8 sequences)
  bool inexact = false;           // a member that cannot be expressed (see emit_class)
};

// Reads one class member at body[i]: a byte, an escaped byte, or a UTF-8 sequence.
std::string read_member(std::string_view body, std::size_t& i) {
  if (body[i] == '\\' && i + 1 < body.size()) ++i;
  std::size_t len = 1;
  if (static_cast<unsigned char>(body[i]) >= 0x80)
    len = std::max<std::size_t>(1, utf8_sequence_length(body, i));
  std::string m(body.substr(i, len));
  i += len;
  return m;
}

void add_range(ClassSet& set, const std::string& lo, const std::string& hi) {
  if (lo.size() != 1 || hi.size() != 1 || static_cast<unsigned char>(lo[0]) >= 0x80 ||
      static_cast<unsigned char>(hi[0]) >= 0x80) {
    set.inexact = true;  // ranges over non-ASCII characters are not expressible byte-wise
    return;
  }
  for (int c = static_cast<unsigned char>(lo[0]); c <= static_cast<unsigned char>(hi[0]); ++c)
    set.ascii.set(static_cast<std::size_t>(c));
}

ClassSet parse_class(std::string_view body) {
  ClassSet set;
  std::size_t i = 0;
  if (i < body.size() && (body[i] == '!' || body[i] == '^')) {
    set.negated = true;
    ++i;
  }
  while (i < body.size()) {
    const std::string lo = read_member(body, i);
    if (i + 1 < body.size() && body[i] == '-') {
      ++i;
      add_range(set, lo, read_member(body, i));
    } else if (lo.size() == 1 && static_cast<unsigned char>(lo[0]) < 0x80) {
      set.ascii.set(static_cast<unsigned char>(lo[0]));
    } else if (lo.size() > 1) {
      set.wide.push_back(lo);
    } else {
      set.inexact = true;  // a malformed byte
    }
  }
  set.ascii.reset('/');  // a class never matches the separator
  return set;
}

// Members that can sit inside a bracket expression in both dialects, in a safe order:
// `^` never first, `[` followed only by `-` or `]`, `-` last.
std::string bracket_members(const std::bitset<128>& ascii) {
  std::string out;
  for (std::size_t c = 0x20; c < 0x7F; ++c) {
    if (!ascii.test(c) || c == '^' || c == '[' || c == '-' || c == ']') continue;
    out.push_back(static_cast<char>(c));
  }
  if (ascii.test('^')) out.push_back('^');
  if (ascii.test('[')) out.push_back('[');
  if (ascii.test('-')) out.push_back('-');
  return out;
}

bool has_unwritable_ascii(const std::bitset<128>& ascii) {
  for (std::size_t c = 0; c < 128; ++c) {
    if (ascii.test(c) && (c < 0x20 || c == 0x7F || c == '"' || c == '\\')) return true;
  }
  return false;
}

std::bitset<128> writable_ascii(std::bitset<128> ascii) {
  for (std::size_t c = 0; c < 128; ++c) {
    if (c < 0x20 || c == 0x7F || c == '"' || c == '\\' || c == ']') ascii.reset(c);
  }
  return ascii;
}

// Negated: members that cannot be written are left out of the exclusion, so the class matches
// more (superset). Positive: `]` and wide members become alternatives; anything unwritable
// widens the whole class to "any character".
void emit_class(const ClassSet& set, std::string& out) {
  if (set.negated) {
    out += one_character("[^/" + bracket_members(writable_ascii(set.ascii)) + "]");
    return;
  }
  if (set.inexact || has_unwritable_ascii(set.ascii)) {
    out += set.wide.empty() ? kAnyByte : kAnyChars;
    return;
  }
  // Non-ASCII members: one alternative for all of them (see non_ascii_run).
  std::vector<std::string> alts;
  if (!set.wide.empty()) alts.push_back(non_ascii_run());
  if (set.ascii.test(']')) alts.emplace_back("]");
  std::string members = bracket_members(writable_ascii(set.ascii));
  // A leading `^` would negate a positive class: alone it is written `\^`, otherwise it
  // moves behind the first member (`[`, `-` or any other; none of them forms `[^` or `[:`).
  if (members == "^") {
    alts.emplace_back("\\^");
  } else if (!members.empty() && members.front() == '^') {
    members = std::string(1, members[1]) + "^" + members.substr(2);
  }
  if (!members.empty() && members != "^") alts.push_back("[" + members + "]");
  if (alts.empty()) {
    out += kAnyByte;  // e.g. `[/]` matches nothing; any superset is fail-closed
  } else if (alts.size() == 1) {
    out += alts.front();
  } else {
    out += "(";
    for (std::size_t k = 0; k < alts.size(); ++k) out += (k == 0 ? "" : "|") + alts[k];
    out += ")";
  }
}

bool is_glob_special(char c) { return c == '\\' || c == '*' || c == '?' || c == '['; }

// `*` runs at p[i]: a whole-component `**` spans directories, anything else stays in one.
std::size_t compile_stars(std::string_view p, std::size_t i, std::string& out) {
  std::size_t j = i;
  while (j < p.size() && p[j] == '*') ++j;
  const bool whole_component =
      j - i >= 2 && (i == 0 || p[i - 1] == '/') && (j == p.size() || p[j] == '/');
  if (!whole_component) {
    out += "[^/]*";
    return j;
  }
  if (j == p.size()) {
    out += ".*";
    return j;
  }
  out += "(.*/)?";  // `**/`: zero or more whole directories
  return j + 1;
}

// One brace-free alternative; `{`, `}` and `,` are literal here.
std::string compile_alternative(std::string_view p) {
  std::string out;
  std::size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) {
        append_literal_regex("\\", out);
        ++i;
      } else if (static_cast<unsigned char>(p[i + 1]) < 0x80) {
        append_literal_regex(p.substr(i + 1, 1), out);
        i += 2;
      } else {
        ++i;  // an escaped non-ASCII byte is just itself; let the run keep the sequence whole
        std::size_t j = i;
        while (j < p.size() && !is_glob_special(p[j])) ++j;
        append_literal_regex(p.substr(i, j - i), out);
        i = j;
      }
    } else if (c == '*') {
      i = compile_stars(p, i, out);
    } else if (c == '?') {
      out += one_character(kAnyByte);
      ++i;
    } else if (c == '[') {
      const std::size_t end = find_class_end(p, i);
      if (end == std::string_view::npos) {
        append_literal_regex("[", out);
        ++i;
      } else {
        emit_class(parse_class(p.substr(i + 1, end - i - 1)), out);
        i = end + 1;
      }
    } else {
      std::size_t j = i;
      while (j < p.size() && !is_glob_special(p[j])) ++j;
      append_literal_regex(p.substr(i, j - i), out);
      i = j;
    }
  }
  return out;
}

}  // namespace

Result<std::string> glob_to_regex(std::string_view glob) {
  if (glob.empty()) return Error{"deny glob is empty"};
  if (glob.size() > kMaxGlobLength)
    return Error{"deny glob is longer than " + std::to_string(kMaxGlobLength) + " bytes"};
  if (glob.front() != '/')
    return Error{"deny glob '" + std::string(glob) +
                 "' is not absolute (core resolves globs "
                 "against the cwd before a backend sees them)"};
  auto alternatives = expand_braces(glob);
  if (!alternatives) return alternatives.failure();
  std::vector<std::string> bodies;
  for (std::string alt : *alternatives) {
    // gitignore's trailing `/` means "directories only"; matching files too is a superset.
    while (alt.size() > 1 && alt.back() == '/') alt.pop_back();
    std::string body = compile_alternative(alt);
    if (std::find(bodies.begin(), bodies.end(), body) == bodies.end())
      bodies.push_back(std::move(body));
  }
  std::string out = "^";
  if (bodies.size() == 1) {
    out += bodies.front();
  } else {
    out += "(";
    for (std::size_t k = 0; k < bodies.size(); ++k) out += (k == 0 ? "" : "|") + bodies[k];
    out += ")";
  }
  out += "(/.*)?$";  // a matching directory denies its whole subtree
  return out;
}

std::vector<std::string> glob_static_ancestors(std::string_view glob) {
  std::vector<std::string> out;
  const std::size_t meta = glob.find_first_of("*?[{\\");
  const std::string_view literal = glob.substr(0, meta);
  const std::size_t last_slash = literal.rfind('/');
  if (last_slash == std::string_view::npos || last_slash == 0) return out;
  const std::string_view dir = literal.substr(0, last_slash);
  for (std::size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    out.emplace_back(dir.substr(0, pos));
    if (pos == std::string_view::npos) break;
  }
  return out;
}

}  // namespace sbx::seatbelt
