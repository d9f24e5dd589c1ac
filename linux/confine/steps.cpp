// See steps.hpp. Everything after the two descriptor functions runs in vfork and CLONE_VM
// children: system calls and the caller's stack only, nothing that allocates or locks.
#include "steps.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace sbx::confine {
namespace {

// A descriptor above stdio that is open, made close-on-exec; -1 otherwise.
int close_on_exec_if_open(long fd) noexcept {
  if (fd < 3 || fd > 1'000'000) return -1;
  const int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
  if (flags < 0 || ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC) != 0) return -1;
  return static_cast<int>(fd);
}

// Best effort, as every trace write: a trace that cannot be written changes no step.
void write_all(int fd, const void* data, std::size_t size) noexcept {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    at += n;
    size -= static_cast<std::size_t>(n);
  }
}

void write_text(int fd, std::string_view text) noexcept { write_all(fd, text.data(), text.size()); }

// The Seccomp_filters field of this process's /proc/self/status (Linux 5.9), kUnknown when it
// cannot be read (no procfs, a Landlock domain without it, an older kernel).
std::uint8_t seccomp_filter_count() noexcept {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kUnknown;
  char text[8192];
  std::size_t used = 0;
  for (ssize_t n = 0; used < sizeof text; used += static_cast<std::size_t>(n)) {
    n = ::read(fd, text + used, sizeof text - used);
    if (n < 0 && errno == EINTR)
      n = 0;
    else if (n <= 0)
      break;
  }
  ::close(fd);
  const std::string_view status(text, used);
  constexpr std::string_view kKey = "\nSeccomp_filters:";
  std::size_t at = status.find(kKey);
  if (at == std::string_view::npos) return kUnknown;
  at += kKey.size();
  while (at < status.size() && (status[at] == ' ' || status[at] == '\t')) ++at;
  unsigned count = 0;
  for (; at < status.size() && status[at] >= '0' && status[at] <= '9'; ++at)
    count = count * 10 + static_cast<unsigned>(status[at] - '0');
  return count >= kUnknown ? kUnknown : static_cast<std::uint8_t>(count);
}

// What the steps so far left in this process.
void observe(TraceRecord& record) noexcept {
  record.observed = 1;
  const int nnp = ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  record.no_new_privs = nnp < 0 ? kUnknown : static_cast<std::uint8_t>(nnp);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) == 0) {
    bool held = false;
    for (const auto& d : data)
      held = held || d.effective != 0 || d.permitted != 0 || d.inheritable != 0;
    record.capabilities = held ? 1 : 0;
  }
  record.seccomp_filters = seccomp_filter_count();
}

}  // namespace

int trace_fd_from_environment() noexcept {
  if constexpr (!kChecked) return -1;
  const char* value = std::getenv(kTraceFdVariable);
  if (value == nullptr || *value == '\0') return -1;
  char* end = nullptr;
  const long fd = std::strtol(value, &end, 10);
  return *end == '\0' ? close_on_exec_if_open(fd) : -1;
}

int adopt_trace_fd(int fd) noexcept {
  if constexpr (!kChecked) return -1;
  return close_on_exec_if_open(fd);
}

bool ConfinementSteps::checked_done(Step step) noexcept {
  std::size_t row = next_;
  while (row < order_->size && order_->steps[row].actor != actor_) ++row;
  const StepAt* expected = row < order_->size ? &order_->steps[row] : nullptr;
  trace(step);
  if (expected != nullptr && expected->step == step) {
    next_ = row + 1;
    return true;
  }
  complain(step, expected);
  errno = EPROTO;
  return false;
}

void ConfinementSteps::trace(Step step) const noexcept {
  if (trace_fd_ < 0) return;
  const int saved = errno;  // a failing step's caller may still report errno
  TraceRecord record;
  record.actor = actor_;
  record.step = step;
  if (actor_ != Actor::kPauseCheck) observe(record);
  write_all(trace_fd_, &record, sizeof record);
  errno = saved;
}

void ConfinementSteps::complain(Step step, const StepAt* expected) const noexcept {
  write_text(2, "sbx: confinement order: ");
  write_text(2, actor_name(actor_));
  write_text(2, " performed ");
  write_text(2, step_name(step));
  write_text(2, " where the order (linux/confine/order.hpp) has ");
  write_text(2, expected != nullptr ? step_name(expected->step) : "no further step");
  write_text(2, "; the command did not run\n");
}

}  // namespace sbx::confine
