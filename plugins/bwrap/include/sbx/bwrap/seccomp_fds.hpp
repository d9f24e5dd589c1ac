// The seccomp filter handed to bwrap rather than installed by a helper inside the sandbox:
// bwrap's --add-seccomp-fd FD (repeatable; bwrap >= 0.5) reads one BPF program from FD before
// it starts the sandbox and installs the programs in the order given, with no_new_privs set,
// as the last step before it execs the command (the way Flatpak hands bwrap its filter).
//
// The programs are the precompiled ones (linux/seccomp/seccomp_programs.hpp): no run builds a
// filter. Each travels in its own sealed memfd, never through a path: nothing else can name
// it, and nothing that later holds the descriptor can change what bwrap reads.
#pragma once

#include <string>
#include <vector>

#include "sbx/sdk/result.hpp"
#include "seccomp_filter.hpp"

namespace sbx::bwrap {

// The two sealed memfds (close-on-exec, positioned at their start) of one network mode's
// filter, table first. Closes them when destroyed.
class SeccompFds {
 public:
  SeccompFds() = default;
  SeccompFds(const SeccompFds&) = delete;
  SeccompFds& operator=(const SeccompFds&) = delete;
  SeccompFds(SeccompFds&& other) noexcept;
  SeccompFds& operator=(SeccompFds&& other) noexcept;
  ~SeccompFds();

  int table() const { return fds_[0]; }
  int rules() const { return fds_[1]; }

 private:
  friend Result<SeccompFds> seccomp_program_fds(stage2::NetworkFilter network);
  void close_all();
  int fds_[2] = {-1, -1};
};

Result<SeccompFds> seccomp_program_fds(stage2::NetworkFilter network);

// argv with "--add-seccomp-fd TABLE_FD --add-seccomp-fd RULES_FD" inserted right after argv[0]
// (bwrap's path), TABLE_FD first: between two errno answers the program installed last wins,
// and install_filter loads the table first too. The numbers are those the descriptors will have
// in the bwrap process.
std::vector<std::string> with_seccomp_fds(const std::vector<std::string>& argv, int table_fd,
                                          int rules_fd);

}  // namespace sbx::bwrap
