// sbx_no_new_process_exec PROGRAM [ARG...]: installs the no-new-process filter
// (sbx_test/no_new_process.hpp) and execs PROGRAM. If PROGRAM then tries to start a process or
// thread, the kernel kills it with SIGSYS, which the test sees as its status.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "sbx_test/no_new_process.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: sbx_no_new_process_exec PROGRAM [ARG...]\n");
    return 2;
  }
  if (const int error = sbx::test::forbid_new_processes(); error != 0) {
    std::fprintf(stderr, "sbx_no_new_process_exec: cannot install the filter: %s\n",
                 std::strerror(error));
    return 2;
  }
  ::execv(argv[1], argv + 1);
  std::fprintf(stderr, "sbx_no_new_process_exec: %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
