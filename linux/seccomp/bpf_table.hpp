// The compact syscall table: a shorter classic-BPF program with exactly the behaviour of the
// table libseccomp builds (seccomp_filter.hpp, filter 1), and the means to prove that it has.
//
// Why: the kernel's cost of attaching a seccomp program grows with its length (conversion to
// eBPF, JIT, and the emulation it runs at attach time to fill the per-syscall action cache), and
// every sandboxed run attaches the table. libseccomp's binary tree tests almost every listed
// number on its own (about 420 instructions on x86_64), yet as a function of the syscall number
// the table has only some 70 runs of equal action and three actions. A balanced binary search
// over those runs, whose leaves jump to shared RET instructions, is about a fifth of the length.
//
// Nothing here trusts a hand-written description of the filter: the compact program is derived
// by interpreting libseccomp's own program (a partial evaluation with the architecture and the
// syscall number fixed), and it is kept only if prove_equivalent() shows that both programs
// answer alike for every possible seccomp_data. sbx-seccomp-gen does both at build time and
// fails the build otherwise.
//
// The programs accepted are a strict subset of classic BPF, the one libseccomp emits for a
// table: LD W ABS (a 32-bit word of seccomp_data), JA, JEQ/JGT/JGE/JSET against a constant, and
// RET of a constant. Anything else (ALU, index register, scratch memory, RET A, reads outside
// seccomp_data, jumps out of the program) is refused, so the interpreter can never disagree
// with the kernel about what an instruction does.
//
// Pure code: no system call, no libseccomp. Used by sbx-seccomp-gen and by tests.
#pragma once

#include <linux/filter.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2::bpf {

// struct seccomp_data as the 16 32-bit words a BPF program can load (LD W ABS offset / 4): nr
// (offset 0), arch (4), instruction_pointer (8, 12), args[i] (16 + 8i and 20 + 8i; which of the
// two is the low half depends on the byte order).
using SeccompWords = std::array<std::uint32_t, 16>;

inline constexpr std::uint32_t kNrOffset = 0;
inline constexpr std::uint32_t kArchOffset = 4;
inline constexpr std::uint32_t kSeccompDataSize = 64;

// Success if `program` is in the strict subset above: every instruction known, every load a
// whole word inside seccomp_data, every jump inside the program, no path running off its end,
// no comparison before the first load.
Status validate(std::span<const sock_filter> program);

// What `program` answers for `data` (a SECCOMP_RET_* value), as the kernel would run it.
// Refuses a program validate() refuses.
Result<std::uint32_t> run(std::span<const sock_filter> program, const SeccompWords& data);

// The same for many inputs, the program validated once.
Result<std::vector<std::uint32_t>> run_each(std::span<const sock_filter> program,
                                            std::span<const SeccompWords> inputs);

// The compact equivalent of libseccomp's syscall table `table`, for a process whose audit
// architecture is `native_arch`: arch check, a binary search over the runs of equal behaviour
// of the syscall number, shared RETs. Calls whose answer depends on more than the number (e.g.
// personality(), allowed for some argument values) keep the argument tests of libseccomp's
// program, re-emitted at the leaf of their number. Error if `table` is not in the strict subset,
// if its answer for a foreign architecture depends on anything, or if a jump would not fit in
// 8 bits. The result is not yet proven: call prove_equivalent().
Result<std::vector<sock_filter>> compact_table(std::span<const sock_filter> table,
                                               std::uint32_t native_arch);

// Success if `a` and `b` answer alike for every seccomp_data. A complete check, not a sample:
// both programs only compare loaded words with constants, so each answers the same for all
// values of a word between two consecutive constants it is compared with; both are run on the
// product, over every word either program loads, of one value of each such piece (0, each
// constant k, k - 1, k + 1 and 0xffffffff). Error names the first input they disagree on.
// Refused (error) for programs that test bits (JSET: its pieces are not intervals) or whose
// product of pieces would exceed `max_points`.
Status prove_equivalent(std::span<const sock_filter> a, std::span<const sock_filter> b,
                        std::uint64_t max_points = 50'000'000);

// Every value a proof above would try for the word at `offset` of `program` (sorted, distinct):
// for tests that want to run the programs on their own.
std::vector<std::uint32_t> boundary_points(std::span<const sock_filter> program,
                                           std::uint32_t offset);

}  // namespace sbx::stage2::bpf
