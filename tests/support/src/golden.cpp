#include "sbx_test/golden.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sbx::test {

bool updating_goldens() {
  const char* update = std::getenv("SBX_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

void expect_golden(const std::filesystem::path& file, const std::string& actual) {
  if (updating_goldens()) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << actual;
    GTEST_SKIP() << "SBX_UPDATE_GOLDEN=1: rewrote " << file << " for review";
  }
  std::ifstream in(file, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden " << file << " (run with SBX_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "golden mismatch: " << file;
}

}  // namespace sbx::test
