// sbx_docker_default_exec [--user UID:GID] [--cap-add NAME]... [--] PROGRAM [ARG...]
//
// Runs PROGRAM (an absolute path, with this environment) confined as a `docker run` container is
// by default, without a daemon, an image or namespaces: the tests' container environment
// (issue #38; tests/integration/container/). Must start as root. Steps, in runc's order
// (libcontainer/standard_init_linux.go: without no_new_privs the filter is loaded while
// CAP_SYS_ADMIN is still held, then finalizeNamespace drops the bounding set, switches the user
// and sets the other capability sets):
//  1. Docker's default seccomp profile (docker_default_profile.hpp), loaded with libseccomp,
//     one filter, without setting no_new_privs: Docker sets it only with
//     --security-opt no-new-privileges, so a default container has NoNewPrivs: 0.
//  2. Every capability not in moby's default list (sbx_test/docker_default.hpp) dropped from the
//     bounding set; the ambient set cleared.
//  3. With --user: no supplementary groups, then the gid and uid (all three ids each).
//  4. The capability sets moby's oci.SetCapabilities gives: for uid 0 effective = permitted =
//     the default list; for any other uid none (moby leaves them empty "to match what execve
//     does"); inheritable empty either way (moby since 20.10.14, CVE-2022-24769).
//  5. execv(PROGRAM).
// --cap-add NAME (as `docker run --cap-add`; only SYS_PTRACE is known) adds a capability to the
// default list, so to the bounding set, the root sets and the profile rules that name it.
// Not emulated: the namespaces, mounts, masked /proc paths, cgroup and AppArmor profile of a
// container; runc's stub that makes system calls newer than every call the profile names answer
// ENOSYS instead of the default EPERM (libseccomp cannot add a rule for a number it has no name
// for; none of the programs the tests run makes such a call).
//
// The profile is a C++ table, not moby's JSON parsed here: the launcher then links only
// libseccomp (no JSON library to trust, nothing read at run time that a test's environment could
// swap), and each rule keeps its conditions as data that the code below resolves the way moby's
// seccomp_linux.go does (capabilities against the container's bounding set, architecture, kernel
// version), so the table reads line by line against the JSON it was translated from. A trimmed
// JSON would have needed the same resolver plus a parser, and a rule the parser did not know
// would have been skipped silently.
//
// Exit status: PROGRAM's (it replaces this process); 2 a usage error, 3 a failed step (named on
// stderr), 77 not root or an architecture the table was not resolved for.
#include <grp.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "docker_default_profile.hpp"
#include "sbx_test/docker_default.hpp"

namespace {

namespace profile = sbx::test::docker_profile;

#if defined(__x86_64__)
constexpr std::string_view kArch = "amd64";  // moby matches includes/excludes with Go's names
constexpr std::uint32_t kSubArches[] = {SCMP_ARCH_X86, SCMP_ARCH_X32};
#elif defined(__aarch64__)
constexpr std::string_view kArch = "arm64";
constexpr std::uint32_t kSubArches[] = {SCMP_ARCH_ARM};
#endif

[[noreturn]] void fail(const char* step, int error) {
  std::fprintf(stderr, "sbx_docker_default_exec: %s: %s\n", step, std::strerror(error));
  std::exit(3);
}

// Capabilities added to the default set (`--cap-add`, as `docker run --cap-add`): only those a
// test needs are known by name.
constexpr std::pair<int, const char*> kAddable[] = {{19, "CAP_SYS_PTRACE"}};
std::vector<std::pair<int, const char*>> g_added;

bool has_default_cap(std::string_view name) {
  for (const auto& [number, cap] : sbx::test::docker_default_capabilities())
    if (name == cap) return true;
  for (const auto& [number, cap] : g_added)
    if (name == cap) return true;
  return false;
}

// The container's capability mask: the default one and the added capabilities.
unsigned long long capability_mask() {
  unsigned long long mask = sbx::test::docker_default_capability_mask();
  for (const auto& [number, cap] : g_added) mask |= 1ull << number;
  return mask;
}

bool in(std::initializer_list<const char*> list, std::string_view value) {
  return std::any_of(list.begin(), list.end(), [&](const char* item) { return value == item; });
}

// "5.15.0-91-generic" >= "4.8": moby's kernel.GreaterEqualThan on major.minor.
bool kernel_at_least(const char* min) {
  if (*min == '\0') return true;
  utsname u{};
  if (::uname(&u) != 0) return false;
  int major = 0, minor = 0, want_major = 0, want_minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);      // NOLINT(cert-err34-c)
  std::sscanf(min, "%d.%d", &want_major, &want_minor);  // NOLINT(cert-err34-c)
  return major > want_major || (major == want_major && minor >= want_minor);
}

// moby profiles/seccomp/seccomp_linux.go setupSeccomp: a rule applies when the container has
// all of its included capabilities and none of its excluded ones, runs on an included
// architecture (if any are named) and not on an excluded one, and on at least its kernel.
bool applies(const profile::Rule& rule) {
  for (const char* cap : rule.include_caps)
    if (!has_default_cap(cap)) return false;
  for (const char* cap : rule.exclude_caps)
    if (has_default_cap(cap)) return false;
  if (rule.include_arches.size() != 0 && !in(rule.include_arches, kArch)) return false;
  if (in(rule.exclude_arches, kArch)) return false;
  return kernel_at_least(rule.min_kernel);
}

// One rule per name; a name libseccomp does not know is skipped, as runc skips it.
void add_rule(scmp_filter_ctx ctx, const profile::Rule& rule) {
  const auto errno_ret = static_cast<std::uint32_t>(rule.errno_ret == 0 ? EPERM : rule.errno_ret);
  const std::uint32_t action = rule.allow ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(errno_ret);
  scmp_arg_cmp args[6];
  unsigned count = 0;
  for (const profile::Arg& arg : rule.args) {
    // moby's value is libseccomp's first datum (the mask of MASKED_EQ), valueTwo the second.
    args[count++] = scmp_arg_cmp{arg.index, arg.op, arg.value, arg.value_two};
  }
  for (const char* name : rule.names) {
    const int nr = ::seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    const int rc = ::seccomp_rule_add_array(ctx, action, nr, count, args);
    if (rc != 0) {
      std::fprintf(stderr, "sbx_docker_default_exec: rule for %s: %s\n", name, std::strerror(-rc));
      std::exit(3);
    }
  }
}

void load_profile() {
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (ctx == nullptr) fail("seccomp_init", ENOMEM);
  for (const std::uint32_t arch : kSubArches) {
    const int rc = ::seccomp_arch_add(ctx, arch);
    if (rc != 0 && rc != -EEXIST) fail("seccomp_arch_add", -rc);
  }
  // runc unsets libseccomp's no_new_privs: loading then needs CAP_SYS_ADMIN, which root holds.
  if (const int rc = ::seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); rc != 0)
    fail("SCMP_FLTATR_CTL_NNP", -rc);
  for (const profile::Rule& rule : profile::kRules)
    if (applies(rule)) add_rule(ctx, rule);
  const int rc = ::seccomp_load(ctx);
  ::seccomp_release(ctx);
  if (rc != 0) fail("seccomp_load", -rc);
}

int last_capability() {
  FILE* f = std::fopen("/proc/sys/kernel/cap_last_cap", "r");
  int last = CAP_LAST_CAP;
  if (f != nullptr) {
    if (std::fscanf(f, "%d", &last) != 1) last = CAP_LAST_CAP;  // NOLINT(cert-err34-c)
    std::fclose(f);
  }
  return last;
}

void drop_bounding_set() {
  const unsigned long long keep = capability_mask();
  for (int cap = 0; cap <= last_capability(); ++cap) {
    if ((keep >> cap) & 1ull) continue;
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) fail("PR_CAPBSET_DROP", errno);
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    fail("PR_CAP_AMBIENT_CLEAR_ALL", errno);
}

void switch_user(uid_t uid, gid_t gid) {
  if (::setgroups(0, nullptr) != 0) fail("setgroups", errno);
  if (::setresgid(gid, gid, gid) != 0) fail("setresgid", errno);
  // All three uids leave 0 with SECBIT_KEEP_CAPS unset: the kernel clears the permitted and
  // effective sets (capabilities(7), "Effect of user ID changes on capabilities").
  if (::setresuid(uid, uid, uid) != 0) fail("setresuid", errno);
}

void set_capabilities(bool root) {
  const unsigned long long mask = root ? capability_mask() : 0;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  data[0].effective = data[0].permitted = static_cast<std::uint32_t>(mask);
  data[1].effective = data[1].permitted = static_cast<std::uint32_t>(mask >> 32);
  if (::syscall(SYS_capset, &header, data) != 0) fail("capset", errno);
}

}  // namespace

int main(int argc, char** argv) {
  int at = 1;
  bool switch_to = false;
  unsigned long uid = 0, gid = 0;
  if (at < argc && std::strcmp(argv[at], "--user") == 0) {
    char* end = nullptr;
    if (at + 1 >= argc) return 2;
    uid = std::strtoul(argv[at + 1], &end, 10);
    if (end == nullptr || *end != ':') return 2;
    gid = std::strtoul(end + 1, &end, 10);
    if (*end != '\0') return 2;
    switch_to = true;
    at += 2;
  }
  while (at + 1 < argc && std::strcmp(argv[at], "--cap-add") == 0) {
    const std::string name = std::string("CAP_") + argv[at + 1];
    bool known = false;
    for (const auto& [number, cap] : kAddable) {
      if (name != cap) continue;
      g_added.emplace_back(number, cap);
      known = true;
    }
    if (!known) {
      std::fprintf(stderr, "sbx_docker_default_exec: --cap-add %s: not known here\n", argv[at + 1]);
      return 2;
    }
    at += 2;
  }
  if (at < argc && std::strcmp(argv[at], "--") == 0) ++at;
  if (at >= argc || argv[at][0] != '/') {
    std::fprintf(stderr,
                 "usage: sbx_docker_default_exec [--user UID:GID] [--cap-add NAME]... [--] "
                 "/PROGRAM [ARG...]\n");
    return 2;
  }
#if !defined(__x86_64__) && !defined(__aarch64__)
  std::fprintf(stderr,
               "sbx_docker_default_exec: the profile is resolved for x86_64 and aarch64 "
               "only\n");
  return 77;
#else
  if (::geteuid() != 0) {
    std::fprintf(stderr,
                 "sbx_docker_default_exec: must start as root (the profile is loaded "
                 "without no_new_privs, as runc does, which needs CAP_SYS_ADMIN)\n");
    return 77;
  }
  load_profile();
  drop_bounding_set();
  if (switch_to) switch_user(static_cast<uid_t>(uid), static_cast<gid_t>(gid));
  set_capabilities(!switch_to || uid == 0);
  ::execv(argv[at], argv + at);
  fail(argv[at], errno);
#endif
}
