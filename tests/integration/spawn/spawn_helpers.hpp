// Shared helpers for the spawn integration tests: temp dirs, output capture, and the test
// binary's own "helper" mode (a child process with scripted signal behaviour).
#pragma once

#include <string>
#include <vector>

#include "sbx/core/spawn.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::spawn_test {

// A fresh directory under /tmp (canonical path), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `content` to name with `mode`; returns the full path.
  std::string write(const std::string& name, const std::string& content, unsigned mode) const;

 private:
  std::string path_;
};

struct Captured {
  Result<ExitStatus> status = Error{"not run"};
  std::string out;
};

// Runs spawn_and_wait with fd 1 redirected to a temporary file (and fd 0 from `stdin_text`
// when given), then returns the status and everything the command wrote to stdout.
Captured run_capturing(const ExecPlan& plan, const std::string* stdin_text = nullptr);

std::string read_file(const std::string& path);

// Polls until `path` exists; false after `timeout_ms`.
bool wait_for_file(const std::string& path, int timeout_ms);

// The canonical path of this test executable (used as a helper child).
std::string self_exe();

// A plan that runs this executable in helper mode "record": it installs handlers for the
// forwarded signals, writes `ready_file`, and waits up to 10 s. It exits on SIGTERM (code 1)
// or SIGUSR1 (code 2) after writing, to `result_file`, the decimal bit mask (1 << signo) of
// every other signal it caught. With `own_process_group` it first moves to its own process
// group, so that terminal-generated signals can no longer reach it directly.
ExecPlan record_helper_plan(const std::string& ready_file, const std::string& result_file,
                            bool own_process_group);

}  // namespace sbx::spawn_test
