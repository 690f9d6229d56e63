"""What a sandbox result means for the executor's trace: failure kind, message and line.

Shared by the sandbox worker (which sends the three plain values to the executor) and any
in-process caller, so that both name failures the same way.
"""

from __future__ import annotations

from icalkit.agents.api.runtime import ActionFailed, ApiUsageError, BudgetExceeded
from icalkit.agents.sandbox import SandboxResult

FAILURE_KINDS = ("action", "usage", "error", "limit", "refused")


def outcome_of(result: SandboxResult) -> tuple[str, str, int | None]:
    """``(kind, message, line)`` of a run; kind is ``ok`` or one of :data:`FAILURE_KINDS`.

    API failures keep the API's own message (it is meant for the planner) and get the kinds
    ``action`` (the call could not be carried out) and ``usage`` (the API was called wrongly);
    an exhausted TEACh budget is a ``limit``.
    """
    if result.ok:
        return "ok", "", None
    exc = result.exception
    if isinstance(exc, ActionFailed):
        return "action", str(exc), result.lineno
    if isinstance(exc, ApiUsageError):
        return "usage", str(exc), result.lineno
    if isinstance(exc, BudgetExceeded):
        return "limit", str(exc), result.lineno
    return result.kind, result.message, result.lineno
