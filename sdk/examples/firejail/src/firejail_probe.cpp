#include "firejail_probe.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "firejail_plan.hpp"
#include "sbx/sdk/posix_child.hpp"

namespace firejail_backend {
namespace {

using sbx::CheckStatus;
using sbx::ProbeCheck;
using sbx::sdk::posix_child::Captured;

constexpr int kHelperTimeoutMs = 10000;
// The helpers see a fixed, minimal environment: nothing from the caller can steer them.
const std::vector<std::string> kHelperEnv = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
const std::string kHelperCwd = "/";

// Runs a helper of the probe (argv[0] absolute, never searched in PATH) through the SDK's POSIX
// child toolkit: exactly kHelperEnv, in "/", stdin from /dev/null, no descriptor of the host
// process, default signals, killed after kHelperTimeoutMs. Not for the sandboxed command
// itself: that goes through the host's spawn service (HostServices::spawn).
sbx::Result<Captured> run_helper(const std::vector<std::string>& argv) {
  sbx::sdk::posix_child::CaptureOptions options;
  options.env = kHelperEnv;
  // Copied from a std::string, not assigned from "/": GCC 12 at -O2/-O3 reports a false
  // -Werror=restrict in basic_string::_M_replace for the literal (GCC bug 105329), which broke
  // the README's Release build with -DFIREJAIL_WERROR=ON.
  options.cwd = kHelperCwd;
  options.timeout_ms = kHelperTimeoutMs;
  return sbx::sdk::posix_child::run_capture(argv, options);
}

// Runs inside the trial sandbox and checks that the confinement really took hold: /tmp (world-
// writable on every Linux host, and not a writable root in the trial) must not be writable, a
// seccomp filter must be installed and no_new_privs set. It writes nothing. Exit 3 = it ran
// but was not confined.
constexpr const char* kCanaryScript = R"sh(s=; n=
if test -w /tmp; then echo "/tmp is writable inside the sandbox"; exit 3; fi
while read -r k v; do case "$k" in Seccomp:) s=$v;; NoNewPrivs:) n=$v;; esac; done < /proc/self/status
[ "$s" = 2 ] || { echo "no seccomp filter inside (Seccomp: $s)"; exit 3; }
[ "$n" = 1 ] || { echo "no_new_privs not set inside ($n)"; exit 3; }
exit 0)sh";

ProbeCheck pass(std::string name, std::string observed) {
  return {std::move(name), CheckStatus::kPass, std::move(observed), ""};
}
ProbeCheck fail(std::string name, std::string observed, std::string remedy) {
  return {std::move(name), CheckStatus::kFail, std::move(observed), std::move(remedy)};
}

std::string first_lines(const std::string& text, std::size_t max_lines) {
  std::string out;
  std::size_t start = 0;
  for (std::size_t line = 0; line < max_lines && start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out += (out.empty() ? "" : " | ") + text.substr(start, end - start);
    start = end + 1;
  }
  return out.empty() ? "(no output)" : out;
}

std::string octal_mode(mode_t mode) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "%04o", static_cast<unsigned>(mode & 07777));
  return buffer;
}

// A setuid-root launcher that someone else can replace is a root hole, not a sandbox.
ProbeCheck check_binary() {
  struct stat st {};
  if (::lstat(kFirejailPath, &st) != 0)
    return fail("firejail_binary", std::string(kFirejailPath) + " not found",
                "install firejail (Debian: apt-get install firejail)");
  const std::string observed = std::string(kFirejailPath) + " mode " + octal_mode(st.st_mode) +
                               " uid " + std::to_string(st.st_uid);
  if (!S_ISREG(st.st_mode))
    return fail("firejail_binary", observed + " (not a regular file)",
                "reinstall firejail so that /usr/bin/firejail is the real binary, not a link");
  if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fail("firejail_binary", observed,
                "firejail must be owned by root and writable only "
                "by root: reinstall it (apt-get install --reinstall firejail)");
  if (::geteuid() != 0 && (st.st_mode & S_ISUID) == 0)
    return fail("firejail_binary", observed + " (no setuid bit)",
                "unprivileged users need firejail setuid root: dpkg-statoverride --remove "
                "/usr/bin/firejail; apt-get install --reinstall firejail");
  return pass("firejail_binary", observed);
}

ProbeCheck check_helpers() {
  for (const char* path : {kSetsidPath, "/bin/bash", "/bin/sh"}) {
    if (::access(path, X_OK) != 0)
      return fail("helpers", std::string(path) + " missing",
                  "install util-linux and bash (firejail starts every command through /bin/bash)");
  }
  return pass("helpers", std::string(kSetsidPath) + ", /bin/bash, /bin/sh");
}

ProbeCheck check_version() {
  sbx::Result<Captured> run = run_helper({kFirejailPath, "--version"});
  if (!run.ok())
    return fail("firejail_version", run.error(), "check that firejail can be executed");
  const std::optional<std::array<int, 3>> version = parse_version(run->output);
  if (!version)
    return fail("firejail_version", first_lines(run->output, 2),
                "`firejail --version` must print 'firejail version X.Y.Z'; reinstall firejail");
  const std::string text = std::to_string((*version)[0]) + "." + std::to_string((*version)[1]) +
                           "." + std::to_string((*version)[2]);
  if (*version < std::array<int, 3>{kMinVersion[0], kMinVersion[1], kMinVersion[2]})
    return fail("firejail_version", text, "upgrade to firejail 0.9.72 or newer (Debian 12)");
  return pass("firejail_version", text);
}

// firejail refuses to start inside another firejail sandbox.
ProbeCheck check_not_nested() {
  const char* container = std::getenv("container");
  if (container != nullptr && std::string(container) == "firejail")
    return fail("not_nested", "running inside a firejail sandbox",
                "firejail does not nest: run sbx outside firejail");
  return pass("not_nested", "not inside firejail");
}

// Root runs firejail without setuid and the command stays uid 0 (with every capability dropped,
// no_new_privs and seccomp): confined by mounts, but files it writes are root's.
ProbeCheck check_user() {
  if (::geteuid() == 0)
    return {"user", CheckStatus::kWarn, "uid 0: the command runs as root without capabilities",
            "run sbx as an unprivileged user so the command does not run as root"};
  return pass("user", "uid " + std::to_string(::geteuid()));
}

// Only a hint (the trial run decides): containers often deny the mount and network namespaces
// firejail needs.
ProbeCheck check_container() {
  std::string observed = "none detected";
  struct stat st {};
  if (::stat("/.dockerenv", &st) == 0)
    observed = "docker (/.dockerenv)";
  else if (::stat("/run/.containerenv", &st) == 0)
    observed = "podman (/run/.containerenv)";
  return pass("container", observed + "; the trial run decides");
}

std::string trial_remedy(const std::string& output) {
  if (output.find("not allowed to use Firejail") != std::string::npos)
    return "add the user to /etc/firejail/firejail.users (see man firejail-users)";
  if (output.find("ermission denied") != std::string::npos ||
      output.find("not permitted") != std::string::npos)
    return "firejail needs mount and network namespaces: outside a container this works; in a "
           "container run it privileged (or with CAP_SYS_ADMIN and no seccomp/AppArmor profile)";
  return "run `/usr/bin/firejail --noprofile --debug /bin/true` to see why it fails";
}

ProbeCheck check_trial_run() {
  std::vector<std::string> argv = {kFirejailPath};
  for (std::string& flag : hardening_flags()) argv.push_back(std::move(flag));
  for (const char* flag : {"--read-only=/", "--net=none", "--protocol=unix", "--", kSetsidPath,
                           "/bin/sh", "-c", kCanaryScript})
    argv.emplace_back(flag);
  const auto start = std::chrono::steady_clock::now();
  sbx::Result<Captured> run = run_helper(argv);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (!run.ok()) return fail("trial_run", run.error(), "check that firejail can be executed");
  if (run->timed_out) return fail("trial_run", "no answer within 10 s", trial_remedy(""));
  if (run->signal == 0 && run->exit_code == 0)
    return pass("trial_run", "sandbox started in " + std::to_string(ms) +
                                 " ms: / read-only, seccomp filter, no_new_privs");
  const std::string status = run->signal != 0 ? "signal " + std::to_string(run->signal)
                                              : "exit " + std::to_string(run->exit_code);
  if (run->signal == 0 && run->exit_code == 3)
    return fail("trial_run", "started but not confined: " + first_lines(run->output, 2),
                "do not use firejail on this host; report the firejail version to the vendor");
  return fail("trial_run", status + ": " + first_lines(run->output, 3), trial_remedy(run->output));
}

}  // namespace

std::optional<std::array<int, 3>> parse_version(std::string_view output) {
  constexpr std::string_view kPrefix = "firejail version ";
  if (output.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::array<int, 3> version{};
  std::size_t pos = kPrefix.size();
  for (std::size_t part = 0; part < 3; ++part) {
    std::size_t digits = 0;
    int value = 0;
    while (pos < output.size() && output[pos] >= '0' && output[pos] <= '9' && digits < 6) {
      value = value * 10 + (output[pos] - '0');
      ++pos;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    version[part] = value;
    if (part < 2) {
      if (pos >= output.size() || output[pos] != '.') return std::nullopt;
      ++pos;
    }
  }
  return version;
}

sbx::CapabilitySet enforced_capabilities() {
  using sbx::Capability;
  return {Capability::kWriteRestriction, Capability::kWriteCarveouts, Capability::kReadCarveouts,
          Capability::kProtectedNames,   Capability::kNetworkBlock,   Capability::kSyscallFilter};
}

sbx::ProbeReport probe_host() {
  sbx::ProbeReport report;
  report.checks.push_back(check_binary());
  report.checks.push_back(check_helpers());
  report.checks.push_back(check_not_nested());
  if (report.checks.front().status != CheckStatus::kFail) report.checks.push_back(check_version());
  report.checks.push_back(check_user());
  report.checks.push_back(check_container());
  bool ok = true;
  for (const ProbeCheck& check : report.checks) ok = ok && check.status != CheckStatus::kFail;
  // The trial run is the real answer; it only makes sense once the basics are in place.
  if (ok) {
    report.checks.push_back(check_trial_run());
    ok = report.checks.back().status != CheckStatus::kFail;
  }
  report.available = ok;
  if (ok) {
    report.capabilities = enforced_capabilities();
    for (const ProbeCheck& check : report.checks) {
      if (check.name == "firejail_version")
        report.summary = "firejail " + check.observed + " confines commands here";
    }
  } else {
    for (const ProbeCheck& check : report.checks) {
      if (check.status == CheckStatus::kFail) {
        report.summary = check.name + ": " + check.observed + " (" + check.remedy + ")";
        break;
      }
    }
  }
  return report;
}

}  // namespace firejail_backend
