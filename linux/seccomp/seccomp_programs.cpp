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
int load_program(std::span<const sock_filter> program, unsigned flags = 0) noexcept {
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(program.size());
  fprog.filter = const_cast<sock_filter*>(program.data());
  return static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog));
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

int load_precompiled_filter_raw(NetworkFilter network) noexcept {
  const PrecompiledFilter filter = precompiled_filter(network);
  if (load_program(filter.table) != 0) return errno;
  if (load_program(filter.rules) != 0) return errno;
  return 0;
}

// The listener comes back close-on-exec (the kernel's anon inode flags): only the supervisor,
// which receives it, may keep it.
int load_metadata_guard_program(bool metadata, bool connects) noexcept {
  const std::span<const sock_filter> program =
      connects ? connect_guard_program(metadata)
               : (metadata ? metadata_guard_program() : unix_guard_program());
  const int listener = load_program(program, SECCOMP_FILTER_FLAG_NEW_LISTENER);
  return listener < 0 ? -errno : listener;
}

int load_pid_scope_program_raw() noexcept {
  return load_program(pid_scope_program()) != 0 ? errno : 0;
}

}  // namespace sbx::stage2
