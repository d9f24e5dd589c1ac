// The command's environment handed to sbx-stage2 outside its argument list.
//
// Why: arguments are world-readable (/proc/PID/cmdline, `ps`) for as long as bwrap and stage 2
// run, i.e. the whole command, and an environment carries secrets (API keys, the proxy's
// per-run credential). /proc/PID/environ and a process's descriptors are readable only by its
// own user (ptrace access check). So the spawners pass the environment either
//  - as a descriptor (`--env-fd N`, bwrap): KEY=VALUE entries, each ended by a NUL byte, read
//    to EOF and closed before anything else runs; or
//  - as stage 2's own environment (`--env-environ`, Landlock mode: sbx execs stage 2 directly,
//    and stage 2 is statically linked, so no LD_* variable acts on it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

// The most stage 2 reads from --env-fd: far above any real environment (the kernel caps
// argv + envp of one execve at a quarter of the stack limit, 2 MiB by default).
inline constexpr std::size_t kMaxEnvBlock = 16u << 20;

// True for "KEY=VALUE" with a non-empty KEY (what execve's envp should hold).
inline bool valid_env_entry(std::string_view entry) {
  const std::size_t eq = entry.find('=');
  return eq != std::string_view::npos && eq > 0;
}

// Splits a block of NUL-terminated entries. Error on an entry without '=' or an empty key, or
// trailing bytes without their NUL (a truncated block).
inline Result<std::vector<std::string>> parse_env_block(std::string_view block) {
  std::vector<std::string> entries;
  std::size_t start = 0;
  while (start < block.size()) {
    const std::size_t end = block.find('\0', start);
    if (end == std::string_view::npos)
      return Error{"the environment block ends without a NUL byte (truncated)"};
    const std::string_view entry = block.substr(start, end - start);
    if (!valid_env_entry(entry))
      return Error{"environment entry '" + std::string(entry) + "' is not KEY=VALUE"};
    entries.emplace_back(entry);
    start = end + 1;
  }
  return entries;
}

}  // namespace sbx::stage2
