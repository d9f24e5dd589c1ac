// sbx-seccomp-gen: a build-time tool, never installed. Builds the seccomp filter of
// seccomp_filter.hpp for every network mode, and the metadata guard of metadata_filter.hpp, with
// libseccomp and writes the programs as a C++ source file (the data of seccomp_programs.hpp), so
// that no run has to build a filter.
//
//   sbx-seccomp-gen OUTPUT.cpp
//
// The programs are for the architecture this tool is compiled for (libseccomp's native
// architecture), which is the plugin's: the tool is built by the same toolchain and run on the
// build machine, so cross builds are refused (core/stage2/CMakeLists.txt).
#include <linux/filter.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "metadata_filter.hpp"
#include "seccomp_filter.hpp"

namespace {

using sbx::stage2::NetworkFilter;

// The compiled-for architecture, as uname -m names it (for messages and tests only).
constexpr const char* kArchitecture =
#if defined(__x86_64__) && defined(__ILP32__)
    "x32";
#elif defined(__x86_64__)
    "x86_64";
#elif defined(__i386__)
    "i386";
#elif defined(__aarch64__)
    "aarch64";
#elif defined(__arm__)
    "arm";
#elif defined(__riscv) && __riscv_xlen == 64
    "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    "ppc64le";
#elif defined(__s390x__)
    "s390x";
#else
    "native";
#endif

struct Mode {
  const char* name;  // the C++ identifier part and the comment
  NetworkFilter network;
};

constexpr Mode kModes[] = {{"Blocked", NetworkFilter::kBlocked},
                           {"Open", NetworkFilter::kOpen},
                           {"Proxy", NetworkFilter::kProxy},
                           {"Private", NetworkFilter::kPrivate},
                           {"PrivateUnixSupervised", NetworkFilter::kPrivateUnixSupervised}};

// One array of sock_filter initialisers from libseccomp's exported bytes.
bool write_program(std::ostream& out, const std::string& name, const std::string& bytes) {
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0) {
    std::fprintf(stderr, "sbx-seccomp-gen: %s: %zu bytes is not a BPF program\n", name.c_str(),
                 bytes.size());
    return false;
  }
  out << "constexpr sock_filter " << name << "[] = {\n";
  char line[64];
  for (std::size_t i = 0; i < bytes.size(); i += sizeof(sock_filter)) {
    sock_filter insn{};
    std::memcpy(&insn, bytes.data() + i, sizeof insn);
    std::snprintf(line, sizeof line, "    {0x%04x, %u, %u, 0x%08x},\n", insn.code, insn.jt, insn.jf,
                  insn.k);
    out << line;
  }
  out << "};\n";
  return true;
}

bool write_source(std::ostream& out, const std::string& machine) {
  out << "// Generated at build time by sbx-seccomp-gen (core/stage2/seccomp_gen_main.cpp) from\n"
         "// seccomp_filter.cpp for " << machine << ". Do not edit.\n"
         "#include \"seccomp_programs.hpp\"\n\n"
         "namespace sbx::stage2 {\nnamespace {\n\n";
  for (const Mode& mode : kModes) {
    sbx::Result<std::vector<std::string>> programs = sbx::stage2::export_filter_bpf(mode.network);
    if (!programs.ok() || programs->size() != 2) {
      std::fprintf(stderr, "sbx-seccomp-gen: %s: %s\n", mode.name,
                   programs.ok() ? "not two programs" : programs.error().c_str());
      return false;
    }
    if (!write_program(out, std::string("k") + mode.name + "Table", (*programs)[0]) ||
        !write_program(out, std::string("k") + mode.name + "Rules", (*programs)[1]))
      return false;
    out << "\n";
  }
  sbx::Result<std::string> guard = sbx::stage2::export_metadata_guard_bpf();
  if (!guard.ok()) {
    std::fprintf(stderr, "sbx-seccomp-gen: metadata guard: %s\n", guard.error().c_str());
    return false;
  }
  if (!write_program(out, "kMetadataGuard", *guard)) return false;
  out << "\n}  // namespace\n\n"
         "std::span<const sock_filter> metadata_guard_program() { return kMetadataGuard; }\n\n"
         "PrecompiledFilter precompiled_filter(NetworkFilter network) {\n"
         "  switch (network) {\n";
  for (const Mode& mode : kModes) {
    out << "    case NetworkFilter::k" << mode.name << ":\n"
        << "      return {k" << mode.name << "Table, k" << mode.name << "Rules};\n";
  }
  // Unreachable for a valid enum value; the most restrictive mode for anything else.
  out << "  }\n  return {kBlockedTable, kBlockedRules};\n}\n\n"
         "std::string_view precompiled_architecture() { return \"" << machine << "\"; }\n\n"
         "}  // namespace sbx::stage2\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sbx-seccomp-gen OUTPUT.cpp\n");
    return 2;
  }
  std::ostringstream source;
  if (!write_source(source, kArchitecture)) return 1;
  // Written whole, then renamed: an interrupted run never leaves half a program behind.
  const std::string tmp = std::string(argv[1]) + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    file << source.str();
    if (!file.flush()) {
      std::fprintf(stderr, "sbx-seccomp-gen: cannot write %s\n", tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), argv[1]) != 0) {
    std::perror("sbx-seccomp-gen: rename");
    return 1;
  }
  return 0;
}
