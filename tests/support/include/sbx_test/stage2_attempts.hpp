// Shared by the bwrap and landlock suites: a shell script the sandboxed command runs against
// every process of sbx's it can see (sbx-stage2 under bwrap, the Landlock supervisor, named
// sbx-supervisor), and the check of its output.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sbx_test/files.hpp"
#include "sbx_test/installed_sbx.hpp"
#include "sbx_test/listener.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx::test {

// Prints "stage2 PID" for each process named `name` found, then one line per attempt that worked:
// "READ environ PID", "OPENED mem PID", "SAW fd PID N", "REOPENED fd PID N",
// "STOLE fd PID" (pidfd_getfd through `escape_probe`). Ends with "done". Listing /proc/PID/fd
// is not attempted: it shows descriptor numbers only, and a uid-0 command owns that directory
// whatever stage 2 does.
inline std::string stage2_attempts_script(const std::string& escape_probe,
                                          const std::string& name = "sbx-stage2") {
  return "for p in /proc/[0-9]*; do\n"
         "  pid=${p#/proc/}\n"
         "  [ \"$(cat $p/comm 2>/dev/null)\" = " +
         name +
         " ] || continue\n"
         "  echo \"stage2 $pid\"\n"
         "  cat $p/environ >/dev/null 2>&1 && echo \"READ environ $pid\"\n"
         "  (exec 3<>$p/mem) 2>/dev/null && echo \"OPENED mem $pid\"\n"
         "  for n in 0 1 2 3 4 5 6 7 8 9 10 11 12; do\n"
         "    readlink $p/fd/$n >/dev/null 2>&1 && echo \"SAW fd $pid $n\"\n"
         "    (exec 3<$p/fd/$n) 2>/dev/null && echo \"REOPENED fd $pid $n\"\n"
         "  done\n"
         "  " +
         escape_probe +
         " pidfd_getfd $pid >/dev/null && echo \"STOLE fd $pid\"\n"
         "done\n"
         "echo done\n";
}

inline void expect_stage2_unreachable(const RunResult& r, int expected_at_least) {
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("done\n"), std::string::npos) << describe(r);
  int found = 0;
  for (std::size_t at = r.out.find("stage2 "); at != std::string::npos;
       at = r.out.find("stage2 ", at + 1))
    ++found;
  // Otherwise the attempts below prove nothing.
  EXPECT_GE(found, expected_at_least)
      << "the command saw too few sbx-stage2 processes: " << describe(r);
  for (const char* escape : {"READ ", "OPENED ", "SAW ", "REOPENED ", "STOLE "})
    EXPECT_EQ(r.out.find(escape), std::string::npos)
        << "the command reached sbx-stage2 (" << escape << "): " << describe(r);
}

}  // namespace sbx::test
