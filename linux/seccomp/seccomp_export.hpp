// What libseccomp writes for a filter context: its BPF program (seccomp_export_bpf) or its
// human-readable form (seccomp_export_pfc). Shared by the filters built in this library
// (seccomp_filter, metadata_filter, pid_scope_filter); kept out of their headers so that
// callers of those need no libseccomp.
#pragma once

#include <seccomp.h>

#include <string>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

// `exporter`'s output for `ctx`, read back from a temporary file (libseccomp 2.5 exports to a
// descriptor only). `exporter` has the signature seccomp.h gives seccomp_export_bpf/_pfc, whose
// `const scmp_filter_ctx` (a const pointer, not a pointer to const) misc-misplaced-const flags.
// NOLINTBEGIN(misc-misplaced-const)
Result<std::string> export_program(scmp_filter_ctx ctx,
                                   int (*exporter)(const scmp_filter_ctx, int));
// NOLINTEND(misc-misplaced-const)

}  // namespace sbx::stage2
