// sbx's own descriptors never take the number of a closed standard descriptor (0, 1 or 2).
//
// A program may run sbx, or embed libsbx, with stdin, stdout or stderr closed. open(2) returns
// the lowest free number, so the next descriptor sbx opened would get that number: a plugin
// file, a directory of a writable root, the fanotify group of the created-names events, a
// cgroup directory. A run whose command inherits this process's standard descriptors would then
// hand it to the sandboxed command as its stdin: a directory descriptor of the host gives a
// bwrap-sandboxed command the host's tree through openat(2), past its mount namespace.
//
// So while sbx works (a StandardDescriptorHold lives: the whole life of the sbx CLI, every run
// and every plugin load of libsbx), each standard descriptor that was closed when the first
// hold was made holds /dev/null, close-on-exec (never inherited by number), and is still
// reported closed by standard_fd_is_callers: the command gets none there, as it would have
// inherited none (kInherit in run_io.hpp). Holds nest and may overlap across threads; the last
// one to end closes the placeholders, so an embedding program finds its table as it left it.
// A program that closes one of 0-2 while a run of its own is in progress races with itself
// (its other threads may take the number too); that is not covered.
#pragma once

namespace sbx {

class StandardDescriptorHold {
 public:
  StandardDescriptorHold() noexcept;
  ~StandardDescriptorHold();
  StandardDescriptorHold(const StandardDescriptorHold&) = delete;
  StandardDescriptorHold& operator=(const StandardDescriptorHold&) = delete;
};

// Takes a hold that never ends: for a process that is sbx itself (the CLI's main).
void hold_standard_descriptors_for_life() noexcept;

// fd (0, 1 or 2) is open in this process and is not one of the placeholders above: a
// descriptor the command may inherit as its own standard descriptor.
bool standard_fd_is_callers(int fd) noexcept;

}  // namespace sbx
