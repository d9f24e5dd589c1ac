/* The C API of libsbx: everything an agent written in another language needs (Python through
 * ctypes, Go through cgo, Rust through bindgen, ...).
 *
 * Conventions (all functions):
 *  - Handles are opaque; create with sbx_*_new, release with the matching sbx_*_free.
 *  - Structured values cross as UTF-8 JSON text. A returned char* is owned by the caller and
 *    must be released with sbx_string_free(). Policies are JSON in either form (full or
 *    short; README.md "Policies", core/src/policy/README.md).
 *  - On failure a function returns NULL (or a negative int) and, when `error` is not NULL,
 *    stores a new sbx_error whose message says what was wrong and what to do; release it with
 *    sbx_error_free(). On success *error is left untouched.
 *  - No C++ exception ever crosses this boundary; nothing here calls exit() or abort().
 *  - Every string is NUL-terminated UTF-8 except sbx_classify_failure's `stderr_text`, which
 *    takes a length and may hold NUL bytes. A binding whose strings may hold U+0000 must refuse
 *    such a string rather than pass it (C would end it at the NUL: a checked argv element
 *    "echo x\0; rm ..." would run as "echo x"); the Python and Node bindings do. In JSON
 *    (policies, settings) a "\u0000" in any string or key is an error naming its JSON pointer.
 *  - Functions may be called from any thread. Calls on one manager are serialized (backends
 *    are driven from one thread at a time), so a running sbx_exec() blocks other calls on the
 *    same manager: create one manager per thread to run commands in parallel. Only one
 *    sbx_exec() with SBX_EXEC_CAPTURE_STDERR may run at a time in a process (it temporarily
 *    redirects fd 2; a second one fails with an error rather than waiting).
 */
#ifndef SBX_SBX_H_
#define SBX_SBX_H_

#include <stddef.h>

#if defined(_WIN32) && defined(SBX_BUILDING_LIBSBX)
#define SBX_API __declspec(dllexport)
#elif defined(_WIN32)
#define SBX_API __declspec(dllimport)
#else
#define SBX_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_manager sbx_manager;
typedef struct sbx_error sbx_error;

/* The error's message (valid until sbx_error_free). */
SBX_API const char* sbx_error_message(const sbx_error* error);
/* What sort of failure an error is: the same kinds as the CLI's --json "error_kind" and the
 * bindings' SbxError subclasses. Values are stable; new kinds may be appended, so treat an
 * unknown value like SBX_ERROR_HOST_FAILURE. */
typedef enum sbx_error_kind_t {
  SBX_ERROR_INVALID_INPUT = 0,   /* the caller's input is wrong: a malformed policy, NULL, ... */
  SBX_ERROR_REFUSED = 1,         /* a lock, setting or policy rule forbids it */
  SBX_ERROR_UNAVAILABLE = 2,     /* no backend on this host can enforce what was asked */
  SBX_ERROR_BACKEND_FAILURE = 3, /* a backend plugin failed to plan or run the sandbox */
  SBX_ERROR_HOST_FAILURE = 4,    /* the host failed: a file, a syscall, out of memory */
  SBX_ERROR_TIMED_OUT = 5,       /* a deadline passed */
  SBX_ERROR_CANCELLED = 6        /* the caller cancelled */
} sbx_error_kind_t;
/* The error's kind; SBX_ERROR_HOST_FAILURE for NULL. */
SBX_API sbx_error_kind_t sbx_error_kind(const sbx_error* error);
SBX_API void sbx_error_free(sbx_error* error);
/* Releases a string returned by this API. NULL is allowed. */
SBX_API void sbx_string_free(char* text);
/* The libsbx version, e.g. "0.1.0" (static storage). */
SBX_API const char* sbx_version(void);

/* A manager over the plugins in the trusted directory next to libsbx, in the preference order
 * `backends` (comma-separated names, e.g. "bwrap,landlock"; NULL or "" = every loaded plugin,
 * default order). Plugins that fail the trust checks are listed by sbx_backends_json. */
SBX_API sbx_manager* sbx_manager_new(const char* backends, sbx_error** error);
/* A manager that also uses the settings scopes, exactly as the `sbx` command does (README.md,
 * "Settings"): the administrator's /etc/sbx/managed.json (checked like the plugin directories;
 * an unsafe file is an error) with its locks, the user settings ($XDG_CONFIG_HOME/sbx/
 * settings.json, default ~/.config/sbx/settings.json) and, when the user trusts the project, the
 * project's .sbx/settings.json found from `cwd` upward (NULL = the current directory), all read
 * once, here. The project is searched from the real path of `cwd`; `cwd` as given (symlinks
 * kept; without it, PWD when it names the current directory) is the logical path, and one that
 * lies inside a trusted project the real path leaves is an error, as with `sbx --cwd`: pass the
 * cwd string you mean, not a resolved one. These settings hold for that directory only:
 * sbx_explain, sbx_transform and sbx_exec on such a manager refuse (a C error, nothing runs) a
 * `cwd` that is neither the one given here (lexically normalised) nor its real path (NULL means
 * the current directory then); make one manager per working directory. `settings_json` (NULL =
 * none) is the caller's own scope, merged last: the keys of a settings file except "locks" and
 * "trusted_projects".
 * On such a manager, sbx_explain, sbx_transform and sbx_exec take the settings' policy when
 * `policy_json` is NULL and the settings' sandbox preference when `preference` is NULL; a policy,
 * preference or SBX_EXEC_ALLOW_UNSANDBOXED that a lock forbids is a C error naming the lock;
 * excluded commands run without a sandbox as with `sbx exec`, with a reset environment
 * ("excluded_by" and "environment_dropped" in the report);
 * sbx_explain's "settings" object says which scope decided. Release with sbx_manager_free. */
SBX_API sbx_manager* sbx_manager_new_with_settings(const char* backends, const char* cwd,
                                                   const char* settings_json, sbx_error** error);
/* Frees a manager. Calls already running on it (in other threads) finish first: this waits
 * until the last has returned, however long its command runs. Once it has begun, a new call
 * on the manager fails with an error ("not a live manager") instead of using it, and a second
 * sbx_manager_free of it returns at once. NULL is allowed. Using a handle after this has
 * returned is still the caller's bug: libsbx detects it (an error, never freed memory) only as
 * long as no new manager has been given the same address. Never call it from a thread that is
 * itself inside a call on the same manager (there are no callbacks, so only a signal handler
 * could). */
SBX_API void sbx_manager_free(sbx_manager* manager);

/* A manager is warm: the first sbx_explain, sbx_transform or sbx_exec that needs a backend's
 * probe keeps its answer, and later calls on the same manager reuse it, so a run costs only the
 * transform and the spawn. An answer is kept as it was (an unavailable backend stays passed over)
 * until this call, which forgets every kept answer and probes the manager's backends again now
 * (call it after installing bwrap or changing what the host allows). sbx_backends_json with
 * `probe` always probes afresh and keeps nothing. 0 on success, -1 with `error` set. */
SBX_API int sbx_manager_reprobe(sbx_manager* manager, sbx_error** error);

/* The loaded and rejected plugins: {"backends":[...],"rejected":[...]}, as `sbx backends
 * --json` (with probe reports when `probe` is non-zero).
 * Every probe (here, in explain and in exec) runs in a child forked from the calling process,
 * with a 10 s deadline (core/cli/README.md). In a process with other threads, the child has
 * only the calling thread: a probe that needs a lock another thread held at the fork counts as
 * not answering. */
SBX_API char* sbx_backends_json(sbx_manager* manager, int probe, sbx_error** error);

/* Question 1 (pure): {"sandbox":bool,"reason":string}. `preference`: "auto" (NULL), "require"
 * or "forbid". Error for forbid on a policy with deny entries. */
SBX_API char* sbx_should_sandbox(const char* policy_json, const char* preference,
                                 sbx_error** error);

/* Both questions, as `sbx explain --json`. `cwd`: the working directory the policy is resolved
 * against (NULL = the current one). */
SBX_API char* sbx_explain(sbx_manager* manager, const char* policy_json, const char* cwd,
                          const char* preference, sbx_error** error);

/* The plan that would run `argv` (NULL-terminated; argv[0] is looked up in PATH like a shell):
 * {"backend","argv","env","cwd","notes"}, backend null when it would run unsandboxed. Error
 * when a sandbox is wanted but none is available. In network mode proxy the plan is made for
 * sbx's own proxy, started for the call and stopped before it returns (the credential shows as
 * "***"), as `sbx exec --dry-run` does. */
SBX_API char* sbx_transform(sbx_manager* manager, const char* policy_json, const char* cwd,
                            const char* const* argv, const char* preference, sbx_error** error);

enum {
  /* Run without a sandbox when one is wanted but none is available (never for a policy with
   * deny entries). */
  SBX_EXEC_ALLOW_UNSANDBOXED = 1u << 0,
  /* Copy the command's stderr through (it still reaches this process's stderr) and keep the
   * last 64 KiB for the denial classification; the command's stderr is then a pipe. */
  SBX_EXEC_CAPTURE_STDERR = 1u << 1,
};

/* Runs `argv` under the policy, with this process's environment, stdin and stdout, and waits.
 * Returns the report of `sbx exec --json` plus "denial" (sbx_classify_failure's object, null
 * when the command did not run), "stderr_tail" (string with SBX_EXEC_CAPTURE_STDERR, else
 * null) and "network_refusals" (as in `sbx exec --json`: what sbx's proxy refused, each with
 * "kind":"proxy", then what the backend's sandbox refused: {"kind":"unix","path"} for a host
 * unix socket not in network.unix_sockets, {"kind":"ip","address"} for an address with no
 * route out of the sandbox; [] when nothing was), with "network_refusals_total" counting all. In
 * network mode proxy sbx starts its own filtering proxy for the run, exactly as `sbx exec` does,
 * and stops it when the command has exited; a policy that names network.proxy_ports itself is
 * refused (a C error; the command does not run). A refusal (a sandbox is wanted but none is
 * available) is a report with "error" set and "exit" null, not a C error; NULL is returned only for
 * bad arguments, a plan the backend refuses, or internal failures. */
SBX_API char* sbx_exec(sbx_manager* manager, const char* policy_json, const char* cwd,
                       const char* const* argv, const char* preference, unsigned flags,
                       sbx_error** error);

/* The permission algebra (sbx/core/permissions.hpp). widen: the widened policy (full
 * form). approve: {"recorded":bool,"policy":object|null,"dropped":[string]}; recorded false
 * means "nothing recorded" (keep earlier grants; it is not a refusal). */
SBX_API char* sbx_policy_widen(const char* base_json, const char* extra_json, sbx_error** error);
SBX_API char* sbx_policy_approve(const char* requested_json, const char* granted_json,
                                 sbx_error** error);

/* The model-facing description of the policy, resolved against `cwd` (NULL = current): plain
 * text when `as_json` is 0, else the JSON form of `sbx context --json`. */
SBX_API char* sbx_context(const char* policy_json, const char* cwd, int as_json, sbx_error** error);

/* Was a failed command likely denied by the sandbox? `backend`: the backend it ran under (NULL
 * or "none" = no sandbox); `stderr_text` may hold NUL bytes (length `stderr_len`).
 * {"likely_sandbox_denial","kind","reason","evidence"}. */
SBX_API char* sbx_classify_failure(int exit_code, int signal, const char* stderr_text,
                                   size_t stderr_len, const char* backend, sbx_error** error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SBX_SBX_H_ */
