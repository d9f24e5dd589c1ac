'use strict';
// sbx for Node: the `Sbx` class and the pure functions over libsbx's C API (sbx/sbx.h), through
// the Node-API addon sbx.node (src/sbx_node.cpp). Types: index.d.ts. README.md has an example.
const path = require('path');

function loadAddon() {
  const candidates = [
    process.env.SBX_NODE_ADDON,                        // an explicit build (sbx's own tests)
    path.join(__dirname, 'build', 'sbx.node'),         // `npm install` (CMake, package.json)
    path.join(__dirname, 'build', 'Release', 'sbx.node'),
  ].filter(Boolean);
  const failures = [];
  for (const file of candidates) {
    try {
      return require(file);
    } catch (error) {
      failures.push(`${file}: ${error.message}`);
    }
  }
  const error = new Error(
      `sbx: cannot load the native addon sbx.node (build it with cmake, ` +
      `see README.md; libsbx must be installed):\n  ` + failures.join('\n  '));
  error.code = 'SBX_ERROR';
  error.kind = 'host_failure';
  throw error;
}

const native = loadAddon();

/**
 * What sort of failure an SbxError is: the same kinds as the C API (sbx_error_kind), the CLI's
 * --json "error_kind" and the Python binding.
 */
const ErrorKind = Object.freeze({
  INVALID_INPUT: 'invalid_input',      // the caller's input is wrong (a malformed policy, bad argv)
  REFUSED: 'refused',                  // a lock, setting or policy rule forbids it
  UNAVAILABLE: 'unavailable',          // no backend on this host can enforce what was asked
  BACKEND_FAILURE: 'backend_failure',  // a backend plugin failed to plan or run the sandbox
  HOST_FAILURE: 'host_failure',        // the host failed: a file, a syscall, a missing library
  TIMED_OUT: 'timed_out',              // a deadline passed
  CANCELLED: 'cancelled',              // the caller cancelled
});
const KINDS = new Set(Object.values(ErrorKind));

/**
 * An error reported by libsbx (or a bad argument to it): the message says what was wrong and
 * what to do; `kind` says what sort of failure it is (ErrorKind).
 */
class SbxError extends Error {
  constructor(message, kind = ErrorKind.HOST_FAILURE) {
    super(message);
    this.name = 'SbxError';
    this.code = 'SBX_ERROR';
    this.kind = KINDS.has(kind) ? kind : ErrorKind.HOST_FAILURE;
  }
}

// A native error becomes an SbxError with its kind; anything else is passed on.
function wrap(error) {
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
/** A policy with every access of both (never lifts a deny). */
function widen(base, extra) {
  return json(call(native.widen, policyText(base), policyText(extra)));
}
/** What a person granted of a request (intersection); recorded false = nothing recorded. */
function approve(requested, granted) {
  return json(call(native.approve, policyText(requested), policyText(granted)));
}
/** The model-facing description of the sandbox: text, or the JSON form with {json: true}. */
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

/**
 * A manager: the trusted plugins next to libsbx, their probe answers kept warm. Calls on one
 * Sbx are serialized by libsbx; create several to run commands in parallel.
 */
class Sbx {
  constructor(options = {}) {
    this._handle = call(native.managerNew, options.backends, !!options.settings || options.settingsJson !== undefined,
                        options.settingsCwd, policyText(options.settingsJson));
  }
  /** Frees the manager (after the execs still running). Later calls throw an SbxError. */
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
  widen(base, extra) { return widen(base, extra); }
  approve(requested, granted) { return approve(requested, granted); }
  context(policy, options) { return context(policy, options); }
  classify(failure) { return classify(failure); }
}

module.exports = {
  Sbx,
  SbxError,
  ErrorKind,
  version,
  shouldSandbox,
  widen,
  approve,
  context,
  classify,
};
