// sbx-seccomp-gen: a build-time tool, never installed. Builds the seccomp filter of
// seccomp_filter.hpp for every network mode, the metadata guard of metadata_filter.hpp and the
// pid scope of pid_scope_filter.hpp, with
// libseccomp and writes the programs as a C++ source file (the data of seccomp_programs.hpp), so
// that no run has to build a filter. The syscall table is written in its compact form
// (bpf_table.hpp), derived from libseccomp's program and proven equivalent to it here: a table
// that cannot be proven fails the build.
//
//   sbx-seccomp-gen OUTPUT.cpp
//
// The programs are for the architecture this tool is compiled for (libseccomp's native
// architecture), which is the plugin's: the tool is built by the same toolchain and run on the
// build machine, so cross builds are refused (linux/seccomp/CMakeLists.txt).
#include <linux/filter.h>
#include <seccomp.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bpf_table.hpp"
#include "metadata_filter.hpp"
#include "pid_scope_filter.hpp"
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
                           {"PrivateUnixSupervised", NetworkFilter::kPrivateUnixSupervised},
                           {"BlockedGuarded", NetworkFilter::kBlockedGuarded},
                           {"ProxyGuarded", NetworkFilter::kProxyGuarded}};

// libseccomp's exported bytes as instructions.
bool to_program(const std::string& name, const std::string& bytes,
                std::vector<sock_filter>& program) {
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0) {
    std::fprintf(stderr, "sbx-seccomp-gen: %s: %zu bytes is not a BPF program\n", name.c_str(),
                 bytes.size());
    return false;
  }
  program.resize(bytes.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bytes.data(), bytes.size());
  return true;
}

// One array of sock_filter initialisers.
void write_instructions(std::ostream& out, const std::string& name,
                        const std::vector<sock_filter>& program) {
  out << "constexpr sock_filter " << name << "[] = {\n";
  char line[64];
  for (const sock_filter& insn : program) {
    std::snprintf(line, sizeof line, "    {0x%04x, %u, %u, 0x%08x},\n", insn.code, insn.jt, insn.jf,
                  insn.k);
    out << line;
  }
  out << "};\n";
}

bool write_program(std::ostream& out, const std::string& name, const std::string& bytes) {
  std::vector<sock_filter> program;
  if (!to_program(name, bytes, program)) return false;
  write_instructions(out, name, program);
  return true;
}

// The compact form of libseccomp's table, written only once proven to answer as libseccomp's
// does for every (arch, nr, arguments, instruction pointer).
bool write_compact_table(std::ostream& out, const std::string& name, const std::string& bytes,
                         std::uint32_t native_arch) {
  std::vector<sock_filter> libseccomp;
  if (!to_program(name, bytes, libseccomp)) return false;
  sbx::Result<std::vector<sock_filter>> compact =
      sbx::stage2::bpf::compact_table(libseccomp, native_arch);
  if (!compact.ok()) {
    std::fprintf(stderr, "sbx-seccomp-gen: %s: %s\n", name.c_str(), compact.error().c_str());
    return false;
  }
  sbx::Status proof = sbx::stage2::bpf::prove_equivalent(libseccomp, *compact);
  if (!proof.ok()) {
    std::fprintf(stderr, "sbx-seccomp-gen: %s: the compact table is not libseccomp's: %s\n",
                 name.c_str(), proof.error().c_str());
    return false;
  }
  out << "// " << libseccomp.size() << " instructions as libseccomp builds it; compact and proven "
      << "equivalent at build time (bpf_table.hpp).\n";
  write_instructions(out, name, *compact);
  return true;
}

bool write_source(std::ostream& out, const std::string& machine, std::uint32_t native_arch) {
  out << "// Generated at build time by sbx-seccomp-gen (linux/seccomp/seccomp_gen_main.cpp) from\n"
         "// seccomp_filter.cpp for "
      << machine
      << ". Do not edit.\n"
         "#include \"seccomp_programs.hpp\"\n\n"
         "namespace sbx::stage2 {\nnamespace {\n\n";
  for (const Mode& mode : kModes) {
    sbx::Result<std::vector<std::string>> programs = sbx::stage2::export_filter_bpf(mode.network);
    if (!programs.ok() || programs->size() != 2) {
      std::fprintf(stderr, "sbx-seccomp-gen: %s: %s\n", mode.name,
                   programs.ok() ? "not two programs" : programs.error().c_str());
      return false;
    }
    if (!write_compact_table(out, std::string("k") + mode.name + "Table", (*programs)[0],
                             native_arch) ||
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
  sbx::Result<std::string> unix_guard = sbx::stage2::export_unix_guard_bpf();
  if (!unix_guard.ok()) {
    std::fprintf(stderr, "sbx-seccomp-gen: unix guard: %s\n", unix_guard.error().c_str());
    return false;
  }
  if (!write_program(out, "kUnixGuard", *unix_guard)) return false;
  for (const bool metadata : {true, false}) {
    sbx::Result<std::string> connect_guard = sbx::stage2::export_connect_guard_bpf(metadata);
    if (!connect_guard.ok()) {
      std::fprintf(stderr, "sbx-seccomp-gen: connect guard: %s\n", connect_guard.error().c_str());
      return false;
    }
    if (!write_program(out, metadata ? "kMetadataConnectGuard" : "kUnixConnectGuard",
                       *connect_guard))
      return false;
  }
  sbx::Result<std::string> pid_scope = sbx::stage2::export_pid_scope_bpf();
  if (!pid_scope.ok()) {
    std::fprintf(stderr, "sbx-seccomp-gen: pid scope: %s\n", pid_scope.error().c_str());
    return false;
  }
  if (!write_program(out, "kPidScope", *pid_scope)) return false;
  out << "\n}  // namespace\n\n"
         "std::span<const sock_filter> metadata_guard_program() { return kMetadataGuard; }\n\n"
         "std::span<const sock_filter> unix_guard_program() { return kUnixGuard; }\n\n"
         "std::span<const sock_filter> connect_guard_program(bool metadata) {\n"
         "  return metadata ? std::span<const sock_filter>(kMetadataConnectGuard)\n"
         "                  : std::span<const sock_filter>(kUnixConnectGuard);\n}\n\n"
         "std::span<const sock_filter> pid_scope_program() { return kPidScope; }\n\n"
         "PrecompiledFilter precompiled_filter(NetworkFilter network) {\n"
         "  switch (network) {\n";
  for (const Mode& mode : kModes) {
    out << "    case NetworkFilter::k" << mode.name << ":\n"
        << "      return {k" << mode.name << "Table, k" << mode.name << "Rules};\n";
  }
  // Unreachable for a valid enum value; the most restrictive mode for anything else.
  out << "  }\n  return {kBlockedTable, kBlockedRules};\n}\n\n"
         "std::string_view precompiled_architecture() { return \""
      << machine
      << "\"; }\n\n"
         "std::uint32_t precompiled_audit_arch() { return "
      << native_arch
      << "u; }\n\n"
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
  // libseccomp's native architecture token is the AUDIT_ARCH_* value its programs compare.
  if (!write_source(source, kArchitecture, seccomp_arch_native())) return 1;
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
