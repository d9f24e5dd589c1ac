#include "sbx/seatbelt/probe.hpp"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "sbx/seatbelt/profile.hpp"

#if !defined(_WIN32)
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace sbx::seatbelt {

CapabilitySet seatbelt_capabilities() {
  return {Capability::kWriteRestriction, Capability::kReadRestriction, Capability::kWriteCarveouts,
          Capability::kReadCarveouts, Capability::kProtectedNames, Capability::kDenyGlobs,
          Capability::kNetworkBlock, Capability::kProxyNetwork, Capability::kUnixSocketAllowlist,
          Capability::kLocalBinding,
          // With the network enabled the profile still closes host unix sockets except the
          // listed ones (build_profile's unix-socket rules): what kUnixSocketBlock promises.
          Capability::kUnixSocketBlock};
}

ProbeReport evaluate_probe(const ProbeFacts& facts) {
  ProbeReport report;
  const std::string launcher(kSandboxExecPath);
  if (!facts.is_macos) {
    report.checks.push_back({"platform_macos", CheckStatus::kFail, "not macOS",
                             "use a backend for this platform (bwrap or landlock on Linux)"});
    report.summary = "Seatbelt exists only on macOS; " + launcher + " not found";
    return report;
  }
  report.checks.push_back({"platform_macos", CheckStatus::kPass, "macOS", ""});
  if (!facts.launcher_ok) {
    report.checks.push_back({"sandbox_exec", CheckStatus::kFail, facts.launcher_observed,
                             "restore " + launcher + " (part of macOS; never taken from PATH)"});
    report.summary = launcher + " is not usable: " + facts.launcher_observed;
    return report;
  }
  report.checks.push_back({"sandbox_exec", CheckStatus::kPass, facts.launcher_observed, ""});
  if (!facts.nesting_ok) {
    report.checks.push_back({"apply_profile", CheckStatus::kFail, facts.nesting_observed,
                             "run sbx outside any Seatbelt sandbox (sandbox-exec cannot nest); "
                             "if an outer sandbox already confines the command, use the "
                             "external filesystem kind"});
    report.summary = "a Seatbelt profile cannot be applied here (already inside a sandbox?)";
    return report;
  }
  report.checks.push_back({"apply_profile", CheckStatus::kPass, facts.nesting_observed, ""});
  report.available = true;
  report.summary = "Seatbelt via " + launcher;
  report.capabilities = seatbelt_capabilities();
  return report;
}

#if defined(_WIN32)

Result<int> run_quietly(const std::vector<std::string>&) {
  return Error{"running helper commands is not implemented on Windows"};
}

#else

Result<int> run_quietly(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.front().empty() || argv.front().front() != '/')
    return Error{"run_quietly needs an absolute program path"};
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char* empty_env[] = {nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd = 0; fd <= 2; ++fd)
    posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), empty_env);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error{"cannot start " + argv.front() + ": " + std::strerror(rc)};
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error{"waitpid failed: " + std::string(std::strerror(errno))};
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

#endif

#if defined(__APPLE__)

namespace {

void check_launcher(ProbeFacts& facts) {
  struct stat st {};
  const std::string launcher(kSandboxExecPath);
  if (lstat(launcher.c_str(), &st) != 0) {
    facts.launcher_observed = launcher + ": " + std::strerror(errno);
    return;
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & S_IXUSR) == 0) {
    facts.launcher_observed = launcher + " is not a regular executable file";
    return;
  }
  facts.launcher_ok = true;
  facts.launcher_observed = launcher;
}

}  // namespace

ProbeFacts gather_probe_facts() {
  ProbeFacts facts;
  facts.is_macos = true;
  check_launcher(facts);
  if (!facts.launcher_ok) return facts;
  // sandbox-exec fails inside another Seatbelt sandbox: try the most permissive profile.
  auto rc = run_quietly(
      {std::string(kSandboxExecPath), "-p", "(version 1)(allow default)", "/usr/bin/true"});
  if (!rc) {
    facts.nesting_observed = rc.error();
  } else {
    facts.nesting_ok = *rc == 0;
    facts.nesting_observed = "trivial profile: exit " + std::to_string(*rc);
  }
  return facts;
}

#else

ProbeFacts gather_probe_facts() { return ProbeFacts{}; }

#endif

}  // namespace sbx::seatbelt
