// The event half of CreatedNamesScan: what a run changed below its writable roots, learnt from
// the kernel's filesystem events (fanotify(7)) instead of read from the trees, so that its cost
// follows what changed, not what the trees hold. created_names.hpp states the guarantee; this
// file how the events give it, and when they cannot (the caller then walks).
//
// Linux only, and only where sbx may: marking a whole filesystem (FAN_MARK_FILESYSTEM) needs
// CAP_SYS_ADMIN in the initial user namespace, and turning the events' file handles back into
// paths (open_by_handle_at(2)) needs CAP_DAC_READ_SEARCH. Elsewhere open() returns null.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace sbx::created_names_events {

// An entry with a watched name, on the way from a root to a place where something changed: the
// outermost such entry below the root (find_created_names examines everything inside it).
struct Candidate {
  std::size_t root = 0;  // index into the roots given to ChangeWatch::open
  std::string path;      // absolute
};

class ChangeWatch {
 public:
  // Marks the filesystem of each of `roots` (each an absolute directory path) for the events
  // below, before the run's command starts. Roots it could not watch (fanotify or file handles
  // unavailable, not permitted, another filesystem with the same fsid) are left to the caller:
  // watches(i) says which are watched. Null when none is. `max_changed`: how many changed
  // places (directories inside or holding watched names, files with several links) it keeps
  // to check after the run before it gives up.
  static std::unique_ptr<ChangeWatch> open(const std::vector<std::string>& roots,
                                           const std::vector<std::string>& names,
                                           std::size_t max_changed);
  ~ChangeWatch();
  ChangeWatch(const ChangeWatch&) = delete;
  ChangeWatch& operator=(const ChangeWatch&) = delete;

  bool watches(std::size_t root) const;
  // Starts the thread that reads the events while the run goes on (the kernel queues them
  // meanwhile: a run that never calls it reads them all in finish()). The first call only.
  void start();
  // Waits until the started thread has read the mount table (tests: mounts made after this
  // are a change during the run).
  void wait_until_ready();
  // Once every process of the run is dead: reads the events left, and returns true with the
  // entries to examine below the watched roots, or false with why the events cannot answer
  // (the caller then walks those roots). Once only.
  bool finish(std::vector<Candidate>& candidates, std::string& why);

  struct State;

 private:
  explicit ChangeWatch(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace sbx::created_names_events
