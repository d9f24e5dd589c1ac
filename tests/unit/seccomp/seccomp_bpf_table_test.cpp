// The compact syscall table (bpf_table.hpp): the strict classic-BPF interpreter on programs
// small enough to check by hand, the equivalence proof (it must accept equal programs and name
// the input where two differ), the compaction of libseccomp's table for every network mode
// (proven, densely cross-checked, and much shorter), and the compact table loaded on its own in
// a forked child, where the kernel must give the answers the interpreter predicts.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "bpf_table.hpp"
#include "filtered_child.hpp"
#include "seccomp_filter.hpp"
#include "seccomp_programs.hpp"

// Named, not anonymous: the unit tests of this directory are built as one unity source.
namespace sbx_bpf_table_test {

namespace bpf = sbx::stage2::bpf;
using sbx::stage2::NetworkFilter;
using sbx_seccomp_test::raw;

constexpr NetworkFilter kEveryMode[] = {NetworkFilter::kBlocked, NetworkFilter::kOpen,
                                        NetworkFilter::kProxy, NetworkFilter::kPrivate,
                                        NetworkFilter::kPrivateUnixSupervised};
constexpr std::uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr std::uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr std::uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;
constexpr std::uint32_t kArch = 0xc000003eu;  // any audit arch will do for the tiny programs

sock_filter ld(std::uint32_t offset) { return {BPF_LD | BPF_W | BPF_ABS, 0, 0, offset}; }
sock_filter jmp(std::uint16_t op, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
  return {static_cast<std::uint16_t>(BPF_JMP | op | BPF_K), jt, jf, k};
}
sock_filter ja(std::uint32_t k) { return {BPF_JMP | BPF_JA, 0, 0, k}; }
sock_filter ret(std::uint32_t action) { return {BPF_RET | BPF_K, 0, 0, action}; }

bpf::SeccompWords call(std::uint32_t nr, std::uint32_t arch = kArch, std::uint32_t arg0 = 0,
                       std::uint32_t arg0_high = 0) {
  bpf::SeccompWords data{};
  data[0] = nr;
  data[1] = arch;
  data[4] = arg0;       // args[0]: offset 16
  data[5] = arg0_high;  // offset 20
  return data;
}

std::uint32_t answer(const std::vector<sock_filter>& program, const bpf::SeccompWords& data) {
  sbx::Result<std::uint32_t> r = bpf::run(program, data);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? *r : 0xdeadbeefu;
}

// A table in the shape libseccomp gives one: arch check, then number tests; 1 and 3 allowed,
// 2 refused, personality-like 7 allowed only for argument 0 or 8, the rest ENOSYS.
std::vector<sock_filter> tiny_table() {
  return {
      ld(4),                      // 0
      jmp(BPF_JEQ, kArch, 1, 0),  // 1
      ret(kKill),                 // 2
      ld(0),                      // 3
      jmp(BPF_JEQ, 1, 6, 0),      // 4 -> 11 allow
      jmp(BPF_JEQ, 3, 5, 0),      // 5 -> 11 allow
      jmp(BPF_JEQ, 2, 6, 0),      // 6 -> 13 eperm
      jmp(BPF_JEQ, 7, 0, 4),      // 7 -> 12 enosys
      ld(16),                     // 8
      jmp(BPF_JEQ, 0, 1, 0),      // 9 -> 11 allow
      jmp(BPF_JEQ, 8, 0, 1),      // 10 -> 12 enosys
      ret(kAllow),                // 11
      ret(kEnosys),               // 12
      ret(kEperm),                // 13
  };
}

// ---- The interpreter.

TEST(BpfTable, InterpreterRunsEachInstructionAsTheKernelDoes) {
  EXPECT_EQ(answer({ret(kAllow)}, call(0)), kAllow);
  // JEQ, JGT and JGE at their edges (unsigned 32-bit comparisons).
  const std::vector<sock_filter> gt = {ld(0), jmp(BPF_JGT, 10, 0, 1), ret(kAllow), ret(kEperm)};
  EXPECT_EQ(answer(gt, call(10)), kEperm);
  EXPECT_EQ(answer(gt, call(11)), kAllow);
  EXPECT_EQ(answer(gt, call(0xffffffffu)), kAllow);
  const std::vector<sock_filter> ge = {ld(0), jmp(BPF_JGE, 10, 0, 1), ret(kAllow), ret(kEperm)};
  EXPECT_EQ(answer(ge, call(9)), kEperm);
  EXPECT_EQ(answer(ge, call(10)), kAllow);
  const std::vector<sock_filter> eq = {ld(4), jmp(BPF_JEQ, kArch, 0, 1), ret(kAllow), ret(kKill)};
  EXPECT_EQ(answer(eq, call(5, kArch)), kAllow);
  EXPECT_EQ(answer(eq, call(5, kArch + 1)), kKill);
  const std::vector<sock_filter> set = {ld(16), jmp(BPF_JSET, 0x6, 0, 1), ret(kEperm), ret(kAllow)};
  EXPECT_EQ(answer(set, call(0, kArch, 0x1)), kAllow);
  EXPECT_EQ(answer(set, call(0, kArch, 0x4)), kEperm);
  // JA skips k instructions.
  const std::vector<sock_filter> skip = {ja(1), ret(kKill), ret(kAllow)};
  EXPECT_EQ(answer(skip, call(0)), kAllow);
  // The tiny table, every case.
  EXPECT_EQ(answer(tiny_table(), call(1)), kAllow);
  EXPECT_EQ(answer(tiny_table(), call(2)), kEperm);
  EXPECT_EQ(answer(tiny_table(), call(4)), kEnosys);
  EXPECT_EQ(answer(tiny_table(), call(7, kArch, 8)), kAllow);
  EXPECT_EQ(answer(tiny_table(), call(7, kArch, 9)), kEnosys);
  EXPECT_EQ(answer(tiny_table(), call(1, 0x40000003u)), kKill);
}

TEST(BpfTable, InterpreterRefusesWhatIsNotInTheStrictSubset) {
  const std::vector<std::pair<const char*, std::vector<sock_filter>>> refused = {
      {"empty", {}},
      {"ALU", {ld(0), {BPF_ALU | BPF_ADD | BPF_K, 0, 0, 1}, ret(kAllow)}},
      {"index register", {{BPF_LDX | BPF_W | BPF_IMM, 0, 0, 0}, ret(kAllow)}},
      {"RET A", {ld(0), {BPF_RET | BPF_A, 0, 0, 0}}},
      {"half-word load", {{BPF_LD | BPF_H | BPF_ABS, 0, 0, 0}, ret(kAllow)}},
      {"load past seccomp_data", {ld(64), ret(kAllow)}},
      {"unaligned load", {ld(2), ret(kAllow)}},
      {"jump out", {ld(0), jmp(BPF_JEQ, 1, 0, 1), ret(kAllow)}},
      {"JA out", {ja(1), ret(kAllow)}},
      {"runs off the end", {ld(0)}},
      {"comparison before a load", {jmp(BPF_JEQ, 0, 0, 1), ret(kAllow), ret(kKill)}},
      {"comparison with the load jumped over",
       {ja(1), ld(0), jmp(BPF_JEQ, 0, 0, 1), ret(kAllow), ret(kKill)}},
  };
  for (const auto& [name, program] : refused) {
    EXPECT_FALSE(bpf::validate(program).ok()) << name;
    EXPECT_FALSE(bpf::run(program, call(0)).ok()) << name;
  }
  EXPECT_TRUE(bpf::validate(tiny_table()).ok()) << bpf::validate(tiny_table()).error();
}

// ---- The proof.

TEST(BpfTable, ProofAcceptsEqualProgramsAndNamesWhereOthersDiffer) {
  EXPECT_TRUE(bpf::prove_equivalent(tiny_table(), tiny_table()).ok());
  // The same function by another route: JGE 1 / JGT 3 instead of JEQ 1 and 3 (2 refused
  // between them).
  const std::vector<sock_filter> same = {ld(4),
                                         jmp(BPF_JEQ, kArch, 1, 0),
                                         ret(kKill),
                                         ld(0),
                                         jmp(BPF_JGE, 1, 0, 6),  // 4: below 1 -> 11 enosys
                                         jmp(BPF_JGT, 3, 3, 0),  // 5: above 3 -> 9
                                         jmp(BPF_JEQ, 2, 6, 0),  // 6: 2 -> 13 eperm
                                         ret(kAllow),            // 7: 1 or 3
                                         ret(kKill),             // 8: unreachable
                                         jmp(BPF_JEQ, 7, 0, 1),  // 9
                                         ja(3),                  // 10 -> 14
                                         ret(kEnosys),           // 11
                                         ret(kKill),             // 12: unreachable
                                         ret(kEperm),            // 13
                                         ld(16),
                                         jmp(BPF_JEQ, 0, 2, 0),
                                         jmp(BPF_JEQ, 8, 1, 0),
                                         ret(kEnosys),
                                         ret(kAllow)};
  sbx::Status s = bpf::prove_equivalent(tiny_table(), same);
  EXPECT_TRUE(s.ok()) << s.error();
  // One number answering otherwise (5: EPERM instead of ENOSYS) is found.
  std::vector<sock_filter> differing = {ld(4),
                                        jmp(BPF_JEQ, kArch, 1, 0),
                                        ret(kKill),
                                        ld(0),
                                        jmp(BPF_JEQ, 1, 7, 0),  // 4 -> 12 allow
                                        jmp(BPF_JEQ, 3, 6, 0),  // 5 -> 12 allow
                                        jmp(BPF_JEQ, 2, 7, 0),  // 6 -> 14 eperm
                                        jmp(BPF_JEQ, 5, 6, 0),  // 7 -> 14 eperm: the difference
                                        jmp(BPF_JEQ, 7, 0, 4),  // 8 -> 13 enosys
                                        ld(16),
                                        jmp(BPF_JEQ, 0, 1, 0),
                                        jmp(BPF_JEQ, 8, 0, 1),
                                        ret(kAllow),
                                        ret(kEnosys),
                                        ret(kEperm)};
  ASSERT_TRUE(bpf::validate(differing).ok()) << bpf::validate(differing).error();
  s = bpf::prove_equivalent(tiny_table(), differing);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("[0]=0x5 [4]=0xc000003e"), std::string::npos) << s.error();
  // A difference only in an argument is found too (7 allowed for 9 as well).
  std::vector<sock_filter> argument = tiny_table();
  argument[10] = jmp(BPF_JGE, 8, 0, 1);  // 8 and above allowed, not 8 alone
  s = bpf::prove_equivalent(tiny_table(), argument);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("[16]=0x9"), std::string::npos) << s.error();
  // A program that reads the instruction pointer differs from one that does not.
  std::vector<sock_filter> ip = {ld(8), jmp(BPF_JEQ, 0x1000, 0, 1), ret(kKill)};
  const std::vector<sock_filter> tiny = tiny_table();
  ip.insert(ip.end(), tiny.begin(), tiny.end());
  ASSERT_TRUE(bpf::validate(ip).ok());
  EXPECT_FALSE(bpf::prove_equivalent(tiny_table(), ip).ok());
}

TEST(BpfTable, ProofRefusesBitTestsAndTooManyPoints) {
  const std::vector<sock_filter> set = {ld(16), jmp(BPF_JSET, 0x6, 0, 1), ret(kEperm), ret(kAllow)};
  EXPECT_FALSE(bpf::prove_equivalent(set, set).ok());
  EXPECT_FALSE(bpf::prove_equivalent(tiny_table(), tiny_table(), 10).ok());
}

// ---- Compaction.

TEST(BpfTable, CompactionOfATinyTableIsProvenEquivalent) {
  sbx::Result<std::vector<sock_filter>> compact = bpf::compact_table(tiny_table(), kArch);
  ASSERT_TRUE(compact.ok()) << compact.error();
  sbx::Status s = bpf::prove_equivalent(tiny_table(), *compact);
  EXPECT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(answer(*compact, call(7, kArch, 8)), kAllow);
  EXPECT_EQ(answer(*compact, call(7, kArch, 8, 1)), kAllow);  // tiny_table ignores word 20
  EXPECT_EQ(answer(*compact, call(7, kArch, 9)), kEnosys);
  EXPECT_EQ(answer(*compact, call(2)), kEperm);
  EXPECT_EQ(answer(*compact, call(2, 0)), kKill);
}

TEST(BpfTable, CompactionRefusesTablesItCannotRepresent) {
  // Foreign architectures answered by number.
  const std::vector<sock_filter> by_number = {
      ld(4), jmp(BPF_JEQ, kArch, 1, 0), ld(0), jmp(BPF_JEQ, 1, 0, 1), ret(kAllow), ret(kEnosys)};
  EXPECT_FALSE(bpf::compact_table(by_number, kArch).ok());
  // Bit tests.
  const std::vector<sock_filter> set = {
      ld(4), jmp(BPF_JEQ, kArch, 0, 3), ld(0), jmp(BPF_JSET, 1, 0, 1), ret(kAllow), ret(kEnosys)};
  EXPECT_FALSE(bpf::compact_table(set, kArch).ok());
  // Not in the subset.
  EXPECT_FALSE(
      bpf::compact_table(std::vector<sock_filter>{{BPF_RET | BPF_A, 0, 0, 0}}, kArch).ok());
}

// libseccomp's table for `net`, as sbx-seccomp-gen gets it.
std::vector<sock_filter> libseccomp_table(NetworkFilter net) {
  sbx::Result<std::vector<std::string>> built = sbx::stage2::export_filter_bpf(net);
  EXPECT_TRUE(built.ok()) << built.error();
  if (!built.ok()) return {};
  const std::string& bytes = (*built)[0];
  std::vector<sock_filter> program(bytes.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bytes.data(), program.size() * sizeof(sock_filter));
  return program;
}

std::vector<sock_filter> precompiled_table(NetworkFilter net) {
  const std::span<const sock_filter> table = sbx::stage2::precompiled_filter(net).table;
  return {table.begin(), table.end()};
}

TEST(BpfTable, PrecompiledTablesAreTheProvenCompactFormOfLibseccomps) {
  for (NetworkFilter net : kEveryMode) {
    const std::vector<sock_filter> libseccomp = libseccomp_table(net);
    const std::vector<sock_filter> loaded = precompiled_table(net);
    sbx::Result<std::vector<sock_filter>> compact =
        bpf::compact_table(libseccomp, sbx::stage2::precompiled_audit_arch());
    ASSERT_TRUE(compact.ok()) << compact.error();
    EXPECT_EQ(sbx::stage2::program_bytes(loaded), sbx::stage2::program_bytes(*compact));
    sbx::Status s = bpf::prove_equivalent(libseccomp, loaded);
    EXPECT_TRUE(s.ok()) << s.error();
    // Moving any one boundary of the search by one number is caught by the proof.
    for (std::size_t pc = 0; pc < loaded.size(); ++pc) {
      if (loaded[pc].code != (BPF_JMP | BPF_JGE | BPF_K)) continue;
      std::vector<sock_filter> moved = loaded;
      ++moved[pc].k;
      EXPECT_FALSE(bpf::prove_equivalent(libseccomp, moved).ok()) << "boundary at " << pc;
    }
    // The point of it: well under a quarter of libseccomp's length.
    EXPECT_LT(loaded.size() * 4, libseccomp.size()) << loaded.size() << " vs " << libseccomp.size();
  }
}

// Independently of the proof's choice of points: every number 0..4095 and the edges of the x32
// range (and of the 32-bit range) with every architecture either program names plus a few
// foreign ones, with arguments none, the allowed personality() values and others.
TEST(BpfTable, PrecompiledTablesAnswerAsLibseccompsOnADenseGrid) {
  std::vector<std::uint32_t> numbers;
  for (std::uint32_t nr = 0; nr < 4096; ++nr) numbers.push_back(nr);
  for (std::uint32_t edge : {0x3fffffffu, 0x40000000u, 0x40000001u, 0x40000027u, 0x400001ffu,
                             0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu})
    numbers.push_back(edge);
  const std::uint32_t native = sbx::stage2::precompiled_audit_arch();
  for (NetworkFilter net : kEveryMode) {
    const std::vector<sock_filter> libseccomp = libseccomp_table(net);
    const std::vector<sock_filter> loaded = precompiled_table(net);
    std::vector<std::uint32_t> arches = bpf::boundary_points(libseccomp, bpf::kArchOffset);
    for (std::uint32_t foreign :
         std::initializer_list<std::uint32_t>{AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64,
                                              AUDIT_ARCH_X86_64, native ^ 0x80000000u, native + 1})
      arches.push_back(foreign);
    std::vector<bpf::SeccompWords> grid;
    for (std::uint32_t arch : arches) {
      for (std::uint32_t nr : numbers) {
        // Arguments matter to personality() only; a few values for every number, more for it.
        const bool personality = nr == SYS_personality;
        for (std::uint32_t arg0 : {0x0u, 0x8u, 0x20000u, 0x400000u, 0xffffffffu}) {
          if (!personality && arg0 != 0x0u && arg0 != 0xffffffffu) continue;
          for (std::uint32_t high : {0x0u, 0x1u}) grid.push_back(call(nr, arch, arg0, high));
        }
      }
    }
    sbx::Result<std::vector<std::uint32_t>> expected = bpf::run_each(libseccomp, grid);
    sbx::Result<std::vector<std::uint32_t>> actual = bpf::run_each(loaded, grid);
    ASSERT_TRUE(expected.ok() && actual.ok());
    int mismatches = 0;
    for (std::size_t i = 0; i < grid.size(); ++i) {
      if ((*expected)[i] != (*actual)[i] && ++mismatches <= 5)
        ADD_FAILURE() << "arch " << std::hex << grid[i][1] << " nr " << grid[i][0] << " arg0 "
                      << grid[i][4] << " high " << grid[i][5];
    }
    EXPECT_EQ(mismatches, 0);
  }
}

// ---- The compact table loaded on its own (no argument rules) in a forked child.

std::string run_under_table(NetworkFilter net, const std::function<long()>& probe,
                            int expected_errno) {
  return sbx_seccomp_test::run_in_filtered_child(
      [net] {
        const std::span<const sock_filter> table = sbx::stage2::precompiled_filter(net).table;
        sock_fprog fprog{static_cast<unsigned short>(table.size()),
                         const_cast<sock_filter*>(table.data())};
        return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0;
      },
      probe, expected_errno);
}

TEST(BpfTable, LoadedCompactTableAllowsRefusesAndKills) {
  for (NetworkFilter net : kEveryMode) {
    SCOPED_TRACE(static_cast<int>(net));
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(SYS_getpid) > 0 ? 0L : -1L; }, 0),
              "ok");
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(SYS_ptrace, 0); }, EPERM),
              "ok");
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(SYS_mount, 0); }, EPERM),
              "ok");
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(SYS_clone3, 0, 0); }, ENOSYS),
              "ok");
    // A number no kernel has (yet).
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(1000); }, ENOSYS),
              "ok");
    // personality(): the query and ADDR_NO_RANDOMIZE pass, READ_IMPLIES_EXEC and a value with
    // high bits set answer ENOSYS (the argument tests kept from libseccomp's table).
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(SYS_personality, 0xffffffff) >= 0 ? 0L : -1L; }, 0),
              "ok");
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(SYS_personality, READ_IMPLIES_EXEC); }, ENOSYS),
              "ok");
#if defined(__LP64__)
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(SYS_personality, 0x100000008L); }, ENOSYS),
              "ok");
#endif
#if defined(__x86_64__)
    // getpid through the x32 ABI (bit 30 of the number): another ABI's call kills the process.
    EXPECT_EQ(run_under_table(
                  net, [] { return raw(0x40000000L | SYS_getpid); }, 0),
              "child died of signal " + std::to_string(SIGSYS));
#endif
  }
}

}  // namespace sbx_bpf_table_test
