#include "sbx_test/temp_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace sbx::test {

TempDir::TempDir(const std::string& parent) {
  std::string pattern = parent + "/sbx-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed under " + parent);
  path_ = std::filesystem::canonical(pattern).string();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& content,
                           unsigned mode) const {
  const std::string path = file(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
  return path;
}

}  // namespace sbx::test
