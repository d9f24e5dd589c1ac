// What sbx-stage2 checks first when bwrap started it (the bwrap backend, plugins/bwrap):
//
//  * `--ready-fd N`: one byte written to N, then N closed. sbx reads it after bwrap has ended:
//    without it, bwrap itself failed before the command could start (a mount it could not
//    make, a bad argument), and sbx reports 125 instead of passing bwrap's own exit status
//    off as the command's.
//  * `--mounts-fd N`: the mounts the plan asked bwrap for, as entries "w PATH" or "r PATH",
//    each ended by a NUL byte (w: the mount may be writable, r: it must be read-only). Stage 2
//    compares them with /proc/self/mountinfo before the command runs and refuses (125) when
//    - a planned mount point has no mount: bwrap followed a symlink that was swapped into the
//      path after the plan was made, so the mount landed somewhere else; or
//    - a writable mount sits anywhere but at or below a planned writable mount point, /dev or
//      /proc (bwrap's own): something outside the policy became writable; or
//    - the topmost mount at a planned read-only mount point is writable (the kernel's
//      interfaces under /proc, which the previous rule lets be writable, included).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/result.hpp"

namespace sbx::stage2 {

struct PlannedMount {
  std::string path;
  bool writable = false;
};

// One line of /proc/self/mountinfo, reduced to what the check needs.
struct ActualMount {
  std::string path;  // mount point, unescaped
  bool writable = false;
};

// Parses the --mounts-fd block. Error on a malformed or truncated entry.
Result<std::vector<PlannedMount>> parse_planned_mounts(std::string_view block);

// Parses /proc/self/mountinfo text. Error on a line it cannot read.
Result<std::vector<ActualMount>> parse_mountinfo(std::string_view text);

// The comparison described above; the error names the offending path.
Status check_mounts(const std::vector<PlannedMount>& planned,
                    const std::vector<ActualMount>& actual);

// Reads descriptor `fd` to EOF (at most 16 MiB) and closes it.
Result<std::string> read_and_close(int fd);

// Writes the ready byte to `fd` and closes it.
Status signal_ready(int fd);

// The whole --mounts-fd step: read the plan from `fd`, read /proc/self/mountinfo, compare.
Status verify_mounts_from_fd(int fd);

}  // namespace sbx::stage2
