'use strict';
// The calls index.js makes, one per C API call of libsbx (sbx/sbx.h), through koffi
// (lib/ffi.js). Values cross as JSON text, which index.js parses. Arguments are checked here, as
// libsbx's C strings need: a wrong type, or a string holding U+0000, is an SbxError of kind
// invalid_input naming the argument, never passed on cut. Nothing here blocks the event loop
// for longer than a call that returns at once: exec runs on libuv's thread pool (koffi's async
// call), and each run is waited for on a thread of lib/waiter.js, never the pool's.
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { ErrorKind, SbxError, kindName } = require('./errors');
const ffi = require('./ffi');

const { koffi } = ffi;
const LIBRARY = ffi.libraryName();
const c = ffi.open(LIBRARY);

// ---- errors and arguments ----------------------------------------------------------------------

function invalid(message) { return new SbxError(message, ErrorKind.INVALID_INPUT); }

// An sbx_error* as an SbxError with its message and kind; the sbx_error is freed.
function errorFrom(pointer) {
  if (!pointer) return new SbxError('libsbx failed', ErrorKind.HOST_FAILURE);
  try {
    return new SbxError(c.sbx_error_message(pointer), kindName(c.sbx_error_kind(pointer)));
  } finally {
    c.sbx_error_free(pointer);
  }
}

// A returned char*: its text (the string is freed), or the call's error thrown.
function take(pointer, error) {
  if (!pointer) throw errorFrom(error[0]);
  try {
    return koffi.decode.string(pointer);
  } finally {
    c.sbx_string_free(pointer);
  }
}

// libsbx reads NUL-terminated strings and would use only what comes before a U+0000 (an argv
// element "echo x\0; rm ..." checked by the caller would run "echo x"): refused, never cut.
function refuseNul(value, name) {
  const at = value.indexOf('\0');
  if (at !== -1) {
    throw invalid(`${name} contains a NUL character at byte ${Buffer.byteLength(value.slice(0, at))}; ` +
                  'libsbx would cut it there, so it is refused: remove the NUL');
  }
}

const absent = (value) => value === undefined || value === null;

// A C string (UTF-8 and its NUL, in a Buffer), or null for undefined/null.
function text(value, name) {
  if (absent(value)) return null;
  if (typeof value !== 'string') throw invalid(`${name} must be a string`);
  refuseNul(value, name);
  return Buffer.from(`${value}\0`, 'utf8');
}

function integer(value, name) {
  if (typeof value !== 'number') throw invalid(`${name} must be a number`);
  return Number.isNaN(value) ? 0 : Math.trunc(value);
}

// A NULL-terminated array of C strings (argv: not empty).
function strings(value, name, mayBeEmpty = false) {
  if (!Array.isArray(value) || (value.length === 0 && !mayBeEmpty)) {
    throw invalid(`${name} must be a${mayBeEmpty ? 'n' : ' non-empty'} array of strings`);
  }
  const out = [];
  for (let k = 0; k < value.length; ++k) {
    if (typeof value[k] !== 'string') throw invalid(`${name}[${k}] must be a string`);
    out.push(text(value[k], `${name}[${k}]`));
  }
  out.push(null);
  return out;
}

// ---- the manager -------------------------------------------------------------------------------
// A handle (what managerNew returns): closing frees the manager early, or once the execs and
// runs still going on have settled (`busy`; each holds the handle until then). A handle nobody
// holds any more is freed by the garbage collector's finalization.

const managers = new FinalizationRegistry((cell) => {
  if (cell.pointer) c.sbx_manager_free(cell.pointer);
  cell.pointer = null;
});

class ManagerHandle {
  constructor(pointer) {
    this.cell = { pointer };  // what the finalization frees: it must not hold the handle
    this.busy = 0;
    this.closeRequested = false;
    managers.register(this, this.cell, this);
  }
  free() {
    const { pointer } = this.cell;
    this.cell.pointer = null;
    managers.unregister(this);
    if (pointer) c.sbx_manager_free(pointer);
  }
  release() {
    if (--this.busy === 0 && this.closeRequested) this.free();
  }
}

// The sbx_manager* of a live handle.
function managerOf(handle) {
  if (!(handle instanceof ManagerHandle) || !handle.cell.pointer || handle.closeRequested) {
    throw invalid('the Sbx handle is closed or not a handle');
  }
  return handle.cell.pointer;
}

function managerNew(backends, withSettings, cwd, settings) {
  const names = text(backends, 'backends');
  const dir = text(cwd, 'cwd');
  const scope = text(settings, 'settings');
  const error = [null];
  const pointer = withSettings === true
                      ? c.sbx_manager_new_with_settings(names, dir, scope, error)
                      : c.sbx_manager_new(names, error);
  if (!pointer) throw errorFrom(error[0]);
  return new ManagerHandle(pointer);
}

function managerClose(handle) {
  if (!(handle instanceof ManagerHandle) || !handle.cell.pointer) return;
  handle.closeRequested = true;
  if (handle.busy === 0) handle.free();
}

function managerReprobe(handle) {
  const error = [null];
  if (c.sbx_manager_reprobe(managerOf(handle), error) !== 0) throw errorFrom(error[0]);
}

// ---- the calls that return at once -------------------------------------------------------------

function version() { return c.sbx_version(); }

function backends(handle, probe) {
  const error = [null];
  return take(c.sbx_backends_json(managerOf(handle), probe ? 1 : 0, error), error);
}

function shouldSandbox(policy, preference) {
  const args = [text(policy, 'policy'), text(preference, 'preference')];
  const error = [null];
  return take(c.sbx_should_sandbox(...args, error), error);
}

function explain(handle, policy, cwd, preference) {
  const args = [managerOf(handle), text(policy, 'policy'), text(cwd, 'cwd'),
                text(preference, 'preference')];
  const error = [null];
  return take(c.sbx_explain(...args, error), error);
}

function transform(handle, policy, cwd, argv, preference) {
  const args = [managerOf(handle), text(policy, 'policy'), text(cwd, 'cwd'), strings(argv, 'argv'),
                text(preference, 'preference')];
  const error = [null];
  return take(c.sbx_transform(...args, error), error);
}

function wrap(policy, cwd, argv) {
  const args = [text(policy, 'policy'), text(cwd, 'cwd'), strings(argv, 'argv')];
  const error = [null];
  return take(c.sbx_wrap(...args, error), error);
}

function widen(base, extra) {
  const args = [text(base, 'base'), text(extra, 'extra')];
  const error = [null];
  return take(c.sbx_policy_widen(...args, error), error);
}

function approve(requested, granted) {
  const args = [text(requested, 'requested'), text(granted, 'granted')];
  const error = [null];
  return take(c.sbx_policy_approve(...args, error), error);
}

function context(policy, cwd, asJson) {
  const args = [text(policy, 'policy'), text(cwd, 'cwd')];
  const error = [null];
  return take(c.sbx_context(...args, asJson ? 1 : 0, error), error);
}

function managerContext(handle, policy, cwd, preference, asJson) {
  const args = [managerOf(handle), text(policy, 'policy'), text(cwd, 'cwd'),
                text(preference, 'preference')];
  const error = [null];
  return take(c.sbx_manager_context(...args, asJson ? 1 : 0, error), error);
}

// classify(exitCode, signal, stderr (string or bytes, passed with its length: NUL bytes are
// data), backend?).
function classify(exitCode, signal, stderr, backend) {
  const code = integer(exitCode, 'exitCode');
  const sig = integer(signal, 'signal');
  let bytes;
  if (stderr instanceof Uint8Array) {
    bytes = stderr;
  } else if (absent(stderr) || typeof stderr === 'string') {
    bytes = Buffer.from(stderr || '', 'utf8');
  } else {
    throw invalid('stderr must be a string');
  }
  const length = bytes.length;
  if (length === 0) bytes = Buffer.alloc(1);  // an address, not NULL, for the empty text
  const args = [code, sig, bytes, length, text(backend, 'backend')];
  const error = [null];
  return take(c.sbx_classify_failure(...args, error), error);
}

// ---- exec: on libuv's thread pool --------------------------------------------------------------

// exec(handle, policy?, cwd?, argv, preference?, flags) -> Promise of the report's JSON. sbx_exec
// runs on a thread of libuv's pool (koffi's async call: 4 threads unless UV_THREADPOOL_SIZE
// says otherwise) and settles the promise on the event loop.
function exec(handle, policy, cwd, argv, preference, flags) {
  const manager = managerOf(handle);
  // The Buffers stay referenced by `args` until the call has returned (the callback below).
  const args = [manager, text(policy, 'policy'), text(cwd, 'cwd'), strings(argv, 'argv'),
                text(preference, 'preference'), integer(flags, 'flags')];
  const error = [null];
  ++handle.busy;
  return new Promise((resolve, reject) => {
    const settle = (failure, report) => {
      args.length = 0;  // the call has returned: its Buffers may go now
      try {
        if (failure) throw new SbxError(`sbx_exec could not be called: ${failure.message}`);
        resolve(take(report, error));
      } catch (e) {
        reject(e);
      } finally {
        handle.release();
      }
    };
    try {
      c.sbx_exec.async(...args, error, settle);
    } catch (failure) {  // koffi's queue of async calls is full
      settle(failure, null);
    }
  });
}

// ---- runs: sbx_run_start and its handle --------------------------------------------------------
// runStart(handle, policy?, cwd?, argv, preference?, flags, modes, maxBytes, stdinData?,
//          envSet?, envUnset?, timeoutMs) -> a run object with `done`, a Promise of
//          {report: JSON, stdout: Buffer|null, stderr: Buffer|null}.
// The run goes on on libsbx's own thread from sbx_run_start on; sbx_run_wait, which blocks until
// it has ended, is called on a thread of lib/waiter.js. Never on libuv's pool: its 4 threads
// would each be held for a whole command, and 4 long runs (a spawned server) would starve fs and
// dns. Once that thread says the run has ended, the event loop asks sbx_run_wait again (it
// returns at once, the same report), copies the captured output and frees the run.

class NativeRun {
  constructor(pointer, handle) {
    this.pointer = pointer;  // null once freed: runCancel and runTakeFd are then no-ops
    this.handle = handle;    // keeps the manager alive until the run has settled
    this.settled = false;
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

// The runs of this thread still going on: when its Node environment ends (the process exits, a
// worker stops) they are cancelled, then waited for here (sbx_run_wait may be called from
// several threads; one joins the run's thread), so that no run of libsbx still goes on while
// exit(3) tears the process down. A cancelled run ends promptly.
const liveRuns = new Set();
let endRunsAtExit = false;
function watch(run) {
  liveRuns.add(run);
  if (endRunsAtExit) return;
  endRunsAtExit = true;
  process.on('exit', () => {
    const ending = [...liveRuns];
    for (const live of ending) c.sbx_run_cancel(live.pointer);
    for (const live of ending) {
      const error = [null];
      const report = c.sbx_run_wait(live.pointer, error);
      if (report) c.sbx_string_free(report);
      if (error[0]) c.sbx_error_free(error[0]);
    }
  });
}

function readModes(modes) {
  if (!Array.isArray(modes) || modes.length !== 3) {
    throw invalid('modes must be an array of 3 sbx_stdio_mode_t');
  }
  return modes.map((mode, k) => integer(mode, `modes[${k}]`));
}

function runStart(handle, policy, cwd, argv, preference, flags, modes, maxBytes, stdinData, envSet,
                  envUnset, timeoutMs) {
  const manager = managerOf(handle);
  const policyText = text(policy, 'policy');
  const dir = text(cwd, 'cwd');
  const args = strings(argv, 'argv');
  const pref = text(preference, 'preference');
  const bits = integer(flags, 'flags');
  const stdio = readModes(modes);
  const max = integer(maxBytes, 'maxOutputBytes');
  if (!absent(stdinData) && !Buffer.isBuffer(stdinData)) throw invalid('stdin data must be a Buffer');
  const data = absent(stdinData) ? null : stdinData;
  const set = absent(envSet) ? null : strings(envSet, 'env', true);
  const unset = absent(envUnset) ? null : strings(envUnset, 'env', true);
  const timeout = integer(timeoutMs, 'timeoutMs');
  if (max < 0 || timeout < 0) throw invalid('maxOutputBytes and timeoutMs must not be negative');
  const options = {
    struct_size: koffi.sizeof(ffi.types.sbx_run_options),
    policy_json: policyText,
    cwd: dir,
    argv: args,
    preference: pref,
    flags: bits,
    stdio: stdio.map((mode, which) => ({
      mode,
      fd: 0,
      max_bytes: which === 0 ? 0 : max,
      data: which === 0 ? data : null,
      length: which === 0 && data ? data.length : 0,
    })),
    env_set: set,
    env_unset: unset,
    timeout_ms: timeout,
  };
  const error = [null];
  const pointer = c.sbx_run_start(manager, options, error);  // copies what it keeps
  if (!pointer) throw errorFrom(error[0]);
  const run = new NativeRun(pointer, handle);
  ++handle.busy;
  watch(run);
  waitInThread(pointer).then(() => settle(run), () => waitOnPool(run));
  return run;
}

// The captured bytes of stream `which`, copied (they live until sbx_run_free), or null.
function output(pointer, which) {
  const length = [0];
  const bytes = c.sbx_run_output(pointer, which, length);
  if (!bytes) return null;
  const n = Number(length[0]);
  return n === 0 ? Buffer.alloc(0) : Buffer.from(new Uint8Array(koffi.view(bytes, n)));
}

// The run has ended: its report and outputs are read, the run freed, the promise settled.
function settle(run) {
  let result = null;
  let failure = null;
  try {
    const error = [null];
    const report = c.sbx_run_wait(run.pointer, error);  // at once: the run has ended
    if (report) {
      result = { report: take(report, error), stdout: output(run.pointer, 1),
                 stderr: output(run.pointer, 2) };
    } else {
      failure = errorFrom(error[0]);
    }
  } catch (e) {
    failure = e;
  } finally {
    // The run's memory and untaken pipe ends go now, not when the object is collected.
    c.sbx_run_free(run.pointer);
    run.pointer = null;
    run.settled = true;
    liveRuns.delete(run);
    run.handle.release();
  }
  if (failure) {
    run.reject(failure);
  } else {
    run.resolve(result);
  }
}

// When no waiting thread could be had: the wait goes to libuv's pool instead; when even that
// fails, the run is cancelled and waited for here (it ends promptly then).
function waitOnPool(run) {
  const error = [null];
  try {
    c.sbx_run_wait.async(run.pointer, error, (failure, report) => {
      if (report) c.sbx_string_free(report);
      if (error[0]) c.sbx_error_free(error[0]);
      settle(run);
    });
  } catch {
    c.sbx_run_cancel(run.pointer);
    settle(run);
  }
}

// The run of a run object made by runStart.
function runOf(run) {
  if (!(run instanceof NativeRun)) throw invalid('not a run handle');
  return run;
}

// runTakeFd(run, which) -> the caller's end of a pipe, or -1.
function runTakeFd(run, which) {
  const r = runOf(run);
  const stream = integer(which, 'which');
  return r.pointer ? c.sbx_run_take_fd(r.pointer, stream) : -1;
}

// runCancel(run) -> true when the run had not yet been reported ended here.
function runCancel(run) {
  const r = runOf(run);
  if (r.pointer) c.sbx_run_cancel(r.pointer);
  return !r.settled;
}

// ---- the waiting threads -----------------------------------------------------------------------
// Worker threads running lib/waiter.js, one run each at a time: as many as runs go on at once,
// so any number overlap. A few idle ones are kept for the next runs (starting one costs a
// worker's start and koffi's load); idle ones do not keep the process alive.

const WAITER = path.join(__dirname, 'waiter.js');
const IDLE_WAITERS = 2;
const idleWaiters = [];

function startWaiter() {
  const worker = new Worker(WAITER, { workerData: { library: LIBRARY }, execArgv: [] });
  const waiter = { worker, job: null };
  worker.on('message', () => {
    const { job } = waiter;
    waiter.job = null;
    worker.unref();
    if (idleWaiters.length < IDLE_WAITERS) {
      idleWaiters.push(waiter);
    } else {
      worker.terminate();
    }
    if (job) job.resolve();
  });
  const lost = (why) => {
    const at = idleWaiters.indexOf(waiter);
    if (at !== -1) idleWaiters.splice(at, 1);
    const { job } = waiter;
    waiter.job = null;
    if (job) job.reject(why);
  };
  worker.on('error', lost);
  worker.on('exit', (code) => lost(new Error(`the waiting thread exited (${code})`)));
  return waiter;
}

// Resolves once the run has ended (the waiting thread's sbx_run_wait has returned).
function waitInThread(pointer) {
  return new Promise((resolve, reject) => {
    const waiter = idleWaiters.pop() || startWaiter();
    waiter.job = { resolve, reject };
    waiter.worker.ref();  // a run going on keeps the process alive, as a child process does
    waiter.worker.postMessage(pointer);
  });
}

module.exports = {
  ...ffi.constants,
  version,
  managerNew,
  managerClose,
  managerReprobe,
  backends,
  shouldSandbox,
  explain,
  transform,
  exec,
  widen,
  wrap,
  approve,
  context,
  managerContext,
  classify,
  runStart,
  runTakeFd,
  runCancel,
};
