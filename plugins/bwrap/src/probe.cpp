// Finding a trusted bwrap and probing what this host lets it do. Every check is tried for real
// (a throwaway sandbox running /bin/true), never guessed from version strings or sysctls alone.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "caller.hpp"
#include "sbx/bwrap/host.hpp"
#include "sbx/sdk/backend.hpp"
#include "sbx/sdk/posix_child.hpp"
#include "sbx/sdk/private_state.hpp"
#include "sbx/sdk/unique_fd.hpp"
#include "write_layer.hpp"

namespace sbx::bwrap {
namespace {

// Runs argv (absolute argv[0]) with an empty environment, stdin from /dev/null, no other
// descriptor of this process, default signal dispositions and mask, and collects its output;
// killed after `timeout_ms`. The probe runs inside sbx, possibly a multi-threaded embedding
// process, and its trials are sandboxes: the toolkit's child side allocates nothing after fork
// and lets no inherited descriptor through bwrap into the trial sandbox.
ProbeRun run_capture(const std::vector<std::string>& argv, int timeout_ms) {
  sdk::posix_child::CaptureOptions options;
  options.timeout_ms = timeout_ms;
  options.max_output = 4096;
  Result<sdk::posix_child::Captured> captured = sdk::posix_child::run_capture(argv, options);
  ProbeRun result;
  if (!captured.ok()) return result;
  result.exit_code = captured->exit_code;
  result.output = std::move(captured->output);
  while (!result.output.empty() && result.output.back() == '\n') result.output.pop_back();
  return result;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The file and every directory above it: owned by root, not writable by group or others.
Status trusted_chain(const std::string& path) {
  std::string current = path;
  for (;;) {
    struct stat st {};
    if (::lstat(current.c_str(), &st) != 0)
      return Error{"'" + current + "': " + std::strerror(errno)};
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
      return Error{"'" + current + "' is not owned by root or is writable by group or others"};
    if (current == "/") return {};
    const std::size_t slash = current.rfind('/');
    current = slash == 0 ? "/" : current.substr(0, slash);
  }
}

ProbeCheck check(std::string name, bool ok, std::string observed, std::string remedy,
                 CheckStatus failure = CheckStatus::kFail) {
  return ProbeCheck{std::move(name), ok ? CheckStatus::kPass : failure, std::move(observed),
                    ok ? std::string() : std::move(remedy)};
}

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool is_wsl1(std::string version) {
  for (char& c : version) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t wsl = version.find("wsl");
  if (wsl != std::string::npos && wsl + 3 < version.size() &&
      std::isdigit(static_cast<unsigned char>(version[wsl + 3])))
    return version[wsl + 3] == '1' && (wsl + 4 >= version.size() ||
                                       !std::isdigit(static_cast<unsigned char>(version[wsl + 4])));
  return version.find("microsoft") != std::string::npos &&
         version.find("microsoft-standard") == std::string::npos;
}

// Versions compare numerically, component by component ("0.10.0" > "0.8.0").
bool version_at_least(const std::string& version, int major, int minor) {
  int a = 0;
  int b = 0;
  // bwrap's own --version line; anything else fails the count and reads as too old.
  if (std::sscanf(version.c_str(), "%d.%d", &a, &b) != 2) return false;  // NOLINT(cert-err34-c)
  return a > major || (a == major && b >= minor);
}

// bwrap's own message says only that it could not make a namespace ("Creating new namespace
// failed: Operation not permitted"). The same clone by this process (linux/caller) names who
// refused it: this process's seccomp filter (a container runtime's default profile, issue #38),
// a sysctl or a security module, each with its own fix. Where this process may create one and
// bwrap still fails, bwrap's message is all there is.
ProbeCheck user_namespaces_check(const ProbeRun& userns) {
  if (userns.exit_code == 0)
    return check("user_namespaces", true, "a new user namespace was created", "");
  // bwrap's messages begin with "bwrap: " themselves.
  std::string bwrap_said = first_line(userns.output);
  if (bwrap_said.rfind("bwrap: ", 0) != 0) bwrap_said = "bwrap: " + bwrap_said;
  const caller::UserNamespaceTrial trial = caller::try_user_namespace(caller::read_status());
  if (trial.allowed)
    return check("user_namespaces", false, "bwrap: " + first_line(userns.output),
                 "allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0; "
                 "kernel.unprivileged_userns_clone=1; outside containers that block it)");
  return check("user_namespaces", false, trial.observed + " (" + bwrap_said + ")", trial.fix);
}

// A trial that needs the user namespace bwrap could not create: not run, its status as it
// would fail, the cause named where it is (the user_namespaces check).
ProbeCheck needs_user_namespace(std::string name, CheckStatus failure) {
  return ProbeCheck{std::move(name), failure,
                    "not tried: bwrap cannot create the user namespace it needs (user_namespaces)",
                    "the fix of user_namespaces"};
}

void probe_sandbox_checks_uncached(const std::string& bwrap, std::vector<ProbeCheck>& checks) {
  Result<std::string> version = bwrap_version(bwrap);
  const bool recent = version.ok() && version_at_least(*version, 0, 5);
  checks.push_back(check("bwrap_version", recent, version.ok() ? *version : version.error(),
                         "bubblewrap 0.5 or newer is needed (--perms, --as-pid-1)"));
  const ProbeRun userns =
      run_trial_sandbox(bwrap, {"--unshare-user", "--ro-bind", "/", "/"}, {"/bin/true"}, 5000);
  checks.push_back(user_namespaces_check(userns));
  const std::string apparmor =
      read_small_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  const bool aa_restricts = apparmor == "1";
  checks.push_back(
      check("apparmor_userns", !aa_restricts || userns.exit_code == 0,
            apparmor.empty() ? "no AppArmor user-namespace restriction"
                             : "kernel.apparmor_restrict_unprivileged_userns=" + apparmor,
            "allow bwrap user namespaces (an AppArmor profile with 'userns' for bwrap, or "
            "sysctl kernel.apparmor_restrict_unprivileged_userns=0)"));
  if (userns.exit_code != 0) {
    checks.push_back(needs_user_namespace("proc_mount", CheckStatus::kWarn));
    checks.push_back(needs_user_namespace("network_namespace", CheckStatus::kFail));
    return;
  }
  const ProbeRun proc = run_trial_sandbox(
      bwrap, {"--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc"},
      {"/bin/true"}, 5000);
  checks.push_back(check("proc_mount", proc.exit_code == 0,
                         proc.exit_code == 0 ? "procfs mounts in a new pid namespace"
                                             : "bwrap: " + first_line(proc.output),
                         "the sandbox gets an empty /proc; run outside a container that masks "
                         "/proc to get a real one",
                         CheckStatus::kWarn));
  const ProbeRun net = run_trial_sandbox(
      bwrap, {"--unshare-user", "--unshare-net", "--ro-bind", "/", "/"}, {"/bin/true"}, 5000);
  checks.push_back(check("network_namespace", net.exit_code == 0,
                         net.exit_code == 0 ? "a network namespace with loopback was set up"
                                            : "bwrap: " + first_line(net.output),
                         "bwrap needs to create a network namespace and bring up loopback "
                         "(see the user-namespace and AppArmor checks)"));
}

// sbx-stage2 loads its filter under whatever filter this process already runs under: filters
// stack, and every one of them is run (seccomp(2)), so a caller's filter is no reason to pass
// bwrap over; only strict mode is (nothing but read, write, _exit and sigreturn), or a kernel
// without filters. PR_GET_SECCOMP answers 0 (none) or 2 (filter) where the caller's filter
// allows prctl; a filter that refuses it fails it with its own errno, never 1 (strict mode
// kills the caller instead).
ProbeCheck seccomp_check() {
  const std::string actions = read_small_file("/proc/sys/kernel/seccomp/actions_avail");
  const int mode = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  const int error = errno;
  const bool ok = (mode == 0 || mode == 2) && actions.find("errno") != std::string::npos;
  std::string observed =
      actions.empty() ? "no /proc/sys/kernel/seccomp/actions_avail" : "actions: " + actions;
  if (mode == 2)
    observed += " (this process already runs under a filter; sbx-stage2's stacks on it)";
  if (mode < 0) observed += std::string(" (PR_GET_SECCOMP: ") + std::strerror(error) + ")";
  return check("seccomp", ok, observed,
               "a kernel with CONFIG_SECCOMP_FILTER, and a caller whose own filter (if any) "
               "allows prctl and seccomp");
}

// Whether sbx-stage2 can mount the toolchain caches copy-on-write (kCacheOverlayCheck,
// stage2/cache_overlays.hpp): overlayfs mountable in a user namespace (FS_USERNS_MOUNT, Linux
// 5.11, with its "userxattr" option), open_tree(2)/move_mount(2) (5.2), the overlay
// filesystem registered or its module there to load, and a bwrap that is not setuid (bubblewrap
// refuses --cap-add to a user other than root in setuid mode). Not a trial: the upper layer's
// filesystem is the project's cache's, known only per run; a run whose overlay cannot be
// mounted there fails with the reason (never runs without it). A warning: without it the tools
// are pointed at the project's cache through their variables, as on every other backend.
ProbeCheck cache_overlay_check(bool bwrap_setuid) {
  struct utsname uts {};
  int major = 0;
  int minor = 0;
  const bool release =
      ::uname(&uts) == 0 && std::sscanf(uts.release, "%d.%d", &major, &minor) == 2;  // NOLINT
  const bool kernel = release && (major > 5 || (major == 5 && minor >= 11));
  const std::string filesystems = read_small_file("/proc/filesystems");
  struct stat st {};
  // "nodev\toverlay" is one line of /proc/filesystems (read_small_file drops the last '\n').
  const bool registered = (filesystems + "\n").find("\toverlay\n") != std::string::npos;
  const bool module =
      release &&
      ::stat(("/lib/modules/" + std::string(uts.release) + "/kernel/fs/overlayfs").c_str(), &st) ==
          0;
  const bool overlay = registered || module;
  const bool ok = kernel && overlay && !bwrap_setuid;
  // Only what decides it, so that the answer reads the same on every kernel that passes.
  std::string observed =
      "toolchain caches copy-on-write: overlayfs in a user namespace, bwrap not setuid";
  if (!ok) {
    observed = std::string("Linux ") + (release ? uts.release : "?") +
               (kernel ? "" : " (5.11+ needed)") + (overlay ? "" : ", no overlayfs") +
               (bwrap_setuid ? ", bwrap setuid" : "");
  }
  return check(std::string(kCacheOverlayCheck), ok, observed,
               "Linux 5.11+ with overlayfs and a bwrap that is not setuid mount the toolchain "
               "caches copy-on-write; here the tools are pointed at the project's cache instead",
               CheckStatus::kWarn);
}

// The host settings that decide whether bwrap's user namespace trials pass.
constexpr std::array<const char*, 3> kNamespaceSysctls = {
    "/proc/sys/user/max_user_namespaces", "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"};

// Each throwaway sandbox is a whole bwrap set-up and teardown (namespaces, mounts, a process
// start); their passing outcome is cached in the private state directory (masked inside every
// sandbox), so `sbx exec` does not pay for them on every run. A failure is never cached: the next
// probe tries again. What is cached may only be reused while everything the trials depend on is
// unchanged, so the key holds all of it:
//  - the kernel: boot id and release (a reboot or another kernel);
//  - the bwrap binary's identity: path, device, inode, size, mtime and ctime to the nanosecond
//    (an upgrade, a replaced file, a chmod that adds or drops setuid);
//  - the process: effective uid and its confinement (private_state::caller_confinement:
//    seccomp mode and filters, capabilities, every namespace), so the same boot and binary
//    inside a sandbox that denies user namespaces (bwrap --disable-userns, a container's
//    seccomp profile) never reuses the host's pass (issue #38);
//  - the host settings that decide whether the trials pass: user.max_user_namespaces,
//    kernel.unprivileged_userns_clone and kernel.apparmor_restrict_unprivileged_userns.
// sbx's own settings do not reach the probe (bwrap's probe reads nothing from ProbeContext).
std::string probe_cache_key_of(const std::string& bwrap) {
  struct stat st {};
  ::stat(bwrap.c_str(), &st);
  const std::string confinement = private_state::caller_confinement();
  struct utsname kernel {};
  ::uname(&kernel);
  auto at_ns = [](const struct timespec& t) {
    return std::to_string(t.tv_sec) + "." + std::to_string(t.tv_nsec);
  };
  std::string key = "v3|" + read_small_file("/proc/sys/kernel/random/boot_id") + "|" +
                    kernel.release + "|" + bwrap;
  for (const unsigned long long value :
       {static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino),
        static_cast<unsigned long long>(st.st_size)})
    key += "|" + std::to_string(value);
  key += "|" + at_ns(st.st_mtim) + "|" + at_ns(st.st_ctim) + "|" + std::to_string(::geteuid()) +
         "|" + (confinement.empty() ? std::string("?") : confinement);
  for (const char* sysctl : kNamespaceSysctls) key += "|" + read_small_file(sysctl);
  return key;
}

// The cache's text, or why it may not be used (sbx/sdk/private_state.hpp: the directory and
// the file this user's own, neither writable by group or others, never through a symlink). The
// content is then only as trustworthy as this user: a forged "pass" can only make bwrap be
// tried where it fails to start (the checks gate availability, never how a policy is enforced).
Result<std::string> read_cache_text(const std::string& cache) {
  return private_state::read_private_file(cache, "cache");
}

Result<std::vector<ProbeCheck>> load_cache(const std::string& cache, const std::string& key) {
  if (cache.empty()) return Error{"no cache file"};
  Result<std::string> text = read_cache_text(cache);
  if (!text.ok()) return text.failure();
  std::istringstream in(*text);
  std::string line;
  if (!std::getline(in, line) || line != key)
    return Error{
        "stale: written for another kernel, bwrap binary, user, user namespace or "
        "namespace settings"};
  std::vector<ProbeCheck> loaded;
  while (std::getline(in, line)) {
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) return Error{"malformed cache line"};
    loaded.push_back(ProbeCheck{line.substr(0, tab), CheckStatus::kPass,
                                line.substr(tab + 1) + " (tried earlier this boot; cached)", ""});
  }
  if (loaded.size() != 5) return Error{"malformed cache: expected 5 checks"};
  return loaded;
}

bool load_cached_checks(const std::string& cache, const std::string& key,
                        std::vector<ProbeCheck>& checks) {
  Result<std::vector<ProbeCheck>> loaded = load_cache(cache, key);
  if (!loaded.ok()) return false;
  checks.insert(checks.end(), loaded->begin(), loaded->end());
  return true;
}

void store_cached_checks(const std::string& cache, const std::string& key,
                         const std::vector<ProbeCheck>& checks, std::size_t first) {
  if (cache.empty()) return;
  for (std::size_t i = first; i < checks.size(); ++i) {
    if (checks[i].status != CheckStatus::kPass) return;
  }
  std::string text = key + '\n';
  for (std::size_t i = first; i < checks.size(); ++i)
    text += checks[i].name + '\t' + checks[i].observed + '\n';
  (void)private_state::write_private_file(cache, text);
}

void probe_sandbox_checks(const std::string& bwrap, const std::string& cache,
                          std::vector<ProbeCheck>& checks) {
  const std::string key = probe_cache_key_of(bwrap);
  if (load_cached_checks(cache, key, checks)) return;
  const std::size_t first = checks.size();
  probe_sandbox_checks_uncached(bwrap, checks);
  store_cached_checks(cache, key, checks, first);
}

}  // namespace

const std::vector<std::string>& bwrap_candidates() {
  static const std::vector<std::string> candidates = {"/usr/bin/bwrap", "/bin/bwrap"};
  return candidates;
}

Result<std::string> find_trusted_bwrap(const std::vector<std::string>& writable_roots) {
  std::string tried;
  for (const std::string& candidate : bwrap_candidates()) {
    char resolved[PATH_MAX];
    if (::realpath(candidate.c_str(), resolved) == nullptr) {
      tried += (tried.empty() ? "" : "; ") + candidate + ": " + std::strerror(errno);
      continue;
    }
    const std::string path(resolved);
    Status chain = trusted_chain(path);
    bool in_writable = false;
    for (const std::string& root : writable_roots) in_writable |= path_is_within(path, root);
    struct stat st {};
    const bool executable =
        ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR) != 0;
    if (chain.ok() && !in_writable && executable) return path;
    tried += (tried.empty() ? "" : "; ") + candidate + " -> " + path + ": " +
             (!chain.ok()   ? chain.error()
              : in_writable ? std::string("inside a writable root")
                            : std::string("not an executable file"));
  }
  return Error{"no trusted bwrap (" + tried + "); install the 'bubblewrap' package"};
}

ProbeRun run_trial_sandbox(const std::string& bwrap_path,
                           const std::vector<std::string>& bwrap_args,
                           const std::vector<std::string>& command, int timeout_ms) {
  std::vector<std::string> argv = {bwrap_path};
  argv.insert(argv.end(), bwrap_args.begin(), bwrap_args.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return run_capture(argv, timeout_ms);
}

Result<std::string> bwrap_version(const std::string& bwrap_path) {
  const ProbeRun r = run_capture({bwrap_path, "--version"}, 3000);
  const std::string prefix = "bubblewrap ";
  if (r.exit_code != 0 || r.output.rfind(prefix, 0) != 0)
    return Error{"'" + bwrap_path + " --version' failed: " + first_line(r.output)};
  return first_line(r.output).substr(prefix.size());
}

bool bwrap_can_mount_proc(const std::string& bwrap_path) {
  return run_trial_sandbox(
             bwrap_path,
             {"--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc"},
             {"/bin/true"}, 5000)
             .exit_code == 0;
}

std::optional<bool> cached_proc_mount(const std::string& bwrap_path,
                                      const std::string& cache_file) {
  std::vector<ProbeCheck> checks;
  if (!load_cached_checks(cache_file, probe_cache_key_of(bwrap_path), checks)) return std::nullopt;
  for (const ProbeCheck& c : checks) {
    if (c.name == "proc_mount") return true;
  }
  return std::nullopt;
}

void mark_keepable(ProbeReport& report) {
  if (!report.available) return;
  std::vector<std::string> depends_on;
  for (const ProbeCheck& c : report.checks) {
    if (c.name == "bwrap_found" && c.status == CheckStatus::kPass) depends_on.push_back(c.observed);
  }
  if (depends_on.size() != 1) return;
  depends_on.insert(depends_on.end(), kNamespaceSysctls.begin(), kNamespaceSysctls.end());
  const std::string named = keepable_dependencies(depends_on);
  if (named.empty()) return;
  report.checks.push_back(
      ProbeCheck{std::string(kKeepableDependsOnCheck), CheckStatus::kPass, named, ""});
  report.checks.push_back(ProbeCheck{
      std::string(kKeepableProbeCheck), CheckStatus::kPass,
      "this answer may be kept for later runs of this boot (same kernel, user, seccomp state, "
      "plugin, sbx-stage2, bwrap binary and namespace sysctls)",
      ""});
}

std::string probe_cache_key(const std::string& bwrap_path) {
  return probe_cache_key_of(bwrap_path);
}

Result<std::vector<ProbeCheck>> load_probe_cache(const std::string& bwrap_path,
                                                 const std::string& cache_file) {
  return load_cache(cache_file, probe_cache_key_of(bwrap_path));
}

ProbeReport run_probe(const std::string& stage2_path, const std::string& cache_file) {
  ProbeReport report;
  std::vector<ProbeCheck>& checks = report.checks;
  const std::string proc_version = read_small_file("/proc/version");
  checks.push_back(check("wsl1", !is_wsl1(proc_version), first_line(proc_version),
                         "WSL1 has no user namespaces: use WSL2"));
  Result<std::string> bwrap = find_trusted_bwrap({});
  checks.push_back(check("bwrap_found", bwrap.ok(), bwrap.ok() ? *bwrap : bwrap.error(),
                         "apt-get install bubblewrap"));
  bool setuid = false;
  if (bwrap.ok()) {
    struct stat st {};
    setuid = ::stat(bwrap->c_str(), &st) == 0 && (st.st_mode & S_ISUID) != 0;
    checks.push_back(check("bwrap_setuid", !setuid, setuid ? "setuid root" : "not setuid",
                           "a setuid bwrap works but offers fewer features; prefer the "
                           "unprivileged user-namespace build",
                           CheckStatus::kWarn));
    probe_sandbox_checks(*bwrap, cache_file, checks);
  }
  checks.push_back(seccomp_check());
  const bool stage2_ok = !stage2_path.empty() && ::access(stage2_path.c_str(), X_OK) == 0;
  checks.push_back(check("stage2_helper", stage2_ok,
                         stage2_path.empty() ? "the host has no sbx-stage2" : stage2_path,
                         "reinstall sbx: libexec/sbx/sbx-stage2 is missing"));
  // sbx-stage2's write layer (linux/landlock/write_layer.hpp) needs Landlock ABI 2; without it
  // bwrap still runs, but host FIFOs outside the writable roots stay writable.
  const long landlock = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1u << 0);
  checks.push_back(check("write_layer", landlock >= stage2::kWriteLayerMinAbi,
                         "Landlock ABI " + std::to_string(landlock < 0 ? 0 : landlock),
                         "Linux 5.19+ with Landlock enabled (lsm=...,landlock): without it host "
                         "FIFOs outside the writable roots stay writable (a read-only mount does "
                         "not stop writes to a FIFO)",
                         CheckStatus::kWarn));
  checks.push_back(cache_overlay_check(setuid));
  report.available = true;
  for (const ProbeCheck& c : checks) report.available &= c.status != CheckStatus::kFail;
  if (report.available) {
    report.capabilities = {Capability::kWriteRestriction, Capability::kReadRestriction,
                           Capability::kWriteCarveouts, Capability::kReadCarveouts,
                           Capability::kProtectedNames, Capability::kDenyGlobs,
                           Capability::kNetworkBlock, Capability::kSyscallFilter,
                           // The private network namespace's own loopback (stage 2's
                           // private filter lets TCP/UDP bind and listen there).
                           Capability::kLocalBinding};
    report.summary = "bubblewrap " + (bwrap.ok() ? *bwrap : std::string()) +
                     " with namespaces and the sbx-stage2 seccomp filter";
  } else {
    for (const ProbeCheck& c : checks) {
      if (c.status == CheckStatus::kFail) {
        report.summary = c.name + ": " + c.observed;
        break;
      }
    }
  }
  return report;
}

}  // namespace sbx::bwrap
