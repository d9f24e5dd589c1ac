'use strict';
// libsbx's C API (core/include/sbx/sbx.h) declared for koffi, the FFI package whose npm package
// ships its native part prebuilt: installing this binding compiles nothing. Everything that
// mirrors the header is here, in one place: the constants, the two structs (a member added to
// sbx_run_options is one line below; libsbx reads a member only when struct_size covers it, so
// the binding's older struct stays valid) and every function's prototype. ctest node.abi
// compares the structs with the header's, compiled by the C compiler.
//
// How values cross: every string argument is a Buffer holding UTF-8 and a NUL that lib/native.js
// made after refusing a string that holds U+0000 itself (C would end it there); handles and
// returned strings are pointers (BigInt), a returned string is read, then sbx_string_free'd.
const { ErrorKind, SbxError } = require('./errors');

function loadKoffi() {
  try {
    return require('koffi');
  } catch (error) {
    throw new SbxError(
        `sbx: cannot load koffi, the FFI package this binding calls libsbx through: ` +
            `${error.message}; reinstall the package (npm install) on a platform koffi ships a ` +
            `binary for`,
        ErrorKind.HOST_FAILURE);
  }
}
const koffi = loadKoffi();

/**
 * libsbx's SONAME: the ABI these declarations match (0.x: a minor release may change it,
 * README.md "Packages"). The dynamic linker finds it as it finds any library (LD_LIBRARY_PATH,
 * then ld.so.cache and the default directories: ld.so(8)), as it found the DT_NEEDED entry of
 * the addon this binding replaces.
 */
const SONAME = 'libsbx.so.0.1';

/** The libsbx to load: $SBX_LIBRARY (a file), else the SONAME through the dynamic linker. */
function libraryName() {
  return process.env.SBX_LIBRARY || SONAME;
}

// sbx.h's enums and flags.
const constants = Object.freeze({
  EXEC_ALLOW_UNSANDBOXED: 1 << 0,
  EXEC_CAPTURE_STDERR: 1 << 1,
  STDIO_INHERIT: 0,
  STDIO_NULL: 1,
  STDIO_FD: 2,
  STDIO_PIPE: 3,
  STDIO_CAPTURE: 4,
  STDIO_DATA: 5,
});

// The structs, anonymous: a koffi type name is global to the koffi instance, which another
// copy of this package (or the application) may share. A `const char *` member takes a Buffer
// or null, a `const char **` one an array of them ending in null, `data` a Buffer.
const sbxStdio = koffi.struct({
  mode: 'int',           // sbx_stdio_mode_t
  fd: 'int',             // SBX_STDIO_FD
  max_bytes: 'size_t',   // SBX_STDIO_CAPTURE; 0: 1 MiB
  data: 'const void *',  // SBX_STDIO_DATA
  length: 'size_t',
});
const sbxRunOptions = koffi.struct({
  struct_size: 'size_t',
  policy_json: 'const char *',
  cwd: 'const char *',
  argv: 'const char **',
  preference: 'const char *',
  flags: 'unsigned int',
  stdio: koffi.array(sbxStdio, 3),
  env_set: 'const char **',
  env_unset: 'const char **',
  timeout_ms: 'unsigned long long',
});
const types = Object.freeze({ sbx_stdio: sbxStdio, sbx_run_options: sbxRunOptions });

// Every function, as sbx.h declares it. `const char *` arguments take a Buffer (UTF-8 with its
// NUL) or null; `_Out_ void **error` takes [null] and holds the sbx_error* afterwards.
const PROTOTYPES = [
  'const char *sbx_error_message(void *error)',
  'int sbx_error_kind(void *error)',
  'void sbx_error_free(void *error)',
  'void sbx_string_free(void *text)',
  'const char *sbx_version()',
  'void *sbx_manager_new(const char *backends, _Out_ void **error)',
  'void *sbx_manager_new_with_settings(const char *backends, const char *cwd, ' +
      'const char *settings_json, _Out_ void **error)',
  'void sbx_manager_free(void *manager)',
  'int sbx_manager_reprobe(void *manager, _Out_ void **error)',
  'void *sbx_backends_json(void *manager, int probe, _Out_ void **error)',
  'void *sbx_should_sandbox(const char *policy_json, const char *preference, _Out_ void **error)',
  'void *sbx_explain(void *manager, const char *policy_json, const char *cwd, ' +
      'const char *preference, _Out_ void **error)',
  'void *sbx_transform(void *manager, const char *policy_json, const char *cwd, ' +
      'const char **argv, const char *preference, _Out_ void **error)',
  'void *sbx_exec(void *manager, const char *policy_json, const char *cwd, const char **argv, ' +
      'const char *preference, unsigned int flags, _Out_ void **error)',
  'int sbx_run_take_fd(void *run, int which)',
  'int sbx_run_cancel(void *run)',
  'void *sbx_run_wait(void *run, _Out_ void **error)',
  'const void *sbx_run_output(void *run, int which, _Out_ size_t *length)',
  'void sbx_run_free(void *run)',
  'void *sbx_policy_widen(const char *base_json, const char *extra_json, _Out_ void **error)',
  'void *sbx_policy_approve(const char *requested_json, const char *granted_json, ' +
      '_Out_ void **error)',
  'void *sbx_wrap(const char *policy_json, const char *cwd, const char **argv, ' +
      '_Out_ void **error)',
  'void *sbx_context(const char *policy_json, const char *cwd, int as_json, _Out_ void **error)',
  'void *sbx_manager_context(void *manager, const char *policy_json, const char *cwd, ' +
      'const char *preference, int as_json, _Out_ void **error)',
  'void *sbx_classify_failure(int exit_code, int signal, const void *stderr_text, ' +
      'size_t stderr_len, const char *backend, _Out_ void **error)',
];

/**
 * Loads libsbx (`library`: a file or a SONAME) and declares its functions: an object of them by
 * C name. Throws SbxError (host_failure) naming the library when it cannot be loaded.
 */
function open(library) {
  let lib;
  try {
    lib = koffi.load(library);
  } catch (error) {
    throw new SbxError(
        `sbx: cannot load libsbx (${library}): ${error.message}; install sbx (the .deb, the ` +
            `tarball or cmake --install: the dynamic linker finds ${SONAME} through ld.so.cache ` +
            `or LD_LIBRARY_PATH), or set SBX_LIBRARY to the library file`,
        ErrorKind.HOST_FAILURE);
  }
  const functions = {};
  for (const prototype of PROTOTYPES) {
    const fn = lib.func(prototype);
    functions[/(sbx_\w+)\(/.exec(prototype)[1]] = fn;
  }
  functions.sbx_run_start = lib.func('sbx_run_start', 'void *', [
    'void *', koffi.pointer(sbxRunOptions), koffi.out(koffi.pointer('void *'))]);
  return functions;
}

/**
 * Blocks every signal in the calling thread (pthread_sigmask(3)): a process-directed signal
 * goes to a thread that does not block it (signal(7)), so SIGINT, SIGTERM or SIGCHLD meant for
 * Node's own handlers never lands in a thread that only waits inside libsbx (lib/waiter.js).
 * The C library comes from the process's global scope (dlopen(NULL)): glibc or musl alike.
 */
function blockSignals() {
  const libc = koffi.load(null);
  const sigfillset = libc.func('int sigfillset(void *set)');
  const pthreadSigmask = libc.func('int pthread_sigmask(int how, const void *set, void *old)');
  const set = Buffer.alloc(128);  // sigset_t: 1024 bits in glibc, fewer in musl
  const SIG_BLOCK = 0;            // asm-generic/signal-defs.h: each Linux arch koffi ships for
  if (sigfillset(set) !== 0 || pthreadSigmask(SIG_BLOCK, set, null) !== 0) {
    throw new SbxError('sbx: pthread_sigmask failed in the waiting thread');
  }
}

module.exports = { koffi, SONAME, libraryName, constants, types, open, blockSignals };
