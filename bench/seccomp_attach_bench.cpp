// What attaching the syscall table costs a run: fork + no_new_privs + attach + _exit, with
// libseccomp's table (as built at run time) and with the compact table that runs load
// (linux/seccomp/bpf_table.hpp), against fork + no_new_privs + _exit alone. Rounds interleaved,
// medians in microseconds, for one network mode (default open).
//
//   sbx_bench_seccomp_attach [ROUNDS] [blocked|open|proxy|private]
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "seccomp_filter.hpp"
#include "seccomp_programs.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// One child: no_new_privs, then the program if any; microseconds until it is reaped.
double fork_and_attach(const std::vector<sock_filter>* program) {
  const Clock::time_point start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(2);
    if (program != nullptr) {
      sock_fprog fprog{static_cast<unsigned short>(program->size()),
                       const_cast<sock_filter*>(program->data())};
      if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) ::_exit(3);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child failed (status %d)\n", status);
    std::exit(1);
  }
  return us;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 301;
  const std::string mode = argc > 2 ? argv[2] : "open";
  sbx::Result<sbx::stage2::NetworkFilter> net = sbx::stage2::parse_network_filter(mode);
  sbx::Result<std::vector<std::string>> built =
      net.ok() ? sbx::stage2::export_filter_bpf(*net)
               : sbx::Result<std::vector<std::string>>(net.failure());
  if (rounds < 1 || !built.ok()) {
    std::fprintf(stderr, "usage: sbx_bench_seccomp_attach [ROUNDS] [MODE]: %s\n",
                 built.ok() ? "bad rounds" : built.error().c_str());
    return 2;
  }
  std::vector<sock_filter> libseccomp((*built)[0].size() / sizeof(sock_filter));
  std::memcpy(libseccomp.data(), (*built)[0].data(), (*built)[0].size());
  const std::span<const sock_filter> table = sbx::stage2::precompiled_filter(*net).table;
  const std::vector<sock_filter> compact(table.begin(), table.end());

  std::vector<double> bare, old_table, new_table;
  for (int i = 0; i < rounds; ++i) {
    bare.push_back(fork_and_attach(nullptr));
    old_table.push_back(fork_and_attach(&libseccomp));
    new_table.push_back(fork_and_attach(&compact));
  }
  const double b = median(bare), o = median(old_table), n = median(new_table);
  std::printf("mode %s, %d rounds interleaved, medians\n", mode.c_str(), rounds);
  std::printf("fork + exit                          %8.1f us\n", b);
  std::printf("+ libseccomp table (%3zu instructions) %8.1f us  (+%.1f)\n", libseccomp.size(), o,
              o - b);
  std::printf("+ compact table    (%3zu instructions) %8.1f us  (+%.1f)\n", compact.size(), n,
              n - b);
  std::printf("attach saved per run                 %8.1f us\n", o - n);
  return 0;
}
