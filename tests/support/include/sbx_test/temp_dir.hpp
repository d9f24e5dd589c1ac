// A scratch directory for one test: created fresh (canonical path), removed with everything in
// it when the object goes out of scope.
#pragma once

#include <string>

namespace sbx::test {

class TempDir {
 public:
  // Creates <parent>/sbx-test-XXXXXX; throws std::runtime_error when that fails.
  explicit TempDir(const std::string& parent = "/tmp");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string operator/(const std::string& name) const { return file(name); }
  // Writes `content` to `name` with permission bits `mode`; returns the full path.
  std::string write(const std::string& name, const std::string& content,
                    unsigned mode = 0644) const;

 private:
  std::string path_;
};

}  // namespace sbx::test
