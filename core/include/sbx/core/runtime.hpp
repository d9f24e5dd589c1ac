// Installation-relative paths and the host-services table. The trusted plugin directory and
// the stage-2 helper are found next to the real location of libsbx's code (build tree and
// install prefix share the layout); no environment variable can change them.
#pragma once

#include <array>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/core/platform_types.hpp"
#include "sbx/sdk/abi.h"
#include "sbx/sdk/result.hpp"

namespace sbx {

// Where the running libsbx code came from: libsbx.so (the C API, embedders) or the sbx
// executable, which links that code in (core/src/plugins/README.md, "The install layout").
struct InstallLayout {
  std::string libsbx_path;       // canonical path of the file holding the running libsbx code:
                                 // libsbx.so, or the sbx executable
  uid_t libsbx_owner = 0;        // its owner: the one uid besides root that plugins may belong to
  std::string libsbx_owner_sid;  // Windows: the SID that owns sbx.exe, the one trustee besides
                                 // SYSTEM, Administrators and TrustedInstaller that may own
                                 // and write the plugin directory; empty elsewhere
  std::string lib_dir;           // <prefix>/<libdir>, where libsbx.so and the plugins are
  std::string plugin_dir;        // <libdir>/sbx/backends
  std::string stage2_path;       // <prefix>/libexec/sbx/sbx-stage2
  std::string bin_dir;           // <prefix>/bin, where the sbx executable is installed
  std::string prefix;            // <prefix>: the install's root, kept read-only as a whole
};

// The layout of the running code, never from the environment or argv:
//  - in libsbx.so: the real path of the loaded object (dladdr, then realpath), prefix = its
//    directory minus CMAKE_INSTALL_LIBDIR;
//  - on Windows (sbx.exe, which links libsbx in): GetModuleFileNameW of the executable, in the
//    generic form "C:/prefix/bin/sbx.exe"; the plugins are in "C:/prefix/lib/sbx/backends",
//    there is no stage-2 helper;
//  - in the sbx executable (Linux): the kernel's record of the running file, /proc/self/exe
//    (only from a real procfs, and the name must still lead to the running inode); without
//    procfs, the name it was started by (AT_EXECFN) resolved with realpath, accepted only if
//    that file's read-only segments are byte for byte the running image. Prefix = its directory
//    minus CMAKE_INSTALL_BINDIR. argv[0] is never used: any caller can set it.
// The sbx executable looks once per process (a run asks several times: resolution, the loader,
// the capability needs) and answers later calls from that look; in libsbx.so, which a
// long-lived embedder holds, every call looks again.
Result<InstallLayout> install_layout();

// The existing directories that hold sbx's own code: the directory of libsbx (with the plugin
// directory below it) and of the running code, the plugin directory, the directory of sbx-stage2
// and the bin directory of the sbx executable. Each as the layout names it and, when that differs,
// canonicalised (realpath). A sandboxed command able to write any of them could plant code that the
// next `sbx` runs on the host, so resolution keeps them read-only in every sandbox.
std::vector<std::string> install_directories(const InstallLayout& layout);

// The install prefixes a sandbox must not write (core/src/resolution/README.md):
// the running install's prefix, then every other sbx install found on the host
// that a later run or the user's shell could start: the real install behind each `sbx` on
// `path_env` (a PATH value) and the usual prefixes /opt/sbx, <home>/.local/opt/sbx,
// <home>/.local, /usr/local and /usr. A prefix is an install when <prefix>/bin/sbx is a regular
// file and <prefix>/libexec/sbx or <prefix>/<libdir>/sbx is a directory, for this build's
// libdir, "lib" or the host's multiarch lib/<triplet> (either layout, whatever this build's).
// Each as found and, when that differs, canonicalised (realpath). `running` may be empty (no
// layout).
std::vector<std::string> install_prefixes(const std::string& running, const std::string& path_env,
                                          const std::string& home);

// The existing directories below `prefix` that an install fills (bin, its libdir and "lib",
// which holds any lib/<triplet>, libexec, include, share), each as named and canonicalised:
// kept read-only on their own where the whole prefix cannot be (it holds the working directory
// or the home directory).
std::vector<std::string> prefix_directories(const std::string& prefix);

// install_directories() of the libsbx that runs, or why its layout cannot be found. Found once
// per process in the sbx executable, like install_layout().
// `prefix`, when given, receives the same layout's prefix (one lookup of the install, not two:
// in libsbx.so every lookup resolves the library's path again).
Result<std::vector<std::string>> running_install_directories(std::string* prefix = nullptr);

// running_install_directories(), the install prefixes (install_prefixes() from this process's
// PATH and HOME) and their prefix_directories(); without the running layout only the other
// installs' (for messages and annotations only: resolution fails closed on its own).
std::vector<std::string> current_install_directories();

// The process-wide host table handed to plugins (logging through spdlog, spawn_and_wait,
// the stage-2 path). Valid for the life of the process.
const sbx_host_v2* host_services(const InstallLayout& layout);

struct BackendRefusalLog;  // report_json.hpp
class LimitedRun;          // run_limits.hpp

// The services of one run (sbx_run_v2, abi.h), handed to the backend's exec() beside the plan
// and to core's own spawner: what the backend reports goes to this run alone, whatever thread
// it reports from, and what it starts goes under this run's limits. Nothing of it is
// thread-local. Lives for the run; the table it hands out is valid as long as it.
class RunServices {
 public:
  // `refusals`: where the backend's refused connections go (null: only logged, debug).
  // `on_started`: called once, when the run's first process exists (run_started, or core's
  // spawner once its child exists). `limits`: the run's limits for the children the backend
  // starts (null: none).
  RunServices(BackendRefusalLog* refusals, std::function<void()> on_started,
              const LimitedRun* limits);
  RunServices(const RunServices&) = delete;
  RunServices& operator=(const RunServices&) = delete;

  const sbx_run_v2* table() const { return &table_; }

  // sbx_run_v2::run_started: the first call runs on_started; never throws (what on_started
  // throws is dropped: its work is then done later).
  void started() noexcept;
  // sbx_run_v2::report_network_refusal, with the kind and address checked.
  void refused(std::string_view kind, std::string_view address) noexcept;
  // sbx_run_v2::prepare_child: the run's cgroup and rlimits, in a child between fork/vfork and
  // execve. Async-signal-safe; 0, or an errno value.
  int prepare_child() const noexcept;

  // sbx_run_v2::stdio_fd: what the command gets as 0, 1, 2 (-1: none). By default this
  // process's own 0-2, each that is open (run_io.hpp RunStdio gives others). `own`: the command
  // writes where this process's own stdio goes (RunStdio::own_stdio), so a plugin built for ABI
  // 2.0, which passes sbx's own 0-2 on, may run it.
  void set_stdio(const std::array<int, 3>& fds, bool own) {
    stdio_ = fds;
    own_stdio_ = own;
  }
  int stdio_fd(int which) const noexcept;
  bool own_stdio() const { return own_stdio_; }
  // sbx_run_v2::cancel_fd: readable once the run is to end (run_io.hpp RunControl); -1 default.
  void set_cancel_fd(int fd) { cancel_fd_ = fd; }
  int cancel_fd() const noexcept { return cancel_fd_; }
  // sbx_run_v2::forward_signals: the signals sent to this process are the command's (true, the
  // default: `sbx exec`) or the embedding process's own (RunRequest::forward_signals).
  void set_forward_signals(bool forward) { forward_signals_ = forward; }
  bool forward_signals() const noexcept { return forward_signals_; }

  // For the process a third-party plugin's exec() runs in (plugins/call_isolation.cpp), whose
  // run table relays to the real run in sbx:
  // the run's limits, as given to the constructor;
  const LimitedRun* limits() const { return limits_; }
  // where refused connections go instead of the log given to the constructor (called under
  // the run's lock, once per refusal);
  void set_refusal_sink(std::function<void(std::string_view kind, std::string_view address)> sink) {
    refusal_sink_ = std::move(sink);
  }
  // and, with `parent` > 0, prepare_child also ties each child to `parent`: the child is
  // killed (SIGKILL) when the thread of `parent` that started it ends, and prepare_child fails
  // (ESRCH) when `parent` is already gone (Linux; elsewhere nothing more is done).
  void tie_children_to(int parent) { tie_children_to_ = parent; }

 private:
  sbx_run_v2 table_{};
  std::array<int, 3> stdio_;
  bool own_stdio_ = true;
  int cancel_fd_ = -1;
  bool forward_signals_ = true;
  BackendRefusalLog* refusals_;
  std::function<void()> on_started_;
  const LimitedRun* limits_;
  std::function<void(std::string_view, std::string_view)> refusal_sink_;
  int tie_children_to_ = 0;  // a pid_t (POSIX)
  std::mutex refusals_mutex_;
};

const char* sbx_version();

}  // namespace sbx
