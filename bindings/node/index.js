'use strict';
// sbx for Node: the `Sbx` class and the pure functions over libsbx's C API (sbx/sbx.h), called
// through koffi (lib/native.js, lib/ffi.js): nothing is compiled at install. Types: index.d.ts.
// README.md has an example.
const fs = require('fs');
const net = require('net');
const { ErrorKind, SbxError } = require('./lib/errors');
// libsbx's C API through koffi (lib/ffi.js); throws SbxError (host_failure) when libsbx or koffi
// cannot be loaded.
const native = require('./lib/native');

// An error with code SBX_ERROR becomes an SbxError with its kind; anything else is passed on.
function wrap(error) {
  if (error instanceof SbxError) return error;
  return error && error.code === 'SBX_ERROR' ? new SbxError(error.message, error.kind) : error;
}

// Runs a native call; libsbx's errors and bad arguments become SbxError.
function call(fn, ...args) {
  try {
    return fn(...args);
  } catch (error) {
    throw wrap(error);
  }
}

function policyText(policy) {
  if (policy === undefined || policy === null) return undefined;
  return typeof policy === 'string' ? policy : JSON.stringify(policy);
}

const json = (text) => JSON.parse(text);

/** libsbx's version, e.g. "0.1.0". */
function version() { return native.version(); }
/** Question 1 (pure): does the policy need a sandbox? */
function shouldSandbox(policy, preference = 'auto') {
  return json(call(native.shouldSandbox, policyText(policy), preference));
}
/**
 * A command line that runs argv through this install's `sbx exec`, for a caller that spawns
 * processes itself: {command, args, policy, policyFd: 3, reportFd: 4}. Spawn command/args with
 * stdio[3] carrying `policy` (end it after writing) and read the run's JSON report from
 * stdio[4]; the command's stdio is the spawned process's own (sbx_wrap).
 */
function wrapCommand(policy, argv, options = {}) {
  const w = json(call(native.wrap, policyText(policy), options.cwd, argv));
  return { command: w.argv[0], args: w.argv.slice(1), policy: w.policy, policyFd: w.policy_fd,
           reportFd: w.report_fd };
}
/** A policy with every access of both (never lifts a deny). */
function widen(base, extra) {
  return json(call(native.widen, policyText(base), policyText(extra)));
}
/** What a person granted of a request (intersection); recorded false = nothing recorded. */
function approve(requested, granted) {
  return json(call(native.approve, policyText(requested), policyText(granted)));
}
/**
 * The model-facing description of the sandbox for any host (every backend's differences
 * labelled; Sbx#context gives this host's): text, or the JSON form with {json: true}.
 */
function context(policy, options = {}) {
  const text = call(native.context, policyText(policy), options.cwd, !!options.json);
  return options.json ? json(text) : text;
}
/** Was a failed command likely stopped by the sandbox? Advice, never a security decision. */
function classify(failure) {
  const stderr = failure.stderr === undefined ? '' : failure.stderr;
  return json(call(native.classify, failure.exitCode, failure.signal || 0, stderr,
                   failure.backend === undefined ? null : failure.backend));
}

// ---- run and spawn: the options, checked here so that a mistake names the option -------------

function invalid(message) { return new SbxError(message, ErrorKind.INVALID_INPUT); }

const COMMON_OPTIONS = ['cwd', 'env', 'stdin', 'input', 'stdout', 'stderr', 'timeoutMs', 'signal',
                        'preference', 'allowUnsandboxed', 'captureStderr'];
// An unknown option is refused: a misspelt `timeout` must not run without a time-out.
const RUN_OPTIONS = new Set([...COMMON_OPTIONS, 'maxOutputBytes', 'encoding']);
const SPAWN_OPTIONS = new Set(COMMON_OPTIONS);
const CONTEXT_OPTIONS = new Set(['cwd', 'json', 'preference', 'anyBackend']);
const STREAM_MODES = "'pipe', 'inherit' or 'ignore'";

function checkOptions(options, known, call) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalid(`${call}: options must be an object`);
  }
  for (const key of Object.keys(options)) {
    if (!known.has(key) && options[key] !== undefined) {
      throw invalid(`${call}: unknown option '${key}'; the options are: ${[...known].join(', ')}`);
    }
  }
}

// Bytes for the command's stdin (sbx_run_start copies them): a string as UTF-8, a Buffer or any
// Uint8Array as it is.
function stdinBytes(value, name) {
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw invalid(`${name} must be a string or a Buffer (the command's stdin)`);
}

// stdin: 'inherit' (this process's), 'ignore' (/dev/null), 'pipe' (spawn: child.stdin), or the
// data itself (a string that is not one of those names, a Buffer); `input` is always data.
function stdinMode(options, streaming) {
  if (options.input !== undefined) {
    if (options.stdin !== undefined) throw invalid("give stdin or input, not both");
    return { mode: native.STDIO_DATA, data: stdinBytes(options.input, 'input') };
  }
  const stdin = options.stdin;
  if (stdin === undefined) return { mode: streaming ? native.STDIO_PIPE : native.STDIO_NULL };
  if (stdin === 'inherit') return { mode: native.STDIO_INHERIT };
  if (stdin === 'ignore') return { mode: native.STDIO_NULL };
  if (stdin === 'pipe') {
    if (streaming) return { mode: native.STDIO_PIPE };
    throw invalid("run(): stdin 'pipe' is spawn()'s; give run() the data (a string or Buffer)");
  }
  return { mode: native.STDIO_DATA, data: stdinBytes(stdin, 'stdin') };
}

// stdout, stderr: 'pipe' (run: captured with the cap; spawn: child.stdout), 'inherit', 'ignore'.
function outputMode(value, name, streaming) {
  if (value === undefined || value === 'pipe') {
    return streaming ? native.STDIO_PIPE : native.STDIO_CAPTURE;
  }
  if (value === 'inherit') return native.STDIO_INHERIT;
  if (value === 'ignore') return native.STDIO_NULL;
  throw invalid(`${name} must be ${STREAM_MODES}, not ${JSON.stringify(value)}`);
}

// env {NAME: value}: a string sets NAME for this call, null or undefined removes it; the policy's
// environment rules apply afterwards and win (a secret it scrubs stays scrubbed).
function envLists(env) {
  if (env === undefined || env === null) return [undefined, undefined];
  if (typeof env !== 'object' || Array.isArray(env)) {
    throw invalid('env must be an object {NAME: string | null}');
  }
  const set = [];
  const unset = [];
  for (const [name, value] of Object.entries(env)) {
    if (name === '' || name.includes('=') || name.includes('\0')) {
      throw invalid(`env: ${JSON.stringify(name)} is not a variable name (empty, or holds '=' or NUL)`);
    }
    if (value === null || value === undefined) {
      unset.push(name);
    } else if (typeof value === 'string') {
      if (value.includes('\0')) {
        throw invalid(`env.${name} contains a NUL character; libsbx would cut it there, so it is refused`);
      }
      set.push(`${name}=${value}`);
    } else {
      throw invalid(`env.${name} must be a string (to set it) or null (to remove it)`);
    }
  }
  return [set, unset];
}

function integerOption(value, name, fallback, least) {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < least) {
    throw invalid(`${name} must be an integer >= ${least}, not ${String(value)}`);
  }
  return value;
}

function checkSignal(signal) {
  if (signal === undefined) return;
  if (signal === null || typeof signal !== 'object' || typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function') {
    throw invalid('signal must be an AbortSignal');
  }
}

// Starts the run (sbx_run_start) and ties the AbortSignal to sbx_run_cancel: {run, modes}, the
// native run object (its `done` settles when the run has ended) and the three sbx_stdio modes.
function startRun(handle, policy, argv, options, streaming) {
  const modes = [stdinMode(options, streaming), outputMode(options.stdout, 'stdout', streaming),
                 outputMode(options.stderr, 'stderr', streaming)];
  const [set, unset] = envLists(options.env);
  const timeoutMs = integerOption(options.timeoutMs, 'timeoutMs', 0, 0);
  const maxBytes = integerOption(options.maxOutputBytes, 'maxOutputBytes', 0, 1);  // 0: libsbx's 1 MiB
  checkSignal(options.signal);
  let flags = 0;
  if (options.allowUnsandboxed) flags |= native.EXEC_ALLOW_UNSANDBOXED;
  // A captured stderr feeds the denial classification (report.denial) at no cost.
  if (options.captureStderr || modes[2] === native.STDIO_CAPTURE) flags |= native.EXEC_CAPTURE_STDERR;
  const stdio = [modes[0].mode, modes[1], modes[2]];
  const run = call(native.runStart, handle, policyText(policy), options.cwd, argv,
                   options.preference === undefined ? 'auto' : options.preference, flags, stdio,
                   maxBytes, modes[0].data, set, unset, timeoutMs);
  const signal = options.signal;
  if (signal !== undefined) {
    if (signal.aborted) {
      native.runCancel(run);  // a run cancelled before its command starts never starts it
    } else {
      const onAbort = () => native.runCancel(run);
      signal.addEventListener('abort', onAbort, { once: true });
      const forget = () => signal.removeEventListener('abort', onAbort);
      run.done.then(forget, forget);
    }
  }
  return { run, modes: stdio };
}

const exitOf = (report) => ({
  exitCode: report.exit ? report.exit.code : null,
  signal: report.exit ? report.exit.signal : null,
});

// The caller's end of a pipe as a stream: a net.Socket over it (libuv polls it; no thread of
// the pool is held while the command is silent).
function pipeStream(run, which) {
  const fd = native.runTakeFd(run, which);
  if (fd < 0) throw new SbxError(`libsbx handed over no pipe for stream ${which}`);
  try {
    return new net.Socket({ fd, readable: which !== 0, writable: which === 0 });
  } catch (error) {
    fs.closeSync(fd);  // taken, so libsbx no longer closes it; the socket that would has failed
    throw error;
  }
}

/**
 * A command started by Sbx.spawn: its pipes as streams, kill() and the promises of its end.
 * Both promises reject with the same SbxError when libsbx fails the run (e.g. the command was
 * not found); neither is reported unhandled when only the other is awaited.
 */
class SbxChild {
  constructor(run, modes) {
    this._run = run;
    try {
      this.stdin = modes[0] === native.STDIO_PIPE ? pipeStream(run, 0) : null;
      this.stdout = modes[1] === native.STDIO_PIPE ? pipeStream(run, 1) : null;
      this.stderr = modes[2] === native.STDIO_PIPE ? pipeStream(run, 2) : null;
    } catch (error) {
      native.runCancel(run);
      throw error;
    }
    if (this.stdin) {
      // A command that stops reading (or ends) makes a write fail with EPIPE: what a shell's
      // pipe does; it is no error of this process unless the caller listens for one.
      this.stdin.on('error', function onError(error) {
        if (error.code !== 'EPIPE' && this.listenerCount('error') === 1) throw error;
      });
    }
    this.report = run.done.then((out) => json(out.report), (error) => { throw wrap(error); });
    this.exited = this.report.then(exitOf);
    this.report.catch(() => {});
    this.exited.catch(() => {});
  }
  /**
   * Ends the run, whole (sbx_run_cancel: the sandbox's every process); the report then says
   * "cancelled". False when the run had already ended.
   */
  kill() { return native.runCancel(this._run); }
}

/**
 * A manager: the trusted plugins next to libsbx, their probe answers kept warm. Commands run
 * side by side on one Sbx (libsbx plans them one at a time).
 */
class Sbx {
  constructor(options = {}) {
    this._handle = call(native.managerNew, options.backends, !!options.settings || options.settingsJson !== undefined,
                        options.settingsCwd, policyText(options.settingsJson));
  }
  /** Frees the manager (once the execs and runs still going on have ended). Later calls throw an
   * SbxError. */
  close() {
    call(native.managerClose, this._handle);
  }
  version() { return native.version(); }
  /** Loaded and rejected plugins (probed afresh unless probe is false). */
  backends(options = {}) {
    return json(call(native.backends, this._handle, options.probe !== false));
  }
  /** Forgets the kept probe answers and probes again. */
  reprobe() { call(native.managerReprobe, this._handle); }
  shouldSandbox(policy, preference = 'auto') { return shouldSandbox(policy, preference); }
  /** Both questions, as `sbx explain --json`. */
  explain(policy, options = {}) {
    return json(call(native.explain, this._handle, policyText(policy), options.cwd,
                     options.preference === undefined ? 'auto' : options.preference));
  }
  /** The plan that would run argv (nothing runs). */
  transform(policy, argv, options = {}) {
    return json(call(native.transform, this._handle, policyText(policy), options.cwd, argv,
                     options.preference === undefined ? 'auto' : options.preference));
  }
  /**
   * Runs argv under the policy on a worker thread and resolves with the report; the event loop
   * keeps running meanwhile. A refusal (no sandbox available) resolves with report.error set.
   */
  async exec(policy, argv, options = {}) {
    let flags = 0;
    if (options.allowUnsandboxed) flags |= native.EXEC_ALLOW_UNSANDBOXED;
    if (options.captureStderr) flags |= native.EXEC_CAPTURE_STDERR;
    let text;
    try {
      text = await native.exec(this._handle, policyText(policy), options.cwd, argv,
                               options.preference === undefined ? 'auto' : options.preference,
                               flags);
    } catch (error) {
      throw wrap(error);
    }
    return json(text);
  }
  /**
   * Runs argv under the policy and resolves when it has ended: {exitCode, signal, stdout,
   * stderr, truncated, report}. stdout and stderr are captured (Buffers, strings with
   * `encoding`), each up to maxOutputBytes; a time-out or an abort ends the whole run and
   * resolves with report.error_kind 'timed_out' / 'cancelled'. Rejects with SbxError.
   */
  async run(policy, argv, options = {}) {
    checkOptions(options, RUN_OPTIONS, 'run()');
    const encoding = options.encoding;
    if (encoding !== undefined && encoding !== 'buffer' && !Buffer.isEncoding(encoding)) {
      throw invalid(`encoding ${JSON.stringify(encoding)} is not a Buffer encoding`);
    }
    const { run } = startRun(this._handle, policy, argv, options, false);
    let out;
    try {
      out = await run.done;
    } catch (error) {
      throw wrap(error);
    }
    const report = json(out.report);
    const text = (bytes) =>
      bytes === null || encoding === undefined || encoding === 'buffer' ? bytes : bytes.toString(encoding);
    const truncated = [report.stdout_capture, report.stderr_capture].some((c) => !!c && c.truncated);
    return { ...exitOf(report), stdout: text(out.stdout), stderr: text(out.stderr), truncated, report };
  }
  /**
   * Starts argv under the policy and returns at once an SbxChild: stdin, stdout and stderr as
   * streams ('pipe', the default), kill(), and the promises `exited` and `report`. Throws
   * SbxError for a bad argument or policy.
   */
  spawn(policy, argv, options = {}) {
    checkOptions(options, SPAWN_OPTIONS, 'spawn()');
    const { run, modes } = startRun(this._handle, policy, argv, options, true);
    return new SbxChild(run, modes);
  }
  widen(base, extra) { return widen(base, extra); }
  wrap(policy, argv, options = {}) { return wrapCommand(policy, argv, options); }
  approve(requested, granted) { return approve(requested, granted); }
  /**
   * The model-facing description for a run on this manager: whether it is sandboxed, by which
   * backend here and only that backend's limits ({anyBackend: true}: every backend labelled,
   * nothing probed, as the module-level context()).
   */
  context(policy, options = {}) {
    checkOptions(options, CONTEXT_OPTIONS, 'context()');
    if (options.anyBackend) return context(policy, options);
    const text = call(native.managerContext, this._handle, policyText(policy), options.cwd,
                      options.preference === undefined ? 'auto' : options.preference,
                      !!options.json);
    return options.json ? json(text) : text;
  }
  classify(failure) { return classify(failure); }
}

module.exports = {
  Sbx,
  SbxChild,
  SbxError,
  ErrorKind,
  version,
  shouldSandbox,
  widen,
  wrap: wrapCommand,
  approve,
  context,
  classify,
};
