// The post-run created-names walk (core/src/run/created_names.cpp) on a synthetic tree, against
// the walk it replaced (every entry stat'ed, fdopendir/readdir, statx for the device then openat
// per directory), kept here only as the baseline. Rounds are interleaved; medians and their
// ratio are printed, and both walks must report the same names.
//
// Also CreatedNamesScan (the tree read while the command runs, checked after it), in the same
// loop: its after-run part (finish() once the scan has read everything: what a run waits for
// when its command runs longer than the scan), the same with the root changed in between (one
// directory read again, its subdirectories opened again: bwrap's mount points for missing
// protected names change a workspace root, a busy /tmp changes anyway), and its total
// (start, scan, finish: what a command that ends at once costs, at worst). All must report
// what find_created_names reports.
//
//   sbx_bench_created_names [ROUNDS] [DIRS] [FILES_PER_DIR] [SCAN_DESCRIPTORS]
//                                          (defaults 21, 2000, 10, CreatedNamesScan's own budget)
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "sbx/core/created_names.hpp"

namespace {

namespace fs = std::filesystem;

// The former walk, reduced to what it cost: statx of every entry (type, device, times), and
// for each directory fdopendir + readdir after an openat. Same answers as find_created_names.
class FullStatWalk {
 public:
  FullStatWalk(const sbx::CreatedNamesWatch& watch, std::int64_t since)
      : watch_(watch), since_(since) {}
  std::set<std::string> found;

  void root(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      dir(fd, path, st.st_dev);
    } else {
      ::close(fd);
    }
  }

 private:
  struct Result {
    bool changed = false;
    bool empty = true;
  };
  Result dir(int fd, const std::string& path, dev_t device) {
    Result result;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      ::close(fd);
      return result;
    }
    while (const dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      result.empty = false;
      struct statx stx {};
      if (::statx(::dirfd(d), entry->d_name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
                  STATX_TYPE | STATX_CTIME | STATX_BTIME, &stx) != 0)
        continue;
      const std::string child = path + "/" + name;
      const std::int64_t ctime = stx.stx_ctime.tv_sec * 1000000000LL + stx.stx_ctime.tv_nsec;
      const std::int64_t btime = stx.stx_btime.tv_sec * 1000000000LL + stx.stx_btime.tv_nsec;
      bool changed = std::max(ctime, btime) >= since_;
      bool empty_dir = false;
      if (S_ISDIR(stx.stx_mode) && makedev(stx.stx_dev_major, stx.stx_dev_minor) == device) {
        const int sub =
            ::openat(::dirfd(d), entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
          const Result inner = dir(sub, child, device);
          changed = changed || inner.changed;
          empty_dir = inner.empty;
        }
      }
      result.changed = result.changed || changed;
      if (changed && !empty_dir &&
          std::find(watch_.names.begin(), watch_.names.end(), name) != watch_.names.end())
        found.insert(child);
    }
    ::closedir(d);
    return result;
  }

  const sbx::CreatedNamesWatch& watch_;
  std::int64_t since_;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <class F>
double millis(F&& f) {
  const auto begin = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 21;
  const int dirs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2000;
  const int files = argc > 3 ? std::max(0, std::atoi(argv[3])) : 10;
  sbx::CreatedNamesLimits scan_limits;
  if (argc > 4)
    scan_limits.scan_descriptors = static_cast<std::size_t>(std::max(0, std::atoi(argv[4])));

  char pattern[] = "/tmp/sbx-bench-created-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return 1;
  const fs::path root = pattern;
  // 2,000 directories as 40 × 50 two levels deep, FILES_PER_DIR files each; a few old .git
  // directories (their contents are stat'ed by both walks), then one new .git deep down.
  for (int i = 0; i < dirs; ++i) {
    const fs::path dir = root / ("d" + std::to_string(i / 50)) / ("s" + std::to_string(i % 50));
    fs::create_directories(dir);
    for (int f = 0; f < files; ++f) std::ofstream(dir / ("file" + std::to_string(f) + ".c")) << "x";
    if (i % 500 == 0) {
      fs::create_directories(dir / ".git/objects");
      std::ofstream(dir / ".git/objects/pack") << "x";
    }
  }
  ::usleep(30 * 1000);
  const std::int64_t start = sbx::created_names_clock();
  fs::create_directories(root / "d1/s7/.git/hooks");
  std::ofstream(root / "d1/s7/.git/hooks/pre-commit") << "#!/bin/sh\n";

  const sbx::CreatedNamesWatch watch{{root.string()}, {".git", ".codex", ".agents"}};
  std::vector<double> walk_times;
  std::vector<double> baseline_times;
  std::vector<double> after_run_times;
  std::vector<double> root_changed_times;
  std::vector<double> total_times;
  bool same = true;
  const auto same_as = [&](const sbx::CreatedNames& scanned, const sbx::CreatedNames& walked) {
    same = same && scanned.paths == walked.paths && scanned.truncated == walked.truncated;
  };
  for (int round = 0; round < rounds; ++round) {
    sbx::CreatedNames now;
    FullStatWalk before(watch, start);
    walk_times.push_back(millis([&] { now = sbx::find_created_names(watch, start); }));
    baseline_times.push_back(millis([&] { before.root(root.string()); }));
    same = same && !now.truncated &&
           std::set<std::string>(now.paths.begin(), now.paths.end()) == before.found &&
           before.found.size() == 1;
    {
      sbx::CreatedNamesScan scan(watch, start, scan_limits);
      scan.wait_until_scanned();
      sbx::CreatedNames scanned;
      after_run_times.push_back(millis([&] { scanned = scan.finish(); }));
      same_as(scanned, now);
    }
    {
      sbx::CreatedNamesScan scan(watch, start, scan_limits);
      scan.wait_until_scanned();
      std::ofstream(root / "mount-point") << "";
      fs::remove(root / "mount-point");
      sbx::CreatedNames scanned;
      root_changed_times.push_back(millis([&] { scanned = scan.finish(); }));
      same_as(scanned, now);
    }
    sbx::CreatedNames scanned;
    total_times.push_back(millis([&] {
      sbx::CreatedNamesScan scan(watch, start, scan_limits);
      scan.wait_until_scanned();
      scanned = scan.finish();
    }));
    same_as(scanned, now);
  }
  fs::remove_all(root);

  const double walk = median(walk_times);
  const double baseline = median(baseline_times);
  std::printf("tree: %d directories x %d files (+ %d old .git), %d rounds, medians\n", dirs, files,
              (dirs + 499) / 500, rounds);
  std::printf("find_created_names        %8.2f ms\n", walk);
  std::printf("full-stat walk (baseline) %8.2f ms\n", baseline);
  std::printf("ratio                     %8.2fx faster\n", baseline / walk);
  const double after_run = median(after_run_times);
  const double root_changed = median(root_changed_times);
  const double total = median(total_times);
  std::printf(
      "CreatedNamesScan, after the run (finish)     %8.2f ms  %5.2fx of find_created_names\n",
      after_run, after_run / walk);
  std::printf("  the same, the root changed during the run  %8.2f ms  %5.2fx\n", root_changed,
              root_changed / walk);
  std::printf("  scan + finish, nothing during the run      %8.2f ms  %5.2fx\n", total,
              total / walk);
  if (!same) {
    std::printf("ERROR: the walks disagree\n");
    return 1;
  }
  return 0;
}
