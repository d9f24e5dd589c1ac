// Golden files: compare generated text with a checked-in expectation, or, with
// SBX_UPDATE_GOLDEN=1 in the environment, rewrite the expectation for review instead (the test
// is then reported as skipped, naming the file it rewrote).
#pragma once

#include <filesystem>
#include <string>

namespace sbx::test {

// True when SBX_UPDATE_GOLDEN=1: goldens are rewritten rather than compared.
bool updating_goldens();

// Compares `actual` with the file's content (a missing file fails and says how to create it),
// or rewrites the file when updating_goldens().
void expect_golden(const std::filesystem::path& file, const std::string& actual);

}  // namespace sbx::test
