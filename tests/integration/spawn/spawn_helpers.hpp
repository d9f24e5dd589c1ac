// The spawn integration tests' own helpers: spawn_and_wait with the child's stdout captured, and
// the test binary's "helper" mode (a child process with scripted signal behaviour). Scratch
// directories and files come from the shared test support (sbx_test/).
#pragma once

#include <string>
#include <vector>

#include "sbx/core/spawn.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"
#include "sbx_test/files.hpp"
#include "sbx_test/temp_dir.hpp"

namespace sbx::spawn_test {

struct Captured {
  Result<ExitStatus> status = Error{"not run"};
  std::string out;
};

// Runs spawn_and_wait with fd 1 redirected to a temporary file (and fd 0 from `stdin_text`
// when given), then returns the status and everything the command wrote to stdout.
Captured run_capturing(const ExecPlan& plan, const std::string* stdin_text = nullptr);

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
