// Property tests over generated policies with hostile paths (deterministic PRNG, fixed seed):
//  1. no hostile path or component ever appears verbatim in the policy text;
//  2. the text parses with the strict S-expression reader (balanced, no escapes, no control
//     characters inside literals) and every (param "K") is bound, every parameter used;
//  3. the parameters carry every path intact;
//  4. evaluating the profile (sbpl_eval.hpp) gives exactly the ResolvedPolicy semantics for
//     read, write and unlink on sample paths, and never allows more -- ":minimal" included, with
//     deny and read rules inside its /etc (a deny there must win over the platform's grant).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <regex>
#include <set>

#include "sbpl_eval.hpp"
#include "sbx/seatbelt/glob_regex.hpp"
#include "sbx/seatbelt/profile.hpp"
#include "sexpr.hpp"

namespace {

using namespace sbx;
using seatbelt::testing::Node;

// splitmix64: tiny, deterministic on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  bool coin() { return (next() & 1u) != 0; }

 private:
  std::uint64_t state_;
};

const std::vector<std::string> kHostile = {" ", "\"", "(", ")", "#\"", ";", "\n", "'", "\\", "$",
                                           "*", "[", "]", "{", "}", "|", "^", "\t", "`",
                                           // bytes that are not UTF-8: a lone lead, a lone
                                           // continuation, 0xFF, a truncated 3-byte sequence
                                           "\xC3", "\x80", "\xFF", "\xE2\x82"};
const std::vector<std::string> kPlain = {"a", "b", "ü", "日本", ".", "-", "_", "0", "é"};

// "zq" + a mix that always holds at least one hostile ASCII piece.
std::string hostile_component(Rng& rng) {
  std::string c = "zq";
  const std::size_t n = 2 + rng.below(5);
  const std::size_t forced = rng.below(n);
  for (std::size_t i = 0; i < n; ++i)
    c += i == forced || rng.coin() ? kHostile[rng.below(kHostile.size())]
                                   : kPlain[rng.below(kPlain.size())];
  return c;
}

struct Generated {
  TransformRequest request;
  std::vector<std::string> components;  // every hostile component used
  std::vector<std::string> samples;     // paths to evaluate
};

std::string child(Rng& rng, const std::string& parent, Generated& g) {
  std::string comp = hostile_component(rng);
  g.components.push_back(comp);
  return (parent == "/" ? "" : parent) + "/" + comp;
}

Generated generate(Rng& rng) {
  Generated g;
  ResolvedPolicy& p = g.request.policy;
  const std::string base = rng.coin() ? "/Users/me" : "/tmp";
  if (rng.coin()) p.rules.push_back({"/", rng.below(4) == 0 ? Access::kWrite : Access::kRead});
  const std::size_t roots = 1 + rng.below(3);
  for (std::size_t r = 0; r < roots; ++r) {
    const std::string root = child(rng, base, g);
    p.rules.push_back({root, Access::kWrite});
    std::string inner = root;
    for (std::size_t k = rng.below(3); k > 0; --k) {
      inner = child(rng, inner, g);
      if (rng.coin()) p.rules.push_back({inner, rng.coin() ? Access::kDeny : Access::kRead});
    }
    const std::string prot = child(rng, rng.coin() ? root : inner, g);
    p.protected_paths.push_back({prot, root, rng.coin(), true});
    g.samples.insert(g.samples.end(), {root, inner, prot, prot + "/x", prot + "x", inner + "/f",
                                       root + "/f", base + "/other"});
  }
  if (rng.coin()) p.rules.push_back({child(rng, base, g), Access::kDeny});
  // ":minimal" with rules inside one of its locations (/etc is /private/etc there): a deny,
  // sometimes a read below it and a deny below that. The platform's own grant covers the rest.
  p.platform_defaults_readable = rng.coin();
  if (rng.coin()) {
    const std::string denied = child(rng, "/etc", g);
    p.rules.push_back({denied, Access::kDeny});
    std::string inner = denied;
    if (rng.coin()) {
      inner = child(rng, denied, g);
      p.rules.push_back({inner, Access::kRead});
      if (rng.coin()) p.rules.push_back({child(rng, inner, g), Access::kDeny});
    }
    g.samples.insert(g.samples.end(), {denied + "/f", inner + "/f", "/etc/zq-other"});
  }
  std::sort(p.rules.begin(), p.rules.end(), [](const PathRule& a, const PathRule& b) {
    const auto depth = [](const std::string& s) { return std::count(s.begin(), s.end(), '/'); };
    return std::make_pair(depth(a.path), a.path) < std::make_pair(depth(b.path), b.path);
  });
  for (const PathRule& r : p.rules) g.samples.push_back(r.path);
  if (rng.coin()) p.network.unix_sockets.push_back(child(rng, "/Users/me", g));
  p.network.mode = rng.coin() ? NetworkMode::kRestricted : NetworkMode::kProxy;
  p.network.proxy_ports = {static_cast<std::uint16_t>(1024 + rng.below(60000))};
  g.request.argv = {"/bin/sh", "-c", hostile_component(rng)};
  g.request.cwd = "/Users/me";
  return g;
}

// --- expected semantics, straight from types.hpp --------------------------------------------

// Readable: the most specific rule decides; with no rule at all, ":minimal" (when reads are
// restricted, its only use) grants its locations, of which the generator only uses /etc.
bool expect_read(const ResolvedPolicy& p, const std::string& path) {
  const bool any_rule = std::any_of(p.rules.begin(), p.rules.end(), [&](const PathRule& r) {
    return path_is_within(path, r.path);
  });
  if (any_rule) return rule_access(p, path) != Access::kDeny;
  return p.platform_defaults_readable && reads_restricted(p) && path_is_within(path, "/etc");
}

bool covered_by_protected(const ResolvedPolicy& p, const std::string& path) {
  for (const auto& pp : p.protected_paths)
    if (path_is_within(path, pp.path)) return true;
  return false;
}

bool expect_write(const ResolvedPolicy& p, const std::string& path) {
  return rule_access(p, path) == Access::kWrite && !covered_by_protected(p, path);
}

// A writable path may be unlinked/renamed unless it is a writable root or a directory between a
// writable root and a carve-out (a narrower non-write rule or a protected path) below it.
bool expect_unlink(const ResolvedPolicy& p, const std::string& path) {
  if (!expect_write(p, path)) return false;
  const auto roots = writable_roots(p);
  if (std::find(roots.begin(), roots.end(), path) != roots.end()) return false;
  std::vector<std::string> carved;
  for (const auto& r : p.rules)
    if (r.access != Access::kWrite) carved.push_back(r.path);
  for (const auto& pp : p.protected_paths) carved.push_back(pp.path);
  for (const auto& c : carved)
    if (c != path && path_is_within(c, path)) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------

std::map<std::string, std::string> param_map(const seatbelt::Profile& profile) {
  std::map<std::string, std::string> out;
  for (const auto& prm : profile.params) out[prm.key] = prm.value;
  return out;
}

void collect_param_refs(const Node& n, std::set<std::string>& refs) {
  if (n.is_call("param") && n.children.size() == 2) refs.insert(n.children[1].text);
  for (const Node& c : n.children) collect_param_refs(c, refs);
}

void collect_regexes(const std::vector<Node>& nodes, std::vector<std::string>& out) {
  for (const Node& n : nodes) {
    if (n.kind == Node::Kind::kRegex) out.push_back(n.text);
    collect_regexes(n.children, out);
  }
}

void check_one(const Generated& g, int iteration) {
  const ResolvedPolicy& p = g.request.policy;
  auto profile = seatbelt::build_profile(p, g.request.env);
  ASSERT_TRUE(profile.ok()) << "iteration " << iteration << ": " << profile.error();
  const std::string& text = profile->text;

  // No path is spelled in the text: outside regex literals nothing path-derived appears at all
  // (checked below), and a protected path's own escaped regex holds neither its spelling nor
  // its last (hostile) component. (Another path's escape may coincide with a spelling, e.g.
  // "zq " escaped is "zq[ ]", which contains the path "zq[ " -- that is no leak.)
  for (const auto& pp : p.protected_paths) {
    const std::string mac = seatbelt::macos_canonical_path(pp.path);
    const std::string r = seatbelt::subtree_regex_for_path(mac);
    const std::string last = pp.path.substr(pp.path.rfind('/') + 1);
    ASSERT_EQ(r.find(mac), std::string::npos) << "iteration " << iteration << " leaked " << mac;
    ASSERT_EQ(r.find(last), std::string::npos) << "iteration " << iteration << " leaked " << last;
  }
  for (const std::string& sock : p.network.unix_sockets)
    ASSERT_EQ(text.find(sock), std::string::npos)
        << "iteration " << iteration << " leaked " << sock;

  // The text is printable ASCII and newlines only: no non-ASCII byte (UTF-8 or not), no
  // control character.
  for (char ch : text)
    ASSERT_TRUE(ch == '\n' || (ch >= 0x20 && ch < 0x7F))
        << "iteration " << iteration << ": byte "
        << static_cast<int>(static_cast<unsigned char>(ch));

  std::vector<Node> forms;
  seatbelt::testing::SexprReader reader(text);
  ASSERT_TRUE(reader.read_all(forms)) << "iteration " << iteration << ": " << reader.error();

  // Outside regex literals nothing derived from a path appears at all ("zq" starts every
  // generated component); inside, only the escaped protected paths, each matching its path.
  std::set<std::string> allowed_regexes;
  for (const auto& pp : p.protected_paths)
    allowed_regexes.insert(
        seatbelt::subtree_regex_for_path(seatbelt::macos_canonical_path(pp.path)));
  std::vector<std::string> literals;
  collect_regexes(forms, literals);
  std::string outside = text;
  for (std::size_t at = outside.find("#\""); at != std::string::npos;
       at = outside.find("#\"", at)) {
    const std::size_t end = outside.find('"', at + 2);
    outside.erase(at, end + 1 - at);
  }
  ASSERT_EQ(outside.find("zq"), std::string::npos) << "iteration " << iteration;
  for (const std::string& r : literals) {
    if (r.find("zq") == std::string::npos) continue;  // a constant regex of the base policy
    ASSERT_TRUE(allowed_regexes.count(r)) << "unexpected path-derived regex " << r;
  }
  for (const auto& pp : p.protected_paths) {
    const std::string mac = seatbelt::macos_canonical_path(pp.path);
    const std::string r = seatbelt::subtree_regex_for_path(mac);
    for (auto dialect : {std::regex::extended, std::regex::ECMAScript}) {
      const std::regex re(r, dialect);
      EXPECT_TRUE(std::regex_search(mac, re)) << r;
      EXPECT_TRUE(std::regex_search(mac + "/zq \"x", re)) << r;
      // A non-ASCII run is "one or more" bytes, so with one the regex may also take a longer
      // sibling name (superset, fail-closed); without one it is exact.
      const bool has_run = std::any_of(
          mac.begin(), mac.end(), [](char ch) { return static_cast<unsigned char>(ch) >= 0x80; });
      if (!has_run) {
        EXPECT_FALSE(std::regex_search(mac + "x", re)) << r;
      }
      EXPECT_FALSE(std::regex_search(pp.writable_root + "/elsewhere", re)) << r;
    }
  }

  const auto params = param_map(*profile);
  std::set<std::string> refs;
  for (const Node& f : forms) collect_param_refs(f, refs);
  for (const auto& [key, value] : params) {
    EXPECT_TRUE(refs.count(key)) << "unused parameter " << key;
    EXPECT_TRUE(std::regex_match(key, std::regex("[A-Z0-9_]+"))) << key;
  }
  for (const auto& r : refs) EXPECT_TRUE(params.count(r)) << "unbound parameter " << r;

  std::set<std::string> values;
  for (const auto& kv : params) values.insert(kv.second);
  for (const auto& r : p.rules) {
    if (r.path != "/" && r.access == Access::kWrite) {
      EXPECT_TRUE(values.count(seatbelt::macos_canonical_path(r.path))) << r.path;
    }
  }
  for (const auto& pp : p.protected_paths)
    EXPECT_TRUE(values.count(seatbelt::macos_canonical_path(pp.path))) << pp.path;
  for (const auto& s : p.network.unix_sockets) EXPECT_TRUE(values.count(s)) << s;

  // The protected-name regexes match a superset where a path's bytes cannot be spelled exactly
  // (non-ASCII runs, `"`, `\`, control bytes): a path they catch beyond the exact semantics
  // loses write access (fail-closed) and nothing else.
  std::vector<std::regex> protected_regexes;
  for (const auto& pp : p.protected_paths)
    protected_regexes.emplace_back(
        seatbelt::subtree_regex_for_path(seatbelt::macos_canonical_path(pp.path)),
        std::regex::extended);
  const auto caught_by_regex = [&](const std::string& mac) {
    return std::any_of(protected_regexes.begin(), protected_regexes.end(),
                       [&](const std::regex& re) { return std::regex_search(mac, re); });
  };

  seatbelt::testing::SbplEvaluator eval(forms, params);
  for (const std::string& path : g.samples) {
    const std::string mac = seatbelt::macos_canonical_path(path);
    const bool superset = caught_by_regex(mac);
    EXPECT_EQ(eval.allows("file-read-data", mac), expect_read(p, path))
        << "read " << path << " (iteration " << iteration << ")";
    EXPECT_EQ(eval.allows("file-write-create", mac), expect_write(p, path) && !superset)
        << "write " << path << " (iteration " << iteration << ")";
    if (path == "/") continue;  // "/" cannot be renamed or removed; no guard is emitted for it
    EXPECT_EQ(eval.allows("file-write-unlink", mac), expect_unlink(p, path) && !superset)
        << "unlink " << path << " (iteration " << iteration << ")";
  }
}

// The ci build runs 400 generated policies. Under ASan+UBSan at -O0 this test took 47 s
// against 2.8 s (the profile evaluator's regex matching), the longest of the unit run, so
// there the first 100 of the same sequence run (same seed): the generator's branches are coin
// flips and small `below(n)` choices, each still taken dozens of times, and the fuzzers
// (tests/fuzz/seatbelt) search the same space with the sanitizers on.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kHostilePathIterations = 100;
#else
constexpr int kHostilePathIterations = 400;
#endif

TEST(SeatbeltProperty, HostilePathsStayInParametersAndSemanticsHold) {
  Rng rng(0x5EA7BE17u);
  for (int i = 0; i < kHostilePathIterations; ++i) {
    const Generated g = generate(rng);
    ASSERT_NO_FATAL_FAILURE(check_one(g, i));
    if (::testing::Test::HasFailure()) return;  // one failing iteration is enough to report
  }
}

// The plan passes every parameter as one argv element and the command untouched after "--".
TEST(SeatbeltProperty, ArgvCarriesParametersAndCommandIntact) {
  Rng rng(42);
  for (int i = 0; i < 100; ++i) {
    const Generated g = generate(rng);
    auto plan = seatbelt::build_exec_plan(g.request);
    ASSERT_TRUE(plan.ok()) << plan.error();
    const auto& argv = plan->argv;
    ASSERT_EQ(argv[0], "/usr/bin/sandbox-exec");
    ASSERT_EQ(argv[1], "-p");
    const auto dashdash = std::find(argv.begin(), argv.end(), "--");
    ASSERT_NE(dashdash, argv.end());
    EXPECT_EQ(std::vector<std::string>(dashdash + 1, argv.end()), g.request.argv);
    auto profile = seatbelt::build_profile(g.request.policy, g.request.env);
    std::vector<std::string> expected_defs;
    for (const auto& prm : profile->params)
      expected_defs.push_back("-D" + prm.key + "=" + prm.value);
    EXPECT_EQ(std::vector<std::string>(argv.begin() + 3, dashdash), expected_defs);
  }
}

}  // namespace
