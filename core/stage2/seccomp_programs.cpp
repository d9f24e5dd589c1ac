// Loading the precompiled programs (seccomp_programs.hpp); the programs themselves are in the
// generated seccomp_programs_data.cpp.
#include "seccomp_programs.hpp"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace sbx::stage2 {
namespace {

// Raw seccomp(2): no libseccomp here, and the flags are libseccomp's default (none: no TSYNC,
// no logging), so the result is what seccomp_load would install.
int load_program(std::span<const sock_filter> program) {
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(program.size());
  fprog.filter = const_cast<sock_filter*>(program.data());
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog));
}

}  // namespace

std::string_view program_bytes(std::span<const sock_filter> program) {
  return {reinterpret_cast<const char*>(program.data()), program.size_bytes()};
}

Status load_precompiled_filter(NetworkFilter network) {
  const PrecompiledFilter filter = precompiled_filter(network);
  if (load_program(filter.table) != 0)
    return Error{std::string("seccomp (syscall table): ") + std::strerror(errno)};
  if (load_program(filter.rules) != 0)
    return Error{std::string("seccomp (argument rules): ") + std::strerror(errno)};
  return {};
}

}  // namespace sbx::stage2
