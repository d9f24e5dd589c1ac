// Placeholders for closed standard descriptors (standard_fds.hpp).
#include "run/standard_fds.hpp"

#include <array>
#include <mutex>
#include <optional>

#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace sbx {

namespace {

#ifndef _WIN32
struct Placeholders {
  std::mutex mutex;
  int holds = 0;
  std::array<bool, 3> ours{};  // i holds our /dev/null
};

// A static, not a heap object: the CLI's main() takes its hold before `sbx --version` is
// answered, which must not grow the heap (LeanStart.TheBareVersionIsAnsweredBefore...). Its
// members need no destruction (std::mutex's is trivial), so it is usable at exit too.
Placeholders& placeholders() {
  static Placeholders placeholders;
  return placeholders;
}

bool is_closed(int fd) { return ::fcntl(fd, F_GETFD) == -1 && errno == EBADF; }

// Still the placeholder we put there: close-on-exec (a dup2(2) or dup3(2) without O_CLOEXEC by
// the embedding program clears it) and /dev/null (character device 1:3, devices(7)).
bool still_placeholder(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  struct stat st {};
  return flags != -1 && (flags & FD_CLOEXEC) != 0 && ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
         st.st_rdev == makedev(1, 3);
}

void occupy(Placeholders& p) {
  for (int fd = 0; fd < 3; ++fd) {
    if (!is_closed(fd)) continue;
    // open(2) returns the lowest free number: fd itself, unless another thread of the embedding
    // program took it meanwhile (then it is that thread's, and ours goes).
    const int placed = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (placed < 0) continue;  // nothing to put there: standard_fd_is_callers still says closed
    if (placed == fd) {
      p.ours[static_cast<std::size_t>(fd)] = true;
    } else {
      ::close(placed);
    }
  }
}

void release(Placeholders& p) {
  for (int fd = 0; fd < 3; ++fd) {
    bool& ours = p.ours[static_cast<std::size_t>(fd)];
    if (!ours) continue;
    ours = false;
    if (still_placeholder(fd)) ::close(fd);
  }
}
#endif

}  // namespace

StandardDescriptorHold::StandardDescriptorHold() noexcept {
#ifndef _WIN32
  Placeholders& p = placeholders();
  const std::lock_guard<std::mutex> lock(p.mutex);
  if (p.holds++ == 0) occupy(p);
#endif
}

StandardDescriptorHold::~StandardDescriptorHold() {
#ifndef _WIN32
  Placeholders& p = placeholders();
  const std::lock_guard<std::mutex> lock(p.mutex);
  if (--p.holds == 0) release(p);
#endif
}

void hold_standard_descriptors_for_life() noexcept {
  // Held until the process exits (released by the static's destructor, when nothing is run
  // any more).
  static std::optional<StandardDescriptorHold> for_life;
  if (!for_life) for_life.emplace();
}

bool standard_fd_is_callers(int fd) noexcept {
#ifdef _WIN32
  (void)fd;
  return true;  // the C runtime's 0-2 are the console's; Windows has no descriptor to check
#else
  if (fd < 0 || fd > 2) return false;
  Placeholders& p = placeholders();
  const std::lock_guard<std::mutex> lock(p.mutex);
  return !p.ours[static_cast<std::size_t>(fd)] && ::fcntl(fd, F_GETFD) != -1;
#endif
}

}  // namespace sbx
