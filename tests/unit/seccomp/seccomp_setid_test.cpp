// Set-user-ID and set-group-ID bits cannot be created or set under the stage-2 filter, by any
// call whose mode the filter can read (EPERM), and openat2, whose mode it cannot read, answers
// ENOSYS. Device nodes are refused too. Each probe runs in a forked child; afterwards the
// test looks at the files from outside.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <string>
#include <vector>

#include "filtered_child.hpp"
#include "sbx_test/temp_dir.hpp"

// The probes use the legacy calls (open, creat, chmod, mknod, mkdir) that x86_64 still has;
// the generic architectures only have the *at forms, which the same rules cover.
#if defined(SYS_open) && defined(SYS_creat) && defined(SYS_chmod) && defined(SYS_mknod)
namespace {

namespace fs = std::filesystem;
using sbx::stage2::NetworkFilter;
using sbx_seccomp_test::raw;
using sbx_seccomp_test::run_filtered;

constexpr long kFchmodat2 = 452;  // Linux 6.6, the same number on every architecture
constexpr long kUpperBits = 0x100000000L;

long path_arg(const std::string& p) { return reinterpret_cast<long>(p.c_str()); }

class SeccompSetId : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = dir_ + "/tool";
    ASSERT_EQ(::close(::open(file_.c_str(), O_CREAT | O_WRONLY, 0755)), 0);
    ASSERT_EQ(::chmod(file_.c_str(), 0755), 0);
  }
  // Every file in the directory: none may carry S_ISUID or S_ISGID, none may be a device.
  void expect_no_set_id_or_device_files() {
    for (const auto& entry : fs::directory_iterator(dir_)) {
      struct stat st {};
      ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0);
      EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u)
          << entry.path() << " mode " << std::oct << st.st_mode;
      EXPECT_FALSE(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) << entry.path();
    }
  }
  std::string in_dir(const char* name) const { return dir_ + "/" + name; }

  sbx::test::TempDir scratch_;
  const std::string dir_ = scratch_.path();
  std::string file_;
};

TEST_F(SeccompSetId, ModeChangesWithSetIdBitsAreRefused) {
  const std::string f = file_;
  const std::vector<std::pair<const char*, std::function<long()>>> probes = {
      {"chmod 4755", [f] { return raw(SYS_chmod, path_arg(f), 04755); }},
      {"chmod 2755", [f] { return raw(SYS_chmod, path_arg(f), 02755); }},
      {"chmod 6755", [f] { return raw(SYS_chmod, path_arg(f), 06755); }},
      {"chmod 4755 with upper bits",
       [f] { return raw(SYS_chmod, path_arg(f), kUpperBits | 04755); }},
      {"fchmod 4755",
       [f] {
         const int fd = ::open(f.c_str(), O_RDONLY);
         return raw(SYS_fchmod, fd, 04755);
       }},
      {"fchmodat 2755", [f] { return raw(SYS_fchmodat, AT_FDCWD, path_arg(f), 02755); }},
      {"fchmodat2 4755", [f] { return raw(kFchmodat2, AT_FDCWD, path_arg(f), 04755, 0); }},
  };
  for (NetworkFilter net : {NetworkFilter::kBlocked, NetworkFilter::kOpen, NetworkFilter::kProxy}) {
    for (const auto& [name, call] : probes) EXPECT_EQ(run_filtered(net, call, EPERM), "ok") << name;
  }
  expect_no_set_id_or_device_files();
}

TEST_F(SeccompSetId, CreationWithSetIdBitsIsRefused) {
  const std::string a = in_dir("a"), b = in_dir("b"), c = in_dir("c"), d = in_dir("d"),
                    e = in_dir("e"), dir = dir_;
  const std::vector<std::pair<const char*, std::function<long()>>> probes = {
      {"open O_CREAT 4755", [a] { return raw(SYS_open, path_arg(a), O_CREAT | O_WRONLY, 04755); }},
      {"openat O_CREAT|O_EXCL 2755",
       [b] { return raw(SYS_openat, AT_FDCWD, path_arg(b), O_CREAT | O_EXCL | O_WRONLY, 02755); }},
      {"creat 4755", [c] { return raw(SYS_creat, path_arg(c), 04755); }},
      {"open O_TMPFILE 4755",
       [dir] { return raw(SYS_open, path_arg(dir), O_TMPFILE | O_WRONLY, 04755); }},
      {"openat O_TMPFILE 2755",
       [dir] { return raw(SYS_openat, AT_FDCWD, path_arg(dir), O_TMPFILE | O_RDWR, 02755); }},
      {"mknod regular 4755", [d] { return raw(SYS_mknod, path_arg(d), S_IFREG | 04755, 0); }},
      {"mknodat regular 2755",
       [e] { return raw(SYS_mknodat, AT_FDCWD, path_arg(e), S_IFREG | 02755, 0); }},
      {"mknod character device",
       [d] {
         return raw(SYS_mknod, path_arg(d), S_IFCHR | 0666, static_cast<long>(makedev(1, 3)));
       }},
      {"mknodat block device",
       [e] {
         return raw(SYS_mknodat, AT_FDCWD, path_arg(e), S_IFBLK | 0600,
                    static_cast<long>(makedev(7, 0)));
       }},
  };
  for (const auto& [name, call] : probes)
    EXPECT_EQ(run_filtered(NetworkFilter::kBlocked, call, EPERM), "ok") << name;
  expect_no_set_id_or_device_files();
  for (const std::string& p : {a, b, c, d, e}) EXPECT_FALSE(fs::exists(p)) << p;
}

// openat2 carries flags and mode in a struct the filter cannot read: ENOSYS, and libc and
// programs fall back to openat, whose mode the filter checks.
TEST_F(SeccompSetId, Openat2AnswersEnosys) {
  const std::string a = in_dir("a");
  EXPECT_EQ(run_filtered(
                NetworkFilter::kOpen,
                [a] {
                  open_how how{};
                  how.flags = O_CREAT | O_WRONLY;
                  how.mode = 04755;
                  return raw(SYS_openat2, AT_FDCWD, path_arg(a), reinterpret_cast<long>(&how),
                             sizeof how);
                },
                ENOSYS),
            "ok");
  EXPECT_FALSE(fs::exists(a));
}

// Ordinary modes keep working: chmod +x of a build output, creating files and fifos, opening
// without O_CREAT whatever the (ignored) mode argument says, and mkdir, whose S_ISUID/S_ISGID
// the kernel drops itself.
TEST_F(SeccompSetId, OrdinaryModesStillWork) {
  const std::string f = file_, a = in_dir("a"), fifo = in_dir("fifo"), sub = in_dir("sub");
  const std::vector<std::pair<const char*, std::function<long()>>> probes = {
      {"chmod 0700", [f] { return raw(SYS_chmod, path_arg(f), 0700); }},
      {"chmod 1755 (sticky)", [f] { return raw(SYS_chmod, path_arg(f), 01755); }},
      {"fchmodat2 0755", [f] { return raw(kFchmodat2, AT_FDCWD, path_arg(f), 0755, 0); }},
      {"open O_CREAT 0644", [a] { return raw(SYS_open, path_arg(a), O_CREAT | O_WRONLY, 0644); }},
      {"open without O_CREAT, mode 4755 ignored",
       [f] { return raw(SYS_openat, AT_FDCWD, path_arg(f), O_RDONLY, 04755); }},
      {"mknod fifo", [fifo] { return raw(SYS_mknod, path_arg(fifo), S_IFIFO | 0644, 0); }},
      {"mkdir 2755", [sub] { return raw(SYS_mkdir, path_arg(sub), 02755); }},
  };
  for (const auto& [name, call] : probes)
    EXPECT_EQ(run_filtered(NetworkFilter::kBlocked, call, 0), "ok") << name;
  expect_no_set_id_or_device_files();
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_directory(sub));
}

}  // namespace
#else
TEST(SeccompSetId, NeedsTheLegacyCalls) {
  GTEST_SKIP() << "this architecture has no open/creat/chmod/mknod system calls to probe";
}
#endif
