// The C API (sbx/sbx.h): thin wrappers over the C++ core. Every entry point catches every
// exception (nothing may unwind into C), turns a Result error into an sbx_error, and returns
// JSON built by the same renderers as the CLI, so both front ends report the same shapes.
// sbx_explain, sbx_transform, sbx_exec and sbx_run_start are adapters over the core's run
// (sbx/core/run.hpp), the pipeline `sbx explain`, `sbx exec --dry-run` and `sbx exec` use; a run
// handle adds the run's stdio and control (sbx/core/run_io.hpp) and a thread the run goes on in.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "capi/capi_internal.hpp"
#include "policy/path_util.hpp"
#include "report/json_render.hpp"
#include "sbx/core/context.hpp"
#include "sbx/core/denial.hpp"
#include "sbx/core/environment.hpp"
#include "sbx/core/manager.hpp"
#include "sbx/core/permissions.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/policy.hpp"
#include "sbx/core/report_json.hpp"
#include "sbx/core/request.hpp"
#include "sbx/core/resolve.hpp"
#include "sbx/core/run.hpp"
#include "sbx/core/run_io.hpp"
#include "sbx/core/run_limits.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/core/settings.hpp"
#include "sbx/core/win_path.hpp"
#include "sbx/sbx.h"

struct sbx_error {
  std::string message;
  sbx::ErrorKind kind = sbx::kDefaultErrorKind;
};

// sbx_error_kind's values are ErrorKind's (result.hpp): checked here so neither drifts.
static_assert(static_cast<int>(sbx::ErrorKind::invalid_input) == SBX_ERROR_INVALID_INPUT);
static_assert(static_cast<int>(sbx::ErrorKind::refused) == SBX_ERROR_REFUSED);
static_assert(static_cast<int>(sbx::ErrorKind::unavailable) == SBX_ERROR_UNAVAILABLE);
static_assert(static_cast<int>(sbx::ErrorKind::backend_failure) == SBX_ERROR_BACKEND_FAILURE);
static_assert(static_cast<int>(sbx::ErrorKind::host_failure) == SBX_ERROR_HOST_FAILURE);
static_assert(static_cast<int>(sbx::ErrorKind::timed_out) == SBX_ERROR_TIMED_OUT);
static_assert(static_cast<int>(sbx::ErrorKind::cancelled) == SBX_ERROR_CANCELLED);
static_assert(sbx::kErrorKindCount == 7);

struct sbx_manager {
  sbx::PluginRegistry registry;
  std::unique_ptr<sbx::Manager> manager;
  // sbx_manager_new_with_settings: the scopes read when the manager was made; every call then
  // goes through them and their locks as `sbx` does. nullopt for sbx_manager_new.
  std::optional<sbx::settings::Settings> settings;
  // The working directory those settings were read for (the project search started there,
  // symlink-free), and as the caller named it (symlinks kept; empty when not known): a call with
  // another one is refused (see same_settings_directory).
  std::string settings_cwd;
  std::string settings_logical_cwd;
  // The backend order and plugin directories the manager was made with (its arguments over the
  // settings'), checked against the locks then: what every call reports.
  sbx::settings::BackendSelection backends;
  // Backends are called from one thread at a time (sbx/sdk/backend.hpp): every call that
  // reaches a backend holds this.
  std::mutex mutex;
};

// One sbx_run_start: the run's stdio and control, made before the run (the caller takes its pipe
// ends and may cancel at once), and the thread the run goes on in.
struct sbx_run {
  sbx_manager* manager = nullptr;  // entered (LiveManagers::enter) until the thread has ended
  std::shared_ptr<sbx::RunStdio> stdio;
  std::shared_ptr<sbx::RunControl> control;
  std::thread thread;
  std::mutex mutex;  // sbx_run_wait from several threads: one joins
  bool joined = false;
  // Written by the thread before it ends; read once it has been joined.
  sbx::Result<std::string> report = sbx::Error{"the run did not end"};
};

namespace sbx {
namespace {

// The managers sbx_manager_new* made and not yet freed, each with the number of calls inside it.
// sbx_manager_free marks a manager closing at once (a call that starts later is refused with an
// error before it touches the manager) and deletes it only when the calls already inside have
// returned: freeing under a running call was a heap use-after-free (issue #32). Looking a
// handle up here never dereferences it, so a handle freed earlier is an error, not a crash,
// unless a new manager has been given the same address since.
class LiveManagers {
 public:
  sbx_manager* adopt(std::unique_ptr<sbx_manager> manager) {
    const std::lock_guard<std::mutex> lock(mutex_);
    sbx_manager* raw = manager.get();
    states_.emplace(raw, State{});
    return manager.release();
  }
  // False when `manager` is not live (freed, being freed, or never made here).
  bool enter(sbx_manager* manager) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = states_.find(manager);
    if (found == states_.end() || found->second.closing) return false;
    ++found->second.calls;
    return true;
  }
  void leave(sbx_manager* manager) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = states_.find(manager);  // still there: release() waits for this call
    if (found != states_.end() && --found->second.calls == 0) idle_.notify_all();
  }
  // Waits until no call is inside `manager`, then hands it over for deletion; nullptr when it
  // is not live or another thread is already freeing it.
  std::unique_ptr<sbx_manager> release(sbx_manager* manager) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto found = states_.find(manager);
    if (found == states_.end() || found->second.closing) return nullptr;
    found->second.closing = true;
    idle_.wait(lock, [&] { return states_.at(manager).calls == 0; });
    states_.erase(manager);
    return std::unique_ptr<sbx_manager>(manager);
  }

 private:
  struct State {
    int calls = 0;
    bool closing = false;
  };
  std::mutex mutex_;
  std::condition_variable idle_;
  std::unordered_map<sbx_manager*, State> states_;
};

// Never destroyed: a thread may still call into libsbx while static destructors run at exit.
LiveManagers& live_managers() {
  static LiveManagers* const managers = new LiveManagers;
  return *managers;
}

// One call inside a live manager (LiveManagers::enter/leave), for the call's whole duration.
class ManagerCall {
 public:
  explicit ManagerCall(sbx_manager* manager)
      : manager_(manager), entered_(manager != nullptr && live_managers().enter(manager)) {}
  ~ManagerCall() {
    if (entered_) live_managers().leave(manager_);
  }
  ManagerCall(const ManagerCall&) = delete;
  ManagerCall& operator=(const ManagerCall&) = delete;
  Status status() const {
    if (manager_ == nullptr)
      return Error{"manager is NULL; create one with sbx_manager_new", ErrorKind::invalid_input};
    if (!entered_)
      return Error{
          "manager is not a live manager: it was freed (sbx_manager_free) or is being "
          "freed; create a new one with sbx_manager_new",
          ErrorKind::invalid_input};
    return {};
  }

 private:
  sbx_manager* manager_;
  bool entered_;
};

void set_error(sbx_error** error, Error failure) {
  if (error == nullptr) return;
  *error = new (std::nothrow) sbx_error{std::move(failure.message), failure.kind};
}

// A malloc'd copy the caller frees with sbx_string_free (plain free, so any allocator-agnostic
// binding can release it).
char* to_c(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// Runs `body` (which returns Result<std::string>) and converts the outcome for C.
template <typename Body>
char* guarded(sbx_error** error, Body&& body) noexcept {
  try {
    Result<std::string> result = body();
    if (!result.ok()) {
      set_error(error, result.failure());
      return nullptr;
    }
    char* out = to_c(*result);
    if (out == nullptr) set_error(error, Error{"out of memory"});
    return out;
  } catch (const std::exception& e) {
    set_error(error, Error{std::string("internal error in libsbx: ") + e.what() +
                           "; please report this as a bug"});
  } catch (...) {
    set_error(error,
              Error{"internal error in libsbx (unknown exception); please report this as a bug"});
  }
  return nullptr;
}

Result<std::string> need(const char* value, const char* name) {
  if (value == nullptr)
    return Error{std::string(name) + " is NULL; pass a value", ErrorKind::invalid_input};
  return std::string(value);
}

Result<Policy> policy_from(const char* policy_json) {
  Result<std::string> text = need(policy_json, "policy_json");
  if (!text.ok()) return text.failure();
  Result<Policy> policy = parse_policy(*text);
  if (!policy.ok()) return policy.failure().prefixed("invalid policy: ");
  return policy;
}

Result<ResolveContext> context_for(const char* cwd) {
  Result<ResolveContext> context = current_resolve_context();
  if (!context.ok()) return context.failure();
  if (cwd == nullptr) return context;
  if constexpr (kHostPathStyle == PathStyle::kWindows) {
    // A drive-absolute path, in the generic form the resolver compares ("C:/a/b"); UNC and
    // device paths are refused with the reason, as in policies.
    Result<std::string> normalized = policy::winpath::normalize(cwd);
    if (!normalized.ok())
      return Error{"cwd '" + std::string(cwd) + "': " + normalized.error() +
                       "; pass a drive-absolute path or NULL for the current directory",
                   ErrorKind::invalid_input};
    context->cwd = *normalized;
  } else {
    if (cwd[0] != '/')
      return Error{"cwd '" + std::string(cwd) +
                       "' is not absolute; pass an "
                       "absolute path or NULL for the current directory",
                   ErrorKind::invalid_input};
    context->cwd = cwd;
  }
  return context;
}

// A call without a manager's settings: the policy exactly as given, resolved against `cwd`.
Result<PreparedRequest> prepare(const char* policy_json, const char* cwd) {
  PolicyRequest request;
  Result<Policy> policy = policy_from(policy_json);
  if (!policy.ok()) return policy.failure();
  request.overrides.policy = std::move(*policy);
  request.context = [cwd] { return context_for(cwd); };
  return prepare_request(std::move(request));
}

Result<SandboxPreference> preference_from(const char* preference) {
  if (preference == nullptr || preference[0] == '\0') return SandboxPreference::kAuto;
  return parse_sandbox_preference(preference);
}

// The project settings of a manager were read for one working directory; a call in another one
// would run under the wrong project's settings (a trusted project's deny rules missing, or an
// untrusted one's in force), silently. Refused instead: the caller makes a manager for that
// directory. The cwd must be the one the manager was made with, as named then or its real path:
// another spelling through a symlink could lie inside a trusted project the real path leaves,
// which the settings checked only for the manager's own (settings::Sources::logical_cwd).
Status same_settings_directory(const sbx_manager& manager, const std::string& call_cwd) {
  std::string named = call_cwd;
  if (kHostPathStyle == PathStyle::kPosix) {
    named = policy::path::lexically_normal(call_cwd);
    while (named.size() > 1 && named.back() == '/') named.pop_back();
  }
  const std::string& settings_cwd = manager.settings_cwd;
  if (named == settings_cwd ||
      (!manager.settings_logical_cwd.empty() && named == manager.settings_logical_cwd))
    return {};
  return Error{"cwd '" + call_cwd +
                   "' is not the directory this manager read its project "
                   "settings for ('" +
                   settings_cwd +
                   "'); create a manager with "
                   "sbx_manager_new_with_settings for that cwd",
               ErrorKind::invalid_input};
}

// One call on a manager with settings: the caller's arguments are the highest scope (like the
// command line), the locks refuse what asks for more (a C error naming the lock), and the
// settings files are kept read-only in the sandbox.
Result<PreparedRequest> prepare_with_settings(const settings::Settings& loaded,
                                              const sbx_manager& manager, const char* policy_json,
                                              const char* cwd, const char* preference,
                                              bool allow_unsandboxed) {
  PolicyRequest request;
  request.settings = &loaded;
  if (policy_json != nullptr) {
    Result<Policy> policy = policy_from(policy_json);
    if (!policy.ok()) return policy.failure();
    request.overrides.policy = std::move(*policy);
    request.overrides.preset = settings::preset_name(policy_json);
  }
  if (preference != nullptr && preference[0] != '\0') {
    Result<SandboxPreference> pref = parse_sandbox_preference(preference);
    if (!pref.ok()) return pref.failure();
    request.overrides.sandbox = *pref;
  }
  request.overrides.allow_unsandboxed = allow_unsandboxed;
  request.context = [&manager, cwd]() -> Result<ResolveContext> {
    Result<ResolveContext> context = context_for(cwd);
    if (!context.ok()) return context.failure();
    if (Status same = same_settings_directory(manager, context->cwd); !same.ok())
      return same.failure();
    return context;
  };
  return prepare_request(std::move(request));
}

// Every call that takes a manager: through its settings when it has them, else the policy and
// preference exactly as given.
// The manager's backends, chosen when it was made, in what a call reports (sbx_explain's
// "settings").
void report_manager_backends(const sbx_manager& manager, PreparedRequest& input) {
  input.decided.backends = manager.backends;
  input.settings.backend_order = manager.backends.order.value;
  input.settings.backend_order_scope =
      std::string(settings::to_string(manager.backends.order.scope));
  input.settings.plugin_dirs.clear();
  for (const auto& dir : manager.backends.plugin_dirs)
    input.settings.plugin_dirs.push_back(dir.value);
}

Result<PreparedRequest> prepare_call(const sbx_manager& manager, const char* policy_json,
                                     const char* cwd, const char* preference,
                                     bool allow_unsandboxed) {
  Result<PreparedRequest> input =
      manager.settings ? prepare_with_settings(*manager.settings, manager, policy_json, cwd,
                                               preference, allow_unsandboxed)
                       : prepare(policy_json, cwd);
  if (!input.ok()) return input;
  report_manager_backends(manager, *input);
  if (manager.settings) return input;
  // After the resolution, as the caller's choices have always been checked here.
  Result<SandboxPreference> pref = preference_from(preference);
  if (!pref.ok()) return pref.failure();
  input->decided.sandbox = {*pref, settings::Scope::kCommandLine};
  input->decided.allow_unsandboxed = allow_unsandboxed;
  return input;
}

std::vector<std::string> split_names(const char* backends) {
  std::vector<std::string> names;
  if (backends == nullptr) return names;
  std::string current;
  for (const char* c = backends;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!current.empty()) names.push_back(current);
      current.clear();
      if (*c == '\0') break;
    } else {
      current += *c;
    }
  }
  return names;
}

// The backends of a C API handle: one manager, loaded by sbx_manager_new. Its runs plan one at
// a time (the handle's mutex: probes, kept answers and transforms are not for several threads)
// and run side by side.
class HandleBackends final : public RunBackends {
 public:
  explicit HandleBackends(sbx_manager& handle) : handle_(handle) {}
  Result<const Manager*> all() override { return handle_.manager.get(); }
  std::unique_lock<std::mutex> planning_lock() override {
    return std::unique_lock<std::mutex>(handle_.mutex);
  }

 private:
  sbx_manager& handle_;
};

Result<std::vector<std::string>> argv_from(const char* const* argv) {
  if (argv == nullptr || argv[0] == nullptr)
    return Error{"argv is empty; pass the command", ErrorKind::invalid_input};
  std::vector<std::string> out;
  for (const char* const* arg = argv; *arg != nullptr; ++arg) out.emplace_back(*arg);
  return out;
}

// The request of one command: the policy resolved against `cwd`, this process's environment.
Result<RunRequest> request_from(const sbx_manager& manager, const char* policy_json,
                                const char* cwd, const char* const* argv, const char* preference,
                                bool allow_unsandboxed) {
  Result<PreparedRequest> input =
      prepare_call(manager, policy_json, cwd, preference, allow_unsandboxed);
  if (!input.ok()) return input.failure();
  Result<std::vector<std::string>> command = argv_from(argv);
  if (!command.ok()) return command.failure();
  RunRequest request;
  request.policy = std::move(input->policy);
  request.cwd = input->resolved.cwd;
  request.resolved = std::move(input->resolved);
  request.command = std::move(*command);
  request.environment = process_environment();
  request.preference = input->decided.sandbox.value;
  request.allow_unsandboxed = input->decided.allow_unsandboxed;
  request.settings = std::move(input->settings);
  request.caches = std::move(input->caches);
  return request;
}

// The C API's words for a run that stopped. A refusal (a sandbox is wanted but none is
// available) and a failed run are reports with "error" set; every other stop is a C error.
Status describe_stop(RunOutcome& run, const std::vector<std::string>& command) {
  switch (run.stop) {
    case RunStop::kNone:
      return {};
    case RunStop::kNoBackend:
      run.report.error = "a sandbox is wanted (" + run.report.reason +
                         ") but no backend is available here: " + run.error +
                         "; make one available (see sbx_backends_json with probe) or choose "
                         "others";
      run.report.error_kind = run.kind;
      return {};
    case RunStop::kRunFailed:
    case RunStop::kEndedEarly:  // cancelled or timed out: "exit" says how the command ended
      run.report.error = run.error;
      run.report.error_kind = run.kind;
      return {};
    case RunStop::kCommandNotFound:
      return Error{command.front() + ": " + run.error, run.kind};
    case RunStop::kLimitsUnavailable:
      return Error{"cannot set up the run's resource limits: " + run.error, run.kind};
    case RunStop::kInvalidRequest:
    case RunStop::kBackendsUnavailable:
    case RunStop::kPlanRefused:
    case RunStop::kCaptureUnavailable:
      return Error{run.error, run.kind};
  }
  return Error{"internal error: unknown run outcome"};
}

// The report of a run as the C API gives it: a report with "error" for a refusal, a failed or
// ended run; a C error for every other stop.
Result<std::string> run_report(RunOutcome& run, const std::vector<std::string>& command) {
  if (Status stopped = describe_stop(run, command); !stopped.ok()) return stopped.failure();
  if (run.stop == RunStop::kNoBackend) {
    // What the caller can do about it: only sbx_exec has the override flag.
    run.report.error += run.never_unsandboxed
                            ? " (the policy has deny entries or network mode proxy, so it never "
                              "runs unsandboxed)"
                            : " (or pass SBX_EXEC_ALLOW_UNSANDBOXED)";
  }
  return exec_report_to_json(run.report, ExecReportKeys::kWithStderrTail);
}

Result<std::string> exec_command(sbx_manager* manager, const char* policy_json, const char* cwd,
                                 const char* const* argv, const char* preference, unsigned flags) {
  const ManagerCall call(manager);
  if (Status live = call.status(); !live.ok()) return live.failure();
  Result<RunRequest> request = request_from(*manager, policy_json, cwd, argv, preference,
                                            (flags & SBX_EXEC_ALLOW_UNSANDBOXED) != 0);
  if (!request.ok()) return request.failure();
  const std::vector<std::string> command = request->command;
  request->capture_stderr = (flags & SBX_EXEC_CAPTURE_STDERR) != 0;
  // A timeout ends only this run's cgroup, never a signal to the embedding process, whose other
  // commands would get it too.
  request->limit_signals = LimitedRun::Signals::kRunOnly;
  // The embedding process's signals are its own unless it asks (sbx.h, SBX_EXEC_FORWARD_SIGNALS).
  request->forward_signals = (flags & SBX_EXEC_FORWARD_SIGNALS) != 0;
  HandleBackends backends(*manager);
  RunOutcome run = run_command(std::move(*request), backends);
  return run_report(run, command);
}

// The "NAME=VALUE" entries and names of a NULL-terminated list (NULL: none), checked.
Result<std::vector<std::string>> env_list(const char* const* list, bool with_values,
                                          const char* what) {
  std::vector<std::string> out;
  if (list == nullptr) return out;
  for (const char* const* entry = list; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const std::size_t eq = text.find('=');
    if (with_values ? eq == std::string::npos || eq == 0 : text.empty() || eq != std::string::npos)
      return Error{std::string(what) + " entry '" + text + "' is not " +
                       (with_values ? "NAME=VALUE" : "a variable name"),
                   ErrorKind::invalid_input};
    out.push_back(text);
  }
  return out;
}

std::string env_name(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// The caller's environment with its per-call changes: names removed, then entries set. The
// policy's environment rules apply to the result afterwards (run.cpp, filter_environment), as
// to anything inherited, and they win: the policy (with the administrator's locks behind it)
// says what reaches the sandbox, and an argument of one call, which an agent may take from a
// model, can narrow that but never bring back a secret the policy takes away.
Result<std::vector<std::string>> call_environment(std::vector<std::string> environment,
                                                  const sbx_run_options& options) {
  Result<std::vector<std::string>> unset = env_list(options.env_unset, false, "env_unset");
  if (!unset.ok()) return unset.failure();
  Result<std::vector<std::string>> set = env_list(options.env_set, true, "env_set");
  if (!set.ok()) return set.failure();
  std::vector<std::string> dropped = *unset;
  for (const std::string& entry : *set) dropped.push_back(env_name(entry));
  std::erase_if(environment, [&](const std::string& entry) {
    return std::find(dropped.begin(), dropped.end(), env_name(entry)) != dropped.end();
  });
  environment.insert(environment.end(), set->begin(), set->end());
  return environment;
}

Result<StdioSpec> stdio_spec(const sbx_stdio& stdio, int which) {
  StdioSpec spec;
  switch (stdio.mode) {
    case SBX_STDIO_INHERIT:
      spec.mode = StdioSpec::Mode::kInherit;
      break;
    case SBX_STDIO_NULL:
      spec.mode = StdioSpec::Mode::kNull;
      break;
    case SBX_STDIO_FD:
      spec.mode = StdioSpec::Mode::kFd;
      spec.fd = stdio.fd;
      break;
    case SBX_STDIO_PIPE:
      spec.mode = StdioSpec::Mode::kPipe;
      break;
    case SBX_STDIO_CAPTURE:
      spec.mode = StdioSpec::Mode::kCapture;
      spec.max_bytes = stdio.max_bytes != 0 ? stdio.max_bytes : SBX_CAPTURE_DEFAULT_MAX_BYTES;
      break;
    case SBX_STDIO_DATA:
      if (stdio.data == nullptr && stdio.length != 0)
        return Error{"stdio[0].data is NULL but its length is not 0", ErrorKind::invalid_input};
      spec.mode = StdioSpec::Mode::kData;
      if (stdio.length != 0) spec.data.assign(static_cast<const char*>(stdio.data), stdio.length);
      break;
    default:
      return Error{"stdio[" + std::to_string(which) + "].mode " + std::to_string(stdio.mode) +
                       " is not a sbx_stdio_mode_t",
                   ErrorKind::invalid_input};
  }
  return spec;
}

// The options as this libsbx knows them: what the caller's struct_size covers, zero after it.
Result<sbx_run_options> run_options(const sbx_run_options* given) {
  if (given == nullptr)
    return Error{"options is NULL; pass a sbx_run_options", ErrorKind::invalid_input};
  if (given->struct_size < SBX_RUN_OPTIONS_MIN_SIZE)
    return Error{"options->struct_size is " + std::to_string(given->struct_size) +
                     "; set it to sizeof(sbx_run_options)",
                 ErrorKind::invalid_input};
  sbx_run_options options{};
  std::memcpy(&options, given, std::min(given->struct_size, sizeof options));
  return options;
}

// Everything sbx_run_start checks before the run: the request, its environment, its stdio and
// its control.
Status start_run(sbx_run& run, RunRequest& request, const sbx_run_options& options) {
  Result<std::vector<std::string>> environment = call_environment(request.environment, options);
  if (!environment.ok()) return environment.failure();
  request.environment = std::move(*environment);
  std::array<StdioSpec, 3> specs{};
  for (int which = 0; which < 3; ++which) {
    Result<StdioSpec> spec = stdio_spec(options.stdio[which], which);
    if (!spec.ok()) return spec.failure();
    specs[static_cast<std::size_t>(which)] = std::move(*spec);
  }
  specs[2].tail = (options.flags & SBX_EXEC_CAPTURE_STDERR) != 0;
  Result<std::unique_ptr<RunStdio>> stdio = RunStdio::open(std::move(specs));
  if (!stdio.ok()) return stdio.failure();
  run.stdio = std::move(*stdio);
  std::optional<std::chrono::milliseconds> timeout;
  if (options.timeout_ms != 0) {
    constexpr unsigned long long kMax = 1000ULL * 60 * 60 * 24 * 365;  // a year: no overflow
    timeout = std::chrono::milliseconds(std::min(options.timeout_ms, kMax));
  }
  Result<std::shared_ptr<RunControl>> control = RunControl::create(timeout);
  if (!control.ok()) return control.failure();
  run.control = std::move(*control);
  request.stdio = run.stdio;
  request.control = run.control;
  request.limit_signals = LimitedRun::Signals::kRunOnly;
  request.forward_signals = (options.flags & SBX_EXEC_FORWARD_SIGNALS) != 0;
  return {};
}

// The run's thread: the run, then its report. Every signal blocked: the embedding program's
// signals are for its own threads (and the spawners wait on signalfds).
void run_thread(sbx_run* run, const std::shared_ptr<RunRequest>& request) {
  const std::vector<std::string> command = request->command;
  try {
    HandleBackends backends(*run->manager);
    RunOutcome outcome = run_command(std::move(*request), backends);
    run->report = run_report(outcome, command);
  } catch (const std::exception& e) {
    run->report = Error{std::string("internal error in libsbx: ") + e.what() +
                        "; please report this as a bug"};
  } catch (...) {
    run->report =
        Error{"internal error in libsbx (unknown exception); please report this as a bug"};
  }
  if (run->stdio) run->stdio->finish();
  live_managers().leave(run->manager);
}

Result<std::unique_ptr<sbx_run>> run_start(sbx_manager* manager, const sbx_run_options* given) {
  Result<sbx_run_options> options = run_options(given);
  if (!options.ok()) return options.failure();
  if (manager == nullptr)
    return Error{"manager is NULL; create one with sbx_manager_new", ErrorKind::invalid_input};
  // Entered here and left by the run's thread: sbx_manager_free waits for the run.
  if (!live_managers().enter(manager)) return ManagerCall(manager).status().failure();
  auto run = std::make_unique<sbx_run>();
  run->manager = manager;
  Result<RunRequest> request =
      request_from(*manager, options->policy_json, options->cwd, options->argv, options->preference,
                   (options->flags & SBX_EXEC_ALLOW_UNSANDBOXED) != 0);
  Status started = request.ok() ? start_run(*run, *request, *options) : Status(request.failure());
  if (!started.ok()) {
    live_managers().leave(manager);
    return started.failure();
  }
  auto shared = std::make_shared<RunRequest>(std::move(*request));
#ifndef _WIN32
  // The thread inherits this mask: every signal blocked (run_thread).
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
#endif
  std::string failed;
  try {
    run->thread = std::thread(run_thread, run.get(), std::move(shared));
  } catch (const std::exception& e) {
    failed = e.what();
  }
#ifndef _WIN32
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
#endif
  if (!failed.empty()) {
    live_managers().leave(manager);
    return Error{"cannot start the run's thread: " + failed};
  }
  return run;
}

// Joins the run's thread once; the report stays for later calls.
const Result<std::string>& run_wait(sbx_run& run) {
  const std::lock_guard<std::mutex> lock(run.mutex);
  if (!run.joined) {
    if (run.thread.joinable()) run.thread.join();
    run.joined = true;
  }
  return run.report;
}

Result<std::string> transform_command(sbx_manager* manager, const char* policy_json,
                                      const char* cwd, const char* const* argv,
                                      const char* preference) {
  const ManagerCall call(manager);
  if (Status live = call.status(); !live.ok()) return live.failure();
  Result<RunRequest> request = request_from(*manager, policy_json, cwd, argv, preference, false);
  if (!request.ok()) return request.failure();
  const std::vector<std::string> command = request->command;
  // plan_command holds the handle's mutex while it plans (HandleBackends::planning_lock).
  HandleBackends backends(*manager);
  RunOutcome planned = plan_command(std::move(*request), backends);
  if (Status stopped = describe_stop(planned, command); !stopped.ok()) return stopped.failure();
  if (!planned.plan)  // no backend available
    return Error{planned.report.error, ErrorKind::unavailable};
  return plan_to_json(planned.report.final, *planned.plan, JsonStyle::kPretty);
}

Result<std::string> approve_json(const char* requested_json, const char* granted_json) {
  Result<Policy> requested = policy_from(requested_json);
  if (!requested.ok()) return requested.failure().prefixed("requested: ");
  Result<Policy> granted = policy_from(granted_json);
  if (!granted.ok()) return granted.failure().prefixed("granted: ");
  Result<Approval> approval = approve(*requested, *granted);
  if (!approval.ok()) return approval.failure();
  return approval_to_json(*approval);
}

Result<std::string> explain_json(sbx_manager* manager, const char* policy_json, const char* cwd,
                                 const char* preference) {
  const ManagerCall call(manager);
  if (Status live = call.status(); !live.ok()) return live.failure();
  Result<PreparedRequest> input = prepare_call(*manager, policy_json, cwd, preference, false);
  if (!input.ok()) return input.failure();
  const std::lock_guard<std::mutex> lock(manager->mutex);
  ExplainReport report = explain_run(input->policy, input->resolved, input->decided.sandbox.value,
                                     *manager->manager, process_environment(), {}, input->settings);
  explain_caches(report, std::move(input->caches));
  return explain_to_json(report, JsonStyle::kPretty);
}

// sbx_manager_context: the description for a run on this manager (its settings, its backends).
Result<std::string> manager_context(sbx_manager* manager, const char* policy_json, const char* cwd,
                                    const char* preference, int as_json) {
  const ManagerCall call(manager);
  if (Status live = call.status(); !live.ok()) return live.failure();
  Result<PreparedRequest> input = prepare_call(*manager, policy_json, cwd, preference, false);
  if (!input.ok()) return input.failure();
  const std::lock_guard<std::mutex> lock(manager->mutex);
  const SandboxContext context = context_for_run(*input, manager->manager.get());
  return as_json != 0 ? context_to_json(context, JsonStyle::kPretty) : context_to_text(context);
}

// A manager's `backends` and `plugin_dirs` arguments, named as such in a refusal by a lock.
Result<settings::BackendRequest> caller_backends(const char* backends,
                                                 const char* const* plugin_dirs) {
  settings::BackendRequest request;
  request.order = split_names(backends);
  request.order_from = "the manager's backends argument";
  request.plugin_dirs_from = "the manager's plugin_dirs";
  for (const char* const* dir = plugin_dirs; dir != nullptr && *dir != nullptr; ++dir) {
    // Absolute: the loader walks each directory from "/" (a relative one would depend on the
    // embedding process's cwd at this call).
    if ((*dir)[0] == '\0' || !std::filesystem::u8path(*dir).is_absolute())
      return Error{"plugin_dirs: '" + std::string(*dir) +
                       "' is not an absolute directory path; pass absolute paths",
                   ErrorKind::invalid_input};
    request.plugin_dirs.emplace_back(*dir);
  }
  return request;
}

// Loads the plugins of the install, then those of each chosen directory, through the trusted
// loader (install_loader_options: the same checks for every directory).
Result<std::unique_ptr<sbx_manager>> make_manager(const settings::BackendSelection& selection) {
  Result<InstallLayout> layout = install_layout();
  if (!layout.ok()) return layout.failure().prefixed("cannot locate the sbx installation: ");
  auto manager = std::make_unique<sbx_manager>();
  LoaderOptions loader = install_loader_options(*layout);
  for (const auto& dir : selection.plugin_dirs) loader.directories.push_back(dir.value);
  manager->registry = PluginRegistry::load(loader);
  manager->manager = std::make_unique<Manager>(manager->registry, selection.order.value);
  manager->backends = selection;
  // Warm: each backend is probed once per handle (sbx_manager_reprobe asks again).
  manager->manager->keep_probe_answers(true);
  return manager;
}

// A manager without settings: the caller's arguments as they are.
Result<std::unique_ptr<sbx_manager>> make_manager(const char* backends,
                                                  const char* const* plugin_dirs) {
  Result<settings::BackendRequest> request = caller_backends(backends, plugin_dirs);
  if (!request.ok()) return request.failure();
  settings::BackendSelection selection;
  selection.order = {request->order, settings::Scope::kCommandLine};
  for (const std::string& dir : request->plugin_dirs)
    selection.plugin_dirs.push_back({dir, settings::Scope::kCommandLine});
  return make_manager(selection);
}

// The caller's settings document, a scope above the project (like the command line).
Result<std::optional<settings::ScopeSettings>> caller_settings(const char* settings_json) {
  if (settings_json == nullptr) return std::optional<settings::ScopeSettings>{};
  Result<settings::ScopeSettings> parsed =
      settings::parse_settings(settings_json, settings::Scope::kCommandLine);
  if (!parsed.ok()) return parsed.failure().prefixed("invalid settings_json: ");
  return std::optional<settings::ScopeSettings>(std::move(*parsed));
}

Result<std::unique_ptr<sbx_manager>> manager_with_sources(const char* backends,
                                                          const char* const* plugin_dirs,
                                                          const settings::Sources& sources,
                                                          const char* settings_json) {
  Result<std::optional<settings::ScopeSettings>> caller = caller_settings(settings_json);
  if (!caller.ok()) return caller.failure();
  Result<settings::BackendRequest> request = caller_backends(backends, plugin_dirs);
  if (!request.ok()) return request.failure();
  Result<settings::Settings> loaded =
      settings::load_settings(sources, *caller ? &**caller : nullptr);
  if (!loaded.ok()) return loaded.failure().prefixed("cannot use the settings: ");
  // The settings' order and plugin directories, under the caller's, checked against the locks
  // once, here: a manager's backends are loaded when it is made.
  Result<settings::BackendSelection> selection = settings::decide_backends(*loaded, *request);
  if (!selection.ok()) return selection.failure();
  Result<std::unique_ptr<sbx_manager>> manager = make_manager(*selection);
  if (!manager.ok()) return manager;
  (*manager)->settings = std::move(*loaded);
  (*manager)->settings_cwd = policy::path::real_path(sources.cwd).value_or(sources.cwd);
  (*manager)->settings_logical_cwd = sources.logical_cwd;
  return manager;
}

Result<std::unique_ptr<sbx_manager>> make_manager_with_settings(const char* backends,
                                                                const char* const* plugin_dirs,
                                                                const char* cwd,
                                                                const char* settings_json) {
  Result<ResolveContext> context = context_for(cwd);
  if (!context.ok()) return context.failure();
  // The production places only: the managed file binds the embedding program as it binds `sbx`.
  // The project is searched from the real directory; the cwd as the caller named it is the
  // logical one (symlinks kept), which a trusted project holding it must hold too, as with
  // `sbx --cwd` (settings::Sources::logical_cwd). Without a cwd, PWD tells, when it names the
  // current directory (settings::current_sources).
  const std::string real = policy::path::real_path(context->cwd).value_or(context->cwd);
  settings::Sources sources = settings::current_sources(real, context->env);
  if (cwd != nullptr && kHostPathStyle == PathStyle::kPosix) {
    std::string logical = policy::path::lexically_normal(context->cwd);
    while (logical.size() > 1 && logical.back() == '/') logical.pop_back();
    sources.logical_cwd = std::move(logical);
  }
  return manager_with_sources(backends, plugin_dirs, sources, settings_json);
}

// sbx_manager_new_with_options: the members its struct_size covers (sbx_run_options' rule).
Result<std::unique_ptr<sbx_manager>> make_manager_with_options(const sbx_manager_options* options) {
  if (options == nullptr)
    return Error{"options is NULL; pass a sbx_manager_options", ErrorKind::invalid_input};
  if (options->struct_size < SBX_MANAGER_OPTIONS_MIN_SIZE)
    return Error{"options->struct_size is " + std::to_string(options->struct_size) +
                     "; set it to sizeof(sbx_manager_options)",
                 ErrorKind::invalid_input};
  if (options->use_settings != 0)
    return make_manager_with_settings(options->backends, options->plugin_dirs, options->cwd,
                                      options->settings_json);
  if (options->cwd != nullptr || options->settings_json != nullptr)
    return Error{
        "options->cwd and options->settings_json are read only with use_settings; set "
        "use_settings to 1, or leave them NULL",
        ErrorKind::invalid_input};
  return make_manager(options->backends, options->plugin_dirs);
}

}  // namespace

namespace capi {

sbx_manager* make_manager_with_sources(const char* backends, const settings::Sources& sources,
                                       const char* settings_json, std::string& error,
                                       const char* const* plugin_dirs) {
  Result<std::unique_ptr<sbx_manager>> manager =
      manager_with_sources(backends, plugin_dirs, sources, settings_json);
  if (!manager.ok()) {
    error = manager.error();
    return nullptr;
  }
  return live_managers().adopt(std::move(*manager));
}

}  // namespace capi
}  // namespace sbx

using sbx::Error;
using sbx::Result;

extern "C" {

const char* sbx_error_message(const sbx_error* error) {
  return error != nullptr ? error->message.c_str() : "";
}

sbx_error_kind_t sbx_error_kind(const sbx_error* error) {
  return error != nullptr ? static_cast<sbx_error_kind_t>(error->kind) : SBX_ERROR_HOST_FAILURE;
}

void sbx_error_free(sbx_error* error) { delete error; }

void sbx_string_free(char* text) { std::free(text); }

const char* sbx_version(void) { return sbx::sbx_version(); }

sbx_manager* sbx_manager_new(const char* backends, sbx_error** error) {
  try {
    Result<std::unique_ptr<sbx_manager>> manager = sbx::make_manager(backends, nullptr);
    if (!manager.ok()) {
      sbx::set_error(error, manager.failure());
      return nullptr;
    }
    return sbx::live_managers().adopt(std::move(*manager));
  } catch (const std::exception& e) {
    sbx::set_error(error, Error{std::string("internal error in libsbx: ") + e.what()});
  } catch (...) {
    sbx::set_error(error, Error{"internal error in libsbx (unknown exception)"});
  }
  return nullptr;
}

sbx_manager* sbx_manager_new_with_settings(const char* backends, const char* cwd,
                                           const char* settings_json, sbx_error** error) {
  try {
    Result<std::unique_ptr<sbx_manager>> manager =
        sbx::make_manager_with_settings(backends, nullptr, cwd, settings_json);
    if (!manager.ok()) {
      sbx::set_error(error, manager.failure());
      return nullptr;
    }
    return sbx::live_managers().adopt(std::move(*manager));
  } catch (const std::exception& e) {
    sbx::set_error(error, Error{std::string("internal error in libsbx: ") + e.what()});
  } catch (...) {
    sbx::set_error(error, Error{"internal error in libsbx (unknown exception)"});
  }
  return nullptr;
}

sbx_manager* sbx_manager_new_with_options(const sbx_manager_options* options, sbx_error** error) {
  try {
    Result<std::unique_ptr<sbx_manager>> manager = sbx::make_manager_with_options(options);
    if (!manager.ok()) {
      sbx::set_error(error, manager.failure());
      return nullptr;
    }
    return sbx::live_managers().adopt(std::move(*manager));
  } catch (const std::exception& e) {
    sbx::set_error(error, Error{std::string("internal error in libsbx: ") + e.what()});
  } catch (...) {
    sbx::set_error(error, Error{"internal error in libsbx (unknown exception)"});
  }
  return nullptr;
}

void sbx_manager_free(sbx_manager* manager) {
  if (manager == nullptr) return;
  try {
    // Deleted here, after the calls still inside it have returned (LiveManagers::release).
    sbx::live_managers().release(manager).reset();
  } catch (...) {  // std::system_error from the mutex: nothing may unwind into C; keep it
  }
}

int sbx_manager_reprobe(sbx_manager* manager, sbx_error** error) {
  char* done = sbx::guarded(error, [&]() -> Result<std::string> {
    const sbx::ManagerCall call(manager);
    if (sbx::Status live = call.status(); !live.ok()) return live.failure();
    const std::lock_guard<std::mutex> lock(manager->mutex);
    manager->manager->reprobe();
    return std::string();
  });
  if (done == nullptr) return -1;
  std::free(done);
  return 0;
}

char* sbx_backends_json(sbx_manager* manager, int probe, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    const sbx::ManagerCall call(manager);
    if (sbx::Status live = call.status(); !live.ok()) return live.failure();
    const std::lock_guard<std::mutex> lock(manager->mutex);
    std::vector<sbx::BackendListing> listings;
    for (const sbx::LoadedPlugin& plugin : manager->registry.plugins()) {
      sbx::BackendListing listing{plugin.name, plugin.version, plugin.description, plugin.path,
                                  std::nullopt};
      listing.abi = sbx::plugin_abi(plugin);
      if (probe != 0) listing.probe = sbx::guarded_probe(*plugin.backend);
      listings.push_back(std::move(listing));
    }
    return sbx::backends_to_json(listings, manager->registry.rejected(), sbx::JsonStyle::kPretty);
  });
}

char* sbx_should_sandbox(const char* policy_json, const char* preference, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    Result<sbx::Policy> policy = sbx::policy_from(policy_json);
    if (!policy.ok()) return policy.failure();
    Result<sbx::SandboxPreference> pref = sbx::preference_from(preference);
    if (!pref.ok()) return pref.failure();
    Result<sbx::SandboxDecision> decision = sbx::should_sandbox(*policy, *pref);
    if (!decision.ok()) return decision.failure();
    boost::json::object out;
    out["sandbox"] = decision->sandbox;
    out["reason"] = decision->reason;
    return sbx::report::render_json(std::move(out), sbx::JsonStyle::kCompact);
  });
}

char* sbx_explain(sbx_manager* manager, const char* policy_json, const char* cwd,
                  const char* preference, sbx_error** error) {
  return sbx::guarded(error,
                      [&] { return sbx::explain_json(manager, policy_json, cwd, preference); });
}

char* sbx_transform(sbx_manager* manager, const char* policy_json, const char* cwd,
                    const char* const* argv, const char* preference, sbx_error** error) {
  return sbx::guarded(
      error, [&] { return sbx::transform_command(manager, policy_json, cwd, argv, preference); });
}

char* sbx_exec(sbx_manager* manager, const char* policy_json, const char* cwd,
               const char* const* argv, const char* preference, unsigned flags, sbx_error** error) {
  return sbx::guarded(
      error, [&] { return sbx::exec_command(manager, policy_json, cwd, argv, preference, flags); });
}

sbx_run* sbx_run_start(sbx_manager* manager, const sbx_run_options* options, sbx_error** error) {
  try {
    Result<std::unique_ptr<sbx_run>> run = sbx::run_start(manager, options);
    if (!run.ok()) {
      sbx::set_error(error, run.failure());
      return nullptr;
    }
    return run->release();
  } catch (const std::exception& e) {
    sbx::set_error(error, Error{std::string("internal error in libsbx: ") + e.what()});
  } catch (...) {
    sbx::set_error(error, Error{"internal error in libsbx (unknown exception)"});
  }
  return nullptr;
}

int sbx_run_take_fd(sbx_run* run, int which) {
  if (run == nullptr || !run->stdio) return -1;
  return run->stdio->take_caller_fd(which);
}

int sbx_run_cancel(sbx_run* run) {
  if (run == nullptr) return -1;
  if (run->control) run->control->cancel();
  return 0;
}

char* sbx_run_wait(sbx_run* run, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    if (run == nullptr)
      return Error{"run is NULL; start one with sbx_run_start", sbx::ErrorKind::invalid_input};
    return sbx::run_wait(*run);
  });
}

const char* sbx_run_output(sbx_run* run, int which, size_t* length) {
  if (length != nullptr) *length = 0;
  if (run == nullptr || !run->stdio) return nullptr;
  {
    const std::lock_guard<std::mutex> lock(run->mutex);
    if (!run->joined) return nullptr;
  }
  const sbx::CapturedOutput* captured = run->stdio->captured(which);
  if (captured == nullptr) return nullptr;
  if (length != nullptr) *length = captured->bytes.size();
  return captured->bytes.data();
}

void sbx_run_free(sbx_run* run) {
  if (run == nullptr) return;
  try {
    if (run->control) run->control->cancel();  // nothing changes for a run that has ended
    (void)sbx::run_wait(*run);
    delete run;
  } catch (...) {  // std::system_error from the mutex or join: nothing may unwind into C
  }
}

char* sbx_policy_widen(const char* base_json, const char* extra_json, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    Result<sbx::Policy> base = sbx::policy_from(base_json);
    if (!base.ok()) return base.failure().prefixed("base: ");
    Result<sbx::Policy> extra = sbx::policy_from(extra_json);
    if (!extra.ok()) return extra.failure().prefixed("extra: ");
    Result<sbx::Policy> wide = sbx::widen(*base, *extra);
    if (!wide.ok()) return wide.failure();
    return sbx::policy_to_json(*wide);
  });
}

char* sbx_policy_approve(const char* requested_json, const char* granted_json, sbx_error** error) {
  return sbx::guarded(error, [&] { return sbx::approve_json(requested_json, granted_json); });
}

char* sbx_wrap(const char* policy_json, const char* cwd, const char* const* argv,
               sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
#ifdef _WIN32
    (void)policy_json, (void)cwd, (void)argv;
    return sbx::Error{"sbx_wrap: not on Windows yet (sbx exec has no --policy-fd there)",
                      sbx::ErrorKind::invalid_input};
#else
    Result<sbx::Policy> policy = sbx::policy_from(policy_json);
    if (!policy.ok()) return policy.failure();
    Result<std::vector<std::string>> command = sbx::argv_from(argv);
    if (!command.ok()) return command.failure();
    Result<sbx::InstallLayout> layout = sbx::install_layout();
    if (!layout.ok()) return layout.failure().prefixed("cannot locate this install's sbx: ");
    // The descriptors sbx exec reads the policy from and writes the report to: the first two
    // above stdio, what a spawning API hands out first (Node's stdio[3], [4]; pass_fds).
    boost::json::array wrapped{layout->bin_dir + "/sbx", "exec", "--policy-fd", "3",
                               "--report-fd", "4"};
    if (cwd != nullptr) {
      wrapped.emplace_back("--cwd");
      wrapped.emplace_back(cwd);
    }
    wrapped.emplace_back("--");
    for (const std::string& word : *command) wrapped.emplace_back(word);
    boost::json::object out;
    out["argv"] = std::move(wrapped);
    out["policy"] = sbx::policy_to_json(*policy);
    out["policy_fd"] = 3;
    out["report_fd"] = 4;
    return sbx::report::render_json(std::move(out), sbx::JsonStyle::kCompact);
#endif
  });
}

char* sbx_context(const char* policy_json, const char* cwd, int as_json, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    Result<sbx::PreparedRequest> input = sbx::prepare(policy_json, cwd);
    if (!input.ok()) return input.failure();
    const sbx::SandboxContext context = sbx::context_for_run(*input, nullptr);
    return as_json != 0 ? sbx::context_to_json(context, sbx::JsonStyle::kPretty)
                        : sbx::context_to_text(context);
  });
}

char* sbx_manager_context(sbx_manager* manager, const char* policy_json, const char* cwd,
                          const char* preference, int as_json, sbx_error** error) {
  return sbx::guarded(
      error, [&] { return sbx::manager_context(manager, policy_json, cwd, preference, as_json); });
}

char* sbx_classify_failure(int exit_code, int signal, const char* stderr_text, size_t stderr_len,
                           const char* backend, sbx_error** error) {
  return sbx::guarded(error, [&]() -> Result<std::string> {
    if (stderr_text == nullptr && stderr_len != 0)
      return Error{"stderr_text is NULL but stderr_len is not 0", sbx::ErrorKind::invalid_input};
    const std::string_view tail =
        stderr_text != nullptr ? std::string_view(stderr_text, stderr_len) : std::string_view();
    const sbx::FailedCommand failed{sbx::ExitStatus{exit_code, signal}, tail,
                                    backend != nullptr ? backend : ""};
    return sbx::denial_to_json(sbx::classify_failure(failed));
  });
}

}  // extern "C"
