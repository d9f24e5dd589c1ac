// Captures what a child writes to this process's stdout (or stderr) while `body` runs (for code
// that spawns a child inheriting fd 1), optionally feeding it `stdin_text` on fd 0.
#pragma once

#include <functional>
#include <string>

namespace sbx::test {

// Runs `body` with fd 1 redirected to an unlinked temporary file (and fd 0 read from one
// holding `*stdin_text` when given), restores both, and returns everything written to fd 1.
std::string capture_stdout(const std::function<void()>& body,
                           const std::string* stdin_text = nullptr);

// The same for fd 2: everything `body` (and the children it spawns) wrote to stderr.
std::string capture_stderr(const std::function<void()>& body);

}  // namespace sbx::test
