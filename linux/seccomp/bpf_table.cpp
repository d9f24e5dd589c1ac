// The compact syscall table and its proof (bpf_table.hpp).
#include "bpf_table.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace sbx::stage2::bpf {
namespace {

// The instructions of the strict subset (linux/bpf_common.h names).
constexpr std::uint16_t kLoadWord = BPF_LD | BPF_W | BPF_ABS;
constexpr std::uint16_t kJumpAlways = BPF_JMP | BPF_JA;
constexpr std::uint16_t kJumpEqual = BPF_JMP | BPF_JEQ | BPF_K;
constexpr std::uint16_t kJumpGreater = BPF_JMP | BPF_JGT | BPF_K;
constexpr std::uint16_t kJumpGreaterEqual = BPF_JMP | BPF_JGE | BPF_K;
constexpr std::uint16_t kJumpBitsSet = BPF_JMP | BPF_JSET | BPF_K;
constexpr std::uint16_t kReturn = BPF_RET | BPF_K;

constexpr std::size_t kWords = 16;
// A's possible sources at an instruction: bit i for word i, kUnloaded for A's initial 0.
constexpr std::uint32_t kUnloaded = 1u << kWords;

bool is_comparison(std::uint16_t code) {
  return code == kJumpEqual || code == kJumpGreater || code == kJumpGreaterEqual ||
         code == kJumpBitsSet;
}

bool compare(std::uint16_t code, std::uint32_t a, std::uint32_t k) {
  switch (code) {
    case kJumpEqual:
      return a == k;
    case kJumpGreater:
      return a > k;
    case kJumpGreaterEqual:
      return a >= k;
    default:
      return (a & k) != 0;  // kJumpBitsSet, the only other comparison
  }
}

std::string at(std::size_t pc, const char* what) {
  return "instruction " + std::to_string(pc) + ": " + what;
}

// For each instruction, which words A may hold when it runs (kUnloaded: none loaded yet).
// Jumps only go forward, so one pass in program order sees every predecessor first.
std::vector<std::uint32_t> accumulator_sources(std::span<const sock_filter> program) {
  std::vector<std::uint32_t> sources(program.size(), 0);
  sources[0] = kUnloaded;
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& insn = program[pc];
    if (insn.code == kLoadWord) {
      sources[pc + 1] |= 1u << (insn.k / 4);
    } else if (insn.code == kJumpAlways) {
      sources[pc + 1 + insn.k] |= sources[pc];
    } else if (is_comparison(insn.code)) {
      sources[pc + 1 + insn.jt] |= sources[pc];
      sources[pc + 1 + insn.jf] |= sources[pc];
    }
  }
  return sources;
}

Status validate_instruction(std::span<const sock_filter> program, std::size_t pc) {
  const sock_filter& insn = program[pc];
  const std::size_t after = program.size() - pc - 1;  // instructions after this one
  switch (insn.code) {
    case kLoadWord:
      if (insn.k % 4 != 0 || insn.k >= kSeccompDataSize)
        return Error{at(pc, "load outside seccomp_data or not a whole word")};
      if (after == 0) return Error{at(pc, "the program runs off its end")};
      return {};
    case kJumpAlways:
      if (insn.k >= after) return Error{at(pc, "jump out of the program")};
      return {};
    case kJumpEqual:
    case kJumpGreater:
    case kJumpGreaterEqual:
    case kJumpBitsSet:
      if (insn.jt >= after || insn.jf >= after) return Error{at(pc, "jump out of the program")};
      return {};
    case kReturn:
      return {};
    default:
      return Error{at(pc, "not in the strict subset of classic BPF")};
  }
}

// run() without validation, for the proof's millions of runs of validated programs.
std::uint32_t run_validated(std::span<const sock_filter> program, const SeccompWords& data) {
  std::uint32_t a = 0;
  std::size_t pc = 0;
  for (;;) {
    const sock_filter& insn = program[pc];
    switch (insn.code) {
      case kLoadWord:
        a = data[insn.k / 4];
        ++pc;
        break;
      case kJumpAlways:
        pc += 1 + insn.k;
        break;
      case kReturn:
        return insn.k;
      default:
        pc += 1u + (compare(insn.code, a, insn.k) ? insn.jt : insn.jf);
        break;
    }
  }
}

bool uses_bit_tests(std::span<const sock_filter> program) {
  return std::any_of(program.begin(), program.end(),
                     [](const sock_filter& insn) { return insn.code == kJumpBitsSet; });
}

// ---- Partial evaluation: the program with some words of seccomp_data fixed.

// A fixed word, or "unknown".
struct KnownWords {
  std::array<bool, kWords> known{};
  SeccompWords value{};
};

// What A holds at a point of the partial evaluation: a constant, or the unknown word `word`.
struct Accumulator {
  bool known = true;  // A starts as 0
  std::uint32_t value = 0;
  std::uint32_t word = 0;
};

// A node of a residual program: a RET, or a comparison of an unknown word (which the residual
// loads right before comparing) whose successors are later nodes. The residual program is what
// is left of the original once the fixed words are substituted; two residuals that are equal
// answer alike for every value of the unknown words.
struct ResidualNode {
  bool is_return = false;
  std::uint32_t action = 0;  // is_return
  std::uint16_t code = 0;    // otherwise: the comparison, of word `word` with k
  std::uint32_t word = 0;
  std::uint32_t k = 0;
  std::size_t if_true = 0;  // node indices, always greater than this node's
  std::size_t if_false = 0;
  bool operator==(const ResidualNode&) const = default;
};
using Residual = std::vector<ResidualNode>;  // [0] is the entry

// Follows the program from (pc, a) through every step that the fixed words decide, up to a
// RET or a comparison of an unknown word.
std::pair<std::size_t, Accumulator> settle(std::span<const sock_filter> program,
                                           const KnownWords& fixed, std::size_t pc, Accumulator a) {
  for (;;) {
    const sock_filter& insn = program[pc];
    if (insn.code == kLoadWord) {
      const std::uint32_t word = insn.k / 4;
      a = fixed.known[word] ? Accumulator{true, fixed.value[word], 0} : Accumulator{false, 0, word};
      ++pc;
    } else if (insn.code == kJumpAlways) {
      pc += 1 + insn.k;
    } else if (is_comparison(insn.code) && a.known) {
      pc += 1u + (compare(insn.code, a.value, insn.k) ? insn.jt : insn.jf);
    } else {
      return {pc, a};
    }
  }
}

Residual specialise(std::span<const sock_filter> program, const KnownWords& fixed) {
  // Nodes are keyed by (pc, unknown word compared; 0 for a RET): the same instruction reached
  // with A holding the same unknown word behaves the same. Keys ordered by pc are in
  // topological order (jumps go forward), which makes the entry node 0.
  std::map<std::pair<std::size_t, std::uint32_t>, std::pair<std::size_t, Accumulator>> nodes;
  std::vector<std::pair<std::size_t, Accumulator>> pending = {settle(program, fixed, 0, {})};
  const auto key = [](const std::pair<std::size_t, Accumulator>& s) {
    return std::make_pair(s.first, s.second.known ? 0u : s.second.word);
  };
  while (!pending.empty()) {
    const std::pair<std::size_t, Accumulator> state = pending.back();
    pending.pop_back();
    if (!nodes.emplace(key(state), state).second) continue;
    const sock_filter& insn = program[state.first];
    if (insn.code == kReturn) continue;
    pending.push_back(settle(program, fixed, state.first + 1 + insn.jt, state.second));
    pending.push_back(settle(program, fixed, state.first + 1 + insn.jf, state.second));
  }
  std::map<std::pair<std::size_t, std::uint32_t>, std::size_t> index;
  for (const auto& [k, state] : nodes) index.emplace(k, index.size());
  Residual residual;
  for (const auto& [k, state] : nodes) {
    const sock_filter& insn = program[state.first];
    ResidualNode node;
    if (insn.code == kReturn) {
      node.is_return = true;
      node.action = insn.k;
    } else {
      node.code = insn.code;
      node.word = state.second.word;
      node.k = insn.k;
      node.if_true = index.at(key(settle(program, fixed, state.first + 1 + insn.jt, state.second)));
      node.if_false =
          index.at(key(settle(program, fixed, state.first + 1 + insn.jf, state.second)));
    }
    residual.push_back(node);
  }
  return residual;
}

// For each node of a residual, the word A surely holds on entry (-1: not known). The entry is
// reached from the search over the syscall number, so A holds nr there; a comparison leaves A
// as it is, so a node whose predecessors all compare the same word needs no load.
std::vector<std::int64_t> words_held(const Residual& residual) {
  constexpr std::int64_t kUnvisited = -2;
  std::vector<std::int64_t> held(residual.size(), kUnvisited);
  held[0] = kNrOffset / 4;
  for (std::size_t n = 0; n < residual.size(); ++n) {
    const ResidualNode& node = residual[n];
    if (node.is_return) continue;
    for (std::size_t next : {node.if_true, node.if_false}) {
      const std::int64_t word = node.word;
      held[next] = held[next] == kUnvisited || held[next] == word ? word : -1;
    }
  }
  return held;
}

// ---- Emitting a program with symbolic jump targets.

class Emitter {
 public:
  int new_label() {
    positions_.push_back(kUnplaced);
    return static_cast<int>(positions_.size() - 1);
  }
  void place(int label) { positions_[static_cast<std::size_t>(label)] = code_.size(); }
  void load(std::uint32_t word) { code_.push_back({{kLoadWord, 0, 0, word * 4}, -1, -1}); }
  void jump(int label) { code_.push_back({{kJumpAlways, 0, 0, 0}, label, -1}); }
  void compare(std::uint16_t code, std::uint32_t k, int if_true, int if_false) {
    code_.push_back({{code, 0, 0, k}, if_true, if_false});
  }
  void ret(std::uint32_t action) { code_.push_back({{kReturn, 0, 0, action}, -1, -1}); }

  // The program, every jump resolved: forward and, for conditionals, within 8 bits.
  Result<std::vector<sock_filter>> finish() const {
    std::vector<sock_filter> out;
    for (std::size_t pc = 0; pc < code_.size(); ++pc) {
      sock_filter insn = code_[pc].insn;
      Result<std::uint32_t> t = offset(pc, code_[pc].target_true);
      Result<std::uint32_t> f = offset(pc, code_[pc].target_false);
      if (!t.ok()) return t.failure();
      if (!f.ok()) return f.failure();
      if (insn.code == kJumpAlways) {
        insn.k = *t;
      } else if (is_comparison(insn.code)) {
        if (*t > 255 || *f > 255) return Error{at(pc, "conditional jump beyond 255 instructions")};
        insn.jt = static_cast<std::uint8_t>(*t);
        insn.jf = static_cast<std::uint8_t>(*f);
      }
      out.push_back(insn);
    }
    return out;
  }

 private:
  static constexpr std::size_t kUnplaced = ~std::size_t{0};
  struct Pending {
    sock_filter insn;
    int target_true;   // or JA's target; -1: none
    int target_false;  // -1: none
  };

  Result<std::uint32_t> offset(std::size_t pc, int label) const {
    if (label < 0) return 0u;
    const std::size_t target = positions_[static_cast<std::size_t>(label)];
    if (target == kUnplaced || target <= pc) return Error{at(pc, "jump to an unplaced label")};
    return static_cast<std::uint32_t>(target - pc - 1);
  }

  std::vector<Pending> code_;
  std::vector<std::size_t> positions_;
};

// A run of syscall numbers [start, next run's start) with one residual program.
struct Run {
  std::uint32_t start;
  std::size_t residual;  // index into the distinct residuals
};

struct TableShape {
  std::uint32_t foreign_action = 0;
  std::vector<Residual> residuals;  // distinct
  std::vector<Run> runs;            // ascending, the first starting at 0
};

std::size_t intern(std::vector<Residual>& distinct, Residual residual) {
  const auto found = std::find(distinct.begin(), distinct.end(), residual);
  if (found != distinct.end()) return static_cast<std::size_t>(found - distinct.begin());
  distinct.push_back(std::move(residual));
  return distinct.size() - 1;
}

// The table as a function of (arch, nr), read off libseccomp's program.
Result<TableShape> shape_of(std::span<const sock_filter> table, std::uint32_t native_arch) {
  TableShape shape;
  bool have_foreign = false;
  for (std::uint32_t arch : boundary_points(table, kArchOffset)) {
    if (arch == native_arch) continue;
    KnownWords fixed;
    fixed.known[kArchOffset / 4] = true;
    fixed.value[kArchOffset / 4] = arch;
    const Residual residual = specialise(table, fixed);
    if (residual.size() != 1 || !residual[0].is_return ||
        (have_foreign && residual[0].action != shape.foreign_action))
      return Error{
          "the table's answer for a foreign architecture depends on more than the "
          "architecture"};
    shape.foreign_action = residual[0].action;
    have_foreign = true;
  }
  // Each boundary point p starts a run of numbers the program cannot tell apart from p (up to
  // the next point): specialising at p gives the residual of the whole run.
  for (std::uint32_t nr : boundary_points(table, kNrOffset)) {
    KnownWords fixed;
    fixed.known[kArchOffset / 4] = fixed.known[kNrOffset / 4] = true;
    fixed.value[kArchOffset / 4] = native_arch;
    fixed.value[kNrOffset / 4] = nr;
    const std::size_t residual = intern(shape.residuals, specialise(table, fixed));
    if (shape.runs.empty() || shape.runs.back().residual != residual)
      shape.runs.push_back({nr, residual});
  }
  return shape;
}

// The binary search over runs[lo..hi] (hi > lo): JGE on the first number of the upper half.
void emit_search(Emitter& out, const std::vector<Run>& runs, std::size_t lo, std::size_t hi,
                 const std::vector<int>& leaf_of_residual) {
  const std::size_t mid = lo + (hi - lo + 1) / 2;
  const auto target = [&](std::size_t a, std::size_t b) {
    return a == b ? leaf_of_residual[runs[a].residual] : out.new_label();
  };
  const int upper = target(mid, hi);
  const int lower = target(lo, mid - 1);
  out.compare(kJumpGreaterEqual, runs[mid].start, upper, lower);
  if (mid - 1 > lo) {
    out.place(lower);
    emit_search(out, runs, lo, mid - 1, leaf_of_residual);
  }
  if (hi > mid) {
    out.place(upper);
    emit_search(out, runs, mid, hi, leaf_of_residual);
  }
}

}  // namespace

Status validate(std::span<const sock_filter> program) {
  if (program.empty() || program.size() > BPF_MAXINSNS)
    return Error{"a program has 1 to " + std::to_string(BPF_MAXINSNS) + " instructions, not " +
                 std::to_string(program.size())};
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    Status s = validate_instruction(program, pc);
    if (!s.ok()) return s;
  }
  const std::vector<std::uint32_t> sources = accumulator_sources(program);
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    // A comparison with A's initial 0 would be a constant the proof does not model.
    if (is_comparison(program[pc].code) && (sources[pc] & kUnloaded) != 0)
      return Error{at(pc, "comparison before any load")};
  }
  return {};
}

Result<std::uint32_t> run(std::span<const sock_filter> program, const SeccompWords& data) {
  Status s = validate(program);
  if (!s.ok()) return s.failure();
  return run_validated(program, data);
}

Result<std::vector<std::uint32_t>> run_each(std::span<const sock_filter> program,
                                            std::span<const SeccompWords> inputs) {
  Status s = validate(program);
  if (!s.ok()) return s.failure();
  std::vector<std::uint32_t> answers;
  answers.reserve(inputs.size());
  for (const SeccompWords& data : inputs) answers.push_back(run_validated(program, data));
  return answers;
}

std::vector<std::uint32_t> boundary_points(std::span<const sock_filter> program,
                                           std::uint32_t offset) {
  std::vector<std::uint32_t> points = {0, 0xffffffffu};
  if (validate(program).ok()) {
    const std::vector<std::uint32_t> sources = accumulator_sources(program);
    for (std::size_t pc = 0; pc < program.size(); ++pc) {
      const std::uint32_t k = program[pc].k;
      if (!is_comparison(program[pc].code) || (sources[pc] & (1u << (offset / 4))) == 0) continue;
      points.push_back(k);
      if (k > 0) points.push_back(k - 1);
      if (k < 0xffffffffu) points.push_back(k + 1);
    }
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
}

Result<std::vector<sock_filter>> compact_table(std::span<const sock_filter> table,
                                               std::uint32_t native_arch) {
  Status s = validate(table);
  if (!s.ok()) return s.failure().prefixed("libseccomp's table: ");
  // The runs below are intervals of numbers; a bit test's cases are not.
  if (uses_bit_tests(table)) return Error{"libseccomp's table tests bits (JSET)"};
  Result<TableShape> shape = shape_of(table, native_arch);
  if (!shape.ok()) return shape.failure();

  Emitter out;
  std::map<std::uint32_t, int> return_of_action;
  const auto ret_label = [&](std::uint32_t action) {
    const auto [it, added] = return_of_action.emplace(action, 0);
    if (added) it->second = out.new_label();
    return it->second;
  };
  // Leaves: a residual that is a RET is that shared RET; any other gets a block of its own.
  std::vector<int> leaf_of_residual;
  for (const Residual& residual : shape->residuals)
    leaf_of_residual.push_back(residual[0].is_return ? ret_label(residual[0].action)
                                                     : out.new_label());

  const int native = out.new_label();
  out.load(kArchOffset / 4);
  out.compare(kJumpEqual, native_arch, native, ret_label(shape->foreign_action));
  out.place(native);
  out.load(kNrOffset / 4);
  if (shape->runs.size() == 1)
    out.jump(leaf_of_residual[shape->runs[0].residual]);
  else
    emit_search(out, shape->runs, 0, shape->runs.size() - 1, leaf_of_residual);

  for (std::size_t r = 0; r < shape->residuals.size(); ++r) {
    const Residual& residual = shape->residuals[r];
    if (residual[0].is_return) continue;
    std::vector<int> label_of_node;
    for (const ResidualNode& node : residual)
      label_of_node.push_back(node.is_return ? ret_label(node.action) : out.new_label());
    label_of_node[0] = leaf_of_residual[r];
    const std::vector<std::int64_t> held = words_held(residual);
    for (std::size_t n = 0; n < residual.size(); ++n) {
      const ResidualNode& node = residual[n];
      if (node.is_return) continue;
      out.place(label_of_node[n]);
      if (held[n] != node.word) out.load(node.word);
      out.compare(node.code, node.k, label_of_node[node.if_true], label_of_node[node.if_false]);
    }
  }
  for (const auto& [action, label] : return_of_action) {
    out.place(label);
    out.ret(action);
  }
  Result<std::vector<sock_filter>> program = out.finish();
  if (!program.ok()) return program;
  s = validate(*program);
  if (!s.ok()) return s.failure().prefixed("the compact table: ");
  return program;
}

Status prove_equivalent(std::span<const sock_filter> a, std::span<const sock_filter> b,
                        std::uint64_t max_points) {
  for (std::span<const sock_filter> program : {a, b}) {
    Status s = validate(program);
    if (!s.ok()) return s;
    if (uses_bit_tests(program)) return Error{"the proof covers comparisons, not bit tests (JSET)"};
  }
  // The words either program loads, each with its boundary points from both programs.
  std::vector<std::uint32_t> words;
  std::vector<std::vector<std::uint32_t>> points;
  std::uint64_t product = 1;
  for (std::uint32_t word = 0; word < kWords; ++word) {
    const auto loads = [word](const sock_filter& insn) {
      return insn.code == kLoadWord && insn.k == word * 4;
    };
    if (std::none_of(a.begin(), a.end(), loads) && std::none_of(b.begin(), b.end(), loads))
      continue;
    std::vector<std::uint32_t> p = boundary_points(a, word * 4);
    const std::vector<std::uint32_t> from_b = boundary_points(b, word * 4);
    p.insert(p.end(), from_b.begin(), from_b.end());
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    product *= p.size();
    if (product > max_points)
      return Error{"more than " + std::to_string(max_points) + " points to compare"};
    words.push_back(word);
    points.push_back(std::move(p));
  }
  // Every combination, as an odometer over the words' points.
  std::vector<std::size_t> digit(words.size(), 0);
  SeccompWords data{};
  for (;;) {
    for (std::size_t i = 0; i < words.size(); ++i) data[words[i]] = points[i][digit[i]];
    const std::uint32_t answer_a = run_validated(a, data);
    const std::uint32_t answer_b = run_validated(b, data);
    if (answer_a != answer_b) {
      std::string where;
      char buf[48];
      for (std::uint32_t word : words) {
        std::snprintf(buf, sizeof buf, " [%u]=0x%x", word * 4, data[word]);
        where += buf;
      }
      std::snprintf(buf, sizeof buf, ": 0x%x against 0x%x", answer_a, answer_b);
      return Error{"the programs differ at" + where + buf};
    }
    std::size_t i = 0;
    while (i < words.size() && ++digit[i] == points[i].size()) digit[i++] = 0;
    if (i == words.size()) return {};
  }
}

}  // namespace sbx::stage2::bpf
