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
"""
import ctypes
import ctypes.util
import glob
import json
import os
from typing import Any, List, Optional, Sequence, Union, cast

from .types import (Approval, BackendsReport, Decision, Denial, ExecReport, Explanation, Plan,
                    Policy, Preference)

__all__ = ["Sbx", "SbxError", "InvalidInputError", "RefusedError", "UnavailableError",
           "BackendFailureError", "HostFailureError", "TimedOutError", "CancelledError",
           "ERROR_KINDS", "find_library", "EXEC_ALLOW_UNSANDBOXED", "EXEC_CAPTURE_STDERR",
           "Approval", "BackendsReport", "Decision", "Denial", "ExecReport", "Explanation", "Plan",
           "Policy", "Preference"]
__version__ = "0.1.0"

#: Run without a sandbox when one is wanted but none is available (never for a deny policy).
EXEC_ALLOW_UNSANDBOXED = 1 << 0
#: Tee the command's stderr and keep its last 64 KiB for the denial classification.
EXEC_CAPTURE_STDERR = 1 << 1


class SbxError(Exception):
    """An error reported by libsbx, or a bad argument to it; str(error) is the message (what was
    wrong and what to do), .kind what sort of failure it is (one of ERROR_KINDS). Raised as the
    subclass of its kind; catch SbxError for all of them."""

    kind = "host_failure"


class InvalidInputError(SbxError, ValueError):
    """The caller's input is wrong: a malformed policy, a bad argument (also a ValueError)."""

    kind = "invalid_input"


class RefusedError(SbxError):
    """A lock, setting or policy rule forbids it (e.g. a deny policy never runs unsandboxed)."""

    kind = "refused"


class UnavailableError(SbxError):
    """No backend on this host can enforce what was asked."""

    kind = "unavailable"


class BackendFailureError(SbxError):
    """A backend plugin failed to plan or run the sandbox."""

    kind = "backend_failure"


class HostFailureError(SbxError):
    """The host failed: a file, a syscall, libsbx missing or not loadable."""

    kind = "host_failure"


class TimedOutError(SbxError, TimeoutError):
    """A deadline passed."""

    kind = "timed_out"


class CancelledError(SbxError):
    """The caller cancelled."""

    kind = "cancelled"


#: sbx_error_kind's values (sbx/sbx.h), in order, to the class raised for each.
ERROR_KINDS = {cls.kind: cls for cls in (InvalidInputError, RefusedError, UnavailableError,
                                         BackendFailureError, HostFailureError, TimedOutError,
                                         CancelledError)}
_KIND_BY_VALUE = list(ERROR_KINDS.values())


def _error(value: int, message: str) -> SbxError:
    """The exception for sbx_error_kind's `value`; a kind newer than this binding is a
    HostFailureError."""
    cls = _KIND_BY_VALUE[value] if 0 <= value < len(_KIND_BY_VALUE) else HostFailureError
    return cls(message)


_LIBDIRS = ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu")


def _in_prefix(prefix: str) -> Optional[str]:
    for libdir in _LIBDIRS:
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
            raise HostFailureError(f"no libsbx.so.* under {prefix}/lib*; pass the installation "
                                   "prefix")
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


def _c_string(value: str, name: str) -> bytes:
    """`value` as the NUL-terminated UTF-8 libsbx reads. A NUL inside would end the string
    there (ctypes passes the bytes as they are): the caller checked "echo x\\0; rm ..." and
    libsbx would run "echo x". Refused instead: InvalidInputError, a ValueError like
    os.fsencode's."""
    nul = value.find("\0")
    if nul >= 0:
        raise InvalidInputError(f"{name} contains a NUL character at index {nul}; libsbx would "
                         "cut it there, so it is refused: remove the NUL")
    return value.encode("utf-8")


def _text(value: Optional[str], name: str) -> Optional[bytes]:
    return _c_string(value, name) if value is not None else None


def _policy(policy: Optional[Policy], name: str = "policy") -> Optional[bytes]:
    """A dict is sent as JSON, where a NUL travels escaped ("\\u0000") and libsbx refuses it
    naming the key (SbxError); a string must hold none itself."""
    if policy is None:
        return None
    return _c_string(policy if isinstance(policy, str) else json.dumps(policy), name)


def _argv(argv: Sequence[str]) -> "ctypes.Array[ctypes.c_char_p]":
    if isinstance(argv, (str, bytes)) or not argv:
        raise InvalidInputError("argv must be a non-empty list of strings")
    array = (ctypes.c_char_p * (len(argv) + 1))()
    array[:-1] = [_c_string(arg, f"argv[{k}]") for k, arg in enumerate(argv)]
    array[-1] = None
    return array


class Sbx:
    """libsbx loaded once; a manager (the plugins, warm probe answers) opened on demand.

    `library`: the libsbx file (default: find_library()). `backends`: preference order, e.g.
    "bwrap,landlock" (None = every trusted plugin). `settings`: use the settings scopes and the
    administrator's locks as the `sbx` command does (then policy and preference may be None);
    `settings_json`: the caller's own scope, merged last; `settings_cwd`: where the project's
    .sbx/settings.json is looked up from (as you name it, symlinks kept; sbx checks it as the
    logical path). With settings, every call's `cwd` must be that directory (None: the current
    one), else it raises: one Sbx per working directory. Calls on one Sbx are serialized by libsbx: use one
    per thread to run commands in parallel.
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
                "sbx_classify_failure": [i, i, s, ctypes.c_size_t, s, err],
                "sbx_manager_new": [s, err], "sbx_manager_new_with_settings": [s, s, s, err]}.items():
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

    # -- plumbing ------------------------------------------------------------------------------
    def _raise(self, error: ctypes.c_void_p) -> None:
        message = "libsbx failed without a message"
        kind = 4  # SBX_ERROR_HOST_FAILURE
        if error:
            message = self._lib.sbx_error_message(error).decode("utf-8", "replace")
            if hasattr(self._lib, "sbx_error_kind"):
                kind = self._lib.sbx_error_kind(error)
            self._lib.sbx_error_free(error)
        raise _error(kind, message)

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
        if self._manager is None:
            self.open()
        assert self._manager is not None
        return self._manager

    # -- the manager ---------------------------------------------------------------------------
    def open(self) -> "Sbx":
        """Loads the plugins (done on first use otherwise). Raises SbxError."""
        if self._manager is not None:
            return self
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
        return self

    def close(self) -> None:
        """Frees the manager. A call running on another thread finishes first: libsbx's
        sbx_manager_free waits for it (with the GIL released), so close() returns only then.
        A call that starts on another thread after close() is an SbxError or opens a new
        manager, never freed memory."""
        if self._manager is not None:
            self._lib.sbx_manager_free(self._manager)
            self._manager = None

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

    def widen(self, base: Policy, extra: Policy) -> dict:
        """A policy with every access of both (never lifts a deny)."""
        return cast(dict, self._json("sbx_policy_widen", _policy(base, "base"),
                                     _policy(extra, "extra")))

    def approve(self, requested: Policy, granted: Policy) -> Approval:
        """What a person granted of a request (intersection)."""
        return cast(Approval, self._json("sbx_policy_approve", _policy(requested, "requested"),
                                         _policy(granted, "granted")))

    def context(self, policy: Policy, cwd: Optional[str] = None,
                as_json: bool = False) -> Union[str, dict]:
        """The model-facing description of the sandbox (text, or `sbx context --json`)."""
        text = self._call("sbx_context", _policy(policy), _text(cwd, "cwd"), 1 if as_json else 0)
        return cast(dict, json.loads(text)) if as_json else text

    def classify(self, exit_code: int, signal: int = 0, stderr: Union[str, bytes] = b"",
                 backend: Optional[str] = None) -> Denial:
        """Was a failed command likely stopped by the sandbox? (advice, not a decision)"""
        data = stderr.encode("utf-8") if isinstance(stderr, str) else bytes(stderr)
        return cast(Denial, self._json("sbx_classify_failure", exit_code, signal, data, len(data),
                                       _text(backend, "backend")))
