// linux/caller: what /proc/self/status says of this process, capability names, and the user
// namespace trial's causes, each under a confinement a forked child sets up for itself (a
// seccomp filter that refuses new user namespaces, one that kills for them, one that allows
// everything, a user namespace whose max_user_namespaces is 0).
#include "caller.hpp"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "sbx_test/docker_default.hpp"
#include "sbx_test/files.hpp"

namespace {

namespace caller = sbx::caller;

// What `body` returns, run in a forked child after `confine` (false: the child reports
// "confine failed"). The child is this process's copy: it may allocate (gtest starts no thread).
std::string in_child(const std::function<bool()>& confine,
                     const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string out = confine() ? body() : std::string("confine failed");
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return text;
}

std::string describe(const caller::UserNamespaceTrial& t) {
  return std::string("allowed=") + (t.allowed ? "1" : "0") +
         " seccomp=" + (t.by_seccomp ? "1" : "0") + "\n" + t.observed + "\nfix: " + t.fix;
}

std::string trial() { return describe(caller::try_user_namespace(caller::read_status())); }

#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#else
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#endif

bool load(std::vector<sock_filter> filter) {
  sock_fprog program{static_cast<unsigned short>(filter.size()), filter.data()};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
}

// clone and unshare with CLONE_NEWUSER answer `action`, as a container runtime's default profile
// answers without CAP_SYS_ADMIN; everything else is allowed.
bool refuse_user_namespaces(unsigned action) {
  return load({
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 0, 6),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  });
}

bool allow_everything() { return load({BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)}); }
#endif

bool user_namespaces_here() { return caller::try_user_namespace(caller::read_status()).allowed; }

TEST(CallerStatus, ReadsThisProcess) {
  const caller::ProcessStatus status = caller::read_status();
  ASSERT_TRUE(status.known);
  EXPECT_EQ(status.seccomp_mode, ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
  const std::string text = sbx::test::read_file("/proc/self/status");
  EXPECT_NE(text.find("NoNewPrivs:\t" + std::string(status.no_new_privs ? "1" : "0")),
            std::string::npos);
  // Under a filter of its own the child sees one filter more, and no_new_privs.
#if defined(__x86_64__) || defined(__aarch64__)
  const std::string seen = in_child(allow_everything, [&] {
    const caller::ProcessStatus s = caller::read_status();
    return std::to_string(s.seccomp_mode) + " " + std::to_string(s.seccomp_filters) + " " +
           (s.no_new_privs ? "1" : "0");
  });
  if (status.seccomp_filters >= 0)
    EXPECT_EQ(seen, "2 " + std::to_string(status.seccomp_filters + 1) + " 1");
  else
    EXPECT_EQ(seen.substr(0, 2), "2 ");
#endif
}

TEST(CallerStatus, CapabilityNames) {
  EXPECT_EQ(caller::capability_name(caller::kCapSysAdmin), "CAP_SYS_ADMIN");
  EXPECT_EQ(caller::capability_name(0), "CAP_CHOWN");
  EXPECT_EQ(caller::capability_name(63), "CAP_63");
  std::vector<std::string> docker;
  for (const auto& [number, name] : sbx::test::docker_default_capabilities())
    docker.emplace_back(name);
  EXPECT_EQ(caller::capability_names(sbx::test::docker_default_capability_mask()), docker);
  EXPECT_GE(caller::last_capability(), 37);  // CAP_AUDIT_READ, Linux 3.16
}

TEST(CallerStatus, ContainerMarkersAreWhatTheHostHas) {
  const std::vector<std::string> markers = caller::container_markers();
  bool dockerenv = false;
  for (const std::string& m : markers) dockerenv |= m == "/.dockerenv";
  EXPECT_EQ(dockerenv, sbx::test::exists("/.dockerenv"));
}

#if defined(__x86_64__) || defined(__aarch64__)
TEST(CallerUserNamespaces, AFilterThatRefusesThemIsNamedWithTheContainerFix) {
  const std::string seen =
      in_child([] { return refuse_user_namespaces(SECCOMP_RET_ERRNO | EPERM); }, trial);
  EXPECT_EQ(seen.rfind("allowed=0 seccomp=1\n", 0), 0u) << seen;
  EXPECT_NE(seen.find("this process's seccomp filter refuses them ("), std::string::npos) << seen;
  EXPECT_NE(seen.find("clone with CLONE_NEWUSER fails with EPERM"), std::string::npos) << seen;
  EXPECT_NE(seen.find("fix: give the container a seccomp profile that allows clone and unshare "
                      "with CLONE_NEWUSER"),
            std::string::npos)
      << seen;
  EXPECT_NE(seen.find("Landlock"), std::string::npos) << seen;
}

TEST(CallerUserNamespaces, AFilterThatKillsForThemKillsOnlyTheTrial) {
  const std::string seen =
      in_child([] { return refuse_user_namespaces(SECCOMP_RET_KILL_PROCESS); }, trial);
  EXPECT_EQ(seen.rfind("allowed=0 seccomp=1\n", 0), 0u) << seen;
  EXPECT_NE(seen.find("clone with CLONE_NEWUSER kills the caller (signal "), std::string::npos)
      << seen;
}

TEST(CallerUserNamespaces, AFilterThatAllowsThemIsNotBlamed) {
  if (!user_namespaces_here()) GTEST_SKIP() << "this host refuses user namespaces: " << trial();
  EXPECT_EQ(in_child(allow_everything, trial).rfind("allowed=1 seccomp=0\n", 0), 0u);
}

TEST(CallerUserNamespaces, TheKernelsOwnRefusalIsNotBlamedOnAFilter) {
  if (!user_namespaces_here()) GTEST_SKIP() << "this host refuses user namespaces: " << trial();
  // In a user namespace of its own (where it holds every capability) the child sets
  // user.max_user_namespaces to 0, as bwrap --disable-userns does; then, under a filter that
  // allows everything, the kernel refuses the next one with ENOSPC.
  const std::string seen = in_child(
      [] {
        if (::unshare(CLONE_NEWUSER) != 0) return false;
        sbx::test::write_file("/proc/sys/user/max_user_namespaces", "0");
        return sbx::test::read_file("/proc/sys/user/max_user_namespaces") == "0\n" &&
               allow_everything();
      },
      trial);
  if (seen == "confine failed")
    GTEST_SKIP() << "cannot set user.max_user_namespaces in a user namespace here";
  EXPECT_EQ(seen.rfind("allowed=0 seccomp=0\n", 0), 0u) << seen;
  EXPECT_NE(seen.find("ENOSPC: user.max_user_namespaces is 0 here"), std::string::npos) << seen;
}
#endif

}  // namespace
