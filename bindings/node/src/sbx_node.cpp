// The Node-API addon under the `sbx` npm package (bindings/node): one native function per C API
// call of libsbx (sbx/sbx.h). Values cross as JSON text; index.js parses them and turns errors
// whose code is "SBX_ERROR" into SbxError with the error's kind (sbx_error_kind). exec runs on
// libuv's thread pool (napi async work) and settles a Promise, so the event loop keeps running
// while the command does; runStart (sbx_run_start) is waited for on a thread of its own.
#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <sbx/sbx.h>
#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

// sbx_error_kind's name, as index.js and every other boundary spell it.
const char* kind_name(sbx_error_kind_t kind) {
  switch (kind) {
    case SBX_ERROR_INVALID_INPUT:
      return "invalid_input";
    case SBX_ERROR_REFUSED:
      return "refused";
    case SBX_ERROR_UNAVAILABLE:
      return "unavailable";
    case SBX_ERROR_BACKEND_FAILURE:
      return "backend_failure";
    case SBX_ERROR_HOST_FAILURE:
      return "host_failure";
    case SBX_ERROR_TIMED_OUT:
      return "timed_out";
    case SBX_ERROR_CANCELLED:
      return "cancelled";
  }
  return "host_failure";  // a kind newer than this addon
}

napi_value js_string(napi_env env, const std::string& text);

// An Error with code "SBX_ERROR" and `kind`, for index.js to make an SbxError of.
napi_value sbx_error_value(napi_env env, const std::string& message, const char* kind) {
  napi_value code = js_string(env, "SBX_ERROR");
  napi_value error = nullptr;
  napi_create_error(env, code, js_string(env, message), &error);
  napi_set_named_property(env, error, "code", code);
  napi_set_named_property(env, error, "kind", js_string(env, kind));
  return error;
}

// Throws a JavaScript exception and returns nullptr (the caller returns it to Node). A bad
// argument is the caller's input: an SbxError of kind invalid_input, as in the Python binding.
napi_value throw_type(napi_env env, const std::string& message) {
  napi_throw(env, sbx_error_value(env, message, "invalid_input"));
  return nullptr;
}

napi_value throw_sbx(napi_env env, sbx_error* error) {
  const std::string message = error != nullptr ? sbx_error_message(error) : "libsbx failed";
  const char* kind = kind_name(error != nullptr ? sbx_error_kind(error) : SBX_ERROR_HOST_FAILURE);
  if (error != nullptr) sbx_error_free(error);
  napi_throw(env, sbx_error_value(env, message, kind));
  return nullptr;
}

// A JS string may hold U+0000, which napi copies into the UTF-8 bytes; libsbx reads
// NUL-terminated strings and would use only what comes before it (an argv element "echo x\0;
// rm ..." checked by the caller would run "echo x"). Such a string is refused, never cut: an
// SbxError (invalid_input) naming the argument and the position. True when `text` holds no NUL.
bool no_nul(napi_env env, const std::string& text, const std::string& name) {
  const std::size_t nul = text.find('\0');
  if (nul == std::string::npos) return true;
  throw_type(env, name + " contains a NUL character at byte " + std::to_string(nul) +
                      "; libsbx would cut it there, so it is refused: remove the NUL");
  return false;
}

// Arguments of one call, read with checks (a wrong type is a TypeError naming the argument).
class Args {
 public:
  Args(napi_env env, napi_callback_info info, size_t expected) : env_(env), values_(expected) {
    size_t count = expected;
    napi_get_cb_info(env, info, &count, values_.data(), nullptr, nullptr);
    for (size_t i = count; i < expected; ++i) napi_get_undefined(env, &values_[i]);
  }
  napi_value at(size_t i) const { return values_[i]; }
  bool absent(size_t i) const {
    napi_valuetype type = napi_undefined;
    napi_typeof(env_, values_[i], &type);
    return type == napi_undefined || type == napi_null;
  }
  // A string, or nullopt for undefined/null; `ok` false (TypeError thrown) for anything else.
  // `nul_allowed`: only for a value libsbx takes with its length (classify's stderr).
  std::optional<std::string> text(size_t i, const char* name, bool& ok,
                                  bool nul_allowed = false) const {
    if (absent(i)) return std::nullopt;
    size_t length = 0;
    if (napi_get_value_string_utf8(env_, values_[i], nullptr, 0, &length) != napi_ok) {
      throw_type(env_, std::string(name) + " must be a string");
      ok = false;
      return std::nullopt;
    }
    std::string out(length, '\0');
    napi_get_value_string_utf8(env_, values_[i], out.data(), length + 1, &length);
    if (!nul_allowed && !no_nul(env_, out, name)) {
      ok = false;
      return std::nullopt;
    }
    return out;
  }
  std::optional<int64_t> integer(size_t i, const char* name, bool& ok) const {
    int64_t value = 0;
    if (napi_get_value_int64(env_, values_[i], &value) != napi_ok) {
      throw_type(env_, std::string(name) + " must be a number");
      ok = false;
      return std::nullopt;
    }
    return value;
  }
  // An array of strings (argv: not empty); `ok` false with a TypeError otherwise.
  std::vector<std::string> strings(size_t i, const char* name, bool& ok,
                                   bool may_be_empty = false) const {
    std::vector<std::string> out;
    bool is_array = false;
    napi_is_array(env_, values_[i], &is_array);
    uint32_t length = 0;
    if (is_array) napi_get_array_length(env_, values_[i], &length);
    if (!is_array || (length == 0 && !may_be_empty)) {
      throw_type(env_, std::string(name) + " must be a" + (may_be_empty ? "n" : " non-empty") +
                           " array of strings");
      ok = false;
      return out;
    }
    for (uint32_t k = 0; k < length && ok; ++k) {
      napi_value element = nullptr;
      napi_get_element(env_, values_[i], k, &element);
      size_t len = 0;
      if (napi_get_value_string_utf8(env_, element, nullptr, 0, &len) != napi_ok) {
        throw_type(env_, std::string(name) + "[" + std::to_string(k) + "] must be a string");
        ok = false;
        break;
      }
      std::string s(len, '\0');
      napi_get_value_string_utf8(env_, element, s.data(), len + 1, &len);
      if (!no_nul(env_, s, std::string(name) + "[" + std::to_string(k) + "]")) {
        ok = false;
        break;
      }
      out.push_back(std::move(s));
    }
    return out;
  }
  // The sbx_manager of a handle made by managerNew (TypeError otherwise or once closed).
  sbx_manager* manager(size_t i, bool& ok) const;

 private:
  napi_env env_;
  std::vector<napi_value> values_;
};

const char* c_str(const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; }

napi_value js_string(napi_env env, const std::string& text) {
  napi_value out = nullptr;
  napi_create_string_utf8(env, text.data(), text.size(), &out);
  return out;
}

// A returned char* becomes a JS string (and is freed), NULL a thrown SBX_ERROR. `error` is
// read here, after the call that filled it (an argument's evaluation order is unspecified).
napi_value take(napi_env env, char* text, sbx_error** error) {
  if (text == nullptr) return throw_sbx(env, *error);
  napi_value out = js_string(env, text);
  sbx_string_free(text);
  return out;
}

// A manager handle: a JS object wrapping this box; closing frees the manager early, the
// finalizer frees it otherwise. `busy` counts running async execs, which hold a reference.
struct ManagerBox {
  sbx_manager* manager = nullptr;
  int busy = 0;
  bool close_requested = false;
};

void finalize_box(napi_env, void* data, void*) {
  auto* box = static_cast<ManagerBox*>(data);
  if (box->manager != nullptr) sbx_manager_free(box->manager);
  delete box;
}

ManagerBox* unwrap_box(napi_env env, napi_value value) {
  void* data = nullptr;
  if (napi_unwrap(env, value, &data) != napi_ok) return nullptr;
  return static_cast<ManagerBox*>(data);
}

sbx_manager* Args::manager(size_t i, bool& ok) const {
  ManagerBox* box = unwrap_box(env_, values_[i]);
  if (box == nullptr || box->manager == nullptr || box->close_requested) {
    throw_type(env_, "the Sbx handle is closed or not a handle");
    ok = false;
    return nullptr;
  }
  return box->manager;
}

// managerNew(backends?, withSettings, cwd?, settingsJson?) -> handle
napi_value manager_new(napi_env env, napi_callback_info info) {
  Args args(env, info, 4);
  bool ok = true;
  auto backends = args.text(0, "backends", ok);
  if (!ok) return nullptr;
  bool with_settings = false;
  if (!args.absent(1)) napi_get_value_bool(env, args.at(1), &with_settings);
  auto cwd = args.text(2, "cwd", ok);
  if (!ok) return nullptr;
  auto settings = args.text(3, "settings", ok);
  if (!ok) return nullptr;
  sbx_error* error = nullptr;
  sbx_manager* manager = with_settings ? sbx_manager_new_with_settings(c_str(backends), c_str(cwd),
                                                                       c_str(settings), &error)
                                       : sbx_manager_new(c_str(backends), &error);
  if (manager == nullptr) return throw_sbx(env, error);
  napi_value handle = nullptr;
  napi_create_object(env, &handle);
  auto* box = new ManagerBox{manager, 0, false};
  if (napi_wrap(env, handle, box, finalize_box, nullptr, nullptr) != napi_ok) {
    sbx_manager_free(manager);
    delete box;
    napi_throw_error(env, nullptr, "napi_wrap failed");
    return nullptr;
  }
  return handle;
}

// managerClose(handle): frees the manager now, or after the running execs end.
napi_value manager_close(napi_env env, napi_callback_info info) {
  Args args(env, info, 1);
  ManagerBox* box = unwrap_box(env, args.at(0));
  if (box != nullptr && box->manager != nullptr) {
    box->close_requested = true;
    if (box->busy == 0) {
      sbx_manager_free(box->manager);
      box->manager = nullptr;
    }
  }
  return nullptr;
}

napi_value manager_reprobe(napi_env env, napi_callback_info info) {
  Args args(env, info, 1);
  bool ok = true;
  sbx_manager* manager = args.manager(0, ok);
  if (!ok) return nullptr;
  sbx_error* error = nullptr;
  if (sbx_manager_reprobe(manager, &error) != 0) return throw_sbx(env, error);
  return nullptr;
}

napi_value version(napi_env env, napi_callback_info) { return js_string(env, sbx_version()); }

// backends(handle, probe) -> JSON
napi_value backends(napi_env env, napi_callback_info info) {
  Args args(env, info, 2);
  bool ok = true;
  sbx_manager* manager = args.manager(0, ok);
  if (!ok) return nullptr;
  bool probe = false;
  napi_get_value_bool(env, args.at(1), &probe);
  sbx_error* error = nullptr;
  return take(env, sbx_backends_json(manager, probe ? 1 : 0, &error), &error);
}

// shouldSandbox(policy, preference?) -> JSON
napi_value should_sandbox(napi_env env, napi_callback_info info) {
  Args args(env, info, 2);
  bool ok = true;
  auto policy = args.text(0, "policy", ok);
  auto preference = ok ? args.text(1, "preference", ok) : std::nullopt;
  if (!ok) return nullptr;
  sbx_error* error = nullptr;
  return take(env, sbx_should_sandbox(c_str(policy), c_str(preference), &error), &error);
}

// explain(handle, policy?, cwd?, preference?) -> JSON
napi_value explain(napi_env env, napi_callback_info info) {
  Args args(env, info, 4);
  bool ok = true;
  sbx_manager* manager = args.manager(0, ok);
  auto policy = ok ? args.text(1, "policy", ok) : std::nullopt;
  auto cwd = ok ? args.text(2, "cwd", ok) : std::nullopt;
  auto preference = ok ? args.text(3, "preference", ok) : std::nullopt;
  if (!ok) return nullptr;
  sbx_error* error = nullptr;
  return take(env, sbx_explain(manager, c_str(policy), c_str(cwd), c_str(preference), &error),
              &error);
}

std::vector<const char*> argv_pointers(const std::vector<std::string>& argv) {
  std::vector<const char*> out;
  out.reserve(argv.size() + 1);
  for (const std::string& arg : argv) out.push_back(arg.c_str());
  out.push_back(nullptr);
  return out;
}

// transform(handle, policy?, cwd?, argv, preference?) -> JSON
napi_value transform(napi_env env, napi_callback_info info) {
  Args args(env, info, 5);
  bool ok = true;
  sbx_manager* manager = args.manager(0, ok);
  auto policy = ok ? args.text(1, "policy", ok) : std::nullopt;
  auto cwd = ok ? args.text(2, "cwd", ok) : std::nullopt;
  auto argv = ok ? args.strings(3, "argv", ok) : std::vector<std::string>{};
  auto preference = ok ? args.text(4, "preference", ok) : std::nullopt;
  if (!ok) return nullptr;
  const std::vector<const char*> pointers = argv_pointers(argv);
  sbx_error* error = nullptr;
  return take(
      env,
      sbx_transform(manager, c_str(policy), c_str(cwd), pointers.data(), c_str(preference), &error),
      &error);
}

// exec(handle, policy?, cwd?, argv, preference?, flags) -> Promise<JSON>
struct ExecWork {
  napi_async_work work = nullptr;
  napi_deferred deferred = nullptr;
  napi_ref handle_ref = nullptr;  // keeps the handle (and its manager) alive while running
  ManagerBox* box = nullptr;
  std::optional<std::string> policy, cwd, preference;
  std::vector<std::string> argv;
  unsigned flags = 0;
  char* result = nullptr;
  sbx_error* error = nullptr;
};

void exec_execute(napi_env, void* data) {  // a libuv pool thread: no JS here
  auto* w = static_cast<ExecWork*>(data);
  const std::vector<const char*> pointers = argv_pointers(w->argv);
  w->result = sbx_exec(w->box->manager, c_str(w->policy), c_str(w->cwd), pointers.data(),
                       c_str(w->preference), w->flags, &w->error);
}

void exec_complete(napi_env env, napi_status status, void* data) {
  auto* w = static_cast<ExecWork*>(data);
  if (w->result != nullptr) {
    napi_resolve_deferred(env, w->deferred, js_string(env, w->result));
    sbx_string_free(w->result);
  } else {
    const std::string message =
        w->error != nullptr ? sbx_error_message(w->error)
                            : (status == napi_cancelled ? "exec was cancelled" : "libsbx failed");
    const char* kind = w->error != nullptr        ? kind_name(sbx_error_kind(w->error))
                       : status == napi_cancelled ? "cancelled"
                                                  : "host_failure";
    if (w->error != nullptr) sbx_error_free(w->error);
    napi_reject_deferred(env, w->deferred, sbx_error_value(env, message, kind));
  }
  if (--w->box->busy == 0 && w->box->close_requested && w->box->manager != nullptr) {
    sbx_manager_free(w->box->manager);
    w->box->manager = nullptr;
  }
  napi_delete_reference(env, w->handle_ref);
  napi_delete_async_work(env, w->work);
  delete w;
}

napi_value exec(napi_env env, napi_callback_info info) {
  Args args(env, info, 6);
  bool ok = true;
  args.manager(0, ok);
  if (!ok) return nullptr;
  auto* w = new ExecWork;
  w->box = unwrap_box(env, args.at(0));
  w->policy = args.text(1, "policy", ok);
  if (ok) w->cwd = args.text(2, "cwd", ok);
  if (ok) w->argv = args.strings(3, "argv", ok);
  if (ok) w->preference = args.text(4, "preference", ok);
  std::optional<int64_t> flags;
  if (ok) flags = args.integer(5, "flags", ok);
  if (!ok) {
    delete w;
    return nullptr;
  }
  w->flags = static_cast<unsigned>(*flags);
  napi_value promise = nullptr;
  napi_create_promise(env, &w->deferred, &promise);
  napi_create_reference(env, args.at(0), 1, &w->handle_ref);
  napi_create_async_work(env, nullptr, js_string(env, "sbx.exec"), exec_execute, exec_complete, w,
                         &w->work);
  ++w->box->busy;
  napi_queue_async_work(env, w->work);
  return promise;
}

// ---- runs: sbx_run_start and its handle ----------------------------------------------------
// runStart(handle, policy?, cwd?, argv, preference?, flags, modes, maxBytes, stdinData?,
//          envSet?, envUnset?, timeoutMs) -> a run object with `done`, a Promise of
//          {report: JSON, stdout: Buffer|null, stderr: Buffer|null}.
// The run goes on on libsbx's own thread from sbx_run_start on. Waiting for it takes a thread
// of this addon per run (sbx_run_wait blocks), which hands the end to the event loop through a
// thread-safe function: never libuv's pool, whose 4 threads would be held for a whole command
// each (4 long runs would starve fs and dns, and the reads of a spawn's pipes if they used it).

struct RunState {
  sbx_run* run = nullptr;
  ManagerBox* box = nullptr;
  napi_ref manager_ref = nullptr;  // keeps the Sbx handle (and its manager) alive until settled
  napi_deferred deferred = nullptr;
  napi_threadsafe_function tsfn = nullptr;
  std::thread waiter;
  char* report = nullptr;  // written by the waiter before it calls the tsfn
  sbx_error* error = nullptr;
  bool settled = false;  // the promise is settled (the event loop's thread)
  RunState() = default;
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;
  // The last owner (the JS run object or the tsfn) is gone. The run was freed when its waiter
  // had been joined, unless there never was one (runStart failed half-way: sbx_run_free then
  // cancels the run and waits for it).
  ~RunState() {
    sbx_run_free(run);
    sbx_string_free(report);
    sbx_error_free(error);
  }
};
using RunPtr = std::shared_ptr<RunState>;

// This addon's data in one Node environment: the runs started there, to be cancelled when the
// environment goes away (a worker ends, the process exits): otherwise the manager's finalizer
// (sbx_manager_free) would wait for each of them to end by itself.
struct Addon {
  std::vector<std::weak_ptr<RunState>> runs;
};

// The environment's cleanup hook (registered in init, after Node-API's own, so it runs before
// the finalizers): cancels what still runs, then frees the list (no run is started any more).
void cancel_runs(void* data) {
  auto* addon = static_cast<Addon*>(data);
  for (const std::weak_ptr<RunState>& weak : addon->runs)
    if (RunPtr run = weak.lock()) sbx_run_cancel(run->run);
  delete addon;
}

void release_manager(napi_env env, RunState& s) {
  if (--s.box->busy == 0 && s.box->close_requested && s.box->manager != nullptr) {
    sbx_manager_free(s.box->manager);
    s.box->manager = nullptr;
  }
  napi_delete_reference(env, s.manager_ref);
  s.manager_ref = nullptr;
}

napi_value output_buffer(napi_env env, sbx_run* run, int which) {
  size_t length = 0;
  const char* bytes = sbx_run_output(run, which, &length);
  napi_value out = nullptr;
  if (bytes == nullptr) {
    napi_get_null(env, &out);
  } else {
    napi_create_buffer_copy(env, length, bytes, nullptr, &out);
  }
  return out;
}

// The event loop's side of the run's end (the tsfn's call_js): settles the promise. `env` is
// NULL when the environment is being torn down: nothing is settled then.
void run_settled(napi_env env, napi_value, void* context, void*) {
  if (env == nullptr) return;
  RunState& s = **static_cast<RunPtr*>(context);
  s.settled = true;
  if (s.report != nullptr) {
    napi_value result = nullptr;
    napi_create_object(env, &result);
    napi_set_named_property(env, result, "report", js_string(env, s.report));
    napi_set_named_property(env, result, "stdout", output_buffer(env, s.run, 1));
    napi_set_named_property(env, result, "stderr", output_buffer(env, s.run, 2));
    napi_resolve_deferred(env, s.deferred, result);
  } else {
    const std::string message = s.error != nullptr ? sbx_error_message(s.error) : "libsbx failed";
    const char* kind =
        kind_name(s.error != nullptr ? sbx_error_kind(s.error) : SBX_ERROR_HOST_FAILURE);
    napi_reject_deferred(env, s.deferred, sbx_error_value(env, message, kind));
  }
  release_manager(env, s);
}

// The tsfn is gone (after run_settled, or at the environment's teardown): the waiter is joined
// (it has returned, or returns once the run, cancelled here, has ended).
void run_tsfn_finalize(napi_env, void* data, void*) {
  auto* holder = static_cast<RunPtr*>(data);
  RunState& s = **holder;
  if (!s.settled) sbx_run_cancel(s.run);  // the teardown: the environment's runs end with it
  if (s.waiter.joinable()) s.waiter.join();
  // The outputs were copied into Buffers: the run's memory and untaken pipe ends go now, not
  // when the JS object is collected (a later runCancel or runTakeFd gets NULL: a no-op, -1).
  sbx_run_free(s.run);
  s.run = nullptr;
  delete holder;
}

// The waiter thread. `s` outlives it: the tsfn's holder is dropped only after the join.
void wait_for_run(RunState* s) {
  s->report = sbx_run_wait(s->run, &s->error);
  // napi_closing (the environment is going away): the thread count is already released.
  if (napi_call_threadsafe_function(s->tsfn, nullptr, napi_tsfn_blocking) == napi_ok)
    napi_release_threadsafe_function(s->tsfn, napi_tsfn_release);
}

void finalize_run_object(napi_env, void* data, void*) { delete static_cast<RunPtr*>(data); }

// The run of a run object made by runStart (TypeError-like SbxError otherwise).
RunPtr unwrap_run(napi_env env, napi_value value) {
  void* data = nullptr;
  if (napi_unwrap(env, value, &data) != napi_ok || data == nullptr) {
    throw_type(env, "not a run handle");
    return nullptr;
  }
  return *static_cast<RunPtr*>(data);
}

// Reads runStart's stdio and environment arguments into a sbx_run_options.
struct RunInput {
  std::optional<std::string> policy, cwd, preference;
  std::vector<std::string> argv, env_set, env_unset;
  std::vector<const char*> argv_c, env_set_c, env_unset_c;
  std::string stdin_data;
  sbx_run_options options{};
};

bool read_modes(napi_env env, napi_value value, sbx_run_options& o) {
  bool is_array = false;
  napi_is_array(env, value, &is_array);
  uint32_t length = 0;
  if (is_array) napi_get_array_length(env, value, &length);
  if (length != 3) {
    throw_type(env, "modes must be an array of 3 sbx_stdio_mode_t");
    return false;
  }
  for (uint32_t k = 0; k < 3; ++k) {
    napi_value element = nullptr;
    napi_get_element(env, value, k, &element);
    int32_t mode = 0;
    if (napi_get_value_int32(env, element, &mode) != napi_ok) {
      throw_type(env, "modes[" + std::to_string(k) + "] must be a number");
      return false;
    }
    o.stdio[k].mode = mode;
  }
  return true;
}

bool read_run_input(napi_env env, const Args& args, RunInput& in) {
  bool ok = true;
  in.policy = args.text(1, "policy", ok);
  if (ok) in.cwd = args.text(2, "cwd", ok);
  if (ok) in.argv = args.strings(3, "argv", ok);
  if (ok) in.preference = args.text(4, "preference", ok);
  std::optional<int64_t> flags, max_bytes, timeout;
  if (ok) flags = args.integer(5, "flags", ok);
  if (ok) ok = read_modes(env, args.at(6), in.options);
  if (ok) max_bytes = args.integer(7, "maxOutputBytes", ok);
  if (ok && !args.absent(8)) {
    bool is_buffer = false;
    napi_is_buffer(env, args.at(8), &is_buffer);
    if (!is_buffer) {
      throw_type(env, "stdin data must be a Buffer");
      return false;
    }
    void* data = nullptr;
    size_t length = 0;
    napi_get_buffer_info(env, args.at(8), &data, &length);
    in.stdin_data.assign(static_cast<const char*>(data), length);
  }
  if (ok && !args.absent(9)) in.env_set = args.strings(9, "env", ok, /*may_be_empty=*/true);
  if (ok && !args.absent(10)) in.env_unset = args.strings(10, "env", ok, /*may_be_empty=*/true);
  if (ok) timeout = args.integer(11, "timeoutMs", ok);
  if (!ok) return false;
  if (*max_bytes < 0 || *timeout < 0) {
    throw_type(env, "maxOutputBytes and timeoutMs must not be negative");
    return false;
  }
  sbx_run_options& o = in.options;
  o.struct_size = sizeof o;
  o.policy_json = c_str(in.policy);
  o.cwd = c_str(in.cwd);
  in.argv_c = argv_pointers(in.argv);
  o.argv = in.argv_c.data();
  o.preference = c_str(in.preference);
  o.flags = static_cast<unsigned>(*flags);
  o.stdio[1].max_bytes = o.stdio[2].max_bytes = static_cast<size_t>(*max_bytes);
  o.stdio[0].data = in.stdin_data.data();
  o.stdio[0].length = in.stdin_data.size();
  if (!args.absent(9)) {
    in.env_set_c = argv_pointers(in.env_set);
    o.env_set = in.env_set_c.data();
  }
  if (!args.absent(10)) {
    in.env_unset_c = argv_pointers(in.env_unset);
    o.env_unset = in.env_unset_c.data();
  }
  o.timeout_ms = static_cast<unsigned long long>(*timeout);
  return true;
}

// Starts the waiter with every signal blocked: the process's signals are for Node's threads.
bool start_waiter(RunState* s) {
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  bool started = true;
  try {
    s->waiter = std::thread(wait_for_run, s);
  } catch (const std::exception&) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return started;
}

napi_value run_start(napi_env env, napi_callback_info info) {
  Args args(env, info, 12);
  bool ok = true;
  sbx_manager* manager = args.manager(0, ok);
  if (!ok) return nullptr;
  RunInput input;
  if (!read_run_input(env, args, input)) return nullptr;
  sbx_error* error = nullptr;
  sbx_run* started = sbx_run_start(manager, &input.options, &error);
  if (started == nullptr) return throw_sbx(env, error);
  auto state = std::make_shared<RunState>();
  state->run = started;
  state->box = unwrap_box(env, args.at(0));
  // The JS object's share and the tsfn's share of the state; each is deleted by its finalizer.
  auto* object_share = new RunPtr(state);
  auto* tsfn_share = new RunPtr(state);
  napi_value object = nullptr;
  napi_value promise = nullptr;
  napi_create_object(env, &object);
  if (napi_wrap(env, object, object_share, finalize_run_object, nullptr, nullptr) != napi_ok) {
    delete object_share;
    delete tsfn_share;
    sbx_run_cancel(started);  // freed (and waited for) with the state, below
    napi_throw_error(env, nullptr, "napi_wrap failed");
    return nullptr;
  }
  if (napi_create_threadsafe_function(env, nullptr, nullptr, js_string(env, "sbx.run"), 0, 1,
                                      tsfn_share, run_tsfn_finalize, tsfn_share, run_settled,
                                      &state->tsfn) != napi_ok) {
    delete tsfn_share;
    sbx_run_cancel(started);  // freed with the JS object
    napi_throw_error(env, nullptr, "napi_create_threadsafe_function failed");
    return nullptr;
  }
  napi_create_promise(env, &state->deferred, &promise);
  napi_create_reference(env, args.at(0), 1, &state->manager_ref);
  ++state->box->busy;
  if (!start_waiter(state.get())) {
    // Nothing will call the tsfn: settle here, and let its release finalize it.
    sbx_run_cancel(started);
    state->report = sbx_run_wait(started, &state->error);
    run_settled(env, nullptr, tsfn_share, nullptr);
    napi_release_threadsafe_function(state->tsfn, napi_tsfn_release);
  }
  void* data = nullptr;
  napi_get_instance_data(env, &data);
  if (auto* addon = static_cast<Addon*>(data)) {
    std::erase_if(addon->runs, [](const std::weak_ptr<RunState>& w) { return w.expired(); });
    addon->runs.push_back(state);
  }
  napi_set_named_property(env, object, "done", promise);
  return object;
}

// runTakeFd(run, which) -> the caller's end of a pipe, or -1.
napi_value run_take_fd(napi_env env, napi_callback_info info) {
  Args args(env, info, 2);
  RunPtr s = unwrap_run(env, args.at(0));
  if (!s) return nullptr;
  bool ok = true;
  auto which = args.integer(1, "which", ok);
  if (!ok) return nullptr;
  napi_value out = nullptr;
  napi_create_int32(env, sbx_run_take_fd(s->run, static_cast<int>(*which)), &out);
  return out;
}

// runCancel(run) -> true when the run had not yet been reported ended here.
napi_value run_cancel(napi_env env, napi_callback_info info) {
  Args args(env, info, 1);
  RunPtr s = unwrap_run(env, args.at(0));
  if (!s) return nullptr;
  sbx_run_cancel(s->run);
  napi_value out = nullptr;
  napi_get_boolean(env, !s->settled, &out);
  return out;
}

// wrap(policy, cwd?, argv) -> JSON {argv, policy, policy_fd, report_fd} (sbx_wrap)
napi_value wrap(napi_env env, napi_callback_info info) {
  Args args(env, info, 3);
  bool ok = true;
  auto policy = args.text(0, "policy", ok);
  auto cwd = ok ? args.text(1, "cwd", ok) : std::nullopt;
  auto argv = ok ? args.strings(2, "argv", ok) : std::vector<std::string>{};
  if (!ok) return nullptr;
  const std::vector<const char*> pointers = argv_pointers(argv);
  sbx_error* error = nullptr;
  return take(env, sbx_wrap(c_str(policy), c_str(cwd), pointers.data(), &error), &error);
}

// widen(base, extra) / approve(requested, granted) -> JSON
napi_value widen(napi_env env, napi_callback_info info) {
  Args args(env, info, 2);
  bool ok = true;
  auto base = args.text(0, "base", ok);
  auto extra = ok ? args.text(1, "extra", ok) : std::nullopt;
  if (!ok) return nullptr;
  sbx_error* error = nullptr;
  return take(env, sbx_policy_widen(c_str(base), c_str(extra), &error), &error);
}

napi_value approve(napi_env env, napi_callback_info info) {
  Args args(env, info, 2);
  bool ok = true;
  auto requested = args.text(0, "requested", ok);
  auto granted = ok ? args.text(1, "granted", ok) : std::nullopt;
  if (!ok) return nullptr;
  sbx_error* error = nullptr;
  return take(env, sbx_policy_approve(c_str(requested), c_str(granted), &error), &error);
}

// context(policy, cwd?, asJson) -> text or JSON
napi_value context(napi_env env, napi_callback_info info) {
  Args args(env, info, 3);
  bool ok = true;
  auto policy = args.text(0, "policy", ok);
  auto cwd = ok ? args.text(1, "cwd", ok) : std::nullopt;
  if (!ok) return nullptr;
  bool as_json = false;
  napi_get_value_bool(env, args.at(2), &as_json);
  sbx_error* error = nullptr;
  return take(env, sbx_context(c_str(policy), c_str(cwd), as_json ? 1 : 0, &error), &error);
}

// classify(exitCode, signal, stderr (string or Buffer), backend?) -> JSON
napi_value classify(napi_env env, napi_callback_info info) {
  Args args(env, info, 4);
  bool ok = true;
  auto code = args.integer(0, "exitCode", ok);
  auto signal = ok ? args.integer(1, "signal", ok) : std::nullopt;
  if (!ok) return nullptr;
  std::string stderr_text;
  bool is_buffer = false;
  napi_is_buffer(env, args.at(2), &is_buffer);
  if (is_buffer) {
    void* data = nullptr;
    size_t length = 0;
    napi_get_buffer_info(env, args.at(2), &data, &length);
    stderr_text.assign(static_cast<const char*>(data), length);
  } else {
    auto text = args.text(2, "stderr", ok, /*nul_allowed=*/true);
    if (!ok) return nullptr;
    stderr_text = text.value_or("");
  }
  auto backend = args.text(3, "backend", ok);
  if (!ok) return nullptr;
  sbx_error* error = nullptr;
  return take(env,
              sbx_classify_failure(static_cast<int>(*code), static_cast<int>(*signal),
                                   stderr_text.data(), stderr_text.size(), c_str(backend), &error),
              &error);
}

napi_value init(napi_env env, napi_value exports) {
  const napi_property_descriptor functions[] = {
      {"version", nullptr, version, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"managerNew", nullptr, manager_new, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"managerClose", nullptr, manager_close, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"managerReprobe", nullptr, manager_reprobe, nullptr, nullptr, nullptr, napi_default,
       nullptr},
      {"backends", nullptr, backends, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"shouldSandbox", nullptr, should_sandbox, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"explain", nullptr, explain, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"transform", nullptr, transform, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"exec", nullptr, exec, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"widen", nullptr, widen, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"wrap", nullptr, wrap, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"approve", nullptr, approve, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"context", nullptr, context, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"classify", nullptr, classify, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"runStart", nullptr, run_start, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"runTakeFd", nullptr, run_take_fd, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"runCancel", nullptr, run_cancel, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(functions) / sizeof(functions[0]), functions);
  napi_value flags = nullptr;
  napi_create_uint32(env, SBX_EXEC_ALLOW_UNSANDBOXED, &flags);
  napi_set_named_property(env, exports, "EXEC_ALLOW_UNSANDBOXED", flags);
  napi_create_uint32(env, SBX_EXEC_CAPTURE_STDERR, &flags);
  napi_set_named_property(env, exports, "EXEC_CAPTURE_STDERR", flags);
  const std::pair<const char*, int> modes[] = {
      {"STDIO_INHERIT", SBX_STDIO_INHERIT}, {"STDIO_NULL", SBX_STDIO_NULL},
      {"STDIO_PIPE", SBX_STDIO_PIPE},       {"STDIO_CAPTURE", SBX_STDIO_CAPTURE},
      {"STDIO_DATA", SBX_STDIO_DATA},
  };
  for (const auto& [name, value] : modes) {
    napi_create_int32(env, value, &flags);
    napi_set_named_property(env, exports, name, flags);
  }
  auto* addon = new Addon;
  napi_set_instance_data(env, addon, nullptr, nullptr);
  napi_add_env_cleanup_hook(env, cancel_runs, addon);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
