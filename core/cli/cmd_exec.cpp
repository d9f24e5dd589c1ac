// `sbx exec [POLICY] [--sandbox ...] [--allow-unsandboxed] [--dry-run] [--json]
//  [--report-fd N | --report-file PATH] -- CMD [ARG...]`
// A thin adapter over the core's run (sbx/core/run.hpp: the two questions, the plan, the run,
// the report): this file turns options into a RunRequest and a RunOutcome into the house's
// messages and exit status. "Wanted but none available" never silently becomes "unsandboxed":
// it exits 125 unless the caller passed --allow-unsandboxed, and never for a policy with deny
// entries or network mode proxy.
//
// network.mode == proxy: the core starts sbx's filtering proxy (Manager::plan_run) for the run
// and keeps it until the command has exited. Each refusal the proxy keeps (the first ones; see
// proxy::Limits) is one stderr line as it happens and an entry of "network_refusals" in the
// --json report; the rest are counted per host in one stderr line after the command and in
// "network_refusals_total". The per-run credential is never printed: the --dry-run plan shows
// "***" in its place.
//
// What the backend's sandbox refused (bwrap: a host unix socket not in network.unix_sockets,
// an address with no route out of its private network namespace) is reported by the backend
// when the run ends: one stderr line each after the command (without --json), and entries of
// "network_refusals" ({"kind":"unix","path"}, {"kind":"ip","address"}) with --json.
#if defined(_WIN32)
#include <cstdio>
#else
#include <fcntl.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/created_names.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/run.hpp"
#ifndef _WIN32
#include "sbx/sdk/posix_child.hpp"
#endif
#include "text_table.hpp"

namespace sbx::cli {
namespace {

struct ExecOptions {
  PolicyOptions policy;
  std::string sandbox;  // empty: not given (the settings decide)
  bool allow_unsandboxed = false;
  bool dry_run = false;
  bool json = false;
  int report_fd = -1;       // --report-fd N
  std::string report_file;  // --report-file PATH
  std::vector<std::string> command;
};

// Whether the run's JSON report is written somewhere (stderr, a descriptor or a file).
bool wants_report(const ExecOptions& options) {
  return options.json || options.report_fd >= 0 || !options.report_file.empty();
}

// --json without --report-fd/--report-file: the report is the last line of stderr.
bool report_on_stderr(const ExecOptions& options) {
  return options.json && options.report_fd < 0 && options.report_file.empty();
}

// sbx's own failure: in the report (--json "error", "error_kind") and on stderr; always 125,
// whatever the kind, so that it never looks like the command's own status (exit_codes.hpp).
int failed(RunReport& report, ErrorKind kind, const std::string& what, const std::string& todo) {
  report.error = what + "; " + todo;
  report.error_kind = kind;
  return fail(what, todo);
}

int failed(RunReport& report, ErrorKind kind, const std::string& message) {
  report.error = message;
  report.error_kind = kind;
  return fail(message);
}

// Writes "sbx: proxy: TEXT" as one line on stderr. A single write() keeps the line whole among
// the command's own output; host names came from the command, so control characters are
// escaped.
void print_proxy_line(const std::string& text) {
  const std::string line = "sbx: proxy: " + printable(text) + "\n";
#if defined(_WIN32)
  std::fwrite(line.data(), 1, line.size(), stderr);
#else
  // stderr may be gone; the --json report still lists it.
  (void)sdk::posix_child::write_all(STDERR_FILENO, line);
#endif
}

// One refusal, as it happens (called on the proxy's thread for the refusals it keeps).
void print_refusal(const proxy::Refusal& refusal) { print_proxy_line(proxy::describe(refusal)); }

// Question 2 said "none" and the run stopped: refused (125), with what was wanted and why each
// backend was passed over.
int none_available(RunOutcome& run) {
  const std::optional<std::string>& never = run.never_unsandboxed;
  const std::string what =
      never ? "a sandbox is wanted but no backend is available here, and " + *never +
                  ", not even with --allow-unsandboxed, so the command was not run"
            : "a sandbox is wanted but no backend is available here, so the command was not run";
  const std::string todo =
      never ? "make a backend available (`sbx backends --probe` shows what is missing) or "
              "remove what the policy restricts"
            : "make a backend available (`sbx backends --probe` shows what is missing), choose "
              "others with --backends, or pass --allow-unsandboxed to run it without a sandbox";
  const int code = failed(run.report, run.kind, what, todo);
  std::cerr << "  wanted: " << printable(run.report.reason) << '\n';
  if (run.choice.passed_over.empty()) std::cerr << "  no backend is loaded\n";
  for (const PassedOver& item : run.choice.passed_over)
    std::cerr << "  passed over " << printable(item.backend) << ": " << printable(item.reason)
              << '\n';
  return code;
}

constexpr const char* kRunFailedWhatToDo =
    "the command may not have completed; rerun with --log-level debug for details";

// A run that stopped before the command completed: the house message for each stop.
int stopped(const ExecOptions& options, RunOutcome& run) {
  switch (run.stop) {
    case RunStop::kNone:
      return run.exit_code();
    case RunStop::kInvalidRequest:
      return failed(run.report, run.kind, run.error, "the command was not run");
    case RunStop::kCommandNotFound:
      run.report.error = run.error;
      run.report.error_kind = run.kind;
      std::cerr << "sbx: " << printable(options.command[0]) << ": " << run.error
                << "; check the name, or give an absolute path\n";
      return run.exit_code();
    case RunStop::kBackendsUnavailable:
      return failed(run.report, run.kind, run.error);
    case RunStop::kNoBackend:
      return none_available(run);
    case RunStop::kPlanRefused:
      return failed(run.report, run.kind, run.error,
                    "the command was not run; see `sbx explain` and `sbx debug " +
                        run.report.backend.value_or("") + "`");
    case RunStop::kLimitsUnavailable:
      return failed(run.report, run.kind,
                    "the command was not run: cannot set up its resource limits: " + run.error,
                    kRunFailedWhatToDo);
    case RunStop::kCaptureUnavailable:
      return failed(run.report, run.kind, run.error + "; run without --json", kRunFailedWhatToDo);
    case RunStop::kRunFailed:
      return failed(run.report, run.kind, run.error, kRunFailedWhatToDo);
    case RunStop::kEndedEarly:  // the CLI gives no RunControl: only a front end with one stops here
      return failed(run.report, run.kind, run.error);
  }
  return failed(run.report, ErrorKind::host_failure, "internal error: unknown run outcome");
}

// Names the resource limit that ended the run, on stderr unless --json reports it.
void print_limit_hit(const ExecOptions& options, const RunReport& report) {
  if (options.json) return;
  if (report.limit_hit)
    std::cerr << "sbx: the run was stopped by its " << *report.limit_hit
              << " limit (policy /limits; `sbx explain` shows how each limit holds)\n";
}

// Protected names the command created below the top of its writable roots, where no backend
// keeps them (created_names.hpp): one warning line each, unless --json lists them.
void print_created_names(const ExecOptions& options, const RunReport& report) {
  if (options.json) return;
  for (const std::string& path : report.protected_names_created)
    std::cerr << "sbx: warning: " << printable(created_name_warning(path)) << '\n';
  for (const std::string& path : report.protected_names_unreadable)
    std::cerr << "sbx: warning: cannot read " << printable(path)
              << " to check it for protected names the command created (.git, ...)\n";
  if (report.protected_names_truncated && report.protected_names_unreadable.empty())
    std::cerr << "sbx: warning: the writable roots are too large to check completely for "
                 "protected names the command created\n";
}

// What the backend's sandbox refused, one stderr line each, unless --json lists them.
void print_backend_refusals(const ExecOptions& options, const RunReport& report) {
  if (options.json) return;
  const BackendRefusalLog& log = report.network_refusals.backend;
  for (const BackendRefusal& refusal : log.entries) {
    // bwrap's supervisor names a refused unix datagram socket by its call (no path yet).
    if (refusal.kind == "unix" && refusal.address.starts_with("socket(AF_UNIX, "))
      std::cerr << "sbx: network: the sandbox refused a unix datagram socket ("
                << printable(refusal.address) << "): its sends could name any host socket\n";
    else if (refusal.kind == "unix")
      std::cerr << "sbx: network: the sandbox refused a connection to the host's unix socket "
                << printable(refusal.address) << " (not in network.unix_sockets)\n";
    else
      std::cerr << "sbx: network: the sandbox refused a connection to "
                << printable(refusal.address)
                << " (no route out of the sandbox: the network is not enabled)\n";
  }
  if (log.total > log.entries.size())
    std::cerr << "sbx: network: " << log.total - log.entries.size()
              << " more connections refused by the sandbox, not listed\n";
}

// The command's own exit status, or 125/127 with the house message for a stop. Once the run
// got as far as running: the limit that ended it, the stop, the protected names it created,
// what the backend's sandbox refused and the proxy's refusals not printed as they happened, in
// this order.
// The command's last stderr line may lack its newline: with the report on stderr, sbx's own
// lines and the report start on a line of their own, never glued to it (known then: the
// command's stderr was copied through sbx, whose tail ends with the last byte it wrote).
// Without it the command's stderr is left exactly as it wrote it.
void end_the_commands_line(const RunReport& report) {
  if (report.stderr_tail && !report.stderr_tail->empty() && report.stderr_tail->back() != '\n')
    std::cerr << '\n';
}

int finish(const ExecOptions& options, RunOutcome& run) {
  const bool reached_run = run.stop == RunStop::kNone || run.stop == RunStop::kRunFailed ||
                           run.stop == RunStop::kLimitsUnavailable ||
                           run.stop == RunStop::kCaptureUnavailable;
  if (reached_run && report_on_stderr(options)) end_the_commands_line(run.report);
  if (!reached_run) return stopped(options, run);
  print_limit_hit(options, run.report);
  const int code = stopped(options, run);
  if (run.report.final) print_created_names(options, run.report);
  print_backend_refusals(options, run.report);
  // The refusals not printed as they happened, counted per host in one line.
  if (std::optional<std::string> rest = proxy::describe_omitted(run.report.network_refusals.proxy))
    print_proxy_line(*rest);
  return code;
}

// A policy file is kept read-only only in the runs that use it: one below the working
// directory, which the default policy (workspace-write) lets a sandboxed run write, can have
// been rewritten by such a run, and this run would use what was planted.
void warn_about_policy_in_workspace(const PreparedRequest& input) {
  const std::string& file = input.policy_file;
  if (file.empty() || input.cwd.empty() || !path_is_within(file, input.cwd)) return;
  std::cerr << "sbx: warning: the policy file " << printable(file)
            << " lies below the working directory, which a run with the default policy can "
               "write: an earlier sandboxed run could have rewritten it; keep policy files "
               "outside the workspace\n";
}

int exec_steps(const ExecOptions& options, const GlobalOptions& globals, RunOutcome& run) {
  if (options.command.empty())
    return failed(run.report, ErrorKind::invalid_input, "exec needs a command",
                  "put it after --, e.g. sbx exec -- ls -l");
  Result<std::optional<SandboxPreference>> preference = sandbox_choice(options.sandbox);
  if (!preference.ok())
    return failed(run.report, preference.kind(), preference.error(),
                  "use --sandbox auto, require or forbid");
  Result<settings::BackendRequest> asked = backend_request(globals);
  if (!asked.ok()) return failed(run.report, asked.kind(), asked.error());
  Result<PreparedRequest> input = load_policy(
      options.policy, RunChoices{*preference, options.allow_unsandboxed, std::move(*asked)});
  if (!input.ok()) return failed(run.report, input.kind(), input.error());
  // The order and plugin directories the settings and --backends/--plugin-dir decided; it
  // outlives `backends`, which keeps a reference to it.
  const GlobalOptions chosen = with_backends(globals, input->decided.backends);
  for (const std::string& note : input->settings.notes)
    std::cerr << "sbx: note: " << printable(note) << '\n';
  warn_about_policy_in_workspace(*input);
  CliBackends backends(chosen, input->policy_file);
  RunRequest request = run_request(std::move(*input), options.command);
  // With --json the command's stderr is copied through a pipe (it still reaches the user) and
  // its tail kept for the denial classification.
  request.capture_stderr = wants_report(options) && !options.dry_run;
  request.on_refusal = print_refusal;
  request.on_unsandboxed_override = [](const std::string& wanted, const BackendChoice& choice) {
    std::cerr << "sbx: warning: running the command WITHOUT a sandbox (--allow-unsandboxed): "
              << "a sandbox was wanted (" << printable(wanted)
              << ") but none is available: " << printable(choice.reason) << '\n';
  };
  if (options.dry_run) {
    run = plan_command(std::move(request), backends);
    if (run.plan) print_plan(run.report.final, *run.plan);
    return stopped(options, run);
  }
  run = run_command(std::move(request), backends);
  return finish(options, run);
}

// Where --report-fd or --report-file sends the report: a descriptor opened (or checked) before
// the run, close-on-exec so that the command never gets it. -1: stderr (--json) or nowhere.
Result<int> report_destination(const ExecOptions& options) {
#ifdef _WIN32
  if (options.report_fd >= 0 || !options.report_file.empty())
    return Error{"--report-fd and --report-file are not supported on Windows yet; use --json",
                 ErrorKind::invalid_input};
  return -1;
#else
  if (!options.report_file.empty()) {
    // The caller's file, made if missing (0600), emptied now: whatever stood in it (a planted
    // report) is gone before the command starts.
    const int fd = ::open(options.report_file.c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0)
      return Error{"--report-file " + options.report_file + ": " + std::strerror(errno),
                   ErrorKind::invalid_input};
    return fd;
  }
  if (options.report_fd < 0) return -1;
  const int flags = ::fcntl(options.report_fd, F_GETFL);
  if (options.report_fd <= 2 || flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
    return Error{"--report-fd " + std::to_string(options.report_fd) +
                     ": not an open descriptor above 2 that can be written; pass one (a pipe, a "
                     "file), or use --json for stderr",
                 ErrorKind::invalid_input};
  ::fcntl(options.report_fd, F_SETFD, FD_CLOEXEC);
  return options.report_fd;
#endif
}

// The whole report and a newline on `fd`; false when it could not be written.
bool write_report(int fd, const std::string& text) {
#ifdef _WIN32
  (void)fd, (void)text;
  return false;
#else
  return sdk::posix_child::write_all(fd, text + "\n");
#endif
}

int run_exec(const ExecOptions& options, const GlobalOptions& globals) {
  RunOutcome run;
  run.report.dry_run = options.dry_run;
  const Result<int> destination = report_destination(options);
  if (!destination.ok()) {
    const int code =
        failed(run.report, destination.kind(), destination.error(), "the command was not run");
    if (options.json) std::cerr << exec_report_to_json(run.report, ExecReportKeys::kCli) << '\n';
    return code;
  }
  int code = exec_steps(options, globals, run);
  if (!wants_report(options)) return code;
  const std::string report = exec_report_to_json(run.report, ExecReportKeys::kCli);
  if (*destination < 0) {
    // Last line on stderr, after everything the command and sbx printed; stdout stays the
    // command's own.
    std::cerr << report << std::endl;
    return code;
  }
  if (!write_report(*destination, report)) {
    std::cerr << "sbx: cannot write the report to "
              << (options.report_file.empty() ? "--report-fd " + std::to_string(options.report_fd)
                                              : options.report_file)
              << ": " << std::strerror(errno) << '\n';
    if (code == 0) code = kExitSbxFailure;
  }
#ifndef _WIN32
  ::close(*destination);
#endif
  return code;
}

}  // namespace

Command register_exec(CLI::App& app, const GlobalOptions& globals) {
  auto options = std::make_shared<ExecOptions>();
  CLI::App* sub = app.add_subcommand(
      "exec",
      "Run a command under the policy: sandboxed when it should be, refusing (exit 125) "
      "when a sandbox is wanted but none is available");
  add_policy_options(*sub, options->policy);
  add_sandbox_option(*sub, options->sandbox);
  sub->add_flag("--allow-unsandboxed", options->allow_unsandboxed,
                "When a sandbox is wanted but none is available, run the command without one "
                "(prints a warning; never for a policy with deny entries or network mode proxy; "
                "refused when the administrator locks it)");
  sub->add_flag("--dry-run", options->dry_run,
                "Print the plan (backend, argv, env, cwd, notes) as JSON instead of running it");
  sub->add_flag("--json", options->json,
                "After the run, write one JSON object describing it (with \"denial\": was a "
                "failure likely the sandbox's doing, and \"network_refusals\": the first "
                "connections the proxy refused) as the last line of stderr; the command's stderr "
                "is then copied through a pipe");
  CLI::Option* report_fd =
      sub->add_option("--report-fd", options->report_fd,
                      "Write the same JSON report to descriptor N (above 2: a pipe or a file the "
                      "caller opened) instead of stderr; the command never inherits it")
          ->type_name("N")
          ->check(CLI::NonNegativeNumber);
  CLI::Option* report_file =
      sub->add_option(
             "--report-file", options->report_file,
             "Write the same JSON report to PATH (made 0600 if missing, emptied before the run) "
             "instead of stderr; keep it outside the writable roots")
          ->type_name("PATH");
  report_fd->excludes(report_file);
  sub->add_option("command", options->command, "The command and its arguments, after --")
      ->type_name("CMD [ARG...]");
  sub->footer(
      "Examples:\n  sbx exec -- make test\n  sbx exec --preset read-only -- ls -la\n"
      "  sbx exec --network enabled --writable-root ~/.cache -- npm ci\n"
      "  sbx exec --dry-run -- /bin/true\n\n"
      "Exit status: the command's own; 128+N if it died of signal N; 125 when sbx failed or "
      "refused; 126 not executable; 127 not found.");
  return {sub, [options, &globals] { return run_exec(*options, globals); }};
}

}  // namespace sbx::cli
