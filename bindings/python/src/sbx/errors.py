"""The exceptions of the binding: SbxError and one subclass per sbx_error_kind_t (sbx/sbx.h)."""
import ctypes
from typing import Any


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


def _error_of_kind(kind: str, message: str) -> SbxError:
    """The exception for a report's "error_kind" name (an unknown one: HostFailureError)."""
    return ERROR_KINDS.get(kind, HostFailureError)(message)


def _take_error(lib: Any, error: ctypes.c_void_p) -> SbxError:
    """The exception for a sbx_error* a call stored (freed here); NULL: a HostFailureError."""
    message = "libsbx failed without a message"
    kind = 4  # SBX_ERROR_HOST_FAILURE
    if error:
        message = lib.sbx_error_message(error).decode("utf-8", "replace")
        # Older libsbx (before error kinds) has no sbx_error_kind: its errors are host_failure.
        if hasattr(lib, "sbx_error_kind"):
            kind = lib.sbx_error_kind(error)
        lib.sbx_error_free(error)
    return _error(kind, message)
