// Glob -> SBPL regex compiler and the path escaper used for the protected-name regexes.
//
// SBPL regexes are POSIX-extended-like and live inside `#"..."` literals in the policy text.
// Everything emitted here stays inside the subset that POSIX ERE and ECMAScript read the same
// way: literals, `^`, `$`, `(...)`, `|`, `?`, `*`, `+`, `.`, bracket expressions `[...]` and
// `[^...]` (members never `\`, `]` first or `[:`), and the one escape `\^`. The characters `"`
// and `\` are never emitted raw inside a literal (the first would end the literal, the second's
// treatment by the SBPL reader is not documented), nor are control characters, nor any byte
// >= 0x80: the text is printable ASCII only.
//
// Where a character cannot be written exactly in that subset, the output matches a SUPERSET of
// the intended paths (e.g. a literal `"` becomes `[^/]`). That is fail-closed because every
// regex built here is used only to take permissions away (deny rules, `require-not`).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::seatbelt {

// At most this many alternatives after brace expansion; more is an error, not a truncation.
inline constexpr std::size_t kMaxBraceAlternatives = 64;
// Longest glob accepted (bytes).
inline constexpr std::size_t kMaxGlobLength = 4096;

// Appends the regex for the literal bytes of `text` (no anchors). Safe bytes ([A-Za-z0-9/_-])
// are copied, other printable ASCII becomes a one-member bracket (`[ ]`, `[.]`, `[[]`; in a path
// `[` is `([[])`), `^` becomes `\^`, `]` stays as is; `"`, `\` and control bytes become `[^/]`;
// every run of bytes
// >= 0x80 (UTF-8 or not) becomes "one or more non-printable bytes" (supersets, see above).
void append_literal_regex(std::string_view text, std::string& out);

// `^<escaped path>(/.*)?$`: the path itself and everything below it. Used for protected names
// so that they stay blocked even when they do not exist yet. Same escaping as
// append_literal_regex except that `]` also becomes `[^/]` and every ASCII letter matches both
// cases (`[Gg]`: APFS is case-insensitive by default), so only digits, `/`, `_` and `-` are
// copied unchanged.
std::string subtree_regex_for_path(std::string_view path);

// Expands `{a,b}` groups (nested, with `\` escapes and `[...]` classes respected). A `{` with
// no matching `}` or no top-level comma is literal. Errors when more than `limit`
// alternatives would result.
Result<std::vector<std::string>> expand_braces(std::string_view glob,
                                               std::size_t limit = kMaxBraceAlternatives);

// Compiles an absolute gitignore-style glob into one anchored regex with subtree semantics (a
// match on a directory covers everything below it): `**/` = zero or more directories, a final
// `/**` = everything below, any other `**` = `*`, `*` = any run of non-`/`, `?` = one
// non-`/` character, `[...]`/`[!...]`/`[^...]` classes (never matching `/`; an unclosed `[` is
// literal; `?` and negated classes also take a multi-byte character, as a run of 2-4
// non-printable bytes: a superset, see glob_regex.cpp),
// `{a,b}` alternation, `\x` = literal x. Errors on a relative, empty or oversized glob.
Result<std::string> glob_to_regex(std::string_view glob);

// The directories a glob's literal prefix names, outermost first: for "/a/b/*.pem" that is
// "/a" and "/a/b". Stops at the first component holding a wildcard, class or brace.
std::vector<std::string> glob_static_ancestors(std::string_view glob);

}  // namespace sbx::seatbelt
