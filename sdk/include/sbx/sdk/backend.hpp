// The C++ Backend interface a plugin implements, and HostServices and RunContext, the plugin's
// only ways back into the host. A Backend is created by the plugin's sbx_plugin_v2::create() and
// destroyed by its destroy(); the host never deletes it directly.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sbx/sdk/abi.h"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

// The ABI minor this plugin is built for (sdk/README.md, "Versions"): SBX_ABI_MINOR unless the
// build says otherwise. A plugin that must also load on an older sbx defines it lower (e.g.
// -DSBX_PLUGIN_ABI_MINOR_TARGET=1, or sbx_add_backend_plugin(... ABI_MINOR 1)) for every source
// that includes an SDK header. Its descriptor then says 2.<target> (SBX_DECLARE_BACKEND), a host
// of that minor or newer loads it and treats it as built for that minor, and what later minors
// added to RunContext is not declared (stdio_fd, stdio_fds and cancel_fd from 2.1,
// forward_signals from 2.2): using it fails to compile rather than meeting a host without it.
#ifndef SBX_PLUGIN_ABI_MINOR_TARGET
#define SBX_PLUGIN_ABI_MINOR_TARGET SBX_ABI_MINOR
#endif
#if SBX_PLUGIN_ABI_MINOR_TARGET < 0 || SBX_PLUGIN_ABI_MINOR_TARGET > SBX_ABI_MINOR
#error "SBX_PLUGIN_ABI_MINOR_TARGET must be a minor of this SDK's ABI major: 0 to SBX_ABI_MINOR"
#endif

namespace sbx {

// The services of one run (sbx_run_v2): what exec() is given beside the plan. Valid until
// exec() returns; a plugin keeps no copy beyond that. Every service checks the table's size
// before it uses a slot (abi.h, SBX_TABLE_HAS) and does nothing on a table without it.
class RunContext {
 public:
  explicit RunContext(const sbx_run_v2* run) : run_(run) {}

  // The run's prepare_child, for a plugin that starts processes itself: call it in the child
  // right before execve; a non-zero result is an errno and the child must not exec.
  // Async-signal-safe; calls nothing (returns 0) without the slot.
  struct ChildHook {
    int (*function)(void* ctx) = nullptr;
    void* ctx = nullptr;
    int operator()() const { return function != nullptr ? function(ctx) : 0; }
  };
  ChildHook child_hook() const {
    if (!SBX_TABLE_HAS(run_, sbx_run_v2, prepare_child)) return {};
    return {run_->prepare_child, run_->ctx};
  }

  // Names one connection the sandbox refused ("unix" with the path or "@name", "ip" with
  // "ADDRESS:PORT") for the run's report. Before exec() returns.
  void report_network_refusal(std::string_view kind, std::string_view address) const {
    if (!SBX_TABLE_HAS(run_, sbx_run_v2, report_network_refusal)) return;
    const std::string kind_text(kind);
    run_->report_network_refusal(run_->ctx, kind_text.c_str(), address.data(), address.size());
  }

  // The run's first process exists. Call it in the parent right after the spawn returned: the
  // host's work alongside the run then overlaps the sandbox's set-up.
  void run_started() const {
    if (SBX_TABLE_HAS(run_, sbx_run_v2, run_started)) run_->run_started(run_->ctx);
  }

#if SBX_PLUGIN_ABI_MINOR_TARGET >= 1
  // ABI 2.1: the descriptor the command gets as its standard descriptor `which` (0, 1, 2), or -1
  // for none (closed). Without the slot (a 2.0 host): `which` itself, the host's own.
  int stdio_fd(int which) const {
    if (!SBX_TABLE_HAS(run_, sbx_run_v2, stdio_fd)) return which;
    return run_->stdio_fd(run_->ctx, which);
  }
  // All three, in order (for the child: prepared before fork, read-only there).
  std::array<int, 3> stdio_fds() const { return {stdio_fd(0), stdio_fd(1), stdio_fd(2)}; }

  // ABI 2.1: readable once the run is to end (cancel, time-out), -1 when nothing ends it. Poll it
  // while waiting; never read or close it.
  int cancel_fd() const {
    if (!SBX_TABLE_HAS(run_, sbx_run_v2, cancel_fd)) return -1;
    return run_->cancel_fd(run_->ctx);
  }
#endif  // 2.1

#if SBX_PLUGIN_ABI_MINOR_TARGET >= 2
  // ABI 2.2: whether the signals sent to the host process are the command's (pass them on while
  // the run goes on: `sbx exec`) or the host's own (an embedding agent's: leave every handler,
  // mask and signalfd as it is, and end the run only through cancel_fd). Without the slot (a 2.1
  // host): forward, as every run did before.
  bool forward_signals() const {
    if (!SBX_TABLE_HAS(run_, sbx_run_v2, forward_signals)) return true;
    return run_->forward_signals(run_->ctx) != 0;
  }
#endif  // 2.2

  // The table itself, for HostServices::spawn.
  const sbx_run_v2* table() const { return run_; }

 private:
  const sbx_run_v2* run_;
};

// A thin, copyable view of the host's sbx_host_v2 table.
class HostServices {
 public:
  explicit HostServices(const sbx_host_v2* host) : host_(host) {}

  // The verified sbx-stage2 helper ("" where the host has none).
  std::string_view stage2_path() const {
    return host_ != nullptr && host_->stage2_path != nullptr ? host_->stage2_path : "";
  }
  std::string_view host_version() const {
    return host_ != nullptr && host_->host_version != nullptr ? host_->host_version : "";
  }
  void log(sbx_log_level level, std::string_view message) const {
    if (SBX_TABLE_HAS(host_, sbx_host_v2, log))
      host_->log(host_->ctx, level, message.data(), message.size());
  }
  // Runs the plan with the host's spawner (absolute execve, clean fds, signals forwarded when
  // `run` says so), under `run` (its limits, its run_started, its end).
  Result<ExitStatus> spawn(const ExecPlan& plan, const RunContext& run) const {
    if (!SBX_TABLE_HAS(host_, sbx_host_v2, spawn)) return Error{"host offers no spawn service"};
    ExitStatus status;
    char error[1024] = {0};
    if (host_->spawn(host_->ctx, run.table(), &plan, &status, error, sizeof error) != 0)
      return Error{error[0] != '\0' ? std::string(error) : std::string("spawn failed")};
    return status;
  }

 private:
  const sbx_host_v2* host_;
};

// The name of the check by which a probe says its answer may be kept between runs (probe()).
inline constexpr std::string_view kKeepableProbeCheck = "answer_keepable";
// The name of the check by which a keepable answer names what else it depends on: its
// `observed` lists absolute paths separated by ", " (a file's identity, or for a file under
// /proc/sys/ its content, joins the key; keepable_dependencies() builds the text).
inline constexpr std::string_view kKeepableDependsOnCheck = "answer_depends_on";

// ABI 2.3. The name of the check by which a probe says its backend mounts the toolchain caches
// it is given (TransformRequest::cache_overlays) copy-on-write, each at its own path: when the
// chosen backend's probe passes it, core hands it the caches that exist on the host and leaves
// the tools' variables at the host's directories; otherwise core passes none and points the
// tools at the project's cache through their variables (core/src/caches/README.md).
inline constexpr std::string_view kCacheOverlayCheck = "cache_overlay";

// The `observed` text of a kKeepableDependsOnCheck naming `paths`; "" when one of them cannot
// be named so (not absolute, or holding ", " or a line break): then the answer is not kept.
inline std::string keepable_dependencies(const std::vector<std::string>& paths) {
  std::string text;
  for (const std::string& path : paths) {
    if (path.empty() || path[0] != '/' || path.find(", ") != std::string::npos ||
        path.find('\n') != std::string::npos)
      return {};
    text += (text.empty() ? "" : ", ") + path;
  }
  return text;
}

// One sandboxing mechanism. probe() and transform() are called from one thread at a time; from
// ABI 2.1 exec() may run for several runs at once, on several threads, also while transform()
// runs (abi.h): what exec() uses of the object must be safe for that (the in-tree backends keep
// no per-run state in it). A plugin built for 2.0 gets one exec() at a time. Implementations must
// not let exceptions escape (the host still guards every call).
class Backend {
 public:
  explicit Backend(HostServices host) : host_(host) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // Checks, on this host and now, whether the backend can run, and what it can enforce.
  // May touch the OS (stat files, try a namespace); must not change anything lasting.
  // The host may run it in a separate process (sbx does, with a deadline): only the returned
  // report comes back, so transform() and exec() must not rely on state set here.
  //
  // A probe whose answer depends on nothing but the running kernel and boot, the process's
  // effective uid, user namespace and seccomp state, the plugin file itself and sbx-stage2 may
  // say so with a passing check named kKeepableProbeCheck: sbx's CLI then keeps the answer in a
  // private per-user store and reuses it for later runs of the same boot instead of probing
  // (core/src/plugins/README.md, "Kept probe answers"). An answer that also depends on other files
  // (a helper binary, a sysctl) names them in a passing kKeepableDependsOnCheck: their
  // identities (contents under /proc/sys/) join the key, so a change to any of them probes
  // afresh. Only a backend whose transform() and exec()
  // refuse, on their own, everything it cannot enforce may say so: a kept answer that is wrong
  // (a kernel feature gone, a store another process of this user rewrote) must make a run fail,
  // never run with less confinement.
  virtual ProbeReport probe(const ProbeContext& context) = 0;

  // Pure: turns a request into the process to start. Returns an Error naming the rule when the
  // policy asks for something this backend cannot enforce; never drops a rule silently. What
  // exec() needs beyond the displayable fields goes into plan.detail (types.hpp), never into
  // text that exec() parses back: the plan printed is the plan run.
  // sbx runs a third-party plugin's transform() in a child process of its own, with a deadline
  // (10 s), and calls it again with the same request in the process that runs exec(), to make
  // the plan's detail there: the second plan must equal the first, field for field, or nothing
  // runs (so no time stamps, process ids or random names in a plan).
  virtual Result<ExecPlan> transform(const TransformRequest& request) const = 0;

  // Runs a plan produced by this backend's transform() (core hands back the same ExecPlan,
  // detail included), under the run's context: the command gets run.stdio_fds() as its stdin,
  // stdout and stderr, and the run ends, whole, when run.cancel_fd() becomes readable. The
  // default asks the host to spawn it (which does both).
  // sbx runs a third-party plugin's exec() in a child process of its own, which is the
  // command's parent: start the command from the calling thread, through the run's child hook
  // (the command is killed if this process dies), and return within 3 s once cancel_fd() is
  // readable, or the process is killed. Signals reach it as they would reach sbx.
  virtual Result<ExitStatus> exec(const ExecPlan& plan, const RunContext& run) {
    return host_.spawn(plan, run);
  }

 protected:
  const HostServices& host() const { return host_; }

 private:
  HostServices host_;
};

}  // namespace sbx
