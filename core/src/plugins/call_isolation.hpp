// The calls of a backend's transform() and exec(): in process for sbx's own plugins, in a child
// process of their own for third-party plugins (LoadedPlugin::isolated), so that a crash, an
// abort, an escaping exception or a hang there ends as an error naming the backend, the call and
// the signal, never as the death of sbx or of a program embedding libsbx. How and why:
// call_isolation.cpp and core/src/plugins/README.md, "Third-party plugins run isolated".
#pragma once

#include <string>
#include <string_view>

#include "sbx/core/manager.hpp"
#include "sbx/core/plugin_loader.hpp"
#include "sbx/core/runtime.hpp"
#include "sbx/sdk/result.hpp"
#include "sbx/sdk/types.hpp"

namespace sbx::plugins {

// transform() in this process. The plugin's own refusal reads "backend 'NAME' cannot run this:
// ...", an exception "backend 'NAME' failed in transform: ..." (ErrorKind::backend_failure).
Result<ExecPlan> transform_in_process(const LoadedPlugin& plugin, const TransformRequest& request);
// exec() in this process under the run table `run`: "backend 'NAME' could not run the plan:
// ...", "backend 'NAME' failed in exec: ...".
Result<ExitStatus> exec_in_process(const LoadedPlugin& plugin, const ExecPlan& plan,
                                   const sbx_run_v2* run);

// transform() in a child of its own (POSIX; in process on Windows). The plan that comes back
// is the plugin's field for field; its detail is core's own, which shows the plugin's
// report_json() and keeps the request, so that exec_isolated can make the plugin's detail
// again. Errors as transform_in_process, and for the child's end: "backend 'NAME' (PATH)
// crashed in transform() with SIGSEGV", "... did not return from transform() within 10 s".
Result<ExecPlan> transform_isolated(const LoadedPlugin& plugin, const TransformRequest& request,
                                    const PluginCallLimits& limits = {});

// exec() in a child of its own that is the parent of the command (POSIX; in process on
// Windows). A plan made by transform_isolated is made again there by the same transform()
// (which is pure, backend.hpp) and must be the same plan, field for field, or nothing runs. The
// child's run table relays to `run`: its start and refusals come back here, the command gets
// its stdio, cancel descriptor, limits and signal choice, and is killed with the child. With
// `run.forward_signals()` the signals sent to this process go to the child, which passes them
// on as exec() does. Once `run.cancel_fd()` is readable the child has `limits.exec_end` to
// return before it is killed.
Result<ExitStatus> exec_isolated(const LoadedPlugin& plugin, const ExecPlan& plan,
                                 const RunServices& run, const PluginCallLimits& limits = {});

// The wire form of a plan between the child and sbx: every field, every byte of every string
// (text that is not valid UTF-8 included), the detail as its report_json() text. Exposed for
// tests.
std::string plan_to_wire(const ExecPlan& plan);
// The plan (its detail: null; the report text in `detail_report`) or why `text` is none.
Result<ExecPlan> plan_from_wire(std::string_view text, std::string* detail_report = nullptr);

}  // namespace sbx::plugins
