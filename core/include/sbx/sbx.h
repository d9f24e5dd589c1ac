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
 *  - Functions may be called from any thread. On one manager, the backends' probes and plans
 *    are made one call at a time (sbx_explain, sbx_transform, and the planning step of each run
 *    wait for one another), while commands run side by side: any number of sbx_exec() and
 *    sbx_run_start() runs may go on at once on one manager, from any threads. Nothing of a run
 *    touches this process's own descriptors 0-2 (SBX_EXEC_CAPTURE_STDERR included).
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
 * default order). Plugins that fail the trust checks are listed by sbx_backends_json. More
 * plugin directories: sbx_manager_new_with_options. */
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
 * none) is the caller's own scope, merged last: the keys of a settings file except "locks",
 * "trusted_projects" and "backends". The settings' "backends" apply: their order when `backends`
 * is NULL or "", and their plugin directories (sbx_manager_options).
 * On such a manager, sbx_explain, sbx_transform and sbx_exec take the settings' policy when
 * `policy_json` is NULL and the settings' sandbox preference when `preference` is NULL; a policy,
 * preference or SBX_EXEC_ALLOW_UNSANDBOXED that a lock forbids is a C error naming the lock;
 * excluded commands run without a sandbox as with `sbx exec`, with a reset environment
 * ("excluded_by" and "environment_dropped" in the report);
 * sbx_explain's "settings" object says which scope decided. Release with sbx_manager_free. */
SBX_API sbx_manager* sbx_manager_new_with_settings(const char* backends, const char* cwd,
                                                   const char* settings_json, sbx_error** error);
/* A manager's options, for sbx_manager_new_with_options. Versioned by size like
 * sbx_run_options: set struct_size to sizeof(sbx_manager_options) and zero what you do not set. */
typedef struct sbx_manager_options {
  size_t struct_size;
  /* As sbx_manager_new's `backends`: preference order, comma-separated; NULL or "" = the
   * settings' order (with use_settings), else every loaded plugin in the default order. */
  const char* backends;
  /* Extra directories to load backend plugins from, after the install's own (NULL-terminated;
   * NULL for none), as `sbx --plugin-dir`: each must be absolute, and goes through the same
   * trusted loader (the directory and every directory above it owned by root or by the owner of
   * libsbx and not writable by group or others; each plugin file likewise). A directory or
   * plugin that fails a check is not an error: sbx_backends_json lists it under "rejected" with
   * the reason, and the other plugins load. */
  const char* const* plugin_dirs;
  /* Non-zero: read the settings scopes as sbx_manager_new_with_settings does, with `cwd` and
   * `settings_json` as there; the settings' "backends" (order, plugin directories) then apply,
   * and a `backends` or `plugin_dirs` that the administrator's locks forbid
   * (/locks/backend_order, /locks/plugin_dirs) is an error naming the lock. */
  int use_settings;
  const char* cwd;
  const char* settings_json;
} sbx_manager_options;

/* The smallest struct_size accepted: this first version of sbx_manager_options. */
#define SBX_MANAGER_OPTIONS_MIN_SIZE \
  (offsetof(sbx_manager_options, settings_json) + sizeof(const char*))

/* A manager made from `options` (see sbx_manager_options). sbx_manager_new(b) is
 * {sizeof o, b}; sbx_manager_new_with_settings(b, cwd, json) is {sizeof o, b, NULL, 1, cwd, json}.
 * Release with sbx_manager_free. */
SBX_API sbx_manager* sbx_manager_new_with_options(const sbx_manager_options* options,
                                                  sbx_error** error);

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
  /* Copy the command's stderr through (it still reaches this process's stderr, or the
   * descriptor given with SBX_STDIO_FD) and keep the last 64 KiB for the denial classification
   * ("stderr_tail"); the command's stderr is then a pipe. With stderr SBX_STDIO_CAPTURE the tail
   * is the end of what was captured; with SBX_STDIO_NULL or SBX_STDIO_PIPE there is none. */
  SBX_EXEC_CAPTURE_STDERR = 1u << 1,
  /* Pass the signals this process receives from other processes (SIGINT, SIGTERM, SIGHUP,
   * SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH; SIGCONT too where no sandbox runs) on to the command
   * while it runs, as `sbx exec` does for the program that started it: for a process that is
   * only a wrapper around the command. Without it (the default) libsbx leaves this process's
   * signals alone during a run: it installs no handler, changes no disposition and takes no
   * signal from a signalfd, so a Ctrl-C or SIGTERM reaches this process's own handler (or its
   * default action) exactly as without a run; end a run with sbx_run_cancel or a time-out. What
   * a terminal sends to its foreground process group reaches the command as it reaches any child
   * this process starts itself: directly, where the command stays in this process's group (no
   * sandbox, Landlock), never under bwrap (the sandbox is a session of its own). A libsbx older
   * than this flag ignores it and forwards nothing. */
  SBX_EXEC_FORWARD_SIGNALS = 1u << 2,
};

/* Runs `argv` under the policy, with this process's environment, stdin and stdout, and waits
 * (sbx_run_start and sbx_run_wait with this process's stdio, on the calling thread).
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
 * bad arguments, a plan the backend refuses, or internal failures. This process's signals stay
 * its own (SBX_EXEC_FORWARD_SIGNALS); under Landlock every signal is blocked on the calling
 * thread while the command runs (the launcher shares its memory), so a handler then runs on
 * another thread of this process, or once sbx_exec has returned. */
SBX_API char* sbx_exec(sbx_manager* manager, const char* policy_json, const char* cwd,
                       const char* const* argv, const char* preference, unsigned flags,
                       sbx_error** error);

/* ---- Runs: stdio, environment, time-out, cancel ----
 *
 * sbx_run_start plans and starts one command under a policy on a thread of libsbx and returns
 * a handle at once; the caller then streams the command's pipes, cancels the run (from any
 * thread), and waits for its report:
 *
 *   sbx_run_options o = {sizeof o};
 *   o.policy_json = policy; o.argv = argv;
 *   o.stdio[1].mode = SBX_STDIO_CAPTURE; o.stdio[1].max_bytes = 1 << 20;
 *   o.timeout_ms = 30000;
 *   sbx_run* run = sbx_run_start(manager, &o, &error);
 *   char* report = sbx_run_wait(run, &error);             (JSON, as sbx_exec's)
 *   size_t n; const char* out = sbx_run_output(run, 1, &n);
 *   sbx_string_free(report); sbx_run_free(run);
 *
 * Each stream (stdio[0] stdin, [1] stdout, [2] stderr) is one of the modes below. Whatever mode,
 * the command gets the descriptor inheritable, whatever flags it has in this process (Node marks
 * its own 0-2 close-on-exec), and nothing of this process's 0-2 is changed. A descriptor that is
 * a socket must be a connected stream socket (a datagram, listening or unconnected socket could
 * reach the host's network from inside the sandbox: the run is refused). sbx's own messages about
 * the run ("command not found", a sandbox that failed to start) go to the command's stderr. */
typedef enum sbx_stdio_mode_t {
  SBX_STDIO_INHERIT = 0, /* this process's own 0, 1 or 2 (none when it is closed here) */
  SBX_STDIO_NULL = 1,    /* /dev/null */
  SBX_STDIO_FD = 2,      /* `fd`, a descriptor of the caller's: never closed by libsbx; keep it
                            open until sbx_run_wait has returned */
  SBX_STDIO_PIPE = 3,    /* a pipe whose other end the caller takes with sbx_run_take_fd and
                            writes (stdin: close it for end of file) or reads (stdout, stderr:
                            end of file once the run has ended) while the command runs */
  SBX_STDIO_CAPTURE = 4, /* stdout, stderr: read into memory, at most `max_bytes` of the start of
                            the stream; the rest is read and dropped, never kept (the report's
                            "stdout_capture"/"stderr_capture" say how much); sbx_run_output */
  SBX_STDIO_DATA = 5     /* stdin: the `length` bytes at `data` (copied by sbx_run_start), then
                            end of file; bytes the command does not read are dropped */
} sbx_stdio_mode_t;

/* SBX_STDIO_CAPTURE's cap when max_bytes is 0. */
#define SBX_CAPTURE_DEFAULT_MAX_BYTES (1024u * 1024u)

typedef struct sbx_stdio {
  int mode;         /* sbx_stdio_mode_t; 0 (a zeroed struct) is SBX_STDIO_INHERIT */
  int fd;           /* SBX_STDIO_FD */
  size_t max_bytes; /* SBX_STDIO_CAPTURE; 0: SBX_CAPTURE_DEFAULT_MAX_BYTES */
  const void* data; /* SBX_STDIO_DATA (NULL with length 0: empty) */
  size_t length;
} sbx_stdio;

/* One run's options. Versioned by size: set struct_size to sizeof(sbx_run_options) and zero
 * what you do not set; members added later are appended, and libsbx reads a member only when
 * struct_size covers it (so a caller built against this header keeps working). */
typedef struct sbx_run_options {
  size_t struct_size;
  const char* policy_json; /* as sbx_exec (NULL: the settings' policy, on a manager with them) */
  const char* cwd;         /* NULL: the current directory */
  const char* const* argv; /* NULL-terminated; argv[0] is looked up in PATH like a shell */
  const char* preference;  /* "auto" (NULL), "require", "forbid" */
  /* SBX_EXEC_ALLOW_UNSANDBOXED, SBX_EXEC_CAPTURE_STDERR, SBX_EXEC_FORWARD_SIGNALS */
  unsigned flags;
  sbx_stdio stdio[3]; /* stdin, stdout, stderr */
  /* The command's environment is this process's, minus the names in env_unset, with the
   * "NAME=VALUE" entries of env_set added (replacing one of the same name); both
   * NULL-terminated, NULL for none. The policy's environment rules (README.md, "Environment")
   * then apply to the result exactly as to an inherited variable, and they win: a name the
   * policy takes away (a secret, an excluded name, inherit none) is taken away however the
   * caller set it, and the policy's "set" replaces a caller's value. The policy (and the
   * administrator's locks behind it) decides what reaches the sandbox; a per-call argument may
   * narrow that, never widen it. An excluded command gets the reset environment, as in
   * sbx_exec. */
  const char* const* env_set;
  const char* const* env_unset;
  /* Ends the run this many milliseconds after sbx_run_start (0: never): the sandbox's whole
   * process tree, sbx's supervisor and proxy for the run; the report then has "error" set and
   * "error_kind":"timed_out", and "exit" as the command ended (null when it had not started). */
  unsigned long long timeout_ms;
} sbx_run_options;

/* The smallest struct_size accepted: this first version of sbx_run_options. */
#define SBX_RUN_OPTIONS_MIN_SIZE \
  (offsetof(sbx_run_options, timeout_ms) + sizeof(unsigned long long))

typedef struct sbx_run sbx_run;

/* Checks the options, reads the policy (through the manager's settings, as sbx_exec), makes the
 * pipes and starts the run; returns at once. NULL with `error` for bad options or policy (the
 * same errors as sbx_exec's); what goes wrong later (no backend, command not found) comes from
 * sbx_run_wait. The manager must stay alive while the run goes on (sbx_manager_free waits for
 * it). Release the handle with sbx_run_free. */
SBX_API sbx_run* sbx_run_start(sbx_manager* manager, const sbx_run_options* options,
                               sbx_error** error);
/* The caller's end of stream `which` (0, 1, 2) in mode SBX_STDIO_PIPE, handed over once: the
 * caller closes it (it is close-on-exec, and blocking). -1 for another mode, or when already
 * taken. An end not taken is closed by sbx_run_free. */
SBX_API int sbx_run_take_fd(sbx_run* run, int which);
/* Ends the run, whole (as the time-out does; "error_kind":"cancelled"): from any thread, at any
 * time, any number of times. A run whose command has not started never starts it; once the run
 * has ended (or timed out), nothing changes. 0, or -1 for NULL. */
SBX_API int sbx_run_cancel(sbx_run* run);
/* Waits until the run has ended and returns its report, the JSON of sbx_exec (plus
 * "stdout_capture" and "stderr_capture"); NULL with `error` where sbx_exec returns NULL.
 * Called again, it returns the same report (or error) again. */
SBX_API char* sbx_run_wait(sbx_run* run, sbx_error** error);
/* After sbx_run_wait: the bytes captured from stream `which` (1 stdout, 2 stderr) in mode
 * SBX_STDIO_CAPTURE, and their number in *length; valid until sbx_run_free. NULL (length 0)
 * before the run has ended or for a stream not captured. May hold NUL bytes. */
SBX_API const char* sbx_run_output(sbx_run* run, int which, size_t* length);
/* Frees the handle. A run still going on is cancelled and waited for first. NULL is allowed. */
SBX_API void sbx_run_free(sbx_run* run);

/* The permission algebra (sbx/core/permissions.hpp). widen: the widened policy (full
 * form). approve: {"recorded":bool,"policy":object|null,"dropped":[string]}; recorded false
 * means "nothing recorded" (keep earlier grants; it is not a refusal). */
SBX_API char* sbx_policy_widen(const char* base_json, const char* extra_json, sbx_error** error);
SBX_API char* sbx_policy_approve(const char* requested_json, const char* granted_json,
                                 sbx_error** error);

/* A command line that runs `argv` (NULL-terminated) through `sbx exec` of this install, for a
 * caller that spawns processes itself (sandbox-runtime's wrapWithSandbox model): JSON
 * {"argv":[...],"policy":"<the policy's JSON text>","policy_fd":3,"report_fd":4}. Spawn argv
 * with descriptor 3 readable, holding the policy text and closed after it (a pipe: no file a
 * sandboxed command could rewrite), and descriptor 4 writable: the run's JSON report (as
 * `sbx exec --json` writes it) arrives there when the run ends; the command's stdio is the
 * spawned process's own. `cwd` NULL: the spawned process's. sbx's run, its clean-up included,
 * happens in that process. Not on Windows (an error). */
SBX_API char* sbx_wrap(const char* policy_json, const char* cwd, const char* const* argv,
                       sbx_error** error);

/* The model-facing description of the policy, resolved against `cwd` (NULL = current): plain
 * text when `as_json` is 0, else the JSON form of `sbx context --any-backend --json`: nothing is
 * probed, so each backend's differences are labelled ("backend": null). */
SBX_API char* sbx_context(const char* policy_json, const char* cwd, int as_json, sbx_error** error);

/* The same for a run on `manager`, as `sbx context`: its settings and sandbox `preference`
 * (NULL = the settings' or auto) say whether the command is sandboxed at all, and its backends'
 * probes which one will run it here ("backend"), so only that backend's limits are described,
 * or why every run is refused ("no_backend_reason"). */
SBX_API char* sbx_manager_context(sbx_manager* manager, const char* policy_json, const char* cwd,
                                  const char* preference, int as_json, sbx_error** error);

/* Was a failed command likely denied by the sandbox? `backend`: the backend it ran under (NULL
 * or "none" = no sandbox); `stderr_text` may hold NUL bytes (length `stderr_len`).
 * {"likely_sandbox_denial","kind","reason","evidence"}. */
SBX_API char* sbx_classify_failure(int exit_code, int signal, const char* stderr_text,
                                   size_t stderr_len, const char* backend, sbx_error** error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SBX_SBX_H_ */
