'use strict';
// SbxError and its kinds: what index.js exports and what lib/native.js throws.

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

// sbx_error_kind_t's values (sbx/sbx.h, stable; new ones may be appended) by their names.
const KIND_BY_CODE = [
  ErrorKind.INVALID_INPUT, ErrorKind.REFUSED, ErrorKind.UNAVAILABLE, ErrorKind.BACKEND_FAILURE,
  ErrorKind.HOST_FAILURE, ErrorKind.TIMED_OUT, ErrorKind.CANCELLED,
];
/** The name of an sbx_error_kind_t; a kind newer than this binding reads as host_failure. */
function kindName(code) {
  return KIND_BY_CODE[code] || ErrorKind.HOST_FAILURE;
}

module.exports = { ErrorKind, SbxError, kindName };
