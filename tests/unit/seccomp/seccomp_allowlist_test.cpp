// The syscall table of the stage-2 filter: what it does not list answers ENOSYS (so programs
// fall back and new kernel calls stay closed), what it lists reaches the kernel, a further
// filter can be stacked on it, and terminal-injection ioctls are refused on a real pty.
// Every probe runs in a forked child under the installed filter.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <pty.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <termios.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "filtered_child.hpp"
#include "sbx_test/golden.hpp"
#include "sbx_test/temp_dir.hpp"

namespace {

using sbx::stage2::NetworkFilter;
using sbx_seccomp_test::raw;
using sbx_seccomp_test::run_filtered;

struct Probe {
  const char* name;
  std::function<long()> call;
};

constexpr NetworkFilter kAllModes[] = {NetworkFilter::kBlocked, NetworkFilter::kOpen,
                                       NetworkFilter::kProxy};

// Numbers from the kernel's common syscall table (the same on x86_64 and the generic
// architectures), for calls Debian 12's headers do not name yet.
constexpr long kOpenTreeAttr = 467;  // Linux 6.15
constexpr long kFileSetattr = 469;   // Linux 6.17

std::vector<Probe> unlisted_calls() {
  return {
      // Each would succeed (or fail otherwise than ENOSYS) for root without the filter.
      {"syslog", [] { return raw(SYS_syslog, 10 /*SYSLOG_ACTION_SIZE_BUFFER*/); }},
      {"open_tree_attr", [] { return raw(kOpenTreeAttr, -1, 0, 0, 0, 0); }},
      {"file_setattr", [] { return raw(kFileSetattr, -1, 0, 0, 0, 0); }},
      {"openat2",
       [] {
         open_how how{};
         how.flags = O_RDONLY;
         return raw(SYS_openat2, AT_FDCWD, reinterpret_cast<long>("/"),
                    reinterpret_cast<long>(&how), sizeof how);
       }},
      {"clone3", [] { return raw(SYS_clone3, 0, 0); }},
      {"kcmp", [] { return raw(SYS_kcmp, ::getpid(), ::getpid(), 0 /*KCMP_FILE*/, 0, 0); }},
      {"personality_read_implies_exec", [] { return raw(SYS_personality, READ_IMPLIES_EXEC); }},
      {"get_mempolicy", [] { return raw(SYS_get_mempolicy, 0, 0, 0, 0, 0); }},
#ifdef SYS_modify_ldt
      {"modify_ldt",
       [] {
         static char buffer[16];
         return raw(SYS_modify_ldt, 0, reinterpret_cast<long>(buffer), sizeof buffer);
       }},
#endif
  };
}

TEST(SeccompTable, UnlistedCallsAnswerEnosys) {
  for (NetworkFilter net : kAllModes) {
    for (const Probe& p : unlisted_calls())
      EXPECT_EQ(run_filtered(net, p.call, ENOSYS), "ok") << p.name;
  }
}

using ScratchDir = sbx::test::TempDir;  // a scratch directory for the probes that need a path

// Calls an agent's tools make all the time; each must reach the kernel and succeed.
std::vector<Probe> listed_calls(const std::string& file) {
  return {
      {"getpid", [] { return raw(SYS_getpid); }},
      {"uname",
       [] {
         utsname u;
         return static_cast<long>(::uname(&u));
       }},
      {"statx",
       [file] {
         struct statx sx;
         return raw(SYS_statx, AT_FDCWD, reinterpret_cast<long>(file.c_str()), 0, STATX_BASIC_STATS,
                    reinterpret_cast<long>(&sx));
       }},
      {"openat_read", [file] { return static_cast<long>(::open(file.c_str(), O_RDONLY)); }},
      {"memfd_create", [] { return static_cast<long>(::memfd_create("x", MFD_CLOEXEC)); }},
      {"pipe2",
       [] {
         int p[2];
         return static_cast<long>(::pipe2(p, O_CLOEXEC));
       }},
      {"getrandom",
       [] {
         char b[8];
         return raw(SYS_getrandom, reinterpret_cast<long>(b), 8, 0);
       }},
      {"epoll_create1", [] { return raw(SYS_epoll_create1, 0); }},
      {"personality_query", [] { return raw(SYS_personality, 0xffffffff); }},
      {"personality_addr_no_randomize", [] { return raw(SYS_personality, ADDR_NO_RANDOMIZE); }},
      {"prctl_no_new_privs",
       [] { return ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0L : -1L; }},
      {"landlock_abi_version",
       [] { return raw(SYS_landlock_create_ruleset, 0, 0, LANDLOCK_CREATE_RULESET_VERSION); }},
      {"chmod_plain", [file] { return static_cast<long>(::chmod(file.c_str(), 0750)); }},
      {"fchmodat2_plain",
       [file] {
         return raw(452 /*fchmodat2*/, AT_FDCWD, reinterpret_cast<long>(file.c_str()), 0640, 0);
       }},
      {"chown_to_self",
       [file] { return static_cast<long>(::chown(file.c_str(), ::getuid(), ::getgid())); }},
      {"utimensat",
       [file] { return static_cast<long>(::utimensat(AT_FDCWD, file.c_str(), nullptr, 0)); }},
      {"setxattr_reaches_kernel",
       [file] {
         const long rc = ::setxattr(file.c_str(), "user.sbx", "1", 1, 0);
         return rc == 0 || errno == ENOTSUP ? 0L : rc;  // ENOTSUP: the file system answered
       }},
      {"fork_and_exec",
       [] {
         const pid_t child = ::fork();
         if (child == 0) {
           ::execl("/bin/true", "true", nullptr);
           ::_exit(127);
         }
         int st = 0;
         return ::waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0L
                                                                                           : -1L;
       }},
  };
}

TEST(SeccompTable, ListedCallsReachTheKernel) {
  ScratchDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string file = dir.path() + "/f";
  ASSERT_EQ(::close(::open(file.c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  for (NetworkFilter net : kAllModes) {
    for (const Probe& p : listed_calls(file))
      EXPECT_EQ(run_filtered(net, p.call, 0), "ok") << p.name;
  }
}

// A further filter (e.g. a user-notification supervisor's) can be stacked after ours: it can
// only restrict more, and stage 2 installs one in Landlock mode.
TEST(SeccompTable, AUserNotificationFilterCanBeStackedOnTop) {
  EXPECT_EQ(run_filtered(
                NetworkFilter::kBlocked,
                [] {
                  sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
                  sock_fprog prog{1, allow};
                  return raw(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                             reinterpret_cast<long>(&prog));
                },
                0),
            "ok");
}

// Opens a pty pair in the child (after the filter: posix_openpt's own ioctls must pass) and
// runs `request` on the terminal side.
long on_pty(const std::function<long(int)>& request) {
  int controller = -1;
  int terminal = -1;
  if (::openpty(&controller, &terminal, nullptr, nullptr, nullptr) != 0) return -1;
  return request(terminal);
}

TEST(SeccompTable, TerminalInjectionIoctlsAreRefusedOnAPty) {
  const std::vector<std::pair<const char*, unsigned long>> refused = {
      {"TIOCSETD", TIOCSETD},   {"TIOCSTI", TIOCSTI},     {"TIOCLINUX", TIOCLINUX},
      {"TIOCCONS", TIOCCONS},   {"KDSKBENT", 0x4B47},     {"KDSKBSENT", 0x4B49},
      {"KDSKBDIACR", 0x4B4B},   {"KDSKBDIACRUC", 0x4BFB}, {"KDSETKEYCODE", 0x4B4D},
      {"TIOCSPGRP", TIOCSPGRP}, {"TIOCSCTTY", TIOCSCTTY}};
  for (NetworkFilter net : kAllModes) {
    for (const auto& [name, request] : refused) {
      const unsigned long req = request;
      // N_TTY (0) as the argument: without the filter TIOCSETD would succeed harmlessly.
      EXPECT_EQ(run_filtered(
                    net,
                    [req] {
                      return on_pty([req](int fd) {
                        static char arg[64] = {};
                        return raw(SYS_ioctl, fd, static_cast<long>(req),
                                   reinterpret_cast<long>(arg));
                      });
                    },
                    EPERM),
                "ok")
          << name;
    }
  }
}

TEST(SeccompTable, OrdinaryTerminalIoctlsStillWork) {
  EXPECT_EQ(run_filtered(
                NetworkFilter::kBlocked,
                [] {
                  return on_pty([](int fd) {
                    termios t{};
                    winsize w{24, 80, 0, 0};
                    if (::tcgetattr(fd, &t) != 0 || ::tcsetattr(fd, TCSANOW, &t) != 0) return -1L;
                    if (::ioctl(fd, TIOCSWINSZ, &w) != 0 || ::ioctl(fd, TIOCGWINSZ, &w) != 0)
                      return -1L;
                    int ldisc = -1;
                    return ::ioctl(fd, TIOCGETD, &ldisc) == 0 && ldisc == 0 ? 0L : -1L;
                  });
                },
                0),
            "ok");
}

// AF_VSOCK reaches the hypervisor's host, not the network: refused even with the network open
// (as Docker does), and in the other modes with every other non-TCP socket.
TEST(SeccompTable, VsockSocketsAreRefusedInEveryMode) {
  for (NetworkFilter net : kAllModes) {
    EXPECT_EQ(run_filtered(
                  net, [] { return raw(SYS_socket, 40 /*AF_VSOCK*/, SOCK_STREAM, 0); }, EPERM),
              "ok");
  }
}

// The table as a reviewable list, one "name (number): action" line per call it names, parsed
// from the exported text of the first program; pinned per network mode.
std::string table_listing(const std::string& pfc) {
  const std::string table = pfc.substr(0, pfc.find("filter 2 of 2"));
  std::istringstream in(table);
  std::map<int, std::string> rows;
  std::string line;
  std::string current;
  int number = -1;
  std::set<std::string> actions;
  bool conditional = false;
  auto flush = [&] {
    if (number < 0) return;
    std::string row = current + " (" + std::to_string(number) + "):";
    if (conditional) row += " by argument";
    for (const std::string& a : actions) row += " " + a;
    rows[number] = row;
  };
  while (std::getline(in, line)) {
    const auto header = line.find("# filter for syscall \"");
    if (header != std::string::npos) {
      flush();
      const auto name_start = header + 22;
      const auto name_end = line.find('"', name_start);
      current = line.substr(name_start, name_end - name_start);
      number = std::stoi(line.substr(line.find('(', name_end) + 1));
      actions.clear();
      conditional = false;
    } else if (line.find("else") != std::string::npos ||
               line.find("$syscall >") != std::string::npos ||
               line.find("default action") != std::string::npos) {
      flush();
      number = -1;
    } else if (line.find("$a") != std::string::npos) {
      conditional = true;
    } else if (const auto a = line.find("action "); a != std::string::npos) {
      actions.insert(line.substr(a + 7, line.find(';') - a - 7));
    }
  }
  flush();
  std::string text;
  for (const auto& [nr, row] : rows) text += row + "\n";
  return text;
}

class SeccompTableGolden : public ::testing::TestWithParam<std::pair<const char*, NetworkFilter>> {
};

TEST_P(SeccompTableGolden, ListingMatches) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the golden listing is for x86_64 syscall numbers";
#endif
  const auto& [name, net] = GetParam();
  const std::filesystem::path file =
      std::filesystem::path(SBX_GOLDEN_DIR) / "seccomp" / ("table-" + std::string(name) + ".txt");
  sbx::Result<std::string> text = sbx::stage2::export_filter_text(net);
  ASSERT_TRUE(text.ok()) << text.error();
  const std::string listing = table_listing(*text);
  sbx::test::expect_golden(file, listing);
}

INSTANTIATE_TEST_SUITE_P(Modes, SeccompTableGolden,
                         ::testing::Values(std::make_pair("blocked", NetworkFilter::kBlocked),
                                           std::make_pair("open", NetworkFilter::kOpen),
                                           std::make_pair("proxy", NetworkFilter::kProxy),
                                           std::make_pair("private", NetworkFilter::kPrivate)),
                         [](const ::testing::TestParamInfo<SeccompTableGolden::ParamType>& p) {
                           return std::string(p.param.first);
                         });

}  // namespace
