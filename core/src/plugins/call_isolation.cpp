// transform() and exec() of a backend, in process or isolated (call_isolation.hpp).
//
// Why a child: a third-party plugin's code runs on every `sbx exec` and in every agent that
// embeds libsbx. A crash there (a bad pointer, an abort, an exception that escapes a noexcept
// function) would end sbx or the agent with it (exit 139, no message), and a hang would hang it.
// In a child of its own, the same bug ends the run with exit 125 and a message naming the
// backend, the call and the signal. sbx's own backends (LoaderOptions::own_plugin_directory) are
// built and tested with sbx and keep the in-process path: no fork on their runs.
//
// transform: the child calls transform() and writes the result (the plan's every field; its
// detail as the report_json() text) to a pipe, like the guarded probe (isolated_child.hpp), with
// a deadline. The plugin's own PlanDetail object cannot cross a process boundary, so the plan
// sbx keeps carries core's IsolatedPlanDetail instead: it shows the plugin's text and keeps the
// request.
//
// exec: the child first makes the plan again with the same transform() (pure, backend.hpp) to
// get the plugin's own detail, and runs nothing unless that plan is the one sbx holds, field for
// field ("the plan printed is the plan run"). Then it calls exec() with a run table of its own,
// a real RunServices that relays to the run in sbx: run_started and each refusal travel back as
// frames on the pipe (one write each, atomic up to PIPE_BUF, so threads of the plugin may report
// at once); stdio, cancel descriptor, limits and signal choice are the run's, read from the
// child's copy of it. The child is the parent of the command; prepare_child also ties the
// command to it (PR_SET_PDEATHSIG), so a crash after the start takes the command along, and the
// run's cgroup, where it has one, ends what is left (LimitedRun::finish). sbx watches the pipe,
// the run's cancel descriptor and the child: a transform that does not return within the
// deadline, or an exec that has not returned `exec_end` after the run was to end (cancel,
// time-out), is killed. Signals sent to sbx are forwarded to the child when the run forwards
// them (signal_forwarding.hpp); in the child every handler inherited from sbx or the embedding
// program is reset to the default first (they act on the parent's state), the forwarding state is
// forgotten, and the signal mask is the caller's.
//
// Known limits (as for probes, probe_isolation.cpp): state the plugin sets in its backend object
// during transform() or exec() stays in the child; fork() in a process with other threads (an
// embedder's) gives a child with only this thread, so a plugin call that takes a lock another
// thread held at that moment waits until the deadline (transform) or the run's end (exec). The
// command dies with the child's thread that started it (prctl(2)): a plugin that starts the
// command from a thread that then ends loses it. Descriptors the child inherited from other
// threads of an embedder stay open in it until it ends. A plugin that starts the command
// without prepare_child leaves it untied; where the run has no cgroup, such a command outlives
// a crash of the child. On Windows both calls run in process, guarded against exceptions only.
#include "plugins/call_isolation.hpp"

#include <boost/json.hpp>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sbx/core/exit_codes.hpp"

#ifndef _WIN32
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>

#include "plugins/isolated_child.hpp"
#include "run/signal_forwarding.hpp"
#endif

namespace sbx::plugins {

namespace json = boost::json;

namespace {

std::string exception_text(const std::string& backend, std::string_view call) {
  try {
    throw;
  } catch (const std::exception& e) {
    return "backend '" + backend + "' failed in " + std::string(call) + ": " + e.what();
  } catch (...) {
    return "backend '" + backend + "' failed in " + std::string(call) +
           " with an unknown exception";
  }
}

json::array strings_to_json(const std::vector<std::string>& strings) {
  json::array out;
  out.reserve(strings.size());
  for (const std::string& s : strings) out.emplace_back(json::string(s));
  return out;
}

std::vector<std::string> strings_from_json(const json::value& value) {
  std::vector<std::string> out;
  for (const json::value& item : value.as_array()) out.emplace_back(item.as_string());
  return out;
}

json::value parse_exact(std::string_view text) {
  // Every byte as sent: text that is not valid UTF-8 is copied through (probe_isolation.cpp).
  json::parse_options options;
  options.allow_invalid_utf8 = true;
  return json::parse(text, {}, options);
}

}  // namespace

Result<ExecPlan> transform_in_process(const LoadedPlugin& plugin, const TransformRequest& request) {
  try {
    Result<ExecPlan> plan = plugin.backend->transform(request);
    // Whatever kind the plugin gave (an older plugin gives none), its failure is the backend's.
    if (!plan.ok())
      return Error{"backend '" + plugin.name + "' cannot run this: " + plan.error(),
                   ErrorKind::backend_failure};
    return plan;
  } catch (...) {
    return Error{exception_text(plugin.name, "transform"), ErrorKind::backend_failure};
  }
}

Result<ExitStatus> exec_in_process(const LoadedPlugin& plugin, const ExecPlan& plan,
                                   const sbx_run_v2* run) {
  try {
    Result<ExitStatus> status = plugin.backend->exec(plan, RunContext(run));
    if (!status.ok())
      return Error{"backend '" + plugin.name + "' could not run the plan: " + status.error(),
                   ErrorKind::backend_failure};
    return status;
  } catch (...) {
    return Error{exception_text(plugin.name, "exec"), ErrorKind::backend_failure};
  }
}

std::string plan_to_wire(const ExecPlan& plan) {
  json::object out;
  out["argv"] = strings_to_json(plan.argv);
  out["env"] = strings_to_json(plan.env);
  out["cwd"] = json::string(plan.cwd);
  out["notes"] = strings_to_json(plan.notes);
  out["created"] = strings_to_json(plan.host_paths.created);
  out["kept"] = strings_to_json(plan.host_paths.kept);
  out["state_dir"] = json::string(plan.host_paths.state_dir);
  if (plan.detail) {
    out["detail"] = json::string(plan.detail->report_json());
  } else {
    out["detail"] = nullptr;
  }
  return json::serialize(out);
}

Result<ExecPlan> plan_from_wire(std::string_view text, std::string* detail_report) {
  try {
    const json::value value = parse_exact(text);
    const json::object& in = value.as_object();
    ExecPlan plan;
    plan.argv = strings_from_json(in.at("argv"));
    plan.env = strings_from_json(in.at("env"));
    plan.cwd = std::string(in.at("cwd").as_string());
    plan.notes = strings_from_json(in.at("notes"));
    plan.host_paths.created = strings_from_json(in.at("created"));
    plan.host_paths.kept = strings_from_json(in.at("kept"));
    plan.host_paths.state_dir = std::string(in.at("state_dir").as_string());
    const json::value& detail = in.at("detail");
    if (!detail.is_null() && !detail.is_string()) return Error{"the plan's detail is malformed"};
    if (detail_report != nullptr)
      *detail_report = detail.is_string() ? std::string(detail.as_string()) : std::string();
    return plan;
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

#ifdef _WIN32

Result<ExecPlan> transform_isolated(const LoadedPlugin& plugin, const TransformRequest& request,
                                    const PluginCallLimits& /*limits*/) {
  return transform_in_process(plugin, request);
}

Result<ExitStatus> exec_isolated(const LoadedPlugin& plugin, const ExecPlan& plan,
                                 const RunServices& run, const PluginCallLimits& /*limits*/) {
  return exec_in_process(plugin, plan, run.table());
}

#else  // POSIX

namespace {

// A plan that large is not a plan (an environment is at most a few hundred kilobytes).
constexpr std::size_t kMaxAnswerBytes = 16u << 20;

// Core's detail of a plan made in a child: the plugin's report_json() text, and what exec's
// child needs to make the plugin's own plan again.
class IsolatedPlanDetail final : public PlanDetail {
 public:
  IsolatedPlanDetail(std::string backend, std::string report, bool plugin_detail,
                     TransformRequest request)
      : backend_(std::move(backend)),
        report_(std::move(report)),
        plugin_detail_(plugin_detail),
        request_(std::move(request)) {}
  std::string report_json() const override { return report_; }
  const std::string& backend() const { return backend_; }
  const TransformRequest& request() const { return request_; }
  // Whether the plugin's plan had a detail at all (the wire form says so).
  bool plugin_detail() const { return plugin_detail_; }

 private:
  std::string backend_;
  std::string report_;
  bool plugin_detail_;
  TransformRequest request_;
};

// The plugin named for a person: "backend 'NAME' (PATH)".
std::string named(const LoadedPlugin& plugin) {
  return "backend '" + plugin.name + "' (" + plugin.path + ")";
}

// How a child that did not answer ended, for `call` ("transform()", "exec()").
std::string death_text(const LoadedPlugin& plugin, std::string_view call,
                       const std::optional<int>& status) {
  const std::string who = named(plugin);
  if (status && WIFSIGNALED(*status)) {
    const int sig = WTERMSIG(*status);
    // The signals of a fault or an abort are the plugin's own crash; any other was sent (a
    // forwarded SIGTERM, the watchdog's SIGKILL, the terminal's SIGINT).
    const bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
                       sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS;
    return who + (fault ? " crashed in " : " was killed in ") + std::string(call) +
           (fault ? " with " : " by ") + isolated::signal_name(sig);
  }
  if (status && WIFEXITED(*status) && WEXITSTATUS(*status) != 0)
    return who + " exited with status " + std::to_string(WEXITSTATUS(*status)) + " in " +
           std::string(call) + " before it returned";
  return who + " ended " + std::string(call) + " without an answer";
}

// ---------------------------------------------------------------------------------------------
// transform

std::string transform_answer(const LoadedPlugin& plugin, const TransformRequest& request) {
  Result<ExecPlan> plan = transform_in_process(plugin, request);
  json::object out;
  if (plan.ok()) {
    out["plan"] = json::string(plan_to_wire(*plan));
  } else {
    out["error"] = json::string(plan.error());
  }
  return json::serialize(out);
}

Result<ExecPlan> read_transform_answer(const LoadedPlugin& plugin, const TransformRequest& request,
                                       std::string_view text) {
  try {
    const json::value value = parse_exact(text);
    const json::object& in = value.as_object();
    if (const json::value* error = in.if_contains("error"))
      return Error{std::string(error->as_string()), ErrorKind::backend_failure};
    std::string report;
    Result<ExecPlan> plan = plan_from_wire(in.at("plan").as_string(), &report);
    if (!plan.ok()) return plan.failure();
    const json::value wire = parse_exact(in.at("plan").as_string());
    const bool plugin_detail = !wire.as_object().at("detail").is_null();
    plan->detail = std::make_shared<IsolatedPlanDetail>(plugin.name, std::move(report),
                                                        plugin_detail, request);
    return plan;
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

// ---------------------------------------------------------------------------------------------
// exec: frames on the pipe, child to sbx. One byte of type, the payload's length (4 bytes, this
// host's order: both ends are the same program), the payload.

constexpr char kFramePlanned = 'P';  // the plan is made again and equal: exec() is called now
constexpr char kFrameStarted = 'S';  // run_started
constexpr char kFrameRefusal = 'N';  // a refusal: kind, NUL, address
constexpr char kFrameResult = 'R';   // what exec() returned (JSON), last
constexpr std::size_t kFrameHeader = 5;

std::string frame(char type, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeader + payload.size());
  out.push_back(type);
  const auto length = static_cast<std::uint32_t>(payload.size());
  out.append(reinterpret_cast<const char*>(&length), sizeof length);
  out.append(payload);
  return out;
}

// In the child only (never locked in sbx, so its copy in a fresh child is unlocked): one frame
// at a time from the plugin's threads.
std::mutex& frame_mutex() {
  static std::mutex mutex;
  return mutex;
}

void send_frame(int fd, char type, std::string_view payload) {
  const std::string bytes = frame(type, payload);
  const std::lock_guard<std::mutex> lock(frame_mutex());
  (void)isolated::write_all(fd, bytes);
}

std::string status_answer(const Result<ExitStatus>& status) {
  json::object out;
  if (status.ok()) {
    out["exit_code"] = status->exit_code;
    out["signal"] = status->signal;
  } else {
    out["error"] = json::string(status.error());
  }
  return json::serialize(out);
}

// Every handler to its default: a handler in the child would act on sbx's or the embedding
// program's state (their copies here: a forwarding list, a wake-up descriptor shared with the
// parent). What was ignored stays ignored, as for any child.
void reset_signal_handlers() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0) continue;
    const bool handler = (current.sa_flags & SA_SIGINFO) != 0
                             ? current.sa_sigaction != nullptr
                             : (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    if (!handler) continue;
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    ::sigaction(sig, &fallback, nullptr);
  }
}

// The first field in which `again` (the plugin's plan, made again) differs from `plan` (the one
// sbx holds, with core's detail: `plan_had_detail` says whether the plugin's had one), as "env
// differs"; "" when none does.
std::string first_difference(const ExecPlan& again, const ExecPlan& plan, bool plan_had_detail) {
  if ((again.detail != nullptr) != plan_had_detail) return "detail differs";
  const json::value a = parse_exact(plan_to_wire(again));
  json::value b = parse_exact(plan_to_wire(plan));
  // `plan` carries core's detail whatever the plugin's plan had: none is null on the wire.
  if (!plan_had_detail) b.as_object()["detail"] = nullptr;
  for (const auto& field : a.as_object()) {
    const json::value* other = b.as_object().if_contains(field.key());
    if (other == nullptr || *other != field.value()) return std::string(field.key()) + " differs";
  }
  return {};
}

// The plan exec() is given in the child: the plugin's own, made again, when sbx's plan came
// from transform_isolated; Error (nothing runs) when it is not the same plan.
Result<ExecPlan> plan_for_exec(const LoadedPlugin& plugin, const ExecPlan& plan) {
  const auto* kept = dynamic_cast<const IsolatedPlanDetail*>(plan.detail.get());
  if (kept == nullptr) return plan;  // a plan made in process: run as it is
  if (kept->backend() != plugin.name)
    return Error{"the plan was made by backend '" + kept->backend() + "', not by '" + plugin.name +
                     "'; nothing was run",
                 ErrorKind::backend_failure};
  Result<ExecPlan> again = transform_in_process(plugin, kept->request());
  if (!again.ok())
    return Error{again.error() + " (when its transform() was called again to run the plan)",
                 ErrorKind::backend_failure};
  const std::string differs = first_difference(*again, plan, kept->plugin_detail());
  if (!differs.empty())
    return Error{named(plugin) +
                     ": its transform() returned another plan when called again with the same "
                     "request to run it (" +
                     differs +
                     "; a transform must be pure: the plan shown is the plan run); nothing was "
                     "run",
                 ErrorKind::backend_failure};
  return again;
}

struct ChildSetup {
  const LoadedPlugin* plugin;
  const ExecPlan* plan;
  const RunServices* run;
  int wire;
  pid_t parent;
  sigset_t mask;  // the caller's, restored in the child
};

[[noreturn]] void exec_child(const ChildSetup& setup) {
  if (!isolated::die_with_parent(setup.parent)) ::_exit(kExitSbxFailure);
  signal_forwarding::reset_in_child();
  reset_signal_handlers();
  ::pthread_sigmask(SIG_SETMASK, &setup.mask, nullptr);
  const int wire = setup.wire;
  try {
    Result<ExecPlan> plan = plan_for_exec(*setup.plugin, *setup.plan);
    if (!plan.ok()) {
      send_frame(wire, kFrameResult, status_answer(plan.failure()));
      ::_exit(0);
    }
    send_frame(wire, kFramePlanned, {});
    const RunServices& parent_run = *setup.run;
    RunServices run(
        nullptr, [wire] { send_frame(wire, kFrameStarted, {}); }, parent_run.limits());
    run.set_stdio({parent_run.stdio_fd(0), parent_run.stdio_fd(1), parent_run.stdio_fd(2)},
                  parent_run.own_stdio());
    run.set_cancel_fd(parent_run.cancel_fd());
    run.set_forward_signals(parent_run.forward_signals());
    run.set_refusal_sink([wire](std::string_view kind, std::string_view address) {
      std::string payload(kind);
      payload.push_back('\0');
      payload.append(address);
      send_frame(wire, kFrameRefusal, payload);
    });
    run.tie_children_to(::getpid());
    const Result<ExitStatus> status = exec_in_process(*setup.plugin, *plan, run.table());
    send_frame(wire, kFrameResult, status_answer(status));
    ::close(wire);
    ::_exit(0);
  } catch (...) {
    ::_exit(123);
  }
}

// What sbx saw of the child.
struct ExecWatch {
  bool planned = false;
  bool started = false;
  std::optional<std::string> result;
  enum class Killed { kNo, kTransformDeadline, kEndDeadline, kUnreadable } killed = Killed::kNo;
  std::optional<int> status;
};

// Takes the complete frames off the front of `buffer`; false for one that is not a frame.
bool take_frames(std::string& buffer, const RunServices& run, ExecWatch& watch) {
  std::size_t at = 0;
  while (buffer.size() - at >= kFrameHeader) {
    const char type = buffer[at];
    std::uint32_t length = 0;
    std::memcpy(&length, buffer.data() + at + 1, sizeof length);
    if (length > kMaxAnswerBytes) return false;
    if (buffer.size() - at - kFrameHeader < length) break;
    const std::string_view payload(buffer.data() + at + kFrameHeader, length);
    const sbx_run_v2* table = run.table();
    switch (type) {
      case kFramePlanned:
        watch.planned = true;
        break;
      case kFrameStarted:
        // As the plugin would have called it in process: the run's own slot.
        if (!watch.started) table->run_started(table->ctx);
        watch.started = true;
        break;
      case kFrameRefusal: {
        const std::size_t nul = payload.find('\0');
        if (nul == std::string_view::npos) return false;
        const std::string kind(payload.substr(0, nul));
        const std::string_view address = payload.substr(nul + 1);
        table->report_network_refusal(table->ctx, kind.c_str(), address.data(), address.size());
        break;
      }
      case kFrameResult:
        watch.result = std::string(payload);
        break;
      default:
        return false;
    }
    at += kFrameHeader + length;
  }
  buffer.erase(0, at);
  return true;
}

// True once `pid` has exited (left unreaped), or when it cannot be waited for at all (an
// embedder's SIGCHLD handler reaped it: ECHILD).
bool has_exited(pid_t pid) {
  for (;;) {
    siginfo_t ended{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT) == 0)
      return ended.si_pid == pid;
    if (errno != EINTR) return true;
  }
}

// Reads what is in the pipe now, without waiting; false at end of file.
bool read_available(int fd, std::string& buffer) {
  char chunk[8192];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buffer.append(chunk, static_cast<std::size_t>(n));
      if (buffer.size() > kMaxAnswerBytes + kFrameHeader) return true;  // take_frames refuses
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0;  // EAGAIN: open, nothing more now; 0: end of file
  }
}

// Until the child has exited (left unreaped): its frames replayed on `run`, the run's cancel
// watched, the deadlines kept. The pipe is non-blocking: a process the plugin started may hold
// its write end after the child is gone, so the child's exit, not end of file, ends the watch.
void watch_child(pid_t pid, int wire, const RunServices& run, const PluginCallLimits& limits,
                 ExecWatch& watch) {
  using Clock = isolated::Clock;
  const Clock::time_point transform_deadline = Clock::now() + limits.transform;
  std::optional<Clock::time_point> end_deadline;
  const int cancel_fd = run.cancel_fd();
  const int pidfd = isolated::open_pidfd(pid);
  std::string buffer;
  bool open = true;
  const auto kill_for = [&](ExecWatch::Killed why) {
    if (watch.killed == ExecWatch::Killed::kNo) watch.killed = why;
    ::kill(pid, SIGKILL);  // not reaped yet: the pid is still the child's
  };
  for (;;) {
    if (has_exited(pid)) {
      if (open) read_available(wire, buffer);
      if (!take_frames(buffer, run, watch)) watch.killed = ExecWatch::Killed::kUnreadable;
      break;
    }
    const bool killed = watch.killed != ExecWatch::Killed::kNo;
    std::optional<Clock::time_point> next;
    if (!killed && !watch.planned) next = transform_deadline;
    if (!killed && end_deadline && (!next || *end_deadline < *next)) next = end_deadline;
    if (next && Clock::now() >= *next) {
      kill_for(watch.planned ? ExecWatch::Killed::kEndDeadline
                             : ExecWatch::Killed::kTransformDeadline);
      continue;
    }
    int wait = next ? isolated::remaining_ms(*next) : -1;
    if (pidfd < 0 && (wait < 0 || wait > 50)) wait = 50;  // no pidfd: look at the child again
    std::array<pollfd, 3> fds{{{open ? wire : -1, POLLIN, 0},
                               {!end_deadline ? cancel_fd : -1, POLLIN, 0},
                               {pidfd, POLLIN, 0}}};
    if (::poll(fds.data(), fds.size(), wait) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) end_deadline = Clock::now() + limits.exec_end;
    if (fds[0].revents != 0) {
      open = read_available(wire, buffer);
      if (!take_frames(buffer, run, watch)) kill_for(ExecWatch::Killed::kUnreadable);
    }
  }
  if (pidfd >= 0) ::close(pidfd);
}

std::string command_state(const ExecWatch& watch) {
  return watch.started ? "; the command had started and its processes tied to the plugin's were "
                         "killed with it"
                       : "; nothing was run";
}

Result<ExitStatus> exec_outcome(const LoadedPlugin& plugin, const PluginCallLimits& limits,
                                const ExecWatch& watch) {
  const auto failed = [](std::string text) {
    return Error{std::move(text), ErrorKind::backend_failure};
  };
  switch (watch.killed) {
    case ExecWatch::Killed::kTransformDeadline:
      return failed(named(plugin) + " did not return from transform() within " +
                    isolated::duration_text(limits.transform) +
                    " when it was called again to run the plan; it was killed, nothing was run");
    case ExecWatch::Killed::kEndDeadline:
      return failed(named(plugin) + " did not return from exec() within " +
                    isolated::duration_text(limits.exec_end) +
                    " after the run was to end (cancel or time-out); it was killed with SIGKILL" +
                    command_state(watch));
    case ExecWatch::Killed::kUnreadable:
      return failed(named(plugin) + " sent an unreadable answer from exec(); it was killed" +
                    command_state(watch));
    case ExecWatch::Killed::kNo:
      break;
  }
  const bool clean = watch.status && WIFEXITED(*watch.status) && WEXITSTATUS(*watch.status) == 0;
  if (!watch.result || !(clean || !watch.status))
    return failed(death_text(plugin, "exec()", watch.status) + command_state(watch));
  try {
    const json::value value = parse_exact(*watch.result);
    const json::object& in = value.as_object();
    if (const json::value* error = in.if_contains("error"))
      return failed(std::string(error->as_string()));
    ExitStatus status;
    status.exit_code = static_cast<int>(in.at("exit_code").as_int64());
    status.signal = static_cast<int>(in.at("signal").as_int64());
    return status;
  } catch (const std::exception& e) {
    return failed(named(plugin) + " sent an unreadable answer from exec(): " + e.what());
  }
}

}  // namespace

Result<ExecPlan> transform_isolated(const LoadedPlugin& plugin, const TransformRequest& request,
                                    const PluginCallLimits& limits) {
  const isolated::Answer answer =
      isolated::answer_from_child([&plugin, &request] { return transform_answer(plugin, request); },
                                  limits.transform, kMaxAnswerBytes);
  const auto failed = [](std::string text) {
    return Error{std::move(text), ErrorKind::backend_failure};
  };
  if (!answer.setup_error.empty())
    return failed(named(plugin) + ": transform() could not be isolated: " + answer.setup_error);
  if (answer.too_large)
    return failed(named(plugin) + " answered transform() with more than " +
                  std::to_string(kMaxAnswerBytes >> 20) + " MiB; it was killed");
  if (answer.timed_out)
    return failed(named(plugin) + " did not return from transform() within " +
                  isolated::duration_text(limits.transform) + "; it was killed");
  const bool clean =
      !answer.status || (WIFEXITED(*answer.status) && WEXITSTATUS(*answer.status) == 0);
  if (!clean || answer.data.empty())
    return failed(death_text(plugin, "transform()", answer.status));
  Result<ExecPlan> plan = read_transform_answer(plugin, request, answer.data);
  if (!plan.ok() && plan.kind() != ErrorKind::backend_failure)
    return failed(named(plugin) + " sent an unreadable answer from transform(): " + plan.error());
  return plan;
}

Result<ExitStatus> exec_isolated(const LoadedPlugin& plugin, const ExecPlan& plan,
                                 const RunServices& run, const PluginCallLimits& limits) {
  int fds[2];
  if (!isolated::open_cloexec_pipe(fds))
    return Error{named(plugin) + ": exec() could not be isolated: pipe: " + std::strerror(errno),
                 ErrorKind::host_failure};
  const bool forward = run.forward_signals();
  ChildSetup setup{&plugin, &plan, &run, fds[1], ::getpid(), {}};
  // Every signal blocked across the fork (as in spawn.cpp): the child restores the caller's
  // mask after it has reset the handlers, and here a signal that comes before the child is
  // registered for forwarding stays pending instead of finding no one to forward to.
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &setup.mask);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    exec_child(setup);
  }
  const int fork_errno = errno;
  ::close(fds[1]);
  if (pid < 0) {
    ::pthread_sigmask(SIG_SETMASK, &setup.mask, nullptr);
    ::close(fds[0]);
    return Error{
        named(plugin) + ": exec() could not be isolated: fork: " + std::strerror(fork_errno),
        ErrorKind::host_failure};
  }
  std::atomic<pid_t>* slot = nullptr;
  if (forward) {
    signal_forwarding::install();
    slot = signal_forwarding::add(pid);
  }
  // While it waits this thread takes the forwarded signals, whatever its mask (spawn.cpp).
  sigset_t waiting = setup.mask;
  if (forward) {
    for (int sig : signal_forwarding::kSignals) sigdelset(&waiting, sig);
  }
  ::pthread_sigmask(SIG_SETMASK, &waiting, nullptr);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  ExecWatch watch;
  watch_child(pid, fds[0], run, limits, watch);
  ::close(fds[0]);
  // Forwarding stops before the reap: once reaped, the pid may be another process's.
  if (slot != nullptr) slot->store(0);
  int status = 0;
  pid_t reaped = -1;
  do {
    reaped = ::waitpid(pid, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  if (reaped == pid) watch.status = status;
  if (forward) {
    ::pthread_sigmask(SIG_SETMASK, &setup.mask, nullptr);
    signal_forwarding::remove();
  } else {
    ::pthread_sigmask(SIG_SETMASK, &setup.mask, nullptr);
  }
  return exec_outcome(plugin, limits, watch);
}

#endif  // POSIX

}  // namespace sbx::plugins
