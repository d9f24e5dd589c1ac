"""The shapes of what libsbx returns (JSON objects), as TypedDicts for type checkers.

Keys are those the C API documents (core/include/sbx/sbx.h); the reports are generated from their
JSON Schemas (sbx.reports), so every key they have is listed.
"""
from typing import IO, Any, Dict, List, Mapping, Optional, Union

try:
    from typing import Literal, TypedDict
except ImportError:  # pragma: no cover
    from typing_extensions import Literal, TypedDict  # type: ignore

#: A policy: the JSON object (full or short form, README.md "Policies") or its text.
Policy = Union[Mapping[str, Any], str]
#: "auto" (sandbox when the policy restricts something), "require" or "forbid".
Preference = Literal["auto", "require", "forbid"]
#: A run's per-call environment changes (Sbx.run, popen, run_async): a str value adds or
#: replaces the name, None removes it; the policy's environment rules apply afterwards and win.
EnvChanges = Mapping[str, Optional[str]]
#: Where a popen stream goes: None (this process's own), sbx.PIPE, sbx.DEVNULL, a descriptor
#: or an object with fileno() (kept open by the caller until the run has ended).
Stream = Union[None, int, IO[Any]]


# The reports, generated from their JSON Schemas (core/schema/, `sbx schema NAME`) by
# cmake/scripts/gen_report_types.py: every key, with None where libsbx writes null.
from .reports import *  # noqa: E402,F401,F403
from .reports import ExitStatus  # noqa: E402

#: The exit status of an ExecReport (the name before the reports were generated).
Exit = ExitStatus


class Approval(TypedDict):
    """approve(): recorded False means "nothing recorded" (keep earlier grants), not a refusal."""
    recorded: bool
    policy: Optional[Dict[str, Any]]
    dropped: List[str]
