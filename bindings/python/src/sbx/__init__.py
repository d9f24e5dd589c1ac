"""sbx for Python: run untrusted commands under a kernel-enforced policy.

A typed binding of libsbx's C API (sbx/sbx.h) through ctypes; it needs libsbx installed (the
.deb, `cmake --install`, or a path). Quick use::

    import sbx
    with sbx.Sbx() as s:                                   # finds libsbx, opens a manager
        report = s.exec({"version": 1, "preset": "workspace-write"}, ["make", "test"],
                        cwd="/path/to/workspace", flags=sbx.EXEC_CAPTURE_STDERR)
        if report["exit"] and report["exit"]["code"] != 0 and report["denial"]["likely_sandbox_denial"]:
            ...  # ask the user for more access (s.widen / s.approve), don't retry blindly

Every call returns parsed JSON (see sbx.types) or text, and raises SbxError with libsbx's
message (what was wrong and what to do) on failure: a subclass per kind of failure
(InvalidInputError, RefusedError, UnavailableError, BackendFailureError, HostFailureError,
TimedOutError, CancelledError), whose .kind is the name the C API, the CLI's --json
"error_kind" and the Node binding use. The GIL is released while libsbx works, so
a thread can run exec() while others continue.

For a tool call that needs the command's output, run() captures it (stdin from `input`, a cap,
a time-out, per-call environment changes), popen() streams it, and `await run_async(...)` runs
it without blocking the event loop; any number of runs go on at once on one Sbx::

    result = s.run(policy, ["sh", "-c", "make test"], cwd=workspace, timeout=600)
    result.returncode, result.stdout, result.stderr, result.timed_out, result.report
"""
import ctypes
import ctypes.util
import glob
import json
import os
import sysconfig
import threading
from typing import Any, Optional, Sequence, Set, Union, cast

from . import runs as _runs
from ._args import _argv, _policy, _text
from .errors import (ERROR_KINDS, BackendFailureError, CancelledError, HostFailureError,
                     InvalidInputError, RefusedError, SbxError, TimedOutError, UnavailableError,
                     _error, _take_error)  # noqa: F401 -- sbx._error: kept for the tests
from .runs import DEVNULL, PIPE, CompletedRun, Popen
from .types import (Approval, BackendsReport, Decision, Denial, EnvChanges, ExecReport,
                    Explanation, Plan, Policy, Preference, Stream)

__all__ = ["Sbx", "SbxError", "InvalidInputError", "RefusedError", "UnavailableError",
           "BackendFailureError", "HostFailureError", "TimedOutError", "CancelledError",
           "ERROR_KINDS", "find_library", "EXEC_ALLOW_UNSANDBOXED", "EXEC_CAPTURE_STDERR",
           "EXEC_FORWARD_SIGNALS",
           "PIPE", "DEVNULL", "CompletedRun", "Popen", "Stream", "EnvChanges",
           "Approval", "BackendsReport", "Decision", "Denial", "ExecReport", "Explanation", "Plan",
           "Policy", "Preference"]
__version__ = "0.1.0"

#: Run without a sandbox when one is wanted but none is available (never for a deny policy).
EXEC_ALLOW_UNSANDBOXED = 1 << 0
#: Tee the command's stderr and keep its last 64 KiB for the denial classification.
EXEC_CAPTURE_STDERR = 1 << 1
#: Pass the signals sent to this process on to the command while it runs, as `sbx exec` does
#: (by default libsbx leaves them to Python: sbx.h, SBX_EXEC_FORWARD_SIGNALS).
EXEC_FORWARD_SIGNALS = 1 << 2


def _libdirs() -> Sequence[str]:
    """A prefix's library directories, as CMake's GNUInstallDirs names them: lib, lib64, and on
    Debian and its derivatives lib/<multiarch triplet> (the /usr install and the .debs). The
    triplet is this interpreter's own (sysconfig MULTIARCH, e.g. x86_64-linux-gnu): a libsbx
    of another architecture could not be loaded into it anyway."""
    multiarch = sysconfig.get_config_var("MULTIARCH")
    return ("lib", "lib64") + ((f"lib/{multiarch}",) if multiarch else ())


def _in_prefix(prefix: str) -> Optional[str]:
    for libdir in _libdirs():
        # The versioned file (libsbx.so.MAJOR.MINOR) first; libsbx.so is a development link.
        found = sorted(glob.glob(os.path.join(prefix, libdir, "libsbx.so.*")), key=len)
        if found:
            return found[0]
    return None


def find_library(prefix: Optional[str] = None) -> str:
    """The libsbx to load: `prefix`'s, else $SBX_LIBRARY (a file), else $SBX_PREFIX's, else the
    dynamic linker's (ldconfig), else /usr/local's, /usr's or /opt/sbx's. Raises SbxError."""
    if prefix:
        found = _in_prefix(prefix)
        if not found:
            raise HostFailureError(f"no libsbx.so.* in {prefix}/{{{','.join(_libdirs())}}}; "
                                   "pass the installation prefix")
        return found
    if os.environ.get("SBX_LIBRARY"):
        return os.environ["SBX_LIBRARY"]
    if os.environ.get("SBX_PREFIX"):
        return find_library(os.environ["SBX_PREFIX"])
    name = ctypes.util.find_library("sbx")
    if name:
        return name
    for candidate in ("/usr/local", "/usr", "/opt/sbx"):
        found = _in_prefix(candidate)
        if found:
            return found
    raise HostFailureError("libsbx not found: install sbx (the .deb or cmake --install), or set "
                           "SBX_LIBRARY to the library file or SBX_PREFIX to the installation "
                           "prefix")


class Sbx:
    """libsbx loaded once; a manager (the plugins, warm probe answers) opened on demand.

    `library`: the libsbx file (default: find_library()). `backends`: preference order, e.g.
    "bwrap,landlock" (None = every trusted plugin). `settings`: use the settings scopes and the
    administrator's locks as the `sbx` command does (then policy and preference may be None);
    `settings_json`: the caller's own scope, merged last; `settings_cwd`: where the project's
    .sbx/settings.json is looked up from (as you name it, symlinks kept; sbx checks it as the
    logical path). With settings, every call's `cwd` must be that directory (None: the current
    one), else it raises: one Sbx per working directory. Any number of commands run at once on
    one Sbx, from any threads (exec, run, popen, run_async); libsbx makes their plans one at a
    time.
    """

    def __init__(self, library: Optional[str] = None, backends: Optional[str] = None,
                 settings: bool = False, settings_json: Optional[Policy] = None,
                 settings_cwd: Optional[str] = None) -> None:
        self.library_path = library or find_library()
        try:
            self._lib = ctypes.CDLL(self.library_path)
        except OSError as error:
            raise HostFailureError(
                f"cannot load libsbx from {self.library_path}: {error}; install sbx (the .deb "
                "or cmake --install), or set SBX_LIBRARY to the library file or SBX_PREFIX to "
                "the installation prefix") from error
        self._declare()
        self._backends = backends
        self._settings = settings
        self._settings_json = settings_json
        self._settings_cwd = settings_cwd
        self._manager: Optional[ctypes.c_void_p] = None
        # The manager's life: open() and close() swap it, and a run starts on the manager it
        # was registered with only while that one is still open (sbx.runs).
        self._state_lock = threading.Lock()
        self._runs: Set["_runs._Run"] = set()

    def _declare(self) -> None:
        lib, err = self._lib, ctypes.POINTER(ctypes.c_void_p)
        p, s, i, u = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint
        argv = ctypes.POINTER(ctypes.c_char_p)
        # Returned strings are char* to free: c_void_p keeps the pointer (c_char_p would copy).
        for name, args in {
                "sbx_backends_json": [p, i, err], "sbx_should_sandbox": [s, s, err],
                "sbx_explain": [p, s, s, s, err], "sbx_transform": [p, s, s, argv, s, err],
                "sbx_exec": [p, s, s, argv, s, u, err], "sbx_policy_widen": [s, s, err],
                "sbx_policy_approve": [s, s, err], "sbx_context": [s, s, i, err],
                "sbx_manager_context": [p, s, s, s, i, err],
                "sbx_classify_failure": [i, i, s, ctypes.c_size_t, s, err],
                "sbx_manager_new": [s, err], "sbx_manager_new_with_settings": [s, s, s, err],
                "sbx_wrap": [s, s, argv, err]}.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = args, p
        lib.sbx_manager_reprobe.argtypes, lib.sbx_manager_reprobe.restype = [p, err], i
        lib.sbx_manager_free.argtypes, lib.sbx_manager_free.restype = [p], None
        lib.sbx_string_free.argtypes, lib.sbx_string_free.restype = [p], None
        lib.sbx_error_message.argtypes, lib.sbx_error_message.restype = [p], s
        lib.sbx_error_free.argtypes, lib.sbx_error_free.restype = [p], None
        # Older libsbx (before error kinds) has no sbx_error_kind: its errors are host_failure.
        if hasattr(lib, "sbx_error_kind"):
            lib.sbx_error_kind.argtypes, lib.sbx_error_kind.restype = [p], i
        lib.sbx_version.argtypes, lib.sbx_version.restype = [], s
        _runs.declare(lib)

    # -- plumbing ------------------------------------------------------------------------------
    def _raise(self, error: ctypes.c_void_p) -> None:
        raise _take_error(self._lib, error)

    def _call(self, name: str, *args: Any) -> str:
        error = ctypes.c_void_p()
        result = getattr(self._lib, name)(*args, ctypes.byref(error))
        if not result:
            self._raise(error)
        try:
            return ctypes.string_at(result).decode("utf-8")
        finally:
            self._lib.sbx_string_free(result)

    def _json(self, name: str, *args: Any) -> Any:
        return json.loads(self._call(name, *args))

    def _m(self) -> ctypes.c_void_p:
        with self._state_lock:
            return self._open_locked()

    # -- the manager ---------------------------------------------------------------------------
    def open(self) -> "Sbx":
        """Loads the plugins (done on first use otherwise). Raises SbxError."""
        with self._state_lock:
            self._open_locked()
        return self

    def _open_locked(self) -> ctypes.c_void_p:
        """The manager, made now if there is none (the caller holds _state_lock)."""
        if self._manager is not None:
            return self._manager
        error = ctypes.c_void_p()
        if self._settings or self._settings_json is not None:
            manager = self._lib.sbx_manager_new_with_settings(
                _text(self._backends, "backends"), _text(self._settings_cwd, "settings_cwd"),
                _policy(self._settings_json, "settings_json"),
                ctypes.byref(error))
        else:
            manager = self._lib.sbx_manager_new(_text(self._backends, "backends"),
                                                ctypes.byref(error))
        if not manager:
            self._raise(error)
        self._manager = ctypes.c_void_p(manager)
        return self._manager

    def close(self) -> None:
        """Frees the manager. The runs still going on it (run, popen, run_async) are cancelled
        first (their reports say "cancelled"; one not started yet raises CancelledError); an
        exec running on another thread finishes: libsbx's sbx_manager_free waits for every call
        and run inside it (with the GIL released), so close() returns only then. A call that
        starts on another thread after close() is an SbxError or opens a new manager, never
        freed memory."""
        with self._state_lock:
            manager, self._manager = self._manager, None
            runs = list(self._runs)
        for run in runs:
            run.cancel()
        if manager is not None:
            self._lib.sbx_manager_free(manager)

    def __enter__(self) -> "Sbx":
        return self.open()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def reprobe(self) -> None:
        """Forgets the kept probe answers and probes the backends again now."""
        error = ctypes.c_void_p()
        if self._lib.sbx_manager_reprobe(self._m(), ctypes.byref(error)) != 0:
            self._raise(error)

    # -- the API -------------------------------------------------------------------------------
    def version(self) -> str:
        return cast(bytes, self._lib.sbx_version()).decode()

    def backends(self, probe: bool = True) -> BackendsReport:
        """Loaded and rejected plugins (with a fresh probe of each when `probe`)."""
        return cast(BackendsReport, self._json("sbx_backends_json", self._m(), 1 if probe else 0))

    def should_sandbox(self, policy: Policy, preference: Preference = "auto") -> Decision:
        """Question 1, pure: does the policy need a sandbox?"""
        return cast(Decision, self._json("sbx_should_sandbox", _policy(policy),
                                         _text(preference, "preference")))

    def explain(self, policy: Optional[Policy], cwd: Optional[str] = None,
                preference: Optional[Preference] = "auto") -> Explanation:
        """Both questions (as `sbx explain --json`), resolved against `cwd`."""
        return cast(Explanation, self._json("sbx_explain", self._m(), _policy(policy),
                                            _text(cwd, "cwd"), _text(preference, "preference")))

    def transform(self, policy: Optional[Policy], argv: Sequence[str], cwd: Optional[str] = None,
                  preference: Optional[Preference] = "auto") -> Plan:
        """The plan that would run `argv` (nothing runs)."""
        return cast(Plan, self._json("sbx_transform", self._m(), _policy(policy),
                                     _text(cwd, "cwd"), _argv(argv),
                                     _text(preference, "preference")))

    def exec(self, policy: Optional[Policy], argv: Sequence[str], cwd: Optional[str] = None,
             preference: Optional[Preference] = "auto", flags: int = 0) -> ExecReport:
        """Runs `argv` under the policy and waits; a refusal is a report with "error" set."""
        return cast(ExecReport, self._json("sbx_exec", self._m(), _policy(policy),
                                           _text(cwd, "cwd"), _argv(argv),
                                           _text(preference, "preference"), flags))

    def run(self, policy: Optional[Policy], argv: Sequence[str], cwd: Optional[str] = None,
            env: Optional[EnvChanges] = None, input: Union[bytes, str, None] = None,
            capture_output: bool = True, timeout: Optional[float] = None,
            max_output_bytes: Optional[int] = None, preference: Optional[Preference] = "auto",
            *, text: bool = False, encoding: Optional[str] = None, errors: Optional[str] = None,
            flags: int = 0) -> CompletedRun:
        """Runs `argv` under the policy and waits: a tool call (sbx_run_start, sbx_run_wait).

        stdin is `input` (bytes, or str encoded with `encoding`, default UTF-8) then end of
        file, or /dev/null without it: unlike subprocess.run, never this process's stdin.
        stdout and stderr are captured separately, at most `max_output_bytes` (default 1 MiB)
        of the start of each; the rest is read and dropped (`truncated`). capture_output=False
        leaves both this process's. `env`: per-call changes on top of this process's
        environment, a str value sets the name, None removes it; the policy's environment rules
        then apply and win (a name it scrubs stays scrubbed, its "set" replaces yours).
        `timeout` (seconds) ends the whole sandbox; the report then says "timed_out" (no
        exception: `timed_out`, `check()`). `text` (or `encoding`/`errors`) decodes stdout and
        stderr (errors="replace" by default: a cut capture may end inside a character). `flags`:
        EXEC_ALLOW_UNSANDBOXED, EXEC_CAPTURE_STDERR (the report's "stderr_tail"),
        EXEC_FORWARD_SIGNALS.

        A refusal (no sandbox available) or a run ended early is a CompletedRun with `error`
        and `error_kind` set and `returncode` None when the command never ran; a bad argument
        raises InvalidInputError, a command not found or a failed plan SbxError. A
        KeyboardInterrupt while waiting cancels the run, waits for its end, and propagates
        (libsbx leaves this process's signals to Python while a run goes on, unless `flags`
        has EXEC_FORWARD_SIGNALS: README.md)."""
        request = _runs._run_request(policy, argv, cwd, env, input, capture_output, timeout,
                                     max_output_bytes, preference, flags, encoding, errors)
        return _runs.run(self, request, text, encoding, errors)

    async def run_async(self, policy: Optional[Policy], argv: Sequence[str],
                        cwd: Optional[str] = None, env: Optional[EnvChanges] = None,
                        input: Union[bytes, str, None] = None, capture_output: bool = True,
                        timeout: Optional[float] = None, max_output_bytes: Optional[int] = None,
                        preference: Optional[Preference] = "auto", *, text: bool = False,
                        encoding: Optional[str] = None, errors: Optional[str] = None,
                        flags: int = 0) -> CompletedRun:
        """run() for asyncio: the run starts and is waited for on its own thread, so the event
        loop is never blocked, and several run_async calls on one Sbx go on at once.
        Cancelling the awaiting task cancels the run (the whole sandbox) and waits for its end
        before the task's CancelledError propagates."""
        request = _runs._run_request(policy, argv, cwd, env, input, capture_output, timeout,
                                     max_output_bytes, preference, flags, encoding, errors)
        return await _runs.run_async(self, request, text, encoding, errors)

    def popen(self, policy: Optional[Policy], argv: Sequence[str], stdin: Stream = None,
              stdout: Stream = None, stderr: Stream = None, cwd: Optional[str] = None,
              env: Optional[EnvChanges] = None, timeout: Optional[float] = None,
              preference: Optional[Preference] = "auto", *, text: bool = False,
              encoding: Optional[str] = None, errors: Optional[str] = None,
              flags: int = 0) -> Popen:
        """Starts `argv` under the policy with its streams, like subprocess.Popen, and returns
        at once. Each of stdin, stdout, stderr is None (this process's own, as subprocess),
        PIPE (a file object on the Popen, from sbx_run_take_fd; text=True wraps it as text),
        DEVNULL, or a descriptor or file of yours (keep it open until the run has ended).
        `env` as in run(); `timeout` (seconds) ends the whole run ("timed_out" in the report).
        Raises InvalidInputError for a bad argument, SbxError when libsbx refuses to start."""
        request, callers = _runs.popen_request(policy, argv, stdin, stdout, stderr, cwd, env,
                                               timeout, preference, flags)
        return Popen(self, request, callers, text, encoding, errors)

    def wrap(self, policy: Policy, argv: Sequence[str], cwd: Optional[str] = None) -> dict:
        """A command line through this install's `sbx exec` for a caller that spawns processes
        itself (sbx_wrap): {"argv", "policy", "policy_fd": 3, "report_fd": 4}. Spawn argv with
        descriptor 3 reading `policy` from a pipe (closed after it) and descriptor 4 writing the
        run's JSON report; the command's stdio is the spawned process's own."""
        return cast(dict, self._json("sbx_wrap", _policy(policy, "policy"), _text(cwd, "cwd"),
                                     _argv(argv)))

    def widen(self, base: Policy, extra: Policy) -> dict:
        """A policy with every access of both (never lifts a deny)."""
        return cast(dict, self._json("sbx_policy_widen", _policy(base, "base"),
                                     _policy(extra, "extra")))

    def approve(self, requested: Policy, granted: Policy) -> Approval:
        """What a person granted of a request (intersection)."""
        return cast(Approval, self._json("sbx_policy_approve", _policy(requested, "requested"),
                                         _policy(granted, "granted")))

    def context(self, policy: Policy, cwd: Optional[str] = None, as_json: bool = False,
                preference: Optional[Preference] = "auto",
                any_backend: bool = False) -> Union[str, dict]:
        """The model-facing description of the sandbox (text, or `sbx context --json`) for a run
        on this handle: whether it is sandboxed, by which backend here and that backend's
        limits. any_backend=True probes nothing and labels every backend's differences."""
        as_int = 1 if as_json else 0
        if any_backend:
            text = self._call("sbx_context", _policy(policy), _text(cwd, "cwd"), as_int)
        else:
            text = self._call("sbx_manager_context", self._m(), _policy(policy),
                              _text(cwd, "cwd"), _text(preference, "preference"), as_int)
        return cast(dict, json.loads(text)) if as_json else text

    def classify(self, exit_code: int, signal: int = 0, stderr: Union[str, bytes] = b"",
                 backend: Optional[str] = None) -> Denial:
        """Was a failed command likely stopped by the sandbox? (advice, not a decision)"""
        data = stderr.encode("utf-8") if isinstance(stderr, str) else bytes(stderr)
        return cast(Denial, self._json("sbx_classify_failure", exit_code, signal, data, len(data),
                                       _text(backend, "backend")))
