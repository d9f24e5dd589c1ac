"""Python values as the C arguments libsbx reads (NUL-terminated UTF-8, NULL-terminated lists)."""
import ctypes
import json
from typing import Optional, Sequence

from .errors import InvalidInputError
from .types import Policy


def _c_string(value: str, name: str) -> bytes:
    """`value` as the NUL-terminated UTF-8 libsbx reads. A NUL inside would end the string
    there (ctypes passes the bytes as they are): the caller checked "echo x\\0; rm ..." and
    libsbx would run "echo x". Refused instead: InvalidInputError, a ValueError like
    os.fsencode's."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, not {type(value).__name__}")
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


def _c_list(items: Sequence[bytes]) -> "ctypes.Array[ctypes.c_char_p]":
    """A NULL-terminated char* array of `items` (which must outlive it)."""
    array = (ctypes.c_char_p * (len(items) + 1))()
    array[:-1] = list(items)
    array[-1] = None
    return array


def _argv(argv: Sequence[str]) -> "ctypes.Array[ctypes.c_char_p]":
    if isinstance(argv, (str, bytes)) or not argv:
        raise InvalidInputError("argv must be a non-empty list of strings")
    return _c_list([_c_string(arg, f"argv[{k}]") for k, arg in enumerate(argv)])
