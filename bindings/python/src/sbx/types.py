"""The shapes of what libsbx returns (JSON objects), as TypedDicts for type checkers.

Keys are those the C API documents (core/include/sbx/sbx.h); a report may carry more keys than
listed here (it is parsed JSON): these are the ones an agent relies on.
"""
from typing import Any, Dict, List, Mapping, Optional, Union

try:
    from typing import Literal, TypedDict
except ImportError:  # pragma: no cover
    from typing_extensions import Literal, TypedDict  # type: ignore

#: A policy: the JSON object (full or short form, README.md "Policies") or its text.
Policy = Union[Mapping[str, Any], str]
#: "auto" (sandbox when the policy restricts something), "require" or "forbid".
Preference = Literal["auto", "require", "forbid"]


class Decision(TypedDict):
    """Question 1 (should_sandbox): does this policy need a sandbox at all?"""
    sandbox: bool
    reason: str


class Exit(TypedDict, total=False):
    code: Optional[int]
    signal: Optional[int]


class Denial(TypedDict):
    """classify(): was a failure most likely the sandbox's doing? Advice, never a decision."""
    likely_sandbox_denial: bool
    kind: str
    reason: str
    evidence: str


class NetworkRefusal(TypedDict, total=False):
    host: str
    port: int
    rule: str


class ExecReport(TypedDict, total=False):
    """exec(): the report of `sbx exec --json` plus the C API's additions."""
    final: str
    exit: Optional[Exit]
    error: Optional[str]
    denial: Optional[Denial]
    stderr_tail: Optional[str]
    network_refusals: List[NetworkRefusal]
    network_refusals_total: int


class Plan(TypedDict):
    """transform(): what would run (backend None = unsandboxed)."""
    backend: Optional[str]
    argv: List[str]
    env: List[str]
    cwd: str
    notes: List[str]


class Explanation(TypedDict, total=False):
    """explain(): both questions, as `sbx explain --json`."""
    should_sandbox: bool
    final: str
    available_reason: str


class BackendsReport(TypedDict):
    """backends(): as `sbx backends --json`."""
    backends: List[Dict[str, Any]]
    rejected: List[Dict[str, Any]]


class Approval(TypedDict):
    """approve(): recorded False means "nothing recorded" (keep earlier grants), not a refusal."""
    recorded: bool
    policy: Optional[Dict[str, Any]]
    dropped: List[str]
