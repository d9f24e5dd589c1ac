// The seccomp filter of seccomp_filter.hpp, precompiled: the BPF programs libseccomp makes for
// each network mode, generated at build time for the target architecture by sbx-seccomp-gen
// (seccomp_gen_main.cpp, which links the same seccomp_filter.cpp) and compiled in as data. The
// syscall table is not libseccomp's program itself but its compact form (bpf_table.hpp), a
// fifth of the length and so cheaper to attach, proven at build time to answer alike for every
// input.
//
// Why precompiled: building the filter with libseccomp (about 350 table entries, optimised
// into a binary tree) was nearly all of what sbx-stage2 cost a run (bench/README.md), and needs
// libseccomp in the process that builds it. A program that is data costs a seccomp(2) call:
// sbx-stage2 loads these, and they can be handed to bwrap as they are (--add-seccomp-fd,
// plugins/bwrap/include/sbx/bwrap/seccomp_fds.hpp). The programs are pinned by golden tests of
// their bytes, by a test that they equal what libseccomp builds at run time, and by
// forked-child tests that load them and check what they refuse (tests/unit/seccomp).
//
// This library links neither libseccomp nor anything of libsbx: the bwrap and landlock plugins
// link it.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "sbx/sdk/result.hpp"
#include "seccomp_filter.hpp"

namespace sbx::stage2 {

// The two programs of one network mode, in the order they must be installed (the kernel runs
// every installed program and keeps the most restrictive answer; between two errno answers the
// program installed last wins, so the argument rules' EPERM must come after the table's ENOSYS,
// as install_filter loads them).
struct PrecompiledFilter {
  std::span<const sock_filter> table;
  std::span<const sock_filter> rules;
};

// The programs for `network` (every NetworkFilter has them).
PrecompiledFilter precompiled_filter(NetworkFilter network);

// The architecture the programs were generated for ("x86_64", "aarch64"...: the one this code
// is compiled for). Calls of any other architecture kill the process.
std::string_view precompiled_architecture();

// The AUDIT_ARCH_* value of that architecture, which the programs compare seccomp_data.arch
// with.
std::uint32_t precompiled_audit_arch();

// A program's bytes, as bwrap's --add-seccomp-fd and SECCOMP_SET_MODE_FILTER take them.
std::string_view program_bytes(std::span<const sock_filter> program);

// Installs both programs of `network` on the calling thread, table first. Requires
// no_new_privs (set by the caller first). For tests and for callers without bwrap; allocates
// only to describe a failure.
Status load_precompiled_filter(NetworkFilter network);

// The same, async-signal-safe (for a child between fork or vfork and execve): 0, or the errno
// of the seccomp(2) call that failed.
int load_precompiled_filter_raw(NetworkFilter network) noexcept;

// Landlock mode's metadata guard (metadata_filter.hpp), precompiled like the filter above.
std::span<const sock_filter> metadata_guard_program();

// The unix datagram guard (metadata_filter.hpp): the metadata guard without its metadata
// rules, for Landlock runs with an unrestricted filesystem.
std::span<const sock_filter> unix_guard_program();

// The connect variant of either (metadata_filter.hpp): every connect() and bind() notified too,
// for Landlock runs with the network enabled.
std::span<const sock_filter> connect_guard_program(bool metadata);

// Installs the metadata guard (or, `metadata` false, the unix datagram guard; `connects`: its
// connect variant) on the calling thread with a user-notification listener and returns the
// listener (close-on-exec), or -errno. Requires no_new_privs. Async-signal-safe.
int load_metadata_guard_program(bool metadata = true, bool connects = false) noexcept;

// Landlock mode's pid scope (pid_scope_filter.hpp), precompiled like the filter above; loaded
// only where the metadata guard, whose program carries the same refusals, is not.
std::span<const sock_filter> pid_scope_program();

// Installs the pid scope on the calling thread: 0, or the errno of seccomp(2). Requires
// no_new_privs. Async-signal-safe.
int load_pid_scope_program_raw() noexcept;

}  // namespace sbx::stage2
