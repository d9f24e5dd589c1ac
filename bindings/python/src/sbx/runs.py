"""Runs with their stdio: sbx_run_start and friends (sbx/sbx.h, "Runs") behind Sbx.run,
Sbx.popen and Sbx.run_async.

Each run has one Python thread of its own (`sbx-run`), which calls sbx_run_wait (the GIL
released), copies the report and the captured bytes, and frees the handle; every caller waits
on that thread's event, so a wait can time out, a KeyboardInterrupt ends it, and an event loop
is told through call_soon_threadsafe instead of blocking. The handle is freed only by that thread,
after sbx_run_wait has returned: sbx_run_free while another thread is still inside
sbx_run_wait on the same handle would free the report under it.
"""
import asyncio
import atexit
import ctypes
import io
import json
import math
import os
import signal
import subprocess
import threading
from typing import (IO, TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence,
                    Set, Tuple, Union, cast)

from ._args import _argv, _c_list, _c_string, _policy, _text
from .errors import (CancelledError, HostFailureError, InvalidInputError, SbxError, TimedOutError,
                     _error_of_kind, _take_error)
from .types import EnvChanges, ExecReport, Policy, Preference, Stream

if TYPE_CHECKING:  # pragma: no cover
    from . import Sbx

#: A stream of the command connected to a pipe: popen's file object (subprocess.PIPE's value).
PIPE = subprocess.PIPE
#: A stream of the command connected to /dev/null (subprocess.DEVNULL's value).
DEVNULL = subprocess.DEVNULL

# sbx_stdio_mode_t
_INHERIT, _NULL, _FD, _PIPE, _CAPTURE, _DATA = range(6)
_STREAMS = ("stdin", "stdout", "stderr")


class _Stdio(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("fd", ctypes.c_int), ("max_bytes", ctypes.c_size_t),
                ("data", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class _RunOptions(ctypes.Structure):
    """sbx_run_options, this binding's version of it: struct_size says which members libsbx
    may read (it reads none beyond them)."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("policy_json", ctypes.c_char_p),
                ("cwd", ctypes.c_char_p), ("argv", ctypes.POINTER(ctypes.c_char_p)),
                ("preference", ctypes.c_char_p), ("flags", ctypes.c_uint),
                ("stdio", _Stdio * 3), ("env_set", ctypes.POINTER(ctypes.c_char_p)),
                ("env_unset", ctypes.POINTER(ctypes.c_char_p)),
                ("timeout_ms", ctypes.c_ulonglong)]


def declare(lib: Any) -> None:
    """The run functions' C types (a libsbx without them: Sbx.run & co. raise)."""
    if not hasattr(lib, "sbx_run_start"):
        return
    p, i, err = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)
    lib.sbx_run_start.argtypes = [p, ctypes.POINTER(_RunOptions), err]
    lib.sbx_run_start.restype = p
    lib.sbx_run_take_fd.argtypes, lib.sbx_run_take_fd.restype = [p, i], i
    lib.sbx_run_cancel.argtypes, lib.sbx_run_cancel.restype = [p], i
    lib.sbx_run_wait.argtypes, lib.sbx_run_wait.restype = [p, err], p
    lib.sbx_run_output.argtypes = [p, i, ctypes.POINTER(ctypes.c_size_t)]
    lib.sbx_run_output.restype = p
    lib.sbx_run_free.argtypes, lib.sbx_run_free.restype = [p], None


# -- arguments -----------------------------------------------------------------------------------

def _env_changes(env: Optional[EnvChanges]) -> Tuple[List[bytes], List[bytes]]:
    """env_set ("NAME=VALUE") and env_unset (names) of the per-call changes. A name holding
    "=" is refused: "A=B" with value "C" would travel as "A=B=C", which sets A."""
    if env is None:
        return [], []
    if not isinstance(env, Mapping):
        raise InvalidInputError("env must be a mapping of names to str (set) or None (remove)")
    set_, unset = [], []
    for name, value in env.items():
        where = f"env name {name!r}"
        if not isinstance(name, str) or not name or "=" in name:
            raise InvalidInputError(f"{where} is not a variable name (non-empty, without '=')")
        if value is None:
            unset.append(_c_string(name, where))
        elif isinstance(value, str):
            set_.append(_c_string(f"{name}={value}", f"env[{name!r}]"))
        else:
            raise InvalidInputError(f"env[{name!r}] must be a str (set) or None (remove), not "
                                    f"{type(value).__name__}")
    return set_, unset


def _timeout_ms(timeout: Optional[float]) -> int:
    """sbx_run_options' timeout_ms: seconds, rounded up to a whole millisecond (0: none)."""
    if timeout is None:
        return 0
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not math.isfinite(timeout) or timeout <= 0:
        raise InvalidInputError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return max(1, math.ceil(timeout * 1000))


def _stream(value: Stream, which: int) -> Tuple[int, int]:
    """popen's stdin/stdout/stderr as (sbx_stdio_mode_t, fd)."""
    name = _STREAMS[which]
    if value is None:
        return _INHERIT, -1
    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be None, PIPE, DEVNULL, a descriptor or a file")
    if isinstance(value, int):
        if value == PIPE:
            return _PIPE, -1
        if value == DEVNULL:
            return _NULL, -1
        if value < 0:
            raise InvalidInputError(f"{name} {value} is neither PIPE, DEVNULL nor a descriptor")
        return _FD, value
    fileno = getattr(value, "fileno", None)
    if fileno is None:
        raise InvalidInputError(f"{name} must be None, PIPE, DEVNULL, a descriptor or a file, "
                                f"not {type(value).__name__}")
    try:
        return _FD, int(fileno())
    except (OSError, ValueError) as error:  # io.UnsupportedOperation, a closed file
        raise InvalidInputError(f"{name} has no descriptor: {error}") from error


def _as_bytes(data: Union[bytes, bytearray, memoryview, str], encoding: Optional[str],
              errors: Optional[str]) -> bytes:
    if isinstance(data, str):
        return data.encode(encoding or "utf-8", errors or "strict")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise InvalidInputError(f"input must be bytes or str, not {type(data).__name__}")


class _Request:
    """One run's sbx_run_options with everything it points to, alive as long as this is."""

    def __init__(self, policy: Optional[Policy], argv: Sequence[str], cwd: Any,
                 env: Optional[EnvChanges], preference: Optional[Preference], flags: int,
                 timeout: Optional[float]) -> None:
        if isinstance(flags, bool) or not isinstance(flags, int) or flags < 0:
            raise InvalidInputError(f"flags must be EXEC_* values or'ed together, not {flags!r}")
        self._argv = _argv(argv)
        self.argv = list(argv)
        self._policy = _policy(policy)
        self._cwd = _text(os.fspath(cwd) if cwd is not None else None, "cwd")
        self._preference = _text(preference, "preference")
        env_set, env_unset = _env_changes(env)
        self._env_set = _c_list(env_set) if env_set else None
        self._env_unset = _c_list(env_unset) if env_unset else None
        self._keep: List[Any] = [env_set, env_unset]
        options = _RunOptions()
        options.struct_size = ctypes.sizeof(_RunOptions)
        options.policy_json, options.cwd, options.preference = (self._policy, self._cwd,
                                                                self._preference)
        options.argv = ctypes.cast(self._argv, ctypes.POINTER(ctypes.c_char_p))
        if self._env_set is not None:
            options.env_set = ctypes.cast(self._env_set, ctypes.POINTER(ctypes.c_char_p))
        if self._env_unset is not None:
            options.env_unset = ctypes.cast(self._env_unset, ctypes.POINTER(ctypes.c_char_p))
        options.flags = flags
        options.timeout_ms = _timeout_ms(timeout)
        self.options = options

    def stdio(self, which: int, mode: int, fd: int = -1, max_bytes: int = 0,
              data: Optional[bytes] = None) -> None:
        stream = self.options.stdio[which]
        stream.mode, stream.fd, stream.max_bytes = mode, fd, max_bytes
        if data is not None:
            # Points into the bytes object (kept here); sbx_run_start copies the bytes.
            holder = ctypes.c_char_p(data)
            self._keep.append((data, holder))
            stream.data, stream.length = ctypes.cast(holder, ctypes.c_void_p), len(data)


# -- the run -------------------------------------------------------------------------------------

# Every run still going in this process: cancelled at exit (below). A child made by fork()
# has none: the runs and their threads stay with the parent.
_LIVE: Set["_Run"] = set()
_LIVE_LOCK = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_LIVE.clear)


@atexit.register
def _cancel_live_runs() -> None:
    """At interpreter exit, ends the runs still going (as sbx_run_free would) and waits for
    them: their threads are daemons, and libsbx must not be torn down under a run."""
    with _LIVE_LOCK:
        runs = list(_LIVE)
    for run in runs:
        run.cancel()
    for run in runs:
        run.done.wait()


class _Run:
    """One sbx_run handle and the thread that waits for it (module docstring)."""

    done: threading.Event  # set once the run has ended and its handle is freed

    def __init__(self, owner: "Sbx", request: _Request) -> None:
        self._owner = owner
        self._lib = owner._lib
        if not hasattr(self._lib, "sbx_run_start"):
            raise HostFailureError(f"the libsbx at {owner.library_path} has no sbx_run_start: "
                                   "install a newer sbx")
        self.request = request
        self.done = threading.Event()
        self._lock = threading.Lock()  # the handle: cancel, take_fd and free
        self._handle: Optional[int] = None
        self._cancelled = False
        self._callbacks: List[Callable[[], None]] = []
        self.report: Optional[ExecReport] = None
        self.failure: Optional[SbxError] = None
        self.output: List[Optional[bytes]] = [None, None, None]
        # Registered under the owner's lock with the manager it starts on: close() cancels the
        # runs it finds, and a run whose manager was closed before it started never uses it.
        with owner._state_lock:
            self._manager = owner._open_locked()
            owner._runs.add(self)
        with _LIVE_LOCK:
            _LIVE.add(self)

    def _start(self) -> None:
        """sbx_run_start on the manager the run was registered with (raises SbxError)."""
        with self._owner._state_lock:
            if self._owner._manager is not self._manager:
                raise CancelledError("the Sbx was closed before this run started: nothing ran")
            error = ctypes.c_void_p()
            handle = self._lib.sbx_run_start(self._manager, ctypes.byref(self.request.options),
                                             ctypes.byref(error))
            if not handle:
                raise _take_error(self._lib, error)
            with self._lock:
                self._handle = handle
                if self._cancelled:
                    self._lib.sbx_run_cancel(handle)

    def start_here(self, pipes: Sequence[int] = ()) -> List[int]:
        """Starts the run on this thread and takes the caller's ends of the `pipes` streams
        (-1 for one libsbx did not give), then its own thread waits for it. Taken before that
        thread exists: once the run has ended it frees the handle, which closes an end not
        taken. Raises SbxError (the run is then over)."""
        try:
            self._start()
            fds = [int(self._lib.sbx_run_take_fd(self._handle, which)) for which in pipes]
        except BaseException:
            self._end()
            raise
        self._spawn(start=False)
        return fds

    def start_there(self) -> None:
        """Starts the run's thread, which calls sbx_run_start itself (its error is the run's
        failure): nothing here waits for libsbx."""
        self._spawn(start=True)

    def _spawn(self, start: bool) -> None:
        thread = threading.Thread(target=self._serve, args=(start,), name="sbx-run", daemon=True)
        # Made with every signal blocked (the mask is inherited): a process-directed signal goes
        # to any thread that does not block it (signal(7)), and CPython's handler only sets a
        # flag, so a Ctrl-C taken by this thread would never wake a main thread blocked in
        # join() (the waits of libsbx's own threads are blocked likewise, sbx_run_start).
        if not hasattr(signal, "pthread_sigmask"):
            thread.start()
            return
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        try:
            thread.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def _serve(self, start: bool) -> None:
        try:
            if start:
                self._start()
            self._collect()
        except SbxError as error:
            self.failure = error
        except BaseException as error:  # noqa: B902 -- the waiting caller gets it, not stderr
            self.failure = HostFailureError(f"the run's thread failed: {error!r}")
        finally:
            self._end()

    def _collect(self) -> None:
        handle = self._handle
        error = ctypes.c_void_p()
        text = self._lib.sbx_run_wait(handle, ctypes.byref(error))
        if not text:
            self.failure = _take_error(self._lib, error)
        else:
            try:
                self.report = cast(ExecReport, json.loads(ctypes.string_at(text).decode("utf-8")))
            finally:
                self._lib.sbx_string_free(text)
        for which in (1, 2):
            length = ctypes.c_size_t()
            data = self._lib.sbx_run_output(handle, which, ctypes.byref(length))
            if data:
                self.output[which] = ctypes.string_at(data, length.value)

    def _end(self) -> None:
        """Frees the handle (after sbx_run_wait has returned), forgets the run, wakes waiters."""
        with self._lock:
            handle, self._handle = self._handle, None
            if handle:
                self._lib.sbx_run_free(handle)
            callbacks, self._callbacks = self._callbacks, []
            self.done.set()
        with self._owner._state_lock:
            self._owner._runs.discard(self)
        with _LIVE_LOCK:
            _LIVE.discard(self)
        for callback in callbacks:
            callback()

    def cancel(self) -> None:
        """sbx_run_cancel now, or at once after sbx_run_start if it has not been called yet."""
        with self._lock:
            self._cancelled = True
            if self._handle:
                self._lib.sbx_run_cancel(self._handle)

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """`callback()` on the run's thread when it has ended (now, if it has)."""
        with self._lock:
            if not self.done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def join(self) -> None:
        """Waits for the end; interrupted (KeyboardInterrupt), cancels the run and waits."""
        try:
            self.done.wait()
        except BaseException:
            self.cancel()
            self.done.wait()
            raise


# -- the results ---------------------------------------------------------------------------------

class _Outcome:
    """What a run's report says, shared by CompletedRun and Popen."""

    report: Optional[ExecReport]

    @property
    def returncode(self) -> Optional[int]:
        """The exit code; None when the command did not exit normally (a signal) or never
        started (refused, cancelled or timed out before it ran), or the run is still going."""
        exit_ = self.report["exit"] if self.report else None
        return exit_["code"] if exit_ else None

    @property
    def signal(self) -> Optional[int]:
        """The signal that ended the command, else None."""
        exit_ = self.report["exit"] if self.report else None
        return exit_["signal"] if exit_ else None

    @property
    def error(self) -> Optional[str]:
        """sbx's own failure or refusal (the report's "error"), else None."""
        return self.report["error"] if self.report else None

    @property
    def error_kind(self) -> Optional[str]:
        """The kind of `error` ("timed_out", "cancelled", "unavailable", ...), else None."""
        return self.report["error_kind"] if self.report else None

    @property
    def timed_out(self) -> bool:
        """The run's time-out ended it (report "error_kind": "timed_out")."""
        return self.error_kind == "timed_out"

    @property
    def cancelled(self) -> bool:
        """A cancel ended it (report "error_kind": "cancelled")."""
        return self.error_kind == "cancelled"

    def check(self) -> None:
        """Raises the SbxError of the report's error (TimedOutError, CancelledError,
        UnavailableError, ...) when there is one, else subprocess.CalledProcessError when the
        command did not exit with 0."""
        if self.report is None:
            raise InvalidInputError("the run has not ended: wait() for it first")
        if self.report["error"] is not None:
            raise _error_of_kind(self.report["error_kind"] or "host_failure",
                                 self.report["error"])
        if self.returncode != 0:
            # subprocess's returncode: negative for a signal.
            code = self.returncode if self.returncode is not None else -(self.signal or 0)
            raise subprocess.CalledProcessError(code, list(getattr(self, "args", [])),
                                                getattr(self, "stdout", None),
                                                getattr(self, "stderr", None))


def _capture(report: Optional[ExecReport], which: int) -> bool:
    """The report's "stdout_capture" (1) or "stderr_capture" (2) says the stream was cut."""
    if not report:
        return False
    capture = report.get("stdout_capture") if which == 1 else report.get("stderr_capture")
    return bool(capture and capture["truncated"])


class CompletedRun(_Outcome):
    """A run that has ended (Sbx.run, Sbx.run_async).

    `stdout`/`stderr`: the captured bytes (str with text=True), None when not captured; at most
    max_output_bytes of the start of each stream, the rest dropped (`stdout_truncated`,
    `truncated`; the report's "stdout_capture" counts the bytes dropped). `report`: the
    ExecReport (sbx.types). `returncode`, `signal`, `error`, `error_kind`, `timed_out`,
    `cancelled`: from the report.
    """

    def __init__(self, args: List[str], report: ExecReport, stdout: Union[bytes, str, None],
                 stderr: Union[bytes, str, None]) -> None:
        self.args = args
        self.report: ExecReport = report
        self.stdout = stdout
        self.stderr = stderr

    @property
    def stdout_truncated(self) -> bool:
        return _capture(self.report, 1)

    @property
    def stderr_truncated(self) -> bool:
        return _capture(self.report, 2)

    @property
    def truncated(self) -> bool:
        """Either stream was cut at max_output_bytes."""
        return self.stdout_truncated or self.stderr_truncated

    def __repr__(self) -> str:
        fields = [f"args={self.args!r}", f"returncode={self.returncode!r}"]
        if self.signal is not None:
            fields.append(f"signal={self.signal!r}")
        if self.error_kind is not None:
            fields.append(f"error_kind={self.error_kind!r}")
        for name in ("stdout", "stderr"):
            value = getattr(self, name)
            if value is not None:
                fields.append(f"{name}={value!r}")
        if self.truncated:
            fields.append("truncated=True")
        return f"CompletedRun({', '.join(fields)})"


def _decoded(data: Optional[bytes], text: bool, encoding: Optional[str],
             errors: Optional[str]) -> Union[bytes, str, None]:
    """As subprocess: text mode with text=True, or when an encoding or errors is given."""
    if data is None or not (text or encoding or errors):
        return data
    # "replace" by default: a capture cut at its cap may end inside a character.
    return data.decode(encoding or "utf-8", errors or "replace")


def _completed(run: _Run, text: bool, encoding: Optional[str],
               errors: Optional[str]) -> CompletedRun:
    if run.failure is not None:
        raise run.failure
    assert run.report is not None
    captured = [_decoded(data, text, encoding, errors) for data in run.output]
    return CompletedRun(list(run.request.argv), run.report, captured[1], captured[2])


def _run_request(policy: Optional[Policy], argv: Sequence[str], cwd: Any,
                 env: Optional[EnvChanges], input: Union[bytes, str, None], capture_output: bool,
                 timeout: Optional[float], max_output_bytes: Optional[int],
                 preference: Optional[Preference], flags: int, encoding: Optional[str],
                 errors: Optional[str]) -> _Request:
    """Sbx.run's options: stdin the input (else /dev/null), stdout and stderr captured (and
    stderr's tail then kept for the report's denial, as Node's run does)."""
    if capture_output and isinstance(flags, int) and not isinstance(flags, bool) and flags >= 0:
        flags |= 1 << 1  # SBX_EXEC_CAPTURE_STDERR
    request = _Request(policy, argv, cwd, env, preference, flags, timeout)
    if input is None:
        request.stdio(0, _NULL)
    else:
        request.stdio(0, _DATA, data=_as_bytes(input, encoding, errors))
    cap = 0  # SBX_CAPTURE_DEFAULT_MAX_BYTES
    if max_output_bytes is not None:
        if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int) \
                or max_output_bytes < 1:
            raise InvalidInputError(f"max_output_bytes must be a positive int, not "
                                    f"{max_output_bytes!r}")
        cap = max_output_bytes
    for which in (1, 2):
        request.stdio(which, _CAPTURE if capture_output else _INHERIT, max_bytes=cap)
    return request


def run(owner: "Sbx", request: _Request, text: bool, encoding: Optional[str],
        errors: Optional[str]) -> CompletedRun:
    """Sbx.run: started here, waited for on the run's thread (a KeyboardInterrupt ends the wait)."""
    handle = _Run(owner, request)
    handle.start_here()
    handle.join()
    return _completed(handle, text, encoding, errors)


async def run_async(owner: "Sbx", request: _Request, text: bool, encoding: Optional[str],
                    errors: Optional[str]) -> CompletedRun:
    """Sbx.run on the run's own thread (sbx_run_start included): the event loop only waits for
    a future. Cancelling the task cancels the run and waits for its end, then raises."""
    loop = asyncio.get_running_loop()
    if owner._manager is None:  # the first call loads the plugins: not on the loop either
        await loop.run_in_executor(None, owner.open)
    ended: "asyncio.Future[None]" = loop.create_future()

    def resolve() -> None:
        if not ended.done():
            ended.set_result(None)

    def wake() -> None:
        try:
            loop.call_soon_threadsafe(resolve)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    handle = _Run(owner, request)
    handle.add_done_callback(wake)
    handle.start_there()
    try:
        await asyncio.shield(ended)
    except asyncio.CancelledError:
        handle.cancel()
        while not ended.done():  # the sandbox ends before the task does
            try:
                await asyncio.shield(ended)
            except asyncio.CancelledError:
                pass
        raise
    return _completed(handle, text, encoding, errors)


# -- Popen ---------------------------------------------------------------------------------------

class Popen(_Outcome):
    """A run whose stdio streams (Sbx.popen): `stdin`, `stdout`, `stderr` are file objects for
    the streams given as PIPE (text files with text=True), else None.

    wait(timeout=None) returns returncode once the run has ended (raising the SbxError of a run
    that failed, e.g. a command not found); `report` and the properties of CompletedRun are set
    then. cancel() (also kill() and terminate()) ends the whole sandbox, as sbx_run_cancel.
    As a context manager it closes the pipes on exit and waits for the run, cancelling it first
    when the block raised.
    """

    stdin: Optional[IO[Any]]
    stdout: Optional[IO[Any]]
    stderr: Optional[IO[Any]]

    def __init__(self, owner: "Sbx", request: _Request, callers: List[Any], text: bool,
                 encoding: Optional[str], errors: Optional[str]) -> None:
        self.args = list(request.argv)
        self.report: Optional[ExecReport] = None
        self.stdin = self.stdout = self.stderr = None
        self._run = _Run(owner, request)
        self._callers = callers  # the caller's files: referenced until the run has ended
        pipes = [which for which in range(3) if request.options.stdio[which].mode == _PIPE]
        fds = self._run.start_here(pipes)
        if any(fd < 0 for fd in fds):
            for fd in fds:
                if fd >= 0:
                    os.close(fd)
            self._run.cancel()
            raise HostFailureError("libsbx gave no pipe for a stream asked as PIPE")
        files: List[Optional[IO[Any]]] = [None, None, None]
        for which, fd in zip(pipes, fds):
            files[which] = self._open(which, fd, text, encoding, errors)
        self.stdin, self.stdout, self.stderr = files

    @staticmethod
    def _open(which: int, fd: int, text: bool, encoding: Optional[str],
              errors: Optional[str]) -> IO[Any]:
        binary = io.open(fd, "wb" if which == 0 else "rb")
        if not (text or encoding or errors):
            return binary
        # As subprocess: stdin writes go through to the binary buffer (flush() sends them).
        return io.TextIOWrapper(cast(Any, binary), encoding=encoding or "utf-8",
                                errors=errors or "strict", write_through=which == 0)

    @property
    def done(self) -> bool:
        """The run has ended (wait() returns at once)."""
        return self._run.done.is_set()

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """Waits for the end of the run and returns returncode. With `timeout` (seconds), raises
        TimedOutError when the run is still going then; the run goes on (cancel() ends it)."""
        if timeout is None:
            self._run.join()
        elif not self._run.done.wait(timeout):
            raise TimedOutError(f"the run of {self.args!r} is still going after {timeout} s; it "
                                "goes on: wait again or cancel() it")
        self._callers = []
        if self._run.failure is not None:
            raise self._run.failure
        self.report = self._run.report
        return self.returncode

    def cancel(self) -> None:
        """Ends the run, the whole sandbox (sbx_run_cancel); wait() then reports "cancelled".
        Nothing changes for a run that has ended."""
        self._run.cancel()

    kill = cancel
    terminate = cancel

    def _close_pipes(self) -> None:
        for stream in (self.stdout, self.stderr, self.stdin):
            if stream is not None:
                try:
                    stream.close()
                except OSError:  # BrokenPipeError flushing stdin: the command has gone
                    pass

    def __enter__(self) -> "Popen":
        return self

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is not None:
            self.cancel()
        self._close_pipes()
        self._run.join()
        self.report = self._run.report

    def __repr__(self) -> str:
        state = f"returncode={self.returncode!r}" if self.report else \
            "ended" if self.done else "running"
        return f"<sbx.Popen args={self.args!r} {state}>"


def popen_request(policy: Optional[Policy], argv: Sequence[str], stdin: Stream, stdout: Stream,
                  stderr: Stream, cwd: Any, env: Optional[EnvChanges],
                  timeout: Optional[float], preference: Optional[Preference],
                  flags: int) -> Tuple[_Request, List[Any]]:
    request = _Request(policy, argv, cwd, env, preference, flags, timeout)
    callers = []
    for which, value in enumerate((stdin, stdout, stderr)):
        mode, fd = _stream(value, which)
        request.stdio(which, mode, fd=fd)
        if mode == _FD:
            callers.append(value)
    return request, callers


__all__ = ["PIPE", "DEVNULL", "CompletedRun", "Popen", "Stream", "EnvChanges"]
