// A fresh directory tree for one loader test, under the build tree (never /tmp: it is sticky
// and world-writable, so the trust walk would rightly refuse everything below it). The tree's
// base is the loader's trust root; every directory and file gets an explicit mode, so the
// build's umask cannot change what the loader sees.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "plugins/trusted_fs.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/runtime.hpp"

namespace sbx::testing {

namespace fs = std::filesystem;

inline void chmod_or_throw(const fs::path& path, mode_t mode) {
  if (::chmod(path.c_str(), mode) != 0) throw std::runtime_error("chmod failed: " + path.string());
}

class TestTree {
 public:
  explicit TestTree(const std::string& label) {
    static std::atomic<int> counter{0};
    const fs::path parent = SBX_LOADER_TEST_TMP;
    fs::create_directories(parent);
    base_ = parent / (label + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(base_);
    fs::create_directory(base_);
    chmod_or_throw(base_, 0755);
  }
  ~TestTree() {
    std::error_code ec;
    // Give back write permission where a test took it away, then remove everything.
    for (auto it = fs::recursive_directory_iterator(base_, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0755);
    }
    fs::remove_all(base_, ec);
  }
  TestTree(const TestTree&) = delete;
  TestTree& operator=(const TestTree&) = delete;

  const fs::path& base() const { return base_; }

  // Creates base/rel (each missing component 0755, the last one `mode`).
  fs::path dir(const std::string& rel, mode_t mode = 0755) const {
    fs::path path = base_;
    for (const fs::path& part : fs::path(rel)) {
      path /= part;
      if (!fs::exists(path)) {
        fs::create_directory(path);
        chmod_or_throw(path, 0755);
      }
    }
    chmod_or_throw(path, mode);
    return path;
  }

  // Copies a fixture from <build>/fixture-plugins into dir (a fresh inode), as `as`.
  static fs::path copy_fixture(const std::string& fixture, const fs::path& dir,
                               const std::string& as = "", mode_t mode = 0644) {
    const fs::path target = dir / (as.empty() ? fixture : as);
    fs::copy_file(fs::path(SBX_LOADER_FIXTURE_DIR) / fixture, target,
                  fs::copy_options::overwrite_existing);
    chmod_or_throw(target, mode);
    return target;
  }

  // Loader options for these directories with this tree as the trust root, the host table of
  // the running libsbx, and (for a non-root run) the current user as trusted owner.
  LoaderOptions options(const std::vector<fs::path>& dirs) const {
    LoaderOptions options;
    for (const fs::path& d : dirs) options.directories.push_back(d.string());
    options.trust_root = base_.string();
    options.trusted_owner = ::geteuid();
    Result<InstallLayout> layout = install_layout();
    if (!layout) throw std::runtime_error(layout.error());
    options.host = host_services(*layout);
    return options;
  }

 private:
  fs::path base_;
};

inline bool running_as_root() { return ::geteuid() == 0; }

// The fixture plugin every loader suite loads when it needs one that works.
inline constexpr const char* kGood = "sbx-backend-fixture-good.so";

// The owners the trust checks accept in these tests: the user running them.
inline plugins::Owners me() { return plugins::Owners{::geteuid()}; }

inline void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << text << "\nmissing: " << part;
}

}  // namespace sbx::testing
