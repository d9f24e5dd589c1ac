// The precompiled seccomp programs as bwrap's --add-seccomp-fd takes them (seccomp_fds.hpp).
#include "sbx/bwrap/seccomp_fds.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include "seccomp_programs.hpp"

namespace sbx::bwrap {
namespace {

// A sealed memfd holding `bytes`, positioned at its start; -1 (errno set) on failure.
int sealed_program_fd(const char* name, std::string_view bytes) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd < 0) return -1;
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno == 0 ? EIO : errno;
      close(fd);
      errno = error;
      return -1;
    }
    written += static_cast<std::size_t>(n);
  }
  // Sealed, and a failure to seal is a failure: the program must be exactly these bytes.
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0 ||
      lseek(fd, 0, SEEK_SET) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

}  // namespace

SeccompFds::SeccompFds(SeccompFds&& other) noexcept { std::swap(fds_, other.fds_); }

SeccompFds& SeccompFds::operator=(SeccompFds&& other) noexcept {
  if (this != &other) {
    close_all();
    std::swap(fds_, other.fds_);
  }
  return *this;
}

SeccompFds::~SeccompFds() { close_all(); }

void SeccompFds::close_all() {
  for (int& fd : fds_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

Result<SeccompFds> seccomp_program_fds(stage2::NetworkFilter network) {
  const stage2::PrecompiledFilter filter = stage2::precompiled_filter(network);
  SeccompFds fds;
  fds.fds_[0] = sealed_program_fd("sbx-seccomp-table", stage2::program_bytes(filter.table));
  if (fds.fds_[0] < 0)
    return Error{std::string("bwrap: cannot hand the seccomp filter to bwrap (memfd): ") +
                 std::strerror(errno)};
  fds.fds_[1] = sealed_program_fd("sbx-seccomp-rules", stage2::program_bytes(filter.rules));
  if (fds.fds_[1] < 0)
    return Error{std::string("bwrap: cannot hand the seccomp filter to bwrap (memfd): ") +
                 std::strerror(errno)};
  return fds;
}

std::vector<std::string> with_seccomp_fds(const std::vector<std::string>& argv, int table_fd,
                                          int rules_fd) {
  if (argv.empty()) return argv;
  std::vector<std::string> out;
  out.reserve(argv.size() + 4);
  out.push_back(argv.front());
  out.insert(out.end(), {"--add-seccomp-fd", std::to_string(table_fd), "--add-seccomp-fd",
                         std::to_string(rules_fd)});
  out.insert(out.end(), std::next(argv.begin()), argv.end());
  return out;
}

}  // namespace sbx::bwrap
