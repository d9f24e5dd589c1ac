// The pure half of the firejail backend: ResolvedPolicy + request -> the firejail command line.
// Nothing here touches the OS except through PathFacts, so every mapping is unit-testable.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace firejail_backend {

// Fixed absolute paths, never looked up in PATH: a launcher found through PATH could be any
// program the caller's environment points at.
inline constexpr const char* kFirejailPath = "/usr/bin/firejail";
// setsid(1) from util-linux: the command gets a new session without a controlling terminal, so
// with every capability dropped it cannot push input into the caller's terminal (TIOCSTI).
inline constexpr const char* kSetsidPath = "/usr/bin/setsid";

// What the translation needs to know about the host filesystem. firejail can only re-mount
// paths that exist when it starts, so a missing path decides between "nothing to do" and
// "cannot enforce". Injected so tests can describe any host.
struct PathFacts {
  std::function<bool(const std::string& path)> exists;
};

// PathFacts backed by lstat(2).
PathFacts host_path_facts();

// Flags every sandbox gets whatever the policy: no profile, a private /dev, no capabilities,
// no_new_privs, the seccomp filter (firejail's default list plus the syscalls sbx requires),
// no new namespaces, 64-bit syscalls only. Also used by the probe's trial run.
std::vector<std::string> hardening_flags();

// The policy part of the command line (filesystem and network). Error names the first rule
// firejail cannot enforce and what to do about it.
sbx::Result<std::vector<std::string>> policy_flags(const sbx::ResolvedPolicy& policy,
                                                   const PathFacts& facts,
                                                   std::vector<std::string>& notes);

// The whole plan: firejail <hardening> <policy> -- setsid <argv...>, with the request's cwd and
// its environment minus variables that must never reach a setuid helper (LD_*, GCONV_PATH, ...).
sbx::Result<sbx::ExecPlan> build_plan(const sbx::TransformRequest& request, const PathFacts& facts);

}  // namespace firejail_backend
