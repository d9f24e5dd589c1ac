// `sbx exec [POLICY] [--sandbox ...] [--allow-unsandboxed] [--dry-run] [--json] -- CMD [ARG...]`
// Question 1, then (if a sandbox is wanted) question 2, then run through the chosen backend or
// directly. "Wanted but none available" never silently becomes "unsandboxed": it exits 125
// unless the caller passed --allow-unsandboxed, and never for a policy with deny entries.
//
// network.mode == proxy: Manager::plan_run starts sbx's filtering proxy (sbx/core/proxy.hpp)
// before the backend's transform and points the request at it (proxy variables, proxy_ports,
// proxy_socket); the run keeps it until the command has exited. Each refusal the proxy keeps
// (the first ones; see proxy::Limits) is one stderr line as it happens and an entry of
// "network_refusals" in the --json report; the rest are counted per host in one stderr line
// after the command and in "network_refusals_total". The per-run credential is never printed:
// the --dry-run plan shows "***" in its place.
#if defined(_WIN32)
#include <cstdio>
#else
#include <unistd.h>
#endif

#include <cerrno>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "sbx/core/environment.hpp"
#include "sbx/core/created_names.hpp"
#include "sbx/core/denial.hpp"
#include "sbx/core/proxy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/run_limits.hpp"
#include "sbx/core/spawn.hpp"
#include "text_table.hpp"

namespace sbx::cli {
namespace {

struct ExecOptions {
  PolicyOptions policy;
  std::string sandbox = "auto";
  bool allow_unsandboxed = false;
  bool dry_run = false;
  bool json = false;
  std::vector<std::string> command;
};

// What one run needs while it goes through the steps; `report` becomes the --json line.
struct ExecRun {
  const ExecOptions& options;
  PolicyInput input;
  std::vector<std::string> argv;  // argv[0] resolved to an absolute path
  std::vector<std::string> env;
  RunReport report;
  std::optional<std::string> stderr_tail;  // captured with --json, for the denial report
  proxy::RefusalLog refusals;              // network.mode == proxy: the refused connections
};

int failed(RunReport& report, const std::string& what, const std::string& todo) {
  report.error = what + "; " + todo;
  return fail(what, todo);
}

int failed(RunReport& report, const std::string& message) {
  report.error = message;
  return fail(message);
}

// Names the resource limit that ended the run, on stderr unless --json reports it.
void report_limit_hit(const ExecRun& run) {
  if (!run.report.limit_hit || run.options.json) return;
  std::cerr << "sbx: the run was stopped by its " << *run.report.limit_hit
            << " limit (policy /limits; `sbx explain` shows how each limit holds)\n";
}

// Runs the command; with --json, its stderr is copied through a pipe (it still reaches the
// user) and the last 64 KiB are kept for the denial classification. The run's resource limits
// (run_limits.hpp) hold from the first process the backend starts until finish() has killed
// whatever is left of the run.
template <typename Start>
Result<ExitStatus> run_captured(ExecRun& run, Start&& start) {
  Result<std::unique_ptr<LimitedRun>> limited = LimitedRun::start(run.input.policy.limits);
  if (!limited.ok())
    return Error{"the command was not run: cannot set up its resource limits: " + limited.error()};
  std::unique_ptr<StderrCapture> capture;
  if (run.options.json) {
    Result<std::unique_ptr<StderrCapture>> started = StderrCapture::start();
    if (!started.ok()) return Error{started.error() + "; run without --json"};
    capture = std::move(*started);
  }
  Result<ExitStatus> status = start();
  run.report.limit_hit = (*limited)->finish(status.ok() ? status->shell_code() : -1);
  if (capture) run.stderr_tail = capture->stop();
  report_limit_hit(run);
  return status;
}

int finish(ExecRun& run, const Result<ExitStatus>& status) {
  if (!status.ok()) {
    return failed(run.report, status.error(),
                  "the command may not have completed; rerun with --log-level debug for details");
  }
  run.report.status = *status;
  return status->shell_code();
}

int run_direct(ExecRun& run) {
  ExecPlan plan{run.argv, run.env, run.input.cwd, {"not sandboxed: " + run.report.reason}};
  run.report.final = "none";
  if (run.options.dry_run) {
    std::cout << plan_to_json(std::nullopt, plan, JsonStyle::kPretty) << '\n';
    return 0;
  }
  return finish(run, run_captured(run, [&] { return spawn_and_wait(plan); }));
}

// Writes "sbx: proxy: TEXT" as one line on stderr. A single write() keeps the line whole among
// the command's own output; host names came from the command, so control characters are
// escaped.
void print_proxy_line(const std::string& text) {
  const std::string line = "sbx: proxy: " + printable(text) + "\n";
#if defined(_WIN32)
  std::fwrite(line.data(), 1, line.size(), stderr);
#else
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stderr is gone; the --json report still lists it
    done += static_cast<std::size_t>(n);
  }
#endif
}

// One refusal, as it happens (called on the proxy's thread for the refusals it keeps).
void print_refusal(const proxy::Refusal& refusal) { print_proxy_line(proxy::describe(refusal)); }

// Protected names the command created below the top of its writable roots, where no backend
// keeps them (created_names.hpp): listed in the --json report, one warning line each otherwise.
void report_created_names(ExecRun& run, const CreatedNamesWatch& watch, std::int64_t started) {
  CreatedNames created = find_created_names(watch, started);
  run.report.protected_names_created = std::move(created.paths);
  run.report.protected_names_truncated = created.truncated;
  if (run.options.json) return;
  for (const std::string& path : run.report.protected_names_created)
    std::cerr << "sbx: warning: " << printable(created_name_warning(path)) << '\n';
  if (created.truncated)
    std::cerr << "sbx: warning: the writable roots are too large to check completely for "
                 "protected names the command created\n";
}

int run_sandboxed(ExecRun& run, const Manager& manager, const std::string& backend) {
  TransformRequest request{run.argv, run.input.cwd, run.env, run.input.resolved};
  // Holds sbx's proxy (network mode proxy) until this function returns, i.e. until the command
  // (and its sandbox) has exited.
  Result<SandboxedRun> planned = manager.plan_run(backend, std::move(request), print_refusal);
  if (!planned.ok()) {
    return failed(run.report, planned.error(),
                  "the command was not run; see `sbx explain` and `sbx debug " + backend + "`");
  }
  run.report.final = backend;
  if (run.options.dry_run) {
    std::cout << plan_to_json(backend, proxy::redact_plan(planned->plan, planned->proxy.get()),
                              JsonStyle::kPretty)
              << '\n';
    return 0;
  }
  const CreatedNamesWatch watch = created_names_watch(run.input.policy, run.input.resolved);
  const std::int64_t started = created_names_clock();
  const int code =
      finish(run, run_captured(run, [&] { return manager.exec(backend, planned->plan); }));
  report_created_names(run, watch, started);
  if (planned->proxy) {
    run.refusals = planned->proxy->proxy().refusal_log();
    // The refusals not printed as they happened, counted per host in one line.
    if (std::optional<std::string> rest = proxy::describe_omitted(run.refusals))
      print_proxy_line(*rest);
  }
  return code;
}

// Question 2 said "none". Refuse (125) unless the caller explicitly accepted running without a
// sandbox, and always refuse for a deny policy: only a sandbox could keep the command away
// from what it denies.
// Why this policy may never run without a sandbox, even with --allow-unsandboxed: a deny entry
// (the denied paths would be readable) or network mode proxy (the domain rules would not
// apply: the command would have the whole network). nullopt if neither.
std::optional<std::string> never_unsandboxed(const Policy& policy) {
  if (std::optional<std::string> deny = first_deny(policy)) {
    return "the policy denies " + *deny +
           ": a policy with deny entries never runs unsandboxed";
  }
  if (policy.network.mode == NetworkMode::kProxy) {
    return "the policy allows the network only through sbx's proxy: a policy with network mode "
           "proxy never runs unsandboxed";
  }
  return std::nullopt;
}

int none_available(ExecRun& run, const BackendChoice& choice) {
  const std::optional<std::string> deny = never_unsandboxed(run.input.policy);
  if (run.options.allow_unsandboxed && !deny) {
    std::cerr << "sbx: warning: running the command WITHOUT a sandbox (--allow-unsandboxed): "
              << "a sandbox was wanted (" << printable(run.report.reason)
              << ") but none is available: " << printable(choice.reason) << '\n';
    run.report.ran_unsandboxed_by_override = true;
    return run_direct(run);
  }
  const std::string what =
      deny
          ? "a sandbox is wanted but no backend is available here, and " + *deny +
                ", not even with --allow-unsandboxed, so the command was not run"
          : "a sandbox is wanted but no backend is available here, so the command was not run";
  const std::string todo =
      deny ? "make a backend available (`sbx backends --probe` shows what is missing) or "
             "remove what the policy restricts"
           : "make a backend available (`sbx backends --probe` shows what is missing), choose "
             "others with --backends, or pass --allow-unsandboxed to run it without a sandbox";
  const int code = failed(run.report, what, todo);
  std::cerr << "  wanted: " << printable(run.report.reason) << '\n';
  if (choice.passed_over.empty()) std::cerr << "  no backend is loaded\n";
  for (const PassedOver& item : choice.passed_over)
    std::cerr << "  passed over " << printable(item.backend) << ": " << printable(item.reason)
              << '\n';
  return code;
}

// Finds argv[0] like a shell would; 127 when it does not exist (nothing runs).
std::optional<int> resolve_argv(ExecRun& run) {
  Result<std::string> path = resolve_command(run.options.command[0], run.input.cwd, run.env);
  if (!path.ok()) {
    run.report.error = path.error();
    std::cerr << "sbx: " << printable(run.options.command[0]) << ": " << path.error()
              << "; check the name, or give an absolute path\n";
    return kExitNotFound;
  }
  run.argv = run.options.command;
  run.argv[0] = *path;
  return std::nullopt;
}

// With no --backends: loads only the backend the default order prefers on this platform and
// runs the command through it if it is available and can enforce the policy. nullopt when
// that is not the case (or the platform has no such backend): the caller then loads every
// plugin and asks them in order, so the outcome is the same as without this shortcut.
std::optional<int> run_with_preferred_backend(ExecRun& run, const GlobalOptions& globals) {
#ifdef __linux__
  constexpr const char* kPreferred = "bwrap";  // first in the default order (core/src/run/manager.cpp)
#else
  constexpr const char* kPreferred = nullptr;
#endif
  if (kPreferred == nullptr || !globals.backends.empty()) return std::nullopt;
  GlobalOptions preferred = globals;
  preferred.backends = {kPreferred};
  Result<PluginRegistry> registry = load_registry(preferred);
  if (!registry.ok() || registry->find(kPreferred) == nullptr) return std::nullopt;
  const Manager manager(*registry, {}, run.input.policy_file);
  const BackendChoice choice = manager.available_backend(run.input.resolved);
  if (choice.backend != kPreferred) return std::nullopt;
  run.report.backend = choice.backend;
  return run_sandboxed(run, manager, *choice.backend);
}

int exec_steps(ExecRun& run, const GlobalOptions& globals) {
  if (run.options.command.empty())
    return failed(run.report, "exec needs a command", "put it after --, e.g. sbx exec -- ls -l");
  Result<SandboxPreference> preference = parse_sandbox_preference(run.options.sandbox);
  if (!preference.ok())
    return failed(run.report, preference.error(), "use --sandbox auto, require or forbid");
  Result<PolicyInput> input = load_policy(run.options.policy);
  if (!input.ok()) return failed(run.report, input.error());
  run.input = std::move(*input);
  Result<SandboxDecision> decision = should_sandbox(run.input.policy, *preference);
  if (!decision.ok()) return failed(run.report, decision.error(), "the command was not run");
  run.report.should_sandbox = decision->sandbox;
  run.report.reason = decision->reason;
  // The policy's /environment (secrets dropped by default) on every path, sandboxed or not;
  // sbx's own proxy variables are added later, by plan_run.
  run.env = filter_environment(run.input.policy.environment, current_environment()).env;
  if (std::optional<int> code = resolve_argv(run)) return *code;
  if (!decision->sandbox) return run_direct(run);

  // Fast path of the default order: the preferred backend alone, when it is available and can
  // enforce the policy (each further plugin costs about a millisecond of start-up). Otherwise
  // every plugin is loaded and asked, exactly as without the fast path.
  if (std::optional<int> code = run_with_preferred_backend(run, globals)) return *code;
  Result<PluginRegistry> registry = load_registry(globals);
  if (!registry.ok()) return failed(run.report, registry.error());
  const Manager manager(*registry, globals.backends, run.input.policy_file);
  const BackendChoice choice = manager.available_backend(run.input.resolved);
  run.report.backend = choice.backend;
  if (!choice.backend) return none_available(run, choice);
  return run_sandboxed(run, manager, *choice.backend);
}

// The --json line: the run report plus "denial" (sbx/core/denial.hpp; null when the command did
// not run), "network_refusals" (the refusals the proxy kept; [] without a proxy) and
// "network_refusals_total" (every refusal, kept or not). run_to_json's compact object ends with
// '}', so the keys go right before it.
std::string report_line(const ExecRun& run) {
  std::string line = run_to_json(run.report, JsonStyle::kCompact);
  std::string denial = "null";
  if (run.report.status) {
    const std::string tail = run.stderr_tail.value_or("");
    denial =
        denial_to_json(classify_failure(FailedCommand{*run.report.status, tail, run.report.final}));
  }
  line.insert(line.size() - 1,
              ",\"denial\":" + denial +
                  ",\"network_refusals\":" + proxy::refusals_to_json(run.refusals.entries) +
                  ",\"network_refusals_total\":" + std::to_string(run.refusals.total));
  return line;
}

int run_exec(const ExecOptions& options, const GlobalOptions& globals) {
  ExecRun run{options, {}, {}, {}, {}, std::nullopt, {}};
  run.report.final = "none";
  run.report.dry_run = options.dry_run;
  const int code = exec_steps(run, globals);
  // Last line on stderr, after everything the command and sbx printed; stdout stays the
  // command's own.
  if (options.json) std::cerr << report_line(run) << std::endl;
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
                "(prints a warning; never for a policy with deny entries or network mode proxy)");
  sub->add_flag("--dry-run", options->dry_run,
                "Print the plan (backend, argv, env, cwd, notes) as JSON instead of running it");
  sub->add_flag("--json", options->json,
                "After the run, write one JSON object describing it (with \"denial\": was a "
                "failure likely the sandbox's doing, and \"network_refusals\": the first "
                "connections the proxy refused) as the last line of stderr; the command's stderr "
                "is then copied through a pipe");
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
